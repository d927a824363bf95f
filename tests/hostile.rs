//! Hostile inputs: at every array count, string length and tagged-field section of every
//! message and version, prefixes claiming 2^31-1 and -2, over-long and overflowing
//! varints, and tagged fields of huge size; every truncation of a full body; the deepest
//! nesting the schemas allow; and counts as large as the input itself.
//!
//! Each must fail with the exact documented error (kind, offset and field) in the view
//! and in the reference decoder. A counting global allocator (per thread, current and
//! peak bytes) checks that views allocate nothing and that the reference decoder's peak
//! stays within a small multiple of the input.
//!
//! The bodies are built here from a small description of each message's layout, written
//! from the schemas independently of the generated code. None of the six messages has a
//! `bytes` field; the raw bytes of tagged fields are covered by the tagged-section cases.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kwire::messages::*;
use kwire::{ApiKey, DecodeError, DecodeErrorKind as K};

// ------------------------------------------------------------------ counting allocator

struct Counting;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn track(delta: isize, call: bool) {
    let _ = CURRENT.try_with(|c| {
        let now = c.get() + delta;
        c.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
    if call {
        let _ = CALLS.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        track(layout.size() as isize, true);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(-(layout.size() as isize), false);
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        track(new_size as isize - layout.size() as isize, true);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns its result, the peak of bytes allocated on this thread above the
/// level at the start, and the number of allocations.
fn measure<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    let start = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let calls = CALLS.with(Cell::get);
    let r = f();
    let peak = PEAK.with(Cell::get) - start;
    (r, peak as usize, CALLS.with(Cell::get) - calls)
}

/// Both decoders on one body: the view (construction and `validate`) must allocate
/// nothing, the reference decoder at most `ratio` times the input plus a little. Returns
/// the two results.
fn decode_both(
    key: ApiKey,
    response: bool,
    version: i16,
    body: &[u8],
    ratio: usize,
) -> (Result<(), DecodeError>, Result<(), DecodeError>) {
    let (view, peak, calls) = measure(|| {
        if response {
            ResponseBodyView::new(body, key, version).map(drop)
        } else {
            RequestBodyView::new(body, key, version).map(drop)
        }
    });
    assert_eq!((peak, calls), (0, 0), "{key:?} v{version}: the view allocated");
    let (reference, peak, _) = measure(|| {
        if response {
            ResponseBody::decode(body, key, version).map(drop)
        } else {
            RequestBody::decode(body, key, version).map(drop)
        }
    });
    let limit = ratio * body.len() + 4096;
    assert!(
        peak <= limit,
        "{key:?} v{version}: the reference decoder peaked at {peak} bytes for {}",
        body.len()
    );
    (view, reference)
}

// ------------------------------------------------------------------ message layouts

#[derive(Clone, Copy)]
enum Ty {
    I8,
    I16,
    I32,
    I64,
    Bool,
    Str,
    /// An array of strings.
    StrArr,
    Arr(&'static Struct),
}

struct F {
    name: &'static str,
    ty: Ty,
    since: i16,
    tag: Option<u32>,
}

const fn f(name: &'static str, ty: Ty) -> F {
    F { name, ty, since: 0, tag: None }
}

const fn since(name: &'static str, ty: Ty, since: i16) -> F {
    F { name, ty, since, tag: None }
}

const fn tagged(name: &'static str, ty: Ty, since: i16, tag: u32) -> F {
    F { name, ty, since, tag: Some(tag) }
}

struct Struct {
    name: &'static str,
    fields: &'static [F],
}

struct Msg {
    key: ApiKey,
    response: bool,
    min: i16,
    max: i16,
    flexible: i16,
    body: &'static Struct,
}

static API_VERSION: Struct = Struct {
    name: "ApiVersion",
    fields: &[f("ApiKey", Ty::I16), f("MinVersion", Ty::I16), f("MaxVersion", Ty::I16)],
};
static SUPPORTED_FEATURE: Struct = Struct {
    name: "SupportedFeatureKey",
    fields: &[f("Name", Ty::Str), f("MinVersion", Ty::I16), f("MaxVersion", Ty::I16)],
};
static FINALIZED_FEATURE: Struct = Struct {
    name: "FinalizedFeatureKey",
    fields: &[f("Name", Ty::Str), f("MaxVersionLevel", Ty::I16), f("MinVersionLevel", Ty::I16)],
};
static LISTED_GROUP: Struct = Struct {
    name: "ListedGroup",
    fields: &[
        f("GroupId", Ty::Str),
        f("ProtocolType", Ty::Str),
        since("GroupState", Ty::Str, 4),
        since("GroupType", Ty::Str, 5),
    ],
};
static LO_PARTITION: Struct = Struct {
    name: "ListOffsetsPartition",
    fields: &[f("PartitionIndex", Ty::I32), since("CurrentLeaderEpoch", Ty::I32, 4), f("Timestamp", Ty::I64)],
};
static LO_TOPIC: Struct = Struct {
    name: "ListOffsetsTopic",
    fields: &[f("Name", Ty::Str), f("Partitions", Ty::Arr(&LO_PARTITION))],
};
static LO_PARTITION_RESPONSE: Struct = Struct {
    name: "ListOffsetsPartitionResponse",
    fields: &[
        f("PartitionIndex", Ty::I32),
        f("ErrorCode", Ty::I16),
        f("Timestamp", Ty::I64),
        f("Offset", Ty::I64),
        since("LeaderEpoch", Ty::I32, 4),
    ],
};
static LO_TOPIC_RESPONSE: Struct = Struct {
    name: "ListOffsetsTopicResponse",
    fields: &[f("Name", Ty::Str), f("Partitions", Ty::Arr(&LO_PARTITION_RESPONSE))],
};

static MESSAGES: [Msg; 6] = [
    Msg {
        key: ApiKey::ApiVersions,
        response: false,
        min: 0,
        max: 4,
        flexible: 3,
        body: &Struct {
            name: "ApiVersionsRequest",
            fields: &[since("ClientSoftwareName", Ty::Str, 3), since("ClientSoftwareVersion", Ty::Str, 3)],
        },
    },
    Msg {
        key: ApiKey::ApiVersions,
        response: true,
        min: 0,
        max: 4,
        flexible: 3,
        body: &Struct {
            name: "ApiVersionsResponse",
            fields: &[
                f("ErrorCode", Ty::I16),
                f("ApiKeys", Ty::Arr(&API_VERSION)),
                since("ThrottleTimeMs", Ty::I32, 1),
                tagged("SupportedFeatures", Ty::Arr(&SUPPORTED_FEATURE), 3, 0),
                tagged("FinalizedFeaturesEpoch", Ty::I64, 3, 1),
                tagged("FinalizedFeatures", Ty::Arr(&FINALIZED_FEATURE), 3, 2),
                tagged("ZkMigrationReady", Ty::Bool, 3, 3),
            ],
        },
    },
    Msg {
        key: ApiKey::ListGroups,
        response: false,
        min: 0,
        max: 5,
        flexible: 3,
        body: &Struct {
            name: "ListGroupsRequest",
            fields: &[since("StatesFilter", Ty::StrArr, 4), since("TypesFilter", Ty::StrArr, 5)],
        },
    },
    Msg {
        key: ApiKey::ListGroups,
        response: true,
        min: 0,
        max: 5,
        flexible: 3,
        body: &Struct {
            name: "ListGroupsResponse",
            fields: &[
                since("ThrottleTimeMs", Ty::I32, 1),
                f("ErrorCode", Ty::I16),
                f("Groups", Ty::Arr(&LISTED_GROUP)),
            ],
        },
    },
    Msg {
        key: ApiKey::ListOffsets,
        response: false,
        min: 1,
        max: 10,
        flexible: 6,
        body: &Struct {
            name: "ListOffsetsRequest",
            fields: &[
                f("ReplicaId", Ty::I32),
                since("IsolationLevel", Ty::I8, 2),
                f("Topics", Ty::Arr(&LO_TOPIC)),
                since("TimeoutMs", Ty::I32, 10),
            ],
        },
    },
    Msg {
        key: ApiKey::ListOffsets,
        response: true,
        min: 1,
        max: 10,
        flexible: 6,
        body: &Struct {
            name: "ListOffsetsResponse",
            fields: &[since("ThrottleTimeMs", Ty::I32, 2), f("Topics", Ty::Arr(&LO_TOPIC_RESPONSE))],
        },
    },
];

// ------------------------------------------------------------------ the builder

/// What to write at the chosen prefix instead of the real one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hostile {
    /// 2^31 - 1 (for an int16 string length, its largest value, 32767).
    Max,
    /// -2 (in a compact prefix, the varint 0xffffffff, which Kafka's int arithmetic reads as
    /// length -2).
    MinusTwo,
    /// A varint of six bytes.
    LongVarint,
    /// A five-byte varint whose last byte carries bits beyond 32 (dropped, as in Kafka).
    OverflowVarint,
    /// Tagged sections only: one field of 2^32 - 1 bytes.
    HugeTagSize,
    /// Tagged sections only: one field whose tag is a six-byte varint.
    LongTag,
    /// Tagged sections only: one field whose size is a six-byte varint.
    LongTagSize,
}

const CLASSIC: [Hostile; 2] = [Hostile::Max, Hostile::MinusTwo];
const COMPACT: [Hostile; 4] = [Hostile::Max, Hostile::MinusTwo, Hostile::LongVarint, Hostile::OverflowVarint];
const SECTION: [Hostile; 7] = [
    Hostile::Max,
    Hostile::MinusTwo,
    Hostile::LongVarint,
    Hostile::OverflowVarint,
    Hostile::HugeTagSize,
    Hostile::LongTag,
    Hostile::LongTagSize,
];

#[derive(Clone, Copy, PartialEq)]
enum Pos {
    Array,
    Str,
    Section,
}

/// Writes a body, replacing the prefix at position `target` (counting array counts,
/// string lengths and tagged sections in wire order) with a hostile one and ending the
/// body there.
struct Builder {
    version: i16,
    flexible: bool,
    /// Elements in every array.
    elements: usize,
    target: Option<(usize, Hostile)>,
    seen: usize,
    /// The expected error once the hostile prefix is written; its offset is relative to
    /// the buffer being written, and `nested` says the buffer is a tagged field's value.
    hit: Option<(K, usize, &'static str)>,
    hit_in_tag_value: bool,
    depth_in_tag_value: usize,
    /// Positions seen, with their kinds, when no target is set.
    positions: Vec<Pos>,
}

const FILLER: usize = 16;

fn uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Builder {
    fn new(version: i16, flexible: bool, elements: usize, target: Option<(usize, Hostile)>) -> Self {
        Builder {
            version,
            flexible,
            elements,
            target,
            seen: 0,
            hit: None,
            hit_in_tag_value: false,
            depth_in_tag_value: 0,
            positions: Vec::new(),
        }
    }

    fn done(&self) -> bool {
        self.hit.is_some()
    }

    /// Bytes left after a hostile prefix, as the decoder sees them.
    fn left(&self) -> u32 {
        if self.depth_in_tag_value > 0 { 0 } else { FILLER as u32 }
    }

    /// At a prefix: `true` if the hostile one was written instead.
    fn position(&mut self, out: &mut Vec<u8>, pos: Pos, field: &'static str) -> bool {
        let index = self.seen;
        self.seen += 1;
        self.positions.push(pos);
        let Some((target, hostile)) = self.target else { return false };
        if index != target {
            return false;
        }
        let at = out.len();
        let left = self.left();
        let compact = self.flexible;
        let kind = match (pos, hostile) {
            (_, Hostile::LongVarint) => {
                out.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
                K::VarintTooLong
            }
            // Its bits beyond 32 are dropped, as Kafka drops them: it reads as 2^32 - 1.
            (Pos::Section, Hostile::OverflowVarint) => {
                out.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
                K::ArrayTooLong(u32::MAX)
            }
            (Pos::Array, Hostile::OverflowVarint) => {
                out.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
                K::ArrayTooLong(u32::MAX - 1)
            }
            (Pos::Str, Hostile::OverflowVarint) => {
                out.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
                K::StringTooLong(u32::MAX - 1)
            }
            (Pos::Section, Hostile::Max) => {
                uvarint(out, i32::MAX as u32);
                K::ArrayTooLong(i32::MAX as u32)
            }
            (Pos::Section, Hostile::MinusTwo) => {
                uvarint(out, -2i32 as u32);
                K::ArrayTooLong(-2i32 as u32)
            }
            (Pos::Section, Hostile::HugeTagSize) => {
                out.extend_from_slice(&[1, 100, 0xff, 0xff, 0xff, 0xff, 0x0f]);
                self.hit = Some((K::Truncated { needed: u32::MAX, available: left }, at + 7, field));
                self.hit_in_tag_value = self.depth_in_tag_value > 0;
                return true;
            }
            (Pos::Section, Hostile::LongTag) => {
                out.extend_from_slice(&[1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
                self.hit = Some((K::VarintTooLong, at + 1, field));
                self.hit_in_tag_value = self.depth_in_tag_value > 0;
                return true;
            }
            (Pos::Section, Hostile::LongTagSize) => {
                out.extend_from_slice(&[1, 100, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
                self.hit = Some((K::VarintTooLong, at + 2, field));
                self.hit_in_tag_value = self.depth_in_tag_value > 0;
                return true;
            }
            (Pos::Array, Hostile::Max) if compact => {
                uvarint(out, i32::MAX as u32 + 1);
                K::ArrayTooLong(i32::MAX as u32)
            }
            (Pos::Array, Hostile::Max) => {
                out.extend_from_slice(&i32::MAX.to_be_bytes());
                K::ArrayTooLong(i32::MAX as u32)
            }
            (Pos::Array, Hostile::MinusTwo) if compact => {
                uvarint(out, u32::MAX);
                K::ArrayTooLong(u32::MAX - 1)
            }
            (Pos::Array, Hostile::MinusTwo) => {
                out.extend_from_slice(&(-2i32).to_be_bytes());
                K::InvalidLength(-2)
            }
            (Pos::Str, Hostile::Max) if compact => {
                uvarint(out, i32::MAX as u32 + 1);
                K::StringTooLong(i32::MAX as u32)
            }
            (Pos::Str, Hostile::Max) => {
                // The largest int16 length is legal; it runs past the end of the input.
                out.extend_from_slice(&i16::MAX.to_be_bytes());
                self.hit = Some((K::Truncated { needed: 32767, available: left }, at + 2, field));
                self.hit_in_tag_value = self.depth_in_tag_value > 0;
                return true;
            }
            (Pos::Str, Hostile::MinusTwo) if compact => {
                uvarint(out, u32::MAX);
                K::StringTooLong(u32::MAX - 1)
            }
            (Pos::Str, Hostile::MinusTwo) => {
                out.extend_from_slice(&(-2i16).to_be_bytes());
                K::InvalidLength(-2)
            }
            (_, h) => unreachable!("{h:?} only applies to tagged sections"),
        };
        self.hit = Some((kind, at, field));
        self.hit_in_tag_value = self.depth_in_tag_value > 0;
        true
    }

    fn len_prefix(&mut self, out: &mut Vec<u8>, n: usize, wide: bool) {
        if self.flexible {
            uvarint(out, n as u32 + 1);
        } else if wide {
            out.extend_from_slice(&(n as i32).to_be_bytes());
        } else {
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
    }

    fn string(&mut self, out: &mut Vec<u8>, field: &'static str) {
        if self.position(out, Pos::Str, field) {
            return;
        }
        self.len_prefix(out, 2, false);
        out.extend_from_slice(b"ab");
    }

    fn value(&mut self, out: &mut Vec<u8>, ty: Ty, field: &'static str) {
        match ty {
            Ty::I8 | Ty::Bool => out.push(1),
            Ty::I16 => out.extend_from_slice(&[0, 2]),
            Ty::I32 => out.extend_from_slice(&[0, 0, 0, 3]),
            Ty::I64 => out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 4]),
            Ty::Str => self.string(out, field),
            Ty::StrArr => {
                if self.position(out, Pos::Array, field) {
                    return;
                }
                self.len_prefix(out, self.elements, true);
                for _ in 0..self.elements {
                    if self.done() {
                        return;
                    }
                    self.string(out, field);
                }
            }
            Ty::Arr(s) => {
                if self.position(out, Pos::Array, field) {
                    return;
                }
                self.len_prefix(out, self.elements, true);
                for _ in 0..self.elements {
                    if self.done() {
                        return;
                    }
                    self.structure(out, s);
                }
            }
        }
    }

    fn structure(&mut self, out: &mut Vec<u8>, s: &'static Struct) {
        let field_name =
            |f: &F| -> &'static str { Box::leak(format!("{}.{}", s.name, f.name).into_boxed_str()) };
        let version = self.version;
        for f in s.fields.iter().filter(|f| f.tag.is_none() && version >= f.since) {
            if self.done() {
                return;
            }
            self.value(out, f.ty, field_name(f));
        }
        if !self.flexible || self.done() {
            return;
        }
        let section: &'static str = Box::leak(format!("{}._tagged_fields", s.name).into_boxed_str());
        if self.position(out, Pos::Section, section) {
            return;
        }
        let known: Vec<&F> = s.fields.iter().filter(|f| f.tag.is_some() && self.version >= f.since).collect();
        uvarint(out, known.len() as u32);
        for f in known {
            let mut value = Vec::new();
            self.depth_in_tag_value += 1;
            self.value(&mut value, f.ty, field_name(f));
            self.depth_in_tag_value -= 1;
            uvarint(out, f.tag.unwrap());
            uvarint(out, value.len() as u32);
            if let Some((kind, offset, field)) = self.hit.filter(|_| self.hit_in_tag_value) {
                // The error was found inside this value: move its offset into the body.
                self.hit = Some((kind, offset + out.len(), field));
                self.hit_in_tag_value = self.depth_in_tag_value > 0;
            }
            out.extend_from_slice(&value);
            if self.done() {
                return;
            }
        }
    }
}

/// A full body of `msg` at `version` with `elements` elements in every array.
fn full_body(msg: &Msg, version: i16, elements: usize) -> (Vec<u8>, Vec<Pos>) {
    let mut b = Builder::new(version, version >= msg.flexible, elements, None);
    let mut out = Vec::new();
    b.structure(&mut out, msg.body);
    (out, b.positions)
}

// ------------------------------------------------------------------ the tests

#[test]
fn full_bodies_decode_and_reencode() {
    for msg in &MESSAGES {
        for version in msg.min..=msg.max {
            let (body, positions) = full_body(msg, version, 2);
            assert!(!positions.is_empty() || version < msg.flexible);
            let (view, reference) = decode_both(msg.key, msg.response, version, &body, 64);
            assert_eq!((view, reference), (Ok(()), Ok(())), "{} v{version}", msg.body.name);
            // The reference value re-encodes to the same bytes: the layouts here match the
            // generated code field for field.
            let mut out = vec![0u8; body.len()];
            let n = if msg.response {
                use kwire::AnyBody;
                ResponseBody::decode(&body, msg.key, version).unwrap().encode(version, &mut out)
            } else {
                use kwire::AnyBody;
                RequestBody::decode(&body, msg.key, version).unwrap().encode(version, &mut out)
            };
            assert_eq!(n, Ok(body.len()));
            assert_eq!(out, body, "{} v{version}", msg.body.name);
        }
    }
}

#[test]
fn hostile_prefix_at_every_position() {
    let mut checked = 0;
    for msg in &MESSAGES {
        for version in msg.min..=msg.max {
            let flexible = version >= msg.flexible;
            let (_, positions) = full_body(msg, version, 2);
            for (index, &pos) in positions.iter().enumerate() {
                let kinds: &[Hostile] = match (pos, flexible) {
                    (Pos::Section, _) => &SECTION,
                    (_, true) => &COMPACT,
                    (_, false) => &CLASSIC,
                };
                for &hostile in kinds {
                    let mut b = Builder::new(version, flexible, 2, Some((index, hostile)));
                    let mut body = Vec::new();
                    b.structure(&mut body, msg.body);
                    let (kind, offset, field) = b.hit.expect("the position was reached");
                    body.extend_from_slice(&[0u8; FILLER]);
                    let expected = DecodeError::new(kind, offset, field);
                    let what = format!("{} v{version} position {index} {hostile:?}", msg.body.name);
                    let (view, reference) = decode_both(msg.key, msg.response, version, &body, 8);
                    assert_eq!(view, Err(expected), "view: {what}");
                    assert_eq!(reference, Err(expected), "reference: {what}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} cases");
}

#[test]
fn truncation_at_every_offset() {
    for msg in &MESSAGES {
        for version in msg.min..=msg.max {
            let (body, _) = full_body(msg, version, 2);
            for cut in 0..body.len() {
                let part = &body[..cut];
                let (view, reference) = decode_both(msg.key, msg.response, version, part, 8);
                for (which, r) in [("view", view), ("reference", reference)] {
                    let e =
                        r.expect_err(&format!("{} v{version} cut at {cut}: {which} accepted", msg.body.name));
                    assert!(
                        matches!(e.kind(), K::Truncated { .. } | K::ArrayTooLong(_)),
                        "{} v{version} cut at {cut}: {which}: {e}",
                        msg.body.name
                    );
                    assert!(e.offset() <= cut);
                }
            }
        }
    }
}

/// The schemas are not recursive, so nesting is at most three structs deep (ListOffsets
/// body, topic, partition). The widest and deepest such body, with the hostile prefix in
/// the last partition of the last topic, is rejected at that prefix.
#[test]
fn deepest_nesting_with_hostile_innermost_prefix() {
    let msg = &MESSAGES[4];
    for version in [5, 10] {
        let flexible = version >= msg.flexible;
        let elements = 40;
        let (body, positions) = full_body(msg, version, elements);
        assert!(body.len() > 20_000);
        let last_array = positions.iter().rposition(|&p| p == Pos::Array).unwrap();
        let mut b = Builder::new(version, flexible, elements, Some((last_array, Hostile::Max)));
        let mut hostile = Vec::new();
        b.structure(&mut hostile, msg.body);
        let (kind, offset, field) = b.hit.unwrap();
        assert_eq!(field, "ListOffsetsTopic.Partitions");
        assert!(offset > 19_000, "the prefix is deep in the body");
        hostile.extend_from_slice(&[0u8; FILLER]);
        let (view, reference) = decode_both(msg.key, false, version, &hostile, 16);
        let expected = DecodeError::new(kind, offset, field);
        assert_eq!((view, reference), (Err(expected), Err(expected)));
    }
}

/// A count no larger than the bytes left passes the count check, so the reference
/// decoder must not reserve room for all of it up front: here a ListGroups v3 response
/// claims about 200,000 groups (one per byte of the input), the first of which is bad.
/// Reserving `count` groups would take 24 MB or more for a 200 kB input.
#[test]
fn count_as_large_as_the_input() {
    for version in [2, 3] {
        let n = 200_000usize;
        let mut body = vec![0, 0, 0, 0, 0, 0];
        if version >= 3 {
            uvarint(&mut body, n as u32 + 1);
            body.push(0); // GroupId: compact null
        } else {
            body.extend_from_slice(&(n as i32).to_be_bytes());
            body.extend_from_slice(&[0xff, 0xff]); // GroupId: null
        }
        let bad_at = body.len() - if version >= 3 { 1 } else { 2 };
        body.resize(bad_at + n + 8, 0);
        let (view, reference) = decode_both(ApiKey::ListGroups, true, version, &body, 4);
        let expected = DecodeError::new(K::UnexpectedNull, bad_at, "ListedGroup.GroupId");
        assert_eq!((view, reference), (Err(expected), Err(expected)), "v{version}");
    }
    // The same for a string array: StatesFilter of a ListGroups v4 request.
    let n = 200_000usize;
    let mut body = Vec::new();
    uvarint(&mut body, n as u32 + 1);
    body.push(0);
    body.resize(n + 8, 0);
    let (view, reference) = decode_both(ApiKey::ListGroups, false, 4, &body, 4);
    let expected = DecodeError::new(K::UnexpectedNull, 3, "ListGroupsRequest.StatesFilter");
    assert_eq!((view, reference), (Err(expected), Err(expected)));
}

/// Valid bodies as large as the bench frames: views allocate nothing, and the reference
/// decoder stays within a small multiple of the input.
#[test]
fn large_valid_bodies_stay_within_bounds() {
    for msg in &MESSAGES {
        let (body, _) = full_body(msg, msg.max, 60);
        let (view, reference) = decode_both(msg.key, msg.response, msg.max, &body, 16);
        assert_eq!((view, reference), (Ok(()), Ok(())), "{}", msg.body.name);
    }
}
