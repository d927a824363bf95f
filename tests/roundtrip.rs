//! Property tests over every version of every message: values generated with
//! `arbitrary` from a seeded random stream are sized, encoded, and read back through the
//! views and through the reference decoder.
//!
//! For each value and version: the size step either fails with one of the documented
//! errors or gives exactly the number of bytes `encode` writes; a buffer one byte short is
//! refused with `BufferTooSmall`; and both decoders read back the value as that version
//! carries it (`AsVersion`: fields the version lacks at their defaults).

mod common;

use arbitrary::Unstructured;
use common::XorShift;
use kwire::messages::*;
use kwire::testing::AsVersion;
use kwire::types::Ver;
use kwire::{AnyBody, ApiKey, EncodeError};

/// Values per message (every version of each is tried).
const CASES: usize = 120;

fn documented(e: &EncodeError) -> bool {
    matches!(
        e,
        EncodeError::FieldNotInVersion { .. }
            | EncodeError::InvalidTaggedFields { .. }
            | EncodeError::StringTooLong { .. }
            | EncodeError::NullNotAllowed { .. }
    )
}

/// Encodes `value` at `version` and reads it back through the view and the reference
/// decoder; both must give `expected`.
macro_rules! check {
    ($value:expr, $expected:expr, $key:expr, $version:expr, $Body:ident, $View:ident) => {{
        let (value, expected, key, version) = ($value, $expected, $key, $version);
        let n = value.encoded_len(version).unwrap();
        let mut buf = vec![0u8; n];
        assert_eq!(value.encode(version, &mut buf), Ok(n));
        if n > 0 {
            let mut short = vec![0u8; n - 1];
            assert_eq!(
                value.encode(version, &mut short),
                Err(EncodeError::BufferTooSmall { needed: n, available: n - 1 })
            );
        }
        let view = $View::new(&buf, key, version).unwrap_or_else(|e| panic!("v{version}: {e}\n{value:?}"));
        assert_eq!(view.as_bytes().len(), n);
        assert_eq!(&$Body::from(view), expected, "view, v{version}");
        let reference = $Body::decode(&buf, key, version).unwrap();
        assert_eq!(&reference, expected, "reference decoder, v{version}");
    }};
}

macro_rules! roundtrip_all {
    ($test:ident, $Body:ident, $View:ident, $versions:ident, $seed:expr) => {
        #[test]
        fn $test() {
            let mut rng = XorShift($seed);
            for &key in ApiKey::ALL {
                let (mut encoded, mut refused) = (0usize, 0usize);
                let versions = key.$versions();
                for _ in 0..CASES {
                    let data = rng.bytes(1024);
                    let Ok(value) = $Body::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                        continue;
                    };
                    for version in versions.min..=versions.max {
                        let ver = Ver::new(version, key.flexible_versions().contains(version));
                        let expected = value.as_version(ver);
                        match value.encoded_len(version) {
                            Ok(n) => {
                                assert_eq!(expected.encoded_len(version), Ok(n));
                                check!(&value, &expected, key, version, $Body, $View);
                            }
                            Err(e) => {
                                assert!(documented(&e), "{} v{version}: {e}", key.name());
                                // The one-pass write refuses it too, with the size step's error.
                                assert_eq!(value.encode(version, &mut vec![0u8; 1 << 16]), Err(e));
                                refused += 1;
                            }
                        }
                        // The value as the version carries it encodes unless its unknown
                        // tagged fields are out of order or it holds a null the version
                        // cannot carry.
                        match expected.encoded_len(version) {
                            Ok(_) => {
                                check!(&expected, &expected, key, version, $Body, $View);
                                encoded += 1;
                            }
                            Err(e) => {
                                assert!(
                                    matches!(
                                        e,
                                        EncodeError::InvalidTaggedFields { .. }
                                            | EncodeError::NullNotAllowed { .. }
                                    ),
                                    "{e}"
                                );
                                assert_eq!(expected.encode(version, &mut vec![0u8; 1 << 16]), Err(e));
                            }
                        }
                    }
                }
                // Values as a version carries them encode unless they hold unknown tags out of
                // order or a null the version cannot carry: a good share of them.
                let tries = CASES * (versions.max - versions.min + 1) as usize;
                assert!(
                    encoded > tries / 4,
                    "{}: only {encoded} of {tries} encoded, {refused} refused as generated",
                    key.name()
                );
            }
        }
    };
}

roundtrip_all!(every_request, RequestBody, RequestBodyView, request_versions, 0x1111);
roundtrip_all!(every_response, ResponseBody, ResponseBodyView, response_versions, 0x2222);
