//! One HTTP/1.1 exchange with the KMS endpoint: the request written, the answer read with
//! every part bounded (head, body, chunk framing), over plain TCP or TLS.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::super::kms::KmsError;

/// The longest answer head (status line and headers) read.
pub(super) const MAX_HEAD: usize = 16 * 1024;
/// The longest answer body read (KMS answers are a few KiB at most).
pub(super) const MAX_BODY: usize = 64 * 1024;
/// The most bytes read for one answer, framing included (chunk sizes and their extensions).
pub(super) const MAX_ANSWER: usize = MAX_HEAD + 2 * MAX_BODY;
/// How much one read takes at most.
pub(super) const READ_CHUNK: usize = 4096;

/// An HTTP answer: its status and body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Vec<u8>,
}

impl Drop for Answer {
    fn drop(&mut self) {
        // The body may hold a data key.
        self.body.fill(0);
    }
}

/// Sends `request` and reads the whole answer: status line, headers, then a body of
/// `Content-Length`, chunked, or to the end of the connection; bounded.
pub(super) async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    request: &[u8],
) -> Result<Answer, KmsError> {
    // Room for the whole answer from the start: no copy of it is left behind by a growing
    // buffer, and the one buffer is wiped when dropped.
    let mut reader = Reader { stream, buf: Vec::with_capacity(MAX_ANSWER + READ_CHUNK), pos: 0 };
    reader.stream.write_all(request).await.map_err(cut)?;
    reader.stream.flush().await.map_err(cut)?;
    let head = reader.head().await?;
    let (status, length, chunked) = parse_head(&head)?;
    let body = if chunked {
        reader.chunked().await?
    } else if let Some(length) = length {
        if length > MAX_BODY {
            return Err(KmsError::Protocol(format!("an answer body of {length} bytes (at most {MAX_BODY})")));
        }
        reader.fill(length).await?;
        reader.take(length)
    } else {
        reader.rest().await?
    };
    Ok(Answer { status, body })
}

/// A connection that broke while the answer was awaited: worth retrying.
pub(super) fn cut(e: std::io::Error) -> KmsError {
    KmsError::Unavailable(format!("the connection broke: {e}"))
}

/// The status, `Content-Length` and whether the body is chunked, from an answer's head.
pub(super) fn parse_head(head: &[u8]) -> Result<(u16, Option<usize>, bool), KmsError> {
    let bad = |why: &str| KmsError::Protocol(format!("an HTTP answer with {why}"));
    let head = core::str::from_utf8(head).map_err(|_| bad("a head that is not text"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad("a status line that is not HTTP/1.x"));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (200..600).contains(s))
        .ok_or_else(|| bad("no final status"))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| bad("a header line without a colon"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n = value.parse::<usize>().map_err(|_| bad("a Content-Length that is not a number"))?;
            if length.is_some_and(|l| l != n) {
                return Err(bad("two Content-Lengths"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(bad("a transfer coding other than chunked"));
            }
            chunked = true;
        }
    }
    Ok((status, length, chunked))
}

/// An answer's bytes as they arrive: what is read and not yet used is `buf[pos..]`.
pub(super) struct Reader<S> {
    stream: S,
    buf: Vec<u8>,
    pos: usize,
}

impl<S> Drop for Reader<S> {
    fn drop(&mut self) {
        // It held the answer's bytes, which may hold a data key.
        self.buf.fill(0);
    }
}

impl<S: AsyncRead + Unpin> Reader<S> {
    /// Reads more; `Ok(false)` at the end of the connection.
    async fn more(&mut self) -> Result<bool, KmsError> {
        if self.buf.len() >= MAX_ANSWER {
            return Err(KmsError::Protocol(format!("an answer over {MAX_ANSWER} bytes")));
        }
        let mut chunk = [0u8; READ_CHUNK];
        let n = match self.stream.read(&mut chunk).await {
            Ok(n) => n,
            // TLS peers that close without close_notify.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(cut(e)),
        };
        self.buf.extend_from_slice(&chunk[..n]);
        chunk.fill(0);
        Ok(n > 0)
    }

    /// Until `n` unused bytes are there.
    async fn fill(&mut self, n: usize) -> Result<(), KmsError> {
        while self.buf.len() - self.pos < n {
            if !self.more().await? {
                return Err(KmsError::Unavailable(
                    "the connection closed in the middle of the answer".into(),
                ));
            }
        }
        Ok(())
    }

    /// The next `n` unused bytes (there).
    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        out
    }

    /// The head, up to and without its empty line.
    async fn head(&mut self) -> Result<Vec<u8>, KmsError> {
        loop {
            if let Some(i) = find(&self.buf[self.pos..], b"\r\n\r\n") {
                return Ok(self.take(i + 4)[..i].to_vec());
            }
            if self.buf.len() - self.pos > MAX_HEAD {
                return Err(KmsError::Protocol(format!("an answer head over {MAX_HEAD} bytes")));
            }
            if !self.more().await? {
                return Err(KmsError::Unavailable(if self.buf.is_empty() {
                    "the connection closed without an answer".into()
                } else {
                    "the connection closed in the middle of the answer".into()
                }));
            }
        }
    }

    /// One line, without its CRLF (at most `max` bytes).
    async fn line(&mut self, max: usize) -> Result<Vec<u8>, KmsError> {
        loop {
            if let Some(i) = find(&self.buf[self.pos..], b"\r\n") {
                return Ok(self.take(i + 2)[..i].to_vec());
            }
            if self.buf.len() - self.pos > max {
                return Err(KmsError::Protocol("a chunked answer with an over-long line".into()));
            }
            if !self.more().await? {
                return Err(KmsError::Unavailable(
                    "the connection closed in the middle of the answer".into(),
                ));
            }
        }
    }

    /// A chunked body, its trailers skipped.
    async fn chunked(&mut self) -> Result<Vec<u8>, KmsError> {
        let mut body = Vec::with_capacity(MAX_BODY);
        loop {
            let line = self.line(1024).await?;
            let size = core::str::from_utf8(&line)
                .ok()
                .map(|l| l.split(';').next().unwrap_or("").trim())
                .and_then(|hex| usize::from_str_radix(hex, 16).ok())
                .ok_or_else(|| KmsError::Protocol("a chunked answer with a bad chunk size".into()))?;
            if size == 0 {
                // Trailers, to the empty line.
                let mut total = 0;
                loop {
                    let trailer = self.line(MAX_HEAD).await?;
                    total += trailer.len();
                    if trailer.is_empty() {
                        return Ok(body);
                    }
                    if total > MAX_HEAD {
                        return Err(KmsError::Protocol("a chunked answer with over-long trailers".into()));
                    }
                }
            }
            if size > MAX_BODY - body.len() {
                body.fill(0);
                return Err(KmsError::Protocol(format!("an answer body over {MAX_BODY} bytes")));
            }
            self.fill(size + 2).await?;
            body.extend_from_slice(&self.buf[self.pos..self.pos + size]);
            if &self.buf[self.pos + size..self.pos + size + 2] != b"\r\n" {
                body.fill(0);
                return Err(KmsError::Protocol("a chunked answer with a chunk not ended by CRLF".into()));
            }
            self.pos += size + 2;
        }
    }

    /// The rest of the connection, as the body.
    async fn rest(&mut self) -> Result<Vec<u8>, KmsError> {
        while self.more().await? {
            if self.buf.len() - self.pos > MAX_BODY {
                return Err(KmsError::Protocol(format!("an answer body over {MAX_BODY} bytes")));
            }
        }
        let n = self.buf.len() - self.pos;
        Ok(self.take(n))
    }
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
