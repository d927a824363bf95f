//! One-line summaries of frames, in the words of `kwire decode`: API and error names, what
//! a frame is about ([`About`](super::About)) and a response's error codes. A capture's
//! pair lines (`kwire::capture::PairLines`) are written in the same words.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{About, FrameKind, about_request, about_response};
use crate::codec::frame::{RequestHeaderView, ResponseHeaderView};
use crate::tools::reflect::inspect;
use crate::{ApiKey, ErrorCode};

/// An API's name, or `apiN` for a key kwire does not know.
pub fn api_name(api_key: i16) -> String {
    ApiKey::from_i16(api_key).map_or_else(|| format!("api{api_key}"), |k| k.name().into())
}

/// An error code's name, or its number for a code kwire does not know.
pub(crate) fn error_name(code: i16) -> String {
    ErrorCode::from_i16(code).map_or_else(|| code.to_string(), |e| e.name().into())
}

/// Appends what a frame is about (` topics=orders records=3 gzip`), if anything.
pub(crate) fn push_about(line: &mut String, about: About) {
    if !about.is_empty() {
        line.push(' ');
        line.push_str(&about.to_string());
    }
}

/// Appends a response's non-zero error codes (` errors=UNKNOWN_TOPIC_ID`), if any; `frame`
/// starts at the response header.
pub(crate) fn push_errors(line: &mut String, frame: &[u8], api_key: i16, version: i16) {
    let info = inspect::response(frame, api_key, version);
    let codes = inspect::errors(frame, api_key, info.version);
    if !codes.is_empty() {
        let names: Vec<String> = codes.iter().map(|&c| error_name(c)).collect();
        line.push_str(&format!(" errors={}", names.join(",")));
    }
}

/// One frame's summary (`frame` with its size prefix), in the words of a capture's pair
/// lines: `Produce v9 corr=4 client=app req=120B topics=orders records=3 gzip` for a
/// request, `ListOffsets v7 response corr=4 resp=60B errors=UNKNOWN_TOPIC_OR_PARTITION`
/// for a response. A header that does not read is said so; the rest of the frame's
/// problems are the tree's to show.
///
/// ```
/// use kwire::reflect::explain::{FrameKind, frame_line};
///
/// // A DeleteTopics v1 request from client "c" for "orders", with its size prefix.
/// let mut frame = vec![0, 0, 0, 27, 0, 20, 0, 1, 0, 0, 0, 7, 0, 1, b'c'];
/// frame.extend_from_slice(b"\x00\x00\x00\x01\x00\x06orders\x00\x00\x75\x30");
/// assert_eq!(frame_line(&frame, FrameKind::Request), "DeleteTopics v1 corr=7 client=c req=31B topics=orders");
/// ```
pub fn frame_line(frame: &[u8], kind: FrameKind) -> String {
    let size = frame.len();
    let body = frame.get(4..).unwrap_or_default();
    match kind {
        FrameKind::Request => {
            let Ok(head) = RequestHeaderView::peek(body) else {
                return format!("request req={size}B: its header does not read");
            };
            let mut line = format!(
                "{} v{} corr={} client={} req={size}B",
                api_name(head.api_key),
                head.api_version,
                head.correlation_id,
                head.client_id.unwrap_or("-")
            );
            push_about(&mut line, about_request(body));
            line
        }
        FrameKind::Response(key, version) => {
            let header = key.response_header_version(version);
            let Ok((head, _)) = ResponseHeaderView::parse(body, header) else {
                return format!("{} v{version} response resp={size}B: its header does not read", key.name());
            };
            let mut line =
                format!("{} v{version} response corr={} resp={size}B", key.name(), head.correlation_id());
            push_about(&mut line, about_response(body, key, version));
            push_errors(&mut line, body, key.to_i16(), version);
            line
        }
    }
}
