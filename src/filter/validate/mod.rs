//! [`ValidateRecords`]: the records of Produce requests checked against [`Rule`]s per topic
//! pattern, in the proxy, before they reach the broker.

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use super::{Filter, Refusals, RequestAction, TopicName, TopicNames, check_json};
use crate::codec::dispatch::Request;
use crate::codec::messages::{ProduceRequestView, RequestBodyView};
use crate::codec::records::{ErrorKind, Record, RecordBatches};
use crate::codec::types::Versions;
use crate::{ApiKey, ErrorCode};

mod rule;

pub use rule::{Checks, Rule, RuleError};

/// The decompression limit of [`ValidateRecords::new`]: 16 MiB of records a batch.
pub const DEFAULT_DECOMPRESSION_LIMIT: usize = 16 << 20;

/// The most `record_errors` one partition's answer lists (the count in its message is the
/// true one): a frame of tiny failing records cannot make an answer many times its size.
pub const MAX_RECORD_ERRORS: usize = 1000;

/// The highest Produce version that names topics (v13 names them by id only).
const LAST_NAMED_PRODUCE: i16 = 12;

/// Why a partition failed: its error, message and record errors.
#[derive(Debug)]
struct Failure {
    code: ErrorCode,
    message: String,
    /// (batch index, message), at most [`MAX_RECORD_ERRORS`].
    records: Vec<(u32, String)>,
}

impl Failure {
    fn partition(code: ErrorCode, message: String) -> Self {
        Failure { code, message, records: Vec::new() }
    }

    /// Records that broke the rules: Kafka's `LogValidator` form of the message.
    fn records(total: usize, records: Vec<(u32, String)>) -> Self {
        let mut message = alloc::format!(
            "One or more records have been rejected due to {total} record errors in total, and only showing \
             the first three errors at most: ["
        );
        for (i, (index, why)) in records.iter().take(3).enumerate() {
            if i > 0 {
                message.push_str(", ");
            }
            message.push_str(&alloc::format!("RecordError(batchIndex={index}, message='{why}')"));
        }
        message.push(']');
        Failure { code: ErrorCode::InvalidRecord, message, records }
    }

    /// Bytes the proxy cannot read as records.
    fn unreadable(e: crate::codec::records::Error, limit: usize) -> Self {
        match e.kind() {
            ErrorKind::CrcMismatch { .. } => Failure::partition(
                ErrorCode::CorruptMessage,
                alloc::format!("the record batch is corrupt: {e}"),
            ),
            ErrorKind::DecompressedTooLarge { .. } | ErrorKind::RecordCountTooLarge { .. } => {
                Failure::partition(
                    ErrorCode::InvalidRecord,
                    alloc::format!(
                        "the records decompress to more than this proxy's limit of {limit} bytes, so they cannot be validated"
                    ),
                )
            }
            _ => Failure::partition(
                ErrorCode::InvalidRecord,
                alloc::format!("the records cannot be read: {e}"),
            ),
        }
    }

    /// Refuses partition `p` of topic `t` for this failure.
    fn refuse(self, refusals: &mut Refusals, t: usize, p: usize) {
        let records =
            self.records.into_iter().map(|(i, why)| (i32::try_from(i).unwrap_or(i32::MAX), Some(why)));
        refusals.records(t, p, self.code, Some(&self.message), records);
    }
}

/// Checks one partition's records; `scratch` takes decompressed records.
fn check_records(
    records: RecordBatches<'_>,
    checks: &Checks,
    scratch: &mut Vec<u8>,
    limit: usize,
) -> Result<(), Failure> {
    let mut batches = records;
    let mut index: u32 = 0;
    let mut total = 0usize;
    let mut errors: Vec<(u32, String)> = Vec::new();
    for batch in batches.by_ref() {
        let batch = batch.map_err(|e| Failure::unreadable(e, limit))?;
        if batch.is_control() {
            // Clients may not write control batches: the broker refuses them.
            index = index.saturating_add(u32::try_from(batch.records_count()).unwrap_or(0));
            continue;
        }
        let records = batch.records_in_vec(scratch, limit).map_err(|e| Failure::unreadable(e, limit))?;
        for record in records {
            let record = record.map_err(|e| {
                Failure::partition(
                    ErrorCode::InvalidRecord,
                    alloc::format!("record {index} cannot be read: {e}"),
                )
            })?;
            if let Some(why) = checks.check(&record) {
                total += 1;
                if errors.len() < MAX_RECORD_ERRORS {
                    errors.push((index, why));
                }
            }
            index = index.saturating_add(1);
        }
    }
    if batches.partial() {
        return Err(Failure::partition(
            ErrorCode::InvalidRecord,
            "the records end with a cut-short record batch".into(),
        ));
    }
    if errors.is_empty() { Ok(()) } else { Err(Failure::records(total, errors)) }
}

/// Validates the records of Produce requests against [`Rule`]s per topic pattern, and
/// answers partitions that fail as a broker would: INVALID_RECORD (87) with `record_errors`
/// (each failing record's index in its batch and why) and an error message in the form
/// of Kafka's `LogValidator`. Every rule whose pattern matches a topic applies to it.
///
/// - **Nothing fails:** the request is forwarded as it came ([`super::Verdict::Forward`]):
///   not a byte is copied.
/// - **Some partitions fail:** they are refused ([`RequestAction::Refuse`]): the chain
///   sends the request on without them, and merges the broker's answer with theirs, in the
///   request's order, so that the client gets one response.
/// - **Every partition fails:** the chain answers the request without the broker.
/// - **`acks=0`:** failing partitions are dropped and the rest sent on; nothing is
///   answered (a broker would close the connection instead, which the client notices as a
///   lost connection, not as an error of its records).
///
/// Compressed batches are decompressed into a buffer of the filter's to be checked, up to a
/// limit ([`DEFAULT_DECOMPRESSION_LIMIT`], [`ValidateRecords::decompression_limit`]);
/// past it, or if the records cannot be read at all (a wrong CRC gives CORRUPT_MESSAGE),
/// the partition fails with a message saying so. A partition of a topic no rule matches is
/// not read.
///
/// **Topic ids.** Produce v13 names topics by id only. Given a book of topic names
/// ([`ValidateRecords::topic_names`]; a proxy's is [`crate::apps::proxy::ConnInfo::topic_names`]),
/// the filter resolves them and its rules apply at every version; a topic whose id the book
/// does not know fails its partitions with UNKNOWN_TOPIC_ID. Without a book, while some
/// rule's pattern is not `*`, the filter takes Produce v13 out of the ApiVersions answers
/// clients get through the proxy ([`Filter::versions`]): clients produce at v12 or older,
/// which name topics, and a v13 request that comes all the same is refused by the chain, as
/// a version it does not serve ([`super::FilterChain::on_request`]). Rules whose pattern is
/// `*` apply at every version.
///
/// ```
/// use kwire::filter::{FilterChain, Rule, ValidateRecords, Verdict};
/// use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
/// use kwire::messages::{ProduceRequest, ProduceResponse, ResponseBodyView};
/// use kwire::records::{BatchBuilder, NewRecord};
/// use kwire::ApiKey;
///
/// let rules: Vec<Rule> = vec!["orders.*=json,key".parse()?];
/// let mut chain = FilterChain::new();
/// chain.push(ValidateRecords::new(rules));
///
/// let records = [NewRecord::new(Some(b"k1"), Some(b"{\"id\": 1"))]; // not JSON
/// let mut batch = Vec::new();
/// BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut batch)?;
/// let partitions = [PartitionProduceData { index: 0, records: Some((&batch[..]).into()), ..Default::default() }];
/// let topics = [TopicProduceData { name: "orders.eu".into(), partition_data: (&partitions).into(), ..Default::default() }];
/// let body = ProduceRequest { acks: -1, timeout_ms: 1000, topic_data: (&topics).into(), ..Default::default() };
/// let mut frame = vec![0u8; 256];
/// let n = kwire::dispatch::encode_request(&body, 12, 7, None, &mut frame)?;
///
/// // Its only partition fails: the filter answers.
/// let Verdict::Respond(answer) = chain.on_request(&frame[4..n]) else { panic!() };
/// let response = kwire::dispatch::parse_response(&answer, ApiKey::Produce, 12)?;
/// let ResponseBodyView::Produce(view) = response.body else { unreachable!() };
/// let partition = view.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
/// assert_eq!(partition.error_code(), 87);
/// let errors: Vec<_> = partition.record_errors().iter().map(|e| e.batch_index()).collect();
/// assert_eq!(errors, [0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ValidateRecords {
    rules: Arc<[Rule]>,
    /// Some rule needs a topic's name (its pattern is not `*`).
    by_name: bool,
    limit: usize,
    scratch: Vec<u8>,
    /// Names of topics named by id, when given.
    topic_names: Option<TopicNames>,
}

/// The scratch buffer kept between requests at most; a larger one is freed after use.
const KEEP_SCRATCH: usize = 1 << 20;

impl ValidateRecords {
    /// A filter of these rules (give each connection its own, the rules shared:
    /// `Arc<[Rule]>` and `Vec<Rule>` both do), with the default decompression limit.
    pub fn new(rules: impl Into<Arc<[Rule]>>) -> Self {
        let rules = rules.into();
        let by_name = rules.iter().any(|r| !r.matches_all());
        ValidateRecords {
            rules,
            by_name,
            limit: DEFAULT_DECOMPRESSION_LIMIT,
            scratch: Vec::new(),
            topic_names: None,
        }
    }

    /// Resolves topics named by id (Produce v13) through `book` (in a proxy, the
    /// connection's [`crate::apps::proxy::ConnInfo::topic_names`]), so that rules by name apply
    /// at every version; a topic whose id the book does not know fails its partitions
    /// (UNKNOWN_TOPIC_ID) rather than pass unchecked. Without a book, rules by name keep
    /// Produce at v12 and older, which name topics.
    pub fn topic_names(mut self, book: TopicNames) -> Self {
        self.topic_names = Some(book);
        self
    }

    /// Decompresses at most `bytes` of records a batch to check them; a batch whose records
    /// are larger fails.
    pub fn decompression_limit(mut self, bytes: usize) -> Self {
        self.limit = bytes;
        self
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The checks for a topic (`None` for a topic named by id only), or why its partitions
    /// fail without being read.
    fn checks_for<'r>(rules: &'r [Rule], by_name: bool, name: Option<&str>) -> Lookup<'r> {
        let mut found: Option<Cow<'r, Checks>> = None;
        for rule in rules {
            let applies = match name {
                Some(name) => rule.matches(name),
                None if by_name => return Lookup::Unnamed,
                None => true,
            };
            if applies {
                match &mut found {
                    None => found = Some(Cow::Borrowed(&rule.checks)),
                    Some(c) => c.to_mut().merge(&rule.checks),
                }
            }
        }
        found.map_or(Lookup::Pass, Lookup::Check)
    }

    /// Each partition's failure, in request order (`(topic, partition)` positions).
    fn failures(&mut self, produce: &ProduceRequestView<'_>, version: i16) -> Vec<(usize, usize, Failure)> {
        let rules = self.rules.clone();
        let mut failures = Vec::new();
        for (t, topic) in produce.topic_data().iter().enumerate() {
            let name = match (&self.topic_names, version <= LAST_NAMED_PRODUCE) {
                (_, true) => Some(TopicName::Given(topic.name())),
                (Some(book), false) => book.resolve(topic.name(), topic.topic_id()),
                (None, false) => None,
            };
            let checks = match Self::checks_for(&rules, self.by_name, name.as_deref()) {
                Lookup::Pass => continue,
                Lookup::Check(c) => c,
                Lookup::Unnamed => {
                    for p in 0..topic.partition_data().len() {
                        let why = "this proxy validates records by topic name, and does not know the \
                                   name of this topic id"
                            .to_string();
                        failures.push((t, p, Failure::partition(ErrorCode::UnknownTopicId, why)));
                    }
                    continue;
                }
            };
            for (p, partition) in topic.partition_data().iter().enumerate() {
                // Null records: the broker answers them.
                let Some(records) = partition.records() else { continue };
                if let Err(f) = check_records(records, &checks, &mut self.scratch, self.limit) {
                    failures.push((t, p, f));
                }
            }
        }
        if self.scratch.capacity() > KEEP_SCRATCH {
            self.scratch = Vec::new();
        }
        failures
    }
}

enum Lookup<'r> {
    /// No rule applies.
    Pass,
    /// These checks apply.
    Check(Cow<'r, Checks>),
    /// Rules need the topic's name, and the request names it by id only.
    Unnamed,
}

impl Filter for ValidateRecords {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce && !self.rules.is_empty()
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        let RequestBodyView::Produce(produce) = request.body else { return RequestAction::Pass };
        let mut refusals = Refusals::new();
        for (t, p, failure) in self.failures(&produce, request.header.api_version()) {
            failure.refuse(&mut refusals, t, p);
        }
        // Nothing refused: the request passes as it came.
        RequestAction::Refuse(refusals)
    }

    /// The chain merges the answers to partly refused requests; the filter reads none.
    fn wants_response(&self, _: ApiKey, _: i16) -> bool {
        false
    }

    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        if api_key != ApiKey::Produce || !self.by_name || self.rules.is_empty() || self.topic_names.is_some()
        {
            return Some(readable);
        }
        let cut = Versions::new(readable.min, readable.max.min(LAST_NAMED_PRODUCE));
        (cut.min <= cut.max).then_some(cut)
    }
}

#[cfg(test)]
mod tests {
    use super::rule::glob;
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let m = |p: &str, n: &str| glob(p.as_bytes(), n.as_bytes());
        assert!(m("orders", "orders"));
        assert!(!m("orders", "orders2"));
        assert!(!m("orders", "order"));
        assert!(m("orders.*", "orders."));
        assert!(m("orders.*", "orders.eu.1"));
        assert!(!m("orders.*", "orders"));
        assert!(!m("orders.*", "xorders.eu"));
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("*.dlq", "a.b.dlq"));
        assert!(!m("*.dlq", "a.b.dlq2"));
        assert!(m("a*b*c", "aXXbYYbZc"));
        assert!(!m("a*b*c", "aXXbYYbZ"));
        assert!(m("a**", "a"));
        assert!(m("*a*a*a*", "aaa"));
        assert!(!m("*a*a*a*", "aa"));
    }

    #[test]
    fn rules_parse_or_name_the_problem() {
        let r: Rule = "t=json".parse().unwrap();
        assert_eq!(r.checks(), &Checks::new().json());
        let r: Rule = " a.* = key , header=x, header=y, max-bytes=10 ,max-bytes=20".parse().unwrap();
        assert_eq!(r.pattern(), "a.*");
        assert_eq!(r.checks(), &Checks::new().key().header("x").header("y").max_bytes(10));
        assert_eq!("orders".parse::<Rule>(), Err(RuleError::NoChecks("orders".into())));
        assert_eq!("orders=".parse::<Rule>(), Err(RuleError::NoChecks("orders=".into())));
        assert_eq!("orders=json,".parse::<Rule>(), Err(RuleError::UnknownCheck("".into())));
        assert_eq!("orders=jsn".parse::<Rule>(), Err(RuleError::UnknownCheck("jsn".into())));
        assert_eq!("orders=max-bytes=1k".parse::<Rule>(), Err(RuleError::MaxBytes("1k".into())));
        assert_eq!("orders=header=".parse::<Rule>(), Err(RuleError::EmptyHeader));
        assert_eq!("ord ers=json".parse::<Rule>(), Err(RuleError::Pattern("ord ers".into())));
        assert_eq!("=json".parse::<Rule>(), Err(RuleError::Pattern("".into())));
        assert_eq!("a/b=json".parse::<Rule>(), Err(RuleError::Pattern("a/b".into())));
        // Each message names what was wrong.
        let e = "orders=jsn".parse::<Rule>().unwrap_err().to_string();
        assert!(e.contains("\"jsn\"") && e.contains("json, key, max-bytes=N and header=NAME"), "{e}");
        assert!(Rule::new("t", Checks::new()).is_err());
    }

    #[test]
    fn matching_rules_merge() {
        let rules: Vec<Rule> = alloc::vec![
            "*=max-bytes=100".parse().unwrap(),
            "orders.*=json,max-bytes=50,header=a".parse().unwrap(),
            "orders.eu=key,header=a,header=b".parse().unwrap(),
        ];
        let Lookup::Check(c) = ValidateRecords::checks_for(&rules, true, Some("orders.eu")) else { panic!() };
        assert_eq!(*c, Checks::new().json().key().max_bytes(50).header("a").header("b"));
        let Lookup::Check(c) = ValidateRecords::checks_for(&rules, true, Some("other")) else { panic!() };
        assert!(matches!(c, Cow::Borrowed(_)), "one rule: no copy");
        assert_eq!(*c, Checks::new().max_bytes(100));
        assert!(matches!(ValidateRecords::checks_for(&rules, true, None), Lookup::Unnamed));
        assert!(matches!(ValidateRecords::checks_for(&rules[1..], true, Some("x")), Lookup::Pass));
        let Lookup::Check(c) = ValidateRecords::checks_for(&rules[..1], false, None) else { panic!() };
        assert_eq!(*c, Checks::new().max_bytes(100));
    }
}
