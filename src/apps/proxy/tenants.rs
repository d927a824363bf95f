//! [`Tenants`]: which tenant each connection is, for [`crate::filter::Tenant`].

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::BTreeMap;

use super::ConnInfo;
use crate::filter::Tenant;

/// Tenants of a virtual cluster by the connection's SNI name or authenticated SASL
/// principal, each with the prefix its names carry on the broker. [`Tenants::filter`] makes
/// a connection's [`Tenant`] filter: by SNI name at once, else by principal once the broker
/// has accepted the authentication (when principals are configured), else the default
/// tenant if there is one; a connection that is none of these gets no topics or groups (a
/// request naming one closes it).
///
/// The connections' filters share the proxy's book of topic ids and the names the broker
/// gave them ([`ConnInfo::topic_names`]), so that a tenant may name its own topics by id and
/// no other's; the proxy asks the broker (Metadata by id) about ids the book does not know
/// before a request naming them goes on ([`super::ProxyBuilder::filters`]).
///
/// ```
/// use kwire::proxy::Tenants;
///
/// let mut tenants = Tenants::new();
/// tenants.principal("alice", "tenant-a.").unwrap();
/// tenants.sni("b.kafka.example.com", "tenant-b.").unwrap();
/// assert!(tenants.principal("bob", "bad prefix").is_err());
/// // A prefix may serve several principals, but may not overlap another tenant's.
/// tenants.principal("alice-batch", "tenant-a.").unwrap();
/// assert!(tenants.principal("carol", "tenant-a.eu.").is_err());
/// assert!(tenants.principal("dave", "tenant-b_").is_err()); // Kafka: `.` and `_` collide
/// ```
#[derive(Clone, Debug, Default)]
pub struct Tenants {
    by_principal: BTreeMap<String, String>,
    by_sni: BTreeMap<String, String>,
    default: Option<String>,
}

/// Why a tenant's prefix was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TenantError {
    /// The prefix is empty.
    Empty,
    /// The prefix holds a character Kafka does not allow in a topic name (it allows ASCII
    /// letters, digits, `.`, `_` and `-`).
    Character(char),
    /// The prefix leaves no room for a name within Kafka's 249 bytes.
    TooLong(usize),
    /// The prefix and another tenant's (given) overlap: one starts with the other, or they
    /// differ only in `.` against `_`, which Kafka takes for the same in topic names. One
    /// tenant could then name the other's topics (`a.` + `b.x` is `a.b.` + `x`), or be
    /// refused names the other holds.
    Overlaps(String),
    /// A rule is not `principal:USER=PREFIX`, `sni:NAME=PREFIX` or `default=PREFIX`.
    Rule,
}

impl core::fmt::Display for TenantError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TenantError::Empty => f.write_str("a tenant's prefix is empty"),
            TenantError::Character(c) => {
                write!(f, "a tenant's prefix holds {c:?}, which Kafka does not allow in a topic name")
            }
            TenantError::TooLong(n) => {
                write!(f, "a tenant's prefix of {n} bytes leaves no room within Kafka's 249-byte names")
            }
            TenantError::Overlaps(other) => write!(
                f,
                "a tenant's prefix overlaps another tenant's ({other:?}): one starts with the other once '.' and \
                 '_' are taken as the same, so each could reach the other's names"
            ),
            TenantError::Rule => {
                f.write_str("expected principal:USER=PREFIX, sni:NAME=PREFIX or default=PREFIX")
            }
        }
    }
}

impl std::error::Error for TenantError {}

/// A rule of a tenants file that [`Tenants::from_lines`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantLineError {
    /// The line's number, from 1.
    pub line: usize,
    /// The rule, as written (trimmed).
    pub rule: String,
    /// What is wrong with it.
    pub error: TenantError,
}

impl core::fmt::Display for TenantLineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.rule, self.error)
    }
}

impl std::error::Error for TenantLineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

fn check(prefix: &str) -> Result<String, TenantError> {
    if prefix.is_empty() {
        return Err(TenantError::Empty);
    }
    if let Some(c) = prefix.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(TenantError::Character(c));
    }
    if prefix.len() >= 249 {
        return Err(TenantError::TooLong(prefix.len()));
    }
    Ok(prefix.to_owned())
}

/// Whether two different prefixes overlap: one starts with the other once `.` and `_` are
/// taken as the same (Kafka's topic-name collisions).
fn overlap(a: &str, b: &str) -> bool {
    let fold = |c: u8| if c == b'.' { b'_' } else { c };
    a != b && a.bytes().zip(b.bytes()).all(|(x, y)| fold(x) == fold(y))
}

impl Tenants {
    /// The prefix checked ([`check`]) and against every other tenant's.
    fn checked(&self, prefix: &str) -> Result<String, TenantError> {
        let prefix = check(prefix)?;
        let mut others = self.by_principal.values().chain(self.by_sni.values()).chain(&self.default);
        match others.find(|other| overlap(other, &prefix)) {
            Some(other) => Err(TenantError::Overlaps(other.clone())),
            None => Ok(prefix),
        }
    }

    /// No tenants.
    pub fn new() -> Self {
        Tenants::default()
    }

    /// Connections authenticated as `principal` are the tenant whose names carry `prefix`.
    pub fn principal(&mut self, principal: &str, prefix: &str) -> Result<&mut Self, TenantError> {
        let prefix = self.checked(prefix)?;
        self.by_principal.insert(principal.to_owned(), prefix);
        Ok(self)
    }

    /// Connections that asked for the TLS server name `name` (SNI) are the tenant whose names
    /// carry `prefix`.
    pub fn sni(&mut self, name: &str, prefix: &str) -> Result<&mut Self, TenantError> {
        let prefix = self.checked(prefix)?;
        self.by_sni.insert(name.to_ascii_lowercase(), prefix);
        Ok(self)
    }

    /// Connections that no SNI name or principal names are the tenant whose names carry
    /// `prefix` (once authenticated, when principals are configured; at once otherwise).
    pub fn default_tenant(&mut self, prefix: &str) -> Result<&mut Self, TenantError> {
        let prefix = self.checked(prefix)?;
        self.default = Some(prefix);
        Ok(self)
    }

    /// Adds a rule as `kwire proxy --tenant` takes it: `principal:USER=PREFIX`,
    /// `sni:NAME=PREFIX`, or `default=PREFIX`.
    ///
    /// ```
    /// let mut tenants = kwire::proxy::Tenants::new();
    /// tenants.rule("principal:alice=tenant-a.")?.rule("default=tenant-d.")?;
    /// assert!(tenants.rule("alice=tenant-a.").is_err());
    /// # Ok::<(), kwire::proxy::TenantError>(())
    /// ```
    pub fn rule(&mut self, rule: &str) -> Result<&mut Self, TenantError> {
        let (who, prefix) = rule.split_once('=').ok_or(TenantError::Rule)?;
        match who.split_once(':') {
            Some(("principal", user)) if !user.is_empty() => self.principal(user, prefix),
            Some(("sni", name)) if !name.is_empty() => self.sni(name, prefix),
            None if who == "default" => self.default_tenant(prefix),
            _ => Err(TenantError::Rule),
        }
    }

    /// Tenants from a file's text: one [`Tenants::rule`] a line; blank lines and lines
    /// that start with `#` are skipped. The first wrong rule is the error, with its line.
    ///
    /// ```
    /// let text = "# tenants\nprincipal:alice=tenant-a.\n\nsni:b.example.com=tenant-b.\n";
    /// let tenants = kwire::proxy::Tenants::from_lines(text)?;
    /// assert!(!tenants.is_empty());
    /// let wrong = kwire::proxy::Tenants::from_lines("default=a.\ndefault=a b").unwrap_err();
    /// assert_eq!(wrong.line, 2);
    /// # Ok::<(), kwire::proxy::TenantLineError>(())
    /// ```
    pub fn from_lines(text: &str) -> Result<Tenants, TenantLineError> {
        let mut tenants = Tenants::new();
        for (i, line) in text.lines().enumerate() {
            let rule = line.trim();
            if rule.is_empty() || rule.starts_with('#') {
                continue;
            }
            if let Err(error) = tenants.rule(rule) {
                return Err(TenantLineError { line: i + 1, rule: rule.to_owned(), error });
            }
        }
        Ok(tenants)
    }

    /// Whether no tenant is configured.
    pub fn is_empty(&self) -> bool {
        self.by_principal.is_empty() && self.by_sni.is_empty() && self.default.is_none()
    }

    /// The [`Tenant`] filter of a connection. Its users, for client quotas
    /// ([`Tenant::with_users`]), are the principals that `principal:` rules give its prefix.
    /// Its renamed requests leave the bytes after their last renamed string uncopied
    /// ([`Tenant::borrowing_tails`]), which the proxy writes from where it read them.
    pub fn filter(self: &Arc<Self>, conn: &Arc<ConnInfo>) -> Tenant {
        self.tenant(conn).borrowing_tails()
    }

    /// [`Tenants::filter`] before its tails are borrowed.
    fn tenant(self: &Arc<Self>, conn: &Arc<ConnInfo>) -> Tenant {
        let sni = conn.server_name.as_deref().map(str::to_ascii_lowercase);
        let ids = conn.topic_names().clone();
        if let Some(prefix) = sni.and_then(|name| self.by_sni.get(&name)) {
            return Tenant::new(prefix.clone())
                .sharing(ids)
                .looking_up(conn.acl_lookups.clone())
                .with_users(self.users_of(prefix.clone()));
        }
        if self.by_principal.is_empty() {
            return match &self.default {
                Some(prefix) => Tenant::new(prefix.clone()).sharing(ids).looking_up(conn.acl_lookups.clone()),
                None => Tenant::when_known(|| None),
            };
        }
        let lookups = conn.acl_lookups.clone();
        let (tenants, conn) = (Arc::clone(self), Arc::clone(conn));
        let prefix = move || {
            let principal = conn.principal()?;
            tenants.by_principal.get(&principal).or(tenants.default.as_ref()).cloned()
        };
        let (tenants, mine) = (Arc::clone(self), prefix.clone());
        Tenant::when_known(prefix)
            .sharing(ids)
            .looking_up(lookups)
            .with_users(move |user| mine().is_some_and(|p| tenants.by_principal.get(user) == Some(&p)))
    }

    /// Whether a principal is one that a `principal:` rule gives `prefix`.
    fn users_of(self: &Arc<Self>, prefix: String) -> impl Fn(&str) -> bool + Send + 'static {
        let tenants = Arc::clone(self);
        move |user| tenants.by_principal.get(user) == Some(&prefix)
    }
}
