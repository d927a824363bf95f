//! SASL: SaslHandshake and SaslAuthenticate (PLAIN, and SCRAM-SHA-256/512 with the feature
//! `broker-scram`), the bare tokens after a v0 handshake, and DescribeUserScramCredentials and
//! AlterUserScramCredentials. No token, proof or password is logged or echoed.

use super::*;

#[cfg(feature = "broker-scram")]
use super::super::scram::{Exchange, ScramMechanism};
#[cfg(feature = "broker-scram")]
use std::boxed::Box;

/// Where a connection's SASL exchange is.
#[derive(Debug, Default)]
pub(crate) enum Session {
    /// No handshake yet, or PLAIN chosen (PLAIN tokens are checked whenever they come).
    #[default]
    Plain,
    /// A SCRAM exchange under way.
    #[cfg(feature = "broker-scram")]
    Scram(Box<Exchange>),
    /// Authenticated: later handshakes and tokens are ILLEGAL_SASL_STATE, as in Kafka.
    #[cfg(feature = "broker-scram")]
    Done,
}

/// How long a connection stays open after a failed SASL exchange before it is closed, so
/// that the client reads the failure first (Kafka's `connection.failed.authentication.delay.ms`).
const FAILED_AUTHENTICATION_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

impl Handler<'_> {
    /// How long to wait, after writing the last answer, before closing the connection.
    pub fn close_delay(&self) -> std::time::Duration {
        if self.sasl_failed { FAILED_AUTHENTICATION_DELAY } else { std::time::Duration::ZERO }
    }

    /// The mechanisms SaslHandshake lists, in Kafka's order of `sasl.enabled.mechanisms`.
    fn mechanisms(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if !self.shared.config.plain_users.is_empty() {
            m.push("PLAIN");
        }
        #[cfg(feature = "broker-scram")]
        if self.shared.scram.enabled {
            m.extend(ScramMechanism::ALL.map(ScramMechanism::name));
        }
        m
    }

    pub(super) fn sasl_handshake(
        &mut self,
        reply: ReplyTo,
        h: crate::codec::messages::SaslHandshakeRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::codec::messages::sasl_handshake::SaslHandshakeResponse;
        let offered = self.mechanisms();
        let accepted = offered.contains(&h.mechanism());
        let mechanisms: Vec<crate::codec::types::Str<'_>> = offered.iter().map(|&m| m.into()).collect();
        #[cfg(feature = "broker-scram")]
        let done = matches!(self.sasl, Session::Done);
        #[cfg(not(feature = "broker-scram"))]
        let done = false;
        let code = if done {
            ErrorCode::IllegalSaslState.to_i16()
        } else if accepted {
            self.raw_sasl = v == 0;
            #[cfg(feature = "broker-scram")]
            {
                self.sasl = match ScramMechanism::from_name(h.mechanism()) {
                    Some(m) => Session::Scram(Box::new(Exchange::new(m))),
                    None => Session::Plain,
                };
            }
            0
        } else {
            ErrorCode::UnsupportedSaslMechanism.to_i16()
        };
        let body = SaslHandshakeResponse { error_code: code, mechanisms: mechanisms[..].into() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn sasl_authenticate(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::SaslAuthenticateRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<Outcome, ConnError> {
        use crate::codec::messages::sasl_authenticate::SaslAuthenticateResponse;
        let failed = |code: ErrorCode, message: String| SaslAuthenticateResponse {
            error_code: code.to_i16(),
            error_message: Some(message.into()),
            ..Default::default()
        };
        match &mut self.sasl {
            #[cfg(feature = "broker-scram")]
            Session::Done => {
                let body = failed(
                    ErrorCode::IllegalSaslState,
                    "SaslAuthenticate request received after successful authentication".into(),
                );
                ServerConn::encode_response(reply, &body, out)?;
                Ok(Outcome::Continue)
            }
            #[cfg(feature = "broker-scram")]
            Session::Scram(x) => match x.step(a.auth_bytes(), &self.shared.scram) {
                Ok(answer) => {
                    if x.complete() {
                        if let Some(user) = &x.user {
                            self.principal = std::format!("User:{user}");
                        }
                        self.sasl = Session::Done;
                    }
                    let body =
                        SaslAuthenticateResponse { auth_bytes: (&answer[..]).into(), ..Default::default() };
                    ServerConn::encode_response(reply, &body, out)?;
                    Ok(Outcome::Continue)
                }
                Err(f) => {
                    self.sasl_failed = true;
                    let m = x.mechanism;
                    let body = failed(ErrorCode::SaslAuthenticationFailed, f.message(m));
                    ServerConn::encode_response(reply, &body, out)?;
                    // Kafka closes the connection after a failed exchange.
                    Ok(Outcome::Close(std::format!("SASL/{} authentication failed", m.name())))
                }
            },
            Session::Plain => {
                let body = if let Some(user) = self.shared.plain_user(a.auth_bytes()) {
                    self.principal = std::format!("User:{user}");
                    SaslAuthenticateResponse::default()
                } else {
                    failed(
                        ErrorCode::SaslAuthenticationFailed,
                        "Authentication failed: invalid username or password".into(),
                    )
                };
                ServerConn::encode_response(reply, &body, out)?;
                Ok(Outcome::Continue)
            }
        }
    }

    /// Answers a bare SASL token after a SaslHandshake v0: PLAIN's with an empty frame,
    /// SCRAM's with the next message in a frame of its own; a failure closes the connection,
    /// as Kafka does.
    pub fn raw_token(&mut self, token: &[u8], out: &mut Outbox) -> Outcome {
        self.raw_sasl = false;
        match &mut self.sasl {
            #[cfg(feature = "broker-scram")]
            Session::Scram(x) => match x.step(token, &self.shared.scram) {
                Ok(answer) => {
                    // A SCRAM message is a few hundred bytes: its size always fits.
                    let Ok(prefix) = crate::codec::frame::encode_size_prefix(answer.len()) else {
                        return Outcome::Close("a SCRAM answer too long to frame".into());
                    };
                    out.extend_from_slice(&prefix);
                    out.extend_from_slice(&answer);
                    if x.complete() {
                        if let Some(user) = &x.user {
                            self.principal = std::format!("User:{user}");
                        }
                        self.sasl = Session::Done;
                    } else {
                        self.raw_sasl = true;
                    }
                    Outcome::Continue
                }
                Err(_) => {
                    self.sasl_failed = true;
                    Outcome::Close(std::format!(
                        "SASL/{} authentication failed (v0 handshake)",
                        x.mechanism.name()
                    ))
                }
            },
            _ => {
                let Some(user) = self.shared.plain_user(token) else {
                    self.sasl_failed = true;
                    return Outcome::Close("SASL/PLAIN authentication failed (v0 handshake)".into());
                };
                self.principal = std::format!("User:{user}");
                // The empty frame that accepts a PLAIN token.
                out.extend_from_slice(&[0; 4]);
                Outcome::Continue
            }
        }
    }

    #[cfg(feature = "broker-scram")]
    pub(super) fn describe_user_scram_credentials(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeUserScramCredentialsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_user_scram_credentials::{
            CredentialInfo, DescribeUserScramCredentialsResponse, DescribeUserScramCredentialsResult,
        };
        let creds = &self.shared.scram;
        let names: Vec<String> = match d.users() {
            None => creds.names(),
            Some(users) => users.iter().map(|u| u.name().to_string()).collect(),
        };
        let infos: Vec<Vec<CredentialInfo<'_>>> = names
            .iter()
            .map(|n| {
                creds
                    .describe(n)
                    .into_iter()
                    .map(|(m, i)| CredentialInfo {
                        mechanism: m.to_i8(),
                        iterations: i32::try_from(i).unwrap_or(i32::MAX),
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let results: Vec<DescribeUserScramCredentialsResult<'_>> = names
            .iter()
            .zip(&infos)
            .map(|(name, info)| {
                let (code, message) = if names.iter().filter(|n| *n == name).count() > 1 {
                    (
                        ErrorCode::DuplicateResource,
                        Some("Cannot describe SCRAM credentials for the same user twice in a single request"),
                    )
                } else if info.is_empty() {
                    (
                        ErrorCode::ResourceNotFound,
                        Some("Attempt to describe a user credential that does not exist"),
                    )
                } else {
                    (ErrorCode::None, None)
                };
                let info = if code == ErrorCode::None { &info[..] } else { &[] };
                DescribeUserScramCredentialsResult {
                    user: name.as_str().into(),
                    error_code: code.to_i16(),
                    error_message: message.map(Into::into),
                    credential_infos: info.into(),
                    ..Default::default()
                }
            })
            .collect();
        let body = DescribeUserScramCredentialsResponse { results: results[..].into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    #[cfg(feature = "broker-scram")]
    pub(super) fn alter_user_scram_credentials(
        &mut self,
        reply: ReplyTo,
        a: crate::codec::messages::AlterUserScramCredentialsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::alter_user_scram_credentials::{
            AlterUserScramCredentialsResponse, AlterUserScramCredentialsResult,
        };
        if !self.allowed(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
            // Every user named, sorted, each CLUSTER_AUTHORIZATION_FAILED; nothing changes.
            let mut names: Vec<&str> = a.deletions().iter().map(|d| d.name()).collect();
            names.extend(a.upsertions().iter().map(|u| u.name()));
            names.sort_unstable();
            names.dedup();
            let results: Vec<AlterUserScramCredentialsResult<'_>> = names
                .iter()
                .map(|&name| AlterUserScramCredentialsResult {
                    user: name.into(),
                    error_code: ErrorCode::ClusterAuthorizationFailed.to_i16(),
                    error_message: Some(CLUSTER_REFUSED.into()),
                    ..Default::default()
                })
                .collect();
            let body = AlterUserScramCredentialsResponse { results: results.into(), ..Default::default() };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        let creds = &self.shared.scram;
        // Every user the request names, in order, and the first error of each.
        let mut users: Vec<(String, Option<(ErrorCode, &'static str)>)> = Vec::new();
        let mut seen: Vec<(String, i8)> = Vec::new();
        let note = |users: &mut Vec<(String, Option<(ErrorCode, &'static str)>)>,
                    name: &str,
                    err: Option<(ErrorCode, &'static str)>| {
            match users.iter_mut().find(|(n, _)| n == name) {
                Some((_, e)) => {
                    if e.is_none() {
                        *e = err;
                    }
                }
                None => users.push((name.to_string(), err)),
            }
        };
        let mut check = |name: &str, mechanism: i8| -> Option<(ErrorCode, &'static str)> {
            if name.is_empty() {
                return Some((ErrorCode::UnacceptableCredential, "Username must not be empty"));
            }
            if ScramMechanism::from_i8(mechanism).is_none() {
                return Some((ErrorCode::UnsupportedSaslMechanism, "Unknown SCRAM mechanism"));
            }
            if seen.iter().any(|(n, m)| n == name && *m == mechanism) {
                return Some((
                    ErrorCode::DuplicateResource,
                    "A user credential cannot be altered twice in the same request",
                ));
            }
            seen.push((name.to_string(), mechanism));
            None
        };
        let mut deletions = Vec::new();
        for d in a.deletions().iter() {
            let mut err = check(d.name(), d.mechanism());
            if err.is_none()
                && let Some(m) = ScramMechanism::from_i8(d.mechanism())
                && !creds.has(d.name(), m)
            {
                err = Some((
                    ErrorCode::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist",
                ));
            }
            note(&mut users, d.name(), err);
            deletions.push(d);
        }
        let mut upsertions = Vec::new();
        for u in a.upsertions().iter() {
            let mut err = check(u.name(), u.mechanism());
            if err.is_none()
                && let Err(why) = super::super::scram::check_iterations(i64::from(u.iterations()))
            {
                err = Some((ErrorCode::UnacceptableCredential, why));
            }
            note(&mut users, u.name(), err);
            upsertions.push(u);
        }
        // A user's changes are applied only when none of them is refused, as Kafka does.
        let ok = |name: &str| users.iter().any(|(n, e)| n == name && e.is_none());
        for d in deletions.iter().filter(|d| ok(d.name())) {
            if let Some(m) = ScramMechanism::from_i8(d.mechanism()) {
                creds.delete(d.name(), m);
            }
        }
        for u in upsertions.iter().filter(|u| ok(u.name())) {
            if let (Some(m), Ok(i)) = (ScramMechanism::from_i8(u.mechanism()), u32::try_from(u.iterations()))
            {
                creds.upsert(u.name(), m, i, u.salt(), u.salted_password());
            }
        }
        let results: Vec<AlterUserScramCredentialsResult<'_>> = users
            .iter()
            .map(|(name, err)| AlterUserScramCredentialsResult {
                user: name.as_str().into(),
                error_code: err.map_or(0, |(c, _)| c.to_i16()),
                error_message: err.map(|(_, m)| m.into()),
                ..Default::default()
            })
            .collect();
        let body = AlterUserScramCredentialsResponse { results: results[..].into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
