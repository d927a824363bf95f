//! Hooks: requests of an API caught before the broker serves them, to answer, fail, delay
//! or drop them from a test ([`super::Broker::add_hook`]).

use std::string::String;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::vec::Vec;

use super::state::lock;
use crate::ApiKey;
use crate::conn::{ConnError, ServerRequest};
use crate::error_code::ErrorCode;

/// Writes a whole response frame (size, header and body) for a request into the buffer,
/// usually with [`crate::conn::ServerConn::encode_response`] on `request.reply_to()`.
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
/// partitions are served. For Produce, Fetch and ListOffsets (Kafka's per-partition errors:
/// NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...). A Produce partition failed so is not
/// appended.
#[derive(Clone, Debug)]
pub struct Fault {
    key: ApiKey,
    topic: String,
    partition: Option<i32>,
    code: ErrorCode,
    /// `None`: every request until removed.
    times: Option<usize>,
}

impl Fault {
    /// A standing fault on `partition` of `topic` (`None`: every partition of it) for
    /// requests of `key`; [`Fault::times`] limits it.
    pub fn new(key: ApiKey, topic: &str, partition: Option<i32>, code: ErrorCode) -> Fault {
        Fault { key, topic: topic.into(), partition, code, times: None }
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
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    entries: Mutex<(u64, Vec<Entry>)>,
    faults: Mutex<Vec<FaultEntry>>,
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
        e.1.len() != before || f.len() != faults
    }

    /// How many requests a hook or fault caught.
    pub fn fired(&self, id: HookId) -> Option<usize> {
        let hook = lock(&self.entries).1.iter().find(|x| x.id == id).map(|x| x.fired);
        hook.or_else(|| lock(&self.faults).iter().find(|x| x.id == id).map(|x| x.fired))
    }

    /// The error each of a request's partitions (topic, partition) gets from the faults, in
    /// order (`None`: served). Each fault that catches one of them counts the request once.
    pub fn partition_faults(&self, key: ApiKey, partitions: &[(&str, i32)]) -> Vec<Option<ErrorCode>> {
        let mut out = std::vec![None; partitions.len()];
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
                    out[i] = Some(fault.code);
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
