//! `kwire::broker` answers a Fetch without copying record bytes: the batches go from the
//! log's segments to the socket with `writev`. Measured with a counting allocator over
//! every thread (the broker's too), so this file holds this one test alone.
#![cfg(feature = "broker")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::dispatch;
use kwire::encode::AnyBody;
use kwire::frame::RequestHeader;
use kwire::messages::ResponseBodyView;
use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kwire::records::{BatchBuilder, NewRecord, RecordBatches};

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

fn request(body: &impl AnyBody, version: i16, correlation_id: i32) -> Vec<u8> {
    let header = RequestHeader { correlation_id, client_id: Some("zero-copy"), unknown_tagged_fields: &[] };
    let mut buf = vec![0u8; dispatch::request_len(body, version, &header).unwrap()];
    dispatch::encode_request_with(body, version, &header, &mut buf).unwrap();
    buf
}

/// Reads one response frame (after its size prefix) into `frame`, which has room for it.
fn read_response(s: &mut TcpStream, frame: &mut Vec<u8>) {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let size = i32::from_be_bytes(size) as usize;
    assert!(size <= frame.capacity(), "a {size}-byte response");
    frame.resize(size, 0);
    s.read_exact(frame).unwrap();
}

#[test]
fn a_fetch_sends_the_logs_batches_without_copying_them() {
    const BATCHES: usize = 3;
    const VALUE: usize = 1000;
    const PER_BATCH: usize = 900; // about 0.9 MB a batch, under max.message.bytes
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("big", 1));
    let mut s = TcpStream::connect(broker.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut frame = Vec::with_capacity(8 << 20);

    let values: Vec<Vec<u8>> = (0..PER_BATCH).map(|i| vec![b'a' + (i % 26) as u8; VALUE]).collect();
    let records: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v), headers: &[], timestamp: None })
        .collect();
    let mut batch = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut batch).unwrap();
    for i in 0..BATCHES {
        let data =
            [PartitionProduceData { index: 0, records: Some(batch.as_slice().into()), ..Default::default() }];
        let topics =
            [TopicProduceData { name: "big".into(), partition_data: (&data).into(), ..Default::default() }];
        let req =
            ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
        s.write_all(&request(&req, 9, i as i32)).unwrap();
        read_response(&mut s, &mut frame);
    }
    assert_eq!(broker.end_offset("big", 0), Some((BATCHES * PER_BATCH) as i64));
    let log_bytes = broker.log_bytes("big", 0).unwrap();
    assert_eq!(log_bytes, BATCHES * batch.len());

    let parts = [FetchPartition {
        partition: 0,
        fetch_offset: 0,
        partition_max_bytes: 8 << 20,
        ..Default::default()
    }];
    let topics = [FetchTopic { topic: "big".into(), partitions: (&parts).into(), ..Default::default() }];
    let fetch = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: (&topics).into(),
        ..Default::default()
    };
    let fetch = request(&fetch, 12, 100);
    let (allocated, ()) = common::counting::bytes_allocated(|| {
        s.write_all(&fetch).unwrap();
        read_response(&mut s, &mut frame);
    });

    // Every batch came back, as stored.
    let ResponseBodyView::Fetch(r) = dispatch::parse_response(&frame, ApiKey::Fetch, 12).unwrap().body else {
        panic!("not a Fetch response")
    };
    let p = r.responses().iter().next().unwrap().partitions().iter().next().unwrap();
    let records = p.records().map(|r| r.bytes()).unwrap_or_default();
    assert_eq!(records.len(), log_bytes);
    let mut offsets = 0;
    for b in RecordBatches::new(records) {
        let b = b.expect("a batch as stored");
        b.verify_crc().expect("its CRC");
        offsets += b.records_count();
    }
    assert_eq!(offsets as usize, BATCHES * PER_BATCH);
    // The broker (and this test's read) allocated a small fraction of the record bytes it
    // sent: they were written from the log, not copied into a response buffer (before,
    // a Fetch copied them twice, 2.7 MB each here).
    assert!(
        allocated < log_bytes / 20,
        "answering a Fetch of {log_bytes} record bytes allocated {allocated} bytes"
    );
    eprintln!("a Fetch of {log_bytes} record bytes: {allocated} bytes allocated");
}
