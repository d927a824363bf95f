//! Fetch sessions (KIP-227) on `kwire::broker`, over raw frames (hermetic): a full Fetch
//! opens a session, incremental ones add, update and forget partitions and are answered
//! with only the partitions that have something new; unknown sessions and wrong epochs get
//! Kafka's errors, epoch -1 closes a session, and the cache is bounded, with Kafka's
//! eviction.
#![cfg(feature = "broker")]

#[path = "common/raw.rs"]
mod raw;

use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::dispatch;
use kwire::messages::ResponseBodyView;
use kwire::messages::fetch::{FetchPartition, FetchRequest, FetchTopic, ForgottenTopic};
use kwire::records::{BatchBuilder, NewRecord};
use kwire::types::Uuid;
use raw::Conn;

const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
const FETCH_SESSION_TOPIC_ID_ERROR: i16 = 106;

/// A Fetch answer: (error, session id, [(topic, partition, error, high watermark, record
/// bytes)]).
type Answer = (i16, i32, Vec<(String, i32, i16, i64, usize)>);

/// A Fetch: (session id, epoch, [(topic, partition, fetch offset)], [(topic, partition)]
/// forgotten).
struct Ask<'a> {
    session: i32,
    epoch: i32,
    partitions: &'a [(&'a str, i32, i64)],
    forgotten: &'a [(&'a str, i32)],
    max_wait_ms: i32,
    min_bytes: i32,
}

impl Conn {
    /// A Fetch at `version`; from v13 the topics are named by `ids` (name, id).
    fn fetch_at(&mut self, version: i16, ask: &Ask<'_>, ids: &[(&str, Uuid)]) -> Answer {
        let id_of = |name: &str| ids.iter().find(|(n, _)| *n == name).map_or(Uuid::ZERO, |x| x.1);
        let mut names: Vec<&str> = ask.partitions.iter().map(|p| p.0).collect();
        names.dedup();
        let parts: Vec<Vec<FetchPartition<'_>>> = names
            .iter()
            .map(|n| {
                ask.partitions
                    .iter()
                    .filter(|p| p.0 == *n)
                    .map(|&(_, partition, fetch_offset)| FetchPartition {
                        partition,
                        fetch_offset,
                        partition_max_bytes: 1 << 20,
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let topics: Vec<FetchTopic<'_>> = names
            .iter()
            .zip(&parts)
            .map(|(n, p)| FetchTopic {
                topic: if version >= 13 { "" } else { *n }.into(),
                topic_id: if version >= 13 { id_of(n) } else { Uuid::ZERO },
                partitions: p.as_slice().into(),
                ..Default::default()
            })
            .collect();
        let mut forgotten_names: Vec<&str> = ask.forgotten.iter().map(|p| p.0).collect();
        forgotten_names.dedup();
        let forgotten_parts: Vec<Vec<i32>> = forgotten_names
            .iter()
            .map(|n| ask.forgotten.iter().filter(|p| p.0 == *n).map(|p| p.1).collect())
            .collect();
        let forgotten: Vec<ForgottenTopic<'_>> = forgotten_names
            .iter()
            .zip(&forgotten_parts)
            .map(|(n, p)| ForgottenTopic {
                topic: if version >= 13 { "" } else { *n }.into(),
                topic_id: if version >= 13 { id_of(n) } else { Uuid::ZERO },
                partitions: p.as_slice().into(),
                ..Default::default()
            })
            .collect();
        let req = FetchRequest {
            max_wait_ms: ask.max_wait_ms,
            min_bytes: ask.min_bytes,
            max_bytes: 50 << 20,
            session_id: ask.session,
            session_epoch: ask.epoch,
            topics: topics.into(),
            forgotten_topics_data: forgotten.into(),
            ..Default::default()
        };
        let frame = self.call(&req, version);
        let ResponseBodyView::Fetch(r) =
            dispatch::parse_response(&frame, ApiKey::Fetch, version).unwrap().body
        else {
            panic!()
        };
        let name_of = |t: &kwire::messages::fetch::FetchableTopicResponseView<'_>| {
            if version >= 13 {
                ids.iter().find(|x| x.1 == t.topic_id()).map_or("?".to_string(), |x| x.0.to_string())
            } else {
                t.topic().to_string()
            }
        };
        let parts = r
            .responses()
            .iter()
            .flat_map(|t| {
                let name = name_of(&t);
                t.partitions()
                    .iter()
                    .map(|p| {
                        let bytes = p.records().map_or(0, |r| r.bytes().len());
                        (name.clone(), p.partition_index(), p.error_code(), p.high_watermark(), bytes)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        (r.error_code(), r.session_id(), parts)
    }

    fn fetch(
        &mut self,
        session: i32,
        epoch: i32,
        partitions: &[(&str, i32, i64)],
        forgotten: &[(&str, i32)],
    ) -> Answer {
        self.fetch_at(12, &Ask { session, epoch, partitions, forgotten, max_wait_ms: 0, min_bytes: 0 }, &[])
    }

    fn produce(&mut self, topic: &str, partition: i32, value: &str) {
        use kwire::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
        let records = [NewRecord { key: None, value: Some(value.as_bytes()), headers: &[], timestamp: None }];
        let mut batch = Vec::new();
        BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut batch).unwrap();
        let data = [PartitionProduceData {
            index: partition,
            records: Some(batch.as_slice().into()),
            ..Default::default()
        }];
        let topics =
            [TopicProduceData { name: topic.into(), partition_data: (&data).into(), ..Default::default() }];
        let req =
            ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
        let frame = self.call(&req, 9);
        let ResponseBodyView::Produce(r) = dispatch::parse_response(&frame, ApiKey::Produce, 9).unwrap().body
        else {
            panic!()
        };
        let p = r.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        assert_eq!(p.error_code(), NONE);
    }
}

/// (topic, partition) of an answer's partitions.
fn named(a: &Answer) -> Vec<(String, i32)> {
    a.2.iter().map(|p| (p.0.clone(), p.1)).collect()
}

fn tp(t: &str, p: i32) -> (String, i32) {
    (t.to_string(), p)
}

#[test]
fn incremental_fetches_answer_only_what_changed() {
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("a", 2));
    assert!(broker.create_topic("b", 1));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    c.produce("a", 0, "first");

    // A full Fetch (epoch 0) opens a session and answers every partition.
    let full = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0)], &[]);
    let id = full.1;
    assert_eq!(full.0, NONE);
    assert!(id > 0, "a session id");
    assert_eq!(named(&full), vec![tp("a", 0), tp("a", 1)]);
    assert!(full.2[0].4 > 0 && full.2[1].4 == 0);
    assert_eq!(broker.fetch_sessions(), 1);

    // The client moves on to offset 1 of a/0: nothing new anywhere, an empty answer.
    let next = c.fetch(id, 1, &[("a", 0, 1)], &[]);
    assert_eq!((next.0, next.1), (NONE, id));
    assert_eq!(named(&next), vec![]);
    // Nothing named, nothing new: still empty.
    assert_eq!(named(&c.fetch(id, 2, &[], &[])), vec![]);

    // New records in a/1: only a/1 is answered, with them.
    c.produce("a", 1, "x");
    let news = c.fetch(id, 3, &[], &[]);
    assert_eq!(named(&news), vec![tp("a", 1)]);
    assert_eq!((news.2[0].3, news.2[0].4 > 0), (1, true));
    // The session still reads a/1 from 0 until the client says otherwise: the same records.
    assert_eq!(named(&c.fetch(id, 4, &[], &[])), vec![tp("a", 1)]);
    assert_eq!(named(&c.fetch(id, 5, &[("a", 1, 1)], &[])), vec![]);

    // A partition added is answered at once; a forgotten one is no longer read.
    let added = c.fetch(id, 6, &[("b", 0, 0)], &[("a", 0)]);
    assert_eq!(named(&added), vec![tp("b", 0)]);
    c.produce("a", 0, "unread");
    c.produce("b", 0, "read");
    let after = c.fetch(id, 7, &[], &[]);
    assert_eq!(named(&after), vec![tp("b", 0)], "a/0 was forgotten");
    // Forgotten and added back: answered again.
    assert_eq!(named(&c.fetch(id, 8, &[("a", 0, 1)], &[])), vec![tp("a", 0), tp("b", 0)]);

    // An error is always answered.
    let unknown = c.fetch(id, 9, &[("a", 7, 0)], &[]);
    assert!(unknown.2.iter().any(|p| p.1 == 7 && p.2 == UNKNOWN_TOPIC_OR_PARTITION), "{unknown:?}");
    assert_eq!(
        named(&c.fetch(id, 10, &[], &[("a", 7)])).len(),
        2,
        "a/0 and b/0 still hold records from their offsets"
    );
}

#[test]
fn session_errors_and_closing() {
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("a", 1));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    let id = c.fetch(0, 0, &[("a", 0, 0)], &[]).1;
    assert!(id > 0);
    // An epoch other than the next one, and an unknown session, from any connection.
    assert_eq!(c.fetch(id, 5, &[], &[]).0, INVALID_FETCH_SESSION_EPOCH);
    assert_eq!(c.fetch(id, 0x7fff, &[], &[]).0, INVALID_FETCH_SESSION_EPOCH);
    let other = if id == i32::MAX { id - 1 } else { id + 1 };
    assert_eq!(c.fetch(other, 1, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND);
    // A refused Fetch does not use up the epoch: 1 is still next.
    let mut d = Conn::open_as(broker.addr(), "sessions");
    assert_eq!(d.fetch(id, 1, &[], &[]), (NONE, id, vec![]));
    assert_eq!(c.fetch(id, 1, &[], &[]).0, INVALID_FETCH_SESSION_EPOCH, "1 is used");
    // A v13 Fetch cannot go on with a session of topic names.
    let ids = [("a", broker_topic_id(&mut c, "a"))];
    let ask = Ask { session: id, epoch: 2, partitions: &[], forgotten: &[], max_wait_ms: 0, min_bytes: 0 };
    assert_eq!(c.fetch_at(13, &ask, &ids).0, FETCH_SESSION_TOPIC_ID_ERROR);
    assert_eq!(c.fetch(id, 2, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND, "closed by the error");

    // A full Fetch naming a session closes it and opens another.
    let first = c.fetch(0, 0, &[("a", 0, 0)], &[]).1;
    let second = c.fetch(first, 0, &[("a", 0, 0)], &[]).1;
    assert!(second > 0 && second != first);
    assert_eq!(c.fetch(first, 1, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND);
    assert_eq!(broker.fetch_sessions(), 1);
    // Epoch -1 closes it and is answered in full, without a session.
    let last = c.fetch(second, -1, &[("a", 0, 0)], &[]);
    assert_eq!((last.0, last.1, named(&last)), (NONE, 0, vec![tp("a", 0)]));
    assert_eq!(broker.fetch_sessions(), 0);
    assert_eq!(c.fetch(second, 1, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND);
    // Before v7 there are no sessions.
    let old = c.fetch_at(
        6,
        &Ask {
            session: 0,
            epoch: 0,
            partitions: &[("a", 0, 0)],
            forgotten: &[],
            max_wait_ms: 0,
            min_bytes: 0,
        },
        &[],
    );
    assert_eq!((old.1, named(&old)), (0, vec![tp("a", 0)]));
    assert_eq!(broker.fetch_sessions(), 0);
}

/// A topic's id, from Metadata v12.
fn broker_topic_id(c: &mut Conn, name: &str) -> Uuid {
    use kwire::messages::metadata::{MetadataRequest, MetadataRequestTopic};
    let topics = [MetadataRequestTopic { name: Some(name.into()), ..Default::default() }];
    let frame = c.call(&MetadataRequest { topics: Some((&topics).into()), ..Default::default() }, 12);
    let ResponseBodyView::Metadata(m) = dispatch::parse_response(&frame, ApiKey::Metadata, 12).unwrap().body
    else {
        panic!()
    };
    m.topics().iter().next().unwrap().topic_id()
}

#[test]
fn sessions_by_topic_id_at_v13() {
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("a", 1));
    assert!(broker.create_topic("b", 1));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    let ids = [("a", broker_topic_id(&mut c, "a")), ("b", broker_topic_id(&mut c, "b"))];
    let ask = |session: i32,
               epoch: i32,
               partitions: &'static [(&'static str, i32, i64)],
               forgotten: &'static [(&'static str, i32)]| Ask {
        session,
        epoch,
        partitions,
        forgotten,
        max_wait_ms: 0,
        min_bytes: 0,
    };
    let full = c.fetch_at(13, &ask(0, 0, &[("a", 0, 0), ("b", 0, 0)], &[]), &ids);
    assert_eq!(named(&full), vec![tp("a", 0), tp("b", 0)]);
    let id = full.1;
    assert!(id > 0);
    assert_eq!(named(&c.fetch_at(13, &ask(id, 1, &[], &[]), &ids)), vec![]);
    c.produce("b", 0, "x");
    assert_eq!(named(&c.fetch_at(13, &ask(id, 2, &[], &[("a", 0)]), &ids)), vec![tp("b", 0)]);
    c.produce("a", 0, "y");
    assert_eq!(named(&c.fetch_at(13, &ask(id, 3, &[("b", 0, 1)], &[]), &ids)), vec![], "a/0 forgotten by id");
    // And a v12 Fetch cannot go on with a session of topic ids.
    assert_eq!(c.fetch(id, 4, &[], &[]).0, FETCH_SESSION_TOPIC_ID_ERROR);
}

#[test]
fn an_incremental_fetch_long_polls_on_the_whole_session() {
    let broker = Broker::start(Config::default()).unwrap();
    assert!(broker.create_topic("a", 2));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    let id = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0)], &[]).1;
    let addr = broker.addr();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        Conn::open_as(addr, "sessions").produce("a", 1, "late");
    });
    let start = Instant::now();
    let ask =
        Ask { session: id, epoch: 1, partitions: &[], forgotten: &[], max_wait_ms: 10_000, min_bytes: 1 };
    let answer = c.fetch_at(12, &ask, &[]);
    let waited = start.elapsed();
    writer.join().unwrap();
    assert_eq!(named(&answer), vec![tp("a", 1)]);
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(8), "{waited:?}");
}

#[test]
fn the_session_cache_is_bounded_and_evicts_as_kafka() {
    let config =
        Config { fetch_session_slots: 2, fetch_session_idle: Duration::from_secs(3600), ..Config::default() };
    let broker = Broker::start(config).unwrap();
    assert!(broker.create_topic("a", 3));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    let one = c.fetch(0, 0, &[("a", 0, 0)], &[]).1;
    let two = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0)], &[]).1;
    assert!(one > 0 && two > 0);
    // Full, nothing idle: a session no larger than the smallest gets none.
    let none = c.fetch(0, 0, &[("a", 2, 0)], &[]);
    assert_eq!((none.0, none.1, named(&none)), (NONE, 0, vec![tp("a", 2)]));
    assert_eq!(broker.fetch_sessions(), 2);
    // A larger one takes the place of the smallest.
    let three = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0), ("a", 2, 0)], &[]).1;
    assert!(three > 0);
    assert_eq!(broker.fetch_sessions(), 2);
    assert_eq!(c.fetch(one, 1, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND, "evicted");
    assert_eq!(c.fetch(two, 1, &[], &[]).0, NONE);
    assert_eq!(c.fetch(three, 1, &[], &[]).0, NONE);
    drop(broker);

    // Sessions idle long enough are taken first, the least recently used.
    let config = Config {
        fetch_session_slots: 2,
        fetch_session_idle: Duration::from_millis(200),
        ..Config::default()
    };
    let broker = Broker::start(config).unwrap();
    assert!(broker.create_topic("a", 3));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    let old = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0), ("a", 2, 0)], &[]).1;
    let used = c.fetch(0, 0, &[("a", 0, 0), ("a", 1, 0), ("a", 2, 0)], &[]).1;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.fetch(used, 1, &[], &[]).0, NONE);
    let small = c.fetch(0, 0, &[("a", 0, 0)], &[]).1;
    assert!(small > 0, "an idle session made room");
    assert_eq!(c.fetch(old, 1, &[], &[]).0, FETCH_SESSION_ID_NOT_FOUND);
    assert_eq!(c.fetch(used, 2, &[], &[]).0, NONE);
    drop(broker);

    // No slots: every Fetch is sessionless.
    let broker = Broker::start(Config { fetch_session_slots: 0, ..Config::default() }).unwrap();
    assert!(broker.create_topic("a", 1));
    let mut c = Conn::open_as(broker.addr(), "sessions");
    assert_eq!(c.fetch(0, 0, &[("a", 0, 0)], &[]).1, 0);
    assert_eq!(broker.fetch_sessions(), 0);
}
