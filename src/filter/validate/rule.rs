//! What [`ValidateRecords`](super::ValidateRecords) checks: a [`Rule`] per topic pattern,
//! its [`Checks`], and the checks run on one record.

use super::*;

/// What a [`Rule`] checks in each record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checks {
    /// A value must be one JSON text ([`check_json`]); a null value (a tombstone) passes.
    pub json: bool,
    /// The record must have a key (an empty key is a key; null is none).
    pub key: bool,
    /// The record's key, value, header keys and header values together may be at most
    /// this many bytes.
    pub max_bytes: Option<usize>,
    /// Header names the record must carry (each at least once).
    pub headers: Vec<String>,
}

impl Checks {
    /// No checks yet.
    pub fn new() -> Self {
        Checks::default()
    }

    /// Values must be JSON.
    pub fn json(mut self) -> Self {
        self.json = true;
        self
    }

    /// Records must have a key.
    pub fn key(mut self) -> Self {
        self.key = true;
        self
    }

    /// Records may be at most `bytes` (key, value and headers).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// Records must carry a header named `name`.
    pub fn header(mut self, name: impl Into<String>) -> Self {
        self.headers.push(name.into());
        self
    }

    pub(super) fn is_empty(&self) -> bool {
        !self.json && !self.key && self.max_bytes.is_none() && self.headers.is_empty()
    }

    /// Both rules' checks: every check of either, the smaller size limit.
    pub(super) fn merge(&mut self, other: &Checks) {
        self.json |= other.json;
        self.key |= other.key;
        self.max_bytes = match (self.max_bytes, other.max_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for h in &other.headers {
            if !self.headers.contains(h) {
                self.headers.push(h.clone());
            }
        }
    }

    /// Why a record fails, or `None`: the first failing check, in the order size, key,
    /// headers, JSON.
    pub(super) fn check(&self, record: &Record<'_>) -> Option<String> {
        if let Some(max) = self.max_bytes {
            let size = record_size(record);
            if size > max {
                return Some(alloc::format!(
                    "the record is {size} bytes (key, value and headers), more than the maximum of {max}"
                ));
            }
        }
        if self.key && record.key().is_none() {
            return Some("the record has no key".into());
        }
        for name in &self.headers {
            if !record.headers().any(|h| h.key == name.as_bytes()) {
                return Some(alloc::format!("the record lacks the required header {name:?}"));
            }
        }
        if self.json
            && let Some(value) = record.value()
            && let Err(e) = check_json(value)
        {
            return Some(alloc::format!("the value is not valid JSON: {e}"));
        }
        None
    }
}

/// A record's key, value, header keys and header values, in bytes.
fn record_size(record: &Record<'_>) -> usize {
    let len = |b: Option<&[u8]>| b.map_or(0, <[u8]>::len);
    len(record.key())
        + len(record.value())
        + record.headers().map(|h| h.key.len() + len(h.value)).sum::<usize>()
}

/// Why a rule was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleError {
    /// The rule has no `=` between its topic pattern and its checks.
    NoChecks(String),
    /// The topic pattern is empty, or holds a character that is neither one of a Kafka
    /// topic name (`A-Z a-z 0-9 . _ -`) nor `*`.
    Pattern(String),
    /// A check that is not `json`, `key`, `max-bytes=N` or `header=NAME`.
    UnknownCheck(String),
    /// `max-bytes=` without a whole number of bytes.
    MaxBytes(String),
    /// `header=` without a name.
    EmptyHeader,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::NoChecks(rule) => {
                write!(f, "{rule:?} has no checks: write PATTERN=CHECK[,CHECK...], e.g. 'orders.*=json,key'")
            }
            RuleError::Pattern(p) => write!(
                f,
                "topic pattern {p:?} is not a topic name with '*' wildcards (letters, digits, '.', '_', '-', '*')"
            ),
            RuleError::UnknownCheck(c) => {
                write!(f, "unknown check {c:?}: the checks are json, key, max-bytes=N and header=NAME")
            }
            RuleError::MaxBytes(v) => write!(f, "max-bytes={v}: not a whole number of bytes"),
            RuleError::EmptyHeader => f.write_str("header= needs a header name"),
        }
    }
}

impl core::error::Error for RuleError {}

/// Checks for the records of the topics a pattern matches: an exact topic name, or a name
/// with `*` wildcards (any run of characters, none included), e.g. `orders.*`.
///
/// ```
/// use kwire::filter::{Checks, Rule};
///
/// let rule: Rule = "orders.*=json,key,max-bytes=1048576,header=trace-id".parse()?;
/// assert!(rule.matches("orders.eu") && !rule.matches("payments"));
/// assert_eq!(rule.checks(), &Checks::new().json().key().max_bytes(1048576).header("trace-id"));
/// assert!("orders.*=jsn".parse::<Rule>().is_err());
/// # Ok::<(), kwire::filter::RuleError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pattern: String,
    pub(super) checks: Checks,
}

impl Rule {
    /// A rule of `checks` for the topics `pattern` matches.
    pub fn new(pattern: &str, checks: Checks) -> Result<Rule, RuleError> {
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*');
        if pattern.is_empty() || !pattern.chars().all(ok) {
            return Err(RuleError::Pattern(pattern.to_string()));
        }
        if checks.headers.iter().any(String::is_empty) {
            return Err(RuleError::EmptyHeader);
        }
        if checks.is_empty() {
            return Err(RuleError::NoChecks(pattern.to_string()));
        }
        Ok(Rule { pattern: pattern.to_string(), checks })
    }

    /// The topic pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The checks.
    pub fn checks(&self) -> &Checks {
        &self.checks
    }

    /// Whether the pattern matches every topic (`*`, `**`, ...).
    pub(super) fn matches_all(&self) -> bool {
        self.pattern.bytes().all(|b| b == b'*')
    }

    /// Whether the pattern matches `topic`.
    pub fn matches(&self, topic: &str) -> bool {
        glob(self.pattern.as_bytes(), topic.as_bytes())
    }
}

impl core::str::FromStr for Rule {
    type Err = RuleError;

    /// `PATTERN=CHECK[,CHECK...]`, the checks being `json`, `key`, `max-bytes=N` and
    /// `header=NAME` (repeatable).
    fn from_str(s: &str) -> Result<Rule, RuleError> {
        let Some((pattern, list)) = s.split_once('=') else { return Err(RuleError::NoChecks(s.to_string())) };
        let mut checks = Checks::new();
        for item in list.split(',').map(str::trim) {
            match item.split_once('=') {
                None if item == "json" => checks.json = true,
                None if item == "key" => checks.key = true,
                Some(("max-bytes", n)) => match n.trim().parse::<usize>() {
                    Ok(n) => checks.max_bytes = Some(checks.max_bytes.map_or(n, |m| m.min(n))),
                    Err(_) => return Err(RuleError::MaxBytes(n.to_string())),
                },
                Some(("header", name)) if name.trim().is_empty() => return Err(RuleError::EmptyHeader),
                Some(("header", name)) => checks.headers.push(name.trim().to_string()),
                _ if item.is_empty() && list.trim().is_empty() => {
                    return Err(RuleError::NoChecks(s.to_string()));
                }
                _ => return Err(RuleError::UnknownCheck(item.to_string())),
            }
        }
        Rule::new(pattern.trim(), checks)
    }
}

/// Whether `pattern` (with `*` for any run of bytes) matches all of `name`.
pub(super) fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and the name position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    p = sp + 1;
                    n = sn + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}
