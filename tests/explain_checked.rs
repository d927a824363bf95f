//! `kwire::reflect::explain::explain_checked`: the schema walker and the typed views agree
//! on every byte of mutated vectors, and every frame they accept comes back from its JSON
//! (`reflect::json::frame_from_json`) byte for byte.

mod common;

use kwire::ApiKey;
use kwire::dispatch;
use kwire::reflect::explain::{FrameKind as Kind, explain_checked};
use kwire::reflect::json::frame_from_json;

#[test]
fn seed_request_decodes_both_ways() {
    let bytes = common::hex("0000000e0012000400000000000000010100");
    let d = explain_checked(&bytes, Kind::Request);
    assert!(d.problem.is_none(), "{:?}", d.problem);
    assert_eq!(d.explained.root.size, 18);
}

#[test]
fn truncation_agrees_with_typed_decoder() {
    let frames = [
        "0000002a0002000a0000000000000000000000000201020000000000000000000000000000000000000000000000",
        "0000001000100005000000000000000201020100",
    ];
    for f in frames {
        let bytes = common::hex(f);
        for cut in 0..bytes.len() {
            // Shorten the frame and fix its size prefix, so that the body itself is short.
            let mut b = bytes[..cut.max(4)].to_vec();
            let size = (b.len() - 4) as i32;
            b[..4].copy_from_slice(&size.to_be_bytes());
            let d = explain_checked(&b, Kind::Request);
            if let Some(p) = &d.problem {
                assert!(
                    !p.contains("please report") && !p.contains("typed decoder reports"),
                    "cut {cut}: {p}"
                );
            }
        }
    }
}

/// Every shared vector with what it is: requests, and responses with the request
/// they answer.
fn shared_vectors() -> Vec<(String, Vec<u8>, Kind)> {
    let dir = common::vectors_dir();
    let read = |p: &std::path::Path| common::hex(&std::fs::read_to_string(p).unwrap());
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir.join("clients/requests")).unwrap() {
        let path = entry.unwrap().path();
        let request = read(&path);
        let key = ApiKey::from_i16(i16::from_be_bytes([request[4], request[5]])).unwrap();
        let version = i16::from_be_bytes([request[6], request[7]]);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let response = read(&dir.join("clients/responses").join(&name));
        let version = if name.contains("_rejected") { 0 } else { version };
        out.push((format!("{name} (request)"), request, Kind::Request));
        out.push((format!("{name} (response)"), response, Kind::Response(key, version)));
    }
    for (name, key, version) in [
        ("seed/apiversions_v4_request.hex", None, 0),
        ("seed/listgroups_v5_request.hex", None, 0),
        ("seed/listoffsets_v10_request.hex", None, 0),
        ("seed/apiversions_v4_response.hex", Some(ApiKey::ApiVersions), 4),
        ("seed/listgroups_v5_response.hex", Some(ApiKey::ListGroups), 5),
        ("seed/listoffsets_v10_response.hex", Some(ApiKey::ListOffsets), 10),
    ] {
        let kind = key.map_or(Kind::Request, |k| Kind::Response(k, version));
        out.push((name.to_string(), read(&dir.join(name)), kind));
    }
    out
}

fn encode_typed(body: &impl kwire::AnyBody, version: i16) -> Result<Vec<u8>, kwire::EncodeError> {
    let mut out = vec![0u8; body.encoded_len(version)?];
    let n = body.encode(version, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Re-encodes a frame's body with kwire's typed decoder and encoder, or `None` when
/// the typed decoder rejects it.
fn typed_canonical(bytes: &[u8], kind: Kind) -> Option<bool> {
    use kwire::messages::{RequestBody, ResponseBody};
    let inner = &bytes[4..];
    let (body, reencoded) = match kind {
        Kind::Request => {
            let req = dispatch::parse_request(inner).ok()?;
            let typed =
                RequestBody::decode(req.body.as_bytes(), req.body.api_key(), req.header.api_version())
                    .ok()?;
            (req.body.as_bytes(), encode_typed(&typed, req.header.api_version()).ok()?)
        }
        Kind::Response(key, version) => {
            let resp = dispatch::parse_response(inner, key, version).ok()?;
            let typed = ResponseBody::decode(resp.body.as_bytes(), key, version).ok()?;
            (resp.body.as_bytes(), encode_typed(&typed, version).ok()?)
        }
    };
    Some(body == reencoded.as_slice())
}

/// Mutates every byte of every small shared vector: the walker and the typed views must
/// accept and reject the same frames without panicking, and every accepted frame must
/// come back from its JSON byte for byte, unless kwire's typed codec does not
/// reproduce it either (a non-minimal varint, a bool byte of 2, a tagged field sent
/// with its default value).
#[test]
fn mutations_agree_and_round_trip() {
    let mut checked = 0;
    for (name, original, kind) in shared_vectors() {
        if original.len() > 400 {
            continue;
        }
        let mut variants = vec![original.clone()];
        for i in 4..original.len() {
            for value in [0x00, 0x80, 0xff, original[i].wrapping_add(1)] {
                let mut m = original.clone();
                m[i] = value;
                variants.push(m);
            }
        }
        for m in variants {
            let d = explain_checked(&m, kind);
            if let Some(p) = &d.problem {
                assert!(!p.contains("please report"), "{name}: {p}");
                continue;
            }
            if d.note.is_some() {
                continue;
            }
            let doc = d.explained.to_json();
            let text = doc.to_string();
            let (key, version) = match kind {
                Kind::Response(k, v) => (Some(k), Some(v)),
                Kind::Request => (None, None),
            };
            let built = frame_from_json(&doc, key, version).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            if built.bytes != m {
                assert_eq!(typed_canonical(&m, kind), Some(false), "{name}: JSON round trip differs\n{text}");
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} frames decoded");
}
