//! The generated answers a server writes without a handler (`ResponseBody::error_response`
//! and `messages::throttle_time_at`) against the schema interpreter (`kwire::reflect`),
//! which the broker built them with before, for every API at every version:
//!
//! - the error answer is the schema's defaults with the top-level `ErrorCode` set, byte for
//!   byte what `reflect`'s `StructValue` encodes; where the version has no top-level
//!   `ErrorCode` (a field that is not ignorable), `reflect` refuses to encode the value and
//!   the broker used to send nothing, while the generated answer is the defaults;
//! - the throttle time's offset is where the schema walker finds the top-level
//!   `ThrottleTimeMs`, in the default body and in arbitrary bodies.
#![cfg(all(feature = "reflect", feature = "arbitrary"))]

use std::collections::BTreeSet;

use arbitrary::Unstructured;
use kwire::messages::{ResponseBody, throttle_time_at};
use kwire::reflect::walk::{Field, Scalar, Visitor, walk_body};
use kwire::reflect::{self, Encoding, StructSchema, StructValue, Value};
use kwire::{AnyBody, ApiKey, ErrorCode};

fn versions(key: ApiKey) -> impl Iterator<Item = i16> {
    let v = key.response_versions();
    v.min..=v.max
}

/// A value encoded by `reflect` at `version` (`None`: it refuses).
fn reflect_encode(key: ApiKey, version: i16, body: &StructValue) -> Option<Vec<u8>> {
    let encoding = Encoding::body(reflect::response_schema(key), version);
    let mut out = vec![0; body.encoded_len(encoding).ok()?];
    body.encode(encoding, &mut out).ok()?;
    Some(out)
}

fn generated(key: ApiKey, version: i16, code: ErrorCode) -> Vec<u8> {
    let body = ResponseBody::error_response(key, version, code).expect("every API is compiled in");
    assert_eq!(body.api_key(), key);
    let mut out = vec![0; body.encoded_len(version).unwrap()];
    body.encode(version, &mut out).unwrap();
    out
}

#[test]
fn error_answers_are_the_schema_defaults_with_the_top_level_error_code() {
    let code = ErrorCode::NotCoordinator;
    let (mut same, mut without) = (0, 0);
    for &key in ApiKey::ALL {
        let schema = reflect::response_schema(key);
        let field = schema.body.fields.iter().find(|f| f.name == "ErrorCode");
        for version in versions(key) {
            let answer = generated(key, version, code);
            let mut old = StructValue::new(schema.body);
            let _ = old.set("ErrorCode", Value::Int16(code.to_i16()));
            match reflect_encode(key, version, &old) {
                Some(old) => {
                    assert_eq!(answer, old, "{key:?} v{version}");
                    same += 1;
                }
                None => {
                    // Only a version without the field makes `reflect` refuse.
                    assert!(field.is_none_or(|f| !f.versions.contains(version)), "{key:?} v{version}");
                    let defaults = reflect_encode(key, version, &StructValue::new(schema.body));
                    assert_eq!(Some(answer), defaults, "{key:?} v{version}");
                    without += 1;
                }
            }
            // The code reads back wherever the version has the field.
            let read = StructValue::decode_body(schema, version, &generated(key, version, code)).unwrap();
            if let Some(f) = field
                && f.versions.contains(version)
            {
                assert_eq!(read.get("ErrorCode"), Some(&Value::Int16(code.to_i16())), "{key:?} v{version}");
            }
        }
    }
    // Most with a top-level code, some (Produce, Metadata before v13, ...) without one.
    assert!(same > 0 && without > 0, "{same} with the same bytes, {without} without a top-level code");
}

/// The offset of the top-level `ThrottleTimeMs`, found by the schema walker (how the broker
/// found it before).
fn walked(key: ApiKey, version: i16, body: &[u8]) -> Option<usize> {
    struct Find {
        depth: usize,
        at: Option<usize>,
    }
    impl<'a> Visitor<'a> for Find {
        fn value(&mut self, field: &Field<'_>, _: Scalar<'a>) {
            if self.depth == 0 && field.index.is_none() && field.schema.name == "ThrottleTimeMs" {
                self.at = Some(field.offset);
            }
        }
        fn enter_struct(&mut self, _: &Field<'_>, _: &'static StructSchema) {
            self.depth += 1;
        }
        fn leave_struct(&mut self, _: &Field<'_>, _: &'static StructSchema) {
            self.depth -= 1;
        }
        fn enter_array(&mut self, _: &Field<'_>, _: Option<usize>) {
            self.depth += 1;
        }
        fn leave_array(&mut self, _: &Field<'_>, _: Option<usize>) {
            self.depth -= 1;
        }
    }
    let mut find = Find { depth: 0, at: None };
    walk_body(reflect::response_schema(key), version, body, 0, &mut find).unwrap();
    find.at
}

#[test]
fn throttle_offsets_are_where_the_schema_walker_finds_the_field() {
    let (mut found, mut arbitrary) = (0, 0);
    // The APIs where an arbitrary body moved the field from where the defaults have it.
    let mut moved = BTreeSet::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for &key in ApiKey::ALL {
        for version in versions(key) {
            let body = generated(key, version, ErrorCode::None);
            let at = throttle_time_at(key, version, &body);
            assert_eq!(at, walked(key, version, &body), "{key:?} v{version}, defaults");
            found += usize::from(at.is_some());
            for _ in 0..8 {
                let data: Vec<u8> = (0..512)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as u8
                    })
                    .collect();
                let Ok(value) = ResponseBody::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                    continue;
                };
                let Ok(len) = value.encoded_len(version) else { continue };
                let mut bytes = vec![0; len];
                if value.encode(version, &mut bytes).is_err() {
                    continue;
                }
                let here = throttle_time_at(key, version, &bytes);
                assert_eq!(here, walked(key, version, &bytes), "{key:?} v{version}: {bytes:02x?}");
                if here != at {
                    moved.insert(key);
                }
                arbitrary += 1;
            }
        }
    }
    assert!(found > 0 && arbitrary > 0, "{found} versions with the field, {arbitrary} arbitrary bodies");
    // Where fields of any length come first, the offset follows them.
    let after_variable = [
        ApiKey::Produce,
        ApiKey::ApiVersions,
        ApiKey::CreateDelegationToken,
        ApiKey::DescribeDelegationToken,
    ];
    assert_eq!(moved, BTreeSet::from(after_variable), "the APIs whose throttle time moves");
}

#[test]
fn throttle_time_at_reads_no_body_where_the_offset_is_fixed() {
    // A Fetch response's records are spliced in after it is written: its offset needs
    // no bytes.
    assert_eq!(throttle_time_at(ApiKey::Fetch, 12, &[]), Some(0));
    assert_eq!(throttle_time_at(ApiKey::OffsetDelete, 0, &[]), Some(2));
    // ApiVersions has it after the ApiKeys array; v0 has none.
    assert_eq!(throttle_time_at(ApiKey::ApiVersions, 0, &[0, 0, 0, 0, 0, 0]), None);
    assert_eq!(throttle_time_at(ApiKey::ApiVersions, 1, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Some(6));
    assert_eq!(throttle_time_at(ApiKey::ApiVersions, 1, &[0, 0]), None, "too short for a view");
}
