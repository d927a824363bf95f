//! Entities (`kwire::reflect::entities`) in every API and version: arbitrary values of every
//! message, encoded at every version as the version carries them, get every string entity prefixed, the
//! prefixed body holds the same entities in the same order, each with the prefix, and taking
//! the prefix off again gives back the encoder's bytes. Every field the schemas mark with a
//! string `entityType` must be met with a value somewhere in the run.

mod common;

use std::collections::BTreeSet;

use arbitrary::Unstructured;
use common::XorShift;
use kwire::messages::{RequestBody, ResponseBody};
use kwire::reflect::entities::{self, EntityValue};
use kwire::reflect::{self, Entity, FieldType, MessageSchema, RewriteError, StructSchema};
use kwire::testing::AsVersion;
use kwire::{AnyBody, ApiKey};

const PREFIX: &str = "tenant-a.";

/// Every (message, struct, field) whose schema marks a string entity.
fn marked(schema: &MessageSchema) -> BTreeSet<(&'static str, &'static str)> {
    fn walk(s: &'static StructSchema, out: &mut BTreeSet<(&'static str, &'static str)>) {
        for f in s.fields {
            let string = match &f.ty {
                FieldType::String => true,
                FieldType::Array(t) => matches!(t, FieldType::String),
                _ => false,
            };
            if f.entity.is_some() && string {
                out.insert((s.name, f.name));
            }
            let mut ty = &f.ty;
            while let FieldType::Array(t) = ty {
                ty = t;
            }
            if let FieldType::Struct(inner) = ty {
                walk(inner, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(schema.body, &mut out);
    out
}

/// The entities of a body, as owned values, in wire order.
fn entities_of(schema: &MessageSchema, version: i16, body: &[u8]) -> Vec<(Entity, Option<String>)> {
    let mut found = Vec::new();
    entities::visit(schema, version, body, |entity, value| {
        found.push((
            entity,
            match value {
                EntityValue::Str(s) => Some(s.to_owned()),
                _ => None,
            },
        ))
    })
    .expect("the body walks");
    found
}

/// Which marked fields held a string in this body (a visitor of the walker).
struct Seen<'s>(&'s mut BTreeSet<(&'static str, &'static str)>, Vec<&'static str>);

impl<'a> reflect::Visitor<'a> for Seen<'_> {
    fn enter_struct(&mut self, _: &reflect::Field<'_>, s: &'static StructSchema) {
        self.1.push(s.name);
    }
    fn leave_struct(&mut self, _: &reflect::Field<'_>, _: &'static StructSchema) {
        self.1.pop();
    }
    fn value(&mut self, field: &reflect::Field<'_>, value: reflect::Scalar<'a>) {
        if field.schema.entity.is_some() && matches!(value, reflect::Scalar::String(_)) {
            let owner = self.1.last().copied().unwrap_or("");
            self.0.insert((owner, field.schema.name));
        }
    }
}

fn check(
    schema: &'static MessageSchema,
    version: i16,
    body: &[u8],
    seen: &mut BTreeSet<(&'static str, &'static str)>,
) -> bool {
    let before = entities_of(schema, version, body);
    let prefixed = match entities::rewrite(schema, version, body, |_, s| Some(format!("{PREFIX}{s}"))) {
        Ok(Some(p)) => p,
        // No string entity in this body.
        Ok(None) => {
            assert!(
                before.iter().all(|(_, s)| s.is_none()),
                "{} v{version}: a string entity was not offered",
                schema.name
            );
            return false;
        }
        // A name the prefix pushes past what a string can hold.
        Err(RewriteError::Encode(_)) => return false,
        Err(e) => panic!("{} v{version}: {e}", schema.name),
    };
    let after = entities_of(schema, version, &prefixed);
    assert_eq!(before.len(), after.len(), "{} v{version}: entities lost or gained", schema.name);
    for ((e0, s0), (e1, s1)) in before.iter().zip(&after) {
        assert_eq!(e0, e1);
        if let Some(s0) = s0 {
            assert_eq!(s1.as_deref(), Some(format!("{PREFIX}{s0}").as_str()), "{} v{version}", schema.name);
        } else {
            assert_eq!(s1, s0);
        }
    }
    let back =
        entities::rewrite(schema, version, &prefixed, |_, s| s.strip_prefix(PREFIX).map(str::to_owned))
            .expect("the prefixed body decodes and encodes")
            .expect("every prefix comes off");
    assert_eq!(back, body, "{} v{version}: prefix then unprefix is not the identity", schema.name);
    let mut walker = Seen(seen, vec![schema.body.name]);
    reflect::walk_body(schema, version, body, 0, &mut walker).unwrap();
    true
}

macro_rules! every_message {
    ($test:ident, $Body:ident, $versions:ident, $schema:path, $seed:expr) => {
        #[test]
        fn $test() {
            let mut rng = XorShift($seed);
            let mut want = BTreeSet::new();
            let mut seen = BTreeSet::new();
            let mut rewritten = 0usize;
            for &key in ApiKey::ALL {
                let schema = $schema(key);
                want.extend(marked(schema));
                let versions = key.$versions();
                for _ in 0..400 {
                    let data = rng.bytes(2048);
                    let Ok(value) = $Body::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                        continue;
                    };
                    for version in versions.min..=versions.max {
                        // As the version carries it, so that deep fields of old versions
                        // are met too.
                        let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
                        let value = value.as_version(ver);
                        let Ok(n) = value.encoded_len(version) else { continue };
                        let mut bytes = vec![0u8; n];
                        value.encode(version, &mut bytes).unwrap();
                        rewritten += usize::from(check(schema, version, &bytes, &mut seen));
                    }
                }
            }
            let missed: Vec<_> = want.difference(&seen).collect();
            assert!(missed.is_empty(), "marked fields never met with a value: {missed:?}");
            assert!(rewritten > 1000, "only {rewritten} bodies had a string entity");
        }
    };
}

every_message!(every_request, RequestBody, request_versions, reflect::request_schema, 0x07e4_a4e7);
every_message!(every_response, ResponseBody, response_versions, reflect::response_schema, 0x07e4_a4e8);
