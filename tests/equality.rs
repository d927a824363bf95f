//! Value equality: every generated value equals itself, NaNs included, and `float64` fields
//! keep their exact bits through the encoders, the views and the reference decoder.
//!
//! Message values compare field by field, and `float64` fields by their bits
//! (`f64::to_bits`), so that `PartialEq` is reflexive and `Eq` holds (see `docs/design.md`,
//! "Value equality").

mod common;

use arbitrary::Unstructured;
use common::XorShift;
use kwire::messages::alter_client_quotas::{AlterClientQuotasRequestEntryData, OpData};
use kwire::messages::describe_client_quotas::{EntryData, ValueData};
use kwire::messages::*;
use kwire::{ApiKey, List, Str};

/// Bit patterns a `float64` must keep: quiet and signalling NaNs of both signs with
/// payloads, both zeros, both infinities, the smallest subnormal and an ordinary value.
const BITS: [u64; 10] = [
    0x7ff8_0000_0000_0000, // quiet NaN
    0x7ff8_0000_0000_0001, // quiet NaN with a payload
    0xfff8_0000_0000_0000, // negative quiet NaN
    0x7ff0_0000_0000_0001, // signalling NaN
    0xfff4_0000_dead_beef, // negative signalling NaN with a payload
    0x8000_0000_0000_0000, // -0.0
    0x0000_0000_0000_0000, // 0.0
    0x7ff0_0000_0000_0000, // +inf
    0x0000_0000_0000_0001, // smallest subnormal
    0x4059_0000_0000_0000, // 100.0
];

fn assert_eq_trait<T: Eq>() {}

#[test]
fn every_body_type_is_eq() {
    assert_eq_trait::<RequestBody<'static>>();
    assert_eq_trait::<ResponseBody<'static>>();
    assert_eq_trait::<ValueData<'static>>();
    assert_eq_trait::<OpData<'static>>();
}

/// Inputs for `arbitrary`: seeded random bytes, half of them mostly `ff` so that most
/// `f64`s drawn from them are NaNs (an `ff` in the top two bytes of a word is a NaN
/// exponent).
fn inputs() -> Vec<Vec<u8>> {
    let mut rng = XorShift(0x5eed);
    (0..120)
        .map(|i| {
            let mut data = rng.bytes(2048);
            if i % 2 == 1 {
                for b in &mut data {
                    if !rng.next().is_multiple_of(8) {
                        *b = 0xff;
                    }
                }
            }
            data
        })
        .collect()
}

/// `x == x` for arbitrary values of every message, requests and responses, at every API.
/// The inputs do give NaNs: the test counts the values of the two float-bearing messages
/// that hold one.
#[test]
fn every_value_equals_itself() {
    let inputs = inputs();
    let (mut checked, mut with_nan) = (0, 0);
    for &key in ApiKey::ALL {
        for data in &inputs {
            if let Ok(v) = RequestBody::arbitrary_for(key, &mut Unstructured::new(data)) {
                assert!(v == v.clone(), "{} request: {v:?}", key.name());
                checked += 1;
                with_nan += usize::from(format!("{v:?}").contains("NaN"));
            }
            if let Ok(v) = ResponseBody::arbitrary_for(key, &mut Unstructured::new(data)) {
                assert!(v == v.clone(), "{} response: {v:?}", key.name());
                checked += 1;
                with_nan += usize::from(format!("{v:?}").contains("NaN"));
            }
        }
    }
    assert!(checked > ApiKey::ALL.len() * inputs.len(), "only {checked} values were generated");
    assert!(with_nan >= 10, "only {with_nan} values held a NaN");
}

/// The messages that hold a `float64` anywhere, by their schema files; each has a test
/// below. A new one fails here until it has a test of its own.
#[test]
fn float_bearing_messages_are_the_tested_ones() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codec/schema");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::read_to_string(p).unwrap().contains("\"float64\""))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["AlterClientQuotasRequest", "DescribeClientQuotasResponse"]);
}

/// The first occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn describe_client_quotas_response_keeps_float_bits() {
    let values: Vec<ValueData<'_>> = BITS
        .iter()
        .map(|&b| ValueData {
            key: Str::from("producer_byte_rate"),
            value: f64::from_bits(b),
            ..Default::default()
        })
        .collect();
    let body = DescribeClientQuotasResponse {
        entries: Some(List::Owned(vec![EntryData { values: List::Owned(values), ..Default::default() }])),
        ..Default::default()
    };
    assert!(body == body.clone());
    for version in 0..=1 {
        let mut buf = vec![0u8; body.encoded_len(version).unwrap()];
        body.encode(version, &mut buf).unwrap();
        // Each value is written as its eight big-endian bytes, in order.
        let mut from = 0;
        for b in BITS {
            let at = find(&buf[from..], &b.to_be_bytes()).unwrap_or_else(|| panic!("{b:#x} not written"));
            from += at + 8;
        }
        let view = DescribeClientQuotasResponseView::new(&buf, version).unwrap();
        let read: Vec<u64> = view
            .entries()
            .unwrap()
            .into_iter()
            .next()
            .unwrap()
            .values()
            .into_iter()
            .map(|v| v.value().to_bits())
            .collect();
        assert_eq!(read, BITS, "view v{version}");
        let reference = DescribeClientQuotasResponse::decode(&buf, version).unwrap();
        let bits: Vec<u64> =
            reference.entries.as_ref().unwrap()[0].values.iter().map(|v| v.value.to_bits()).collect();
        assert_eq!(bits, BITS, "reference v{version}");
        assert_eq!(reference, body, "reference v{version}");
        assert_eq!(DescribeClientQuotasResponse::from(view), body, "view v{version}");
    }
}

#[test]
fn alter_client_quotas_request_keeps_float_bits() {
    let ops: Vec<OpData<'_>> = BITS
        .iter()
        .map(|&b| OpData {
            key: Str::from("consumer_byte_rate"),
            value: f64::from_bits(b),
            remove: false,
            ..Default::default()
        })
        .collect();
    let body = AlterClientQuotasRequest {
        entries: List::Owned(vec![AlterClientQuotasRequestEntryData {
            ops: List::Owned(ops),
            ..Default::default()
        }]),
        ..Default::default()
    };
    assert!(body == body.clone());
    for version in 0..=1 {
        let mut buf = vec![0u8; body.encoded_len(version).unwrap()];
        body.encode(version, &mut buf).unwrap();
        let mut from = 0;
        for b in BITS {
            let at = find(&buf[from..], &b.to_be_bytes()).unwrap_or_else(|| panic!("{b:#x} not written"));
            from += at + 8;
        }
        let view = AlterClientQuotasRequestView::new(&buf, version).unwrap();
        let read: Vec<u64> = view
            .entries()
            .into_iter()
            .next()
            .unwrap()
            .ops()
            .into_iter()
            .map(|v| v.value().to_bits())
            .collect();
        assert_eq!(read, BITS, "view v{version}");
        let reference = AlterClientQuotasRequest::decode(&buf, version).unwrap();
        let bits: Vec<u64> = reference.entries[0].ops.iter().map(|v| v.value.to_bits()).collect();
        assert_eq!(bits, BITS, "reference v{version}");
        assert_eq!(reference, body, "reference v{version}");
        assert_eq!(AlterClientQuotasRequest::from(view), body, "view v{version}");
    }
}

/// Equality is by bits: NaN equals the same NaN, but not a NaN of other bits, and `0.0`
/// differs from `-0.0` (as `Double.equals` has it in Java).
#[test]
fn float_equality_is_by_bits() {
    let v = |b: u64| ValueData { key: Str::from("k"), value: f64::from_bits(b), ..Default::default() };
    assert_eq!(v(0x7ff8_0000_0000_0000), v(0x7ff8_0000_0000_0000));
    assert_ne!(v(0x7ff8_0000_0000_0000), v(0x7ff8_0000_0000_0001));
    assert_ne!(v(0x8000_0000_0000_0000), v(0));
    assert_eq!(v(1.5f64.to_bits()), v(1.5f64.to_bits()));
    let op =
        |b: u64| OpData { key: Str::from("k"), value: f64::from_bits(b), remove: true, ..Default::default() };
    assert_eq!(op(0x7ff0_0000_0000_0001), op(0x7ff0_0000_0000_0001));
    assert_ne!(op(0x8000_0000_0000_0000), op(0));
}

/// The schema walker's dynamic values follow the same rule: a `Float64` compares by its
/// bits, so a value holding a NaN equals itself and `-0.0` differs from `0.0`.
#[test]
fn reflect_values_compare_floats_by_bits() {
    use kwire::reflect::{StructValue, Value, response_schema};
    let schema = response_schema(ApiKey::DescribeClientQuotas);
    let decode = |bits: u64| {
        let body = DescribeClientQuotasResponse {
            entries: Some(List::Owned(vec![EntryData {
                values: List::Owned(vec![ValueData {
                    key: Str::from("k"),
                    value: f64::from_bits(bits),
                    ..Default::default()
                }]),
                ..Default::default()
            }])),
            ..Default::default()
        };
        let mut buf = vec![0u8; body.encoded_len(1).unwrap()];
        body.encode(1, &mut buf).unwrap();
        StructValue::decode_body(schema, 1, &buf).unwrap()
    };
    for bits in BITS {
        let value = decode(bits);
        assert_eq!(value, value.clone(), "{bits:#x}");
    }
    assert_ne!(decode(0x8000_0000_0000_0000), decode(0));
    assert_ne!(decode(0x7ff8_0000_0000_0000), decode(0x7ff8_0000_0000_0001));
    assert_eq!(Value::Float64(f64::NAN), Value::Float64(f64::NAN));
    assert_ne!(Value::Float64(0.0), Value::Float64(-0.0));
    assert_ne!(Value::Int32(1), Value::Int64(1));
}

/// Two version ranges are equal when they hold the same versions: every empty range is
/// `Versions::NONE`, and hashes as it does.
#[test]
fn empty_version_ranges_are_equal() {
    use kwire::Versions;
    use std::collections::HashSet;
    let empties =
        [Versions::NONE, Versions::new(5, 2), Versions::new(i16::MAX, i16::MIN), Versions::new(1, 0)];
    for a in empties {
        assert!(a.is_empty());
        for b in empties {
            assert_eq!(a, b);
        }
    }
    assert_eq!(empties.iter().copied().collect::<HashSet<_>>().len(), 1);
    assert_ne!(Versions::new(0, 0), Versions::NONE);
    assert_ne!(Versions::new(0, 3), Versions::new(1, 3));
    assert_eq!(Versions::new(2, 7), Versions::new(2, 7));
    // Every API's range of versions is non-empty, so none of them equals NONE.
    for key in ApiKey::ALL {
        assert_ne!(key.request_versions(), Versions::NONE, "{}", key.name());
    }
}
