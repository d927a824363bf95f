//! One share partition: a share group's view of one topic partition, as Kafka's
//! `SharePartition` keeps it. Every offset from the share-partition start offset (SPSO) to
//! the end of what was ever acquired (SPEO) has a state: available, acquired by a member
//! (with a lock deadline), acknowledged or archived, and a delivery count. The start
//! moves past offsets that are acknowledged or archived; offsets beyond the end are
//! available and never delivered.

use std::collections::BTreeMap;
use std::string::String;
use std::time::Instant;
use std::vec::Vec;

use crate::codec::error_code::ErrorCode;

/// How many offsets may be in flight (between the start and the end) at once: Kafka's
/// `group.share.partition.max.record.locks` default.
pub(crate) const MAX_IN_FLIGHT: i64 = 2000;

/// An offset's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RecordState {
    Available,
    Acquired { member: String, deadline: Instant },
    Acknowledged,
    Archived,
}

#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub state: RecordState,
    pub delivery_count: i16,
}

/// An acknowledgement batch: offsets `first..=last`, with one type for all of them or one
/// for each.
pub(crate) struct AckBatch<'a> {
    pub first: i64,
    pub last: i64,
    pub types: &'a [i8],
}

/// One batch of the log as the acquisition sees it.
pub(crate) struct LogBatch {
    pub base: i64,
    pub last: i64,
    pub control: bool,
}

/// A share partition's state.
#[derive(Debug)]
pub(crate) struct SharePartition {
    /// The share-partition start offset: every offset below it is done with.
    pub start: i64,
    /// One past the last offset ever acquired.
    pub end: i64,
    /// The states of the offsets in `start..end` (an offset absent is archived: a gap).
    records: BTreeMap<i64, Record>,
}

impl SharePartition {
    pub fn new(start: i64) -> SharePartition {
        SharePartition { start, end: start, records: BTreeMap::new() }
    }

    /// Moves the start up to the log's start offset (after DeleteRecords) if it is below.
    pub fn follow_log_start(&mut self, log_start: i64) {
        if self.start < log_start {
            self.records = self.records.split_off(&log_start);
            self.start = log_start;
            self.end = self.end.max(log_start);
        }
    }

    /// Acquires for `member` the offsets of `batch` that may be: those available below
    /// the end, and those past the end while fewer than [`MAX_IN_FLIGHT`] are in flight.
    /// Control batches are archived, never delivered. Returns the (offset, delivery count)
    /// acquired.
    pub fn acquire_batch(
        &mut self,
        batch: &LogBatch,
        member: &str,
        deadline: Instant,
        acquired: &mut Vec<(i64, i16)>,
    ) {
        for offset in batch.base.max(self.start)..=batch.last {
            if offset >= self.end {
                if offset - self.start >= MAX_IN_FLIGHT {
                    return;
                }
                self.end = offset + 1;
                if batch.control {
                    continue; // a gap: archived
                }
                self.records.insert(offset, Record { state: RecordState::Available, delivery_count: 0 });
            }
            if let Some(r) = self.records.get_mut(&offset)
                && r.state == RecordState::Available
            {
                r.delivery_count = r.delivery_count.saturating_add(1);
                r.state = RecordState::Acquired { member: member.into(), deadline };
                acquired.push((offset, r.delivery_count));
            }
        }
        self.advance();
    }

    /// The first offset at or after `from` worth reading the log at: an available one
    /// below the end, else the end.
    pub fn next_available(&self, from: i64) -> i64 {
        self.records
            .range(from.max(self.start)..)
            .find(|(_, r)| r.state == RecordState::Available)
            .map_or(self.end, |(&o, _)| o)
    }

    /// Applies a member's acknowledgements, as Kafka checks them: every offset acknowledged
    /// (but a gap, type 0) must be acquired by this member, else INVALID_RECORD_STATE and
    /// nothing changes. Accept (1) acknowledges, release (2) makes it available again (or
    /// archives it at the delivery limit), reject (3) and gap (0) archive, renew (4)
    /// extends the lock to `renewed`.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AckBatch<'_>],
        limit: i16,
        renewed: Instant,
    ) -> Result<(), ErrorCode> {
        let type_of = |b: &AckBatch<'_>, offset: i64| {
            if b.types.len() == 1 { b.types[0] } else { b.types[(offset - b.first) as usize] }
        };
        for b in batches {
            if b.first < self.start || b.last >= self.end {
                return Err(ErrorCode::InvalidRecordState);
            }
            for offset in b.first..=b.last {
                if type_of(b, offset) == 0 {
                    continue;
                }
                match self.records.get(&offset) {
                    Some(Record { state: RecordState::Acquired { member: m, .. }, .. }) if m == member => {}
                    _ => return Err(ErrorCode::InvalidRecordState),
                }
            }
        }
        for b in batches {
            for offset in b.first..=b.last {
                let kind = type_of(b, offset);
                let Some(r) = self.records.get_mut(&offset) else { continue };
                r.state = match kind {
                    1 => RecordState::Acknowledged,
                    2 if r.delivery_count >= limit => RecordState::Archived,
                    2 => RecordState::Available,
                    4 => match &r.state {
                        RecordState::Acquired { member, .. } => {
                            RecordState::Acquired { member: member.clone(), deadline: renewed }
                        }
                        other => other.clone(),
                    },
                    0 if !matches!(r.state, RecordState::Acquired { .. }) => continue,
                    _ => RecordState::Archived,
                };
            }
        }
        self.advance();
        Ok(())
    }

    /// Releases what `member` holds (it left, or its session closed), or with `None` every
    /// lock past its deadline at `now`. Returns whether anything became available.
    pub fn release(&mut self, member: Option<&str>, now: Instant, limit: i16) -> bool {
        let mut freed = false;
        for r in self.records.values_mut() {
            let RecordState::Acquired { member: m, deadline } = &r.state else { continue };
            let due = match member {
                Some(member) => m == member,
                None => *deadline <= now,
            };
            if due {
                if r.delivery_count >= limit {
                    r.state = RecordState::Archived;
                } else {
                    r.state = RecordState::Available;
                    freed = true;
                }
            }
        }
        self.advance();
        freed
    }

    /// Moves the start past the offsets that are done with.
    fn advance(&mut self) {
        while self.start < self.end {
            match self.records.get(&self.start) {
                Some(r) if matches!(r.state, RecordState::Available | RecordState::Acquired { .. }) => break,
                Some(_) => {
                    self.records.remove(&self.start);
                }
                None => {}
            }
            self.start += 1;
        }
    }

    /// The offsets' states, for tests and inspection.
    #[cfg(test)]
    pub fn state(&self, offset: i64) -> Option<&Record> {
        self.records.get(&offset)
    }
}

/// The batches in `bytes` (whole record batches, as a log read returns them): each one's
/// first and last offsets and whether it is a control batch. Stops at a truncated batch.
pub(crate) fn batches(bytes: &[u8]) -> Vec<(LogBatch, core::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(head) = bytes.get(at..at + 27) {
        let base = i64::from_be_bytes(head[0..8].try_into().unwrap_or_default());
        let len = i32::from_be_bytes(head[8..12].try_into().unwrap_or_default());
        let Ok(len) = usize::try_from(len) else { break };
        let end = at + 12 + len;
        if end > bytes.len() || len < 15 {
            break;
        }
        let attributes = i16::from_be_bytes(head[21..23].try_into().unwrap_or_default());
        let delta = i32::from_be_bytes(head[23..27].try_into().unwrap_or_default());
        out.push((
            LogBatch { base, last: base + i64::from(delta.max(0)), control: attributes & 0x20 != 0 },
            at..end,
        ));
        at = end;
    }
    out
}

/// Acquired offsets as `AcquiredRecords` ranges: runs of consecutive offsets with the same
/// delivery count, as (first, last, delivery count).
pub(crate) fn ranges(acquired: &[(i64, i16)]) -> Vec<(i64, i64, i16)> {
    let mut out: Vec<(i64, i64, i16)> = Vec::new();
    for &(offset, count) in acquired {
        match out.last_mut() {
            Some(last) if last.1 + 1 == offset && last.2 == count => last.1 = offset,
            _ => out.push((offset, offset, count)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn batch(base: i64, last: i64) -> LogBatch {
        LogBatch { base, last, control: false }
    }

    #[test]
    fn released_records_come_back_with_a_higher_count_and_archive_at_the_limit() {
        let now = Instant::now();
        let mut sp = SharePartition::new(0);
        let mut got = Vec::new();
        sp.acquire_batch(&batch(0, 2), "a", now, &mut got);
        assert_eq!(ranges(&got), [(0, 2, 1)]);
        let release = [AckBatch { first: 0, last: 0, types: &[2] }];
        sp.acknowledge("a", &release, 2, now).unwrap();
        // b cannot acknowledge what a holds.
        let accept = [AckBatch { first: 1, last: 1, types: &[1] }];
        assert_eq!(sp.acknowledge("b", &accept, 2, now), Err(ErrorCode::InvalidRecordState));
        got.clear();
        sp.acquire_batch(&batch(0, 2), "b", now, &mut got);
        assert_eq!(got, [(0, 2)]);
        // At the delivery limit a release archives it.
        sp.acknowledge("b", &release, 2, now).unwrap();
        assert_eq!(sp.start, 1);
        sp.acknowledge("a", &[AckBatch { first: 1, last: 2, types: &[1, 3] }], 2, now).unwrap();
        assert_eq!((sp.start, sp.end), (3, 3));
    }

    #[test]
    fn locks_expire() {
        let now = Instant::now();
        let mut sp = SharePartition::new(5);
        let mut got = Vec::new();
        sp.acquire_batch(&batch(3, 6), "a", now + Duration::from_secs(1), &mut got);
        assert_eq!(got, [(5, 1), (6, 1)]);
        assert!(!sp.release(None, now, 5));
        assert!(sp.release(None, now + Duration::from_secs(2), 5));
        assert_eq!(sp.state(5).unwrap().state, RecordState::Available);
        assert_eq!(sp.next_available(0), 5);
    }
}
