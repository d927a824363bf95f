//! Topics, records and offsets: the [`Client`] calls that create topics, produce, fetch and
//! list offsets, and what they give back.

use std::io::{self, Write};
use std::time::{Duration, Instant};
use std::vec::Vec;

use crate::ApiKey;

use crate::codec::messages::ResponseBodyView;
use crate::codec::records::reference::{OwnedHeader, OwnedRecord};
use crate::codec::records::{BatchBuilder, NewRecord, RecordBatches};

use super::error::{Error, check, missing, unexpected};
use super::{Client, now_ms};

/// A record read by [`Client::fetch`], owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its offset in the partition.
    pub offset: i64,
    /// Its timestamp (ms since the epoch; the append time under `LogAppendTime`).
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Vec<u8>>,
    /// The value; `None` is null.
    pub value: Option<Vec<u8>>,
    /// The headers, in order.
    pub headers: Vec<OwnedHeader>,
}

/// What [`Client::fetch`] read of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The records at or after the offset asked for, in order (control records, such as
    /// transaction markers, left out).
    pub records: Vec<Record>,
    /// The partition's high watermark.
    pub high_watermark: i64,
    /// The partition's last stable offset (-1 from brokers that do not say).
    pub last_stable_offset: i64,
    /// The partition's log start offset (-1 from brokers that do not say).
    pub log_start_offset: i64,
}

impl Fetched {
    /// The offset to fetch from next: after the last record, or the offset asked for when
    /// none came.
    pub fn next_offset(&self, asked: i64) -> i64 {
        self.records.last().map_or(asked, |r| r.offset + 1)
    }
}

/// Which offset [`Client::list_offset`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The first offset (the log start offset).
    Earliest,
    /// The offset after the last record (the high watermark).
    Latest,
    /// The first offset whose record has a timestamp at or after this one (ms).
    Timestamp(i64),
}

/// An offset [`Client::list_offset`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedOffset {
    /// The offset; -1 when no record has a timestamp at or after the one asked for.
    pub offset: i64,
    /// The record's timestamp for [`OffsetSpec::Timestamp`], else -1.
    pub timestamp: i64,
}

impl Client {
    /// Creates a topic of `partitions` partitions (the broker's default replication
    /// factor, no configs), then waits (up to [`Config::timeout`]) until Metadata names a
    /// leader for each partition, so that a produce right after it finds one. A topic that
    /// exists is an [`Error::Kafka`] of TOPIC_ALREADY_EXISTS.
    pub fn create_topic(&mut self, name: &str, partitions: i32) -> Result<(), Error> {
        self.create_topic_with(name, partitions, &[])
    }

    /// [`Client::create_topic`] with topic configs (`("cleanup.policy", "compact")`, ...).
    pub fn create_topic_with(
        &mut self,
        name: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> Result<(), Error> {
        use crate::codec::messages::create_topics::{
            CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
        };
        let key = ApiKey::CreateTopics;
        let v = self.version_of(key)?;
        let configs: Vec<CreatableTopicConfig<'_>> = configs
            .iter()
            .map(|&(name, value)| CreatableTopicConfig {
                name: name.into(),
                value: Some(value.into()),
                ..Default::default()
            })
            .collect();
        let topics = [CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            // -1 (the broker's default) from version 4.
            replication_factor: if v >= 4 { -1 } else { 1 },
            configs: configs.as_slice().into(),
            ..Default::default()
        }];
        let request = CreateTopicsRequest {
            topics: (&topics).into(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        self.call(&request, v, |r| {
            let ResponseBodyView::CreateTopics(body) = r else { return Err(unexpected(key)) };
            let t =
                body.topics().iter().find(|t| t.name() == name).ok_or_else(|| missing(key, name, None))?;
            check(key, t.error_code(), Some(name), None, None, t.error_message())
        })?;
        self.wait_for_leaders(name, partitions)
    }

    /// Asks Metadata about `topic` until every one of its `partitions` has a leader.
    fn wait_for_leaders(&mut self, topic: &str, partitions: i32) -> Result<(), Error> {
        use crate::codec::messages::metadata::{MetadataRequest, MetadataRequestTopic};
        let key = ApiKey::Metadata;
        let v = self.version_of(key)?;
        let deadline = Instant::now() + self.config.timeout;
        let topics = [MetadataRequestTopic { name: Some(topic.into()), ..Default::default() }];
        let request = MetadataRequest {
            topics: Some((&topics).into()),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        loop {
            let led = self.call(&request, v, |r| {
                let ResponseBodyView::Metadata(body) = r else { return Err(unexpected(key)) };
                let Some(t) = body.topics().iter().find(|t| t.name() == Some(topic)) else {
                    return Ok(false);
                };
                let led = t.partitions().iter().filter(|p| p.error_code() == 0 && p.leader_id() >= 0).count();
                Ok(t.error_code() == 0 && led >= usize::try_from(partitions).unwrap_or(0))
            })?;
            if led {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    std::format!("{topic}'s partitions have no leader yet"),
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Produces `records` to a partition as one batch (compressed with
    /// [`Config::compression`], timestamps now unless a record has its own), with
    /// [`Config::acks`]; returns the offset the broker gave the first record (-1 with
    /// acks 0, which gets no answer).
    pub fn produce(&mut self, topic: &str, partition: i32, records: &[NewRecord<'_>]) -> Result<i64, Error> {
        let mut builder = BatchBuilder::new(0, now_ms(), records);
        builder.compression = self.config.compression;
        let mut batch = Vec::new();
        builder.encode_to_vec(&mut batch)?;
        self.produce_batches(topic, partition, &batch)
    }

    /// Produces record batches already encoded (the `records` field of one Produce
    /// partition, sent as they are) with [`Config::acks`]; returns the base offset as
    /// [`Client::produce`] does.
    pub fn produce_batches(&mut self, topic: &str, partition: i32, batches: &[u8]) -> Result<i64, Error> {
        use crate::codec::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
        let key = ApiKey::Produce;
        let v = self.version_of(key)?;
        let data =
            [PartitionProduceData { index: partition, records: Some(batches.into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
        let request = ProduceRequest {
            acks: self.config.acks,
            timeout_ms: self.timeout_ms(),
            topic_data: (&topics).into(),
            ..Default::default()
        };
        if self.config.acks == 0 {
            self.out.clear();
            self.conn.encode_request(&request, v, (), &mut self.out)?;
            self.stream.write_all(&self.out)?;
            return Ok(-1);
        }
        self.call(&request, v, |r| {
            let ResponseBodyView::Produce(body) = r else { return Err(unexpected(key)) };
            let p = body
                .responses()
                .iter()
                .filter(|t| t.name() == topic)
                .flat_map(|t| t.partition_responses().iter())
                .find(|p| p.index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, p.error_message())?;
            Ok(p.base_offset())
        })
    }

    /// Fetches the records of a partition from `offset` (read_uncommitted, with the
    /// [`Config`]'s fetch sizes and wait): what one Fetch returns, decoded (decompressed
    /// too) and owned. Records before `offset` in the first batch are left out; an empty
    /// list means nothing at `offset` yet. An offset outside the log is an
    /// [`Error::Kafka`] of OFFSET_OUT_OF_RANGE.
    pub fn fetch(&mut self, topic: &str, partition: i32, offset: i64) -> Result<Fetched, Error> {
        use crate::codec::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
        let key = ApiKey::Fetch;
        let v = self.version_of(key)?;
        let parts = [FetchPartition {
            partition,
            fetch_offset: offset,
            partition_max_bytes: self.config.fetch_partition_max_bytes,
            ..Default::default()
        }];
        let topics = [FetchTopic { topic: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let wait = self.config.fetch_max_wait;
        let request = FetchRequest {
            max_wait_ms: i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
            min_bytes: 1,
            max_bytes: self.config.fetch_max_bytes,
            session_epoch: -1,
            topics: (&topics).into(),
            ..Default::default()
        };
        if !wait.is_zero() {
            self.stream.set_read_timeout(Some(self.config.timeout.saturating_add(wait)))?;
        }
        let limit = self.config.max_decompressed_bytes;
        let mut scratch = core::mem::take(&mut self.scratch);
        let result = self.call(&request, v, |r| {
            let ResponseBodyView::Fetch(body) = r else { return Err(unexpected(key)) };
            check(key, body.error_code(), Some(topic), Some(partition), None, None)?;
            let p = body
                .responses()
                .iter()
                .filter(|t| t.topic() == topic)
                .flat_map(|t| t.partitions().iter())
                .find(|p| p.partition_index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, None)?;
            let mut records = Vec::new();
            for batch in RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
                let batch = batch?;
                if batch.is_control() || batch.last_offset() < offset {
                    continue;
                }
                for r in batch.records_in_vec(&mut scratch, limit)? {
                    let r = r?;
                    if r.offset() < offset {
                        continue;
                    }
                    let r = OwnedRecord::from_view(&r);
                    records.push(Record {
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                        headers: r.headers,
                    });
                }
            }
            Ok(Fetched {
                records,
                high_watermark: p.high_watermark(),
                last_stable_offset: p.last_stable_offset(),
                log_start_offset: p.log_start_offset(),
            })
        });
        self.scratch = scratch;
        if !wait.is_zero() {
            self.stream.set_read_timeout(Some(self.config.timeout))?;
        }
        result
    }

    /// [`Client::fetch`] again from where each answer ended, until the records reach the
    /// high watermark (a Kafka broker's answer may stop before it) or an answer brings
    /// none: every record from `offset` to the end, with the last answer's offsets.
    pub fn fetch_to_end(&mut self, topic: &str, partition: i32, offset: i64) -> Result<Fetched, Error> {
        let mut all = self.fetch(topic, partition, offset)?;
        loop {
            let next = all.next_offset(offset);
            if next >= all.high_watermark {
                return Ok(all);
            }
            let more = self.fetch(topic, partition, next)?;
            let done = more.records.is_empty();
            all.records.extend(more.records);
            all.high_watermark = more.high_watermark;
            all.last_stable_offset = more.last_stable_offset;
            all.log_start_offset = more.log_start_offset;
            if done {
                return Ok(all);
            }
        }
    }

    /// ListOffsets of one partition (read_uncommitted): the earliest offset, the latest,
    /// or the first at or after a timestamp.
    pub fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<ListedOffset, Error> {
        use crate::codec::messages::list_offsets::{
            ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
        };
        let key = ApiKey::ListOffsets;
        let v = self.version_of(key)?;
        let timestamp = match spec {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t,
        };
        let parts = [ListOffsetsPartition { partition_index: partition, timestamp, ..Default::default() }];
        let topics =
            [ListOffsetsTopic { name: topic.into(), partitions: (&parts).into(), ..Default::default() }];
        let request = ListOffsetsRequest {
            replica_id: -1,
            topics: (&topics).into(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        self.call(&request, v, |r| {
            let ResponseBodyView::ListOffsets(body) = r else { return Err(unexpected(key)) };
            let p = body
                .topics()
                .iter()
                .filter(|t| t.name() == topic)
                .flat_map(|t| t.partitions().iter())
                .find(|p| p.partition_index() == partition)
                .ok_or_else(|| missing(key, topic, Some(partition)))?;
            check(key, p.error_code(), Some(topic), Some(partition), None, None)?;
            Ok(ListedOffset { offset: p.offset(), timestamp: p.timestamp() })
        })
    }
}
