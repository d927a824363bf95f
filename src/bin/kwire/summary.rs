//! The words of `kwire decode`'s summary lines, shared by captures (one line per pair) and
//! frames (one line before each tree): API and error names, what a frame is about, and a
//! response's error codes.

use kwire::ApiKey;
use kwire::frame::{RequestHeaderView, ResponseHeaderView};
use kwire::reflect::explain::{self, FrameKind};
use kwire::reflect::inspect;

/// An API's name, or `apiN` for a key kwire does not know.
pub(crate) fn api_name(api_key: i16) -> String {
    ApiKey::from_i16(api_key).map_or_else(|| format!("api{api_key}"), |k| k.name().to_owned())
}

/// An error code's name, or its number for a code kwire does not know.
pub(crate) fn error_name(code: i16) -> String {
    kwire::ErrorCode::from_i16(code).map_or_else(|| code.to_string(), |e| e.name().to_owned())
}

/// Appends what a frame is about (` topics=orders records=3 gzip`), if anything.
pub(crate) fn about(line: &mut String, about: explain::About) {
    if !about.is_empty() {
        line.push(' ');
        line.push_str(&about.to_string());
    }
}

/// Appends a response's non-zero error codes (` errors=UNKNOWN_TOPIC_ID`), if any; `frame`
/// starts at the response header.
pub(crate) fn errors(line: &mut String, frame: &[u8], api_key: i16, version: i16) {
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
pub(crate) fn frame_line(frame: &[u8], kind: FrameKind) -> String {
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
            about(&mut line, explain::about_request(body));
            line
        }
        FrameKind::Response(key, version) => {
            let header = key.response_header_version(version);
            let Ok((head, _)) = ResponseHeaderView::parse(body, header) else {
                return format!("{} v{version} response resp={size}B: its header does not read", key.name());
            };
            let mut line =
                format!("{} v{version} response corr={} resp={size}B", key.name(), head.correlation_id());
            about(&mut line, explain::about_response(body, key, version));
            errors(&mut line, body, key.to_i16(), version);
            line
        }
    }
}
