//! The rules: which topics are encrypted ([`EncryptRule`], a topic pattern and a KEK), what
//! is encrypted (the value, and the headers if asked), and what a consumer-side proxy does
//! with a record it cannot decrypt ([`OnFailure`]).

#[allow(unused_imports)]
use std::{string::String, string::ToString};

/// The header a record passed on as stored gets ([`OnFailure::PassStored`]), with why it
/// was not decrypted: so that it is never taken for a decrypted record.
pub const UNDECRYPTED_KEY: &str = "kwire.undecrypted";

/// What a consumer-side proxy does with a record of a ruled topic that it cannot decrypt
/// (altered, moved from another topic or key, not encrypted, or its KEK refused).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnFailure {
    /// The partition is answered with CORRUPT_MESSAGE and no records (the consumer stops
    /// there until someone acts).
    #[default]
    Error,
    /// The record passes as stored (its ciphertext), with a header [`UNDECRYPTED_KEY`]
    /// saying why.
    PassStored,
}

/// Why a rule is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncryptRuleError {
    /// The topic pattern is empty or holds a character that is neither one of a Kafka
    /// topic name's nor `*`.
    Pattern(String),
    /// The KEK name is empty or longer than 255 bytes.
    Kek(String),
    /// An option that is not `headers`, `on-failure=error` or `on-failure=pass`.
    Option(String),
}

impl core::fmt::Display for EncryptRuleError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncryptRuleError::Pattern(p) => write!(
                f,
                "topic pattern {p:?} is not a topic name with '*' wildcards (letters, digits, '.', '_', '-', '*')"
            ),
            EncryptRuleError::Kek(k) => write!(f, "KEK name {k:?} must be 1 to 255 bytes"),
            EncryptRuleError::Option(o) => {
                write!(f, "unknown option {o:?} (headers, on-failure=error, on-failure=pass)")
            }
        }
    }
}

impl std::error::Error for EncryptRuleError {}

/// Which topics are encrypted, under which KEK, what is encrypted and what happens to a
/// record that cannot be decrypted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptRule {
    pattern: String,
    pub(super) kek: String,
    pub(super) headers: bool,
    pub(super) on_failure: OnFailure,
}

impl EncryptRule {
    /// Values of the topics `pattern` matches (a topic name, `*` matching any run of
    /// characters) encrypted under the KEK named `kek`.
    pub fn new(pattern: &str, kek: &str) -> Result<EncryptRule, EncryptRuleError> {
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*');
        if pattern.is_empty() || !pattern.chars().all(ok) {
            return Err(EncryptRuleError::Pattern(pattern.to_string()));
        }
        if kek.is_empty() || kek.len() > 255 {
            return Err(EncryptRuleError::Kek(kek.to_string()));
        }
        Ok(EncryptRule {
            pattern: pattern.to_string(),
            kek: kek.to_string(),
            headers: false,
            on_failure: OnFailure::Error,
        })
    }

    /// Encrypts the records' headers too.
    pub fn with_headers(mut self, headers: bool) -> Self {
        self.headers = headers;
        self
    }

    /// What happens to a record that cannot be decrypted.
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// The topic pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The KEK's name.
    pub fn kek(&self) -> &str {
        &self.kek
    }

    /// Whether headers are encrypted.
    pub fn headers(&self) -> bool {
        self.headers
    }

    /// What happens to a record that cannot be decrypted.
    pub fn failure(&self) -> OnFailure {
        self.on_failure
    }

    /// Whether the pattern matches `topic`.
    pub fn matches(&self, topic: &str) -> bool {
        glob(self.pattern.as_bytes(), topic.as_bytes())
    }
}

/// `*` matches any run of bytes; everything else itself.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                back = Some((p, n));
                p += 1;
            }
            Some(&c) if c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match back {
                Some((bp, bn)) => {
                    p = bp + 1;
                    n = bn + 1;
                    back = Some((bp, bn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

impl core::str::FromStr for EncryptRule {
    type Err = EncryptRuleError;

    /// `PATTERN=KEK[,headers][,on-failure=error|pass]`.
    fn from_str(s: &str) -> Result<EncryptRule, EncryptRuleError> {
        let Some((pattern, rest)) = s.split_once('=') else {
            return Err(EncryptRuleError::Kek(String::new()));
        };
        let mut parts = rest.split(',').map(str::trim);
        let mut rule = EncryptRule::new(pattern.trim(), parts.next().unwrap_or_default())?;
        for option in parts {
            match option {
                "headers" => rule.headers = true,
                "on-failure=error" => rule.on_failure = OnFailure::Error,
                "on-failure=pass" => rule.on_failure = OnFailure::PassStored,
                other => return Err(EncryptRuleError::Option(other.to_string())),
            }
        }
        Ok(rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_globs() {
        let rule = |p: &str| EncryptRule::new(p, "k").unwrap();
        assert!(rule("orders").matches("orders"));
        assert!(!rule("orders").matches("orders2"));
        assert!(rule("orders.*").matches("orders.eu"));
        assert!(!rule("orders.*").matches("order.eu"));
        assert!(rule("*").matches("anything"));
        assert!(rule("a*b*c").matches("aXXbYYc"));
        assert!(!rule("a*b*c").matches("aXXbYY"));
        assert!(EncryptRule::new("bad topic", "k").is_err());
        assert!(EncryptRule::new("t", "").is_err());
        let parsed: EncryptRule = "pay.*=kek-1,headers,on-failure=pass".parse().unwrap();
        assert_eq!(
            parsed,
            rule("pay.*").with_headers(true).on_failure(OnFailure::PassStored).tap_kek("kek-1")
        );
        assert!("pay=kek,colour".parse::<EncryptRule>().is_err());
        assert!("pay".parse::<EncryptRule>().is_err());
    }

    impl EncryptRule {
        fn tap_kek(mut self, kek: &str) -> Self {
            self.kek = kek.to_string();
            self
        }
    }
}
