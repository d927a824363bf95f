//! What the criterion and gungraun benches share: the frames (compiled in, so that the
//! benches do not depend on the working directory or the environment), the kwire
//! operations they measure, and the walk that reads every field of a view.

#![allow(dead_code)]

use std::hint::black_box;

use kwire::AnyBody;
use kwire::ApiKey;
use kwire::dispatch;
use kwire::messages::list_offsets::{ListOffsetsPartition, ListOffsetsTopic};
use kwire::messages::{ListOffsetsRequest, RequestBody, RequestBodyView, ResponseBody, ResponseBodyView};
use kwire::wire::TaggedIter;
use kwire::{List, Str};

mod frames;

pub use frames::{FRAMES, hex};

/// The owned value decoded from a frame's body, which the encode benches write back.
pub enum Value {
    /// A request body.
    Request(RequestBody<'static>),
    /// A response body.
    Response(ResponseBody<'static>),
}

/// One frame, split and decoded once, with an output buffer to reuse.
pub struct Prepared {
    /// The file stem, e.g. `listoffsets_v10_request_10x100`.
    pub name: &'static str,
    /// The API.
    pub key: ApiKey,
    /// The API version.
    pub version: i16,
    /// The whole frame, size prefix included.
    pub frame: Vec<u8>,
    /// Where the body starts in `frame`.
    pub body_start: usize,
    /// The request header's correlation id (or the response's).
    pub correlation_id: i32,
    /// The request header's client id.
    pub client_id: Option<String>,
    /// The body as a kwire value (reference decoder).
    pub value: Value,
    /// A buffer for the encoders, larger than the frame.
    pub out: Vec<u8>,
}

impl Prepared {
    /// Loads and checks the frame called `name`.
    pub fn new(name: &str) -> Prepared {
        let &(name, text) = FRAMES.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}?"));
        let frame = hex(text);
        let size = i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(size, frame.len() - 4, "{name}: size prefix");
        let key = if name.starts_with("apiversions") {
            ApiKey::ApiVersions
        } else if name.starts_with("listgroups") {
            ApiKey::ListGroups
        } else {
            ApiKey::ListOffsets
        };
        let version: i16 = name.split("_v").nth(1).unwrap().split('_').next().unwrap().parse().unwrap();
        let out = vec![0u8; frame.len() + 64];
        let (body_start, correlation_id, client_id, value) = if name.contains("_request") {
            let req = dispatch::parse_request(&frame[4..]).unwrap();
            let body = req.body.as_bytes();
            let value = RequestBody::decode(body, key, version).unwrap();
            let start = frame.len() - body.len();
            (
                start,
                req.header.correlation_id(),
                req.header.client_id().map(String::from),
                Value::Request(value),
            )
        } else {
            let resp = dispatch::parse_response(&frame[4..], key, version).unwrap();
            let body = resp.body.as_bytes();
            let value = ResponseBody::decode(body, key, version).unwrap();
            (frame.len() - body.len(), resp.header.correlation_id(), None, Value::Response(value))
        };
        let p = Prepared { name, key, version, frame, body_start, correlation_id, client_id, value, out };
        p.self_check();
        p
    }

    /// Every prepared frame, in [`FRAMES`] order.
    pub fn all() -> Vec<Prepared> {
        FRAMES.iter().map(|(name, _)| Prepared::new(name)).collect()
    }

    /// Whether this is a request frame.
    pub fn is_request(&self) -> bool {
        matches!(self.value, Value::Request(_))
    }

    /// The body's bytes.
    pub fn body(&self) -> &[u8] {
        &self.frame[self.body_start..]
    }

    /// Checks that every measured operation succeeds and round-trips, so that the benches
    /// never time an error path.
    fn self_check(&self) {
        let body = self.body().to_vec();
        let mut out = self.out.clone();
        black_box(view_walk(self.key, self.version, self.is_request(), &body));
        let n = encode(&self.value, self.version, &mut out);
        assert_eq!(&out[..n], &body[..], "{}: body round trip", self.name);
        assert_eq!(encoded_len(&self.value, self.version), n);
        let n =
            encode_frame(&self.value, self.version, self.correlation_id, self.client_id.as_deref(), &mut out);
        assert_eq!(&out[..n], &self.frame[..], "{}: frame round trip", self.name);
    }
}

/// Builds the view of a body, which checks every byte of it.
#[inline(always)]
pub fn view(key: ApiKey, version: i16, request: bool, body: &[u8]) {
    if request {
        black_box(RequestBodyView::new(body, key, version).unwrap());
    } else {
        black_box(ResponseBodyView::new(body, key, version).unwrap());
    }
}

/// Builds the view of a body and reads every field of every element at every depth.
#[inline(always)]
pub fn view_walk(key: ApiKey, version: i16, request: bool, body: &[u8]) -> u64 {
    if request {
        walk_request(&RequestBodyView::new(body, key, version).unwrap())
    } else {
        walk_response(&ResponseBodyView::new(body, key, version).unwrap())
    }
}

/// Decodes a body with the reference decoder (owned values).
#[inline(always)]
pub fn decode_reference(key: ApiKey, version: i16, request: bool, body: &[u8]) {
    if request {
        black_box(RequestBody::decode(body, key, version).unwrap());
    } else {
        black_box(ResponseBody::decode(body, key, version).unwrap());
    }
}

/// The exact encoded size of a value.
#[inline(always)]
pub fn encoded_len(value: &Value, version: i16) -> usize {
    match value {
        Value::Request(v) => v.encoded_len(version).unwrap(),
        Value::Response(v) => v.encoded_len(version).unwrap(),
    }
}

/// Encodes a value's body into the front of `out`.
#[inline(always)]
pub fn encode(value: &Value, version: i16, out: &mut [u8]) -> usize {
    match value {
        Value::Request(v) => v.encode(version, out).unwrap(),
        Value::Response(v) => v.encode(version, out).unwrap(),
    }
}

/// Encodes a whole frame (size prefix, header, body) into the front of `out`.
#[inline(always)]
pub fn encode_frame(
    value: &Value,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    out: &mut [u8],
) -> usize {
    match value {
        Value::Request(v) => dispatch::encode_request(v, version, correlation_id, client_id, out).unwrap(),
        Value::Response(v) => dispatch::encode_response(v, version, correlation_id, out).unwrap(),
    }
}

fn tags(fields: TaggedIter<'_>) -> u64 {
    fields.fold(0, |acc, (tag, bytes)| acc.wrapping_add(u64::from(tag) + bytes.len() as u64))
}

fn add(acc: &mut u64, v: i64) {
    *acc = acc.wrapping_add(v as u64);
}

/// Reads every field of a request body view, at every depth, strings as `&str`.
pub fn walk_request(body: &RequestBodyView<'_>) -> u64 {
    let mut s = 0u64;
    match body {
        RequestBodyView::ApiVersions(v) => {
            add(&mut s, v.client_software_name().len() as i64);
            add(&mut s, v.client_software_version().len() as i64);
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        RequestBodyView::ListGroups(v) => {
            for f in v.states_filter().iter().chain(v.types_filter().iter()) {
                add(&mut s, f.len() as i64);
            }
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        RequestBodyView::ListOffsets(v) => {
            add(&mut s, i64::from(v.replica_id()));
            add(&mut s, i64::from(v.isolation_level()));
            add(&mut s, i64::from(v.timeout_ms()));
            for t in v.topics() {
                add(&mut s, t.name().len() as i64);
                for p in t.partitions() {
                    add(&mut s, i64::from(p.partition_index()));
                    add(&mut s, i64::from(p.current_leader_epoch()));
                    add(&mut s, p.timestamp());
                    s = s.wrapping_add(tags(p.unknown_tagged_fields()));
                }
                s = s.wrapping_add(tags(t.unknown_tagged_fields()));
            }
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        _ => unreachable!(),
    }
    s
}

/// Reads every field of a response body view, at every depth, strings as `&str`.
pub fn walk_response(body: &ResponseBodyView<'_>) -> u64 {
    let mut s = 0u64;
    match body {
        ResponseBodyView::ApiVersions(v) => {
            add(&mut s, i64::from(v.error_code()));
            for k in v.api_keys() {
                add(&mut s, i64::from(k.api_key()));
                add(&mut s, i64::from(k.min_version()));
                add(&mut s, i64::from(k.max_version()));
                s = s.wrapping_add(tags(k.unknown_tagged_fields()));
            }
            add(&mut s, i64::from(v.throttle_time_ms()));
            for f in v.supported_features() {
                add(&mut s, f.name().len() as i64);
                add(&mut s, i64::from(f.min_version()));
                add(&mut s, i64::from(f.max_version()));
                s = s.wrapping_add(tags(f.unknown_tagged_fields()));
            }
            add(&mut s, v.finalized_features_epoch());
            for f in v.finalized_features() {
                add(&mut s, f.name().len() as i64);
                add(&mut s, i64::from(f.max_version_level()));
                add(&mut s, i64::from(f.min_version_level()));
                s = s.wrapping_add(tags(f.unknown_tagged_fields()));
            }
            add(&mut s, i64::from(v.zk_migration_ready()));
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        ResponseBodyView::ListGroups(v) => {
            add(&mut s, i64::from(v.throttle_time_ms()));
            add(&mut s, i64::from(v.error_code()));
            for g in v.groups() {
                add(&mut s, g.group_id().len() as i64);
                add(&mut s, g.protocol_type().len() as i64);
                add(&mut s, g.group_state().len() as i64);
                add(&mut s, g.group_type().len() as i64);
                s = s.wrapping_add(tags(g.unknown_tagged_fields()));
            }
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        ResponseBodyView::ListOffsets(v) => {
            add(&mut s, i64::from(v.throttle_time_ms()));
            for t in v.topics() {
                add(&mut s, t.name().len() as i64);
                for p in t.partitions() {
                    add(&mut s, i64::from(p.partition_index()));
                    add(&mut s, i64::from(p.error_code()));
                    add(&mut s, p.timestamp());
                    add(&mut s, p.offset());
                    add(&mut s, i64::from(p.leader_epoch()));
                    s = s.wrapping_add(tags(p.unknown_tagged_fields()));
                }
                s = s.wrapping_add(tags(t.unknown_tagged_fields()));
            }
            s = s.wrapping_add(tags(v.unknown_tagged_fields()));
        }
        _ => unreachable!(),
    }
    s
}

/// Topic names for [`list_offsets_v5`].
const TOPICS: [&str; 10] = [
    "topic-00", "topic-01", "topic-02", "topic-03", "topic-04", "topic-05", "topic-06", "topic-07",
    "topic-08", "topic-09",
];

/// A ListOffsets request value shaped like the bench frames: 10 topics of `partitions`
/// partitions each, for showing that sizing it at v5 does not depend on the partition
/// count.
pub fn list_offsets_request(partitions: i32) -> ListOffsetsRequest<'static> {
    let topics: Vec<ListOffsetsTopic<'static>> = TOPICS
        .iter()
        .map(|name| ListOffsetsTopic {
            name: Str::Borrowed(name),
            partitions: (0..partitions)
                .map(|p| ListOffsetsPartition {
                    partition_index: p,
                    current_leader_epoch: -1,
                    timestamp: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ListOffsetsRequest { replica_id: -1, topics: List::Owned(topics), ..Default::default() }
}
