//! Wall-clock benches (criterion): kwire against `kafka-protocol` and against a plain copy
//! of the same bytes, on every seed and bench frame, in one run.
//!
//! Per frame (criterion group = frame name), with `Throughput::Bytes` of the body (of the
//! whole frame for `kwire_encode_frame`):
//!
//! - `copy`: the floor, `copy_from_slice` of the body into a reused buffer.
//! - `kwire_view`: view construction alone (structure and the body's own strings checked).
//! - `kwire_view_walk`: view construction plus reading every field of every element.
//! - `kwire_decode_ref`: the reference decoder (owned values).
//! - `kwire_encoded_len`, `kwire_encode` (into a reused buffer), `kwire_encode_frame`.
//! - `kp_decode` (`Decodable::decode` of the body from `Bytes`), `kp_encode` (into a
//!   reused `BytesMut`), `kp_compute_size`.
//!
//! A last group, `encoded_len_v5_scaling`, sizes ListOffsets v5 requests of 10 topics of
//! 10, 100 and 1000 partitions.
//!
//! Run with `cargo bench --bench codec`; `bash benches/run.sh` also writes the report.

mod support;

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable};
use kwire::ApiKey;
use support::Prepared;

fn frames(c: &mut Criterion) {
    for p in Prepared::all() {
        let (key, ver, req) = (p.key, p.version, p.is_request());
        let body = p.body();
        let mut out = vec![0u8; p.frame.len() + 64];
        let mut g = c.benchmark_group(p.name);
        g.throughput(Throughput::Bytes(body.len() as u64));

        let mut dst = vec![0u8; body.len()];
        g.bench_function("copy", |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(body));
                black_box(&mut dst);
            })
        });

        g.bench_function("kwire_view", |b| b.iter(|| support::view(key, ver, req, black_box(body))));
        g.bench_function("kwire_view_walk", |b| {
            b.iter(|| black_box(support::view_walk(key, ver, req, black_box(body))))
        });
        g.bench_function("kwire_decode_ref", |b| {
            b.iter(|| support::decode_reference(key, ver, req, black_box(body)))
        });
        g.bench_function("kwire_encoded_len", |b| {
            b.iter(|| black_box(support::encoded_len(black_box(&p.value), ver)))
        });
        g.bench_function("kwire_encode", |b| {
            b.iter(|| black_box(support::encode(black_box(&p.value), ver, black_box(&mut out[..]))))
        });

        match (key, req) {
            (ApiKey::ApiVersions, true) => kafka_protocol::<kp::ApiVersionsRequest>(&mut g, body, ver),
            (ApiKey::ApiVersions, false) => kafka_protocol::<kp::ApiVersionsResponse>(&mut g, body, ver),
            (ApiKey::ListGroups, true) => kafka_protocol::<kp::ListGroupsRequest>(&mut g, body, ver),
            (ApiKey::ListGroups, false) => kafka_protocol::<kp::ListGroupsResponse>(&mut g, body, ver),
            (ApiKey::ListOffsets, true) => kafka_protocol::<kp::ListOffsetsRequest>(&mut g, body, ver),
            (ApiKey::ListOffsets, false) => kafka_protocol::<kp::ListOffsetsResponse>(&mut g, body, ver),
            _ => unreachable!(),
        }

        g.throughput(Throughput::Bytes(p.frame.len() as u64));
        let client_id = p.client_id.as_deref();
        g.bench_function("kwire_encode_frame", |b| {
            b.iter(|| {
                let value = black_box(&p.value);
                let n =
                    support::encode_frame(value, ver, p.correlation_id, client_id, black_box(&mut out[..]));
                black_box(n)
            })
        });
        g.finish();
    }
}

/// kafka-protocol on the same body: decode from `Bytes` (a reference-counted clone of the
/// input per iteration, as a caller holding the frame would pass), encode into a reused
/// `BytesMut`, and compute the size. The encoded value is decoded from the same bytes.
fn kafka_protocol<T: Decodable + Encodable>(g: &mut BenchmarkGroup<'_, WallTime>, body: &[u8], ver: i16) {
    let bytes = Bytes::copy_from_slice(body);
    let value = T::decode(&mut bytes.clone(), ver).expect("kafka-protocol decodes the frame");
    let mut out = BytesMut::with_capacity(body.len() * 2);
    value.encode(&mut out, ver).unwrap();
    assert_eq!(&out[..], body, "kafka-protocol re-encodes the body byte for byte");
    assert_eq!(value.compute_size(ver).unwrap(), body.len());

    g.bench_function("kp_decode", |b| {
        b.iter(|| {
            let mut buf = black_box(&bytes).clone();
            black_box(T::decode(&mut buf, ver).unwrap())
        })
    });
    g.bench_function("kp_encode", |b| {
        b.iter(|| {
            out.clear();
            black_box(&value).encode(&mut out, ver).unwrap();
            black_box(&mut out);
        })
    });
    g.bench_function("kp_compute_size", |b| {
        b.iter(|| black_box(black_box(&value).compute_size(ver).unwrap()))
    });
}

/// `encoded_len` of ListOffsets v5 requests (fixed-size partitions) as the partition count
/// grows: kwire sizes each partition array with one multiplication; kafka-protocol's
/// `compute_size` for contrast.
fn encoded_len_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("encoded_len_v5_scaling");
    for n in [10, 100, 1000] {
        let value = support::list_offsets_request(n);
        let len = value.encoded_len(5).unwrap();
        let mut buf = vec![0u8; len];
        value.encode(5, &mut buf).unwrap();
        let kp_value = kp::ListOffsetsRequest::decode(&mut Bytes::from(buf), 5).unwrap();
        assert_eq!(kp_value.compute_size(5).unwrap(), len);
        let id = format!("10x{n}");
        g.bench_with_input(BenchmarkId::new("kwire_encoded_len", &id), &value, |b, v| {
            b.iter(|| black_box(black_box(v).encoded_len(5).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("kp_compute_size", &id), &kp_value, |b, v| {
            b.iter(|| black_box(black_box(v).compute_size(5).unwrap()))
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(100)
}

criterion_group! {
    name = benches;
    config = config();
    targets = frames, encoded_len_scaling
}
criterion_main!(benches);
