//! What a frame is about, in a few words for a summary line: the topics, groups and
//! transactional ids a request names, and the count and codec of the records a frame
//! carries. Found from the schema marks ([`FieldSchema::entity`](crate::reflect::FieldSchema))
//! and `records` fields by one schema walk, with no code per API; record batches are
//! counted from their headers (nothing is decompressed).
//!
//! The work is bounded by the frame's size and the memory by [`MAX_DISTINCT`] names of at
//! most [`MAX_NAME`] characters each.
//!
//! ```
//! use kwire::reflect::explain::about_request;
//!
//! // A DeleteTopics v1 request from client "c" for "orders" and "payments".
//! let mut frame = vec![0, 20, 0, 1, 0, 0, 0, 7, 0, 1, b'c'];
//! frame.extend_from_slice(b"\x00\x00\x00\x02\x00\x06orders\x00\x08payments\x00\x00\x75\x30");
//! assert_eq!(about_request(&frame).to_string(), "topics=orders,payments");
//! ```

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::super::walk::{self as rwalk, Field, Scalar, Visitor};
use super::super::{Entity, request_schema, response_schema};
use crate::ApiKey;
use crate::codec::types::Uuid;

/// The most distinct names of one kind remembered per frame; further names are counted
/// (as [`Names::more`]) without telling repeats apart.
pub const MAX_DISTINCT: usize = 64;
/// Names longer than this many characters are cut, with `…` at the end.
pub const MAX_NAME: usize = 48;
/// How many names a summary shows before `(+N more)`; up to one more is shown instead.
pub const SHOWN: usize = 2;

/// The names of one kind a frame holds, in the order met, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// The distinct names met first (at most [`MAX_DISTINCT`]).
    pub names: Vec<String>,
    /// Names met after [`MAX_DISTINCT`] distinct ones (repeats among them counted too).
    pub more: usize,
}

impl Names {
    fn add(&mut self, name: &str) {
        let name = shorten(name);
        if self.names.contains(&name) {
            return;
        }
        if self.names.len() < MAX_DISTINCT {
            self.names.push(name);
        } else {
            self.more += 1;
        }
    }

    /// Whether no name was met.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// `a,b` or, when there are more than [`SHOWN`] + 1, `a,b(+N more)`.
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.names.len() + self.more;
        let shown = if total <= SHOWN + 1 { total } else { SHOWN };
        for (i, n) in self.names.iter().take(shown).enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(n)?;
        }
        if total > shown {
            write!(f, "(+{} more)", total - shown)?;
        }
        Ok(())
    }
}

/// A name as a summary shows it: Kafka's legal characters (`[a-zA-Z0-9._-]`) as they are,
/// anything else (a space, a comma, a control character) quoted with escapes; cut at
/// [`MAX_NAME`] characters.
fn shorten(name: &str) -> String {
    let cut: String = name.chars().take(MAX_NAME).collect();
    let cut = if cut.len() < name.len() { format!("{cut}…") } else { cut };
    let plain =
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if plain { cut } else { format!("{cut:?}") }
}

/// The records a frame carries, counted from the batch headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// Records in v2 batches plus legacy (v0/v1) messages.
    pub count: u64,
    /// Whether `count` is a lower bound: a compressed legacy message holds messages that
    /// are only counted once it is decompressed, which this does not do.
    pub at_least: bool,
    /// Batches (v2) and legacy messages read.
    pub batches: u64,
    /// The codecs met, one bit per compression id (bit 0: none, 1: gzip, 2: snappy, 3: lz4,
    /// 4: zstd, 7: any other id).
    pub codecs: u8,
}

impl Records {
    /// Counts the entries of a `records` field with the records layer's reader, up to the
    /// first it cannot read or a last one cut short (as a Fetch response may end).
    fn add(&mut self, data: &[u8]) {
        use crate::codec::records::Attributes;
        use crate::codec::records::legacy::{Entries, Entry};
        for entry in Entries::new(data) {
            let Ok(entry) = entry else { return };
            match entry {
                Entry::Batch(batch) => {
                    self.codec((batch.attributes().0 & Attributes::CODEC_MASK) as u8);
                    self.count += u64::try_from(batch.records_count()).unwrap_or(0);
                }
                Entry::Legacy(message) => {
                    let codec = (message.attributes() & 7) as u8;
                    self.codec(codec);
                    self.count += 1;
                    self.at_least |= codec != 0;
                }
            }
            self.batches += 1;
        }
    }

    fn codec(&mut self, id: u8) {
        self.codecs |= 1 << id.min(7);
    }
}

impl fmt::Display for Records {
    /// `records=12`, `records=12 gzip`, `records=3+ snappy` (legacy compressed messages),
    /// several codecs joined by `+`; an uncompressed batch names no codec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "records={}{}", self.count, if self.at_least { "+" } else { "" })?;
        let names = ["none", "gzip", "snappy", "lz4", "zstd", "codec5", "codec6", "codec?"];
        let mut first = true;
        for (bit, name) in names.iter().enumerate().skip(1) {
            if self.codecs & (1 << bit) != 0 {
                f.write_str(if first { " " } else { "+" })?;
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// What a frame is about: the names it holds and its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct About {
    /// Topic names (`topicName` fields; the empty name of a topic named by id left out).
    pub topics: Names,
    /// The distinct topic ids (`TopicId` fields, the zero id left out) that
    /// [`About::name_topic_ids`] has not named, at most [`MAX_DISTINCT`]: Fetch v13 and
    /// later, Produce v13 and other APIs name topics by id only.
    pub topic_ids: Vec<Uuid>,
    /// Group ids (`groupId` fields).
    pub groups: Names,
    /// Transactional ids (`transactionalId` fields, nulls left out).
    pub transactional_ids: Names,
    /// The records of the frame's `records` fields, if it has any.
    pub records: Option<Records>,
}

impl About {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
            && self.topic_ids.is_empty()
            && self.groups.is_empty()
            && self.transactional_ids.is_empty()
            && self.records.is_none()
    }

    /// Names the topic ids it can with `name` (a proxy's book of topic names, or the
    /// Metadata answers of a capture): each named id joins [`About::topics`]; the others
    /// stay in [`About::topic_ids`].
    pub fn name_topic_ids(&mut self, mut name: impl FnMut(Uuid) -> Option<String>) {
        let ids = core::mem::take(&mut self.topic_ids);
        for id in ids {
            match name(id) {
                Some(n) => self.topics.add(&n),
                None => self.topic_ids.push(id),
            }
        }
    }
}

impl fmt::Display for About {
    /// `topics=orders,audit(+3 more) group=g txn=t records=12 gzip`, each part only when
    /// there is something to say (empty when [`About::is_empty`]). A topic known only by
    /// its id is shown as Kafka shows ids (`topics=orders,id:T2gaK4dKRnGdZcGvQDOkHw`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let with_ids;
        let topics = if self.topic_ids.is_empty() {
            &self.topics
        } else {
            let mut all = self.topics.clone();
            for id in &self.topic_ids {
                // Not through `add`: the id's form needs no quoting.
                if all.names.len() < MAX_DISTINCT {
                    all.names.push(format!("id:{}", super::super::json::uuid_string(id)));
                } else {
                    all.more += 1;
                }
            }
            with_ids = all;
            &with_ids
        };
        for (key, names) in [("topics", topics), ("group", &self.groups), ("txn", &self.transactional_ids)] {
            if !names.is_empty() {
                write!(f, "{sep}{key}=")?;
                names.write(f)?;
                sep = " ";
            }
        }
        if let Some(r) = &self.records {
            write!(f, "{sep}{r}")?;
        }
        Ok(())
    }
}

struct Finder {
    names: bool,
    about: About,
}

impl<'a> Visitor<'a> for Finder {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        match value {
            Scalar::Records(data) => self.about.records.get_or_insert_with(Records::default).add(data),
            Scalar::Uuid(id) if self.names && field.schema.name == "TopicId" && id != Uuid::ZERO => {
                let ids = &mut self.about.topic_ids;
                if !ids.contains(&id) && ids.len() < MAX_DISTINCT {
                    ids.push(id);
                }
            }
            Scalar::String(s) if self.names => match field.schema.entity {
                Some(Entity::TopicName) if !s.is_empty() => self.about.topics.add(s),
                Some(Entity::GroupId) => self.about.groups.add(s),
                Some(Entity::TransactionalId) => self.about.transactional_ids.add(s),
                _ => {}
            },
            _ => {}
        }
    }
}

/// What a request frame (from its header, without the size prefix) is about: the
/// entities it names and its records. A frame that does not decode gives what was read
/// before the problem.
pub fn about_request(frame: &[u8]) -> About {
    let mut finder = Finder { names: true, about: About::default() };
    let mut none = Finder { names: false, about: About::default() };
    if let Ok(info) = rwalk::walk_request_header(frame, 0, &mut none) {
        let body = frame.get(info.end..).unwrap_or_default();
        let _ = rwalk::walk_body(request_schema(info.api_key), info.api_version, body, info.end, &mut finder);
    }
    finder.about
}

/// What a response frame (from its header, without the size prefix) of `api_key` at
/// `version` is about: its records only (a response's names repeat its request's, or list
/// a whole cluster's).
pub fn about_response(frame: &[u8], api_key: ApiKey, version: i16) -> About {
    let mut finder = Finder { names: false, about: About::default() };
    let header = api_key.response_header_version(version);
    if let Ok(end) =
        rwalk::walk_response_header(frame, header, 0, &mut Finder { names: false, about: About::default() })
    {
        let body = frame.get(end..).unwrap_or_default();
        let _ = rwalk::walk_body(response_schema(api_key), version, body, end, &mut finder);
    }
    finder.about
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn many_names_are_shortened() {
        let mut n = Names::default();
        for t in ["orders", "audit", "orders", "a", "b", "c"] {
            n.add(t);
        }
        let about = About { topics: n, ..About::default() };
        assert_eq!(about.to_string(), "topics=orders,audit(+3 more)");
        let mut three = Names::default();
        for t in ["x", "y", "z"] {
            three.add(t);
        }
        assert_eq!(About { groups: three, ..About::default() }.to_string(), "group=x,y,z");
    }

    #[test]
    fn topics_named_by_id_are_named_where_known() {
        let (a, b) = (Uuid([1; 16]), Uuid([2; 16]));
        let mut about = About { topic_ids: vec![a, b], ..About::default() };
        assert_eq!(about.to_string(), "topics=id:AQEBAQEBAQEBAQEBAQEBAQ,id:AgICAgICAgICAgICAgICAg");
        about.name_topic_ids(|id| (id == a).then(|| "orders".into()));
        assert_eq!(about.to_string(), "topics=orders,id:AgICAgICAgICAgICAgICAg");
        assert_eq!(about.topic_ids, vec![b]);
    }

    #[test]
    fn odd_names_are_quoted_and_cut() {
        assert_eq!(shorten("a b\n"), "\"a b\\n\"");
        let long = "x".repeat(100);
        assert_eq!(shorten(&long).chars().count(), MAX_NAME + 1);
    }

    #[test]
    fn distinct_names_are_bounded() {
        let mut n = Names::default();
        for i in 0..1000u32 {
            n.add(&i.to_string());
        }
        assert_eq!((n.names.len(), n.more), (MAX_DISTINCT, 1000 - MAX_DISTINCT));
        assert_eq!(About { topics: n, ..About::default() }.to_string(), "topics=0,1(+998 more)");
    }

    #[test]
    fn batches_are_counted_from_their_headers() {
        // Two v2 batch headers (no record bodies needed): 5 gzip records, 7 uncompressed.
        let batch = |codec: u8, count: i32| {
            let mut b = vec![0u8; 61];
            b[8..12].copy_from_slice(&49i32.to_be_bytes());
            b[16] = 2;
            b[22] = codec;
            b[57..61].copy_from_slice(&count.to_be_bytes());
            b
        };
        let mut data = batch(1, 5);
        data.extend(batch(0, 7));
        // A last batch cut short is left out.
        data.extend(&batch(4, 9)[..30]);
        let mut r = Records::default();
        r.add(&data);
        assert_eq!((r.count, r.batches), (12, 2));
        assert_eq!(r.to_string(), "records=12 gzip");
        // A negative length stops the count.
        let mut bad = batch(0, 3);
        bad[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        let mut r = Records::default();
        r.add(&bad);
        assert_eq!(r.to_string(), "records=0");
    }
}
