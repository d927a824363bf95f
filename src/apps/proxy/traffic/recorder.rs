//! The [`Recorder`]: frames saved as hex test vectors, secrets masked.

use std::fmt::Write as _;

use super::*;

/// What a recorded frame is, so that its secrets can be found and masked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordAs {
    /// A request.
    Request,
    /// A response to a request of `api_key` (the raw value) at `api_version`.
    Response {
        /// The request's API key.
        api_key: i16,
        /// The version the response is read at.
        api_version: i16,
    },
    /// A response that answers no request known: masked whole.
    Unpaired,
}

/// Saves frames as hex test vectors, the form of `tests/vectors`: `DIR/requests/NAME.hex`
/// and `DIR/responses/NAME.hex` under names from [`Recorder::name`], and frames kwire could
/// not read in `DIR/undecoded` with the reason beside them. Secrets are masked (the same
/// length, `0x2a` bytes, a `NAME.masked.txt` note beside) unless shown on purpose.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    limit: usize,
    show_secrets: bool,
    counts: Mutex<HashMap<String, usize>>,
    undecoded: AtomicU64,
}

/// At most this many frames are saved in `undecoded`.
const MAX_UNDECODED: u64 = 1000;

impl Recorder {
    /// Saves into `dir` (created as needed), at most `limit` pairs per client, API and
    /// version.
    pub fn new(dir: impl Into<PathBuf>, limit: usize) -> Self {
        Recorder {
            dir: dir.into(),
            limit,
            show_secrets: false,
            counts: Mutex::new(HashMap::new()),
            undecoded: AtomicU64::new(0),
        }
    }

    /// Saves secrets (SASL bytes, tokens, HMACs, SCRAM credentials, password configs)
    /// unmasked: only for frames that will stay private.
    pub fn show_secrets(mut self, yes: bool) -> Self {
        self.show_secrets = yes;
        self
    }

    /// The name of the next pair of `client`, `api` and `version`
    /// (`CLIENT_API_vVERSION_N`), or `None` past the limit.
    pub fn name(&self, client: Option<&str>, api: &str, version: i16) -> Option<String> {
        let stem = format!("{}_{}_v{version}", file_part(client.unwrap_or("")), file_part(api));
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let n = counts.entry(stem.clone()).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(format!("{stem}_{n}"))
    }

    /// Saves a frame (with its size prefix) as `DIR/SUB/NAME.hex`.
    pub fn save(
        &self,
        sub: &str,
        name: &str,
        frame_with_prefix: &[u8],
        what: RecordAs,
    ) -> std::io::Result<()> {
        let dir = self.dir.join(sub);
        std::fs::create_dir_all(&dir)?;
        let (bytes, note) = self.shown(frame_with_prefix, what);
        std::fs::write(dir.join(format!("{name}.hex")), hex(&bytes))?;
        match note {
            Some(note) => std::fs::write(dir.join(format!("{name}.masked.txt")), format!("{note}\n")),
            None => Ok(()),
        }
    }

    /// Saves a frame kwire could not read, with `why` beside it, named after `label`; at
    /// most 1,000 of them.
    pub fn save_undecoded(
        &self,
        label: &str,
        frame_with_prefix: &[u8],
        what: RecordAs,
        why: &str,
    ) -> std::io::Result<()> {
        let n = self.undecoded.fetch_add(1, Ordering::Relaxed) + 1;
        if n > MAX_UNDECODED {
            return Ok(());
        }
        let dir = self.dir.join("undecoded");
        std::fs::create_dir_all(&dir)?;
        let name = format!("{n:04}_{}", file_part(label));
        let (bytes, note) = self.shown(frame_with_prefix, what);
        std::fs::write(dir.join(format!("{name}.hex")), hex(&bytes))?;
        let note = note.map(|n| format!("{n}\n")).unwrap_or_default();
        std::fs::write(dir.join(format!("{name}.txt")), format!("{label}\n{why}\n{note}"))
    }

    /// The frame as it is saved, and the note on what was masked.
    fn shown(&self, frame_with_prefix: &[u8], what: RecordAs) -> (Vec<u8>, Option<String>) {
        if self.show_secrets {
            return (frame_with_prefix.to_vec(), None);
        }
        let (masked, redaction) = masked(frame_with_prefix, what);
        (masked, masking_note(&redaction))
    }
}

/// What masking did, in words, for the note beside a saved frame; `None` if nothing.
fn masking_note(r: &Redaction) -> Option<String> {
    match *r {
        Redaction::Clean | Redaction::Masked { bytes: 0, .. } | Redaction::Whole { bytes: 0 } => None,
        Redaction::Masked { fields, bytes } => Some(format!(
            "secrets masked: {fields} secret field(s), {bytes} bytes, overwritten with 0x2a ('*'); the frame keeps \
             its length (kwire::secrets)"
        )),
        Redaction::Whole { bytes } => Some(format!(
            "masked whole: kwire could not read this frame, so its last {bytes} bytes were overwritten with 0x2a \
             ('*'); the frame keeps its length"
        )),
    }
}

/// Lowercase letters, digits, `.` and `-` only, for file names.
pub(super) fn file_part(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    if s.is_empty() { "none".into() } else { s }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2 + 1);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s.push('\n');
    s
}
