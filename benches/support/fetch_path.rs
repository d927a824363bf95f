//! The broker's records path, shared by `benches/fetch_path.rs` (criterion) and
//! `benches/fetch_path_instructions.rs` (gungraun): a 1 MB Produce request of 1,000-record
//! batches (8 partitions, one batch each, as Produce v3+ requires) is validated with its
//! offsets assigned, kept as the log, and fetched back as one Fetch response.
//!
//! - [`kwire_path`]: `records::validate::validate_and_assign` in place on the request's own
//!   buffer (which becomes the log), then the Fetch response frame encoded around the log's
//!   bytes with `kwire::vectored::encode_response` into `IoSlice`s, as a broker hands them to
//!   `writev`. No record byte is copied.
//! - [`kafka_protocol_path`]: kafka-protocol 0.18 decodes the request and the same records
//!   (`RecordBatchDecoder`), assigns the offsets on its owned records and encodes them again
//!   (`RecordBatchEncoder`, the only way it has to change a batch), then encodes the Fetch
//!   response frame into one buffer.
//! - [`copy`]: the batches copied into one buffer, the floor of any broker that copies them.
//! - [`crc`]: CRC-32C of the same batches, which validation must compute at least once.
#![allow(dead_code)]

use std::io::IoSlice;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable};
use kafka_protocol::records::{RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions};
use kwire::frame::{RequestHeader, ResponseHeader};
use kwire::messages::RequestBodyView;
use kwire::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::records::Compression;
use kwire::records::validate::{ValidateConfig, validate_and_assign};
use kwire::vectored::{self, VectoredLen};
use kwire::{List, Uuid, dispatch};

pub const PARTITIONS: usize = 8;
pub const PRODUCE_VERSION: i16 = 13;
pub const FETCH_VERSION: i16 = 17;
pub const TOPIC_ID: [u8; 16] = *b"kwire-fetch-path";
/// The broker's clock: the records' create times are just before it.
pub const NOW_MS: i64 = 1_700_000_100_000;
/// Where the partitions' logs end before the request (offsets are assigned from here).
pub const LOG_END: i64 = 42_000;

/// The Produce request frame (size prefix, header, body) a client would send.
pub fn produce_frame() -> Vec<u8> {
    let batches = crate::batches::batches(PARTITIONS, Compression::None, |_| 0, NOW_MS - 100_000);
    let partitions: Vec<PartitionProduceData<'_>> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| PartitionProduceData {
            index: i as i32,
            records: Some(List::Borrowed(b)),
            ..Default::default()
        })
        .collect();
    let topics = [TopicProduceData {
        topic_id: Uuid(TOPIC_ID),
        partition_data: List::Borrowed(&partitions),
        ..Default::default()
    }];
    let body = ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: List::Borrowed(&topics),
        ..Default::default()
    };
    let header =
        RequestHeader { correlation_id: 7, client_id: Some("bench-producer"), unknown_tagged_fields: &[] };
    let n = dispatch::request_len(&body, PRODUCE_VERSION, &header).unwrap();
    let mut frame = vec![0u8; n];
    dispatch::encode_request_with(&body, PRODUCE_VERSION, &header, &mut frame).unwrap();
    frame
}

/// Where each batch starts in the request frame.
pub fn batch_starts(frame: &[u8]) -> Vec<usize> {
    let base = frame.as_ptr() as usize;
    batches(frame).iter().map(|b| b.as_ptr() as usize - base).collect()
}

/// Puts back what the producer sent in each batch's header (base offset 0, leader epoch
/// -1), which validation rewrote: the log buffer is validated again on every iteration, and
/// Kafka refuses a Produce batch whose base offset is not 0. 12 bytes a batch.
pub fn as_received(log: &mut [u8], starts: &[usize]) {
    for &at in starts {
        log[at..at + 8].copy_from_slice(&0i64.to_be_bytes());
        log[at + 12..at + 16].copy_from_slice(&(-1i32).to_be_bytes());
    }
}

/// What the kwire path keeps between calls: the scratch buffer validation wants (unused for
/// uncompressed batches), the buffer for the response's other bytes and the `IoSlice`s.
pub struct KwireScratch {
    pub scratch: Vec<u8>,
    pub head: Vec<u8>,
}

impl KwireScratch {
    pub fn new() -> Self {
        KwireScratch { scratch: vec![0u8; 1 << 20], head: vec![0u8; 4096] }
    }
}

/// Where validation left each partition's batch in the log: `(partition, start, end)`,
/// and the high watermark after it.
pub struct Assigned {
    pub ranges: [(i32, usize, usize); PARTITIONS],
    pub high_watermarks: [i64; PARTITIONS],
}

/// The kwire path on `log`, a Produce request frame that the broker keeps as its log:
/// [`kwire_validate`], then [`kwire_fetch`].
pub fn kwire_path<R>(
    log: &mut [u8],
    s: &mut KwireScratch,
    send: impl FnOnce(VectoredLen, &[IoSlice<'_>]) -> R,
) -> R {
    let assigned = kwire_validate(log, s);
    kwire_fetch(log, &assigned, &mut s.head, send)
}

/// Parses the Produce request in `log` and validates and assigns every partition's batch
/// in place: the request's buffer is the log.
pub fn kwire_validate(log: &mut [u8], s: &mut KwireScratch) -> Assigned {
    let mut ranges = [(0, 0, 0); PARTITIONS];
    {
        let request = dispatch::parse_request(&log[4..]).unwrap();
        let RequestBodyView::Produce(body) = request.body else { unreachable!("a Produce request") };
        let base = log.as_ptr() as usize;
        let mut i = 0;
        for t in body.topic_data() {
            for p in t.partition_data() {
                let r = p.records().unwrap().bytes();
                let start = r.as_ptr() as usize - base;
                ranges[i] = (p.index(), start, start + r.len());
                i += 1;
            }
        }
    }
    let mut high_watermarks = [0i64; PARTITIONS];
    for (i, &(_, start, end)) in ranges.iter().enumerate() {
        let config = ValidateConfig::new(LOG_END, NOW_MS);
        let v = validate_and_assign(&mut log[start..end], &config, &mut s.scratch).unwrap();
        high_watermarks[i] = v.last_offset + 1;
    }
    Assigned { ranges, high_watermarks }
}

/// Fetches the assigned batches back: one Fetch response frame encoded around the log's
/// bytes into `IoSlice`s (the other bytes into `head`), which `send` gets (a broker's
/// `writev`).
pub fn kwire_fetch<R>(
    log: &[u8],
    a: &Assigned,
    head: &mut [u8],
    send: impl FnOnce(VectoredLen, &[IoSlice<'_>]) -> R,
) -> R {
    let partitions: [PartitionData<'_>; PARTITIONS] = std::array::from_fn(|i| {
        let (index, start, end) = a.ranges[i];
        PartitionData {
            partition_index: index,
            high_watermark: a.high_watermarks[i],
            last_stable_offset: a.high_watermarks[i],
            log_start_offset: 0,
            records: Some(List::Borrowed(&log[start..end])),
            ..Default::default()
        }
    });
    let topics = [FetchableTopicResponse {
        topic_id: Uuid(TOPIC_ID),
        partitions: List::Borrowed(&partitions),
        ..Default::default()
    }];
    let body = FetchResponse { responses: List::Borrowed(&topics), session_id: 1, ..Default::default() };
    let header = ResponseHeader { correlation_id: 8, unknown_tagged_fields: &[] };
    let mut iov = [IoSlice::new(&[]); 2 * PARTITIONS + 1];
    let len = vectored::encode_response(&body, FETCH_VERSION, &header, head, &mut iov).unwrap();
    send(len, &iov[..len.parts])
}

/// The request as kafka-protocol reads it.
pub fn kafka_protocol_request(frame: &[u8]) -> Bytes {
    Bytes::copy_from_slice(frame)
}

/// The kafka-protocol path: decode the request and its records, assign the offsets, encode
/// the batches again (the log), then the Fetch response frame. Returns the response and the
/// bytes of the re-encoded batches.
pub fn kafka_protocol_path(frame: &Bytes) -> (BytesMut, usize) {
    let mut buf = frame.slice(4..);
    let header_version = kp::ApiKey::Produce.request_header_version(PRODUCE_VERSION);
    let _header = kp::RequestHeader::decode(&mut buf, header_version).unwrap();
    let request = kp::ProduceRequest::decode(&mut buf, PRODUCE_VERSION).unwrap();
    let options = RecordEncodeOptions { version: 2, compression: kafka_protocol::records::Compression::None };
    let mut topics = Vec::new();
    let mut batch_bytes = 0;
    for t in &request.topic_data {
        let mut partitions = Vec::new();
        for p in &t.partition_data {
            let mut records = p.records.clone().unwrap();
            let mut log = BytesMut::new();
            let mut high_watermark = LOG_END;
            for mut set in RecordBatchDecoder::decode_all(&mut records).unwrap() {
                for r in &mut set.records {
                    r.offset = high_watermark;
                    r.partition_leader_epoch = 0;
                    high_watermark += 1;
                }
                RecordBatchEncoder::encode(&mut log, &set.records, &options).unwrap();
            }
            batch_bytes += log.len();
            partitions.push(
                kp::fetch_response::PartitionData::default()
                    .with_partition_index(p.index)
                    .with_high_watermark(high_watermark)
                    .with_last_stable_offset(high_watermark)
                    .with_log_start_offset(0)
                    .with_records(Some(log.freeze())),
            );
        }
        topics.push(
            kp::fetch_response::FetchableTopicResponse::default()
                .with_topic_id(t.topic_id)
                .with_partitions(partitions),
        );
    }
    let response = kp::FetchResponse::default().with_session_id(1).with_responses(topics);
    let header = kp::ResponseHeader::default().with_correlation_id(8);
    let header_version = kp::ApiKey::Fetch.response_header_version(FETCH_VERSION);
    let size = header.compute_size(header_version).unwrap() + response.compute_size(FETCH_VERSION).unwrap();
    let mut out = BytesMut::with_capacity(4 + size);
    out.put_i32(size as i32);
    header.encode(&mut out, header_version).unwrap();
    response.encode(&mut out, FETCH_VERSION).unwrap();
    (out, batch_bytes)
}

/// The records fields of the request, copied out (the floor's and the CRC's input).
pub fn owned_batches() -> Vec<Vec<u8>> {
    batches(&produce_frame()).iter().map(|b| b.to_vec()).collect()
}

/// The records fields of the request, in order.
pub fn batches(frame: &[u8]) -> Vec<&[u8]> {
    let request = dispatch::parse_request(&frame[4..]).unwrap();
    let RequestBodyView::Produce(body) = request.body else { unreachable!("a Produce request") };
    body.topic_data()
        .into_iter()
        .flat_map(|t| t.partition_data())
        .map(|p| p.records().unwrap().bytes())
        .collect()
}

/// The floor: every batch copied into `dst`.
pub fn copy<B: AsRef<[u8]>>(batches: &[B], dst: &mut [u8]) -> usize {
    let mut at = 0;
    for b in batches {
        let b = b.as_ref();
        dst[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    }
    at
}

/// CRC-32C of every batch.
pub fn crc<B: AsRef<[u8]>>(batches: &[B]) -> u32 {
    batches.iter().fold(0, |acc, b| acc ^ kwire::records::crc::crc32c(b.as_ref()))
}
