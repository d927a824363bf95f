//! `Broker::throttle` (an API's responses carry `throttle_time_ms`) and `Fault::records`
//! (a Produce batch rejected with per-record errors), over raw frames.
#![cfg(feature = "broker")]

#[path = "common/raw.rs"]
mod raw;

use std::time::Duration;

use kwire::broker::{Broker, Config, Fault};
use kwire::records::{BatchBuilder, NewRecord};
use kwire::{ApiKey, ErrorCode};
use raw::{Conn, answer};

fn batch(values: &[&str]) -> Vec<u8> {
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v.as_bytes()), headers: &[], timestamp: None })
        .collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut out).unwrap();
    out
}

/// Produce of one batch to t/0 at `v`: (throttle, error, record errors, message).
fn produce(c: &mut Conn, v: i16, values: &[&str]) -> (i32, i16, Vec<(i32, String)>, Option<String>) {
    use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
    let b = batch(values);
    let data = [PartitionProduceData { index: 0, records: Some(b.as_slice().into()), ..Default::default() }];
    let topics =
        [TopicProduceData { name: "t".into(), partition_data: (&data).into(), ..Default::default() }];
    let req =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    let frame = c.call(&req, v);
    let r = answer!(frame, Produce, v);
    let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
    (
        r.throttle_time_ms(),
        p.error_code(),
        p.record_errors()
            .iter()
            .map(|e| (e.batch_index(), e.batch_index_error_message().unwrap_or_default().to_string()))
            .collect(),
        p.error_message().map(Into::into),
    )
}

/// Fetch v12 of t/0 from 0: (throttle, the values returned).
fn fetch(c: &mut Conn) -> (i32, Vec<String>) {
    use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
    let parts = [FetchPartition {
        partition: 0,
        fetch_offset: 0,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    }];
    let topics = [FetchTopic { topic: "t".into(), partitions: (&parts).into(), ..Default::default() }];
    let req = FetchRequest {
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let frame = c.call(&req, 12);
    let r = answer!(frame, Fetch, 12);
    let p = r.responses().iter().next().unwrap().partitions().iter().next().unwrap();
    let mut values = Vec::new();
    let mut scratch = Vec::new();
    for b in kwire::records::RecordBatches::new(p.records().map(|r| r.bytes()).unwrap_or_default()) {
        for rec in b.unwrap().records_in_vec(&mut scratch, 1 << 24).unwrap() {
            values.push(String::from_utf8(rec.unwrap().value().unwrap().to_vec()).unwrap());
        }
    }
    (r.throttle_time_ms(), values)
}

#[test]
fn throttled_responses_carry_throttle_time_ms() {
    use kwire::messages::api_versions::ApiVersionsRequest;
    use kwire::messages::metadata::MetadataRequest;
    let broker = Broker::start(Config::default()).unwrap();
    broker.create_topic("t", 1);
    let mut c = Conn::open(broker.addr());
    // Nothing set: 0.
    assert_eq!(produce(&mut c, 9, &["a"]).0, 0);

    let p = broker.throttle(ApiKey::Produce, Duration::from_millis(1500));
    let f = broker.throttle(ApiKey::Fetch, Duration::from_millis(250));
    let m = broker.throttle(ApiKey::Metadata, Duration::from_secs(2));
    let a = broker.throttle(ApiKey::ApiVersions, Duration::from_millis(7));
    // Produce has the field last (v1+), after its partitions.
    let (throttle, code, _, _) = produce(&mut c, 9, &["b", "c"]);
    assert_eq!((throttle, code), (1500, 0));
    assert_eq!(produce(&mut c, 3, &["d"]).0, 1500);
    // Fetch has it first, and its records (spliced from the log) are intact.
    assert_eq!(fetch(&mut c), (250, vec!["a".into(), "b".into(), "c".into(), "d".into()]));
    // Metadata: first from v3; v0 has no such field and is unchanged.
    let frame = c.call(&MetadataRequest { topics: None, ..Default::default() }, 12);
    let r = answer!(frame, Metadata, 12);
    assert_eq!(r.throttle_time_ms(), 2000);
    assert_eq!(r.topics().iter().next().unwrap().name(), Some("t"));
    let frame = c.call(&MetadataRequest { topics: Some(Vec::new().into()), ..Default::default() }, 0);
    assert_eq!(answer!(frame, Metadata, 0).brokers().len(), 1);
    // ApiVersions: after the API list.
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    let r = answer!(frame, ApiVersions, 3);
    assert_eq!((r.error_code(), r.throttle_time_ms()), (0, 7));
    assert!(r.api_keys().len() > 10);

    assert_eq!(broker.hook_fired(p), Some(2));
    assert_eq!(broker.hook_fired(f), Some(1));
    assert_eq!(broker.hook_fired(m), Some(2));
    assert_eq!(broker.hook_fired(a), Some(1));
    assert!(broker.remove_hook(p));
    assert!(!broker.remove_hook(p));
    assert_eq!(broker.hook_fired(p), None);
    assert_eq!(produce(&mut c, 9, &["e"]).0, 0);
}

#[test]
fn per_record_produce_errors() {
    let broker = Broker::start(Config::default()).unwrap();
    broker.create_topic("t", 2);
    let mut c = Conn::open(broker.addr());
    let fault = broker.add_fault(Fault::records("t", 0, &[0, 2]).times(2));
    let (_, code, records, message) = produce(&mut c, 9, &["x", "y", "z"]);
    assert_eq!(code, ErrorCode::InvalidRecord.to_i16());
    assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 2]);
    assert!(records.iter().all(|r| !r.1.is_empty()));
    assert!(message.unwrap().contains("2 record errors"));
    assert_eq!(broker.end_offset("t", 0), Some(0), "nothing appended");
    // Before v8 the answer has no record errors: the code only.
    let (_, code, records, _) = produce(&mut c, 7, &["x"]);
    assert_eq!((code, records.len()), (ErrorCode::InvalidRecord.to_i16(), 0));
    // Used up: the next batch goes in.
    let (_, code, records, _) = produce(&mut c, 9, &["x", "y", "z"]);
    assert_eq!((code, records.len()), (0, 0));
    assert_eq!(broker.end_offset("t", 0), Some(3));
    assert_eq!(broker.hook_fired(fault), Some(2));
}
