//! The schema walker (`kwire::reflect::walk`) against the typed views, and the dynamic
//! `Value` against the generated encoders.
//!
//! - Every body in tests/vectors: the walker and `RequestBodyView::new` /
//!   `ResponseBodyView::new` agree; walk -> Value -> encode gives the same bytes (headers
//!   too), and so does Value -> JSON -> Value -> encode.
//! - Mutated, truncated and random bodies: the walker and the views accept and reject the
//!   same ones, with the same error kind at the same offset (a truncation only by kind:
//!   the views check a run of fixed-width fields at once).
//! - Arbitrary values of every message at every version: what the generated encoder
//!   writes, the walker accepts and `Value` encodes again byte for byte.
//! - Broker addresses: found and rewritten in Metadata, FindCoordinator, DescribeCluster
//!   and the tagged NodeEndpoints of Produce responses.

mod common;

use arbitrary::Unstructured;
use common::{XorShift, api_and_version, hex_files, vector};
use kwire::messages::*;
use kwire::reflect::json::{from_json, to_json};
use kwire::reflect::walk::{self, Field, Scalar, Visitor};
use kwire::reflect::{self, Encoding, StructValue, addresses};
use kwire::{AnyBody, ApiKey, DecodeError, DecodeErrorKind, List, Str};

/// One body of a vector frame.
struct Body {
    name: String,
    frame: Vec<u8>,
    key: ApiKey,
    version: i16,
    request: bool,
    /// Where the header starts (after the size prefix) and the body starts.
    header_at: usize,
    body_at: usize,
}

struct Nothing;
impl Visitor<'_> for Nothing {}

fn schema(b: &Body) -> &'static reflect::MessageSchema {
    if b.request { reflect::request_schema(b.key) } else { reflect::response_schema(b.key) }
}

fn request_body(name: String, frame: Vec<u8>) -> Body {
    let info =
        walk::walk_request_header(&frame[4..], 4, &mut Nothing).unwrap_or_else(|e| panic!("{name}: {e}"));
    Body {
        name,
        key: info.api_key,
        version: info.api_version,
        request: true,
        header_at: 4,
        body_at: 4 + info.end,
        frame,
    }
}

fn response_body(name: String, frame: Vec<u8>, key: ApiKey, version: i16) -> Body {
    let hv = key.response_header_version(version);
    let end = walk::walk_response_header(&frame[4..], hv, 4, &mut Nothing).unwrap();
    Body { name, frame, key, version, request: false, header_at: 4, body_at: 4 + end }
}

/// Every frame in tests/vectors with what it is.
fn bodies() -> Vec<Body> {
    let mut out = Vec::new();
    for dir in ["clients", "kafka44", "records"] {
        for (stem, path) in hex_files(&format!("{dir}/requests")) {
            let req = request_body(path.clone(), vector(&path));
            let (key, version) = (req.key, req.version);
            out.push(req);
            let resp_path = format!("{dir}/responses/{stem}.hex");
            if common::vectors_dir().join(&resp_path).exists() {
                let frame = vector(&resp_path);
                // An ApiVersions error answer is a v0 body (the fallback Kafka's clients do).
                let v = if key == ApiKey::ApiVersions
                    && ResponseBodyView::new(
                        &frame[response_body(resp_path.clone(), frame.clone(), key, version).body_at..],
                        key,
                        version,
                    )
                    .is_err()
                {
                    0
                } else {
                    version
                };
                out.push(response_body(resp_path, frame, key, v));
            }
        }
    }
    for dir in ["seed", "bench"] {
        for (stem, path) in hex_files(dir) {
            let frame = vector(&path);
            if stem.contains("_request") {
                out.push(request_body(path, frame));
            } else {
                let (key, version) = api_and_version(&stem);
                out.push(response_body(path, frame, key, version));
            }
        }
    }
    out
}

/// Walks `body` and checks it the typed way; both results.
fn both(
    schema: &reflect::MessageSchema,
    request: bool,
    key: ApiKey,
    version: i16,
    body: &[u8],
) -> (Result<(), walk::WalkError>, Result<(), DecodeError>) {
    let walked = walk::walk_body(schema, version, body, 0, &mut Nothing);
    let typed = if request {
        RequestBodyView::new(body, key, version).map(|_| ())
    } else {
        ResponseBodyView::new(body, key, version).map(|_| ())
    };
    (walked, typed)
}

/// Whether the walker and the views made the same decision, for the same reason.
fn agree(walked: &Result<(), walk::WalkError>, typed: &Result<(), DecodeError>) -> Result<(), String> {
    match (walked, typed) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(w), Err(t)) => {
            let w = w.decode_error().ok_or_else(|| format!("walker: {w}"))?;
            match (w.kind(), t.kind()) {
                (DecodeErrorKind::Truncated { .. }, DecodeErrorKind::Truncated { .. }) => Ok(()),
                (a, b) if a == b && w.offset() == t.offset() => Ok(()),
                _ => Err(format!("walker: {w}; views: {t}")),
            }
        }
        (Ok(()), Err(t)) => Err(format!("the views reject ({t}), the walker accepts")),
        (Err(w), Ok(())) => Err(format!("the walker rejects ({w}), the views accept")),
    }
}

#[test]
fn vectors_agree_and_encode_again() {
    let all = bodies();
    assert!(all.len() >= 480, "only {} vector frames", all.len());
    for b in &all {
        let s = schema(b);
        let body = &b.frame[b.body_at..];
        let (walked, typed) = both(s, b.request, b.key, b.version, body);
        agree(&walked, &typed).unwrap_or_else(|e| panic!("{}: {e}", b.name));
        walked.unwrap_or_else(|e| panic!("{}: {e}", b.name));

        // walk -> Value -> bytes
        let value = StructValue::decode_body(s, b.version, body).unwrap();
        let encoding = Encoding::body(s, b.version);
        assert_eq!(value.encoded_len(encoding), Ok(body.len()), "{}", b.name);
        assert_eq!(value.to_bytes(encoding).unwrap(), body, "{}: body", b.name);

        // The header too.
        let header = &b.frame[b.header_at..b.body_at];
        let (hschema, hencoding) = if b.request {
            let hv = b.key.request_header_version(b.version);
            (&walk::REQUEST_HEADER, Encoding::request_header(hv))
        } else {
            let hv = b.key.response_header_version(b.version);
            (&walk::RESPONSE_HEADER, Encoding::response_header(hv))
        };
        let mut hb = reflect::Builder::new(hschema);
        if b.request {
            walk::walk_request_header(header, 0, &mut hb).unwrap();
        } else {
            walk::walk_response_header(header, b.key.response_header_version(b.version), 0, &mut hb).unwrap();
        }
        assert_eq!(hb.finish().to_bytes(hencoding).unwrap(), header, "{}: header", b.name);

        // Value -> JSON -> Value -> bytes
        let json = to_json(&value, encoding);
        let back =
            from_json(s.body, s.name, encoding, &json, "body").unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert!(back.warnings.is_empty());
        assert_eq!(back.value.to_bytes(encoding).unwrap(), body, "{}: through JSON", b.name);
    }
}

#[test]
fn mutations_agree() {
    let (mut checked, mut rejected) = (0usize, 0usize);
    for b in bodies().iter().filter(|b| b.frame.len() - b.body_at <= 600) {
        let s = schema(b);
        let body = &b.frame[b.body_at..];
        let mut variants: Vec<Vec<u8>> = (0..body.len()).map(|n| body[..n].to_vec()).collect();
        for i in 0..body.len() {
            for v in [0x00, 0x01, 0x7f, 0x80, 0xff, body[i].wrapping_add(1), body[i].wrapping_sub(1)] {
                let mut m = body.to_vec();
                m[i] = v;
                variants.push(m);
            }
        }
        variants.push([body, &[0u8][..]].concat());
        for m in &variants {
            let (walked, typed) = both(s, b.request, b.key, b.version, m);
            agree(&walked, &typed).unwrap_or_else(|e| panic!("{} ({} bytes): {e}", b.name, m.len()));
            checked += 1;
            rejected += usize::from(walked.is_err());
        }
    }
    assert!(checked > 50_000 && rejected > 10_000, "{checked} checked, {rejected} rejected");
}

#[test]
fn random_bodies_agree() {
    let mut rng = XorShift(0x005e_ed0f_3a1c);
    let mut accepted = 0;
    for &key in ApiKey::ALL {
        for request in [true, false] {
            let versions = if request { key.request_versions() } else { key.response_versions() };
            let s = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
            for version in versions.min..=versions.max {
                for _ in 0..40 {
                    let body = rng.input(200);
                    let (walked, typed) = both(s, request, key, version, &body);
                    agree(&walked, &typed).unwrap_or_else(|e| panic!("{} v{version}: {e}", s.name));
                    accepted += usize::from(walked.is_ok());
                }
            }
        }
    }
    assert!(accepted > 0);
}

macro_rules! arbitrary_alike {
    ($test:ident, $Body:ident, $versions:ident, $schema:path, $seed:expr) => {
        #[test]
        fn $test() {
            let mut rng = XorShift($seed);
            let mut compared = 0usize;
            for &key in ApiKey::ALL {
                let s = $schema(key);
                let versions = key.$versions();
                for _ in 0..60 {
                    let data = rng.bytes(1024);
                    let Ok(value) = $Body::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                        continue;
                    };
                    for version in versions.min..=versions.max {
                        let Ok(n) = value.encoded_len(version) else { continue };
                        let mut bytes = vec![0u8; n];
                        value.encode(version, &mut bytes).unwrap();
                        let dynamic = StructValue::decode_body(s, version, &bytes)
                            .unwrap_or_else(|e| panic!("{} v{version}: {e}", s.name));
                        let encoding = Encoding::body(s, version);
                        assert_eq!(dynamic.encoded_len(encoding), Ok(n), "{} v{version}", s.name);
                        assert_eq!(dynamic.to_bytes(encoding).unwrap(), bytes, "{} v{version}", s.name);
                        let json = to_json(&dynamic, encoding);
                        let back = from_json(s.body, s.name, encoding, &json, "body").unwrap();
                        assert_eq!(
                            back.value.to_bytes(encoding).unwrap(),
                            bytes,
                            "{} v{version} JSON",
                            s.name
                        );
                        compared += 1;
                    }
                }
            }
            assert!(compared > 5_000, "only {compared} values compared");
        }
    };
}

arbitrary_alike!(
    arbitrary_requests_encode_alike,
    RequestBody,
    request_versions,
    reflect::request_schema,
    0x1234_5678
);
arbitrary_alike!(
    arbitrary_responses_encode_alike,
    ResponseBody,
    response_versions,
    reflect::response_schema,
    0x8765_4321
);

#[test]
fn value_refuses_what_the_encoders_refuse() {
    let s = reflect::request_schema(ApiKey::ListOffsets);
    let mut v = StructValue::new(s.body);
    // IsolationLevel exists from v2 on and is not ignorable.
    v.set("IsolationLevel", reflect::Value::Int8(1));
    assert_eq!(
        v.encoded_len(Encoding::body(s, 1)),
        Err(reflect::ValueError::Encode(kwire::EncodeError::FieldNotInVersion {
            field: "IsolationLevel",
            version: 1
        }))
    );
    assert!(v.encoded_len(Encoding::body(s, 2)).is_ok());
    v.set("Topics", reflect::Value::Null);
    assert!(matches!(
        v.encoded_len(Encoding::body(s, 2)),
        Err(reflect::ValueError::Encode(kwire::EncodeError::NullNotAllowed { .. }))
    ));
    v.set("Topics", reflect::Value::Int32(3));
    assert_eq!(v.encoded_len(Encoding::body(s, 2)), Err(reflect::ValueError::WrongType { field: "Topics" }));
    // Unset fields encode as their defaults, as a default typed value does.
    let empty = StructValue::new(s.body).to_bytes(Encoding::body(s, 10)).unwrap();
    let typed = ListOffsetsRequest::default();
    let mut buf = vec![0u8; typed.encoded_len(10).unwrap()];
    typed.encode(10, &mut buf).unwrap();
    assert_eq!(empty, buf);
    let mut short = vec![0u8; buf.len() - 1];
    assert!(matches!(
        StructValue::new(s.body).encode(Encoding::body(s, 10), &mut short),
        Err(reflect::ValueError::Encode(kwire::EncodeError::BufferTooSmall { .. }))
    ));
}

/// A visitor sees each field's schema and path: a redacting visitor is a few lines.
#[test]
fn visitor_sees_paths_and_offsets() {
    struct Secrets(Vec<(String, usize, usize)>);
    impl Visitor<'_> for Secrets {
        fn value(&mut self, field: &Field<'_>, value: Scalar<'_>) {
            if field.schema.name == "AuthBytes" && matches!(value, Scalar::Bytes(_)) {
                self.0.push((field.path.to_string(), field.offset, field.end));
            }
        }
    }
    let req = SaslAuthenticateRequest {
        auth_bytes: kwire::Bytes::Borrowed(b"\0user\0secret"),
        ..Default::default()
    };
    let mut bytes = vec![0u8; req.encoded_len(2).unwrap()];
    req.encode(2, &mut bytes).unwrap();
    let mut v = Secrets(Vec::new());
    walk::walk_body(reflect::request_schema(ApiKey::SaslAuthenticate), 2, &bytes, 100, &mut v).unwrap();
    assert_eq!(v.0, vec![("body.authBytes".to_string(), 100, 100 + bytes.len() - 1)]);

    // Errors carry the path of the field at fault.
    let body = vector("seed/listoffsets_v10_request.hex");
    let b = request_body("seed".into(), body);
    let body = &b.frame[b.body_at..];
    let cut = &body[..body.len() / 2];
    let e = walk::walk_body(schema(&b), b.version, cut, 0, &mut Nothing).unwrap_err();
    assert!(e.path().unwrap().to_string().starts_with("body.topics[0]"), "{e}");
    let typed = RequestBodyView::new(cut, b.key, b.version).unwrap_err();
    assert_eq!(e.decode_error().map(|d| d.kind()), Some(typed.kind()));
}

fn metadata(brokers: &[(i32, &'static str, i32)]) -> MetadataResponse<'static> {
    MetadataResponse {
        throttle_time_ms: 7,
        brokers: List::Owned(
            brokers
                .iter()
                .map(|&(node_id, host, port)| metadata::MetadataResponseBroker {
                    node_id,
                    host: Str::Borrowed(host),
                    port,
                    rack: Some(Str::Borrowed("rack-a")),
                    ..Default::default()
                })
                .collect(),
        ),
        cluster_id: Some(Str::Borrowed("cluster")),
        controller_id: 1,
        ..Default::default()
    }
}

fn encode(body: &impl AnyBody, version: i16) -> Vec<u8> {
    let mut out = vec![0u8; body.encoded_len(version).unwrap()];
    body.encode(version, &mut out).unwrap();
    out
}

#[test]
fn addresses_in_metadata_at_every_version() {
    let s = reflect::response_schema(ApiKey::Metadata);
    let value = metadata(&[(1, "kafka-1.internal", 9092), (2, "kafka-2.internal", 9093)]);
    let versions = ApiKey::Metadata.response_versions();
    for version in versions.min..=versions.max {
        let bytes = encode(&value, version);
        let found = addresses::find(s, version, &bytes).unwrap();
        assert_eq!(
            found,
            vec![("kafka-1.internal".into(), 9092), ("kafka-2.internal".into(), 9093)],
            "v{version}"
        );
        let scan = addresses::scan(s, version, &bytes).unwrap();
        assert_eq!((scan.addresses, scan.end), (found, bytes.len()));

        let new = addresses::rewrite(s, version, &bytes, |i, host, port| {
            (i == 1).then(|| (format!("proxy-for-{host}"), port + 1000))
        })
        .unwrap()
        .unwrap();
        let back = MetadataResponse::decode(&new, version).unwrap();
        assert_eq!(back.brokers[0].host.as_str(), "kafka-1.internal");
        assert_eq!(back.brokers[1].host.as_str(), "proxy-for-kafka-2.internal");
        assert_eq!(back.brokers[1].port, 10093);
        let mut expected =
            metadata(&[(1, "kafka-1.internal", 9092), (2, "proxy-for-kafka-2.internal", 10093)]);
        expected.brokers = List::Owned(expected.brokers.as_slice().to_vec());
        assert_eq!(new, encode(&expected, version), "v{version}: only the address changes");
        // Nothing to change: no new body.
        assert_eq!(addresses::rewrite(s, version, &bytes, |_, _, _| None).unwrap(), None);
    }
}

#[test]
fn addresses_in_other_responses() {
    // FindCoordinator v4: coordinators[].{Host, Port}; v0-v3: Host and Port in the body.
    let s = reflect::response_schema(ApiKey::FindCoordinator);
    let v4 = FindCoordinatorResponse {
        coordinators: List::Owned(vec![find_coordinator::Coordinator {
            key: Str::Borrowed("group"),
            node_id: 3,
            host: Str::Borrowed("broker-3"),
            port: 9094,
            ..Default::default()
        }]),
        ..Default::default()
    };
    assert_eq!(addresses::find(s, 4, &encode(&v4, 4)).unwrap(), vec![("broker-3".into(), 9094)]);
    let v1 = FindCoordinatorResponse {
        error_code: 15,
        host: Str::Borrowed("broker-4"),
        port: 9095,
        ..Default::default()
    };
    let bytes = encode(&v1, 1);
    let scan = addresses::scan(s, 1, &bytes).unwrap();
    assert_eq!(scan.addresses, vec![("broker-4".into(), 9095)]);
    assert_eq!(scan.errors, vec![15]);
    let new = addresses::rewrite(s, 1, &bytes, |_, _, _| Some(("127.0.0.1".into(), 19092))).unwrap().unwrap();
    let back = FindCoordinatorResponse::decode(&new, 1).unwrap();
    assert_eq!((back.host.as_str(), back.port, back.error_code), ("127.0.0.1", 19092, 15));

    // DescribeCluster: brokers[].
    let s = reflect::response_schema(ApiKey::DescribeCluster);
    let dc = DescribeClusterResponse {
        brokers: List::Owned(vec![describe_cluster::DescribeClusterBroker {
            broker_id: 1,
            host: Str::Borrowed("b1"),
            port: 1,
            ..Default::default()
        }]),
        ..Default::default()
    };
    assert_eq!(addresses::find(s, 0, &encode(&dc, 0)).unwrap(), vec![("b1".into(), 1)]);
}

#[test]
fn addresses_in_tagged_node_endpoints() {
    // Produce responses v10+ carry NodeEndpoints as a tagged field of the body.
    let s = reflect::response_schema(ApiKey::Produce);
    let resp = ProduceResponse {
        node_endpoints: List::Owned(vec![produce::NodeEndpoint {
            node_id: 5,
            host: Str::Borrowed("leader-5"),
            port: 9096,
            rack: None,
            ..Default::default()
        }]),
        ..Default::default()
    };
    let bytes = encode(&resp, 10);
    assert_eq!(addresses::find(s, 10, &bytes).unwrap(), vec![("leader-5".into(), 9096)]);
    let new = addresses::rewrite(s, 10, &bytes, |_, _, _| Some(("proxy".into(), 1))).unwrap().unwrap();
    let back = ProduceResponse::decode(&new, 10).unwrap();
    assert_eq!((back.node_endpoints[0].host.as_str(), back.node_endpoints[0].port), ("proxy", 1));
    // A body that does not decode is refused, not rewritten.
    assert!(addresses::rewrite(s, 10, &bytes[..bytes.len() - 1], |_, _, _| None).is_err());
}

/// What an address is renamed to: `(index, host, port)` to the new address, or `None`.
type Rename<'m> = &'m mut dyn FnMut(usize, &str, i32) -> Option<(String, i32)>;

/// The addresses of a decoded body renamed on its value tree (what `addresses::rewrite`
/// did before it spliced), numbered in wire order: each struct's inline fields in schema
/// order, then its tagged fields in tag order, depth first; the body encoded again if
/// anything changed.
fn tree_rewrite(
    s: &'static reflect::MessageSchema,
    version: i16,
    body: &[u8],
    map: Rename<'_>,
) -> Option<Vec<u8>> {
    use kwire::reflect::Value;
    struct Tree<'m> {
        version: i16,
        next: usize,
        changed: bool,
        map: Rename<'m>,
    }
    impl Tree<'_> {
        fn strukt(&mut self, s: &mut StructValue) {
            let schema = s.schema;
            let mut host: Option<(usize, usize)> = None;
            let mut tagged: Vec<(u32, usize)> = Vec::new();
            for (i, f) in schema.fields.iter().enumerate() {
                if f.is_tagged(self.version) {
                    tagged.push((f.tag.unwrap(), i));
                    continue;
                }
                if !f.is_inline(self.version) {
                    continue;
                }
                match (f.name, &s.fields[i]) {
                    ("Host", Some(Value::String(_))) => {
                        host = Some((i, self.next));
                        self.next += 1;
                    }
                    ("Port", Some(Value::Int32(port))) => {
                        let port = *port;
                        if let Some((h, index)) = host.take() {
                            let Some(Value::String(old)) = &s.fields[h] else { unreachable!() };
                            if let Some((new_host, new_port)) = (self.map)(index, old, port) {
                                self.changed |= *old != new_host || port != new_port;
                                s.fields[h] = Some(Value::String(new_host));
                                s.fields[i] = Some(Value::Int32(new_port));
                            }
                        }
                    }
                    _ => self.value(s.fields[i].as_mut()),
                }
            }
            if let Some((h, index)) = host
                && let Some(Value::String(old)) = &s.fields[h]
                && let Some((new, _)) = (self.map)(index, old, -1)
            {
                self.changed |= *old != new;
                s.fields[h] = Some(Value::String(new));
            }
            tagged.sort_unstable();
            for (_, i) in tagged {
                self.value(s.fields[i].as_mut());
            }
        }
        fn value(&mut self, v: Option<&mut Value>) {
            match v {
                Some(Value::Struct(s)) => self.strukt(s),
                Some(Value::Array(items)) => items.iter_mut().for_each(|i| self.value(Some(i))),
                _ => {}
            }
        }
    }
    let mut value = StructValue::decode_body(s, version, body).unwrap();
    let mut tree = Tree { version, next: 0, changed: false, map };
    tree.strukt(&mut value);
    tree.changed.then(|| value.to_bytes(Encoding::body(s, version)).unwrap())
}

/// `addresses::rewrite` splices: for arbitrary responses of every API and version whose
/// schema holds a Host, renaming some of the addresses (longer hosts, other ports) gives
/// the bytes that renaming them on the decoded value tree and encoding again gives, and
/// nothing renamed gives no new body.
#[test]
fn address_splice_matches_the_value_tree_in_every_response() {
    fn has_host(s: &'static reflect::StructSchema, version: i16, depth: usize) -> bool {
        depth < 16
            && s.fields.iter().filter(|f| f.versions.contains(version)).any(|f| {
                let mut ty = &f.ty;
                while let reflect::FieldType::Array(t) = ty {
                    ty = t;
                }
                (f.name == "Host" && f.is_inline(version))
                    || matches!(ty, reflect::FieldType::Struct(inner) if has_host(inner, version, depth + 1))
            })
    }
    let mut rng = XorShift(0xadd7_e55e);
    let (mut compared, mut expected) = (Vec::new(), Vec::new());
    for &key in ApiKey::ALL {
        let s = reflect::response_schema(key);
        let versions = key.response_versions();
        for version in versions.min..=versions.max {
            if !has_host(s.body, version, 0) {
                continue;
            }
            expected.push((key, version));
            for _ in 0..3000 {
                let data = rng.bytes(2048);
                let Ok(value) = ResponseBody::arbitrary_for(key, &mut Unstructured::new(&data)) else {
                    continue;
                };
                let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
                let value = kwire::testing::AsVersion::as_version(&value, ver);
                let Ok(n) = value.encoded_len(version) else { continue };
                let mut bytes = vec![0u8; n];
                value.encode(version, &mut bytes).unwrap();
                let found = addresses::find(s, version, &bytes).unwrap();
                if found.is_empty() {
                    continue;
                }
                let mut map = |i: usize, host: &str, port: i32| {
                    (i % 3 != 1).then(|| (format!("proxy-{i}.{host}"), port.wrapping_add(i as i32 + 1)))
                };
                let spliced = addresses::rewrite(s, version, &bytes, &mut map).unwrap();
                let tree = tree_rewrite(s, version, &bytes, &mut map);
                assert!(spliced.is_some(), "{} v{version}: {found:?}", key.name());
                assert_eq!(spliced, tree, "{} v{version}", key.name());
                assert_eq!(addresses::rewrite(s, version, &bytes, |_, _, _| None).unwrap(), None);
                compared.push((key, version));
                break;
            }
        }
    }
    let names = |v: &[(ApiKey, i16)]| v.iter().map(|(k, v)| format!("{} v{v}", k.name())).collect::<Vec<_>>();
    eprintln!("address splice compared: {}", names(&compared).join(", "));
    assert_eq!(names(&compared), names(&expected), "every response version with a Host");
}
