//! ACL bindings, kept as Apache Kafka's `StandardAuthorizer` keeps them and matched by
//! filters as its `AclBindingFilter` matches them (CreateAcls, DescribeAcls, DeleteAcls).
//! [`super::Config::acls`] (`kwire serve --acls`) loads bindings at start. With
//! [`super::Config::authorizer`] set they are enforced, as `StandardAuthorizer` decides
//! ([`Acls::authorize`]); without it every request is allowed, as in a Kafka broker with no
//! `authorizer.class.name`.
//!
//! The codes are Kafka's: resource types 2 topic, 3 group, 4 cluster, 5 transactional id,
//! 6 delegation token, 7 user (0 unknown, 1 any); pattern types 3 literal, 4 prefixed (0
//! unknown, 1 any, 2 match); operations 2 all to 15 two-phase commit (0 unknown, 1 any);
//! permissions 2 deny, 3 allow (0 unknown, 1 any).

use std::string::String;
use std::sync::Mutex;
use std::vec::Vec;

use super::lock::lock;

/// The most bindings kept; CreateAcls past it is refused.
pub(crate) const MAX_ACLS: usize = 100_000;

const ANY: i8 = 1;
const MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
/// The one name of the cluster resource.
pub(crate) const CLUSTER_NAME: &str = "kafka-cluster";

/// A field of an [`Acl`] that holds a code, with Kafka's names for its codes (as
/// `kafka-acls.sh` writes them, lower case with `_`): what a file of ACL bindings, such as
/// `kwire serve --acls`'s, names them with.
///
/// ```
/// use kwire::broker::AclField;
///
/// assert_eq!(AclField::Operation.code("Describe-Configs"), Some(10));
/// assert_eq!(AclField::ResourceType.code("kafka-cluster"), None);
/// assert_eq!(AclField::Permission.names().collect::<Vec<_>>(), ["deny", "allow"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AclField {
    /// [`Acl::resource_type`].
    ResourceType,
    /// [`Acl::pattern_type`].
    PatternType,
    /// [`Acl::operation`].
    Operation,
    /// [`Acl::permission_type`].
    Permission,
}

impl AclField {
    fn table(self) -> &'static [(&'static str, i8)] {
        match self {
            AclField::ResourceType => &[
                ("topic", 2),
                ("group", 3),
                ("cluster", 4),
                ("transactional_id", 5),
                ("delegation_token", 6),
                ("user", 7),
            ],
            AclField::PatternType => &[("literal", LITERAL), ("prefixed", PREFIXED)],
            AclField::Operation => &[
                ("all", 2),
                ("read", 3),
                ("write", 4),
                ("create", 5),
                ("delete", 6),
                ("alter", 7),
                ("describe", 8),
                ("cluster_action", 9),
                ("describe_configs", 10),
                ("alter_configs", 11),
                ("idempotent_write", 12),
                ("create_tokens", 13),
                ("describe_tokens", 14),
                ("two_phase_commit", 15),
            ],
            AclField::Permission => &[("deny", 2), ("allow", 3)],
        }
    }

    /// The code `name` stands for, matched without case and with `-` read as `_`. Only the
    /// codes a binding can hold are named (not "any", "match" or "unknown").
    pub fn code(self, name: &str) -> Option<i8> {
        let name = name.trim();
        let same = |n: &str| {
            n.len() == name.len()
                && n.bytes()
                    .zip(name.bytes())
                    .all(|(a, b)| a == if b == b'-' { b'_' } else { b.to_ascii_lowercase() })
        };
        self.table().iter().find(|(n, _)| same(n)).map(|&(_, c)| c)
    }

    /// Every name, in the order of their codes.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.table().iter().map(|&(n, _)| n)
    }
}

/// One ACL binding, as CreateAcls creates one: a resource pattern and an access control
/// entry, in Kafka's codes. [`super::Config::acls`] loads them at start.
///
/// ```
/// use kwire::broker::Acl;
///
/// // User:alice may read the topics whose names start with "orders", from any host.
/// let acl = Acl {
///     resource_type: 2,
///     resource_name: "orders".into(),
///     pattern_type: 4,
///     principal: "User:alice".into(),
///     host: "*".into(),
///     operation: 3,
///     permission_type: 3,
/// };
/// # let _ = acl;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    /// 2 topic, 3 group, 4 cluster (named `kafka-cluster`), 5 transactional id, 6
    /// delegation token, 7 user.
    pub resource_type: i8,
    /// The resource's name, a prefix of names (PREFIXED), or `*` (every resource of the
    /// type, LITERAL).
    pub resource_name: String,
    /// 3 LITERAL, 4 PREFIXED.
    pub pattern_type: i8,
    /// `type:name`, such as `User:alice`, or `User:*` for every user.
    pub principal: String,
    /// The client's host, or `*` for any.
    pub host: String,
    /// 2 ALL, 3 READ, 4 WRITE, 5 CREATE, 6 DELETE, 7 ALTER, 8 DESCRIBE, 9 CLUSTER_ACTION,
    /// 10 DESCRIBE_CONFIGS, 11 ALTER_CONFIGS, 12 IDEMPOTENT_WRITE, 13 CREATE_TOKENS, 14
    /// DESCRIBE_TOKENS, 15 TWO_PHASE_COMMIT.
    pub operation: i8,
    /// 2 DENY, 3 ALLOW.
    pub permission_type: i8,
}

/// The name the handlers use.
pub(crate) type Binding = Acl;

/// The settings of Kafka's `StandardAuthorizer` ([`super::Config::authorizer`]): with them,
/// every request is checked against the ACL bindings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Authorizer {
    /// Principals allowed everything (`super.users`), such as `User:admin`.
    pub super_users: Vec<String>,
    /// Whether a resource that no binding names is open to everyone
    /// (`allow.everyone.if.no.acl.found`; Kafka's default, and this one, is `false`).
    pub allow_everyone_if_no_acl_found: bool,
}

/// Operations (Kafka's `AclOperation` codes).
pub(crate) mod op {
    pub const ALL: i8 = 2;
    pub const READ: i8 = 3;
    pub const WRITE: i8 = 4;
    pub const CREATE: i8 = 5;
    pub const DELETE: i8 = 6;
    pub const ALTER: i8 = 7;
    pub const DESCRIBE: i8 = 8;
    pub const CLUSTER_ACTION: i8 = 9;
    pub const DESCRIBE_CONFIGS: i8 = 10;
    pub const ALTER_CONFIGS: i8 = 11;
    pub const IDEMPOTENT_WRITE: i8 = 12;
}

/// The operations Kafka's authorized-operations fields report for a resource type
/// (`AclEntry.supportedOperations`): topics READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
/// DESCRIBE_CONFIGS and ALTER_CONFIGS; groups READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS
/// and ALTER_CONFIGS; the cluster CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS and IDEMPOTENT_WRITE; transactional ids WRITE and
/// DESCRIBE.
pub(crate) fn supported_operations(resource_type: i8) -> &'static [i8] {
    use op::*;
    match resource_type {
        resource::TOPIC => &[READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS],
        resource::GROUP => &[READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS],
        resource::CLUSTER => {
            &[CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE]
        }
        resource::TRANSACTIONAL_ID => &[WRITE, DESCRIBE],
        _ => &[],
    }
}

/// Resource types (Kafka's `ResourceType` codes).
pub(crate) mod resource {
    pub const TOPIC: i8 = 2;
    pub const GROUP: i8 = 3;
    pub const CLUSTER: i8 = 4;
    pub const TRANSACTIONAL_ID: i8 = 5;
}

const DENY: i8 = 2;
const ALLOW: i8 = 3;

/// A filter of DescribeAcls or DeleteAcls (`None` names match anything).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Filter<'a> {
    pub resource_type: i8,
    pub resource_name: Option<&'a str>,
    pub pattern_type: i8,
    pub principal: Option<&'a str>,
    pub host: Option<&'a str>,
    pub operation: i8,
    pub permission_type: i8,
}

impl Acl {
    /// Kafka's checks of a new binding (`AclControlManager.validateNewAcl` and the
    /// broker's): the message of its INVALID_REQUEST, if it is not valid.
    pub(crate) fn invalid(&self) -> Option<String> {
        if !(2..=7).contains(&self.resource_type) {
            return Some(std::format!("Invalid resourceType {}", self.resource_type));
        }
        if self.pattern_type != LITERAL && self.pattern_type != PREFIXED {
            return Some(std::format!("Invalid patternType {}", self.pattern_type));
        }
        if !(2..=15).contains(&self.operation) {
            return Some(std::format!("Invalid operation {}", self.operation));
        }
        if !(2..=3).contains(&self.permission_type) {
            return Some(std::format!("Invalid permissionType {}", self.permission_type));
        }
        if self.resource_name.is_empty() {
            return Some("Resource name should not be empty".into());
        }
        if self.resource_type == 4 && self.resource_name != CLUSTER_NAME {
            return Some(std::format!("The only valid name for the CLUSTER resource is {CLUSTER_NAME}"));
        }
        if !self.principal.contains(':') {
            return Some(std::format!(
                "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
                self.principal
            ));
        }
        None
    }
}

impl Filter<'_> {
    /// Kafka's checks of a filter: the message of its INVALID_REQUEST, if it is not valid
    /// (an unknown type, pattern, operation or permission matches nothing and is refused).
    pub fn invalid(&self) -> Option<String> {
        if !(1..=7).contains(&self.resource_type) {
            return Some(std::format!("Invalid resourceType filter {}", self.resource_type));
        }
        if !(1..=4).contains(&self.pattern_type) {
            return Some(std::format!("Invalid patternType filter {}", self.pattern_type));
        }
        if !(1..=15).contains(&self.operation) {
            return Some(std::format!("Invalid operation filter {}", self.operation));
        }
        if !(1..=3).contains(&self.permission_type) {
            return Some(std::format!("Invalid permissionType filter {}", self.permission_type));
        }
        None
    }

    /// Kafka's `AclBindingFilter.matches`.
    pub fn matches(&self, b: &Binding) -> bool {
        let resource = (self.resource_type == ANY || self.resource_type == b.resource_type)
            && match self.pattern_type {
                ANY => self.resource_name.is_none_or(|n| n == b.resource_name),
                // MATCH: the bindings that apply to a resource of this name: literal of the
                // name or the wildcard `*`, or prefixed by a prefix of it.
                MATCH => self.resource_name.is_none_or(|n| match b.pattern_type {
                    LITERAL => b.resource_name == n || b.resource_name == "*",
                    PREFIXED => n.starts_with(b.resource_name.as_str()),
                    _ => false,
                }),
                p => p == b.pattern_type && self.resource_name.is_none_or(|n| n == b.resource_name),
            };
        resource
            && self.principal.is_none_or(|p| p == b.principal)
            && self.host.is_none_or(|h| h == b.host)
            && (self.operation == ANY || self.operation == b.operation)
            && (self.permission_type == ANY || self.permission_type == b.permission_type)
    }
}

/// Every binding, in the order created.
#[derive(Debug, Default)]
pub(crate) struct Acls {
    bindings: Mutex<Vec<Binding>>,
}

impl Acls {
    /// Adds a binding (a binding already there is not added twice); `false` when the store
    /// is full.
    pub fn create(&self, b: Binding) -> bool {
        let mut all = lock(&self.bindings);
        if all.contains(&b) {
            return true;
        }
        if all.len() >= MAX_ACLS {
            return false;
        }
        all.push(b);
        true
    }

    /// The bindings a filter matches.
    pub fn describe(&self, f: &Filter<'_>) -> Vec<Binding> {
        lock(&self.bindings).iter().filter(|b| f.matches(b)).cloned().collect()
    }

    /// Whether `principal` (`User:alice`) from `host` may do `operation` on the resource of
    /// `resource_type` named `name`, as Kafka's `StandardAuthorizer` decides: super users
    /// may do everything; else a DENY binding that matches wins over any ALLOW; a binding
    /// matches the resource when it is LITERAL of its name or of `*`, or PREFIXED by a
    /// prefix of its name, the principal when it is the same or `User:*`, the host when it
    /// is the same or `*`, and the operation when it is the same or ALL, or, for an ALLOW
    /// binding, when it implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE;
    /// ALTER_CONFIGS implies DESCRIBE_CONFIGS). With no binding at all on the resource,
    /// [`Authorizer::allow_everyone_if_no_acl_found`] decides; with bindings but none that
    /// allows, the answer is no.
    pub fn authorize(
        &self,
        az: &Authorizer,
        principal: &str,
        host: &str,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> bool {
        if az.super_users.iter().any(|u| u == principal) {
            return true;
        }
        let all = lock(&self.bindings);
        let (mut any, mut allowed) = (false, false);
        for b in all.iter().filter(|b| b.resource_type == resource_type) {
            let on_resource = match b.pattern_type {
                LITERAL => b.resource_name == name || b.resource_name == "*",
                PREFIXED => name.starts_with(b.resource_name.as_str()),
                _ => false,
            };
            if !on_resource {
                continue;
            }
            any = true;
            if (b.principal != principal && b.principal != "User:*") || (b.host != "*" && b.host != host) {
                continue;
            }
            let op_matches = b.operation == op::ALL
                || b.operation == operation
                || (b.permission_type == ALLOW
                    && match operation {
                        op::DESCRIBE => matches!(b.operation, op::READ | op::WRITE | op::DELETE | op::ALTER),
                        op::DESCRIBE_CONFIGS => b.operation == op::ALTER_CONFIGS,
                        _ => false,
                    });
            if !op_matches {
                continue;
            }
            match b.permission_type {
                DENY => return false,
                ALLOW => allowed = true,
                _ => {}
            }
        }
        if any { allowed } else { az.allow_everyone_if_no_acl_found }
    }

    /// Whether `principal` from `host` may do `operation` on some resource of a type, as
    /// Kafka's `Authorizer.authorizeByResourceType` decides (InitProducerId without a
    /// transactional id asks it of WRITE on topics): yes when [`Acls::authorize`] allows
    /// the operation on a resource no binding names by its own name (super users, a
    /// wildcard, allow-everyone); else no when a LITERAL `*` binding denies it; else yes when
    /// an ALLOW binding (of the operation or ALL, for the principal or `User:*`, the host or
    /// `*`) names a pattern that no DENY covers: a LITERAL name not denied as a LITERAL of
    /// the same name, and no DENY PREFIXED by a prefix of the name.
    pub fn authorize_by_resource_type(
        &self,
        az: &Authorizer,
        principal: &str,
        host: &str,
        operation: i8,
        resource_type: i8,
    ) -> bool {
        // Kafka asks of a fixed name, "hardcode".
        if self.authorize(az, principal, host, operation, resource_type, "hardcode") {
            return true;
        }
        let all = lock(&self.bindings);
        let applies = |b: &&Binding| {
            b.resource_type == resource_type
                && (b.host == host || b.host == "*")
                && (b.principal == principal || b.principal == "User:*")
                && (b.operation == operation || b.operation == op::ALL)
        };
        let mut deny_literal: Vec<&str> = Vec::new();
        let mut deny_prefixed: Vec<&str> = Vec::new();
        let mut allows: Vec<(i8, &str)> = Vec::new();
        for b in all.iter().filter(applies) {
            match (b.permission_type, b.pattern_type) {
                (DENY, LITERAL) if b.resource_name == "*" => return false,
                (DENY, LITERAL) => deny_literal.push(&b.resource_name),
                (DENY, PREFIXED) => deny_prefixed.push(&b.resource_name),
                (ALLOW, LITERAL) if b.resource_name == "*" => return true,
                (ALLOW, p @ (LITERAL | PREFIXED)) => allows.push((p, &b.resource_name)),
                _ => {}
            }
        }
        allows.iter().any(|&(pattern, name)| {
            let denied_literal = pattern == LITERAL && deny_literal.contains(&name);
            let denied_prefix = deny_prefixed.iter().any(|d| name.starts_with(d));
            !denied_literal && !denied_prefix
        })
    }

    /// Removes and returns the bindings a filter matches.
    pub fn delete(&self, f: &Filter<'_>) -> Vec<Binding> {
        let mut all = lock(&self.bindings);
        let (gone, kept): (Vec<Binding>, Vec<Binding>) = all.drain(..).partition(|b| f.matches(b));
        *all = kept;
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        rt: i8,
        name: &str,
        pattern: i8,
        principal: &str,
        host: &str,
        operation: i8,
        permission: i8,
    ) -> Acl {
        Acl {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type: permission,
        }
    }

    #[test]
    fn decisions_follow_the_standard_authorizer() {
        use op::*;
        use resource::*;
        let acls = Acls::default();
        let az = Authorizer { super_users: std::vec!["User:admin".into()], ..Authorizer::default() };
        let can = |p: &str, host: &str, o: i8, rt: i8, n: &str| acls.authorize(&az, p, host, o, rt, n);
        // No bindings: nobody but super users.
        assert!(!can("User:alice", "10.0.0.1", READ, TOPIC, "orders"));
        assert!(can("User:admin", "10.0.0.1", ALTER, CLUSTER, CLUSTER_NAME));
        let open = Authorizer { allow_everyone_if_no_acl_found: true, ..Authorizer::default() };
        assert!(acls.authorize(&open, "User:alice", "h", READ, TOPIC, "orders"));
        acls.create(acl(TOPIC, "orders", PREFIXED, "User:alice", "*", READ, ALLOW));
        acls.create(acl(TOPIC, "orders.secret", LITERAL, "User:*", "*", ALL, DENY));
        acls.create(acl(TOPIC, "*", LITERAL, "User:bob", "10.0.0.2", WRITE, ALLOW));
        acls.create(acl(GROUP, "g", LITERAL, "User:alice", "*", ALL, ALLOW));
        // Prefixed allow, implied DESCRIBE, not WRITE.
        assert!(can("User:alice", "h", READ, TOPIC, "orders.eu"));
        assert!(can("User:alice", "h", DESCRIBE, TOPIC, "orders"));
        assert!(!can("User:alice", "h", WRITE, TOPIC, "orders"));
        // DENY over ALLOW, for the wildcard principal.
        assert!(!can("User:alice", "h", READ, TOPIC, "orders.secret"));
        // A literal of another name does not match; the `*` literal does, by host.
        assert!(can("User:bob", "10.0.0.2", WRITE, TOPIC, "anything"));
        assert!(!can("User:bob", "10.0.0.3", WRITE, TOPIC, "anything"));
        // Bindings exist on every topic (`*`): a resource with bindings but none allowing is
        // refused, even with allow-everyone-if-no-acl-found.
        assert!(!acls.authorize(&open, "User:carol", "h", READ, TOPIC, "other"));
        // A DENY of READ does not deny DESCRIBE; ALL allows everything.
        acls.create(acl(TOPIC, "t", LITERAL, "User:dave", "*", READ, DENY));
        acls.create(acl(TOPIC, "t", LITERAL, "User:dave", "*", DESCRIBE, ALLOW));
        assert!(can("User:dave", "h", DESCRIBE, TOPIC, "t"));
        assert!(!can("User:dave", "h", READ, TOPIC, "t"));
        assert!(can("User:alice", "h", DELETE, GROUP, "g"));
        // ALTER_CONFIGS implies DESCRIBE_CONFIGS, not the other way.
        acls.create(acl(TOPIC, "c", LITERAL, "User:erin", "*", ALTER_CONFIGS, ALLOW));
        assert!(can("User:erin", "h", DESCRIBE_CONFIGS, TOPIC, "c"));
        acls.create(acl(TOPIC, "d", LITERAL, "User:erin", "*", DESCRIBE_CONFIGS, ALLOW));
        assert!(!can("User:erin", "h", ALTER_CONFIGS, TOPIC, "d"));
    }

    #[test]
    fn by_resource_type_follows_the_authorizer() {
        use op::*;
        use resource::*;
        let acls = Acls::default();
        let az = Authorizer { super_users: std::vec!["User:admin".into()], ..Authorizer::default() };
        let any = |p: &str| acls.authorize_by_resource_type(&az, p, "h", WRITE, TOPIC);
        assert!(any("User:admin"));
        assert!(!any("User:alice"));
        acls.create(acl(TOPIC, "orders", PREFIXED, "User:alice", "*", WRITE, ALLOW));
        acls.create(acl(TOPIC, "logs", LITERAL, "User:bob", "*", ALL, ALLOW));
        acls.create(acl(TOPIC, "logs", LITERAL, "User:bob", "*", WRITE, DENY));
        acls.create(acl(TOPIC, "ord", PREFIXED, "User:carol", "*", WRITE, DENY));
        acls.create(acl(TOPIC, "orders", LITERAL, "User:carol", "*", WRITE, ALLOW));
        acls.create(acl(TOPIC, "x", LITERAL, "User:dave", "*", READ, ALLOW));
        assert!(any("User:alice"));
        // The only allow is denied as the same literal, or under a denied prefix.
        assert!(!any("User:bob"));
        assert!(!any("User:carol"));
        // READ is not WRITE.
        assert!(!any("User:dave"));
        // A wildcard deny wins over everything but super users.
        acls.create(acl(TOPIC, "*", LITERAL, "User:alice", "*", WRITE, DENY));
        assert!(!any("User:alice"));
        assert!(any("User:admin"));
    }
}
