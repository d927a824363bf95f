use super::*;
use crate::codec::dispatch;
use crate::codec::encode::AnyBody;
use crate::codec::types::Ver;
use crate::testing::AsVersion;
use alloc::vec;
use alloc::vec::Vec;

/// A route by the address alone (both paths ask it the same questions): hosts
/// lengthened, shortened, made long (a compact prefix and a tagged size a byte wider),
/// kept with a new port, or left alone.
fn route(node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
    match (host.len() + node_id.unsigned_abs() as usize) % 5 {
        0 => Some((alloc::format!("proxy-{host}"), port.wrapping_add(1))),
        1 => Some((host.get(1..).unwrap_or_default().to_string(), port)),
        2 => Some(("h".repeat(200), 19000)),
        3 => Some((host.to_string(), port.wrapping_sub(7))),
        _ => None,
    }
}

struct Rng(u64);

impl Rng {
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let mut next = || {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        };
        let len = next() as usize % max;
        (0..len).map(|_| next() as u8).collect()
    }
}

/// The frame (without its size prefix) both ways: spliced, and through the typed body.
fn both(api: ApiKey, version: i16, frame: &[u8]) -> (Vec<u8>, Vec<u8>, bool) {
    let response = dispatch::parse_response(frame, api, version).unwrap();
    let header = response.header.as_bytes();
    let spliced = addresses::splice(&mut ByNode(route), version, api, &response)
        .unwrap_or_else(|e| panic!("{} v{version}: {e:?}", api.name()));
    let typed = addresses::rewrite(&mut ByNode(route), &response).and_then(|body| {
        // The typed path routes FindCoordinator's top-level address in versions that
        // have none (no coordinators), and that body does not encode: the splice
        // leaves those frames as they are.
        let len = match body.encoded_len(version) {
            Ok(len) => len,
            Err(_) if api == ApiKey::FindCoordinator && version >= 4 => return None,
            Err(e) => panic!("{} v{version}: {e:?}", api.name()),
        };
        let mut out = vec![0u8; header.len() + len];
        out[..header.len()].copy_from_slice(header);
        body.encode(version, &mut out[header.len()..]).unwrap();
        Some(out)
    });
    let changed = spliced.is_some();
    (spliced.unwrap_or_else(|| frame.to_vec()), typed.unwrap_or_else(|| frame.to_vec()), changed)
}

#[test]
fn every_api_and_version_with_addresses_splices_as_the_typed_path_rewrites() {
    let mut rng = Rng(0xadd2_e55e);
    let mut missed = Vec::new();
    let (mut frames, mut spliced) = (0, 0);
    for &api in ApiKey::ALL.iter().filter(|a| carries_addresses(**a)) {
        let versions = api.response_versions();
        // Produce and Fetch carry leader hints from these versions on.
        let first = match api {
            ApiKey::Produce => 10,
            ApiKey::Fetch => 16,
            _ => versions.min,
        };
        for version in versions.min..=versions.max {
            let ver = Ver::new(version, api.flexible_versions().contains(version));
            let mut changed = 0;
            for round in 0..2000 {
                if round >= 30 && (changed > 0 || version < first) {
                    break;
                }
                let data = rng.bytes(4096);
                let Ok(value) = ResponseBody::arbitrary_for(api, &mut arbitrary::Unstructured::new(&data))
                else {
                    continue;
                };
                let value = value.as_version(ver);
                let Ok(n) = dispatch::response_len(&value, version) else { continue };
                let mut frame = vec![0u8; n];
                dispatch::encode_response(&value, version, 7, &mut frame).unwrap();
                let (got, want, did) = both(api, version, &frame[4..]);
                assert_eq!(got, want, "{} v{version}: {frame:02x?}", api.name());
                frames += 1;
                changed += usize::from(did);
            }
            spliced += changed;
            if changed == 0 && version >= first {
                missed.push((api.name(), version));
            }
        }
    }
    assert!(missed.is_empty(), "never spliced: {missed:?}");
    assert!(spliced > frames / 10, "only {spliced} of {frames} frames spliced");
    std::eprintln!("{frames} frames, {spliced} spliced");
}
