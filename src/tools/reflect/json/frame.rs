//! Whole frames from JSON: the document `explain`'s `to_json` writes (`kwire decode --format
//! json`), header and body, read back into a frame's bytes.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Map, Value as Json};

use super::{JsonError, describe, from_json, integer, unknown_tags};
use crate::codec::dispatch;
use crate::codec::frame::RequestHeader;
use crate::codec::messages::{RequestBody, ResponseBody};
use crate::codec::wire::MAX_STRING_LEN;
use crate::tools::reflect::walk::{REQUEST_HEADER, RESPONSE_HEADER};
use crate::tools::reflect::{self, Encoding, StructValue, Value};
use crate::{AnyBody, ApiKey, RawTaggedField};

/// A frame read from JSON by [`frame_from_json`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonFrame {
    /// The whole frame, size prefix included.
    pub bytes: Vec<u8>,
    /// Its API.
    pub api_key: ApiKey,
    /// Its version (a response's: the version of the request it answers).
    pub api_version: i16,
    /// Whether it is a request.
    pub request: bool,
    /// Values that were dropped, as Kafka drops them, each naming its JSON path.
    pub warnings: Vec<String>,
}

const REQUEST_HEADER_KEYS: &[&str] =
    &["requestApiKey", "requestApiVersion", "correlationId", "clientId", "_unknownTaggedFields"];
const RESPONSE_HEADER_KEYS: &[&str] = &["correlationId", "_unknownTaggedFields"];

fn at(path: &str, message: impl Into<String>) -> JsonError {
    JsonError::at(path, message.into())
}

fn int16(v: &Json, path: &str) -> Result<i16, JsonError> {
    Ok(integer(v, i16::MIN.into(), i16::MAX.into(), "int16", path)? as i16)
}

fn required<'j>(obj: &'j Map<String, Json>, key: &str, path: &str) -> Result<&'j Json, JsonError> {
    obj.get(key).ok_or_else(|| at(&format!("{path}.{key}"), "missing"))
}

fn known_key(k: i16, path: &str) -> Result<ApiKey, JsonError> {
    ApiKey::from_i16(k).ok_or_else(|| at(path, format!("API key {k} is not one kwire knows")))
}

fn header_object<'j>(header: &'j Json, allowed: &[&str]) -> Result<&'j Map<String, Json>, JsonError> {
    let obj = header
        .as_object()
        .ok_or_else(|| at("header", format!("expected an object, found {}", describe(header))))?;
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(extra) => Err(at(
            &format!("header.{extra}"),
            format!("unknown field; the header has: {}", allowed.join(", ")),
        )),
        None => Ok(obj),
    }
}

/// Reads one frame from its JSON document: `{"header": .., "body": ..}` with, for a
/// response, `"apiKey"` and `"apiVersion"` naming the request it answers (a response's
/// header does not say), and optionally `"apiName"`, the API's name, which must name the
/// same API as the key. `api_key` and `api_version` say it from outside the document
/// instead; given both ways, they must agree. A request's header says its own API and
/// version, and anything given beside it must agree with it.
///
/// The body is read by [`from_json`] (every error names its JSON path). The frame is then
/// read with kwire's typed views and reference decoder and encoded again with the typed
/// encoder: the bytes must come out the same, or it is an error (a fault of kwire's, never
/// of the document).
pub fn frame_from_json(
    doc: &Json,
    api_key: Option<ApiKey>,
    api_version: Option<i16>,
) -> Result<JsonFrame, JsonError> {
    let top = doc.as_object().ok_or_else(|| {
        at("", format!("expected an object with \"header\" and \"body\", found {}", describe(doc)))
    })?;
    if let Some(extra) =
        top.keys().find(|k| !["header", "body", "apiKey", "apiName", "apiVersion"].contains(&k.as_str()))
    {
        return Err(at(
            extra,
            "unknown key; a frame has \"header\", \"body\", optionally \"apiName\" and, for responses, \"apiKey\" \
             and \"apiVersion\"",
        ));
    }
    let header = top.get("header").ok_or_else(|| at("header", "missing"))?;
    let body = top.get("body").ok_or_else(|| at("body", "missing"))?;
    let doc_key = match top.get("apiKey") {
        None => None,
        Some(Json::String(s)) => {
            Some(ApiKey::from_name(s).ok_or_else(|| at("apiKey", format!("no API is named {s:?}")))?)
        }
        Some(v) => Some(known_key(int16(v, "apiKey")?, "apiKey")?),
    };
    // `"apiName"`, which `kwire decode` writes beside the key, must name the same API.
    let doc_key = match top.get("apiName") {
        None => doc_key,
        Some(Json::String(s)) => {
            let named =
                ApiKey::from_name(s).ok_or_else(|| at("apiName", format!("no API is named {s:?}")))?;
            if doc_key.is_some_and(|k| k != named) {
                return Err(at("apiName", format!("{s} does not match \"apiKey\"")));
            }
            Some(named)
        }
        Some(v) => return Err(at("apiName", format!("expected the API's name, found {}", describe(v)))),
    };
    let doc_version = top.get("apiVersion").map(|v| int16(v, "apiVersion")).transpose()?;
    let request = header.get("requestApiKey").is_some();
    let h = header_object(header, if request { REQUEST_HEADER_KEYS } else { RESPONSE_HEADER_KEYS })?;
    let (key, version) = if request {
        let key = known_key(
            int16(required(h, "requestApiKey", "header")?, "header.requestApiKey")?,
            "header.requestApiKey",
        )?;
        let version = int16(required(h, "requestApiVersion", "header")?, "header.requestApiVersion")?;
        if [doc_key, api_key].into_iter().flatten().any(|k| k != key) {
            return Err(at(
                "header.requestApiKey",
                format!("{} does not match the API key given beside it", key.name()),
            ));
        }
        if [doc_version, api_version].into_iter().flatten().any(|v| v != version) {
            return Err(at(
                "header.requestApiVersion",
                format!("{version} does not match the version given beside it"),
            ));
        }
        if !key.request_versions().contains(version) {
            return Err(at(
                "header.requestApiVersion",
                format!(
                    "{} has no request version {version} in kwire (versions {})",
                    key.name(),
                    key.request_versions()
                ),
            ));
        }
        (key, version)
    } else {
        let key = match (doc_key, api_key) {
            (Some(a), Some(b)) if a != b => {
                return Err(at(
                    "apiKey",
                    format!("{} disagrees with the API key given beside it ({})", a.name(), b.name()),
                ));
            }
            (a, b) => a.or(b),
        };
        let version = match (doc_version, api_version) {
            (Some(a), Some(b)) if a != b => {
                return Err(at(
                    "apiVersion",
                    format!("{a} disagrees with the version given beside it ({b})"),
                ));
            }
            (a, b) => a.or(b),
        };
        let (Some(key), Some(version)) = (key, version) else {
            return Err(at(
                "apiKey",
                "missing: this is a response (its header has no requestApiKey), which does not say what it answers; \
                 give the API key and version of its request beside the document, or as \"apiKey\" and \"apiVersion\" in it",
            ));
        };
        if !key.response_versions().contains(version) {
            return Err(at(
                "apiVersion",
                format!(
                    "{} has no response version {version} in kwire (versions {})",
                    key.name(),
                    key.response_versions()
                ),
            ));
        }
        (key, version)
    };

    let schema = if request { reflect::request_schema(key) } else { reflect::response_schema(key) };
    let body_encoding = Encoding::body(schema, version);
    let read = from_json(schema.body, schema.name, body_encoding, body, "body")?;
    let internal = |e: reflect::ValueError| at("body", format!("cannot be encoded: {e}"));
    let body_len = read.value.encoded_len(body_encoding).map_err(internal)?;

    let correlation = integer(
        required(h, "correlationId", "header")?,
        i32::MIN.into(),
        i32::MAX.into(),
        "int32",
        "header.correlationId",
    )? as i32;
    let (header_encoding, header_tagged) = if request {
        let hv = key.request_header_version(version);
        (Encoding::request_header(hv), hv >= 2)
    } else {
        let hv = key.response_header_version(version);
        (Encoding::response_header(hv), hv >= 1)
    };
    let tags = match h.get("_unknownTaggedFields") {
        None => Vec::new(),
        Some(v) => unknown_tags(v, "header._unknownTaggedFields", &[])?,
    };
    if !tags.is_empty() && !header_tagged {
        return Err(at("header._unknownTaggedFields", "this header version has no tagged fields"));
    }
    let mut head = StructValue::new(if request { &REQUEST_HEADER } else { &RESPONSE_HEADER });
    head.set("CorrelationId", Value::Int32(correlation));
    if request {
        head.set("RequestApiKey", Value::Int16(key.to_i16()));
        head.set("RequestApiVersion", Value::Int16(version));
        let client = match required(h, "clientId", "header")? {
            Json::Null => Value::Null,
            Json::String(s) if s.len() <= MAX_STRING_LEN => Value::String(s.clone()),
            Json::String(s) => {
                let why =
                    format!("the string is {} bytes; Kafka strings are at most {MAX_STRING_LEN}", s.len());
                return Err(at("header.clientId", why));
            }
            other => {
                return Err(at(
                    "header.clientId",
                    format!("expected a string or null, found {}", describe(other)),
                ));
            }
        };
        head.set("ClientId", client);
    }
    head.unknown_tagged_fields = tags;
    let head = head.to_bytes(header_encoding).map_err(|e| at("header", format!("cannot be encoded: {e}")))?;

    let size = head.len().saturating_add(body_len);
    let size32 = i32::try_from(size).map_err(|_| {
        at("", format!("the frame would be {size} bytes, over the 2147483647 an int32 size prefix can say"))
    })?;
    let mut bytes = vec![0u8; size + 4];
    bytes[..4].copy_from_slice(&size32.to_be_bytes());
    bytes[4..4 + head.len()].copy_from_slice(&head);
    let written = read.value.encode(body_encoding, &mut bytes[4 + head.len()..]).map_err(internal)?;
    if written != body_len {
        return Err(at("body", format!("internal error: sized at {body_len} bytes but {written} written")));
    }
    typed_codec_agrees(&bytes, key, version, request).map_err(|what| {
        at("", format!("internal error: the frame built from the JSON {what}; please report this"))
    })?;
    Ok(JsonFrame { bytes, api_key: key, api_version: version, request, warnings: read.warnings })
}

/// Reads a frame built from JSON with kwire's typed views, converts them to owned values and
/// encodes those again with the typed encoder: the same bytes, or what went wrong.
fn typed_codec_agrees(bytes: &[u8], key: ApiKey, version: i16, request: bool) -> Result<(), String> {
    let frame = &bytes[4..];
    let rejected = |e: &dyn core::fmt::Display| format!("is rejected by kwire's typed decoder: {e}");
    let encoder = |e: crate::EncodeError| format!("cannot be re-encoded by kwire's typed encoder: {e}");
    let differs = || String::from("differs from what kwire's typed encoder writes for the same values");
    let mut again = vec![0u8; bytes.len()];
    let n = if request {
        let req = dispatch::parse_request(frame).map_err(|e| rejected(&e))?;
        let typed = RequestBody::from(req.body);
        let tags: Vec<RawTaggedField<'_>> = req
            .header
            .unknown_tagged_fields()
            .map(|(tag, data)| RawTaggedField { tag, data: data.into() })
            .collect();
        let header = RequestHeader {
            correlation_id: req.header.correlation_id(),
            client_id: req.header.client_id(),
            unknown_tagged_fields: &tags,
        };
        dispatch::encode_request_with(&typed, version, &header, &mut again).map_err(encoder)?
    } else {
        let resp = dispatch::parse_response(frame, key, version).map_err(|e| rejected(&e))?;
        let typed = ResponseBody::from(resp.body);
        if resp.header.unknown_tagged_fields().next().is_some() {
            // The typed response encoder writes no header tagged fields: compare the bodies.
            let mut body = vec![0u8; typed.encoded_len(version).map_err(encoder)?];
            let n = typed.encode(version, &mut body).map_err(encoder)?;
            return if body[..n] == *resp.body.as_bytes() { Ok(()) } else { Err(differs()) };
        }
        dispatch::encode_response(&typed, version, resp.header.correlation_id(), &mut again)
            .map_err(encoder)?
    };
    if again.get(..n) == Some(bytes) { Ok(()) } else { Err(differs()) }
}
