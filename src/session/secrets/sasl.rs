//! SASL tokens read for what a log may show (the user name) and, after a SaslHandshake v0,
//! the bare token frames a proxy must never decode ([`RawSasl`]).

use crate::ApiKey;

/// The user name a client's first SASL token gives, for a log line: the authentication
/// identity of a `PLAIN` token (`authzid NUL authcid NUL password`), or the `n=` user of a
/// `SCRAM-SHA-256`/`SCRAM-SHA-512` client-first message (as sent, `=2C` and `=3D` escapes
/// kept). `None` for any other mechanism or token, SCRAM's client-final message included:
/// the password, proofs and bearer tokens are never part of the answer.
///
/// ```
/// use kwire::secrets::sasl_user;
///
/// assert_eq!(sasl_user("PLAIN", b"\0alice\0hunter2"), Some("alice"));
/// assert_eq!(sasl_user("SCRAM-SHA-512", b"n,,n=bob,r=fyko+d2lbbFgONRv9qkxdawL"), Some("bob"));
/// assert_eq!(sasl_user("SCRAM-SHA-512", b"c=biws,r=fyko,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="), None);
/// assert_eq!(sasl_user("OAUTHBEARER", b"n,,\x01auth=Bearer eyJ\x01\x01"), None);
/// ```
pub fn sasl_user<'t>(mechanism: &str, token: &'t [u8]) -> Option<&'t str> {
    let name = |b: &'t [u8]| core::str::from_utf8(b).ok().filter(|s| !s.is_empty());
    if mechanism.eq_ignore_ascii_case("PLAIN") {
        let mut parts = token.splitn(3, |&b| b == 0);
        let (_authzid, authcid, _password) = (parts.next()?, parts.next()?, parts.next()?);
        return name(authcid);
    }
    if mechanism.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("SCRAM-")) {
        // gs2-header ("n,," / "y,," / "p=...,," with an optional "a=authzid"), then
        // "n=user,r=nonce,...".
        let first = token.first()?;
        if !matches!(first, b'n' | b'y' | b'p') {
            return None;
        }
        let mut commas = token.iter().enumerate().filter(|(_, b)| **b == b',').map(|(i, _)| i);
        let (_, second) = (commas.next()?, commas.next()?);
        let bare = token.get(second + 1..)?;
        let user = bare.strip_prefix(b"n=")?;
        let end = user.iter().position(|&b| b == b',')?;
        return name(&user[..end]);
    }
    None
}

/// The SASL mechanism named in a SaslHandshake request, as far as the raw token exchange
/// of SaslHandshake v0 is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `PLAIN`: one token each way; the broker's is empty.
    Plain,
    /// `SCRAM-SHA-256` / `SCRAM-SHA-512`: two tokens each way.
    Scram,
    /// `OAUTHBEARER`: the client's token, then the broker's: empty on success; an error
    /// description otherwise, after which the client sends one more token and the broker
    /// closes the connection.
    OAuthBearer,
    /// Any other mechanism (`GSSAPI`, ...): its end cannot be told from outside, so every
    /// later frame of the connection is taken for a token.
    Other,
}

impl Mechanism {
    /// The mechanism of this name.
    pub fn from_name(name: &str) -> Mechanism {
        match name {
            "PLAIN" => Mechanism::Plain,
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => Mechanism::Scram,
            "OAUTHBEARER" => Mechanism::OAuthBearer,
            _ => Mechanism::Other,
        }
    }
}

/// Where a connection is in SaslHandshake v0's raw token exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Kafka frames.
    Kafka,
    /// A SaslHandshake v0 request went out; its answer decides.
    Handshake(Mechanism),
    /// Raw tokens until the broker has sent `server_tokens` of them (`u8::MAX`: never).
    Tokens { mechanism: Mechanism, server_tokens: u8 },
}

/// Tells, on one connection, which frames are SaslHandshake v0's raw SASL tokens.
///
/// After a SaslHandshake **v0** request and a successful answer, both sides exchange the
/// mechanism's tokens as bare frames (a 4-byte size, then the token, no Kafka header) until
/// authentication ends; Kafka frames follow. SaslHandshake v1 and later wrap the tokens in
/// SaslAuthenticate requests instead. A proxy calls [`RawSasl::on_request`] for every
/// request it forwards, [`RawSasl::on_handshake_response`] for the answer to a SaslHandshake
/// v0 request, and asks [`RawSasl::client_token`] / [`RawSasl::server_token`] before
/// decoding each frame; a token is forwarded as it is and never decoded or shown.
///
/// The end of the exchange is known from the mechanism ([`Mechanism`]): PLAIN after the
/// broker's first token, SCRAM after its second, OAUTHBEARER after an empty one. For any
/// other mechanism the rest of the connection is treated as tokens.
///
/// ```
/// use kwire::{secrets::RawSasl, ApiKey};
///
/// let mut sasl = RawSasl::new();
/// sasl.on_request(ApiKey::SaslHandshake, 0, Some("PLAIN")); // v0
/// assert!(sasl.client_token()); // nothing but tokens may follow until the answer
/// sasl.on_handshake_response(0); // accepted
/// assert!(sasl.client_token()); // the client's token
/// assert!(sasl.server_token(0)); // the broker's (empty) token: the last
/// assert!(!sasl.client_token() && !sasl.server_token(10)); // Kafka frames again
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSasl {
    phase: Phase,
}

impl Default for RawSasl {
    fn default() -> Self {
        Self::new()
    }
}

impl RawSasl {
    /// A connection that starts with Kafka frames.
    pub const fn new() -> Self {
        RawSasl { phase: Phase::Kafka }
    }

    /// A request of `api_key` at `version` goes out; `mechanism` is a SaslHandshake
    /// request's `Mechanism` (`None` if it could not be read).
    pub fn on_request(&mut self, api_key: ApiKey, version: i16, mechanism: Option<&str>) {
        if api_key == ApiKey::SaslHandshake && version == 0 && self.phase == Phase::Kafka {
            self.phase = Phase::Handshake(mechanism.map_or(Mechanism::Other, Mechanism::from_name));
        }
    }

    /// The answer to the SaslHandshake v0 request arrived, with this error code (0:
    /// accepted; tokens follow).
    pub fn on_handshake_response(&mut self, error_code: i16) {
        if let Phase::Handshake(mechanism) = self.phase {
            self.phase = if error_code == 0 {
                let server_tokens = match mechanism {
                    Mechanism::Plain => 1,
                    Mechanism::Scram => 2,
                    Mechanism::OAuthBearer | Mechanism::Other => u8::MAX,
                };
                Phase::Tokens { mechanism, server_tokens }
            } else {
                Phase::Kafka
            };
        }
    }

    /// Whether the next frame from the client is a raw token (from the SaslHandshake v0
    /// request until the broker's last token).
    pub fn client_token(&self) -> bool {
        !matches!(self.phase, Phase::Kafka)
    }

    /// Whether a frame of `len` bytes from the broker is a raw token; counts it, so ask
    /// once per frame, before forwarding it.
    pub fn server_token(&mut self, len: usize) -> bool {
        let Phase::Tokens { mechanism, server_tokens } = &mut self.phase else { return false };
        match mechanism {
            Mechanism::OAuthBearer if len == 0 => self.phase = Phase::Kafka,
            Mechanism::Plain | Mechanism::Scram => {
                *server_tokens -= 1;
                if *server_tokens == 0 {
                    self.phase = Phase::Kafka;
                }
            }
            _ => {}
        }
        true
    }

    /// Whether the connection is in the raw token exchange for good (a mechanism whose
    /// end cannot be told).
    pub fn for_good(&self) -> bool {
        matches!(self.phase, Phase::Tokens { server_tokens: u8::MAX, mechanism: Mechanism::Other })
    }
}
