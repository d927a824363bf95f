//! A direction's buffers: [`Buffers`] (the frame buffer read into and the [`Batch`] written
//! from), taken when the socket has bytes and given back when it is drained; the [`Source`]s
//! that read into them (plain TCP and TLS); the pools of frame buffers (grown ones, and a
//! few of the base size); and the pool of large owned frames, those waiting filters are
//! given and make ([`owned_copy`], [`owned_frame`], [`give_back_owned`]).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::future::Future;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;

use crate::session::conn::FrameBuf;

/// The frame buffers' base size (`kwire::conn`'s default): they grow as a larger frame's
/// bytes arrive.
pub(super) const BASE: usize = crate::session::conn::DEFAULT_BASE_CAPACITY;

/// Buffers taken when a direction has bytes to read, given back when it is drained.
pub(super) struct Buffers {
    pub(super) frames: FrameBuf,
    pub(super) batch: Batch,
    /// The last read returned less than it asked for: the socket had no more.
    pub(super) drained: bool,
}

impl Buffers {
    /// A direction's buffers: a grown frame buffer from [`POOL`] if any, else a base-size
    /// one (with a batch's storage) from [`SMALL`], else new ones.
    pub(super) fn new(max_frame: usize) -> Buffers {
        let grown = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let (mut frames, out) = match grown {
            Some(fb) => (fb, Vec::new()),
            None => match SMALL.lock().unwrap_or_else(|e| e.into_inner()).pop() {
                Some(parked) => parked,
                None => (take_frame_buf(BASE, max_frame), Vec::new()),
            },
        };
        frames.set_max_frame_size(max_frame);
        Buffers { frames, batch: Batch { out }, drained: false }
    }

    /// Whether to give the buffers back: nothing left to read, no partial frame.
    pub(super) fn idle(&self) -> bool {
        self.drained && self.frames.buffered() == 0
    }
}

/// Gives a direction's buffers back (a grown frame buffer to the proxy's pool, `conn.rs`).
pub(super) fn give_back(bufs: &mut Option<Buffers>) {
    if let Some(b) = bufs.take() {
        let Buffers { frames, batch, .. } = b;
        if frames.capacity() <= frames.base_capacity() {
            if frames.buffered() == 0 && frames.error().is_none() {
                park_small(frames, batch.out);
            }
        } else {
            give_back_frame_buf(frames);
        }
    }
}

/// Puts a base-size frame buffer (with nothing buffered and no error) and a batch's
/// storage into [`SMALL`] if it has room, else frees them.
fn park_small(frames: FrameBuf, out: Vec<u8>) {
    park(&mut SMALL.lock().unwrap_or_else(|e| e.into_inner()), frames, out);
}

/// [`park_small`] into `pool`.
fn park(pool: &mut Vec<(FrameBuf, Vec<u8>)>, frames: FrameBuf, mut out: Vec<u8>) {
    if out.capacity() > SMALL_BATCH_BYTES {
        out = Vec::new();
    }
    out.clear();
    if pool.len() < SMALL_BUFFERS {
        pool.push((frames, out));
    }
}

/// The reading half of a stream: waits until it has bytes (or an end) and reads them into a
/// direction's buffers, taking them if it had none; `Ok(0)` at the end of the stream.
pub(super) trait Source: Send {
    fn fill<'a>(
        &'a mut self,
        bufs: &'a mut Option<Buffers>,
        max_frame: usize,
    ) -> impl Future<Output = std::io::Result<usize>> + Send + 'a;
}

/// Plain TCP: waits for readiness without a buffer, then reads with tokio's `poll_read`,
/// which takes a read that returned less than it asked for as the socket drained (epoll is
/// edge-triggered, so new bytes wake the task again): the next wait goes straight to the
/// runtime instead of first making a `recv` that fails with `EAGAIN` (measured as 42% of
/// the proxy's `recv` calls under bulk load with `readable` and `try_read`).
impl Source for OwnedReadHalf {
    async fn fill(&mut self, bufs: &mut Option<Buffers>, max_frame: usize) -> std::io::Result<usize> {
        loop {
            self.readable().await?;
            let b = bufs.get_or_insert_with(|| Buffers::new(max_frame));
            let spare = b.frames.spare();
            let asked = spare.len();
            match try_read(self, spare).await {
                Some(Ok(n)) => {
                    b.frames.commit(n);
                    b.drained = n < asked;
                    return Ok(n);
                }
                // Readiness without bytes (a new socket's first wake-up, for one): hold no
                // buffer while waiting again.
                None => {
                    if b.frames.buffered() == 0 {
                        give_back(bufs);
                    }
                }
                Some(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
                Some(Err(e)) => return Err(e),
            }
        }
    }
}

/// What an idle TLS direction reads into while it holds no buffers.
const FIRST: usize = 64;

/// Reads what `r` has without waiting: `None` if it would wait.
pub(super) async fn try_read<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
) -> Option<std::io::Result<usize>> {
    std::future::poll_fn(|cx| {
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut *r).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Ready(None),
            Poll::Ready(Ok(())) => Poll::Ready(Some(Ok(rb.filled().len()))),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
        }
    })
    .await
}

/// Any other stream (TLS): an idle direction waits in a read of a few bytes, then takes its
/// buffers for those and whatever else is there already.
impl<S: AsyncRead + Send> Source for tokio::io::ReadHalf<S> {
    async fn fill(&mut self, bufs: &mut Option<Buffers>, max_frame: usize) -> std::io::Result<usize> {
        if let Some(b) = bufs.as_mut() {
            let spare = b.frames.spare();
            let asked = spare.len();
            let n = self.read(spare).await?;
            b.frames.commit(n);
            b.drained = n < asked;
            return Ok(n);
        }
        let mut first = [0u8; FIRST];
        let n = self.read(&mut first).await?;
        if n == 0 {
            return Ok(0);
        }
        let b = bufs.insert(Buffers::new(max_frame));
        let spare = b.frames.spare();
        spare[..n].copy_from_slice(&first[..n]);
        let (more, asked) = {
            let rest = &mut spare[n..];
            let asked = rest.len();
            match try_read(self, rest).await {
                // An error or the end comes again with the next read.
                None | Some(Err(_)) => (0, asked),
                Some(Ok(m)) => (m, asked),
            }
        };
        b.frames.commit(n + more);
        b.drained = n < FIRST || more < asked;
        Ok(n + more)
    }
}

/// Frame buffers grown past their base capacity (by a large frame: Produce, Fetch), given
/// back by connection directions gone idle and taken by the next direction to wake, so that
/// large frames with pauses between them reuse memory already mapped instead of allocating,
/// zero-filling and faulting in a fresh buffer each time (measured as most of the proxy's CPU
/// per MB, [`manual::proxy`](crate::manual::proxy)). Bounded by [`POOL_BUFFERS`] and [`POOL_BYTES`]; past that a buffer
/// is freed. Buffers of the base capacity go to [`SMALL`] instead: an idle connection still
/// holds no buffer.
pub(super) static POOL: Mutex<Vec<FrameBuf>> = Mutex::new(Vec::new());

/// Frame buffers of the base capacity, each with a batch's storage, given back by
/// connection directions gone idle and taken by the next direction to wake: a small request
/// and its answer then take memory already allocated and initialised (no allocation, no
/// zero-fill of a fresh buffer, no allocator consolidation when it is freed), which measured
/// as a few percent of the proxy's CPU per small request. Bounded by [`SMALL_BUFFERS`]
/// (a batch's storage by [`SMALL_BATCH_BYTES`]), so idle memory stays bounded whatever the
/// number of connections; past that a buffer is freed.
static SMALL: Mutex<Vec<(FrameBuf, Vec<u8>)>> = Mutex::new(Vec::new());

/// At most this many base-size buffers wait in [`SMALL`].
const SMALL_BUFFERS: usize = 32;

/// A batch's storage waits in [`SMALL`] only up to this capacity (else it is freed).
const SMALL_BATCH_BYTES: usize = 2 * BASE;

/// At most this many buffers wait in [`POOL`].
const POOL_BUFFERS: usize = 8;

/// At most this many bytes wait in [`POOL`], in all.
const POOL_BYTES: usize = 32 << 20;

/// A frame buffer for a direction that has bytes to read: a pooled one if any.
pub(super) fn take_frame_buf(base: usize, max_frame: usize) -> FrameBuf {
    let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    match pooled {
        Some(mut fb) => {
            fb.set_max_frame_size(max_frame);
            fb
        }
        None => {
            let mut fb = FrameBuf::with_base_capacity(base, max_frame);
            // A grown buffer goes back to the pool grown, whoever used it last.
            fb.keep_capacity(true);
            fb
        }
    }
}

/// Takes back the frame buffer of a direction gone idle (nothing buffered): into the pool
/// if it grew past its base capacity and the pool has room, else freed.
pub(super) fn give_back_frame_buf(fb: FrameBuf) {
    if fb.capacity() <= fb.base_capacity() || fb.buffered() != 0 || fb.error().is_some() {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let held: usize = pool.iter().map(FrameBuf::capacity).sum();
    if pool.len() < POOL_BUFFERS && held.saturating_add(fb.capacity()) <= POOL_BYTES {
        // Not cleared: it is empty, and `clear` would shrink it on its next read.
        pool.push(fb);
    }
}

/// Frames to write in one go: small frames are copied in, with their size prefix.
pub(super) struct Batch {
    pub(super) out: Vec<u8>,
}

impl Batch {
    pub(super) fn push(&mut self, frame: &[u8]) -> usize {
        let at = self.out.len();
        self.out.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        self.out.extend_from_slice(frame);
        at
    }

    /// The frame (without prefix) pushed at `at`.
    pub(super) fn frame(&self, at: usize) -> &[u8] {
        // `push` wrote it whole, so it splits off whole.
        match crate::codec::frame::split_frame(&self.out[at..], usize::MAX) {
            Ok(crate::codec::frame::FrameStatus::Complete { frame, .. }) => frame,
            _ => &[],
        }
    }
}

/// Large owned frames: the copies waiting filters are given ([`owned_copy`]) and the frames
/// they make ([`owned_frame`]), given back once sent or done with ([`give_back_owned`]), so
/// that a filter that rewrites every large frame (record encryption: a Produce request or a
/// Fetch answer of a MB or more each) reuses memory already mapped instead of allocating,
/// zero-filling and faulting in two fresh buffers per frame. Shared by all connections,
/// bounded by [`OWNED_BUFFERS`] and [`OWNED_BYTES`]; smaller buffers are not kept (the
/// allocator reuses those well). A buffer keeps its length in the pool, so that a frame
/// made in it is zero-filled only past what it held before; whatever it held is
/// overwritten or cut off before it is sent.
static OWNED: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// At most this many buffers wait in [`OWNED`].
const OWNED_BUFFERS: usize = 8;

/// At most this many bytes wait in [`OWNED`], in all.
const OWNED_BYTES: usize = 16 << 20;

/// Buffers smaller than this are neither taken from [`OWNED`] nor kept in it.
const OWNED_MIN: usize = 64 << 10;

/// A pooled buffer of at least `capacity`, taken out of the pool: of those, the one whose
/// length `better` prefers (`better(a, b)`: a buffer holding `a` bytes over one holding `b`).
fn take_owned(capacity: usize, better: fn(usize, usize) -> bool) -> Option<Vec<u8>> {
    if capacity < OWNED_MIN {
        return None;
    }
    let mut pool = OWNED.lock().unwrap_or_else(|e| e.into_inner());
    let mut best: Option<usize> = None;
    for (i, v) in pool.iter().enumerate() {
        if v.capacity() >= capacity && best.is_none_or(|b| better(v.len(), pool[b].len())) {
            best = Some(i);
        }
    }
    best.map(|i| pool.swap_remove(i))
}

/// An owned copy of `frame`, in a pooled buffer if one is large enough (the one holding
/// the least, so that those holding more are left for [`owned_frame`]).
pub(in crate::apps::proxy) fn owned_copy(frame: &[u8]) -> Vec<u8> {
    match take_owned(frame.len(), |a, b| a < b) {
        Some(mut v) => {
            v.clear();
            v.extend_from_slice(frame);
            v
        }
        None => frame.to_vec(),
    }
}

/// A buffer of `len` bytes to write a frame into, every byte of which the caller
/// overwrites: a pooled one if one is large enough (what it held is left where it is
/// overwritten, and zeros past it), else a new one with an eighth more capacity, so that a
/// slightly larger frame later fits it too.
#[cfg_attr(not(feature = "encrypt"), allow(dead_code))]
pub(in crate::apps::proxy) fn owned_frame(len: usize) -> Vec<u8> {
    let mut v = take_owned(len, |a, b| a > b).unwrap_or_else(|| Vec::with_capacity(len + len / 8));
    v.resize(len, 0);
    v
}

/// Takes back an owned frame that is sent or no longer needed: into [`OWNED`] if it is
/// large and the pool has room, else freed.
pub(in crate::apps::proxy) fn give_back_owned(v: Vec<u8>) {
    if v.capacity() < OWNED_MIN {
        return;
    }
    let mut pool = OWNED.lock().unwrap_or_else(|e| e.into_inner());
    let held: usize = pool.iter().map(Vec::capacity).sum();
    if pool.len() < OWNED_BUFFERS && held.saturating_add(v.capacity()) <= OWNED_BYTES {
        pool.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_of_base_size_buffers_is_bounded() {
        let mut pool = Vec::new();
        for _ in 0..SMALL_BUFFERS + 5 {
            park(&mut pool, FrameBuf::with_base_capacity(BASE, 1 << 20), Vec::with_capacity(100));
        }
        assert_eq!(pool.len(), SMALL_BUFFERS);
        // A batch's storage waits emptied, and only up to its bound.
        let mut out = vec![7u8; 10];
        out.reserve_exact(SMALL_BATCH_BYTES);
        let mut pool = Vec::new();
        park(&mut pool, FrameBuf::with_base_capacity(BASE, 1 << 20), out);
        park(&mut pool, FrameBuf::with_base_capacity(BASE, 1 << 20), vec![7u8; 10]);
        assert_eq!(pool[0].1.capacity(), 0);
        assert!(pool[1].1.is_empty() && pool[1].1.capacity() >= 10);
    }

    #[test]
    fn a_direction_gone_idle_parks_only_an_empty_base_size_buffer() {
        // Through `give_back`, into the shared pool: other tests may take from it meanwhile,
        // so this checks only what it parked itself, by its storage's address.
        let mut b = Buffers::new(1 << 20);
        let spare = b.frames.spare();
        spare[..5].copy_from_slice(&[0, 0, 0, 9, 1]);
        let at = spare.as_ptr() as usize;
        b.frames.commit(5);
        // Half a frame buffered: freed, not parked.
        give_back(&mut Some(b));
        let parked = |at: usize| {
            SMALL
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter_mut()
                .any(|(f, _)| f.spare().as_ptr() as usize == at)
        };
        assert!(!parked(at));
        let mut b = Buffers::new(1 << 20);
        let at = b.frames.spare().as_ptr() as usize;
        // A grown buffer another test left in `POOL` goes back there instead.
        let small = b.frames.capacity() <= b.frames.base_capacity();
        give_back(&mut Some(b));
        assert!(
            !small || parked(at) || SMALL.lock().unwrap_or_else(|e| e.into_inner()).len() == SMALL_BUFFERS
        );
    }

    #[test]
    fn owned_frames_hold_what_is_asked_whatever_the_pool_held_and_the_pool_stays_bounded() {
        // Buffers holding other bytes, given back (other tests' frames may be there too).
        give_back_owned(vec![1u8; 200 << 10]);
        give_back_owned(vec![2u8; 90 << 10]);
        let frame: Vec<u8> = (0..150u32 << 10).map(|i| i as u8).collect();
        let copy = owned_copy(&frame);
        assert_eq!(copy, frame);
        give_back_owned(copy);
        for len in [0, 10, 70 << 10, 150 << 10, 190 << 10, 300 << 10] {
            let made = owned_frame(len);
            assert_eq!(made.len(), len);
            give_back_owned(made);
        }
        // Past the bounds, buffers are freed.
        for _ in 0..2 * OWNED_BUFFERS {
            give_back_owned(vec![0u8; 4 << 20]);
        }
        give_back_owned(vec![0u8; OWNED_MIN - 1]);
        let pool = OWNED.lock().unwrap_or_else(|e| e.into_inner());
        assert!(pool.len() <= OWNED_BUFFERS);
        assert!(pool.iter().map(Vec::capacity).sum::<usize>() <= OWNED_BYTES);
        assert!(pool.iter().all(|v| v.capacity() >= OWNED_MIN));
    }
}
