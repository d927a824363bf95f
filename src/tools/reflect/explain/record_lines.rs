//! The records of a frame as lines (`kwire decode --format records`): every record of every
//! `records` field, with its topic and partition, read through kwire's record views.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value as J};

use super::records::{DECOMPRESS_LIMIT, legacy_codec, legacy_len};
use super::summary::error_name;
use super::{Explained, Node, Role};
use crate::codec::messages::ResponseBodyView;
use crate::codec::records::legacy::{Entries, Entry};
use crate::tools::reflect::Value;
use crate::tools::reflect::json::{base64, scalar_json, uuid_string};

/// What Kafka reports as the timestamp of a record that has none (magic 0).
const NO_TIMESTAMP: i64 = -1;

/// One record, as `kwire decode --format records` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLine {
    /// The topic: its name, or its id where the version carries only an id.
    pub topic: J,
    /// The partition index.
    pub partition: J,
    /// Absolute offset.
    pub offset: i64,
    /// Absolute timestamp (none for magic-0 messages, printed as Kafka's `NO_TIMESTAMP`, -1).
    pub timestamp: Option<i64>,
    /// The key.
    pub key: Option<Vec<u8>>,
    /// The value.
    pub value: Option<Vec<u8>>,
    /// The headers, in wire order.
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl RecordLine {
    /// The JSON object, on one line.
    pub fn to_json(&self) -> J {
        let bytes = |b: &Option<Vec<u8>>| b.as_ref().map_or(J::Null, |b| J::String(base64(b)));
        let mut m = Map::new();
        m.insert("topic".into(), self.topic.clone());
        m.insert("partition".into(), self.partition.clone());
        m.insert("offset".into(), J::from(self.offset));
        m.insert("timestamp".into(), J::from(self.timestamp.unwrap_or(NO_TIMESTAMP)));
        m.insert("key".into(), bytes(&self.key));
        text(&mut m, "keyText", &self.key);
        m.insert("value".into(), bytes(&self.value));
        text(&mut m, "valueText", &self.value);
        let headers = self
            .headers
            .iter()
            .map(|(k, v)| {
                let mut h = Map::new();
                h.insert("key".into(), J::String(String::from_utf8_lossy(k).into_owned()));
                h.insert("value".into(), bytes(v));
                text(&mut h, "valueText", v);
                J::Object(h)
            })
            .collect();
        m.insert("headers".into(), J::Array(headers));
        J::Object(m)
    }
}

/// What a Produce answer says of each partition: the error code and the base offset the
/// broker assigned, by topic (as a [`RecordLine`] names it) and partition. A topic is
/// keyed by its name and by its id in Kafka's form, as record lines name topics either way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assigned(BTreeMap<(String, i64), (i16, i64)>);

impl Assigned {
    /// What `body` assigned: empty for any body but a Produce response's.
    pub fn from_response(body: &ResponseBodyView<'_>) -> Self {
        let mut out = BTreeMap::new();
        let ResponseBodyView::Produce(p) = body else { return Assigned(out) };
        for t in p.responses().iter() {
            let id = uuid_string(&t.topic_id());
            for part in t.partition_responses().iter() {
                let at = (part.error_code(), part.base_offset());
                let index = i64::from(part.index());
                if !t.name().is_empty() {
                    out.insert((t.name().to_string(), index), at);
                }
                out.insert((id.clone(), index), at);
            }
        }
        Assigned(out)
    }
}

/// The records of a Produce request as JSON objects ([`RecordLine::to_json`]) with the
/// offsets the broker assigned in `answer`: its base offset for the partition plus the
/// record's position in the client's batch. Where the answer gives none, `offset` is
/// `null`, and `error` the partition's error name when it failed; with no answer (`acks=0`,
/// or none seen) every `offset` is `null`.
///
/// ```
/// use kwire::messages::produce::{PartitionProduceResponse, ProduceResponse, TopicProduceResponse};
/// use kwire::reflect::explain::{Assigned, RecordLine, produced_lines};
///
/// // The broker put partition 0 of "orders" at offset 41 and refused partition 1.
/// let parts = [
///     PartitionProduceResponse { index: 0, base_offset: 41, ..Default::default() },
///     PartitionProduceResponse { index: 1, error_code: 6, base_offset: -1, ..Default::default() },
/// ];
/// let topics = [TopicProduceResponse {
///     name: "orders".into(),
///     partition_responses: (&parts[..]).into(),
///     ..Default::default()
/// }];
/// let answer = ProduceResponse { responses: (&topics[..]).into(), ..Default::default() };
/// let mut frame = [0u8; 128];
/// let n = kwire::dispatch::encode_response(&answer, 9, 4, &mut frame)?;
/// let response = kwire::dispatch::parse_response(&frame[4..n], kwire::ApiKey::Produce, 9)?;
/// let assigned = Assigned::from_response(&response.body);
///
/// // The client wrote two records to partition 0 (its offsets 0 and 1) and one to partition 1.
/// let line = |partition: i64, offset| RecordLine {
///     topic: "orders".into(),
///     partition: partition.into(),
///     offset,
///     timestamp: Some(0),
///     key: None,
///     value: None,
///     headers: Vec::new(),
/// };
/// let lines = produced_lines(&[line(0, 0), line(0, 1), line(1, 0)], Some(&assigned));
/// assert_eq!((lines[0]["offset"].as_i64(), lines[1]["offset"].as_i64()), (Some(41), Some(42)));
/// assert!(lines[2]["offset"].is_null());
/// assert_eq!(lines[2]["error"], "NOT_LEADER_OR_FOLLOWER");
/// assert!(produced_lines(&[line(0, 0)], None)[0]["offset"].is_null());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn produced_lines(lines: &[RecordLine], answer: Option<&Assigned>) -> Vec<J> {
    // The client's offset of each partition's first record: the batch's base.
    let mut first: BTreeMap<(String, i64), i64> = BTreeMap::new();
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let mut json = line.to_json();
        let key =
            (line.topic.as_str().unwrap_or_default().to_string(), line.partition.as_i64().unwrap_or(-1));
        let base = *first.entry(key.clone()).or_insert(line.offset);
        match answer.and_then(|a| a.0.get(&key)) {
            Some(&(0, assigned)) if assigned >= 0 => {
                json["offset"] = J::from(assigned + (line.offset - base))
            }
            Some(&(code, _)) => {
                json["offset"] = J::Null;
                if code != 0 {
                    json["error"] = J::String(error_name(code));
                }
            }
            None => json["offset"] = J::Null,
        }
        out.push(json);
    }
    out
}

/// Beside a byte field's exact form (base64), its text when it is valid UTF-8.
fn text(m: &mut Map<String, J>, key: &str, b: &Option<Vec<u8>>) {
    if let Some(t) = b.as_deref().and_then(|b| core::str::from_utf8(b).ok()) {
        m.insert(key.into(), J::String(t.into()));
    }
}

/// The records of every `records` field of a frame, in wire order, as [`record_lines`]
/// finds them.
#[derive(Clone, Debug, Default)]
pub struct RecordLines {
    /// The records read, control records left out (as consumers do).
    pub lines: Vec<RecordLine>,
    /// Things worth saying that are not errors (a field ending in a partial batch, which
    /// is skipped as consumers skip it).
    pub notes: Vec<String>,
    /// The first problem: the records before it are in `lines`.
    pub error: Option<String>,
}

/// The records of every `records` field of an explained frame, in wire order. Control
/// records are left out (as consumers do). Stops at the first problem: the records read
/// before it come back with the error.
pub fn record_lines(explained: &Explained) -> RecordLines {
    let mut out = RecordLines::default();
    let mut ancestors = Vec::new();
    if let Some(body) = explained.body_node() {
        out.error = visit(body, &mut ancestors, &mut out.lines, &mut out.notes).err();
    }
    out
}

fn visit<'n>(
    node: &'n Node,
    ancestors: &mut Vec<&'n Node>,
    out: &mut Vec<RecordLine>,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    if node.ty == "records"
        && let Role::Leaf(Value::Records(bytes)) = &node.role
    {
        let (topic, partition) = whereabouts(ancestors);
        let place = format!("topic {topic}, partition {partition}");
        return field_records(bytes, &topic, &partition, out)
            .map(|partial| {
                if partial {
                    notes.push(format!("{place}: the records end in a partial batch, which is skipped"));
                }
            })
            .map_err(|e| format!("{place}: {e}"));
    }
    ancestors.push(node);
    for child in &node.children {
        visit(child, ancestors, out, notes)?;
    }
    ancestors.pop();
    Ok(())
}

/// The topic and partition of a `records` field, from the structs that hold it: the
/// partition index in the nearest struct, the topic name (or id) further up.
fn whereabouts(ancestors: &[&Node]) -> (J, J) {
    let leaf = |n: &Node, keys: &[&str]| -> Option<Value> {
        n.children.iter().find_map(|c| match (&c.key, &c.role) {
            (Some(k), Role::Leaf(s)) if keys.contains(&k.as_str()) => Some(s.clone()),
            _ => None,
        })
    };
    let partition = ancestors
        .iter()
        .rev()
        .find_map(|n| leaf(n, &["partitionIndex", "index", "partition"]))
        .map_or(J::Null, |s| scalar_json(&s));
    let topic = ancestors
        .iter()
        .rev()
        .find_map(|n| match leaf(n, &["topic", "name", "topicName"]) {
            Some(Value::String(s)) => Some(J::String(s)),
            _ => match leaf(n, &["topicId"]) {
                Some(Value::Uuid(u)) => Some(J::String(uuid_string(&u))),
                _ => None,
            },
        })
        .unwrap_or(J::Null);
    (topic, partition)
}

/// Reads the records of one field into `out`; returns whether it ended in a partial batch.
fn field_records(bytes: &[u8], topic: &J, partition: &J, out: &mut Vec<RecordLine>) -> Result<bool, String> {
    let line = |offset, timestamp, key: Option<&[u8]>, value: Option<&[u8]>, headers| RecordLine {
        topic: topic.clone(),
        partition: partition.clone(),
        offset,
        timestamp,
        key: key.map(<[u8]>::to_vec),
        value: value.map(<[u8]>::to_vec),
        headers,
    };
    let mut entries = Entries::new(bytes);
    let mut scratch = Vec::new();
    let mut pos = 0;
    for entry in entries.by_ref() {
        match entry.map_err(|e| e.to_string())? {
            Entry::Batch(b) => {
                let records = b
                    .records_in_vec(&mut scratch, DECOMPRESS_LIMIT)
                    .map_err(|e| format!("batch at byte {pos} of the field: {}", e.kind()))?;
                for (i, r) in records.enumerate() {
                    let r = r.map_err(|e| format!("batch at byte {pos} of the field, record {i}: {e}"))?;
                    if r.is_control() {
                        continue;
                    }
                    let headers =
                        r.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
                    out.push(line(r.offset(), Some(r.timestamp()), r.key(), r.value(), headers));
                }
                pos += b.bytes().len();
            }
            Entry::Legacy(m) => {
                m.verify_crc()
                    .map_err(|e| format!("legacy message at byte {pos} of the field: {}", e.kind()))?;
                if legacy_codec(&m).is_some() {
                    let inner = m
                        .inner_in_vec(&mut scratch, DECOMPRESS_LIMIT)
                        .map_err(|e| format!("legacy message at byte {pos} of the field: {}", e.kind()))?;
                    for (i, im) in inner.enumerate() {
                        let im = im.map_err(|e| {
                            format!("legacy message at byte {pos} of the field, inner message {i}: {e}")
                        })?;
                        im.verify_crc().map_err(|e| {
                            format!(
                                "legacy message at byte {pos} of the field, inner message {i}: {}",
                                e.kind()
                            )
                        })?;
                        out.push(line(im.offset(), im.timestamp(), im.key(), im.value(), Vec::new()));
                    }
                } else {
                    out.push(line(m.offset(), m.timestamp(), m.key(), m.value(), Vec::new()));
                }
                pos += legacy_len(&m);
            }
        }
    }
    Ok(entries.partial())
}
