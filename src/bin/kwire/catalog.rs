//! What `kwire serve` knows: topics with their partitions and offsets, and groups.
//!
//! A catalogue comes from a TOML or JSON file (`--catalog`), or is the built-in demo.

use serde::Deserialize;

/// The whole catalogue.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Reported in Metadata responses.
    #[serde(default = "default_cluster_id")]
    pub cluster_id: String,
    /// The broker's node id.
    #[serde(default = "default_node_id")]
    pub node_id: i32,
    #[serde(default)]
    pub topics: Vec<Topic>,
    #[serde(default)]
    pub groups: Vec<Group>,
    /// SASL/PLAIN users: with at least one, the server also answers SaslHandshake and
    /// SaslAuthenticate (PLAIN only; authentication is offered, not required).
    #[serde(default)]
    pub users: Vec<User>,
}

/// A SASL/PLAIN user.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub password: String,
}

/// Written by hand: a password is never printed.
impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User").field("name", &self.name).field("password", &"<redacted>").finish()
    }
}

fn default_cluster_id() -> String {
    "kwire-dev-cluster".into()
}

fn default_node_id() -> i32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topic {
    pub name: String,
    /// The topic ID as 32 hex digits; derived from the name when absent.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub internal: bool,
    /// Partition `i` of the topic is `partitions[i]`.
    pub partitions: Vec<Partition>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    #[serde(default)]
    pub leader_epoch: i32,
    /// The earliest offset (ListOffsets -2).
    #[serde(default)]
    pub log_start_offset: i64,
    /// The earliest offset on the broker's local disk (ListOffsets -4); defaults to
    /// `log_start_offset`.
    #[serde(default)]
    pub local_log_start_offset: Option<i64>,
    /// The offset after the last record (ListOffsets -1, read_uncommitted); defaults to one
    /// past the last record, or `log_start_offset`.
    #[serde(default)]
    pub high_watermark: Option<i64>,
    /// The last stable offset (ListOffsets -1, read_committed); defaults to the high
    /// watermark.
    #[serde(default)]
    pub last_stable_offset: Option<i64>,
    /// The last offset in tiered storage (ListOffsets -5); -1 when nothing is tiered.
    #[serde(default = "minus_one")]
    pub last_tiered_offset: i64,
    /// `[offset, timestamp]` of the records, in offset order.
    #[serde(default)]
    pub records: Vec<(i64, i64)>,
}

fn minus_one() -> i64 {
    -1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub id: String,
    #[serde(default = "default_protocol_type")]
    pub protocol_type: String,
    #[serde(default = "default_state")]
    pub state: String,
    #[serde(default = "default_type", rename = "type")]
    pub group_type: String,
}

fn default_protocol_type() -> String {
    "consumer".into()
}
fn default_state() -> String {
    "Stable".into()
}
fn default_type() -> String {
    "classic".into()
}

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.unwrap_or_else(|| self.records.last().map_or(self.log_start_offset, |r| r.0 + 1))
    }
    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable_offset.unwrap_or_else(|| self.high_watermark())
    }
    pub fn local_log_start_offset(&self) -> i64 {
        self.local_log_start_offset.unwrap_or(self.log_start_offset)
    }
}

impl Topic {
    /// The topic ID: the catalogue's, or a stable value derived from the name.
    pub fn id(&self) -> Result<[u8; 16], String> {
        match &self.id {
            Some(hex) => {
                let digits: Vec<char> = hex.chars().filter(|c| *c != '-').collect();
                if digits.len() != 32 {
                    return Err(format!("topic {}: id must be 32 hex digits", self.name));
                }
                let mut id = [0u8; 16];
                for (i, pair) in digits.chunks(2).enumerate() {
                    let s: String = pair.iter().collect();
                    id[i] = u8::from_str_radix(&s, 16)
                        .map_err(|_| format!("topic {}: bad id {hex}", self.name))?;
                }
                Ok(id)
            }
            None => {
                // FNV-1a over the name, twice with different seeds: stable and never zero.
                let hash = |seed: u64| {
                    self.name.bytes().fold(seed, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
                };
                let mut id = [0u8; 16];
                id[..8].copy_from_slice(&hash(0xcbf2_9ce4_8422_2325).to_be_bytes());
                id[8..].copy_from_slice(&(hash(0x8422_2325_cbf2_9ce4) | 1).to_be_bytes());
                Ok(id)
            }
        }
    }
}

impl Catalog {
    pub fn parse(text: &str, path: &str) -> Result<Catalog, String> {
        let catalog: Catalog = if path.ends_with(".json") {
            serde_json::from_str(text).map_err(|e| format!("{path}: {e}"))?
        } else {
            toml::from_str(text).map_err(|e| format!("{path}: {e}"))?
        };
        catalog.check()?;
        Ok(catalog)
    }

    fn check(&self) -> Result<(), String> {
        for t in &self.topics {
            t.id()?;
            for (i, p) in t.partitions.iter().enumerate() {
                if p.records.windows(2).any(|w| w[0].0 >= w[1].0) {
                    return Err(format!("topic {} partition {i}: records must be in offset order", t.name));
                }
                if p.last_stable_offset() > p.high_watermark() {
                    return Err(format!(
                        "topic {} partition {i}: last_stable_offset is above high_watermark",
                        t.name
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn topic(&self, name: &str) -> Option<&Topic> {
        self.topics.iter().find(|t| t.name == name)
    }

    /// The demo catalogue `kwire serve` uses without `--catalog`.
    pub fn demo() -> Catalog {
        Catalog::parse(DEMO, "demo.toml").expect("the built-in catalogue is valid")
    }
}

/// The built-in catalogue: also an example of the file format.
pub const DEMO: &str = r#"
cluster_id = "kwire-demo"
node_id = 1

[[topics]]
name = "orders"

[[topics.partitions]]
leader_epoch = 3
log_start_offset = 0
high_watermark = 5
last_stable_offset = 4
records = [[0, 1700000000000], [1, 1700000001000], [2, 1700000005000], [3, 1700000003000], [4, 1700000009000]]

[[topics.partitions]]
leader_epoch = 3
log_start_offset = 100
local_log_start_offset = 120
last_tiered_offset = 119
records = [[100, 1700000000500], [120, 1700000002500], [121, 1700000007500]]

[[topics.partitions]]
leader_epoch = 1

[[topics]]
name = "payments"

[[topics.partitions]]
leader_epoch = 0
records = [[0, 1700000100000], [1, 1700000200000]]

[[groups]]
id = "billing"
state = "Stable"

[[groups]]
id = "audit"
state = "Empty"

[[groups]]
id = "shipping"
protocol_type = "consumer"
state = "Stable"
type = "consumer"

[[groups]]
id = "connect-cluster"
protocol_type = "connect"
state = "PreparingRebalance"
"#;
