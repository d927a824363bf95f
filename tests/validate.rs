//! `kwire::filter::ValidateRecords` through a `FilterChain`: Produce frames built by kwire's
//! encoders and `records::BatchBuilder`, good and bad records, several partitions mixed,
//! compressed batches, every Produce version kwire reads, acks=0, topic patterns; the
//! broker's answers merged with the filter's. And `check_json` against serde_json.

use kwire::ApiKey;
use kwire::filter::{FilterChain, Rule, ValidateRecords, Verdict, check_json};
use kwire::messages::api_versions::ApiVersion;
use kwire::messages::produce::{
    PartitionProduceData, PartitionProduceResponse, TopicProduceData, TopicProduceResponse,
};
use kwire::messages::{
    ApiVersionsResponse, ProduceRequest, ProduceResponse, RequestBodyView, ResponseBodyView,
};
use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord};
use kwire::{Uuid, dispatch};

const NOW: i64 = 1_700_000_000_000;
const CODECS: [Compression; 5] =
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

fn batch(records: &[NewRecord<'_>], codec: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, NOW, records);
    b.compression = codec;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

/// Each partition's index and records.
type Partitions = Vec<(i32, Vec<u8>)>;

/// A topic of the request: name, id, and each partition's index and records.
struct T<'a> {
    name: &'a str,
    id: Uuid,
    parts: Partitions,
}

fn t(name: &str, parts: Partitions) -> T<'_> {
    let mut id = [0u8; 16];
    for (i, b) in name.bytes().enumerate() {
        id[i % 16] ^= b;
    }
    id[15] |= 1;
    T { name, id: Uuid(id), parts }
}

/// A Produce request frame (without its size prefix).
fn produce(version: i16, acks: i16, correlation_id: i32, topics: &[T<'_>]) -> Vec<u8> {
    let partitions: Vec<Vec<PartitionProduceData<'_>>> = topics
        .iter()
        .map(|t| {
            t.parts
                .iter()
                .map(|(i, r)| PartitionProduceData {
                    index: *i,
                    records: Some(r[..].into()),
                    ..Default::default()
                })
                .collect()
        })
        .collect();
    let data: Vec<TopicProduceData<'_>> = topics
        .iter()
        .zip(&partitions)
        .map(|(t, p)| TopicProduceData {
            name: if version <= 12 { t.name.into() } else { "".into() },
            topic_id: if version >= 13 { t.id } else { Uuid::ZERO },
            partition_data: p[..].into(),
            ..Default::default()
        })
        .collect();
    let body = ProduceRequest { acks, timeout_ms: 5000, topic_data: data[..].into(), ..Default::default() };
    let mut buf = vec![0u8; body.encoded_len(version).unwrap() + 64];
    let n = dispatch::encode_request(&body, version, correlation_id, Some("test"), &mut buf).unwrap();
    buf.truncate(n);
    buf.drain(..4);
    buf
}

fn chain(rules: &[&str]) -> FilterChain {
    let rules: Vec<Rule> = rules.iter().map(|r| r.parse().unwrap()).collect();
    let mut chain = FilterChain::new();
    chain.push(ValidateRecords::new(rules));
    chain
}

/// What the forwarded request holds: each topic's key (name or id) and partitions with
/// their records bytes.
fn forwarded(frame: &[u8]) -> Vec<(String, Uuid, Partitions)> {
    let request = dispatch::parse_request(frame).unwrap();
    let RequestBodyView::Produce(p) = request.body else { panic!() };
    p.topic_data()
        .iter()
        .map(|t| {
            let parts = t
                .partition_data()
                .iter()
                .map(|p| (p.index(), p.records().unwrap().bytes().to_vec()))
                .collect();
            (t.name().to_string(), t.topic_id(), parts)
        })
        .collect()
}

/// A broker's answer to a forwarded request: every partition appended at offset 100 +
/// its index (and the topics in reverse order, as nothing says a broker keeps the order).
fn broker_answer(frame: &[u8]) -> Vec<u8> {
    let request = dispatch::parse_request(frame).unwrap();
    let version = request.header.api_version();
    let RequestBodyView::Produce(p) = request.body else { panic!() };
    let mut topics: Vec<TopicProduceResponse<'_>> = p
        .topic_data()
        .iter()
        .map(|t| TopicProduceResponse {
            name: t.name().into(),
            topic_id: t.topic_id(),
            partition_responses: t
                .partition_data()
                .iter()
                .map(|p| PartitionProduceResponse {
                    index: p.index(),
                    base_offset: 100 + i64::from(p.index()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    topics.reverse();
    let body = ProduceResponse { responses: topics.into(), throttle_time_ms: 7, ..Default::default() };
    let mut out = vec![0u8; dispatch::response_len(&body, version).unwrap()];
    dispatch::encode_response(&body, version, request.header.correlation_id(), &mut out).unwrap();
    out.drain(..4);
    out
}

/// One partition's answer as the client reads it.
#[derive(Debug, PartialEq)]
struct Answer {
    topic: String,
    index: i32,
    error: i16,
    base_offset: i64,
    record_errors: Vec<i32>,
    message: Option<String>,
}

fn answers(frame: &[u8], version: i16, correlation_id: i32) -> Vec<Answer> {
    let response = dispatch::parse_response(frame, ApiKey::Produce, version).unwrap();
    assert_eq!(response.header.correlation_id(), correlation_id);
    let ResponseBodyView::Produce(v) = response.body else { panic!() };
    let mut out = Vec::new();
    for t in v.responses() {
        let topic = if version <= 12 { t.name().to_string() } else { format!("{:?}", t.topic_id()) };
        for p in t.partition_responses() {
            out.push(Answer {
                topic: topic.clone(),
                index: p.index(),
                error: p.error_code(),
                base_offset: p.base_offset(),
                record_errors: p.record_errors().iter().map(|e| e.batch_index()).collect(),
                message: p.error_message().map(str::to_string),
            });
        }
    }
    out
}

fn json_records() -> Vec<NewRecord<'static>> {
    vec![
        NewRecord::new(Some(b"k0"), Some(br#"{"id": 0, "items": [1, 2.5, "x"]}"#)),
        NewRecord::new(Some(b"k1"), Some(b"[true, false, null]")),
        NewRecord::new(Some(b"k2"), None), // a tombstone passes the JSON check
    ]
}

fn bad_json_records() -> Vec<NewRecord<'static>> {
    vec![
        NewRecord::new(Some(b"k0"), Some(br#"{"id": 0}"#)),
        NewRecord::new(Some(b"k1"), Some(br#"{"id": 1,}"#)),
        NewRecord::new(Some(b"k2"), Some(b"{}")),
        NewRecord::new(Some(b"k3"), Some(b"not json")),
    ]
}

#[test]
fn good_records_are_forwarded_as_they_came_at_every_version_and_codec() {
    for version in 3..=13 {
        // v13 names topics by id: a `*` rule applies at every version.
        let rules: &[&str] =
            if version == 13 { &["*=json,key"] } else { &["orders.*=json,key", "*=max-bytes=1000"] };
        let mut chain = chain(rules);
        for codec in CODECS {
            if codec == Compression::Zstd && version < 7 {
                continue;
            }
            let frame = produce(
                version,
                -1,
                5,
                &[t(
                    "orders.eu",
                    vec![(0, batch(&json_records(), codec)), (1, batch(&json_records(), codec))],
                )],
            );
            assert_eq!(chain.on_request(&frame), Verdict::Forward, "v{version} {codec:?}");
        }
        // Nothing is kept: responses are not even parsed.
        assert!(!chain.wants_response(ApiKey::Produce, version));
    }
}

#[test]
fn failing_partitions_are_answered_by_the_filter_and_merged_into_the_brokers_answer() {
    for version in 3..=12 {
        let mut chain = chain(&["orders.*=json", "audit=key"]);
        let good = batch(&json_records(), Compression::None);
        let bad = batch(&bad_json_records(), Compression::None);
        let keyless = batch(
            &[NewRecord::new(Some(b"k"), Some(b"1")), NewRecord::new(None, Some(b"2"))],
            Compression::None,
        );
        let topics = [
            t("orders.eu", vec![(0, good.clone()), (1, bad.clone()), (2, good.clone())]),
            // No rule: not read, even with bad JSON.
            t("payments", vec![(4, bad.clone())]),
            t("audit", vec![(0, keyless.clone()), (1, good.clone())]),
            t("orders.us", vec![(3, bad.clone())]),
        ];
        let frame = produce(version, -1, 42, &topics);
        let Verdict::Replace(sent) = chain.on_request(&frame) else { panic!("v{version}") };
        // The broker gets exactly the passing partitions, their records byte for byte.
        let expected = vec![
            ("orders.eu".to_string(), Uuid::ZERO, vec![(0, good.clone()), (2, good.clone())]),
            ("payments".to_string(), Uuid::ZERO, vec![(4, bad.clone())]),
            ("audit".to_string(), Uuid::ZERO, vec![(1, good.clone())]),
        ];
        assert_eq!(forwarded(&sent), expected, "v{version}");
        // The header is kept.
        let header = dispatch::parse_request(&sent).unwrap().header;
        assert_eq!((header.correlation_id(), header.client_id()), (42, Some("test")));
        assert!(chain.wants_response(ApiKey::Produce, version));

        let reply = broker_answer(&sent);
        let Verdict::Replace(merged) = chain.on_response(&reply, ApiKey::Produce, version) else { panic!() };
        let got = answers(&merged, version, 42);
        let ok = |topic: &str, index: i32| Answer {
            topic: topic.into(),
            index,
            error: 0,
            base_offset: 100 + i64::from(index),
            record_errors: vec![],
            message: None,
        };
        let v8 = version >= 8;
        let failed = |topic: &str, index: i32, errors: Vec<i32>, first: &str| Answer {
            topic: topic.into(),
            index,
            error: 87,
            base_offset: -1,
            record_errors: if v8 { errors } else { vec![] },
            message: v8.then(|| first.to_string()),
        };
        let json_message = "One or more records have been rejected due to 2 record errors in total, and only showing \
            the first three errors at most: [RecordError(batchIndex=1, message='the value is not valid JSON: \
            unexpected '}' at byte 9'), RecordError(batchIndex=3, message='the value is not valid JSON: unexpected \
            'o' at byte 1')]";
        let key_message = "One or more records have been rejected due to 1 record errors in total, and only showing \
            the first three errors at most: [RecordError(batchIndex=1, message='the record has no key')]";
        // In the request's order, whatever order the broker answered in.
        assert_eq!(
            got,
            [
                ok("orders.eu", 0),
                failed("orders.eu", 1, vec![1, 3], json_message),
                ok("orders.eu", 2),
                ok("payments", 4),
                failed("audit", 0, vec![1], key_message),
                ok("audit", 1),
                failed("orders.us", 3, vec![1, 3], json_message),
            ],
            "v{version}"
        );
        // The broker's other fields are kept.
        let response = dispatch::parse_response(&merged, ApiKey::Produce, version).unwrap();
        let ResponseBodyView::Produce(v) = response.body else { panic!() };
        assert_eq!(v.throttle_time_ms(), 7);
        // Done with it.
        assert!(!chain.wants_response(ApiKey::Produce, version));
    }
}

#[test]
fn record_errors_carry_each_failing_records_message() {
    let mut chain = chain(&["t=max-bytes=20,key,header=trace-id,json"]);
    let h = [NewHeader { key: b"trace-id", value: Some(b"1") }];
    let other = [NewHeader { key: b"trace", value: Some(b"1") }];
    let records = [
        NewRecord::new(Some(b"k"), Some(b"{}")).with_headers(&h),
        NewRecord::new(Some(b"k"), Some(b"[1,2,3,4,5,6,7,8,9]")).with_headers(&h), // 1 + 19 + 9 = 29 bytes
        NewRecord::new(None, Some(b"{}")).with_headers(&h),
        NewRecord::new(Some(b"k"), Some(b"{}")).with_headers(&other),
        NewRecord::new(Some(b"k"), Some(b"{")).with_headers(&h),
        NewRecord::new(Some(b""), Some(b"0")).with_headers(&h), // an empty key is a key
    ];
    let frame = produce(12, 1, 3, &[t("t", vec![(0, batch(&records, Compression::Lz4))])]);
    let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!() };
    let response = dispatch::parse_response(&answer, ApiKey::Produce, 12).unwrap();
    let ResponseBodyView::Produce(v) = response.body else { panic!() };
    let p = v.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
    let errors: Vec<(i32, String)> = p
        .record_errors()
        .iter()
        .map(|e| (e.batch_index(), e.batch_index_error_message().unwrap().to_string()))
        .collect();
    assert_eq!(
        errors,
        [
            (1, "the record is 29 bytes (key, value and headers), more than the maximum of 20".to_string()),
            (2, "the record has no key".to_string()),
            (3, "the record lacks the required header \"trace-id\"".to_string()),
            (4, "the value is not valid JSON: the text ends inside a value (byte 1)".to_string()),
        ]
    );
    assert!(
        p.error_message()
            .unwrap()
            .starts_with("One or more records have been rejected due to 4 record errors")
    );
}

#[test]
fn a_request_whose_every_partition_fails_is_answered_by_the_filter() {
    for version in 3..=12 {
        let mut chain = chain(&["orders.*=json"]);
        let bad = batch(&bad_json_records(), Compression::Gzip);
        let frame = produce(
            version,
            -1,
            9,
            &[t("orders.a", vec![(0, bad.clone())]), t("orders.b", vec![(2, bad.clone()), (1, bad.clone())])],
        );
        let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!("v{version}") };
        let got = answers(&answer, version, 9);
        let order: Vec<(String, i32, i16)> =
            got.iter().map(|a| (a.topic.clone(), a.index, a.error)).collect();
        assert_eq!(
            order,
            [("orders.a".into(), 0, 87), ("orders.b".into(), 2, 87), ("orders.b".into(), 1, 87)]
        );
        assert!(got.iter().all(|a| a.record_errors == if version >= 8 { vec![1, 3] } else { vec![] }));
        // Nothing awaits the broker.
        assert!(!chain.wants_response(ApiKey::Produce, version));
    }
}

#[test]
fn acks_zero_drops_failing_partitions_and_keeps_nothing() {
    let mut chain = chain(&["orders.*=json"]);
    let good = batch(&json_records(), Compression::None);
    let bad = batch(&bad_json_records(), Compression::None);
    let frame = produce(9, 0, 1, &[t("orders.a", vec![(0, good.clone()), (1, bad.clone())])]);
    let Verdict::Replace(sent) = chain.on_request(&frame) else { panic!() };
    assert_eq!(forwarded(&sent), [("orders.a".to_string(), Uuid::ZERO, vec![(0, good.clone())])]);
    assert!(!kwire::conn::frame_expects_response(&sent).unwrap(), "still acks=0");
    assert!(!chain.wants_response(ApiKey::Produce, 9), "no answer is awaited");
    // Every partition failing: nothing is sent and nothing answered.
    let frame = produce(9, 0, 2, &[t("orders.a", vec![(1, bad)])]);
    assert_eq!(chain.on_request(&frame), Verdict::Drop);
}

#[test]
fn compressed_batches_are_checked_inside_a_decompression_limit() {
    let bad = bad_json_records();
    for codec in CODECS {
        let mut chain = chain(&["t=json"]);
        let frame = produce(12, -1, 1, &[t("t", vec![(0, batch(&bad, codec))])]);
        let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!("{codec:?}") };
        assert_eq!(answers(&answer, 12, 1)[0].record_errors, [1, 3], "{codec:?}");
    }
    // 100 records of 1 KB of JSON compress well and decompress past a 16 KiB limit.
    let value = format!("{{\"pad\": \"{}\"}}", "x".repeat(1000));
    let big: Vec<NewRecord<'_>> =
        (0..100).map(|_| NewRecord::new(Some(b"k"), Some(value.as_bytes()))).collect();
    for codec in &CODECS[1..] {
        let compressed = batch(&big, *codec);
        assert!(compressed.len() < 16 << 10, "{codec:?} {}", compressed.len());
        let frame = produce(12, -1, 1, &[t("t", vec![(0, compressed)])]);
        let rules: Vec<Rule> = vec!["t=json".parse().unwrap()];
        let mut small = FilterChain::new();
        small.push(ValidateRecords::new(rules.clone()).decompression_limit(16 << 10));
        let Verdict::Respond(answer) = small.on_request(&frame) else { panic!("{codec:?}") };
        let got = &answers(&answer, 12, 1)[0];
        assert_eq!(got.error, 87);
        assert_eq!(
            got.message.as_deref(),
            Some(
                "the records decompress to more than this proxy's limit of 16384 bytes, so they cannot be validated"
            )
        );
        // Within the default limit they pass, untouched.
        let mut default = FilterChain::new();
        default.push(ValidateRecords::new(rules));
        assert_eq!(default.on_request(&frame), Verdict::Forward, "{codec:?}");
    }
}

#[test]
fn unreadable_records_fail_their_partition() {
    let mut chain = chain(&["t=json"]);
    let mut corrupt = batch(&json_records(), Compression::None);
    let n = corrupt.len();
    corrupt[n - 3] ^= 0x55;
    let mut cut = batch(&json_records(), Compression::None);
    cut.extend_from_slice(&batch(&json_records(), Compression::None)[..30]);
    let frame = produce(12, -1, 1, &[t("t", vec![(0, corrupt), (1, cut)])]);
    let Verdict::Respond(answer) = chain.on_request(&frame) else { panic!() };
    let got = answers(&answer, 12, 1);
    assert_eq!(got[0].error, 2, "CORRUPT_MESSAGE: {:?}", got[0].message);
    assert!(got[0].message.as_deref().unwrap().starts_with("the record batch is corrupt: CRC mismatch"));
    assert_eq!(got[1].error, 87);
    assert_eq!(got[1].message.as_deref(), Some("the records end with a cut-short record batch"));
}

#[test]
fn topic_ids_need_name_free_rules() {
    let good = batch(&json_records(), Compression::None);
    let bad = batch(&bad_json_records(), Compression::None);
    // A rule by name: the chain serves Produce up to v12 only, and refuses v13 requests
    // (whose topics are named by id only) as Kafka refuses a version it does not serve.
    let mut chain = chain(&["orders.*=json"]);
    let frame = produce(13, -1, 4, &[t("orders.a", vec![(0, good.clone()), (1, good.clone())])]);
    let Verdict::Close(why) = chain.on_request(&frame) else { panic!() };
    assert_eq!(why, "refused: Produce v13, a version this connection does not serve (3-12)");
    let versions = ApiVersionsResponse {
        api_keys: vec![
            ApiVersion { api_key: 0, min_version: 3, max_version: 13, ..Default::default() },
            ApiVersion { api_key: 1, min_version: 4, max_version: 17, ..Default::default() },
        ]
        .into(),
        ..Default::default()
    };
    assert_eq!(produce_max(&mut chain, &versions), 12);

    // `*` rules only: v13 is validated by id, failing partitions merged back by topic id.
    let mut chain = self::chain(&["*=json"]);
    let topics = [t("a", vec![(0, good.clone()), (1, bad.clone())]), t("b", vec![(0, good.clone())])];
    let frame = produce(13, -1, 8, &topics);
    let Verdict::Replace(sent) = chain.on_request(&frame) else { panic!() };
    let sent_topics = forwarded(&sent);
    assert_eq!(
        sent_topics.iter().map(|t| (t.1, t.2.len())).collect::<Vec<_>>(),
        [(topics[0].id, 1), (topics[1].id, 1)]
    );
    let Verdict::Replace(merged) = chain.on_response(&broker_answer(&sent), ApiKey::Produce, 13) else {
        panic!()
    };
    let got = answers(&merged, 13, 8);
    let summary: Vec<(String, i32, i16)> = got.iter().map(|a| (a.topic.clone(), a.index, a.error)).collect();
    let (a, b) = (format!("{:?}", topics[0].id), format!("{:?}", topics[1].id));
    assert_eq!(summary, [(a.clone(), 0, 0), (a, 1, 87), (b, 0, 0)]);
    // And Produce v13 stays in ApiVersions answers.
    assert_eq!(produce_max(&mut chain, &versions), 13);

    // A rule by name with a book of topic names: v13 is validated by name, and a topic
    // whose id the book does not know fails (UNKNOWN_TOPIC_ID) rather than pass unchecked.
    let book = kwire::filter::TopicNames::new();
    let topics = [
        t("orders.a", vec![(0, good.clone()), (1, bad.clone())]),
        t("logs", vec![(0, bad.clone())]),
        t("orders.b", vec![(0, good.clone())]),
    ];
    let (orders, logs, unknown) = (&topics[0], &topics[1], &topics[2]);
    book.learn(orders.id, "orders.a");
    book.learn(logs.id, "logs");
    let mut chain = FilterChain::new();
    chain.push(ValidateRecords::new(vec!["orders.*=json".parse::<Rule>().unwrap()]).topic_names(book));
    assert_eq!(produce_max(&mut chain, &versions), 13);
    let frame = produce(13, -1, 9, &topics);
    let Verdict::Replace(sent) = chain.on_request(&frame) else { panic!() };
    let Verdict::Replace(merged) = chain.on_response(&broker_answer(&sent), ApiKey::Produce, 13) else {
        panic!()
    };
    let summary: Vec<(String, i32, i16)> =
        answers(&merged, 13, 9).iter().map(|a| (a.topic.clone(), a.index, a.error)).collect();
    let id = |t: &T<'_>| format!("{:?}", t.id);
    assert_eq!(
        summary,
        [(id(orders), 0, 0), (id(orders), 1, 87), (id(logs), 0, 0), (id(unknown), 0, 100)],
        "the rule applies to orders.a by name, not to logs; orders.b's id is unknown"
    );
}

/// The highest Produce version of an ApiVersions answer after the chain.
fn produce_max(chain: &mut FilterChain, versions: &ApiVersionsResponse<'_>) -> i16 {
    let mut frame = vec![0u8; dispatch::response_len(versions, 3).unwrap()];
    dispatch::encode_response(versions, 3, 1, &mut frame).unwrap();
    frame.drain(..4);
    let out = match chain.on_response(&frame, ApiKey::ApiVersions, 3) {
        Verdict::Replace(new) => new,
        Verdict::Forward => frame,
        other => panic!("{other:?}"),
    };
    let response = dispatch::parse_response(&out, ApiKey::ApiVersions, 3).unwrap();
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    v.api_keys().iter().find(|k| k.api_key() == 0).unwrap().max_version()
}

#[test]
fn requests_in_flight_are_merged_by_correlation_id() {
    let mut chain = chain(&["t=json"]);
    let good = batch(&json_records(), Compression::None);
    let bad = batch(&bad_json_records(), Compression::None);
    let one = produce(12, -1, 1, &[t("t", vec![(0, good.clone()), (1, bad.clone())])]);
    let two = produce(12, -1, 2, &[t("t", vec![(0, good.clone())])]);
    let three = produce(12, -1, 3, &[t("t", vec![(5, bad.clone()), (6, good.clone())])]);
    let Verdict::Replace(sent1) = chain.on_request(&one) else { panic!() };
    assert_eq!(chain.on_request(&two), Verdict::Forward);
    let Verdict::Replace(sent3) = chain.on_request(&three) else { panic!() };
    let summary = |frame: &[u8], id| -> Vec<(i32, i16)> {
        answers(frame, 12, id).iter().map(|a| (a.index, a.error)).collect()
    };
    let Verdict::Replace(m1) = chain.on_response(&broker_answer(&sent1), ApiKey::Produce, 12) else {
        panic!()
    };
    assert_eq!(summary(&m1, 1), [(0, 0), (1, 87)]);
    // The unchanged request's answer passes unchanged.
    assert_eq!(chain.on_response(&broker_answer(&two), ApiKey::Produce, 12), Verdict::Forward);
    let Verdict::Replace(m3) = chain.on_response(&broker_answer(&sent3), ApiKey::Produce, 12) else {
        panic!()
    };
    assert_eq!(summary(&m3, 3), [(5, 87), (6, 0)]);
    assert!(!chain.wants_response(ApiKey::Produce, 12));
}

/// A small PRNG (xorshift) for the differential test.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn check_json_agrees_with_serde_json_on_mutated_documents() {
    let seeds: &[&[u8]] = &[
        br#"{"id": 12, "name": "caf\u00e9 \"x\"", "tags": ["a", "b"], "nested": {"ok": true, "n": null, "f": -1.5e-3}}"#,
        br#"[0, -0, 1e5, 2.5E+2, "\ud83d\ude00", {}, [], [[{"a": [1]}]]]"#,
        "{\"é\": \"😀\", \"t\": \"\\t\\n\\/\"}".as_bytes(),
        b" true ",
        b"\"plain\"",
    ];
    let alphabet = b"{}[],:\" \\/0123456789-+.eEtrufalsn\tu\x01\xc3\xa9abcdefABCDEF\n";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut valid, mut invalid) = (0, 0);
    for round in 0..60_000 {
        let mut doc = seeds[round % seeds.len()].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(doc.len() + 1);
            match rng.below(3) {
                0 if at < doc.len() => {
                    doc.remove(at);
                }
                1 if at < doc.len() => doc[at] = alphabet[rng.below(alphabet.len())],
                _ => doc.insert(at, alphabet[rng.below(alphabet.len())]),
            }
        }
        let ours = check_json(&doc);
        let theirs = serde_json::from_slice::<serde_json::Value>(&doc);
        if let Err(e) = &theirs
            && e.to_string().contains("number out of range")
        {
            // serde_json's Value holds f64s; check_json checks syntax only.
            continue;
        }
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{:?}: ours {ours:?}, serde_json {theirs:?}",
            String::from_utf8_lossy(&doc)
        );
        if ours.is_ok() { valid += 1 } else { invalid += 1 }
    }
    // Both kinds were exercised.
    assert!(valid > 1000 && invalid > 1000, "{valid} valid, {invalid} invalid");
}
