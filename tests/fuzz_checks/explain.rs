//! The `explain` target: `kwire::reflect::explain` on any bytes.
//!
//! Byte 0 says what the rest is: bit 7 set, a response, with the API from byte 1
//! (`ApiKey::ALL[b % ALL.len()]`) and the version from byte 2 (one either side of the range
//! too); else a request. Bit 6 set: the size prefix is replaced by the true
//! length, so that most inputs are complete frames.
//!
//! Properties: nothing panics; every node of the frame's tree lies inside the frame; a
//! complete frame is explained without a problem exactly when kwire's typed decoder
//! accepts it (`dispatch::parse_request` / `parse_response`); the hex dump has one row per
//! 16 bytes; the record expansion, the record lines, the JSON and the tree render.

use kwire::ApiKey;
use kwire::dispatch;
use kwire::reflect::explain::{self, FrameKind, Node};

use super::version_with_neighbours;

fn inside(node: &Node, len: usize, path: &str) {
    if !node.inner {
        assert!(
            node.offset.checked_add(node.size).is_some_and(|end| end <= len),
            "{path}/{}: [{}, {}) outside a frame of {len} bytes",
            node.name,
            node.offset,
            node.offset + node.size
        );
    }
    for child in &node.children {
        inside(child, len, &format!("{path}/{}", node.name));
    }
}

/// The check.
pub fn explain(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (kind, rest) = if mode & 0x80 != 0 {
        let [k, v, rest @ ..] = rest else { return };
        let key = ApiKey::ALL[usize::from(*k) % ApiKey::ALL.len()];
        (FrameKind::Response(key, version_with_neighbours(key.response_versions(), *v)), rest)
    } else {
        (FrameKind::Request, rest)
    };
    let mut frame = rest.to_vec();
    if mode & 0x40 != 0 && frame.len() >= 4 {
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
    }
    let explained = explain::explain_frame(&frame, kind);
    inside(&explained.root, frame.len(), "");
    let complete = frame.len() >= 4
        && usize::try_from(i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]))
            .is_ok_and(|n| n + 4 == frame.len());
    if complete {
        let inner = &frame[4..];
        let typed = match kind {
            FrameKind::Request => dispatch::parse_request(inner).map(|_| ()),
            FrameKind::Response(key, version) => dispatch::parse_response(inner, key, version).map(|_| ()),
        };
        assert_eq!(
            explained.problem.is_none(),
            typed.is_ok(),
            "the walker and the typed decoder disagree: {:?} / {:?}",
            explained.problem,
            typed.err()
        );
    }
    let hex = explain::render_hex(&explained.root, &frame, false);
    assert_eq!(hex.lines().count(), 1 + frame.len().div_ceil(16));
    let _ = explained.to_json().to_string();
    let _ = explain::record_lines(&explained);
    let mut root = explained.root.clone();
    explain::annotate_records(&mut root);
    let tree = explain::render_tree(&root);
    assert!(tree.lines().count() >= 2, "the message and frame lines at least");
}
