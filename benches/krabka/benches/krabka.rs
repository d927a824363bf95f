//! Wall-clock benches (criterion) of krabka-protocol 0.8 on the frames of kwire's
//! `benches/codec.rs`, in groups of the same names, so that the results land beside kwire's
//! in `target/criterion/<frame>/<id>/` (see `.cargo/config.toml`) and `benches/report.py`
//! shows them in one report.
//!
//! Per frame (criterion group = frame name), with `Throughput::Bytes` of the body, as kwire's:
//!
//! - `krabka_decode`: the owned decode (`Decode::decode` from a `&[u8]`).
//! - `krabka_view_walk`: the borrowed, zero-copy decode (`DecodeBorrow::decode_borrow`)
//!   plus a walk that reads every field of every element at every depth, strings as
//!   `&str`: the fields that kwire's `kwire_view_walk` reads (`benches/support/mod.rs`).
//! - `krabka_encode`: `Encode::encode` of the owned value into a reused `Vec<u8>`.
//!
//! The body is what follows the size prefix and the request or response header, which are
//! parsed with krabka's own header types. Before timing, every frame must decode (owned and
//! borrowed) to its last byte and re-encode byte for byte; a frame that does not is
//! reported on stderr and not benchmarked.
//!
//! Run with `bash benches/run.sh` (everything), or from this directory with
//! `cargo bench` (`rust-toolchain.toml` picks the toolchain).

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use krabka_protocol::borrowed::{request_header::RequestHeader, response_header::ResponseHeader};
use krabka_protocol::{DecodeBorrow, UnknownTaggedFields, borrowed as b, owned as o};

#[path = "../../support/frames.rs"]
mod frames;

use frames::{FRAMES, hex};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    ApiVersions,
    ListGroups,
    ListOffsets,
}

/// One frame: its name, API, version, direction, and the offset of its body.
struct Frame {
    name: &'static str,
    api: Api,
    version: i16,
    request: bool,
    bytes: Vec<u8>,
    body_start: usize,
}

impl Frame {
    /// Loads a frame and finds its body with krabka's header decoders. Request headers are
    /// v2 for flexible request versions and v1 otherwise; response headers are v1 for
    /// flexible response versions and v0 otherwise, except ApiVersions responses, whose
    /// header is always v0.
    fn new(name: &'static str, text: &str) -> Result<Frame, String> {
        let bytes = hex(text);
        let size = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(size, bytes.len() - 4, "{name}: size prefix");
        let api = if name.starts_with("apiversions") {
            Api::ApiVersions
        } else if name.starts_with("listgroups") {
            Api::ListGroups
        } else {
            Api::ListOffsets
        };
        let version: i16 = name.split("_v").nth(1).unwrap().split('_').next().unwrap().parse().unwrap();
        let request = name.contains("_request");
        let flexible = match api {
            Api::ApiVersions => o::api_versions_request::is_flexible(version),
            Api::ListGroups => o::list_groups_request::is_flexible(version),
            Api::ListOffsets => o::list_offsets_request::is_flexible(version),
        };
        let mut rest = &bytes[4..];
        if request {
            let header = RequestHeader::decode_borrow(&mut rest, if flexible { 2 } else { 1 })
                .map_err(|e| format!("request header: {e}"))?;
            let key = match api {
                Api::ApiVersions => o::api_versions_request::API_KEY,
                Api::ListGroups => o::list_groups_request::API_KEY,
                Api::ListOffsets => o::list_offsets_request::API_KEY,
            };
            if (header.request_api_key, header.request_api_version) != (key, version) {
                return Err(format!(
                    "header says API {} v{}",
                    header.request_api_key, header.request_api_version
                ));
            }
        } else {
            let header_version = i16::from(flexible && api != Api::ApiVersions);
            ResponseHeader::decode_borrow(&mut rest, header_version)
                .map_err(|e| format!("response header: {e}"))?;
        }
        let body_start = bytes.len() - rest.len();
        Ok(Frame { name, api, version, request, bytes, body_start })
    }

    fn body(&self) -> &[u8] {
        &self.bytes[self.body_start..]
    }
}

fn tags(fields: &UnknownTaggedFields) -> u64 {
    fields.0.iter().fold(0, |acc, f| acc.wrapping_add(u64::from(f.tag) + f.bytes.len() as u64))
}

fn add(acc: &mut u64, v: i64) {
    *acc = acc.wrapping_add(v as u64);
}

/// The walks: every field of a borrowed body that kwire's `walk_request` and
/// `walk_response` read, at every depth, strings as `&str`, summed the same way.
trait Walk {
    fn walk(&self) -> u64;
}

impl Walk for b::api_versions_request::ApiVersionsRequest<'_> {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        add(&mut s, self.client_software_name.len() as i64);
        add(&mut s, self.client_software_version.len() as i64);
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

impl Walk for b::list_groups_request::ListGroupsRequest<'_> {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        for f in self.states_filter.iter().chain(self.types_filter.iter()) {
            add(&mut s, f.len() as i64);
        }
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

impl Walk for b::list_offsets_request::ListOffsetsRequest<'_> {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        add(&mut s, i64::from(self.replica_id));
        add(&mut s, i64::from(self.isolation_level));
        add(&mut s, i64::from(self.timeout_ms));
        for t in &self.topics {
            add(&mut s, t.name.len() as i64);
            for p in &t.partitions {
                add(&mut s, i64::from(p.partition_index));
                add(&mut s, i64::from(p.current_leader_epoch));
                add(&mut s, p.timestamp);
                s = s.wrapping_add(tags(&p.unknown_tagged_fields));
            }
            s = s.wrapping_add(tags(&t.unknown_tagged_fields));
        }
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

impl Walk for b::api_versions_response::ApiVersionsResponse {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        add(&mut s, i64::from(self.error_code));
        for k in &self.api_keys {
            add(&mut s, i64::from(k.api_key));
            add(&mut s, i64::from(k.min_version));
            add(&mut s, i64::from(k.max_version));
            s = s.wrapping_add(tags(&k.unknown_tagged_fields));
        }
        add(&mut s, i64::from(self.throttle_time_ms));
        for f in &self.supported_features {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.min_version));
            add(&mut s, i64::from(f.max_version));
            s = s.wrapping_add(tags(&f.unknown_tagged_fields));
        }
        add(&mut s, self.finalized_features_epoch);
        for f in &self.finalized_features {
            add(&mut s, f.name.len() as i64);
            add(&mut s, i64::from(f.max_version_level));
            add(&mut s, i64::from(f.min_version_level));
            s = s.wrapping_add(tags(&f.unknown_tagged_fields));
        }
        add(&mut s, i64::from(self.zk_migration_ready));
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

impl Walk for b::list_groups_response::ListGroupsResponse<'_> {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        add(&mut s, i64::from(self.throttle_time_ms));
        add(&mut s, i64::from(self.error_code));
        for g in &self.groups {
            add(&mut s, g.group_id.len() as i64);
            add(&mut s, g.protocol_type.len() as i64);
            add(&mut s, g.group_state.len() as i64);
            add(&mut s, g.group_type.len() as i64);
            s = s.wrapping_add(tags(&g.unknown_tagged_fields));
        }
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

impl Walk for b::list_offsets_response::ListOffsetsResponse<'_> {
    fn walk(&self) -> u64 {
        let mut s = 0u64;
        add(&mut s, i64::from(self.throttle_time_ms));
        for t in &self.topics {
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
        s.wrapping_add(tags(&self.unknown_tagged_fields))
    }
}

/// Checks one frame and benchmarks it: `$owned` and `$borrowed` are krabka's owned and
/// borrowed types of the frame's body. Returns an error (and benchmarks nothing) if krabka
/// does not decode the body to its last byte or does not re-encode it byte for byte.
macro_rules! krabka {
    ($g:expr, $body:expr, $ver:expr, $owned:ty, $borrowed:ident :: $($path:ident)::+) => {{
        use krabka_protocol::{Decode, Encode};
        let (g, body, ver): (&mut BenchmarkGroup<'_, WallTime>, &[u8], i16) = ($g, $body, $ver);
        let check = || -> Result<$owned, String> {
            let mut rest = body;
            let value = <$owned>::decode(&mut rest, ver).map_err(|e| format!("owned decode: {e}"))?;
            if !rest.is_empty() {
                return Err(format!("owned decode left {} of {} bytes", rest.len(), body.len()));
            }
            let mut out = Vec::new();
            value.encode(&mut out, ver).map_err(|e| format!("owned encode: {e}"))?;
            if out != body {
                return Err(format!("owned re-encode differs ({} bytes, body {})", out.len(), body.len()));
            }
            if value.encoded_len(ver) != body.len() {
                return Err(format!("encoded_len {} != {}", value.encoded_len(ver), body.len()));
            }
            let mut rest = body;
            let view = $borrowed::$($path)::+::decode_borrow(&mut rest, ver)
                .map_err(|e| format!("borrowed decode: {e}"))?;
            if !rest.is_empty() {
                return Err(format!("borrowed decode left {} of {} bytes", rest.len(), body.len()));
            }
            out.clear();
            view.encode(&mut out, ver).map_err(|e| format!("borrowed encode: {e}"))?;
            if out != body {
                return Err("borrowed re-encode differs".into());
            }
            if view.to_owned() != value {
                return Err("borrowed and owned decodes differ".into());
            }
            black_box(view.walk());
            Ok(value)
        };
        match check() {
            Err(e) => Err(e),
            Ok(value) => {
                g.bench_function("krabka_decode", |b| {
                    b.iter(|| {
                        let mut buf = black_box(body);
                        black_box(<$owned>::decode(&mut buf, ver).unwrap())
                    })
                });
                g.bench_function("krabka_view_walk", |b| {
                    b.iter(|| {
                        let mut buf = black_box(body);
                        let view = $borrowed::$($path)::+::decode_borrow(&mut buf, ver).unwrap();
                        black_box(view.walk())
                    })
                });
                let mut out: Vec<u8> = Vec::with_capacity(body.len() * 2);
                g.bench_function("krabka_encode", |b| {
                    b.iter(|| {
                        out.clear();
                        black_box(&value).encode(&mut out, ver).unwrap();
                        black_box(&mut out);
                    })
                });
                Ok(())
            }
        }
    }};
}

fn frames(c: &mut Criterion) {
    let mut failed = Vec::new();
    for &(name, text) in FRAMES {
        let frame = match Frame::new(name, text) {
            Ok(frame) => frame,
            Err(e) => {
                failed.push(format!("{name}: {e}"));
                continue;
            }
        };
        let (body, ver) = (frame.body(), frame.version);
        let mut g = c.benchmark_group(frame.name);
        g.throughput(Throughput::Bytes(body.len() as u64));
        let outcome = match (frame.api, frame.request) {
            (Api::ApiVersions, true) => krabka!(
                &mut g,
                body,
                ver,
                o::api_versions_request::ApiVersionsRequest,
                b::api_versions_request::ApiVersionsRequest
            ),
            (Api::ApiVersions, false) => krabka!(
                &mut g,
                body,
                ver,
                o::api_versions_response::ApiVersionsResponse,
                b::api_versions_response::ApiVersionsResponse
            ),
            (Api::ListGroups, true) => krabka!(
                &mut g,
                body,
                ver,
                o::list_groups_request::ListGroupsRequest,
                b::list_groups_request::ListGroupsRequest
            ),
            (Api::ListGroups, false) => krabka!(
                &mut g,
                body,
                ver,
                o::list_groups_response::ListGroupsResponse,
                b::list_groups_response::ListGroupsResponse
            ),
            (Api::ListOffsets, true) => krabka!(
                &mut g,
                body,
                ver,
                o::list_offsets_request::ListOffsetsRequest,
                b::list_offsets_request::ListOffsetsRequest
            ),
            (Api::ListOffsets, false) => krabka!(
                &mut g,
                body,
                ver,
                o::list_offsets_response::ListOffsetsResponse,
                b::list_offsets_response::ListOffsetsResponse
            ),
        };
        g.finish();
        if let Err(e) = outcome {
            failed.push(format!("{name}: {e}"));
        }
    }
    if failed.is_empty() {
        eprintln!("krabka-protocol: every frame decoded (owned and borrowed) and re-encoded byte for byte");
    } else {
        eprintln!("krabka-protocol could not round-trip {} frame(s), not benchmarked:", failed.len());
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
