//! What a test reads and writes of a broker directly, without a client: its topics, logs
//! and committed offsets.

use std::time::Duration;
use std::vec::Vec;

use super::Broker;
use crate::ApiKey;

impl Broker {
    /// The host and port it advertises to clients (node 0's).
    pub fn advertised(&self) -> (&str, i32) {
        (&self.shared.host, self.shared.port)
    }

    /// The versions of `key` it serves, or `None` for an API it does not serve.
    pub fn versions(&self, key: ApiKey) -> Option<crate::codec::types::Versions> {
        self.shared.versions(key)
    }

    /// Creates a topic as CreateTopics would (no configs); `false` if it exists or the name
    /// or count is invalid.
    pub fn create_topic(&self, name: &str, partitions: i32) -> bool {
        self.shared.topics.create(&self.shared, name, partitions, Vec::new()).is_ok()
    }

    /// The offset after the last record of a partition (its high watermark), if it exists.
    pub fn end_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.next_offset())
    }

    /// The first offset of a partition a read may ask for (0 until DeleteRecords moves it),
    /// if it exists.
    pub fn log_start_offset(&self, topic: &str, partition: i32) -> Option<i64> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.log_start_offset())
    }

    /// Appends `records` to a partition without a client, as one uncompressed batch a
    /// Produce would carry (timestamps now unless a record has its own), validated as
    /// Produce validates it (the topic's configs apply); returns the offset of the first
    /// record. Fetch long-polls waiting on the partition wake up. An unknown topic or
    /// partition is UNKNOWN_TOPIC_OR_PARTITION; a batch the log refuses gets the error
    /// code a Produce would (e.g. INVALID_TIMESTAMP, RECORD_TOO_LARGE).
    ///
    /// ```
    /// use kwire::broker::{Broker, Config};
    /// use kwire::records::NewRecord;
    ///
    /// let broker = Broker::start(Config::default())?;
    /// broker.create_topic("orders", 1);
    /// let records = [NewRecord::new(Some(b"k1"), Some(b"one")), NewRecord::new(None, Some(b"two"))];
    /// assert_eq!(broker.append("orders", 0, &records), Ok(0));
    /// assert_eq!(broker.end_offset("orders", 0), Some(2));
    /// let read = broker.records("orders", 0).unwrap();
    /// assert_eq!((read[1].offset, read[1].value.as_deref()), (1, Some(&b"two"[..])));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append(
        &self,
        topic: &str,
        partition: i32,
        records: &[crate::codec::records::NewRecord<'_>],
    ) -> Result<i64, crate::ErrorCode> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut batch = Vec::new();
        crate::codec::records::BatchBuilder::new(0, now_ms, records)
            .encode_to_vec(&mut batch)
            .map_err(|_| crate::ErrorCode::InvalidRecord)?;
        let version = ApiKey::Produce.request_versions().max;
        let config = &self.shared.config;
        let (p, settings) = self
            .shared
            .topics
            .partition_with_settings(topic, partition, version, now_ms, config.max_message_bytes)
            .ok_or(crate::ErrorCode::UnknownTopicOrPartition)?;
        let appended = p
            .lock()
            .append(&batch, &settings, &mut Vec::new(), config.max_decompressed_bytes, &mut Vec::new())
            .map_err(|r| r.code)?;
        self.shared.appended();
        Ok(appended.base_offset)
    }

    /// The records of a partition from its log start offset to its end, decoded (compressed
    /// batches too) and owned, control records (transaction markers) left out and records
    /// of aborted transactions kept (as a read_uncommitted consumer sees them); `None` for
    /// an unknown partition.
    pub fn records(
        &self,
        topic: &str,
        partition: i32,
    ) -> Option<Vec<crate::codec::records::reference::OwnedRecord>> {
        use crate::codec::records::RecordBatch;
        use crate::codec::records::reference::OwnedRecord;
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        let start = log.log_start_offset();
        let limit = self.shared.config.max_decompressed_bytes;
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        for bytes in log.batches() {
            // The log holds only batches validated on the way in.
            let Ok(batch) = RecordBatch::new(bytes) else { continue };
            if batch.is_control() || batch.last_offset() < start {
                continue;
            }
            let Ok(records) = batch.records_in_vec(&mut scratch, limit) else { continue };
            out.extend(records.flatten().filter(|r| r.offset() >= start).map(|r| OwnedRecord::from_view(&r)));
        }
        Some(out)
    }

    /// The offset a group has committed for a partition (by OffsetCommit or a
    /// transaction's TxnOffsetCommit), if any.
    pub fn committed_offset(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.shared.groups.committed(group, topic, partition)
    }

    /// Waits until a group has committed an offset of at least `at_least` for a partition
    /// (0 for any commit), and returns it; `None` after `timeout` or when the broker stops.
    /// Every commit wakes it: it does not poll.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kwire::broker::{Broker, Config};
    ///
    /// let broker = Broker::start(Config::default())?;
    /// // Nothing committed: the wait ends at its timeout.
    /// assert_eq!(broker.wait_for_commit("billing", "orders", 0, 0, Duration::from_millis(50)), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait_for_commit(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
        at_least: i64,
        timeout: Duration,
    ) -> Option<i64> {
        let deadline = std::time::Instant::now() + timeout;
        self.shared
            .groups
            .wait_for_offset(group, (topic, partition), at_least, deadline, || self.shared.stopping())
    }

    /// Fetch sessions (KIP-227) open now.
    pub fn fetch_sessions(&self) -> usize {
        self.shared.fetch_sessions.len()
    }

    /// The bytes a partition's log holds (its record batches, as fetched).
    pub fn log_bytes(&self, topic: &str, partition: i32) -> Option<usize> {
        let p = self.shared.topics.partition(topic, partition)?;
        let log = p.lock();
        Some(log.len_bytes())
    }
}
