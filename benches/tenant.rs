//! A tenant's renaming (`kwire::filter::Tenant`) of a Fetch request of 20 topics × 10
//! partitions (version 12, the last that names topics), in one run:
//!
//! - `splice`: `filter::splice_request` putting the prefix on every topic name;
//! - `tenant_chain`: the whole filter path, a `FilterChain` with a `Tenant` (it splices);
//! - `value_tree`: decode, rename and encode through `reflect::StructValue`
//!   (`reflect::entities::rewrite`), and the header put back: the value-tree path.
//!
//! `cargo bench --bench tenant`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kwire::filter::{Edit, EntityKind, FilterChain, Tenant, Verdict, splice_request};
use kwire::messages::FetchRequest;
use kwire::messages::fetch::{FetchPartition, FetchTopic};
use kwire::reflect::{self, Entity};
use kwire::{ApiKey, Str};

const VERSION: i16 = 12;
const PREFIX: &str = "tenant-a.";

/// The request frame, without its size prefix.
fn fetch_frame() -> Vec<u8> {
    let partitions: Vec<FetchPartition> = (0..10)
        .map(|p| FetchPartition {
            partition: p,
            fetch_offset: 1000 * i64::from(p),
            partition_max_bytes: 1 << 20,
            ..Default::default()
        })
        .collect();
    let names: Vec<String> = (0..20).map(|t| format!("orders-topic-{t:02}")).collect();
    let topics: Vec<FetchTopic> = names
        .iter()
        .map(|n| FetchTopic {
            topic: Str::from(n.as_str()),
            partitions: (&partitions[..]).into(),
            ..Default::default()
        })
        .collect();
    let request =
        FetchRequest { max_wait_ms: 500, min_bytes: 1, topics: (&topics[..]).into(), ..Default::default() };
    let header = kwire::frame::RequestHeader {
        correlation_id: 7,
        client_id: Some("consumer-1"),
        ..Default::default()
    };
    let n = kwire::dispatch::request_len(&request, VERSION, &header).unwrap();
    let mut out = vec![0u8; n];
    kwire::dispatch::encode_request(&request, VERSION, 7, Some("consumer-1"), &mut out).unwrap();
    out.drain(..4);
    out
}

fn bench(c: &mut Criterion) {
    let frame = fetch_frame();
    let mut g = c.benchmark_group("tenant_fetch_20x10");
    g.bench_function("splice", |b| {
        b.iter(|| {
            splice_request(black_box(&frame), false, |kind, _| {
                (kind == EntityKind::TopicName).then_some(Edit::Prepend(PREFIX))
            })
            .unwrap()
        })
    });
    let mut chain = FilterChain::new();
    chain.push(Tenant::new(PREFIX));
    g.bench_function("tenant_chain", |b| {
        b.iter(|| match chain.on_request(black_box(&frame)) {
            Verdict::Replace(new) => new,
            other => panic!("{other:?}"),
        })
    });
    let request = kwire::dispatch::parse_request(&frame).unwrap();
    let header_len = request.header.as_bytes().len();
    let schema = reflect::request_schema(ApiKey::Fetch);
    g.bench_function("value_tree", |b| {
        b.iter(|| {
            let body =
                reflect::entities::rewrite(schema, VERSION, black_box(&frame[header_len..]), |e, s| {
                    (e == Entity::TopicName).then(|| format!("{PREFIX}{s}"))
                })
                .unwrap()
                .unwrap();
            let mut out = Vec::with_capacity(header_len + body.len());
            out.extend_from_slice(&frame[..header_len]);
            out.extend_from_slice(&body);
            out
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
