//! Wall-clock benches (criterion) of odradek-protocol 0.1 and nisshi-sans-io 0.8 on the
//! frames of kwire's `benches/codec.rs`, in groups of the same names, so that the results
//! land beside kwire's in `target/criterion/<frame>/<id>/` (see `.cargo/config.toml`) and
//! `benches/report.py` shows them in one report.
//!
//! Per frame (criterion group = frame name):
//!
//! - `odradek_decode`: `Message::decode(&mut Bytes, version)` of the body, owned (`String`s
//!   and `Vec`s; dropping the value is timed too), from a `Bytes` as its docs ask (a
//!   reference-counted clone of one buffer per iteration). Throughput: the body.
//! - `odradek_encode`: `Message::encode` of that value into a reused `BytesMut`.
//! - `nisshi_decode_frame`: `Frame::request_from_bytes` / `Frame::response_from_bytes` of
//!   the whole frame (size prefix and header included: nisshi has no body-only entry
//!   point), owned, through its serde deserializer. Throughput: the frame.
//! - `nisshi_encode_frame`: `Frame::request` / `Frame::response` of the decoded header and
//!   body into a new `Bytes` (its only encoder; it takes the values by value, so they are
//!   cloned in criterion's setup, outside the timing).
//! - `kwire_frame_view_walk`: for comparison with nisshi, kwire on the same whole frame:
//!   `dispatch::parse_request` / `parse_response` (header and body view) plus the walk of
//!   `kwire_view_walk`.
//!
//! Before any timing, every frame is checked: each peer must decode to the last byte, read
//! back the figures kwire's own walk reads (the same fields summed the same way, compared
//! with `support::view_walk` over kwire's view), and re-encode the body (odradek) or the
//! frame (nisshi) byte for byte. A frame that fails a check is reported on stderr and not
//! benchmarked for that peer. nisshi 0.8.1's schemas stop at ListOffsets v9, yet it decodes
//! v10 frames as v9: the two v10 requests lose their TimeoutMs and fail the checks (not
//! measured), the v10 response has no field that v9 lacks and passes.

#[path = "../../support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use kwire::dispatch;
use kwire::ApiKey;
use support::Prepared;

use odradek_protocol::messages as od;
use odradek_protocol::wire::RawTaggedField;

fn add(acc: &mut u64, v: i64) {
    *acc = acc.wrapping_add(v as u64);
}

/// The walks: the fields that `support::walk_request` / `walk_response` read from kwire's
/// views, read from odradek's owned values and summed the same way.
mod odradek_walk {
    use super::*;

    fn tags(fields: &[RawTaggedField]) -> u64 {
        fields.iter().fold(0, |acc, f| acc.wrapping_add(u64::from(f.tag) + f.data.len() as u64))
    }

    pub fn api_versions_request(v: &od::api_versions_request::ApiVersionsRequest) -> u64 {
        let mut s = 0;
        add(&mut s, v.client_software_name.len() as i64);
        add(&mut s, v.client_software_version.len() as i64);
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }

    pub fn list_groups_request(v: &od::list_groups_request::ListGroupsRequest) -> u64 {
        let mut s = 0;
        for f in v.states_filter.iter().chain(v.types_filter.iter()) {
            add(&mut s, f.len() as i64);
        }
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }

    pub fn list_offsets_request(v: &od::list_offsets_request::ListOffsetsRequest) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.replica_id));
        add(&mut s, i64::from(v.isolation_level));
        add(&mut s, i64::from(v.timeout_ms));
        for t in &v.topics {
            add(&mut s, t.name.len() as i64);
            for p in &t.partitions {
                add(&mut s, i64::from(p.partition_index));
                add(&mut s, i64::from(p.current_leader_epoch));
                add(&mut s, p.timestamp);
                s = s.wrapping_add(tags(&p.unknown_tagged_fields));
            }
            s = s.wrapping_add(tags(&t.unknown_tagged_fields));
        }
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }

    pub fn api_versions_response(v: &od::api_versions_response::ApiVersionsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.error_code));
        for k in &v.api_keys {
            add(&mut s, i64::from(k.api_key));
            add(&mut s, i64::from(k.min_version));
            add(&mut s, i64::from(k.max_version));
            s = s.wrapping_add(tags(&k.unknown_tagged_fields));
        }
        add(&mut s, i64::from(v.throttle_time_ms));
        for f in v.supported_features.iter().flatten() {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.min_version));
            add(&mut s, i64::from(f.max_version));
            s = s.wrapping_add(tags(&f.unknown_tagged_fields));
        }
        add(&mut s, v.finalized_features_epoch.unwrap_or(-1));
        for f in v.finalized_features.iter().flatten() {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.max_version_level));
            add(&mut s, i64::from(f.min_version_level));
            s = s.wrapping_add(tags(&f.unknown_tagged_fields));
        }
        add(&mut s, i64::from(v.zk_migration_ready.unwrap_or(false)));
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }

    pub fn list_groups_response(v: &od::list_groups_response::ListGroupsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.throttle_time_ms));
        add(&mut s, i64::from(v.error_code));
        for g in &v.groups {
            add(&mut s, g.group_id.len() as i64);
            add(&mut s, g.protocol_type.len() as i64);
            add(&mut s, g.group_state.len() as i64);
            add(&mut s, g.group_type.len() as i64);
            s = s.wrapping_add(tags(&g.unknown_tagged_fields));
        }
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }

    pub fn list_offsets_response(v: &od::list_offsets_response::ListOffsetsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.throttle_time_ms));
        for t in &v.topics {
            add(&mut s, t.name.len() as i64);
            for p in &t.partitions {
                add(&mut s, i64::from(p.partition_index));
                add(&mut s, i64::from(p.error_code));
                add(&mut s, p.timestamp);
                add(&mut s, p.offset);
                add(&mut s, i64::from(p.leader_epoch));
                s = s.wrapping_add(tags(&p.unknown_tagged_fields));
            }
            s = s.wrapping_add(tags(&t.unknown_tagged_fields));
        }
        s.wrapping_add(tags(&v.unknown_tagged_fields))
    }
}

/// Checks odradek on one body (decode to the last byte, the walk equal to kwire's, a byte
/// for byte re-encode) and benchmarks it.
fn odradek<T: odradek_protocol::Message>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    body: &[u8],
    ver: i16,
    walk: fn(&T) -> u64,
    expected: u64,
) -> Result<(), String> {
    use bytes::Buf as _;
    let bytes = Bytes::copy_from_slice(body);
    let mut rest = bytes.clone();
    let value = T::decode(&mut rest, ver).map_err(|e| format!("decode: {e}"))?;
    if rest.has_remaining() {
        return Err(format!("decode left {} of {} bytes", rest.remaining(), body.len()));
    }
    let got = walk(&value);
    if got != expected {
        return Err(format!("walk {got:#x}, kwire's {expected:#x}"));
    }
    let mut out = BytesMut::with_capacity(body.len() * 2);
    value.encode(&mut out, ver).map_err(|e| format!("encode: {e}"))?;
    if out[..] != body[..] {
        return Err(format!("re-encode differs ({} bytes, body {})", out.len(), body.len()));
    }
    g.bench_function("odradek_decode", |b| {
        b.iter(|| {
            let mut buf = black_box(&bytes).clone();
            black_box(T::decode(&mut buf, ver).unwrap())
        })
    });
    g.bench_function("odradek_encode", |b| {
        b.iter(|| {
            out.clear();
            black_box(&value).encode(&mut out, ver).unwrap();
            black_box(&mut out);
        })
    });
    Ok(())
}

fn odradek_frame(g: &mut BenchmarkGroup<'_, WallTime>, p: &Prepared, expected: u64) -> Result<(), String> {
    let (body, ver) = (p.body(), p.version);
    match (p.key, p.is_request()) {
        (ApiKey::ApiVersions, true) => odradek(g, body, ver, odradek_walk::api_versions_request, expected),
        (ApiKey::ApiVersions, false) => odradek(g, body, ver, odradek_walk::api_versions_response, expected),
        (ApiKey::ListGroups, true) => odradek(g, body, ver, odradek_walk::list_groups_request, expected),
        (ApiKey::ListGroups, false) => odradek(g, body, ver, odradek_walk::list_groups_response, expected),
        (ApiKey::ListOffsets, true) => odradek(g, body, ver, odradek_walk::list_offsets_request, expected),
        (ApiKey::ListOffsets, false) => odradek(g, body, ver, odradek_walk::list_offsets_response, expected),
        _ => unreachable!(),
    }
}

/// The same walks over nisshi's owned values (every array and most strings are `Option`s
/// there; an absent one reads as kwire's default). Its public structs keep no unknown tagged
/// fields, so there are none to add (these frames have none: the re-encode checks it).
mod nisshi_walk {
    use super::*;

    fn str_len(s: &Option<String>) -> i64 {
        s.as_ref().map_or(0, |s| s.len() as i64)
    }

    pub fn api_versions_request(v: &nisshi_sans_io::ApiVersionsRequest) -> u64 {
        let mut s = 0;
        add(&mut s, str_len(&v.client_software_name));
        add(&mut s, str_len(&v.client_software_version));
        s
    }

    pub fn list_groups_request(v: &nisshi_sans_io::ListGroupsRequest) -> u64 {
        let mut s = 0;
        for f in v.states_filter.iter().flatten().chain(v.types_filter.iter().flatten()) {
            add(&mut s, f.len() as i64);
        }
        s
    }

    pub fn list_offsets_request(v: &nisshi_sans_io::ListOffsetsRequest) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.replica_id));
        add(&mut s, i64::from(v.isolation_level.unwrap_or(0)));
        // TimeoutMs is v10+, and nisshi's schema stops at v9: kwire reads 0 below v10.
        add(&mut s, 0);
        for t in v.topics.iter().flatten() {
            add(&mut s, t.name.len() as i64);
            for p in t.partitions.iter().flatten() {
                add(&mut s, i64::from(p.partition_index));
                add(&mut s, i64::from(p.current_leader_epoch.unwrap_or(-1)));
                add(&mut s, p.timestamp);
            }
        }
        s
    }

    pub fn api_versions_response(v: &nisshi_sans_io::ApiVersionsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.error_code));
        for k in v.api_keys.iter().flatten() {
            add(&mut s, i64::from(k.api_key));
            add(&mut s, i64::from(k.min_version));
            add(&mut s, i64::from(k.max_version));
        }
        add(&mut s, i64::from(v.throttle_time_ms.unwrap_or(0)));
        for f in v.supported_features.iter().flatten() {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.min_version));
            add(&mut s, i64::from(f.max_version));
        }
        add(&mut s, v.finalized_features_epoch.unwrap_or(-1));
        for f in v.finalized_features.iter().flatten() {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.max_version_level));
            add(&mut s, i64::from(f.min_version_level));
        }
        add(&mut s, i64::from(v.zk_migration_ready.unwrap_or(false)));
        s
    }

    pub fn list_groups_response(v: &nisshi_sans_io::ListGroupsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.throttle_time_ms.unwrap_or(0)));
        add(&mut s, i64::from(v.error_code));
        for g in v.groups.iter().flatten() {
            add(&mut s, g.group_id.len() as i64);
            add(&mut s, g.protocol_type.len() as i64);
            add(&mut s, str_len(&g.group_state));
            add(&mut s, str_len(&g.group_type));
        }
        s
    }

    pub fn list_offsets_response(v: &nisshi_sans_io::ListOffsetsResponse) -> u64 {
        let mut s = 0;
        add(&mut s, i64::from(v.throttle_time_ms.unwrap_or(0)));
        for t in v.topics.iter().flatten() {
            add(&mut s, t.name.len() as i64);
            for p in t.partitions.iter().flatten() {
                add(&mut s, i64::from(p.partition_index));
                add(&mut s, i64::from(p.error_code));
                add(&mut s, p.timestamp.unwrap_or(-1));
                add(&mut s, p.offset.unwrap_or(-1));
                add(&mut s, i64::from(p.leader_epoch.unwrap_or(-1)));
            }
        }
        s
    }
}

/// nisshi's walk of a decoded frame's body, by API and direction.
fn nisshi_walk(p: &Prepared, body: &nisshi_sans_io::Body) -> Result<u64, String> {
    use nisshi_sans_io as n;
    let body = body.clone();
    let e = |e: n::Error| format!("body type: {e}");
    Ok(match (p.key, p.is_request()) {
        (ApiKey::ApiVersions, true) => {
            nisshi_walk::api_versions_request(&n::ApiVersionsRequest::try_from(body).map_err(e)?)
        }
        (ApiKey::ApiVersions, false) => {
            nisshi_walk::api_versions_response(&n::ApiVersionsResponse::try_from(body).map_err(e)?)
        }
        (ApiKey::ListGroups, true) => {
            nisshi_walk::list_groups_request(&n::ListGroupsRequest::try_from(body).map_err(e)?)
        }
        (ApiKey::ListGroups, false) => {
            nisshi_walk::list_groups_response(&n::ListGroupsResponse::try_from(body).map_err(e)?)
        }
        (ApiKey::ListOffsets, true) => {
            nisshi_walk::list_offsets_request(&n::ListOffsetsRequest::try_from(body).map_err(e)?)
        }
        (ApiKey::ListOffsets, false) => {
            nisshi_walk::list_offsets_response(&n::ListOffsetsResponse::try_from(body).map_err(e)?)
        }
        _ => unreachable!(),
    })
}

/// Checks nisshi on one whole frame (decode, the walk equal to kwire's, a byte for byte
/// re-encode of the frame) and benchmarks it.
fn nisshi(g: &mut BenchmarkGroup<'_, WallTime>, p: &Prepared, expected: u64) -> Result<(), String> {
    use nisshi_sans_io::Frame;
    let (frame, key, ver, request) = (&p.frame[..], p.key as i16, p.version, p.is_request());
    let decode = |bytes: &[u8]| {
        if request { Frame::request_from_bytes(bytes) } else { Frame::response_from_bytes(bytes, key, ver) }
    };
    let decoded = decode(frame).map_err(|e| format!("decode: {e}"))?;
    let got = nisshi_walk(p, &decoded.body)?;
    if got != expected {
        return Err(format!("walk {got:#x}, kwire's {expected:#x}"));
    }
    let encode = |header: nisshi_sans_io::Header, body: nisshi_sans_io::Body| {
        if request { Frame::request(header, body) } else { Frame::response(header, body, key, ver) }
    };
    let out = encode(decoded.header.clone(), decoded.body.clone()).map_err(|e| format!("encode: {e}"))?;
    if out[..] != frame[..] {
        return Err(format!("re-encode differs ({} bytes, frame {})", out.len(), frame.len()));
    }
    g.throughput(Throughput::Bytes(frame.len() as u64));
    g.bench_function("nisshi_decode_frame", |b| b.iter(|| black_box(decode(black_box(frame)).unwrap())));
    g.bench_function("nisshi_encode_frame", |b| {
        b.iter_batched(
            || (decoded.header.clone(), decoded.body.clone()),
            |(header, body)| encode(header, body).unwrap(),
            BatchSize::SmallInput,
        )
    });
    Ok(())
}

/// kwire on the whole frame, as nisshi is measured: the header parsed and the body viewed
/// (`dispatch`), then the walk of `kwire_view_walk`.
fn kwire_frame(g: &mut BenchmarkGroup<'_, WallTime>, p: &Prepared) {
    let (frame, key, ver) = (&p.frame[4..], p.key, p.version);
    g.throughput(Throughput::Bytes(p.frame.len() as u64));
    if p.is_request() {
        g.bench_function("kwire_frame_view_walk", |b| {
            b.iter(|| {
                let r = dispatch::parse_request(black_box(frame)).unwrap();
                black_box(r.header.correlation_id());
                black_box(support::walk_request(&r.body))
            })
        });
    } else {
        g.bench_function("kwire_frame_view_walk", |b| {
            b.iter(|| {
                let r = dispatch::parse_response(black_box(frame), key, ver).unwrap();
                black_box(r.header.correlation_id());
                black_box(support::walk_response(&r.body))
            })
        });
    }
}

fn frames(c: &mut Criterion) {
    let mut failed = Vec::new();
    for p in Prepared::all() {
        let expected = support::view_walk(p.key, p.version, p.is_request(), p.body());
        let mut g = c.benchmark_group(p.name);
        g.throughput(Throughput::Bytes(p.body().len() as u64));
        if let Err(e) = odradek_frame(&mut g, &p, expected) {
            failed.push(format!("odradek-protocol, {}: {e}", p.name));
        }
        if let Err(e) = nisshi(&mut g, &p, expected) {
            failed.push(format!("nisshi-sans-io, {}: {e}", p.name));
        }
        kwire_frame(&mut g, &p);
        g.finish();
    }
    if failed.is_empty() {
        eprintln!(
            "odradek-protocol and nisshi-sans-io: every frame decoded, matched kwire's walk and re-encoded byte for byte"
        );
    } else {
        eprintln!("not benchmarked ({} peer-frame pairs failed a check):", failed.len());
        for f in &failed {
            eprintln!("  {f}");
        }
    }
}

/// kwire's settings (`benches/codec.rs`); command-line arguments override them.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(100)
}

criterion_group! {
    name = benches;
    config = config();
    targets = frames
}
criterion_main!(benches);
