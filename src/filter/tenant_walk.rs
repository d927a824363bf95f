//! A [`super::Tenant`]'s walk over a value tree, for the frames that need more than
//! renaming (which [`super::tenant`] does by splicing): a request naming a topic id that is
//! not the tenant's gets a stand-in, an answer loses the entries that name another tenant's
//! entity or topic id and gives stand-ins back, and the book of topic ids learns (and
//! forgets) ids.

use alloc::string::String;
use alloc::vec::Vec;

use super::TopicNames;
use super::tenant_admin::{Names, as_is, unprefix_message};
use super::topic_names::Book;
use crate::ApiKey;
use crate::codec::types::Uuid;
use crate::tools::reflect::value::{Encoding, StructValue, Value};
use crate::tools::reflect::{self, Entity, FieldType, StructSchema};
use alloc::collections::BTreeMap;

/// Whether a field names an entity a tenant owns: a string (or array of strings) marked as
/// a topic name, group id or transactional id; and FindCoordinator's keys, which are group
/// or transactional ids by their `KeyType` and carry no mark.
pub(super) fn owned_entity(api: ApiKey, field: &reflect::FieldSchema) -> bool {
    let string = match &field.ty {
        FieldType::String => true,
        FieldType::Array(t) => matches!(t, FieldType::String),
        _ => false,
    };
    let marked = matches!(field.entity, Some(Entity::TopicName | Entity::GroupId | Entity::TransactionalId));
    string && (marked || (api == ApiKey::FindCoordinator && matches!(field.name, "Key" | "CoordinatorKeys")))
}

/// Whether a field holds a topic id: a `uuid` named `TopicId`, which is every topic id in
/// Kafka's schemas (the other `uuid` fields are log directories, client instances and
/// broker incarnations).
pub(crate) fn topic_id(field: &reflect::FieldSchema) -> bool {
    matches!(field.ty, FieldType::Uuid) && field.name == "TopicId"
}

/// The most stand-in ids one connection keeps (see [`StandIns`]).
const MAX_STAND_INS: usize = 4096;

/// One connection's stand-ins for topic ids that are not its tenant's: a request naming
/// such an id reaches the broker with a stand-in that no topic can have, so the broker
/// answers it as Kafka answers any unknown id (UNKNOWN_TOPIC_ID, in the place each API and
/// version gives it), and the answer gets the client's id back. A stand-in is a version-0
/// UUID (`6b77697265 2d 0000` then a count: "kwire-"); Kafka gives topics random version-4
/// UUIDs and reserves only the all-zero one and `...0001` among the others.
#[derive(Debug, Default)]
pub(super) struct StandIns {
    by_id: BTreeMap<Uuid, Uuid>,
    back: BTreeMap<Uuid, Uuid>,
    next: u64,
}

impl StandIns {
    /// The stand-in for `id` (the same for the connection's life, within [`MAX_STAND_INS`]).
    pub(super) fn for_id(&mut self, id: Uuid) -> Uuid {
        if let Some(s) = self.by_id.get(&id) {
            return *s;
        }
        if self.by_id.len() >= MAX_STAND_INS {
            self.by_id.clear();
            self.back.clear();
        }
        self.next += 1;
        let mut b = [0u8; 16];
        b[..6].copy_from_slice(b"kwire-");
        b[8..].copy_from_slice(&self.next.to_be_bytes());
        let stand_in = Uuid(b);
        self.by_id.insert(id, stand_in);
        self.back.insert(stand_in, id);
        stand_in
    }

    pub(super) fn original(&self, stand_in: &Uuid) -> Option<Uuid> {
        self.back.get(stand_in).copied()
    }
}

pub(super) fn names(api: ApiKey, field: &reflect::FieldSchema) -> Names {
    match owned_entity(api, field) {
        false => Names::Not,
        true if field.entity == Some(Entity::TopicName) => Names::Topics,
        true => Names::Ids,
    }
}

/// Which way a body goes through a [`super::Tenant`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// A request to the broker: names get the prefix, and topic ids that are not the
    /// tenant's their stand-ins.
    ToBroker,
    /// An answer to the client: names lose the prefix, stand-ins give the client's ids back,
    /// the book learns the ids the answer names, and entries that name another tenant's
    /// entity (or topic id) are left out.
    ToClient,
}

/// The indexes of a struct's fields present in `version`.
fn present(s: &StructValue, version: i16) -> impl Iterator<Item = usize> + use<> {
    let schema: &'static StructSchema = s.schema;
    (0..schema.fields.len()).filter(move |&i| schema.fields[i].versions.contains(version))
}

/// Decodes a body, walks it the way it goes and encodes it again if the walk changed it
/// (`Ok(None)` if not). Fails closed (`Err`, the connection's close reason): a request
/// that does not decode would reach other tenants' names unprefixed, an answer that does
/// not decode could show them; a request does not encode again when the prefix makes a
/// name longer than a string can be.
pub(super) fn rewrite(
    way: Way,
    api: ApiKey,
    version: i16,
    body: &[u8],
    prefix: &str,
    ids: &TopicNames,
    stand_ins: &mut StandIns,
) -> Result<Option<Vec<u8>>, String> {
    let (schema, what) = match way {
        Way::ToBroker => (reflect::request_schema(api), "request"),
        Way::ToClient => (reflect::response_schema(api), "answer"),
    };
    let Ok(mut value) = StructValue::decode_body(schema, version, body) else {
        return Err(alloc::format!("a tenant's {} {what} did not decode", api.name()));
    };
    let changed = ids.with(|book| {
        let mut walk = Walk { way, api, version, prefix, book, stand_ins, changed: false };
        walk.walk_struct(&mut value);
        walk.changed
    });
    if !changed {
        return Ok(None);
    }
    match value.to_bytes(Encoding::body(schema, version)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) => Err(alloc::format!("a tenant's {} {what}: {e}", api.name())),
    }
}

/// One walk over a body, [`Way::ToBroker`] or [`Way::ToClient`].
struct Walk<'a> {
    way: Way,
    api: ApiKey,
    version: i16,
    prefix: &'a str,
    book: &'a mut Book,
    stand_ins: &'a mut StandIns,
    /// Whether the walk changed anything.
    changed: bool,
}

impl Walk<'_> {
    /// Walks the fields a struct has in the version; returns whether the struct names an
    /// entity (or a topic id) of another tenant, to be left out of its array (never on the
    /// way to the broker, where every name becomes the tenant's).
    fn walk_struct(&mut self, s: &mut StructValue) -> bool {
        if self.way == Way::ToClient {
            learn_ids(self.api, s, self.version, self.book);
        }
        let mut foreign = false;
        for i in present(s, self.version) {
            let field = &s.schema.fields[i];
            let kind = names(self.api, field);
            let is_id = topic_id(field);
            let message =
                self.way == Way::ToClient && kind == Names::Not && field.name.ends_with("ErrorMessage");
            let Some(Some(v)) = s.fields.get_mut(i) else { continue };
            foreign |= match v {
                Value::Uuid(id) if is_id => !self.topic_id(id),
                Value::String(text) if message => {
                    unprefix_message(text, self.prefix, &mut self.changed);
                    false
                }
                v => !self.value(v, kind),
            };
        }
        foreign
    }

    /// Walks a value of a field whose strings are `kind`; false if it names another
    /// tenant's entity. An array keeps only the items that do not.
    fn value(&mut self, v: &mut Value, kind: Names) -> bool {
        match v {
            Value::String(name) if kind != Names::Not => match self.way {
                Way::ToBroker => {
                    if !as_is(kind, name) {
                        name.insert_str(0, self.prefix);
                        self.changed = true;
                    }
                    true
                }
                Way::ToClient => unprefix(kind, name, self.prefix, &mut self.changed),
            },
            Value::Array(items) => {
                let before = items.len();
                items.retain_mut(|item| self.value(item, kind));
                self.changed |= items.len() != before;
                true
            }
            Value::Struct(inner) => !self.walk_struct(inner),
            _ => true,
        }
    }

    /// A topic id; false for one the book knows to be another tenant's, in an answer. A
    /// request's id that is not the tenant's (or not known) goes as its stand-in, but for
    /// the all-zero id, which names no topic (the topic is then named by name, prefixed);
    /// an answer's stand-in becomes the client's id again.
    fn topic_id(&mut self, id: &mut Uuid) -> bool {
        let ours = self.book.name(id).map(|n| n.starts_with(self.prefix));
        match self.way {
            Way::ToBroker => {
                if *id != Uuid::ZERO && ours != Some(true) {
                    *id = self.stand_ins.for_id(*id);
                    self.changed = true;
                }
                true
            }
            Way::ToClient => match self.stand_ins.original(id) {
                Some(original) => {
                    *id = original;
                    self.changed = true;
                    true
                }
                None => ours != Some(false),
            },
        }
    }
}

/// Learns the topic id a struct pairs with a topic name (as the broker holds both), and
/// forgets the id of a topic DeleteTopics deleted.
fn learn_ids(api: ApiKey, s: &StructValue, version: i16, book: &mut Book) {
    let (mut name, mut id, mut error) = (None, None, None);
    for i in present(s, version) {
        let field = &s.schema.fields[i];
        match s.fields.get(i) {
            Some(Some(Value::String(n))) if field.entity == Some(Entity::TopicName) => {
                name = Some(n.as_str())
            }
            Some(Some(Value::Uuid(u))) if topic_id(field) => id = Some(*u),
            Some(Some(Value::Int16(code))) if field.name == "ErrorCode" => error = Some(*code),
            _ => {}
        }
    }
    match (id, name) {
        (Some(id), _) if api == ApiKey::DeleteTopics && error == Some(0) => book.forget(&id),
        (Some(id), Some(name)) => book.learn(id, name),
        _ => {}
    }
}

/// Takes the prefix off one name; false for another tenant's (without it, and not one
/// that passes [`as_is`]).
fn unprefix(kind: Names, name: &mut String, prefix: &str, changed: &mut bool) -> bool {
    if as_is(kind, name) {
        return true;
    }
    if name.starts_with(prefix) {
        name.drain(..prefix.len());
        *changed = true;
        return true;
    }
    false
}
