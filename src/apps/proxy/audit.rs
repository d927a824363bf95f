//! [`AuditLog`]: one JSON line per security-relevant event of a proxy.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::hooks::{ConnInfo, Event, Hooks};
use super::notes::{AuthNote, Pairing, RequestHead};
use crate::tools::reflect::walk::{Field, Scalar, Visitor};
use crate::tools::reflect::{self, StructSchema};
use crate::{ApiKey, ErrorCode};

/// The APIs whose answers are audited: what changes topics, ACLs, configs, quotas, SCRAM
/// credentials, partitions and their placement, and groups.
const AUDITED: &[ApiKey] = &[
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::DeleteRecords,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterClientQuotas,
    ApiKey::AlterUserScramCredentials,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ElectLeaders,
    ApiKey::DeleteGroups,
    ApiKey::CreateDelegationToken,
    ApiKey::ExpireDelegationToken,
    ApiKey::RenewDelegationToken,
];

/// A time as the proxy's logs write it: UTC, RFC 3339 with milliseconds
/// (`2026-12-03T04:05:06.789Z`).
pub fn timestamp(at: SystemTime) -> String {
    let t = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(t.as_secs()).unwrap_or(i64::MAX);
    format!("{}.{:03}Z", crate::codec::civil::Utc::from_unix(secs), t.subsec_millis())
}

/// A JSON string literal.
pub(super) fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn error_name(code: i16) -> String {
    ErrorCode::from_i16(code).map_or_else(|| format!("error {code}"), |e| e.name().to_owned())
}

/// What an audited answer says of each thing it acted on: its name (a topic, a resource, a
/// user, a group, ...) where the answer names it, and its error.
struct Outcomes {
    /// Per open struct: the name and the first error code read in it.
    open: Vec<(Option<String>, Option<i16>)>,
    done: Vec<(Option<String>, i16)>,
}

/// Whether a string field names what an audited change acted on.
fn names_the_object(field: &Field<'_>) -> bool {
    field.schema.entity.is_some()
        || matches!(field.schema.name, "Name" | "ResourceName" | "User" | "GroupId" | "EntityName" | "Topic")
}

impl<'a> Visitor<'a> for Outcomes {
    fn enter_struct(&mut self, _: &Field<'_>, _: &'static StructSchema) {
        self.open.push((None, None));
    }

    fn leave_struct(&mut self, _: &Field<'_>, _: &'static StructSchema) {
        if let Some((name, Some(error))) = self.open.pop() {
            self.done.push((name, error));
        }
    }

    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        let Some(top) = self.open.last_mut() else { return };
        match value {
            Scalar::Int16(code) if field.index.is_none() && field.schema.name.ends_with("ErrorCode") => {
                top.1.get_or_insert(code);
            }
            Scalar::String(name) if field.index.is_none() && names_the_object(field) && top.0.is_none() => {
                top.0 = Some(name.to_owned());
            }
            _ => {}
        }
    }
}

/// One JSON line per security-relevant event, to a file or any writer: authentication
/// (success and failure, with the mechanism and the user), answers that change topics,
/// ACLs, configs, quotas, SCRAM credentials, partitions, groups and delegation tokens
/// (each thing acted on, by name where the answer names it, with its error), connections
/// the proxy refused, and connections a filter closed. Every line has the time, the
/// connection, the client's address and the principal. No secret is written: users come
/// from `kwire::secrets::sasl_user`, which never returns a password, and no field of a
/// frame other than names and error codes is read.
///
/// It is a [`Hooks`]: give it to [`super::ProxyBuilder::hooks`], or call its methods from
/// hooks of your own.
///
/// ```
/// use kwire::proxy::AuditLog;
///
/// let audit = AuditLog::new(std::io::sink());
/// # drop(audit);
/// ```
pub struct AuditLog {
    out: Mutex<Box<dyn Write + Send>>,
    /// The user each connection's SASL exchange named, until it ends.
    users: Mutex<HashMap<u64, String>>,
}

impl core::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AuditLog")
    }
}

impl AuditLog {
    /// An audit log written to `out`, a line at a time.
    pub fn new(out: impl Write + Send + 'static) -> Self {
        AuditLog { out: Mutex::new(Box::new(out)), users: Mutex::new(HashMap::new()) }
    }

    /// An audit log appended to the file at `path` (created if missing).
    pub fn to_file(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog::new(file))
    }

    fn line(&self, conn: Option<&ConnInfo>, event: &str, outcome: &str, rest: &str) {
        let mut s = String::with_capacity(160);
        s.push_str("{\"time\":");
        json_str(&mut s, &timestamp(SystemTime::now()));
        if let Some(conn) = conn {
            let _ = write!(s, ",\"conn\":{},\"client\":", conn.id);
            json_str(&mut s, &conn.peer.to_string());
            s.push_str(",\"principal\":");
            match conn.principal() {
                Some(p) => json_str(&mut s, &p),
                None => s.push_str("null"),
            }
        }
        s.push_str(",\"event\":");
        json_str(&mut s, event);
        s.push_str(",\"outcome\":");
        json_str(&mut s, outcome);
        s.push_str(rest);
        s.push_str("}\n");
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // An audit line that cannot be written is lost, not a reason to stop the proxy.
        let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
    }

    /// Authentication as the proxy observed it.
    pub fn auth(&self, conn: &ConnInfo, note: &AuthNote) {
        let mechanism = conn.mechanism().unwrap_or_default();
        let user = |users: &HashMap<u64, String>| users.get(&conn.id).cloned().unwrap_or_default();
        let mut rest = String::from(",\"mechanism\":");
        json_str(&mut rest, &mechanism);
        match note {
            AuthNote::User(name) => {
                self.users.lock().unwrap_or_else(|e| e.into_inner()).insert(conn.id, name.clone());
            }
            AuthNote::Accepted => self.line(Some(conn), "authentication", "ok", &rest),
            AuthNote::Refused(code) => {
                rest.push_str(",\"user\":");
                json_str(&mut rest, &user(&self.users.lock().unwrap_or_else(|e| e.into_inner())));
                rest.push_str(",\"error\":");
                json_str(&mut rest, &error_name(*code));
                self.line(Some(conn), "authentication", "failed", &rest);
            }
            _ => {}
        }
    }

    /// An answer to a request of `api_key` at `api_version` (the response frame without its
    /// size prefix), if the API is one the log audits.
    pub fn answer(&self, conn: &ConnInfo, api_key: ApiKey, api_version: i16, frame: &[u8]) {
        if !AUDITED.contains(&api_key) {
            return;
        }
        let Ok((response, version)) = crate::session::conn::read_response(frame, api_key, api_version) else {
            self.line(Some(conn), api_key.name(), "unreadable answer", "");
            return;
        };
        // The body's own frame, for a top-level ErrorCode.
        let mut outcomes = Outcomes { open: vec![(None, None)], done: Vec::new() };
        let schema = reflect::response_schema(api_key);
        let _ = reflect::walk_body(schema, version, response.body.as_bytes(), 0, &mut outcomes);
        if let Some((name, Some(error))) = outcomes.open.pop() {
            outcomes.done.push((name, error));
        }
        let failed = outcomes.done.iter().any(|(_, e)| *e != 0);
        let mut rest = String::from(",\"objects\":[");
        for (i, (name, error)) in outcomes.done.iter().enumerate() {
            if i > 0 {
                rest.push(',');
            }
            rest.push_str("{\"name\":");
            match name {
                Some(n) => json_str(&mut rest, n),
                None => rest.push_str("null"),
            }
            rest.push_str(",\"error\":");
            json_str(&mut rest, &error_name(*error));
            rest.push('}');
        }
        rest.push(']');
        self.line(Some(conn), api_key.name(), if failed { "failed" } else { "ok" }, &rest);
    }

    /// A connection the proxy refused, or one a filter closed; other events are not
    /// audited.
    pub fn event(&self, conn: Option<&ConnInfo>, event: &Event<'_>) {
        match event {
            Event::Refused { peer, why } => {
                let mut rest = String::from(",\"peer\":");
                json_str(&mut rest, &peer.to_string());
                rest.push_str(",\"why\":");
                json_str(&mut rest, why);
                self.line(conn, "connection refused", "refused", &rest);
            }
            Event::Closed { why } => {
                if let Some(conn) = conn {
                    self.users.lock().unwrap_or_else(|e| e.into_inner()).remove(&conn.id);
                }
                if let Some(reason) = why.strip_prefix("closed by the proxy: ") {
                    let mut rest = String::from(",\"why\":");
                    json_str(&mut rest, reason);
                    self.line(conn, "connection closed by the proxy", "refused", &rest);
                }
            }
            Event::Auth(note) => {
                if let Some(conn) = conn {
                    self.auth(conn, note);
                }
            }
            _ => {}
        }
    }
}

impl Hooks for AuditLog {
    type Tag = ();

    fn admit(&self, _: &ConnInfo, _: &RequestHead, _: &[u8]) {}

    fn response(&self, conn: &ConnInfo, frame: &[u8], pairing: Pairing<()>, _: bool, _: Duration) {
        self.answer(conn, pairing.api_key, pairing.api_version, frame);
    }

    fn event(&self, conn: Option<&ConnInfo>, event: Event<'_>) {
        AuditLog::event(self, conn, &event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_rfc3339() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_270_706_789);
        assert_eq!(timestamp(t), "2026-12-03T04:05:06.789Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
