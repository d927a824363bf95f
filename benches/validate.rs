//! Record validation (`kwire::filter::ValidateRecords`): a Produce request of one partition,
//! one batch of 1,000 records with JSON values of about 1 KB (1 MB, the size of the proxy
//! bench's Produce requests), through a `FilterChain` with the rule
//! `orders=json,key,header=trace-id,max-bytes=4096`; uncompressed and lz4. Beside it, on the
//! same batch: its CRC-32C alone, the broker's validate-and-assign
//! (`records::validate::validate_and_assign`), `check_json` over the values alone, and
//! serde_json parsing the values into a `Value` (a tree-building parser).
//!
//! `cargo bench --bench validate`; figures go to `docs/proxy.md` by hand.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kwire::filter::{FilterChain, Rule, ValidateRecords, Verdict, check_json};
use kwire::messages::ProduceRequest;
use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
use kwire::records::validate::{ValidateConfig, validate_and_assign};
use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord, RecordBatch, crc};

const RECORDS: usize = 1000;

/// An order of about 1 KB, its fields varied by `i`.
fn order(i: usize) -> String {
    let items: Vec<String> = (0..7)
        .map(|j| {
            format!(
                r#"{{"sku": "SKU-{:05}", "name": "item {j} of order {i}, \"boxed\"", "qty": {}, "price": {}.{:02}, "tags": ["a", "b\u00e9", null, true]}}"#,
                (i * 7 + j) % 100_000,
                1 + (i + j) % 9,
                10 + (i * j) % 90,
                (i + 3 * j) % 100
            )
        })
        .collect();
    format!(
        r#"{{"id": {i}, "customer": {{"id": "c-{}", "name": "Customer {}", "vip": {}}}, "items": [{}], "total": -1.25e3, "note": null}}"#,
        i % 977,
        i % 977,
        i.is_multiple_of(2),
        items.join(", ")
    )
}

fn batch(values: &[String], codec: Compression) -> Vec<u8> {
    let headers = [NewHeader { key: b"trace-id", value: Some(b"0af7651916cd43dd8448eb211c80319c") }];
    let keys: Vec<String> = (0..values.len()).map(|i| format!("order-{i}")).collect();
    let records: Vec<NewRecord<'_>> = values
        .iter()
        .zip(&keys)
        .map(|(v, k)| NewRecord::new(Some(k.as_bytes()), Some(v.as_bytes())).with_headers(&headers))
        .collect();
    let mut b = BatchBuilder::new(0, 1_700_000_000_000, &records);
    b.compression = codec;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

fn produce_frame(batch: &[u8]) -> Vec<u8> {
    let partitions = [PartitionProduceData { index: 0, records: Some(batch.into()), ..Default::default() }];
    let topics = [TopicProduceData {
        name: "orders".into(),
        partition_data: (&partitions).into(),
        ..Default::default()
    }];
    let body =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: (&topics).into(), ..Default::default() };
    let mut frame = vec![0u8; batch.len() + 256];
    let n = kwire::dispatch::encode_request(&body, 12, 1, Some("bench"), &mut frame).unwrap();
    frame.truncate(n);
    frame.drain(..4);
    frame
}

fn chain() -> FilterChain {
    let rules: Vec<Rule> = vec!["orders=json,key,header=trace-id,max-bytes=4096".parse().unwrap()];
    let mut chain = FilterChain::new();
    chain.push(ValidateRecords::new(rules));
    chain
}

fn bench(c: &mut Criterion) {
    let values: Vec<String> = (0..RECORDS).map(order).collect();
    let mean = values.iter().map(String::len).sum::<usize>() / RECORDS;
    assert!((900..=1200).contains(&mean), "values of about 1 KB: {mean}");
    for v in &values {
        assert!(check_json(v.as_bytes()).is_ok(), "{v}");
        assert!(serde_json::from_str::<serde_json::Value>(v).is_ok());
    }
    let plain = batch(&values, Compression::None);
    let lz4 = batch(&values, Compression::Lz4);
    let (frame, lz4_frame) = (produce_frame(&plain), produce_frame(&lz4));
    eprintln!(
        "{RECORDS} values of {mean} bytes on average; the batch {} bytes, {} with lz4",
        plain.len(),
        lz4.len()
    );
    let mut g = c.benchmark_group("validate/1000x1KB-json");
    g.throughput(Throughput::Bytes(plain.len() as u64));

    let mut filters = chain();
    assert_eq!(filters.on_request(&frame), Verdict::Forward);
    g.bench_function("filter", |b| b.iter(|| filters.on_request(black_box(&frame))));
    let mut filters = chain();
    assert_eq!(filters.on_request(&lz4_frame), Verdict::Forward);
    g.bench_function("filter_lz4", |b| b.iter(|| filters.on_request(black_box(&lz4_frame))));

    g.bench_function("crc32c", |b| b.iter(|| crc::crc32c(black_box(&plain[21..]))));
    let mut copy = plain.clone();
    let mut config = ValidateConfig::new(0, 1_700_000_000_000);
    config.max_message_bytes = 8 << 20;
    let mut scratch = vec![0u8; 4 << 20];
    validate_and_assign(&mut copy, &config, &mut scratch).unwrap();
    g.bench_function("records_validate", |b| {
        b.iter(|| validate_and_assign(black_box(&mut copy), &config, &mut scratch).unwrap())
    });
    let parsed = RecordBatch::new(&plain).unwrap();
    g.bench_function("check_json_values", |b| {
        b.iter(|| {
            for r in parsed.records_unverified().unwrap() {
                check_json(black_box(r.unwrap().value().unwrap())).unwrap();
            }
        })
    });
    g.bench_function("serde_json_values", |b| {
        b.iter(|| {
            for r in parsed.records_unverified().unwrap() {
                black_box(serde_json::from_slice::<serde_json::Value>(r.unwrap().value().unwrap()).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(30);
    targets = bench
}
criterion_main!(benches);
