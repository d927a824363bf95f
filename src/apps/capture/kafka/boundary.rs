//! Plausible frame boundaries: where in a stream of bytes a request or a response could
//! start. Broker detection and resynchronisation both search with these.

use crate::ApiKey;
use crate::codec::frame::{request_client_id_len, request_ids, response_correlation_id, size_prefix};

/// Bytes a plausible request header needs: size, key, version, correlation id and the
/// client id's length.
pub(super) const REQUEST_HEAD: usize = 14;
/// Bytes a plausible response header needs: size and correlation id.
pub(super) const RESPONSE_HEAD: usize = 8;

/// Whether `b` starts with a plausible request: a size that fits the limit, an API key
/// kwire knows at a version it knows, a non-negative correlation id and a client id
/// length within the frame (whose bytes, when present, are UTF-8). `None`: too few bytes
/// to say; `Some(None)`: not plausible; `Some(Some(id))`: plausible, with its correlation id.
fn plausible_request(b: &[u8], max_frame: usize) -> Option<Option<i32>> {
    let h = b.get(..REQUEST_HEAD)?;
    let size = size_prefix(h)?;
    let (key, version, corr) = request_ids(&h[4..])?;
    let client_len = request_client_id_len(&h[4..])?;
    let ok = size >= 10
        && size as usize <= max_frame
        && ApiKey::from_i16(key).is_some_and(|k| k.request_versions().contains(version))
        && corr >= 0
        && client_len >= -1
        && i32::from(client_len) <= size - 10;
    if !ok {
        return Some(None);
    }
    if client_len > 0 {
        let end = REQUEST_HEAD + client_len as usize;
        if let Some(id) = b.get(REQUEST_HEAD..end)
            && (std::str::from_utf8(id).is_err() || id.iter().any(|&c| c < 0x20))
        {
            return Some(None);
        }
    }
    Some(Some(corr))
}

/// The first plausible request in `b` (only at 0 when `at_start`): its offset and
/// correlation id.
pub(super) fn find_request(b: &[u8], at_start: bool, max_frame: usize) -> Option<(usize, i32)> {
    let last = if at_start { 0 } else { b.len().saturating_sub(REQUEST_HEAD) };
    (0..=last).find_map(|i| match plausible_request(&b[i..], max_frame) {
        Some(Some(corr)) => Some((i, corr)),
        _ => None,
    })
}

/// The first plausible response in `b` to one of `ids` (only at 0 when `at_start`).
pub(super) fn find_response(b: &[u8], ids: &[i32], at_start: bool, max_frame: usize) -> Option<usize> {
    if ids.is_empty() || b.len() < RESPONSE_HEAD {
        return None;
    }
    let last = if at_start { 0 } else { b.len() - RESPONSE_HEAD };
    (0..=last).find(|&i| {
        let h = &b[i..i + RESPONSE_HEAD];
        let (Some(size), Some(corr)) = (size_prefix(h), response_correlation_id(&h[4..])) else {
            return false;
        };
        size >= 4 && size as usize <= max_frame && ids.contains(&corr)
    })
}
