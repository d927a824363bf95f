//! [`TrafficLog`]: what `kwire proxy` says of the traffic, as [`Hooks`] any proxy can use.
//! Each frame is read after it was sent (`reflect::inspect`), for a text or JSON log, test
//! vectors saved by a [`Recorder`], and counters for a summary.

#[allow(unused_imports)]
use std::{
    borrow::Cow, borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec,
    vec::Vec,
};

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::audit::{AuditLog, json_str, timestamp};
use super::hooks::{ConnInfo, Event, Hooks};
use super::notes::{Admitted, AuthNote, Pairing, RequestHead};
use crate::session::conn::metrics::{Metrics, Undecoded};
use crate::session::secrets::{self, Redaction};
use crate::tools::reflect::explain::{About, FrameKind, about_request, about_response, explain_frame};
use crate::tools::reflect::inspect::{self, Decoded, Roundtrip};
use crate::{ApiKey, Direction, ErrorCode};

mod hooks;
mod recorder;

pub use recorder::{RecordAs, Recorder};

/// How a [`TrafficLog`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// One line per request, when its answer was sent:
    /// `TIME conn=N CLIENT_ID API vVERSION req=BYTES resp=BYTES LATENCY [errors=NAME,...]`,
    /// and a line for each frame kwire could not read, each framing violation and each
    /// connection opened or closed.
    Text,
    /// One JSON object per frame, with the whole frame as `kwire decode --format json`
    /// gives it (secrets masked), and per SASL step.
    Json,
}

/// A copy of a frame (with its size prefix) with its secrets masked (`kwire::secrets`).
fn masked(frame_with_prefix: &[u8], what: RecordAs) -> (Vec<u8>, Redaction) {
    let mut out = frame_with_prefix.to_vec();
    let at = 4.min(frame_with_prefix.len());
    let (frame, body) = (&frame_with_prefix[at..], &mut out[at..]);
    let redaction = match what {
        RecordAs::Request => secrets::mask_request(frame, body),
        RecordAs::Response { api_key, api_version } => match ApiKey::from_i16(api_key) {
            Some(key) => secrets::mask_response(frame, key, api_version, body),
            None => secrets::mask_unknown_response(frame, body),
        },
        RecordAs::Unpaired => secrets::mask_unknown_response(frame, body),
    };
    (out, redaction)
}

fn with_prefix(frame: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(frame.len() + 4);
    v.extend_from_slice(&(frame.len() as u32).to_be_bytes());
    v.extend_from_slice(frame);
    v
}

/// The API's name, or `api<key>` for a key this crate does not know (no allocation for the
/// known ones: the log names the API of every frame).
fn api_name(api_key: i16) -> Cow<'static, str> {
    ApiKey::from_i16(api_key).map_or_else(|| Cow::Owned(format!("api{api_key}")), |k| Cow::Borrowed(k.name()))
}

fn error_name(code: i16) -> String {
    ErrorCode::from_i16(code).map_or_else(|| code.to_string(), |e| e.name().to_owned())
}

fn now() -> String {
    timestamp(SystemTime::now())
}

/// The writer thread: connection tasks hand it lines and never wait on the output. Lines
/// past its queue are dropped and counted.
struct Lines {
    tx: SyncSender<String>,
    dropped: AtomicU64,
    gate: Mutex<Option<SyncSender<()>>>,
}

impl Lines {
    fn start(mut out: Box<dyn Write + Send>, held: bool) -> Lines {
        let (tx, rx) = sync_channel::<String>(1 << 16);
        let (gate_tx, gate_rx) = sync_channel::<()>(1);
        std::thread::spawn(move || {
            if held {
                let _ = gate_rx.recv();
            }
            write_loop(&rx, &mut *out);
        });
        let gate = if held { Some(gate_tx) } else { None };
        Lines { tx, dropped: AtomicU64::new(0), gate: Mutex::new(gate) }
    }

    fn release(&self) {
        if let Some(tx) = self.gate.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = tx.send(());
        }
    }

    fn send(&self, line: String) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(line) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn write_loop(rx: &Receiver<String>, out: &mut dyn Write) {
    let mut batch = String::new();
    while let Ok(line) = rx.recv() {
        batch.clear();
        batch.push_str(&line);
        batch.push('\n');
        while batch.len() < 1 << 16
            && let Ok(line) = rx.try_recv()
        {
            batch.push_str(&line);
            batch.push('\n');
        }
        let _ = out.write_all(batch.as_bytes()).and_then(|()| out.flush());
    }
}

/// Counters for [`TrafficLog::summary`].
#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
    responses: AtomicU64,
    rewritten: AtomicU64,
    sasl_tokens: AtomicU64,
    violations: AtomicU64,
    mismatches: AtomicU64,
    /// `(direction, api, why)` to count, for frames kwire did not read.
    undecoded: Mutex<BTreeMap<(&'static str, String, &'static str), u64>>,
}

/// `kwire proxy`'s log as [`Hooks`]: every frame read after it was sent, in text or JSON
/// lines ([`LogFormat`]) written by a thread of its own to any writer (lines past a queue of
/// 65,536 are dropped and counted, never waited for), frames saved by a [`Recorder`],
/// frames re-encoded and compared byte for byte on request, counters for a summary, and an
/// [`AuditLog`] beside it. Secrets are masked in the JSON log unless shown on purpose; raw
/// SASL v0 tokens are never shown.
///
/// ```
/// use kwire::proxy::{LogFormat, TrafficLog};
///
/// let log = TrafficLog::new(LogFormat::Text, std::io::stdout()).quiet(true);
/// // Proxy::builder(..).hooks(log)
/// # drop(log);
/// ```
pub struct TrafficLog {
    format: LogFormat,
    quiet: bool,
    verify: bool,
    show_secrets: bool,
    lines: Lines,
    recorder: Option<Recorder>,
    stats: Stats,
    metrics: Option<Arc<Metrics>>,
    audit: Option<AuditLog>,
}

impl core::fmt::Debug for TrafficLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TrafficLog").field("format", &self.format).field("quiet", &self.quiet).finish()
    }
}

impl TrafficLog {
    /// A log in `format` written to `out`.
    pub fn new(format: LogFormat, out: impl Write + Send + 'static) -> Self {
        Self::with_lines(format, Lines::start(Box::new(out), false))
    }

    /// As [`TrafficLog::new`], writing nothing until [`TrafficLog::release`] (lines wait, up
    /// to the queue): so that the owner can print a first line of its own, such as where
    /// the proxy listens, once it knows it.
    pub fn held(format: LogFormat, out: impl Write + Send + 'static) -> Self {
        Self::with_lines(format, Lines::start(Box::new(out), true))
    }

    fn with_lines(format: LogFormat, lines: Lines) -> Self {
        TrafficLog {
            format,
            quiet: false,
            verify: false,
            show_secrets: false,
            lines,
            recorder: None,
            stats: Stats::default(),
            metrics: None,
            audit: None,
        }
    }

    /// Text: connections and problems only, no line per request.
    pub fn quiet(mut self, yes: bool) -> Self {
        self.quiet = yes;
        self
    }

    /// Reads each frame into kwire's owned values, encodes it again and compares with the
    /// frame; a mismatch is logged.
    pub fn verify(mut self, yes: bool) -> Self {
        self.verify = yes;
        self
    }

    /// Secrets unmasked in the JSON log (raw SASL v0 tokens stay hidden); a recorder has its
    /// own [`Recorder::show_secrets`].
    pub fn show_secrets(mut self, yes: bool) -> Self {
        self.show_secrets = yes;
        self
    }

    /// Saves frames: each request and its answer under one name, frames kwire could not
    /// read apart.
    pub fn record(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Counts frames kwire could not read into `metrics` (the proxy's own, given to
    /// [`super::ProxyBuilder::metrics`]).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Feeds an audit log from the same hooks.
    pub fn audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Lets a [`TrafficLog::held`] log write.
    pub fn release(&self) {
        self.lines.release();
    }

    /// Writes a line of the owner's, after the time.
    pub fn note(&self, words: &str) {
        self.lines.send(format!("{} {words}", now()));
    }

    /// The counters so far, in words: connections, requests, responses, rewritten
    /// answers, SASL tokens, framing violations, re-encoding mismatches, lines dropped,
    /// and the frames not read by direction, API and reason, a line each.
    pub fn summary(&self) -> String {
        let s = &self.stats;
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = format!(
            "{} connections, {} requests, {} responses, {} rewritten, {} SASL tokens (v0, not shown), {} framing \
             violations, {} re-encoding mismatches, {} log lines dropped",
            n(&s.connections),
            n(&s.requests),
            n(&s.responses),
            n(&s.rewritten),
            n(&s.sasl_tokens),
            n(&s.violations),
            n(&s.mismatches),
            n(&self.lines.dropped),
        );
        let undecoded = s.undecoded.lock().unwrap_or_else(PoisonError::into_inner);
        for ((direction, api, why), n) in undecoded.iter() {
            let _ = write!(out, "\n  {n} {direction}s of {api} not decoded ({why})");
        }
        out
    }

    fn text(&self) -> bool {
        self.format == LogFormat::Text
    }

    /// Counts a frame kwire did not read; returns how many were counted before.
    fn count_undecoded(&self, direction: Direction, api: &str, why: Undecoded) -> u64 {
        if let Some(m) = &self.metrics {
            m.undecoded(direction, why);
        }
        let direction = if direction == Direction::Request { "request" } else { "response" };
        let mut map = self.stats.undecoded.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry((direction, api.to_owned(), why.label())).or_insert(0);
        *n += 1;
        *n - 1
    }

    fn record_undecoded(&self, label: &str, frame: &[u8], what: RecordAs, why: &str) {
        if let Some(r) = &self.recorder {
            let _ = r.save_undecoded(label, &with_prefix(frame), what, why);
        }
    }

    /// A SASL step in the log (text, quiet too, or JSON).
    fn sasl_line(&self, words: &str, id: u64) {
        if self.text() {
            return self.lines.send(format!("{} conn={id} {words}", now()));
        }
        let mut line = format!("{{\"time\":\"{}\",\"conn\":{id},\"sasl\":", now());
        json_str(&mut line, words);
        line.push('}');
        self.lines.send(line);
    }

    /// A raw SASL token passed through: its size, never its bytes.
    fn token_line(&self, size: usize, from_client: bool, id: u64) {
        self.stats.sasl_tokens.fetch_add(1, Ordering::Relaxed);
        let from = if from_client { "client" } else { "broker" };
        match self.format {
            LogFormat::Text if !self.quiet => self.lines.send(format!(
                "{} conn={id} SASL tokens (v0 handshake): {} bytes from the {from}, not shown",
                now(),
                size.saturating_sub(4)
            )),
            LogFormat::Json => self.lines.send(format!(
                "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{}\",\"saslToken\":true,\"size\":{size},\"shown\":false}}",
                now(),
                if from_client { "request" } else { "response" },
            )),
            LogFormat::Text => {}
        }
    }

    /// Logs a frame's problems (text) or the frame itself (JSON).
    fn report(
        &self,
        frame: &[u8],
        what: RecordAs,
        decoded: &Decoded,
        roundtrip: Option<Roundtrip>,
        id: u64,
        extra: &str,
    ) {
        let (direction, side, key, version) = match what {
            RecordAs::Request => {
                let (key, version) = crate::codec::frame::RequestHeaderView::peek(frame)
                    .map_or((-1, -1), |h| (h.api_key, h.api_version));
                ("request", Direction::Request, key, version)
            }
            RecordAs::Response { api_key, api_version } => {
                ("response", Direction::Response, api_key, api_version)
            }
            RecordAs::Unpaired => ("response", Direction::Response, -1, -1),
        };
        let api = api_name(key);
        if let Some(reason) = decoded.reason() {
            let unknown = matches!(decoded, Decoded::Unknown(_));
            let why = if unknown { Undecoded::Unknown } else { Undecoded::Malformed };
            let before = self.count_undecoded(side, &api, why);
            self.record_undecoded(&format!("{direction}_{api}"), frame, what, reason);
            // A malformed frame is logged each time; an API kwire does not know, once.
            if self.text() && (!unknown || before == 0) {
                let more = if unknown { "; further ones are only counted" } else { "" };
                self.lines.send(format!(
                    "{} conn={id} {direction} {api} not decoded ({}): {reason}{more}",
                    now(),
                    why.label()
                ));
            }
        }
        if let Some(Roundtrip::Differs(e)) = &roundtrip {
            self.stats.mismatches.fetch_add(1, Ordering::Relaxed);
            if self.text() {
                self.lines.send(format!(
                    "{} conn={id} {direction} {api} does not re-encode byte for byte: {e}",
                    now()
                ));
            }
        }
        if self.text() {
            return;
        }
        let mut line =
            format!("{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{direction}\",\"api\":", now());
        json_str(&mut line, &api);
        let _ = write!(
            line,
            ",\"apiKey\":{key},\"apiVersion\":{version},\"size\":{},\"decoded\":\"{}\",\"reason\":",
            frame.len() + 4,
            decoded.word()
        );
        match decoded.reason() {
            Some(r) => json_str(&mut line, r),
            None => line.push_str("null"),
        }
        line.push_str(",\"roundtrip\":");
        match &roundtrip {
            None => line.push_str("\"skipped\""),
            Some(Roundtrip::Differs(e)) => json_str(&mut line, &format!("mismatch: {e}")),
            Some(same_or_unknown) => {
                let _ = write!(line, "\"{}\"", same_or_unknown.word());
            }
        }
        line.push_str(extra);
        line.push_str(",\"frame\":");
        line.push_str(&self.frame_json(frame, what, decoded).unwrap_or_else(|| "null".into()));
        line.push('}');
        self.lines.send(line);
    }

    /// The frame as `kwire decode --format json` gives it, secrets masked.
    fn frame_json(&self, frame: &[u8], what: RecordAs, decoded: &Decoded) -> Option<String> {
        let kind = match what {
            _ if *decoded != Decoded::Ok => return None,
            RecordAs::Request => FrameKind::Request,
            RecordAs::Response { api_key, api_version } => {
                FrameKind::Response(ApiKey::from_i16(api_key)?, api_version)
            }
            RecordAs::Unpaired => return None,
        };
        let whole = with_prefix(frame);
        let shown = if self.show_secrets { whole } else { masked(&whole, what).0 };
        let explained = explain_frame(&shown, kind);
        explained.problem.is_none().then(|| explained.to_json().to_string())
    }
}

/// What a [`TrafficLog`] keeps of a request until its answer ([`Hooks::Tag`]): the name its
/// frames are saved under, and, for the text log, what the request is about (its topics,
/// group, transactional id and records), for the pair's line.
#[derive(Clone, Debug, Default)]
pub struct TrafficTag {
    name: Option<Arc<str>>,
    about: Option<Arc<str>>,
}

type Tag = TrafficTag;

impl TrafficLog {
    /// Whether the text log writes a line per request/response pair.
    fn pair_lines(&self) -> bool {
        self.text() && !self.quiet
    }
}

/// What a frame is about, as a pair line shows it: ` topics=orders records=3 gzip`, or
/// nothing.
fn about_words(mut about: About, conn: &ConnInfo) -> String {
    about.name_topic_ids(|id| conn.topic_names().name(id).map(|n| n.to_string()));
    if about.is_empty() { String::new() } else { format!(" {about}") }
}

#[cfg(test)]
mod tests {
    use super::recorder::file_part;
    use super::*;

    #[test]
    fn file_names_are_tame() {
        assert_eq!(file_part("kafka-python-3.0.12"), "kafka-python-3.0.12");
        assert_eq!(file_part("rdkafka/Producer#1"), "rdkafka-producer-1");
        assert_eq!(file_part(""), "none");
    }

    #[test]
    fn frames_of_unknown_apis_are_masked_whole() {
        // A request header of API key 999 (no such API) with client id "c", then junk.
        let frame = [3, 0xe7, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 1, 2, 3];
        let (masked, r) = masked(&with_prefix(&frame), RecordAs::Request);
        assert_eq!(r, Redaction::Whole { bytes: 7 });
        assert_eq!(&masked[4..12], &frame[..8]);
        assert_eq!(&masked[12..], b"*******");
    }
}
