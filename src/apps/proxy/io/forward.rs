//! The forwarding loop both directions run: read what the stream has, split off whole frames,
//! admit each through the direction's [`Side`], send them batched, then report them.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::future::Future;
use std::io::{ErrorKind, IoSlice};
use std::time::{Duration, Instant};

use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::super::session::Action;
use super::buffers::{Batch, Buffers, Source, give_back, give_back_owned, owned_copy};
use crate::ApiKey;

/// Writes `head` then `body` and flushes (TLS keeps written bytes until a flush). Both go
/// out in one vectored write where the stream takes one (`writev` on TCP, one batch of
/// records with TLS), so that a large frame and its size prefix (and the small frames
/// before it) leave in one system call and one segment train, not as a few bytes of
/// prefix and then the frame. A stream without vectored writes is given the first
/// non-empty slice each time (`poll_write_vectored`'s default), as separate writes.
/// Partial writes continue where they stopped.
pub(super) async fn send<W: AsyncWrite + Unpin>(
    to: &mut W,
    mut head: &[u8],
    mut body: &[u8],
) -> std::io::Result<()> {
    while !head.is_empty() || !body.is_empty() {
        let n = if head.is_empty() {
            to.write(body).await?
        } else if body.is_empty() {
            to.write(head).await?
        } else {
            to.write_vectored(&[IoSlice::new(head), IoSlice::new(body)]).await?
        };
        if n == 0 {
            return Err(ErrorKind::WriteZero.into());
        }
        let from_head = n.min(head.len());
        head = head.get(from_head..).unwrap_or_default();
        body = body.get(n - from_head..).unwrap_or_default();
    }
    to.flush().await
}

/// What one direction does with its frames, for [`forward`].
pub(super) trait Side: Send {
    /// What is kept of a frame between sending it and reporting it.
    type Meta: Send;
    /// The proxy's frame size limit.
    fn max_frame(&self) -> usize;
    /// Why the direction ended: its stream's end (`None`) or a read error.
    fn read_end(&self, error: Option<std::io::Error>) -> String;
    /// A framing violation (reported here); returns why the connection ends.
    fn violation(&self, violation: String) -> String;
    /// Decides on a frame before it is sent: what to keep of it, and what to send.
    fn admit(&mut self, frame: &[u8]) -> (Self::Meta, Action);
    /// Reports a frame (as sent, or held) after it was written at `done`.
    fn report(&mut self, frame: &[u8], meta: Self::Meta, done: Instant);
    /// A write error (counted here); returns why the connection ends.
    fn write_error(&self, error: std::io::Error) -> String;
    /// Waits until the side has something to send of its own (never, by default), or
    /// the direction should stop reading.
    fn woken(&self) -> impl Future<Output = ()> + Send {
        core::future::pending()
    }
    /// Frames of its own due now (filters' answers), each with what to report of it.
    fn own_frames(&mut self) -> Vec<(Vec<u8>, Self::Meta)> {
        Vec::new()
    }
    /// How long the connection may go without bytes from this side and nothing awaited
    /// before it ends as idle (`None`: no limit).
    fn idle_limit(&self) -> Option<Duration> {
        None
    }
    /// Whether nothing is awaited (the idle limit applies).
    fn is_idle(&self) -> bool {
        true
    }
    /// Whether a frame must wait for a filter before it is admitted (never, by default).
    fn waits(&self, frame: &[u8]) -> bool {
        let _ = frame;
        false
    }
    /// Runs the waiting filter on a frame, with `to` for its own requests: the frame to
    /// admit, or why the connection ends.
    fn wait<W: AsyncWrite + Unpin + Send>(
        &mut self,
        frame: Vec<u8>,
        to: &mut W,
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send {
        let _ = to;
        core::future::ready(Ok(frame))
    }
    /// Whether a frame, once admitted, must wait for a filter before it is sent (never, by
    /// default): the response side's [`super::WaitingResponses`]; the API and version it
    /// answers if so.
    fn waits_after(&self, meta: &Self::Meta) -> Option<(ApiKey, i16)> {
        let _ = meta;
        None
    }
    /// Runs the waiting filter on an admitted frame that answers `exchange` (API and
    /// version): the frame to send, or why the connection ends.
    fn wait_after(
        &mut self,
        frame: Vec<u8>,
        exchange: (ApiKey, i16),
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send {
        let _ = exchange;
        core::future::ready(Ok(frame))
    }
}

/// Reads into `bufs`, or returns `None` when the side is woken (or the wait times out as
/// idle, `Some(Err(TimedOut))`) first.
pub(super) async fn read_or_wake<R: Source, S: Side>(
    from: &mut R,
    bufs: &mut Option<Buffers>,
    side: &S,
) -> Option<std::io::Result<usize>> {
    let max_frame = side.max_frame();
    let idle = side.idle_limit();
    let read = async {
        let Some(limit) = idle else { return from.fill(bufs, max_frame).await };
        loop {
            // Waiting for readiness is cancel-safe: a wait cut short loses no byte.
            match tokio::time::timeout(limit, from.fill(bufs, max_frame)).await {
                Ok(r) => return r,
                Err(_) if side.is_idle() => {
                    let words = format!("idle for {} ms with nothing awaited", limit.as_millis());
                    return Err(std::io::Error::new(ErrorKind::TimedOut, words));
                }
                Err(_) => {}
            }
        }
    };
    tokio::select! {
        r = read => Some(r),
        () = side.woken() => None,
    }
}

/// Sends what is batched (then `tail`, a large frame written from the read buffer, whose
/// size prefix ends the batch) and reports the batched frames as written: the write's result
/// and when it ended. The batch is left empty.
async fn send_batch<W: AsyncWrite + Unpin + Send, S: Side>(
    to: &mut W,
    side: &mut S,
    batch: &mut Batch,
    copied: &mut Vec<(usize, S::Meta)>,
    tail: &[u8],
) -> (std::io::Result<()>, Instant) {
    let r = send(to, &batch.out, tail).await;
    let done = Instant::now();
    for (at, meta) in copied.drain(..) {
        side.report(batch.frame(at), meta, done);
    }
    batch.out.clear();
    (r, done)
}

/// One direction: reads what `from` has, splits off the whole frames, sends them in one
/// write (a frame over [`COPY_MAX`] from the read buffer, the others copied into a batch)
/// with the side's own frames in their turn, then reports them; until either stream ends or
/// a frame ends the connection. Returns why.
pub(super) async fn forward<R: Source, W: AsyncWrite + Unpin + Send, S: Side>(
    mut from: R,
    mut to: W,
    side: &mut S,
) -> String {
    let mut bufs: Option<Buffers> = None;
    let mut copied: Vec<(usize, S::Meta)> = Vec::new();
    let mut own = Batch { out: Vec::new() };
    loop {
        match read_or_wake(&mut from, &mut bufs, side).await {
            None => {
                // The side's own frames (filters' answers with nothing before them).
                own.out.clear();
                let mut metas = Vec::new();
                for (frame, meta) in side.own_frames() {
                    metas.push((own.push(&frame), meta));
                }
                if metas.is_empty() {
                    continue;
                }
                if let (Err(e), _) = send_batch(&mut to, side, &mut own, &mut metas, &[]).await {
                    return side.write_error(e);
                }
                own = Batch { out: Vec::new() };
                continue;
            }
            Some(Ok(0)) => return side.read_end(None),
            Some(Ok(_)) => {}
            Some(Err(e)) if e.kind() == ErrorKind::TimedOut => return e.to_string(),
            Some(Err(e)) => return side.read_end(Some(e)),
        }
        let Some(Buffers { frames, batch, .. }) = bufs.as_mut() else { continue };
        batch.out.clear();
        copied.clear();
        let mut end = None;
        loop {
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    end = Some(side.violation(violation(&e)));
                    break;
                }
            };
            // A frame a filter waits on: what is batched goes first (its order is the
            // broker's), then the filter, which may write requests of its own. The filter
            // is given a pooled copy; the frame it gives is pooled again once sent.
            let mut waited: Option<Vec<u8>> = None;
            let frame = if side.waits(frame) {
                let owned = owned_copy(frame);
                if let (Err(e), _) = send_batch(&mut to, side, batch, &mut copied, &[]).await {
                    return side.write_error(e);
                }
                match side.wait(owned, &mut to).await {
                    Ok(f) => &waited.insert(f)[..],
                    Err(why) => {
                        end = Some(format!("closed by the proxy: {why}"));
                        break;
                    }
                }
            } else {
                frame
            };
            let (meta, action) = side.admit(frame);
            // The frame to send, as a head and a tail: a filter's splice (`Action::Splice`)
            // leaves the bytes after its last change where they were read, and they are
            // written from there, not copied.
            let (forward, tail): (&[u8], &[u8]) = match &action {
                Action::Forward => (frame, &[]),
                Action::Replace(new) => (new, &[]),
                Action::Splice { head, tail } => match frame.get(*tail..) {
                    Some(rest) => (head, rest),
                    None => {
                        end = Some("closed by the proxy: a filter's splice is past the frame's end".into());
                        side.report(frame, meta, Instant::now());
                        break;
                    }
                },
                Action::Hold => {
                    side.report(frame, meta, Instant::now());
                    continue;
                }
                Action::Close(why) => {
                    end = Some(format!("closed by the proxy: {why}"));
                    side.report(frame, meta, Instant::now());
                    break;
                }
            };
            if let Some(exchange) = side.waits_after(&meta) {
                // What a response filter waits on: what is batched goes first, then the
                // frame it made; the hooks are told of the frame as admitted.
                if let (Err(e), _) = send_batch(&mut to, side, batch, &mut copied, &[]).await {
                    return side.write_error(e);
                }
                let mut owned = owned_copy(forward);
                owned.extend_from_slice(tail);
                let forward = if tail.is_empty() { forward } else { frame };
                let made = match side.wait_after(owned, exchange).await {
                    Ok(f) => f,
                    Err(why) => {
                        end = Some(format!("closed by the proxy: {why}"));
                        side.report(forward, meta, Instant::now());
                        break;
                    }
                };
                let Ok(len) = u32::try_from(made.len()) else {
                    end = Some("closed by the proxy: a filter's frame is too large".to_string());
                    side.report(forward, meta, Instant::now());
                    break;
                };
                let r = send(&mut to, &len.to_be_bytes(), &made).await;
                if let Err(e) = r {
                    return side.write_error(e);
                }
                give_back_owned(made);
                side.report(forward, meta, Instant::now());
            } else if tail.is_empty() && forward.len() <= COPY_MAX {
                let at = batch.push(forward);
                copied.push((at, meta));
            } else if tail.is_empty() {
                batch.out.extend_from_slice(&(forward.len() as u32).to_be_bytes());
                let (r, done) = send_batch(&mut to, side, batch, &mut copied, forward).await;
                if let Err(e) = r {
                    return side.write_error(e);
                }
                side.report(forward, meta, done);
            } else {
                // A spliced frame, whatever its size: its size prefix and head end the
                // batch, its tail goes from the read buffer in the same write. It is
                // reported as it came (the hooks' one rule for spliced frames).
                batch.out.extend_from_slice(&((forward.len() + tail.len()) as u32).to_be_bytes());
                batch.out.extend_from_slice(forward);
                let (r, done) = send_batch(&mut to, side, batch, &mut copied, tail).await;
                if let Err(e) = r {
                    return side.write_error(e);
                }
                side.report(frame, meta, done);
            }
            // Filters' answers due after this frame go right behind it.
            for (own_frame, own_meta) in side.own_frames() {
                let at = batch.push(&own_frame);
                copied.push((at, own_meta));
            }
            if let Some(w) = waited {
                give_back_owned(w);
            }
        }
        // The frames before a violation or a close are still sent.
        let (r, _) = send_batch(&mut to, side, batch, &mut copied, &[]).await;
        if let Some(why) = end {
            return why;
        }
        if let Err(e) = r {
            return side.write_error(e);
        }
        if bufs.as_ref().is_some_and(Buffers::idle) {
            give_back(&mut bufs);
            copied = Vec::new();
        }
    }
}

/// Frames up to this size are copied into the batch written at the end of a read; larger
/// ones are written from the read buffer.
pub(super) const COPY_MAX: usize = 16 * 1024;

/// The words for a framing violation (a negative size, or one over the limit).
pub(super) fn violation(e: &crate::codec::frame::FrameError) -> String {
    match e {
        crate::codec::frame::FrameError::Decode(d) => match d.kind() {
            crate::DecodeErrorKind::InvalidLength(n) => format!("negative frame size {n}"),
            crate::DecodeErrorKind::FrameTooLarge { size, max } => {
                format!("frame size {size} is over the limit of {max} bytes")
            }
            _ => d.to_string(),
        },
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A writer that takes at most `step` bytes a call, with or without vectored writes.
    struct Trickle {
        got: Vec<u8>,
        step: usize,
        vectored: bool,
        calls: usize,
        flushes: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.got.extend_from_slice(&buf[..n]);
            self.calls += 1;
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            if !self.vectored {
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
                return self.poll_write(cx, first);
            }
            let mut left = self.step;
            for b in bufs {
                let n = b.len().min(left);
                self.got.extend_from_slice(&b[..n]);
                left -= n;
            }
            self.calls += 1;
            Poll::Ready(Ok(self.step - left))
        }
        fn is_write_vectored(&self) -> bool {
            self.vectored
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn send_writes_both_slices_in_order_through_partial_writes() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let head: Vec<u8> = (0..10u8).collect();
        let body: Vec<u8> = (100..200u8).collect();
        let whole: Vec<u8> = head.iter().chain(&body).copied().collect();
        for vectored in [true, false] {
            for step in [1, 3, 10, 11, 64, 1000] {
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &head, &body)).unwrap();
                assert_eq!(w.got, whole, "vectored {vectored}, step {step}");
                assert_eq!(w.flushes, 1);
                if vectored && step >= whole.len() {
                    assert_eq!(w.calls, 1, "one write for both slices");
                }
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &head, &[])).unwrap();
                assert_eq!(w.got, head);
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &[], &body)).unwrap();
                assert_eq!(w.got, body);
            }
        }
        // A writer that takes nothing is an error, not a loop.
        let mut w = Trickle { got: Vec::new(), step: 0, vectored: true, calls: 0, flushes: 0 };
        let e = rt.block_on(send(&mut w, &head, &body)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WriteZero);
    }
}
