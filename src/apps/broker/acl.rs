//! ACL bindings, kept as Apache Kafka's `StandardAuthorizer` keeps them and matched by
//! filters as its `AclBindingFilter` matches them (CreateAcls, DescribeAcls, DeleteAcls).
//! They are stored and described, not enforced: every request is allowed.
//! [`super::Config::acls`] (`kwire serve --acls`) loads bindings at start.
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

    /// Removes and returns the bindings a filter matches.
    pub fn delete(&self, f: &Filter<'_>) -> Vec<Binding> {
        let mut all = lock(&self.bindings);
        let (gone, kept): (Vec<Binding>, Vec<Binding>) = all.drain(..).partition(|b| f.matches(b));
        *all = kept;
        gone
    }
}
