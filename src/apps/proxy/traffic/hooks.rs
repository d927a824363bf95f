//! The [`TrafficLog`]'s hooks: what it notes of each frame, pair and connection event.

use std::fmt::Write as _;

use super::*;

impl Hooks for TrafficLog {
    type Tag = Tag;

    fn admit(&self, conn: &ConnInfo, head: &RequestHead, frame: &[u8]) -> Tag {
        let RequestHead::Request { api_key, api_version, client_id, .. } = head else {
            return TrafficTag::default();
        };
        let name = self
            .recorder
            .as_ref()
            .and_then(|r| r.name(client_id.as_deref(), &api_name(*api_key), *api_version).map(Arc::from));
        let about = self.pair_lines().then(|| Arc::from(about_words(about_request(frame), conn)));
        TrafficTag { name, about }
    }

    fn request(&self, conn: &ConnInfo, frame: &[u8], head: &RequestHead, tag: &Tag) {
        self.request_read(conn, frame, head, tag, None);
    }

    fn request_read(
        &self,
        conn: &ConnInfo,
        frame: &[u8],
        head: &RequestHead,
        tag: &Tag,
        read: Option<Result<(), crate::codec::frame::FrameError>>,
    ) {
        let RequestHead::Request { .. } = head else { return };
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        // The proxy's parse when it made one, else the log's own.
        let decoded = match read {
            Some(read) => inspect::decoded(read),
            None => inspect::request(frame),
        };
        let roundtrip = (self.verify && decoded == Decoded::Ok).then(|| inspect::roundtrip_request(frame));
        if let (Some(r), Some(name)) = (&self.recorder, &tag.name) {
            let _ = r.save("requests", name, &with_prefix(frame), RecordAs::Request);
        }
        self.report(frame, RecordAs::Request, &decoded, roundtrip, conn.id, "");
    }

    fn response(&self, conn: &ConnInfo, frame: &[u8], e: Pairing<Tag>, rewritten: bool, latency: Duration) {
        self.response_read(conn, frame, e, rewritten, latency, None);
    }

    fn response_read(
        &self,
        conn: &ConnInfo,
        frame: &[u8],
        e: Pairing<Tag>,
        rewritten: bool,
        latency: Duration,
        read_at: Option<i16>,
    ) {
        if let Some(audit) = &self.audit {
            audit.answer(conn, e.api_key, e.api_version, frame);
        }
        self.stats.responses.fetch_add(1, Ordering::Relaxed);
        if rewritten {
            self.stats.rewritten.fetch_add(1, Ordering::Relaxed);
        }
        let key = e.api_key.to_i16();
        // The proxy's parse when it made one (it decoded), else the log's own.
        let info = match read_at {
            Some(version) => inspect::ResponseInfo { decoded: Decoded::Ok, version },
            None => inspect::response(frame, key, e.api_version),
        };
        let what = RecordAs::Response { api_key: key, api_version: info.version };
        if let (Some(r), Some(name)) = (&self.recorder, &e.request.tag.name) {
            let _ = r.save("responses", name, &with_prefix(frame), what);
        }
        let roundtrip = (self.verify && info.decoded == Decoded::Ok)
            .then(|| inspect::roundtrip_response(frame, key, info.version));
        let errors =
            if self.text() && self.quiet { Vec::new() } else { inspect::errors(frame, key, info.version) };
        if self.pair_lines() {
            // Ids in this answer and later ones are named from the proxy's book, which the
            // session filled from this answer before the hooks see it.
            let asked = e.request.tag.about.as_deref().unwrap_or("");
            let answered = about_words(about_response(frame, e.api_key, e.api_version), conn);
            let mut line = format!(
                "{} conn={} {} {} v{} req={}B{asked} resp={}B {:.3}ms{answered}",
                now(),
                conn.id,
                e.request.client_id.as_deref().unwrap_or("-"),
                e.api_key.name(),
                e.api_version,
                e.request.size,
                frame.len() + 4,
                latency.as_secs_f64() * 1e3
            );
            if !errors.is_empty() {
                let names: Vec<String> = errors.iter().map(|&c| error_name(c)).collect();
                let _ = write!(line, " errors={}", names.join(","));
            }
            if rewritten {
                line.push_str(match e.api_key {
                    ApiKey::ApiVersions => " (versions clamped)",
                    key if crate::filter::carries_addresses(key) => " (broker addresses rewritten)",
                    _ => " (rewritten by a filter)",
                });
            }
            self.lines.send(line);
        }
        // The JSON line's own fields (the text log has written its line above).
        let mut extra = String::new();
        if !self.text() {
            let _ = write!(extra, ",\"correlationId\":{},\"clientId\":", e.correlation_id);
            match e.request.client_id.as_deref() {
                Some(c) => json_str(&mut extra, c),
                None => extra.push_str("null"),
            }
            let _ = write!(
                extra,
                ",\"latencyUs\":{},\"errors\":{:?},\"rewritten\":{rewritten}",
                latency.as_micros(),
                errors
            );
        }
        self.report(frame, what, &info.decoded, roundtrip, conn.id, &extra);
    }

    fn no_response(&self, conn: &ConnInfo, api_key: i16, api_version: i16, request: Admitted<Tag>) {
        if self.pair_lines() {
            let asked = request.tag.about.as_deref().unwrap_or("");
            self.lines.send(format!(
                "{} conn={} {} {} v{api_version} req={}B{asked} no response",
                now(),
                conn.id,
                request.client_id.as_deref().unwrap_or("-"),
                api_name(api_key),
                request.size
            ));
        }
    }

    fn event(&self, conn: Option<&ConnInfo>, event: Event<'_>) {
        if let Some(audit) = &self.audit {
            audit.event(conn, &event);
        }
        let id = conn.map_or(0, |c| c.id);
        let peer = conn.map(|c| c.peer.to_string()).unwrap_or_default();
        let t = now();
        match event {
            // The owner says where clients bootstrap.
            Event::Listening { broker: None, .. } => {}
            Event::Listening { addr, broker: Some((broker, None)) } => {
                self.lines.send(format!("{t} listening on {addr} for broker {broker}"));
            }
            Event::Listening { addr, broker: Some((broker, Some(node))) } => {
                self.lines
                    .send(format!("{t} listening on {addr} for broker {node} at {broker} (by node id)"));
            }
            Event::Notice(words) => self.lines.send(format!("{t} {words}")),
            Event::Connected { upstream, tls } => {
                self.stats.connections.fetch_add(1, Ordering::Relaxed);
                let tls = if tls.is_empty() { String::new() } else { format!(" {tls}") };
                self.lines.send(format!("{t} conn={id} {peer}: connected, forwarding to {upstream}{tls}"));
            }
            Event::Refused { peer, why } => {
                let conn = conn.map(|c| format!("conn={} ", c.id)).unwrap_or_default();
                self.lines.send(format!("{t} {conn}{peer}: {why}; closing this connection"));
            }
            Event::Closed { why } => {
                if let Some(reason) = why.strip_prefix("closed by the proxy: ") {
                    self.lines.send(format!("{t} conn={id} closing this connection: {reason}"));
                }
                self.lines.send(format!("{t} conn={id} {peer}: closed ({why})"));
            }
            Event::Violation { from_client, what } => {
                self.stats.violations.fetch_add(1, Ordering::Relaxed);
                let side = if from_client { "the client" } else { "the broker" };
                self.lines.send(format!(
                    "{t} conn={id} framing violation from {side}: {what}; closing this connection"
                ));
            }
            Event::Auth(note) => {
                let words = match note {
                    AuthNote::Mechanism(m) => format!("SASL mechanism {m} (SaslHandshake)"),
                    AuthNote::User(u) => {
                        let mechanism = conn.and_then(ConnInfo::mechanism).unwrap_or_default();
                        format!("SASL {mechanism} user {u:?}")
                    }
                    AuthNote::Refused(code) => format!("SASL refused by the broker: {}", error_name(*code)),
                    _ => return,
                };
                self.sasl_line(&words, id);
            }
            Event::SaslToken { from_client, size } => self.token_line(size, from_client, id),
            Event::BadRequest { frame, why } => {
                self.stats.requests.fetch_add(1, Ordering::Relaxed);
                self.count_undecoded(Direction::Request, "?", Undecoded::Malformed);
                self.lines.send(format!("{t} conn={id} request not decoded: {why}"));
                self.record_undecoded("request", frame, RecordAs::Request, why);
            }
            Event::Unpaired { frame, why } => {
                self.stats.responses.fetch_add(1, Ordering::Relaxed);
                self.count_undecoded(Direction::Response, "?", Undecoded::Unpaired);
                self.lines.send(format!("{t} conn={id} response not decoded: {why}"));
                self.record_undecoded("response", frame, RecordAs::Unpaired, why);
            }
            Event::OutOfOrder { correlation_id } => {
                self.lines.send(format!(
                    "{t} conn={id} the broker answered correlation id {correlation_id} out of order"
                ));
            }
        }
    }
}
