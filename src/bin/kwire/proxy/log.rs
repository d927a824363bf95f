//! What `kwire proxy` says of the traffic: its `kwire::proxy::Hooks`, which decode each frame
//! after it was sent (`decode.rs`) for the text or JSON log, the recordings and the summary.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kwire::Direction;
use kwire::conn::metrics::Undecoded;
use kwire::proxy::{Admitted, AuthNote, ConnInfo, Event, Hooks, Pairing, RequestHead};

use super::decode::{self, Decoded};
use super::{Cli, Format, now};

/// What the log keeps of a request until its answer: the name its frames are recorded under.
pub type Tag = Option<Arc<str>>;

impl Hooks for Cli {
    type Tag = Tag;

    fn admit(&self, _: &ConnInfo, head: &RequestHead) -> Tag {
        let RequestHead::Request { api_key, api_version, client_id, .. } = head else { return None };
        let recorder = self.recorder.as_ref()?;
        recorder.name(client_id.as_deref(), &decode::api_name(*api_key), *api_version).map(Arc::from)
    }

    fn request(&self, conn: &ConnInfo, frame: &[u8], head: &RequestHead, tag: &Tag) {
        let RequestHead::Request { api_key, api_version, .. } = head else { return };
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let api = decode::api_name(*api_key);
        let decoded = decode::decode_request(frame);
        let roundtrip =
            if self.verify && decoded == Decoded::Ok { Some(decode::roundtrip_request(frame)) } else { None };
        if let (Some(r), Some(name)) = (&self.recorder, tag) {
            let _ = r.save("requests", name, &with_prefix(frame), None, self.show_secrets);
        }
        let _ = api_version;
        self.report("request", frame, &api, None, &decoded, roundtrip.as_ref(), conn.id, None);
    }

    fn response(&self, conn: &ConnInfo, frame: &[u8], e: Pairing<Tag>, rewritten: bool, latency: Duration) {
        self.stats.responses.fetch_add(1, Ordering::Relaxed);
        if rewritten {
            self.stats.rewritten.fetch_add(1, Ordering::Relaxed);
        }
        let key = e.api_key.to_i16();
        let info = decode::decode_response(frame, key, e.api_version);
        let api = decode::api_name(key);
        if let (Some(r), Some(name)) = (&self.recorder, &e.request.tag) {
            let _ =
                r.save("responses", name, &with_prefix(frame), Some((key, info.version)), self.show_secrets);
        }
        let roundtrip = if self.verify && info.decoded == Decoded::Ok {
            Some(decode::roundtrip_response(frame, key, info.version))
        } else {
            None
        };
        if self.format == Format::Text && !self.quiet {
            let mut line = format!(
                "{} conn={} {} {api} v{} req={}B resp={}B {:.3}ms",
                now(),
                conn.id,
                e.request.client_id.as_deref().unwrap_or("-"),
                e.api_version,
                e.request.size,
                frame.len() + 4,
                latency.as_secs_f64() * 1e3
            );
            if !info.errors.is_empty() {
                let names: Vec<String> = info.errors.iter().map(|&c| decode::error_name(c)).collect();
                line.push_str(&format!(" errors={}", names.join(",")));
            }
            if rewritten {
                line.push_str(match e.api_key {
                    kwire::ApiKey::ApiVersions => " (versions clamped)",
                    kwire::ApiKey::Metadata
                    | kwire::ApiKey::FindCoordinator
                    | kwire::ApiKey::DescribeCluster
                    | kwire::ApiKey::Produce
                    | kwire::ApiKey::Fetch
                    | kwire::ApiKey::ShareFetch
                    | kwire::ApiKey::ShareAcknowledge => " (broker addresses rewritten)",
                    _ => " (rewritten by a filter)",
                });
            }
            self.log.line(line);
        }
        let extra = format!(
            ",\"correlationId\":{},\"clientId\":{},\"latencyUs\":{},\"errors\":{:?},\"rewritten\":{rewritten}",
            e.correlation_id,
            serde_json::to_string(&e.request.client_id.as_deref()).unwrap_or_default(),
            latency.as_micros(),
            info.errors,
        );
        self.report(
            "response",
            frame,
            &api,
            Some((key, info.version)),
            &info.decoded,
            roundtrip.as_ref(),
            conn.id,
            Some(extra),
        );
    }

    fn no_response(&self, conn: &ConnInfo, api_key: i16, api_version: i16, request: Admitted<Tag>) {
        if self.format == Format::Text && !self.quiet {
            self.log.line(format!(
                "{} conn={} {} {} v{api_version} req={}B no response",
                now(),
                conn.id,
                request.client_id.as_deref().unwrap_or("-"),
                decode::api_name(api_key),
                request.size
            ));
        }
    }

    fn event(&self, conn: Option<&ConnInfo>, event: Event<'_>) {
        let id = conn.map_or(0, |c| c.id);
        let peer = conn.map(|c| c.peer.to_string()).unwrap_or_default();
        match event {
            // The first line of stdout says it (`run`); tests read it.
            Event::Listening { broker: None, .. } => {}
            Event::Listening { addr, broker: Some((broker, None)) } => {
                self.log.line(format!("{} listening on {addr} for broker {broker}", now()));
            }
            Event::Listening { addr, broker: Some((broker, Some(node))) } => self.log.line(format!(
                "{} listening on {addr} for broker {node} at {broker} (--broker-ports)",
                now()
            )),
            Event::Notice(words) => self.log.line(format!("{} {words}", now())),
            Event::Connected { upstream, tls } => {
                self.stats.connections.fetch_add(1, Ordering::Relaxed);
                let tls = if tls.is_empty() { String::new() } else { format!(" {tls}") };
                self.log
                    .line(format!("{} conn={id} {peer}: connected, forwarding to {upstream}{tls}", now()));
            }
            Event::Refused { peer, why } => {
                let conn = conn.map(|c| format!("conn={} ", c.id)).unwrap_or_default();
                self.log.line(format!("{} {conn}{peer}: {why}; closing this connection", now()));
            }
            Event::Closed { why } => {
                if let Some(reason) = why.strip_prefix("closed by the proxy: ") {
                    self.log.line(format!("{} conn={id} closing this connection: {reason}", now()));
                }
                self.log.line(format!("{} conn={id} {peer}: closed ({why})", now()));
            }
            Event::Violation { from_client, what } => {
                self.stats.violations.fetch_add(1, Ordering::Relaxed);
                let side = if from_client { "the client" } else { "the broker" };
                let what = what.replace("bytes", "bytes (--max-frame-bytes)");
                self.log.line(format!(
                    "{} conn={id} framing violation from {side}: {what}; closing this connection",
                    now()
                ));
            }
            Event::Auth(note) => {
                let words = match note {
                    AuthNote::Mechanism(m) => format!("SASL mechanism {m} (SaslHandshake)"),
                    AuthNote::User(u) => {
                        let mechanism = conn.and_then(ConnInfo::mechanism).unwrap_or_default();
                        format!("SASL {mechanism} user {u:?}")
                    }
                    AuthNote::Accepted => return,
                    AuthNote::Refused(code) => {
                        format!("SASL refused by the broker: {}", decode::error_name(*code))
                    }
                    _ => return,
                };
                self.log_sasl(&words, id);
            }
            Event::SaslToken { from_client, size } => self.on_token(size, from_client, id),
            Event::BadRequest { frame, why } => {
                self.stats.requests.fetch_add(1, Ordering::Relaxed);
                self.count_undecoded(Direction::Request, "?", Undecoded::Malformed);
                self.log.line(format!("{} conn={id} request not decoded: {why}", now()));
                if let Some(r) = &self.recorder {
                    let _ = r.save_undecoded("request", &with_prefix(frame), None, why, self.show_secrets);
                }
            }
            Event::Unpaired { frame, why } => {
                self.stats.responses.fetch_add(1, Ordering::Relaxed);
                self.count_undecoded(Direction::Response, "?", Undecoded::Unpaired);
                self.log.line(format!("{} conn={id} response not decoded: {why}", now()));
                if let Some(r) = &self.recorder {
                    let _ = r.save_undecoded(
                        "response",
                        &with_prefix(frame),
                        Some((-1, -1)),
                        why,
                        self.show_secrets,
                    );
                }
            }
            Event::OutOfOrder { correlation_id } => self.log.line(format!(
                "{} conn={id} the broker answered correlation id {correlation_id} out of order",
                now()
            )),
            _ => {}
        }
    }
}

fn with_prefix(frame: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(frame.len() + 4);
    v.extend_from_slice(&(frame.len() as u32).to_be_bytes());
    v.extend_from_slice(frame);
    v
}

impl Cli {
    /// The SASL mechanism or user of a connection, in the log (text, `--quiet` too, or JSON).
    fn log_sasl(&self, words: &str, id: u64) {
        match self.format {
            Format::Text => self.log.line(format!("{} conn={id} {words}", now())),
            Format::Json => self.log.line(format!(
                "{{\"time\":\"{}\",\"conn\":{id},\"sasl\":{}}}",
                now(),
                serde_json::to_string(words).unwrap_or_default()
            )),
        }
    }

    /// A raw SASL token passed through: one line saying so, never its bytes.
    fn on_token(&self, size: usize, from_client: bool, id: u64) {
        self.stats.sasl_tokens.fetch_add(1, Ordering::Relaxed);
        let from = if from_client { "client" } else { "broker" };
        match self.format {
            Format::Text if !self.quiet => self.log.line(format!(
                "{} conn={id} SASL tokens (v0 handshake): {} bytes from the {from}, not shown",
                now(),
                size - 4
            )),
            Format::Json => self.log.line(format!(
                "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{}\",\"saslToken\":true,\"size\":{size},\"shown\":false}}",
                now(),
                if from_client { "request" } else { "response" },
            )),
            Format::Text => {}
        }
    }

    /// Logs a frame's decoding problems (text) or the frame itself (JSON); `frame` is
    /// without its size prefix.
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        direction: &str,
        frame: &[u8],
        api: &str,
        response_to: Option<(i16, i16)>,
        decoded: &Decoded,
        roundtrip: Option<&Result<bool, String>>,
        id: u64,
        extra: Option<String>,
    ) {
        if let Some(reason) = decoded.reason() {
            let unknown = matches!(decoded, Decoded::Unknown(_));
            let why = if unknown { Undecoded::Unknown } else { Undecoded::Malformed };
            let side = if direction == "request" { Direction::Request } else { Direction::Response };
            let before = self.count_undecoded(side, api, why);
            if let Some(r) = &self.recorder {
                let _ = r.save_undecoded(
                    &format!("{direction}_{api}"),
                    &with_prefix(frame),
                    response_to,
                    reason,
                    self.show_secrets,
                );
            }
            // A malformed frame is logged each time; an API kwire does not know, once.
            if self.format == Format::Text && (!unknown || before == 0) {
                let more = if unknown { "; further ones are only counted" } else { "" };
                self.log.line(format!(
                    "{} conn={id} {direction} {api} not decoded ({}): {reason}{more}",
                    now(),
                    why.label()
                ));
            }
        }
        if let Some(Err(e)) = roundtrip {
            self.stats.mismatches.fetch_add(1, Ordering::Relaxed);
            if self.format == Format::Text {
                self.log.line(format!(
                    "{} conn={id} {direction} {api} does not re-encode byte for byte: {e}",
                    now()
                ));
            }
        }
        if self.format == Format::Json {
            let (key, version) = match response_to {
                Some(kv) => kv,
                None => match kwire::frame::RequestHeaderView::peek(frame) {
                    Ok(h) => (h.api_key, h.api_version),
                    Err(_) => (-1, -1),
                },
            };
            let rt = match roundtrip {
                None => "\"skipped\"".to_string(),
                Some(Ok(true)) => "\"ok\"".to_string(),
                Some(Ok(false)) => "\"unknown\"".to_string(),
                Some(Err(e)) => serde_json::to_string(&format!("mismatch: {e}")).unwrap_or_default(),
            };
            let decoded_frame = if *decoded == Decoded::Ok {
                let whole = with_prefix(frame);
                let shown = if self.show_secrets { whole } else { decode::redacted(&whole, response_to).0 };
                decode::frame_json(&shown, response_to).unwrap_or_else(|| "null".into())
            } else {
                "null".into()
            };
            let reason = serde_json::to_string(&decoded.reason()).unwrap_or_default();
            let line = format!(
                "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{direction}\",\"api\":{},\"apiKey\":{key},\
                 \"apiVersion\":{version},\"size\":{},\"decoded\":\"{}\",\"reason\":{reason},\"roundtrip\":{rt}{},\
                 \"frame\":{decoded_frame}}}",
                now(),
                serde_json::to_string(api).unwrap_or_default(),
                frame.len() + 4,
                decoded.word(),
                extra.unwrap_or_default(),
            );
            self.log.line(line);
        }
    }
}
