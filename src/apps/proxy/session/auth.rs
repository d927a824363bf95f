//! What a session observes of SASL authentication: the mechanism a client names, the user
//! its bytes name (read through [`crate::session::secrets::sasl_user`], the bytes never
//! kept), and the broker's verdict; a v0 handshake also starts the raw token phase.

use std::string::{String, ToString};

use super::super::notes::AuthNote;
use super::Session;
use crate::ApiKey;
use crate::codec::messages::{RequestBodyView, ResponseBodyView};
use crate::filter::{ParsedRequest, ParsedResponse};

/// The SASL state the session observes.
#[derive(Default)]
pub(super) struct Auth {
    pub(super) mechanism: Option<String>,
    /// The user the client's SASL bytes named, until the broker says yes or no.
    pub(super) user: Option<String>,
}

impl<T> Session<T> {
    /// What a SaslHandshake or SaslAuthenticate request says of authentication; a v0
    /// handshake also starts the raw token phase.
    pub(super) fn sasl_request(&mut self, parsed: &mut ParsedRequest<'_>) -> Option<AuthNote> {
        let api_version = parsed.head().api_version;
        let request = parsed.request().ok()?;
        match request.body {
            RequestBodyView::SaslHandshake(v) => {
                let mechanism = v.mechanism().to_string();
                if api_version == 0 {
                    self.sasl.on_request(ApiKey::SaslHandshake, 0, Some(&mechanism));
                }
                self.auth = Auth { mechanism: Some(mechanism.clone()), user: None };
                self.info.set_auth(Some(mechanism.clone()), None);
                Some(AuthNote::Mechanism(mechanism))
            }
            RequestBodyView::SaslAuthenticate(v) => self.user_from(v.auth_bytes()),
            _ => None,
        }
    }

    /// The user that a client's SASL bytes name, the first time they name one.
    pub(super) fn user_from(&mut self, auth_bytes: &[u8]) -> Option<AuthNote> {
        // Secret: `auth_bytes` holds the client's credentials (a PLAIN password, a SCRAM
        // proof, a token). They go only to `sasl_user`, which returns the user name.
        let mechanism = self.auth.mechanism.as_deref()?;
        if self.auth.user.is_some() {
            return None;
        }
        let user = crate::session::secrets::sasl_user(mechanism, auth_bytes)?.to_string();
        self.auth.user = Some(user.clone());
        Some(AuthNote::User(user))
    }

    /// The broker's verdict on authentication: the principal is known once it says yes.
    pub(super) fn verdict(&mut self, error_code: i16) -> AuthNote {
        if error_code == 0 {
            self.info.set_auth(self.auth.mechanism.clone(), Some(self.auth.user.clone().unwrap_or_default()));
            AuthNote::Accepted
        } else {
            AuthNote::Refused(error_code)
        }
    }

    /// What a SaslHandshake or SaslAuthenticate response says of authentication.
    pub(super) fn sasl_response(&mut self, parsed: &mut ParsedResponse<'_>) -> Option<AuthNote> {
        let version = parsed.api_version();
        match parsed.api_key() {
            ApiKey::SaslHandshake => {
                let error = match parsed.response() {
                    Some((r, _)) => match r.body {
                        ResponseBodyView::SaslHandshake(v) => v.error_code(),
                        _ => -1,
                    },
                    None => -1,
                };
                if version == 0 {
                    self.sasl.on_handshake_response(error);
                }
                (error != 0).then_some(AuthNote::Refused(error))
            }
            ApiKey::SaslAuthenticate => match parsed.response()?.0.body {
                ResponseBodyView::SaslAuthenticate(v) => {
                    // SCRAM takes two rounds: the server's last message (`v=...`) ends it.
                    let scram = self.auth.mechanism.as_deref().is_some_and(|m| m.starts_with("SCRAM"));
                    if v.error_code() == 0 && scram && !v.auth_bytes().starts_with(b"v=") {
                        return None;
                    }
                    Some(self.verdict(v.error_code()))
                }
                _ => None,
            },
            _ => None,
        }
    }
}
