//! [`explain_checked`]: a frame explained by the schema walker and read again by kwire's
//! typed views, which must agree.

use alloc::format;
use alloc::string::{String, ToString};

use super::{Explained, FrameKind, Problem, explain_frame};
use crate::codec::error::DecodeErrorKind;
use crate::codec::frame::FrameError;
use crate::{ApiKey, DecodeError, dispatch};

/// A frame explained and checked ([`explain_checked`]).
#[derive(Debug)]
pub struct Checked {
    /// The schema walker's explanation.
    pub explained: Explained,
    /// What is wrong with the frame, in words: the walker's problem, with the typed views'
    /// where they name a different one; or a disagreement between the two, which is a
    /// fault of kwire's and says so.
    pub problem: Option<String>,
    /// Something the reader should know that is not a fault (an ApiVersions answer read at
    /// v0).
    pub note: Option<String>,
}

/// Explains a frame (with its size prefix, [`explain_frame`]) and reads it again with
/// kwire's typed views (`dispatch::parse_request`, `dispatch::parse_response`), which
/// check every byte: a frame one accepts and the other rejects is reported as kwire's
/// fault. An ApiVersions response that is not of the version asked but a valid v0 body is
/// read at v0 with a note, as Kafka's clients read a broker's answer to a version it does
/// not serve.
pub fn explain_checked(frame: &[u8], kind: FrameKind) -> Checked {
    let explained = explain_frame(frame, kind);
    if let (Some(_), FrameKind::Response(ApiKey::ApiVersions, v)) = (&explained.problem, kind)
        && v > 0
    {
        let v0 = FrameKind::Response(ApiKey::ApiVersions, 0);
        let at_v0 = explain_frame(frame, v0);
        if at_v0.problem.is_none() && typed_check(frame, v0).is_ok() {
            let note = format!(
                "not an ApiVersions v{v} response but a valid v0 one, so it was decoded as v0: a broker answers an \
                 ApiVersions version it does not support with a v0 body"
            );
            return Checked { explained: at_v0, problem: None, note: Some(note) };
        }
    }
    let whole = crate::codec::frame::size_prefix(frame)
        .is_some_and(|declared| usize::try_from(declared).is_ok_and(|d| d + 4 == frame.len()));
    let typed = whole.then(|| typed_check(frame, kind));
    let problem = match (&explained.problem, typed) {
        (None, None | Some(Ok(()))) => None,
        (None, Some(Err((_, _, e)))) => Some(format!(
            "kwire's typed decoder rejects this frame, which the schema walker accepted: {e}; please report this"
        )),
        (Some(w), Some(Ok(()))) => Some(format!(
            "{w}; but kwire's typed decoder accepts the frame: the schema walker and the typed decoder disagree, \
             please report this"
        )),
        (Some(w), Some(Err((kind, offset, e)))) if !same_problem(w, kind, offset) => {
            Some(format!("{w} (kwire's typed decoder reports: {e})"))
        }
        (Some(w), _) => Some(w.to_string()),
    };
    Checked { explained, problem, note: None }
}

/// Reads a whole frame with the typed views. Errors carry offsets from the size prefix.
fn typed_check(frame: &[u8], kind: FrameKind) -> Result<(), (Option<DecodeErrorKind>, usize, String)> {
    let inner = frame.get(4..).unwrap_or_default();
    let result = match kind {
        FrameKind::Request => dispatch::parse_request(inner).map(drop),
        FrameKind::Response(key, version) => dispatch::parse_response(inner, key, version).map(drop),
    };
    match result {
        Ok(()) => Ok(()),
        Err(FrameError::Decode(e)) => {
            let e: DecodeError = e.shifted(4);
            Err((Some(e.kind()), e.offset(), e.to_string()))
        }
        Err(other) => Err((None, 4, other.to_string())),
    }
}

/// Whether the typed views' error names the walker's problem: the same kind at the same
/// offset. A truncation may be found at different places (the views check a run of
/// fixed-width fields at once), so only its kind must match.
fn same_problem(w: &Problem, kind: Option<DecodeErrorKind>, offset: usize) -> bool {
    let (Some(a), Some(b)) = (w.kind, kind) else { return true };
    match (a, b) {
        (DecodeErrorKind::Truncated { .. }, DecodeErrorKind::Truncated { .. }) => true,
        _ => a == b && w.offset == offset,
    }
}
