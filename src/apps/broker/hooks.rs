//! Hooks: requests of an API caught before the broker serves them, to answer, fail, delay
//! or drop them from a test ([`super::Broker::add_hook`]).

use std::string::String;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::vec::Vec;

use super::lock::lock;
use crate::ApiKey;
use crate::codec::error_code::ErrorCode;
use crate::session::conn::{ConnError, ServerRequest};

/// Writes a whole response frame (size, header and body) for a request into the buffer,
/// usually with [`crate::session::conn::ServerConn::encode_response`] on `request.reply_to()`.
pub type AnswerFn = Arc<dyn Fn(&ServerRequest<'_>, &mut Vec<u8>) -> Result<(), ConnError> + Send + Sync>;

/// What a hook does with a request it catches.
#[derive(Clone)]
pub enum Action {
    /// Lets it through to the broker (the hook only counts it).
    Pass,
    /// Waits this long (on that connection's thread), then lets it through.
    Delay(Duration),
    /// Closes the connection without answering, as a broker that went away.
    Drop,
    /// Answers without serving it: the API's response at the request's version, every
    /// field at its default but the top-level `ErrorCode`, set to this code. For the
    /// responses that have no top-level error code (Produce, Fetch before v7, Metadata,
    /// ListOffsets, OffsetCommit, FindCoordinator from v4, ...) use [`Action::Answer`].
    Fail(ErrorCode),
    /// Answers with the frame the function writes (the request is not served).
    Answer(AnswerFn),
}

impl core::fmt::Debug for Action {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Action::Pass => f.write_str("Pass"),
            Action::Delay(d) => f.debug_tuple("Delay").field(d).finish(),
            Action::Drop => f.write_str("Drop"),
            Action::Fail(e) => f.debug_tuple("Fail").field(e).finish(),
            Action::Answer(_) => f.write_str("Answer(..)"),
        }
    }
}

/// A hook: the API it catches, what it does, and how many requests it catches.
#[derive(Clone, Debug)]
pub struct Hook {
    key: ApiKey,
    action: Action,
    /// `None`: every request until removed.
    times: Option<usize>,
}

impl Hook {
    /// A standing hook: it catches every request of `key` until removed.
    pub fn new(key: ApiKey, action: Action) -> Hook {
        Hook { key, action, times: None }
    }

    /// A one-shot hook: it catches the next request of `key` only.
    pub fn once(key: ApiKey, action: Action) -> Hook {
        Hook { key, action, times: Some(1) }
    }

    /// A counted hook: it catches the next `n` requests of `key`.
    pub fn times(key: ApiKey, action: Action, n: usize) -> Hook {
        Hook { key, action, times: Some(n) }
    }
}

/// A per-partition fault: the partitions of a topic (one, or all of them) that requests of
/// an API name are answered with an error code for that partition, while the request's other
/// partitions are served. For Produce, Fetch, ListOffsets and OffsetForLeaderEpoch (Kafka's per-partition errors:
/// NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...). A Produce partition failed so is not
/// appended.
#[derive(Clone, Debug)]
pub struct Fault {
    key: ApiKey,
    topic: String,
    partition: Option<i32>,
    code: ErrorCode,
    /// For Produce: the records (indexes in the batch) named in the partition's
    /// `record_errors`.
    records: Vec<i32>,
    /// `None`: every request until removed.
    times: Option<usize>,
}

impl Fault {
    /// A standing fault on `partition` of `topic` (`None`: every partition of it) for
    /// requests of `key`; [`Fault::times`] limits it.
    pub fn new(key: ApiKey, topic: &str, partition: Option<i32>, code: ErrorCode) -> Fault {
        Fault { key, topic: topic.into(), partition, code, records: Vec::new(), times: None }
    }

    /// A standing Produce fault with per-record errors: the batch produced to `partition` of
    /// `topic` is rejected as Kafka rejects a batch with invalid records, INVALID_RECORD (87)
    /// for the partition with these records (their indexes in the batch) in its
    /// `record_errors` (Produce v8+), and nothing is appended; [`Fault::times`] limits it.
    ///
    /// ```
    /// use kwire::broker::{Broker, Config, Fault};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 1);
    /// // The next Produce to orders/0 is refused, blaming records 0 and 2 of its batch.
    /// let fault = broker.add_fault(Fault::records("orders", 0, &[0, 2]).times(1));
    /// # let _ = fault;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn records(topic: &str, partition: i32, indexes: &[i32]) -> Fault {
        Fault {
            key: ApiKey::Produce,
            topic: topic.into(),
            partition: Some(partition),
            code: ErrorCode::InvalidRecord,
            records: indexes.to_vec(),
            times: None,
        }
    }

    /// The same fault, for the next `n` requests that name its partition only (each request
    /// counts once, whatever partitions of it the fault catches).
    pub fn times(self, n: usize) -> Fault {
        Fault { times: Some(n), ..self }
    }
}

/// A hook's (or a fault's) handle, to count its catches and remove it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HookId(u64);

#[derive(Debug)]
struct Entry {
    id: HookId,
    hook: Hook,
    fired: usize,
}

#[derive(Debug)]
struct FaultEntry {
    id: HookId,
    fault: Fault,
    fired: usize,
}

/// Every hook, in the order added (the first that matches catches a request), and every
/// fault.
/// A throttle: every response of an API carries this `throttle_time_ms`.
#[derive(Debug)]
struct ThrottleEntry {
    id: HookId,
    key: ApiKey,
    ms: i32,
    fired: usize,
}

/// A partition failed by a fault: its error code, and for Produce the records it blames.
pub(crate) type Failed = (ErrorCode, Vec<i32>);

#[derive(Debug, Default)]
pub(crate) struct Hooks {
    entries: Mutex<(u64, Vec<Entry>)>,
    faults: Mutex<Vec<FaultEntry>>,
    throttles: Mutex<Vec<ThrottleEntry>>,
}

impl Hooks {
    pub fn add(&self, hook: Hook) -> HookId {
        let mut e = lock(&self.entries);
        e.0 += 1;
        let id = HookId(e.0);
        e.1.push(Entry { id, hook, fired: 0 });
        id
    }

    pub fn add_fault(&self, fault: Fault) -> HookId {
        let id = {
            let mut e = lock(&self.entries);
            e.0 += 1;
            HookId(e.0)
        };
        lock(&self.faults).push(FaultEntry { id, fault, fired: 0 });
        id
    }

    /// Removes a hook or fault; whether it was there. A used-up counted one stays (with its
    /// count) until removed.
    pub fn remove(&self, id: HookId) -> bool {
        let mut e = lock(&self.entries);
        let before = e.1.len();
        e.1.retain(|x| x.id != id);
        let mut f = lock(&self.faults);
        let faults = f.len();
        f.retain(|x| x.id != id);
        let mut t = lock(&self.throttles);
        let throttles = t.len();
        t.retain(|x| x.id != id);
        e.1.len() != before || f.len() != faults || t.len() != throttles
    }

    /// Adds a throttle for `key` (replacing none: the first added for an API applies).
    pub fn add_throttle(&self, key: ApiKey, ms: i32) -> HookId {
        let id = {
            let mut e = lock(&self.entries);
            e.0 += 1;
            HookId(e.0)
        };
        lock(&self.throttles).push(ThrottleEntry { id, key, ms, fired: 0 });
        id
    }

    /// The `throttle_time_ms` a response of `key` gets, if a throttle is set (counted).
    pub fn throttle(&self, key: ApiKey) -> Option<i32> {
        let mut t = lock(&self.throttles);
        let entry = t.iter_mut().find(|x| x.key == key)?;
        entry.fired += 1;
        Some(entry.ms)
    }

    /// How many requests a hook or fault caught.
    pub fn fired(&self, id: HookId) -> Option<usize> {
        let hook = lock(&self.entries).1.iter().find(|x| x.id == id).map(|x| x.fired);
        hook.or_else(|| lock(&self.faults).iter().find(|x| x.id == id).map(|x| x.fired))
            .or_else(|| lock(&self.throttles).iter().find(|x| x.id == id).map(|x| x.fired))
    }

    /// The error each of a request's partitions (topic, partition) gets from the faults, in
    /// order (`None`: served). Each fault that catches one of them counts the request once.
    pub fn partition_faults(&self, key: ApiKey, partitions: &[(&str, i32)]) -> Vec<Option<ErrorCode>> {
        self.partition_failures(key, partitions).into_iter().map(|f| f.map(|(code, _)| code)).collect()
    }

    /// [`Hooks::partition_faults`] with the records each Produce fault blames.
    pub fn partition_failures(&self, key: ApiKey, partitions: &[(&str, i32)]) -> Vec<Option<Failed>> {
        let mut out: Vec<Option<Failed>> = std::vec![None; partitions.len()];
        let mut f = lock(&self.faults);
        if f.is_empty() {
            return out;
        }
        for entry in f.iter_mut() {
            let fault = &entry.fault;
            if fault.key != key || fault.times.is_some_and(|n| entry.fired >= n) {
                continue;
            }
            let mut caught = false;
            for (i, &(topic, partition)) in partitions.iter().enumerate() {
                if out[i].is_none() && topic == fault.topic && fault.partition.is_none_or(|p| p == partition)
                {
                    out[i] = Some((fault.code, fault.records.clone()));
                    caught = true;
                }
            }
            if caught {
                entry.fired += 1;
            }
        }
        out
    }

    /// The action for a request of `key`, if a hook with catches left takes it.
    pub fn catch(&self, key: ApiKey) -> Option<Action> {
        let mut e = lock(&self.entries);
        if e.1.is_empty() {
            return None;
        }
        let entry = e.1.iter_mut().find(|x| x.hook.key == key && x.hook.times.is_none_or(|n| x.fired < n))?;
        entry.fired += 1;
        Some(entry.hook.action.clone())
    }
}
