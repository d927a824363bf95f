//! Property tests over every version of every message: values generated with
//! `arbitrary` from a seeded random stream are sized, encoded, and read back through the
//! views and through the reference decoder.
//!
//! For each value and version: the size step either fails with one of the documented
//! errors or gives exactly the number of bytes `encode` writes; a buffer one byte short is
//! refused with `BufferTooSmall`; and both decoders read back the value as that version
//! carries it (`AsVersion`: fields the version lacks at their defaults).

mod common;

use arbitrary::{Arbitrary, Unstructured};
use common::XorShift;
use kwire::Body;
use kwire::EncodeError;
use kwire::messages::*;
use kwire::testing::AsVersion;
use kwire::types::Ver;

const CASES: usize = 400;

fn documented(e: &EncodeError) -> bool {
    matches!(
        e,
        EncodeError::FieldNotInVersion { .. }
            | EncodeError::InvalidTaggedFields { .. }
            | EncodeError::StringTooLong { .. }
            | EncodeError::NullNotAllowed { .. }
    )
}

macro_rules! roundtrip_test {
    ($test:ident, $ty:ident, $view:ident, $seed:expr) => {
        #[test]
        fn $test() {
            let mut rng = XorShift($seed);
            let (mut encoded, mut refused) = (0usize, 0usize);
            let versions = <$ty as Body>::VERSIONS;
            for _ in 0..CASES {
                let data = rng.bytes(1024);
                let Ok(value) = $ty::arbitrary(&mut Unstructured::new(&data)) else { continue };
                for version in versions.min..=versions.max {
                    let ver = <$ty as Body>::ver(version).unwrap();
                    let expected = value.as_version(ver);
                    match value.encoded_len(version) {
                        Ok(n) => {
                            assert_eq!(expected.encoded_len(version), Ok(n));
                            check(&value, ver, &expected);
                            encoded += 1;
                        }
                        Err(e) => {
                            assert!(documented(&e), "{} v{version}: {e}", stringify!($ty));
                            refused += 1;
                        }
                    }
                    // The value as the version carries it encodes unless its unknown tagged
                    // fields are out of order or it holds a null the version cannot carry.
                    match expected.encoded_len(version) {
                        Ok(_) => check(&expected, ver, &expected),
                        Err(e) => assert!(
                            matches!(
                                e,
                                EncodeError::InvalidTaggedFields { .. } | EncodeError::NullNotAllowed { .. }
                            ),
                            "{e}"
                        ),
                    }
                }
            }
            assert!(encoded > CASES, "{}: only {encoded} values encoded, {refused} refused", stringify!($ty));
        }

        #[allow(dead_code)]
        fn check(value: &$ty<'_>, ver: Ver, expected: &$ty<'_>) {
            let version = ver.version;
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
            let view = $view::new(&buf, version).unwrap_or_else(|e| panic!("v{version}: {e}\n{value:?}"));
            assert_eq!(view.as_bytes().len(), n);
            let from_view = $ty::from(view);
            assert_eq!(&from_view, expected, "view, v{version}");
            let reference = $ty::decode(&buf, version).unwrap();
            assert_eq!(&reference, expected, "reference decoder, v{version}");
        }
    };
}

mod api_versions_request {
    use super::*;
    roundtrip_test!(roundtrip, ApiVersionsRequest, ApiVersionsRequestView, 0x1111);
}
mod api_versions_response {
    use super::*;
    roundtrip_test!(roundtrip, ApiVersionsResponse, ApiVersionsResponseView, 0x2222);
}
mod list_groups_request {
    use super::*;
    roundtrip_test!(roundtrip, ListGroupsRequest, ListGroupsRequestView, 0x3333);
}
mod list_groups_response {
    use super::*;
    roundtrip_test!(roundtrip, ListGroupsResponse, ListGroupsResponseView, 0x4444);
}
mod list_offsets_request {
    use super::*;
    roundtrip_test!(roundtrip, ListOffsetsRequest, ListOffsetsRequestView, 0x5555);
}
mod list_offsets_response {
    use super::*;
    roundtrip_test!(roundtrip, ListOffsetsResponse, ListOffsetsResponseView, 0x6666);
}
mod metadata_request {
    use super::*;
    roundtrip_test!(roundtrip, MetadataRequest, MetadataRequestView, 0x7777);
}
mod metadata_response {
    use super::*;
    roundtrip_test!(roundtrip, MetadataResponse, MetadataResponseView, 0x8888);
}
