//! `kwire::client` against `kwire::broker` in-process: create topics, produce, fetch, list
//! offsets, commit and fetch group offsets, compressed batches, the versions chosen, Kafka's
//! errors with their context, the bounds (frame size, timeouts); and the broker's own
//! conveniences for tests (append, records, committed offsets and waiting for them).
//! `tests/proxy.rs` has the same client against a real Kafka broker (feature `interop`).
#![cfg(all(feature = "client", feature = "broker"))]

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use kwire::broker::{Broker, Config as BrokerConfig};
use kwire::client::{Client, Config, Error, OffsetSpec};
use kwire::records::reference::OwnedHeader;
use kwire::records::{Compression, NewHeader, NewRecord};
use kwire::{ApiKey, ErrorCode};

fn broker() -> Broker {
    Broker::start(BrokerConfig::default()).unwrap()
}

fn values(records: &[kwire::client::Record]) -> Vec<String> {
    records.iter().map(|r| String::from_utf8(r.value.clone().unwrap()).unwrap()).collect()
}

#[test]
fn produce_fetch_list_offsets_and_commit() {
    let b = broker();
    let mut c = Client::connect(b.addr()).unwrap();
    c.create_topic("orders", 2).unwrap();
    let headers =
        [NewHeader { key: b"trace", value: Some(b"t-1") }, NewHeader { key: b"empty", value: None }];
    let records = [
        NewRecord::new(Some(b"k0"), Some(b"order-0"))
            .with_headers(&headers)
            .with_timestamp(1_700_000_000_000),
        NewRecord::new(None, Some(b"order-1")).with_timestamp(1_700_000_001_000),
        NewRecord::new(Some(b"k2"), None).with_timestamp(1_700_000_002_000),
    ];
    assert_eq!(c.produce("orders", 1, &records).unwrap(), 0);
    assert_eq!(c.produce("orders", 1, &[NewRecord::new(None, Some(b"order-3"))]).unwrap(), 3);
    assert_eq!(b.end_offset("orders", 1), Some(4));
    assert_eq!(b.end_offset("orders", 0), Some(0));

    let f = c.fetch("orders", 1, 0).unwrap();
    assert_eq!(f.high_watermark, 4);
    assert_eq!(f.records.len(), 4);
    let r0 = &f.records[0];
    assert_eq!((r0.offset, r0.timestamp, r0.key.as_deref()), (0, 1_700_000_000_000, Some(&b"k0"[..])));
    assert_eq!(
        r0.headers,
        [
            OwnedHeader { key: b"trace".to_vec(), value: Some(b"t-1".to_vec()) },
            OwnedHeader { key: b"empty".to_vec(), value: None }
        ]
    );
    assert_eq!((f.records[1].key.as_deref(), f.records[2].value.as_deref()), (None, None));
    assert_eq!(f.records.iter().map(|r| r.offset).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(f.next_offset(0), 4);
    // From inside the first batch: the records before the offset are left out.
    let f = c.fetch("orders", 1, 2).unwrap();
    assert_eq!(f.records.iter().map(|r| r.offset).collect::<Vec<_>>(), [2, 3]);
    // At the end: nothing yet, no error.
    let f = c.fetch("orders", 1, 4).unwrap();
    assert!(f.records.is_empty());
    assert_eq!(f.next_offset(4), 4);

    assert_eq!(c.list_offset("orders", 1, OffsetSpec::Earliest).unwrap().offset, 0);
    assert_eq!(c.list_offset("orders", 1, OffsetSpec::Latest).unwrap().offset, 4);
    let at = c.list_offset("orders", 1, OffsetSpec::Timestamp(1_700_000_000_500)).unwrap();
    assert_eq!((at.offset, at.timestamp), (1, 1_700_000_001_000));
    let none = c.list_offset("orders", 1, OffsetSpec::Timestamp(i64::MAX - 1)).unwrap();
    assert_eq!(none.offset, -1);

    assert_eq!(c.committed_offset("billing", "orders", 1).unwrap(), None);
    c.commit_offset("billing", "orders", 1, 3).unwrap();
    assert_eq!(c.committed_offset("billing", "orders", 1).unwrap(), Some(3));
    assert_eq!(c.committed_offset("billing", "orders", 0).unwrap(), None);
    assert_eq!(b.committed_offset("billing", "orders", 1), Some(3));
    assert_eq!(b.committed_offset("billing", "orders", 0), None);
}

#[test]
fn versions_are_the_highest_both_sides_speak() {
    let b = broker();
    let c = Client::connect(b.addr()).unwrap();
    // The broker serves every version kwire has; the client names topics by name.
    assert_eq!(c.version(ApiKey::Produce), Some(12));
    assert_eq!(c.version(ApiKey::Fetch), Some(12));
    assert_eq!(c.version(ApiKey::OffsetCommit), Some(9));
    assert_eq!(c.version(ApiKey::ListOffsets), b.versions(ApiKey::ListOffsets).map(|v| v.max));
    assert_eq!(c.conn().negotiated(ApiKey::Fetch), b.versions(ApiKey::Fetch).map(|v| v.max));
    drop(c);

    // An older broker: the client follows it down, and still works.
    let limits =
        vec![(ApiKey::Fetch, 4), (ApiKey::Produce, 3), (ApiKey::ListOffsets, 1), (ApiKey::OffsetFetch, 1)];
    let b = Broker::start(BrokerConfig { max_versions: limits, ..BrokerConfig::default() }).unwrap();
    let mut c = Client::connect(b.addr()).unwrap();
    assert_eq!(
        [ApiKey::Fetch, ApiKey::Produce, ApiKey::ListOffsets, ApiKey::OffsetFetch].map(|k| c.version(k)),
        [Some(4), Some(3), Some(1), Some(1)]
    );
    c.create_topic("t", 1).unwrap();
    assert_eq!(c.produce("t", 0, &[NewRecord::new(None, Some(b"v"))]).unwrap(), 0);
    assert_eq!(values(&c.fetch("t", 0, 0).unwrap().records), ["v"]);
    assert_eq!(c.list_offset("t", 0, OffsetSpec::Latest).unwrap().offset, 1);
    c.commit_offset("g", "t", 0, 1).unwrap();
    assert_eq!(c.committed_offset("g", "t", 0).unwrap(), Some(1));

    // No shared version: a peer that lists Produce 0 to 2 only (kwire speaks 3 and up) and
    // no CreateTopics. Nothing is sent for them.
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = fake.local_addr().unwrap();
    let server = thread::spawn(move || {
        use kwire::conn::{Received, ServerConn};
        use kwire::messages::api_versions::{ApiVersion, ApiVersionsResponse};
        use std::io::{Read, Write};
        let (mut s, _) = fake.accept().unwrap();
        let mut conn = ServerConn::new();
        let mut buf = [0u8; 4096];
        let mut served = 0;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                return served;
            }
            conn.feed(&buf[..n]);
            while let Some(Received::Request(r)) = conn.next_request().unwrap() {
                let keys = [
                    ApiVersion { api_key: 18, min_version: 0, max_version: 4, ..Default::default() },
                    ApiVersion { api_key: 0, min_version: 0, max_version: 2, ..Default::default() },
                ];
                let body = ApiVersionsResponse { api_keys: (&keys).into(), ..Default::default() };
                let mut out = Vec::new();
                ServerConn::encode_response(r.reply_to(), &body, &mut out).unwrap();
                s.write_all(&out).unwrap();
                served += 1;
            }
        }
    });
    let mut c = Client::connect(addr).unwrap();
    assert_eq!((c.version(ApiKey::Produce), c.version(ApiKey::CreateTopics)), (None, None));
    let e = c.produce("t", 0, &[NewRecord::new(None, Some(b"v"))]).unwrap_err();
    assert!(matches!(e, Error::NoSharedVersion(ApiKey::Produce)), "{e}");
    let e = c.create_topic("t", 1).unwrap_err();
    assert!(matches!(e, Error::NoSharedVersion(ApiKey::CreateTopics)), "{e}");
    drop(c);
    assert_eq!(server.join().unwrap(), 1, "only the ApiVersions request was sent");
}

#[test]
fn compressed_batches_with_every_codec_on() {
    let b = broker();
    let mut codecs = vec![Compression::None];
    #[cfg(feature = "gzip")]
    codecs.push(Compression::Gzip);
    #[cfg(feature = "snappy")]
    codecs.push(Compression::Snappy);
    #[cfg(feature = "lz4")]
    codecs.push(Compression::Lz4);
    #[cfg(feature = "zstd")]
    codecs.push(Compression::Zstd);
    assert_eq!(codecs.len(), 5, "the dev-dependency turns every codec on");
    let value = vec![b'x'; 2000];
    let records: Vec<NewRecord<'_>> = (0..50).map(|_| NewRecord::new(None, Some(&value))).collect();
    let mut sizes = Vec::new();
    for (i, &codec) in codecs.iter().enumerate() {
        let topic = format!("t{i}");
        let mut c =
            Client::connect_with(b.addr(), Config { compression: codec, ..Config::default() }).unwrap();
        c.create_topic(&topic, 1).unwrap();
        assert_eq!(c.produce(&topic, 0, &records).unwrap(), 0);
        let f = c.fetch(&topic, 0, 0).unwrap();
        assert_eq!(f.records.len(), 50, "{codec:?}");
        assert!(f.records.iter().all(|r| r.value.as_deref() == Some(&value[..])), "{codec:?}");
        assert_eq!(b.records(&topic, 0).unwrap().len(), 50);
        sizes.push(b.log_bytes(&topic, 0).unwrap());
    }
    // The broker keeps the batches as sent: each codec's is far smaller than the plain one.
    for (codec, size) in codecs.iter().zip(&sizes).skip(1) {
        assert!(*size * 10 < sizes[0], "{codec:?}: {size} bytes against {} uncompressed", sizes[0]);
    }
}

#[test]
fn kafka_errors_carry_their_code_and_context() {
    let b = broker();
    let mut c = Client::connect(b.addr()).unwrap();
    c.create_topic("t", 1).unwrap();
    c.produce("t", 0, &[NewRecord::new(None, Some(b"v"))]).unwrap();

    let e = c.create_topic("t", 1).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::TopicAlreadyExists), "{e}");
    let e = c.produce("nope", 0, &[NewRecord::new(None, Some(b"v"))]).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::UnknownTopicOrPartition));
    let Error::Kafka { api, topic, partition, .. } = &e else { panic!("{e:?}") };
    assert_eq!((*api, topic.as_deref(), *partition), (ApiKey::Produce, Some("nope"), Some(0)));
    // Kafka's Produce answer carries no message for this error (only for invalid records).
    assert_eq!(e.to_string(), "Produce of nope/0: UNKNOWN_TOPIC_OR_PARTITION (3)");
    let e = c.produce("t", 5, &[NewRecord::new(None, Some(b"v"))]).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::UnknownTopicOrPartition));
    let e = c.fetch("t", 0, 9).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::OffsetOutOfRange), "{e}");
    assert!(e.to_string().starts_with("Fetch of t/0: OFFSET_OUT_OF_RANGE (1)"), "{e}");
    let e = c.list_offset("nope", 0, OffsetSpec::Latest).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::UnknownTopicOrPartition));
    let e = c.commit_offset("", "t", 0, 1).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::InvalidGroupId), "{e}");
    let e = c.create_topic("bad name", 1).unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::InvalidTopicException), "{e}");
    // Errors leave the connection usable.
    assert_eq!(values(&c.fetch("t", 0, 0).unwrap().records), ["v"]);
}

#[test]
fn frames_and_waits_are_bounded() {
    let b = broker();
    let mut c = Client::connect(b.addr()).unwrap();
    c.create_topic("t", 1).unwrap();
    c.produce("t", 0, &[NewRecord::new(None, Some(&[7u8; 8000]))]).unwrap();
    // A response frame over the limit is an error, not an allocation.
    let small = Config { max_frame_bytes: 4096, ..Config::default() };
    let mut c = Client::connect_with(b.addr(), small).unwrap();
    let e = c.fetch("t", 0, 0).unwrap_err();
    assert!(matches!(e, Error::Conn(_)), "{e:?}");
    assert!(e.to_string().contains("protocol"), "{e}");

    // A peer that accepts but never answers: the connect's ApiVersions times out.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let e = Client::connect_with(
        silent.local_addr().unwrap(),
        Config { timeout: Duration::from_millis(300), ..Config::default() },
    )
    .unwrap_err();
    let Error::Io(io) = &e else { panic!("{e:?}") };
    assert!(matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "{io:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
    // A peer that closes at once.
    let closing = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closing.local_addr().unwrap();
    let t = thread::spawn(move || drop(closing.accept()));
    let e = Client::connect(addr).unwrap_err();
    t.join().unwrap();
    assert!(
        matches!(&e, Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof || io.kind() == std::io::ErrorKind::ConnectionReset),
        "{e:?}"
    );
}

#[test]
fn acks_zero_gets_no_answer() {
    let b = broker();
    let mut c = Client::connect_with(b.addr(), Config { acks: 0, ..Config::default() }).unwrap();
    c.create_topic("t", 1).unwrap();
    assert_eq!(c.produce("t", 0, &[NewRecord::new(None, Some(b"a"))]).unwrap(), -1);
    assert_eq!(c.produce("t", 0, &[NewRecord::new(None, Some(b"b"))]).unwrap(), -1);
    // The next answer on the connection is the ListOffsets one.
    assert_eq!(c.list_offset("t", 0, OffsetSpec::Latest).unwrap().offset, 2);
}

#[test]
fn the_broker_appends_and_reads_its_logs_and_waits_for_commits() {
    let b = broker();
    assert!(b.create_topic("t", 2));
    let rs = [NewRecord::new(Some(b"k"), Some(b"one")), NewRecord::new(None, Some(b"two"))];
    assert_eq!(b.append("t", 1, &rs), Ok(0));
    assert_eq!(b.append("t", 1, &rs[..1]), Ok(2));
    assert_eq!(b.append("t", 2, &rs), Err(ErrorCode::UnknownTopicOrPartition));
    assert_eq!(b.append("nope", 0, &rs), Err(ErrorCode::UnknownTopicOrPartition));
    // Validated as a Produce is: a timestamp two hours ahead is INVALID_TIMESTAMP.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let ahead = [NewRecord::new(None, Some(b"late")).with_timestamp(now + 7_200_000)];
    assert_eq!(b.append("t", 1, &ahead), Err(ErrorCode::InvalidTimestamp));
    assert_eq!(b.end_offset("t", 1), Some(3));
    let read = b.records("t", 1).unwrap();
    assert_eq!(
        read.iter().map(|r| (r.offset, r.value.clone().unwrap())).collect::<Vec<_>>(),
        [(0, b"one".to_vec()), (1, b"two".to_vec()), (2, b"one".to_vec())]
    );
    assert_eq!(read[0].key.as_deref(), Some(&b"k"[..]));
    assert!(b.records("t", 0).unwrap().is_empty());
    assert!(b.records("t", 2).is_none());

    // A client sees what was appended; a waiting fetch wakes at the next append.
    let mut c = Client::connect(b.addr()).unwrap();
    assert_eq!(values(&c.fetch("t", 1, 0).unwrap().records), ["one", "two", "one"]);
    let mut waiting = Client::connect_with(
        b.addr(),
        Config { fetch_max_wait: Duration::from_secs(20), ..Config::default() },
    )
    .unwrap();
    let start = Instant::now();
    let fetcher = thread::spawn(move || waiting.fetch("t", 1, 3).unwrap());
    thread::sleep(Duration::from_millis(200));
    assert_eq!(b.append("t", 1, &[NewRecord::new(None, Some(b"later"))]), Ok(3));
    assert_eq!(values(&fetcher.join().unwrap().records), ["later"]);
    assert!(start.elapsed() < Duration::from_secs(10), "the append did not end the wait");

    // Waiting for a commit: nothing yet, then a commit from another thread ends the wait.
    assert_eq!(b.wait_for_commit("g", "t", 1, 0, Duration::from_millis(100)), None);
    let addr = b.addr();
    let committer = thread::spawn(move || {
        let mut c = Client::connect(addr).unwrap();
        thread::sleep(Duration::from_millis(200));
        c.commit_offset("g", "t", 1, 2).unwrap();
        thread::sleep(Duration::from_millis(200));
        c.commit_offset("g", "t", 1, 4).unwrap();
    });
    let start = Instant::now();
    assert_eq!(b.wait_for_commit("g", "t", 1, 3, Duration::from_secs(20)), Some(4));
    assert!(start.elapsed() < Duration::from_secs(10));
    committer.join().unwrap();
    assert_eq!(b.wait_for_commit("g", "t", 1, 0, Duration::ZERO), Some(4));
    assert_eq!(b.committed_offset("g", "t", 1), Some(4));
}
