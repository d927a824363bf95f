//! SASL SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Apache Kafka serves them
//! (`ScramSaslServer`): the users' salted credentials, and one exchange per connection.
//!
//! Crypto is ring's (HMAC, SHA-2, PBKDF2, `SystemRandom`). Passwords are turned into
//! credentials (salt, iteration count, StoredKey, ServerKey) when the broker starts and then
//! dropped; nothing here is logged, and the Debug forms show no key, salt or proof.

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::{digest, hmac, pbkdf2, rand::SecureRandom};

/// A SCRAM mechanism: the hash behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScramMechanism {
    /// `SCRAM-SHA-256` (Kafka's mechanism type 1).
    Sha256,
    /// `SCRAM-SHA-512` (Kafka's mechanism type 2).
    Sha512,
}

impl ScramMechanism {
    /// Both, in the order SaslHandshake lists them.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];
    /// The fewest iterations Kafka accepts for either mechanism (`ScramMechanism.minIterations`).
    pub const MIN_ITERATIONS: u32 = 4096;
    /// The most iterations Kafka accepts in AlterUserScramCredentials.
    pub const MAX_ITERATIONS: u32 = 16384;

    /// The SASL name: `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL name (exactly as Kafka spells it).
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        ScramMechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The wire value: the `Mechanism` code of DescribeUserScramCredentials and
    /// AlterUserScramCredentials.
    pub const fn to_i8(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// Looks up a wire value; `None` for a code Kafka does not define.
    pub const fn from_i8(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    fn hmac(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }

    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    fn len(self) -> usize {
        self.digest().output_len()
    }
}

/// A SCRAM user of [`super::Config::scram_users`]: a name, a password and the mechanism
/// its credential is for (a user of both mechanisms is listed twice). The broker derives
/// the salted credential when it starts and keeps only that; the Debug form hides the
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramUser {
    /// The user name.
    pub name: String,
    /// The password (kept only until [`super::Broker::start`] derives the credential).
    pub password: String,
    /// The mechanism the credential is for.
    pub mechanism: ScramMechanism,
    /// PBKDF2 iterations (default 4096, Kafka's minimum; at most 16384).
    pub iterations: u32,
}

impl ScramUser {
    /// A user with [`ScramMechanism::MIN_ITERATIONS`] iterations.
    pub fn new(name: impl Into<String>, password: impl Into<String>, mechanism: ScramMechanism) -> Self {
        ScramUser {
            name: name.into(),
            password: password.into(),
            mechanism,
            iterations: ScramMechanism::MIN_ITERATIONS,
        }
    }
}

impl core::fmt::Debug for ScramUser {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ScramUser")
            .field("name", &self.name)
            .field("password", &"<redacted>")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish()
    }
}

/// Checks a user's iteration count as Kafka does.
pub(crate) fn check_iterations(iterations: i64) -> Result<(), &'static str> {
    if iterations < i64::from(ScramMechanism::MIN_ITERATIONS) {
        Err("Too few iterations")
    } else if iterations > i64::from(ScramMechanism::MAX_ITERATIONS) {
        Err("Too many iterations")
    } else {
        Ok(())
    }
}

/// What the broker keeps of a password: enough to check a proof and sign an answer, not
/// enough to log in with.
#[derive(Clone)]
pub(crate) struct Credential {
    salt: Vec<u8>,
    iterations: u32,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl core::fmt::Debug for Credential {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Credential").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

impl Credential {
    /// From a salted password (PBKDF2 of the password), as AlterUserScramCredentials sends it.
    fn from_salted(mechanism: ScramMechanism, salt: &[u8], iterations: u32, salted: &[u8]) -> Credential {
        let key = hmac::Key::new(mechanism.hmac(), salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(mechanism.digest(), client_key.as_ref()).as_ref().to_vec();
        let server_key = hmac::sign(&key, b"Server Key").as_ref().to_vec();
        Credential { salt: salt.to_vec(), iterations, stored_key, server_key }
    }

    fn from_password(mechanism: ScramMechanism, password: &str, iterations: u32) -> Credential {
        let mut salt = [0u8; 32];
        random(&mut salt);
        let mut salted = [0u8; 64];
        let salted = &mut salted[..mechanism.len()];
        let n = core::num::NonZeroU32::new(iterations).unwrap_or(core::num::NonZeroU32::MIN);
        pbkdf2::derive(mechanism.pbkdf2(), n, &salt, password.as_bytes(), salted);
        let c = Credential::from_salted(mechanism, &salt, iterations, salted);
        salted.fill(0);
        c
    }
}

fn random(out: &mut [u8]) {
    // SystemRandom fails only where the OS has no random source at all.
    if ring::rand::SystemRandom::new().fill(out).is_err() {
        panic!("no system random source for SCRAM salts and nonces");
    }
}

/// The broker's SCRAM credentials by (user, mechanism).
#[derive(Debug, Default)]
pub(crate) struct Credentials {
    /// Whether SaslHandshake offers SCRAM (users were configured).
    pub enabled: bool,
    users: Mutex<BTreeMap<(String, ScramMechanism), Credential>>,
}

impl Credentials {
    /// Derives the users' credentials; their passwords are dropped with `users`.
    pub fn from_users(users: Vec<ScramUser>) -> Credentials {
        let enabled = !users.is_empty();
        let map = users
            .into_iter()
            .map(|u| {
                let c = Credential::from_password(u.mechanism, &u.password, u.iterations);
                ((u.name, u.mechanism), c)
            })
            .collect();
        Credentials { enabled, users: Mutex::new(map) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, ScramMechanism), Credential>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<Credential> {
        self.lock().get(&(user.to_string(), mechanism)).cloned()
    }

    /// The mechanisms and iteration counts of a user's credentials (empty: no such user).
    pub fn describe(&self, user: &str) -> Vec<(ScramMechanism, u32)> {
        let users = self.lock();
        ScramMechanism::ALL
            .into_iter()
            .filter_map(|m| users.get(&(user.to_string(), m)).map(|c| (m, c.iterations)))
            .collect()
    }

    /// Every user with a credential, in name order.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock().keys().map(|(u, _)| u.clone()).collect();
        names.dedup();
        names
    }

    /// Sets a credential from a salted password.
    pub fn upsert(&self, user: &str, mechanism: ScramMechanism, iterations: u32, salt: &[u8], salted: &[u8]) {
        let c = Credential::from_salted(mechanism, salt, iterations, salted);
        self.lock().insert((user.to_string(), mechanism), c);
    }

    /// Removes a credential; `false` if there was none.
    pub fn delete(&self, user: &str, mechanism: ScramMechanism) -> bool {
        self.lock().remove(&(user.to_string(), mechanism)).is_some()
    }

    /// Whether the user has a credential for the mechanism.
    pub fn has(&self, user: &str, mechanism: ScramMechanism) -> bool {
        self.lock().contains_key(&(user.to_string(), mechanism))
    }
}

/// Why an exchange failed: what the client is told in SASL_AUTHENTICATION_FAILED's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Kafka's message for every SaslException: "Authentication failed during
    /// authentication due to invalid credentials with SASL mechanism NAME".
    Invalid,
    /// An authorization id other than the user name (Kafka's own message).
    AuthorizationId,
    /// A token after the exchange ended (failed or complete).
    State,
}

impl Failure {
    pub fn message(self, mechanism: ScramMechanism) -> String {
        match self {
            Failure::Invalid | Failure::State => std::format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                mechanism.name()
            ),
            Failure::AuthorizationId => {
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into()
            }
        }
    }
}

enum State {
    ClientFirst,
    ClientFinal {
        /// The GS2 header the client's channel binding must repeat (`n,,` or `n,a=NAME,`).
        gs2: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        credential: Credential,
    },
    Complete,
    Failed,
}

/// One connection's SCRAM exchange (server side): client-first in, server-first out;
/// client-final in, server-final out.
pub(crate) struct Exchange {
    pub mechanism: ScramMechanism,
    state: State,
    /// The user, once the exchange is complete.
    pub user: Option<String>,
}

impl core::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Exchange").field("mechanism", &self.mechanism).finish_non_exhaustive()
    }
}

impl Exchange {
    pub fn new(mechanism: ScramMechanism) -> Exchange {
        Exchange { mechanism, state: State::ClientFirst, user: None }
    }

    /// Whether the client has proved its password.
    pub fn complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// Takes the client's next message and gives the server's answer; a failure ends the
    /// exchange (any later message fails too).
    pub fn step(&mut self, token: &[u8], credentials: &Credentials) -> Result<Vec<u8>, Failure> {
        let state = core::mem::replace(&mut self.state, State::Failed);
        let result = match state {
            State::ClientFirst => self.client_first(token, credentials),
            State::ClientFinal { gs2, client_first_bare, server_first, nonce, credential } => self
                .client_final(token, &gs2, &client_first_bare, &server_first, &nonce, &credential)
                .map(|answer| (answer, State::Complete)),
            State::Complete | State::Failed => Err(Failure::State),
        };
        match result {
            Ok((answer, next)) => {
                self.state = next;
                Ok(answer)
            }
            Err(f) => Err(f),
        }
    }

    fn client_first(&mut self, token: &[u8], credentials: &Credentials) -> Result<(Vec<u8>, State), Failure> {
        let msg = core::str::from_utf8(token).map_err(|_| Failure::Invalid)?;
        let first = parse_client_first(msg).ok_or(Failure::Invalid)?;
        // Delegation tokens (`tokenauth=true`) are not served: no token owner, as Kafka
        // answers for an unknown token id. Other extensions are ignored, as Kafka does.
        if first.token_auth {
            return Err(Failure::Invalid);
        }
        let credential = credentials.get(&first.user, self.mechanism).ok_or(Failure::Invalid)?;
        if !first.authzid.is_empty() && first.authzid != first.user {
            return Err(Failure::AuthorizationId);
        }
        if credential.iterations < ScramMechanism::MIN_ITERATIONS {
            return Err(Failure::Invalid);
        }
        let mut server_nonce = [0u8; 24];
        random(&mut server_nonce);
        let nonce = std::format!("{}{}", first.nonce, B64.encode(server_nonce));
        let server_first =
            std::format!("r={nonce},s={},i={}", B64.encode(&credential.salt), credential.iterations);
        let answer = server_first.clone().into_bytes();
        self.user = Some(first.user);
        let state = State::ClientFinal {
            gs2: first.gs2.to_string(),
            client_first_bare: first.bare.to_string(),
            server_first,
            nonce,
            credential,
        };
        Ok((answer, state))
    }

    fn client_final(
        &mut self,
        token: &[u8],
        gs2: &str,
        client_first_bare: &str,
        server_first: &str,
        nonce: &str,
        credential: &Credential,
    ) -> Result<Vec<u8>, Failure> {
        let fail = |s: &mut Self| {
            s.user = None;
            Failure::Invalid
        };
        let Some(msg) = core::str::from_utf8(token).ok() else { return Err(fail(self)) };
        let Some(last) = parse_client_final(msg) else { return Err(fail(self)) };
        if last.nonce != nonce {
            return Err(fail(self));
        }
        // The channel binding repeats the GS2 header (no channel binding is offered).
        if B64.decode(last.channel_binding).ok().as_deref() != Some(gs2.as_bytes()) {
            return Err(fail(self));
        }
        let m = self.mechanism;
        let Some(proof) = B64.decode(last.proof).ok().filter(|p| p.len() == m.len()) else {
            return Err(fail(self));
        };
        let auth_message = std::format!("{client_first_bare},{server_first},{}", last.without_proof);
        let stored = hmac::Key::new(m.hmac(), &credential.stored_key);
        let client_signature = hmac::sign(&stored, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(client_signature.as_ref()).map(|(p, s)| p ^ s).collect();
        let computed = digest::digest(m.digest(), &client_key);
        // Constant time: every byte is looked at whatever the others are.
        let diff = computed.as_ref().iter().zip(&credential.stored_key).fold(0u8, |d, (a, b)| d | (a ^ b));
        if diff != 0 || computed.as_ref().len() != credential.stored_key.len() {
            return Err(fail(self));
        }
        let server = hmac::Key::new(m.hmac(), &credential.server_key);
        let signature = hmac::sign(&server, auth_message.as_bytes());
        Ok(std::format!("v={}", B64.encode(signature.as_ref())).into_bytes())
    }
}

struct ClientFirst<'a> {
    gs2: &'a str,
    authzid: String,
    user: String,
    nonce: &'a str,
    bare: &'a str,
    token_auth: bool,
}

/// A SCRAM `saslname` as a user name (`=2C` is `,`, `=3D` is `=`); `None` if empty or
/// holding another `=`.
fn sasl_name(s: &str) -> Option<String> {
    if s.is_empty() || !s.bytes().all(|b| (0x01..=0x7f).contains(&b) && b != b',') {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

fn printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// `n,[a=AUTHZID],n=USER,r=NONCE[,KEY=VALUE]...`: only the `n` GS2 flag (no channel
/// binding), as Kafka's `ClientFirstMessage` reads it.
fn parse_client_first(msg: &str) -> Option<ClientFirst<'_>> {
    let rest = msg.strip_prefix("n,")?;
    let comma = rest.find(',')?;
    let authz = &rest[..comma];
    let authzid = if authz.is_empty() { String::new() } else { sasl_name(authz.strip_prefix("a=")?)? };
    let gs2 = &msg[..2 + comma + 1];
    let bare = &rest[comma + 1..];
    let mut parts = bare.split(',');
    let user = sasl_name(parts.next()?.strip_prefix("n=")?)?;
    let nonce = parts.next()?.strip_prefix("r=")?;
    if !printable(nonce) {
        return None;
    }
    let mut token_auth = false;
    for ext in parts {
        let (key, value) = ext.split_once('=')?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) || value.is_empty() {
            return None;
        }
        if key == "tokenauth" && value.eq_ignore_ascii_case("true") {
            token_auth = true;
        }
    }
    Some(ClientFirst { gs2, authzid, user, nonce, bare, token_auth })
}

struct ClientFinal<'a> {
    channel_binding: &'a str,
    nonce: &'a str,
    without_proof: &'a str,
    proof: &'a str,
}

/// `c=BINDING,r=NONCE[,KEY=VALUE]...,p=PROOF`.
fn parse_client_final(msg: &str) -> Option<ClientFinal<'_>> {
    let (without_proof, proof) = msg.rsplit_once(",p=")?;
    let mut parts = without_proof.split(',');
    let channel_binding = parts.next()?.strip_prefix("c=")?;
    let nonce = parts.next()?.strip_prefix("r=")?;
    if !printable(nonce) || proof.is_empty() || proof.contains(',') {
        return None;
    }
    for ext in parts {
        let (key, _) = ext.split_once('=')?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
    }
    Some(ClientFinal { channel_binding, nonce, without_proof, proof })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's SCRAM-SHA-256 example, server side: its salt and iterations give its
    /// server-final signature.
    #[test]
    fn rfc7677_example() {
        let m = ScramMechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let mut salted = [0u8; 32];
        pbkdf2::derive(m.pbkdf2(), core::num::NonZeroU32::new(4096).unwrap(), &salt, b"pencil", &mut salted);
        let credential = Credential::from_salted(m, &salt, 4096, &salted);
        let first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first =
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let mut x = Exchange::new(m);
        let answer = x
            .client_final(
                fin.as_bytes(),
                "n,,",
                &first[3..],
                server_first,
                "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
                &credential,
            )
            .unwrap();
        assert_eq!(answer, b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
        let wrong = fin.replace("p=dH", "p=eH");
        assert_eq!(
            x.client_final(
                wrong.as_bytes(),
                "n,,",
                &first[3..],
                server_first,
                "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
                &credential
            ),
            Err(Failure::Invalid)
        );
    }

    #[test]
    fn client_first_messages() {
        let f = parse_client_first("n,a=bob,n=bob,r=abc,tokenauth=true").unwrap();
        assert_eq!(
            (f.gs2, f.authzid.as_str(), f.user.as_str(), f.nonce, f.token_auth),
            ("n,a=bob,", "bob", "bob", "abc", true)
        );
        assert_eq!(parse_client_first("n,,n=a=2Cb=3D,r=x").unwrap().user, "a,b=");
        for bad in [
            "y,,n=a,r=x",
            "p=tls,,n=a,r=x",
            "n,,n=,r=x",
            "n,,n=a,r=",
            "n,,r=x,n=a",
            "n,,n=a=2,r=x",
            "n,,n=a,r=x,=1",
            "n,b,n=a,r=x",
        ] {
            assert!(parse_client_first(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_debug_forms_hide_secrets() {
        let u = ScramUser::new("alice", "hunter2", ScramMechanism::Sha512);
        assert!(!std::format!("{u:?}").contains("hunter2"));
        let c = Credentials::from_users(std::vec![u]);
        let shown = std::format!("{c:?}");
        let cred = c.get("alice", ScramMechanism::Sha512).unwrap();
        for secret in [&cred.salt, &cred.stored_key, &cred.server_key] {
            assert!(!shown.contains(&std::format!("{:?}", &secret[..4])), "{shown}");
        }
        assert_eq!(c.describe("alice"), std::vec![(ScramMechanism::Sha512, 4096)]);
    }
}
