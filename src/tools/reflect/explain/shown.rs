//! [`explain_shown`]: a frame as a tool shows it to a person, its secrets masked first.

use alloc::borrow::Cow;

use super::{Checked, FrameKind, explain_checked};
use crate::codec::frame::{RequestHeaderView, ResponseHeaderView, request_api_key, request_ids};
use crate::session::secrets::{self, Redaction};
use crate::{ApiKey, Direction};

/// A frame made ready to show ([`explain_shown`]).
#[derive(Debug)]
pub struct Shown<'a> {
    /// The bytes to show: the frame itself, or a copy with its secrets masked.
    pub bytes: Cow<'a, [u8]>,
    /// [`Shown::bytes`] explained and checked. Its problem is the given frame's: a masked
    /// copy's lengths read differently, and where and what the problem is reveals no secret.
    pub checked: Checked,
    /// What masking did. [`Redaction::Whole`] counts the bytes shown masked after the
    /// header, which is kept whenever it parses.
    pub redaction: Redaction,
}

/// Masks the secrets of `frame` (with its size prefix) unless `show_secrets`, then
/// explains and checks what is left ([`explain_checked`]).
///
/// A frame that does not decode is masked whole after its header only when its API can
/// carry a secret in that direction ([`secrets::may_carry_secrets`]): a malformed frame of
/// any other API is shown as it is, so that its problem can be seen.
pub fn explain_shown(frame: &[u8], kind: FrameKind, show_secrets: bool) -> Shown<'_> {
    let (bytes, redaction) =
        if show_secrets { (Cow::Borrowed(frame), Redaction::Clean) } else { masked(frame, kind) };
    let mut checked = explain_checked(&bytes, kind);
    if let Cow::Owned(_) = bytes
        && checked.problem.is_some()
    {
        checked.problem = explain_checked(frame, kind).problem;
    }
    Shown { bytes, checked, redaction }
}

/// `frame` with its secrets masked, and what was masked.
fn masked(frame: &[u8], kind: FrameKind) -> (Cow<'_, [u8]>, Redaction) {
    let Some(inner) = frame.get(4..) else { return (Cow::Borrowed(frame), Redaction::Clean) };
    let mut copy = frame.to_vec();
    let (redaction, api, direction) = match kind {
        FrameKind::Request => {
            let key = request_api_key(inner).and_then(ApiKey::from_i16);
            (secrets::mask_request(inner, &mut copy[4..]), key, Direction::Request)
        }
        FrameKind::Response(key, version) => {
            (secrets::mask_response(inner, key, version, &mut copy[4..]), Some(key), Direction::Response)
        }
    };
    match redaction {
        Redaction::Clean => (Cow::Borrowed(frame), redaction),
        Redaction::Masked { .. } => (Cow::Owned(copy), redaction),
        Redaction::Whole { .. } if !api.is_some_and(|a| secrets::may_carry_secrets(a, direction)) => {
            (Cow::Borrowed(frame), Redaction::Clean)
        }
        Redaction::Whole { .. } => {
            // The header holds no secret: kept, the output still says what the frame is.
            let header = match (kind, api) {
                (FrameKind::Request, Some(key)) => request_ids(inner).and_then(|(_, version, _)| {
                    RequestHeaderView::parse(inner, key.request_header_version(version))
                        .ok()
                        .map(|(_, at)| at)
                }),
                (FrameKind::Response(key, version), _) => {
                    ResponseHeaderView::parse(inner, key.response_header_version(version))
                        .ok()
                        .map(|(_, at)| at)
                }
                _ => None,
            };
            if let Some(at) = header {
                copy[4..4 + at].copy_from_slice(&inner[..at]);
            }
            // Without a header, masking kept the request's API key, version and correlation
            // id, or the response's correlation id.
            let kept = header.unwrap_or(if kind == FrameKind::Request { 8 } else { 4 }).min(inner.len());
            (Cow::Owned(copy), Redaction::Whole { bytes: inner.len() - kept })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SaslAuthenticate v2 request whose auth bytes are a secret.
    fn sasl_request(auth: &[u8]) -> alloc::vec::Vec<u8> {
        let mut body = alloc::vec![0, 36, 0, 2, 0, 0, 0, 9, 0, 1, b'c', 0];
        body.push(u8::try_from(auth.len() + 1).unwrap());
        body.extend_from_slice(auth);
        body.push(0);
        let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }

    #[test]
    fn masks_secrets_unless_asked() {
        let frame = sasl_request(b"\0user\0hunter2");
        let shown = explain_shown(&frame, FrameKind::Request, false);
        assert_eq!(shown.redaction, Redaction::Masked { fields: 1, bytes: 13 });
        assert!(shown.checked.problem.is_none(), "{:?}", shown.checked.problem);
        assert!(!shown.bytes.windows(7).any(|w| w == b"hunter2"));
        let shown = explain_shown(&frame, FrameKind::Request, true);
        assert_eq!(shown.redaction, Redaction::Clean);
        assert_eq!(&shown.bytes[..], &frame[..]);
    }

    #[test]
    fn a_malformed_frame_is_masked_whole_only_where_its_api_can_carry_secrets() {
        // Cut inside the auth bytes: the header is kept, the rest masked.
        let mut frame = sasl_request(b"\0user\0hunter2");
        frame.truncate(frame.len() - 4);
        let size = u32::try_from(frame.len() - 4).unwrap();
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let shown = explain_shown(&frame, FrameKind::Request, false);
        let header = 4 + 8 + 2 + 1 + 1;
        assert_eq!(shown.redaction, Redaction::Whole { bytes: frame.len() - header });
        assert_eq!(&shown.bytes[..header], &frame[..header]);
        assert!(shown.bytes[header..].iter().all(|&b| b == b'*'));
        // The problem is the given frame's.
        assert_eq!(shown.checked.problem, explain_checked(&frame, FrameKind::Request).problem);
        assert!(shown.checked.problem.is_some());

        // A malformed Metadata request carries no secret: shown as it is.
        let metadata = [0, 0, 0, 10, 0, 3, 0, 12, 0, 0, 0, 1, 0, 1];
        let shown = explain_shown(&metadata, FrameKind::Request, false);
        assert_eq!(shown.redaction, Redaction::Clean);
        assert!(shown.checked.problem.is_some());
        assert_eq!(&shown.bytes[..], &metadata[..]);
    }
}
