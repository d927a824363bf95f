//! [`TopicNames`]: topic names by topic id, for filters that judge topics by name when a
//! request names them by id only (Produce v13, Fetch v13 and later, and the other APIs
//! whose schemas carry a `TopicId`).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use crate::ApiKey;
use crate::codec::dispatch::Response;
use crate::codec::types::Uuid;

/// The most topic ids a book keeps; past it, it starts again (an id named after that is
/// looked up again, or is unknown until it is).
const MAX_IDS: usize = 100_000;

/// Topic ids and the names the broker gave them, as answers (and lookups) have shown them.
/// Kafka never gives an id to a second topic (ids are 128 random bits; a topic deleted and
/// created again gets a new one), so an entry can only go stale by its topic's deletion,
/// and a stale entry names a topic that no longer exists: the broker answers it
/// UNKNOWN_TOPIC_ID, as without the entry.
#[derive(Debug, Default)]
pub(crate) struct Book {
    names: BTreeMap<Uuid, Arc<str>>,
}

impl Book {
    /// Learns that topic `id` is named `name` on the broker. An id keeps the name it was
    /// first given: Kafka never renames a topic nor gives its id to another, so an answer
    /// that names a known id otherwise is not believed.
    pub(crate) fn learn(&mut self, id: Uuid, name: &str) {
        if id == Uuid::ZERO || name.is_empty() || self.names.contains_key(&id) {
            return;
        }
        if self.names.len() >= MAX_IDS {
            self.names.clear();
        }
        self.names.insert(id, name.into());
    }

    /// Whether the id's name is known.
    pub(crate) fn knows(&self, id: &Uuid) -> bool {
        self.names.contains_key(id)
    }

    /// The id's name, if known.
    pub(crate) fn name(&self, id: &Uuid) -> Option<&Arc<str>> {
        self.names.get(id)
    }

    /// Forgets an id (its topic was deleted).
    #[cfg(feature = "reflect")]
    pub(crate) fn forget(&mut self, id: &Uuid) {
        self.names.remove(id);
    }
}

/// Topic names by topic id, shared by every clone (by all the connections of a proxy, with
/// `std`): filled from the answers that pair names with ids (Metadata, CreateTopics,
/// DescribeTopicPartitions; [`TopicNames::learn_from`], which a chain does for every answer
/// when given the book with [`super::FilterChain::learn_topic_names`]) and from the
/// proxy's own Metadata look-ups of ids it does not know.
///
/// A filter that judges topics by name resolves each topic with [`TopicNames::resolve`]:
/// the name the request gives, or the book's name for its id. An id the book does not know
/// resolves to `None`, which a policy filter must treat as a topic it refuses (fail
/// closed): a client may name a topic by an id nobody has shown the proxy.
///
/// ```
/// use kwire::filter::TopicNames;
/// use kwire::Uuid;
///
/// let names = TopicNames::new();
/// let id = Uuid([7; 16]);
/// assert_eq!(names.resolve("", id), None);
/// names.learn(id, "audit.logins");
/// assert_eq!(names.resolve("", id).as_deref(), Some("audit.logins"));
/// // A request that names the topic keeps its name.
/// assert_eq!(names.resolve("orders", Uuid::ZERO).as_deref(), Some("orders"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct TopicNames(Shared);

#[cfg(feature = "std")]
type Shared = Arc<std::sync::Mutex<Book>>;
#[cfg(not(feature = "std"))]
type Shared = alloc::rc::Rc<core::cell::RefCell<Book>>;

/// A topic's name: borrowed from the request, or the book's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopicName<'a> {
    /// The name the request gives.
    Given(&'a str),
    /// The name the book holds for the request's topic id.
    Known(Arc<str>),
}

impl core::ops::Deref for TopicName<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            TopicName::Given(name) => name,
            TopicName::Known(name) => name,
        }
    }
}

impl core::fmt::Display for TopicName<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self)
    }
}

impl TopicNames {
    /// An empty book.
    pub fn new() -> Self {
        TopicNames::default()
    }

    /// Runs `f` on the book.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Book) -> R) -> R {
        #[cfg(feature = "std")]
        {
            f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
        }
        #[cfg(not(feature = "std"))]
        {
            f(&mut self.0.borrow_mut())
        }
    }

    /// Learns that topic `id` is named `name` on the broker (ignored for the all-zero id, an
    /// empty name, or an id already known: Kafka never renames a topic).
    pub fn learn(&self, id: Uuid, name: &str) {
        self.with(|book| book.learn(id, name));
    }

    /// The name of topic `id`, if known.
    pub fn name(&self, id: Uuid) -> Option<Arc<str>> {
        self.with(|book| book.name(&id).cloned())
    }

    /// Whether the name of topic `id` is known.
    pub fn knows(&self, id: Uuid) -> bool {
        self.with(|book| book.knows(&id))
    }

    /// A topic's name as a request gives it: `name` if it is not empty (versions that name
    /// topics), else the book's name for `id` (versions that name them by id), else `None`.
    pub fn resolve<'a>(&self, name: &'a str, id: Uuid) -> Option<TopicName<'a>> {
        if !name.is_empty() {
            return Some(TopicName::Given(name));
        }
        if id == Uuid::ZERO {
            return None;
        }
        self.name(id).map(TopicName::Known)
    }

    /// Whether [`TopicNames::learn_from`] reads answers of this API.
    pub fn learns_from(api_key: ApiKey) -> bool {
        matches!(api_key, ApiKey::Metadata | ApiKey::CreateTopics | ApiKey::DescribeTopicPartitions)
    }

    /// Learns the ids and names an answer pairs: the topics of Metadata, CreateTopics and
    /// DescribeTopicPartitions answers that carry both, without an error.
    pub fn learn_from(&self, response: &Response<'_>) {
        #[cfg(any(
            feature = "api-metadata",
            feature = "api-create-topics",
            feature = "api-describe-topic-partitions"
        ))]
        self.with(|book| match response.body {
            #[cfg(feature = "api-metadata")]
            crate::codec::messages::ResponseBodyView::Metadata(m) => {
                for t in m.topics().iter() {
                    if let (0, Some(name)) = (t.error_code(), t.name()) {
                        book.learn(t.topic_id(), name);
                    }
                }
            }
            #[cfg(feature = "api-create-topics")]
            crate::codec::messages::ResponseBodyView::CreateTopics(c) => {
                for t in c.topics().iter() {
                    if t.error_code() == 0 {
                        book.learn(t.topic_id(), t.name());
                    }
                }
            }
            #[cfg(feature = "api-describe-topic-partitions")]
            crate::codec::messages::ResponseBodyView::DescribeTopicPartitions(d) => {
                for t in d.topics().iter() {
                    if let (0, Some(name)) = (t.error_code(), t.name()) {
                        book.learn(t.topic_id(), name);
                    }
                }
            }
            _ => {}
        });
        #[cfg(not(any(
            feature = "api-metadata",
            feature = "api-create-topics",
            feature = "api-describe-topic-partitions"
        )))]
        let _ = response;
    }
}
