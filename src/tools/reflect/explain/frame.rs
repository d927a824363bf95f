//! Explaining one frame: the size prefix, the header (request or response) and the body, each
//! walked with the schema walker into the tree and the values.

use alloc::format;
use alloc::string::{String, ToString};

use super::tree::Both;
use super::{Explained, FrameKind, Node, Problem, Region, Role};
use crate::ApiKey;
use crate::codec::error::DecodeErrorKind;
use crate::tools::reflect::Value;
use crate::tools::reflect::walk::{self as rwalk, REQUEST_HEADER, RESPONSE_HEADER};

/// Explains one frame: `frame` starts at its size prefix and ends where the prefix says (or
/// where the input ends, if it is shorter).
pub fn explain_frame(frame: &[u8], kind: FrameKind) -> Explained {
    let mut root = Node::new("Request", "message", 0, Region::Frame)
        .about("the whole frame: size prefix, header and body");
    let mut walked = Explained {
        root: Node::new("", "", 0, Region::Frame),
        api: None,
        problem: None,
        header: None,
        body: None,
        kind,
    };
    let result = frame_walk(frame, kind, &mut root, &mut walked);
    root.size = frame.len();
    walked.root = root;
    walked.problem = result.err();
    walked
}

fn decode_error(e: &rwalk::WalkError, fallback_path: &str) -> Problem {
    match e {
        rwalk::WalkError::Decode { error, path } => Problem {
            offset: error.offset(),
            path: path.to_string(),
            message: error.kind().to_string(),
            kind: Some(error.kind()),
        },
        other => Problem {
            offset: other.offset(),
            path: fallback_path.into(),
            message: other.to_string(),
            kind: None,
        },
    }
}

fn fail(offset: usize, path: &str, message: String) -> Problem {
    Problem { offset, path: path.into(), message, kind: None }
}

fn frame_walk(frame: &[u8], kind: FrameKind, root: &mut Node, walked: &mut Explained) -> Result<(), Problem> {
    let mut framing =
        Node::new("Frame", "", 0, Region::Frame).about("the size prefix that frames the message");
    let Some(size) = crate::codec::frame::size_prefix(frame) else {
        root.children.push(framing.end(0));
        let kind = DecodeErrorKind::Truncated { needed: 4, available: frame.len() as u32 };
        return Err(Problem {
            offset: 0,
            path: "frame.size".into(),
            message: kind.to_string(),
            kind: Some(kind),
        });
    };
    framing.children.push(
        Node::new("size", "int32", 0, Region::Frame)
            .value(size.to_string())
            .about("number of bytes that follow: header and body")
            .end(4),
    );
    root.children.push(framing.end(4));
    let Ok(declared) = usize::try_from(size) else {
        let kind = DecodeErrorKind::InvalidLength(size);
        return Err(Problem {
            offset: 0,
            path: "frame.size".into(),
            message: kind.to_string(),
            kind: Some(kind),
        });
    };
    let rest = &frame[4..];
    match kind {
        FrameKind::Request => request(frame, rest, root, walked)?,
        FrameKind::Response(key, version) => {
            walked.api = Some((key, version));
            response(frame, rest, key, version, root, walked)?;
        }
    }
    let available = frame.len() - 4;
    if declared > available {
        return Err(fail(
            frame.len(),
            "frame.size",
            format!("the size prefix says {declared} bytes follow, but the input ends after {available}"),
        ));
    }
    Ok(())
}

fn request(frame: &[u8], rest: &[u8], root: &mut Node, walked: &mut Explained) -> Result<(), Problem> {
    let header = Node::new("RequestHeader", "", 4, Region::Header)
        .about("request header: which API and version, and who asks")
        .role(Role::Object);
    let mut v = Both::new(frame, header, Region::Header, &REQUEST_HEADER);
    let result = rwalk::walk_request_header(rest, 4, &mut v);
    let (mut header, value, end) = v.finish();
    // The header version is known once the key and version are (also if a later field fails).
    if let (Some(Value::Int16(key)), Some(Value::Int16(version))) =
        (value.get("RequestApiKey"), value.get("RequestApiVersion"))
        && let Some(key) = ApiKey::from_i16(*key)
        && key.request_versions().contains(*version)
    {
        header.ty = format!("v{}", key.request_header_version(*version));
    }
    walked.header = Some((value, crate::tools::reflect::Encoding::request_header(2)));
    let info = match result {
        Ok(info) => info,
        Err(e) => {
            root.children.push(header.end(end.unwrap_or(4)));
            return Err(match e {
                rwalk::WalkError::UnknownApiKey { key, offset } => {
                    fail(offset, "header.requestApiKey", format!("API key {key} is not one kwire supports"))
                }
                rwalk::WalkError::UnsupportedVersion { key, version, offset } => {
                    let v = key.request_versions();
                    fail(
                        offset,
                        "header.requestApiVersion",
                        format!(
                            "{} has no request version {version} in kwire (versions {}-{})",
                            key.name(),
                            v.min,
                            v.max
                        ),
                    )
                }
                other => decode_error(&other, "header"),
            });
        }
    };
    let body_at = 4 + info.end;
    root.children.push(header.end(body_at));
    let (key, version) = (info.api_key, info.api_version);
    walked.api = Some((key, version));
    let schema = crate::tools::reflect::request_schema(key);
    root.name = schema.name.into();
    root.ty = format!("message v{version}");
    body(frame, schema, version, body_at, root, walked)
}

fn response(
    frame: &[u8],
    rest: &[u8],
    key: ApiKey,
    version: i16,
    root: &mut Node,
    walked: &mut Explained,
) -> Result<(), Problem> {
    let schema = crate::tools::reflect::response_schema(key);
    root.name = schema.name.into();
    root.ty = format!("message v{version}");
    let header_version = key.response_header_version(version);
    let header = Node::new("ResponseHeader", format!("v{header_version}"), 4, Region::Header)
        .about("response header: which request this answers")
        .role(Role::Object);
    let mut v = Both::new(frame, header, Region::Header, &RESPONSE_HEADER);
    let result = rwalk::walk_response_header(rest, header_version, 4, &mut v);
    let (header, value, end) = v.finish();
    walked.header = Some((value, crate::tools::reflect::Encoding::response_header(header_version)));
    let body_at = match result {
        Ok(n) => 4 + n,
        Err(e) => {
            root.children.push(header.end(end.unwrap_or(4)));
            return Err(decode_error(&e, "header"));
        }
    };
    root.children.push(header.end(body_at));
    if !key.response_versions().contains(version) {
        let v = key.response_versions();
        return Err(fail(
            body_at,
            "body",
            format!(
                "{} has no response version {version} in kwire (versions {}-{})",
                key.name(),
                v.min,
                v.max
            ),
        ));
    }
    body(frame, schema, version, body_at, root, walked)
}

fn body(
    frame: &[u8],
    schema: &'static crate::tools::reflect::MessageSchema,
    version: i16,
    at: usize,
    root: &mut Node,
    walked: &mut Explained,
) -> Result<(), Problem> {
    let node = Node::new(schema.body.name, "struct", at, Region::Body)
        .about(format!("message body, version {version}"))
        .role(Role::Object);
    let mut v = Both::new(frame, node, Region::Body, schema.body);
    let bytes = frame.get(at..).unwrap_or_default();
    let result = rwalk::walk_body(schema, version, bytes, at, &mut v);
    let (node, value, end) = v.finish();
    walked.body = Some((value, crate::tools::reflect::Encoding::body(schema, version)));
    root.children.push(node.end(end.unwrap_or(at)));
    result.map_err(|e| decode_error(&e, "body"))
}
