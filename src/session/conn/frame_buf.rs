//! [`FrameBuf`]: a bounded read buffer that splits a byte stream into frames.

use alloc::vec::Vec;

use crate::codec::frame::{self, FrameError, FrameStatus};

/// The default base capacity of a [`FrameBuf`]: what it allocates first and shrinks back
/// to after a larger frame.
pub const DEFAULT_BASE_CAPACITY: usize = 16 * 1024;

/// A read buffer that turns a byte stream into whole frames, lent out borrowed.
///
/// Bytes go in either through [`FrameBuf::spare`] (read from a socket straight into the
/// buffer) and [`FrameBuf::commit`], or through [`FrameBuf::feed`]. Frames come out of
/// [`FrameBuf::next_frame`]: the bytes after the size prefix (header and body), valid
/// until the buffer is next changed. A frame handed out counts as consumed; the buffer
/// compacts the next time bytes go in, never while a frame is lent.
///
/// **Limits.** A size prefix that is negative or over the maximum frame size is an error
/// ([`FrameError::Decode`] with [`crate::DecodeErrorKind::InvalidLength`] or
/// [`crate::DecodeErrorKind::FrameTooLarge`], as [`frame::split_frame`] reports them) as
/// soon as its four bytes are there, and nothing is allocated for it. The error sticks:
/// every later call to `next_frame` returns it again, and no more bytes are taken.
///
/// **Memory.** The buffer starts at its base capacity. It grows only for the frame being
/// read, by doubling as that frame's bytes arrive (never to the size a prefix claims before
/// the bytes are there), and never past that frame's size. After a frame larger than the
/// base capacity it shrinks back once a frame that fits in the base capacity follows (when
/// bytes next go in after that frame's size prefix was seen, or after that frame was handed
/// out); while frames larger than the base capacity follow each other it keeps its
/// capacity, so a stream of them (Produce, Fetch) does not allocate, zero-fill and fault in
/// a fresh buffer for each one. [`FrameBuf::shrink_to_base`] gives the capacity
/// back at once (for a connection gone idle). Its capacity never exceeds
/// [`FrameBuf::capacity_bound`], the larger of the base capacity and the maximum frame plus
/// its prefix. Once it holds its base capacity, frames that fit in it are split without
/// allocating.
///
/// ```
/// use kwire::conn::FrameBuf;
///
/// let mut buf = FrameBuf::new(1024);
/// // Two frames and the start of a third arrive in one read.
/// let input = [0, 0, 0, 2, 0xaa, 0xbb, 0, 0, 0, 1, 0xcc, 0, 0, 0, 3, 0xdd];
/// assert_eq!(buf.feed(&input), input.len());
/// assert_eq!(buf.next_frame()?, Some(&[0xaa, 0xbb][..]));
/// assert_eq!(buf.next_frame()?, Some(&[0xcc][..]));
/// assert_eq!(buf.next_frame()?, None);
/// assert_eq!(buf.needed(), 2);
///
/// // Read into the buffer's spare space, as from a socket.
/// let spare = buf.spare();
/// spare[..2].copy_from_slice(&[0xee, 0xff]);
/// buf.commit(2);
/// assert_eq!(buf.next_frame()?, Some(&[0xdd, 0xee, 0xff][..]));
///
/// // A negative size is refused from its prefix alone.
/// buf.feed(&[0xff, 0xff, 0xff, 0xfe]);
/// assert!(buf.next_frame().is_err());
/// # Ok::<(), kwire::frame::FrameError>(())
/// ```
#[derive(Debug)]
pub struct FrameBuf {
    /// Storage; its length is the capacity in use (zero-filled, no uninitialised bytes).
    buf: Vec<u8>,
    /// Bytes before `start` were handed out.
    start: usize,
    /// Bytes up to `end` were read.
    end: usize,
    base: usize,
    max_frame: usize,
    error: Option<FrameError>,
    /// The last frame handed out fitted in the base capacity.
    last_small: bool,
    /// Never shrink back by itself ([`FrameBuf::keep_capacity`]).
    keep: bool,
}

impl FrameBuf {
    /// A buffer for frames of at most `max_frame_size` bytes (after the size prefix), with
    /// the default base capacity.
    pub fn new(max_frame_size: usize) -> Self {
        Self::with_base_capacity(DEFAULT_BASE_CAPACITY, max_frame_size)
    }

    /// A buffer with `base` bytes of base capacity (at least 4, the size prefix) for
    /// frames of at most `max_frame_size` bytes. The base capacity is allocated now.
    pub fn with_base_capacity(base: usize, max_frame_size: usize) -> Self {
        let base = base.max(4);
        let mut buf = Vec::new();
        buf.reserve_exact(base);
        buf.resize(base, 0);
        FrameBuf {
            buf,
            start: 0,
            end: 0,
            base,
            max_frame: max_frame_size,
            error: None,
            last_small: false,
            keep: false,
        }
    }

    /// The largest frame accepted (after the size prefix).
    pub const fn max_frame_size(&self) -> usize {
        self.max_frame
    }

    /// Changes the largest frame accepted, e.g. from Kafka's 512 KiB before SASL
    /// authentication to 100 MiB after it. Applies from the next frame split.
    pub fn set_max_frame_size(&mut self, max_frame_size: usize) {
        self.max_frame = max_frame_size;
    }

    /// The base capacity.
    pub const fn base_capacity(&self) -> usize {
        self.base
    }

    /// The bytes allocated now.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The most the buffer ever allocates: the base capacity or the largest frame with its
    /// prefix, whichever is larger.
    pub fn capacity_bound(&self) -> usize {
        self.base.max(self.max_frame.saturating_add(4))
    }

    /// Bytes read and not yet handed out as frames.
    pub const fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The error that stopped this buffer, if any.
    pub const fn error(&self) -> Option<FrameError> {
        self.error
    }

    /// How many more bytes the next frame needs at least (exactly, once its size prefix is
    /// there); 0 when a whole frame is buffered, or when the stream failed.
    pub fn needed(&self) -> usize {
        if self.error.is_some() {
            return 0;
        }
        match frame::split_frame(self.pending(), self.max_frame) {
            Ok(FrameStatus::Incomplete { needed }) => needed,
            _ => 0,
        }
    }

    fn pending(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    /// The size of the first pending frame with its prefix, if its prefix is there and
    /// valid.
    fn first_frame_len(&self) -> Option<usize> {
        frame_len(*self.pending().first_chunk::<4>()?, self.max_frame)
    }

    /// With `true`, the buffer no longer shrinks back by itself after a large frame: it
    /// keeps what it grew to until [`FrameBuf::shrink_to_base`] or until it is dropped. For
    /// a caller that pools grown buffers between connections (`kwire proxy` does), so that
    /// a connection of small frames that takes a grown buffer hands it back grown.
    pub fn keep_capacity(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// Gives back the capacity beyond the base capacity now, unless more than the base
    /// capacity is buffered (a frame being read keeps its room). For a connection gone
    /// idle after large frames; otherwise the buffer shrinks back by itself when a small
    /// frame follows (see the type's docs on memory).
    pub fn shrink_to_base(&mut self) {
        self.compact();
        if self.buf.len() > self.base && self.end <= self.base {
            self.shrink_now();
        }
    }

    fn shrink_now(&mut self) {
        self.buf.truncate(self.base);
        self.buf.shrink_to_fit();
    }

    /// Space to read into, after the bytes already buffered; say how much was written with
    /// [`FrameBuf::commit`]. Moves the unread bytes to the front first, and sizes the
    /// buffer for the frame being read (see the type's docs on memory).
    ///
    /// The slice is empty only when the stream has failed, or when whole frames wait to be
    /// taken with [`FrameBuf::next_frame`] and no room is left: take them first (a read
    /// into an empty slice returns 0, which looks like the end of the stream).
    pub fn spare(&mut self) -> &mut [u8] {
        self.spare_before(None)
    }

    /// [`FrameBuf::spare`], where `next` is the start of the bytes about to go in (known to
    /// [`FrameBuf::feed`]): their size prefix tells the next frame's size when nothing is
    /// pending.
    fn spare_before(&mut self, next: Option<&[u8; 4]>) -> &mut [u8] {
        if self.error.is_some() {
            return &mut [];
        }
        self.compact();
        // The frame being read, whole, if its prefix is there (or about to go in) and
        // valid; a bad one is refused by `next_frame`, which needs only the prefix.
        let known = match next {
            Some(prefix) if self.end == 0 => frame_len(*prefix, self.max_frame),
            _ => self.first_frame_len(),
        };
        // With no prefix yet, or a bad one, what the buffer must hold is just the prefix.
        let want = known.unwrap_or(4);
        // Whether the next frame is small: its prefix says so, or, with nothing of it here
        // yet, the frame before it was.
        let small = match known {
            Some(w) => w <= self.base,
            None => self.end == 0 && self.last_small,
        };
        let len = self.buf.len();
        if len > self.base && small && !self.keep && self.end <= self.base {
            // After a large frame, a small one: back to the base capacity.
            self.shrink_now();
        } else if self.end == len && want > len {
            // Grow by doubling as the frame's bytes arrive, never past the frame.
            let new_len = len.saturating_mul(2).min(want).max(self.base);
            self.buf.reserve_exact(new_len - len);
            self.buf.resize(new_len, 0);
        }
        let end = self.end;
        self.buf.get_mut(end..).unwrap_or_default()
    }

    /// Marks `n` bytes of the last [`FrameBuf::spare`] slice as read (at most its length).
    pub fn commit(&mut self, n: usize) {
        self.end = self.end.saturating_add(n).min(self.buf.len());
    }

    /// Copies bytes in, as many as fit, and returns how many that was: all of them, unless
    /// whole frames are buffered and the rest would not fit in the buffer's bounds (take
    /// the frames with [`FrameBuf::next_frame`], then feed the rest), or the stream failed
    /// (none then). A bad size prefix is reported by `next_frame`, not here.
    pub fn feed(&mut self, mut bytes: &[u8]) -> usize {
        let total = bytes.len();
        while !bytes.is_empty() {
            if self.error.is_some() {
                break;
            }
            let spare = self.spare_before(bytes.first_chunk::<4>());
            let n = spare.len().min(bytes.len());
            if n == 0 {
                break;
            }
            spare[..n].copy_from_slice(&bytes[..n]);
            self.commit(n);
            bytes = &bytes[n..];
        }
        total - bytes.len()
    }

    /// The next whole frame (the bytes after its size prefix), `None` if it is not all
    /// there yet, or the framing error that ended the stream (returned again on every
    /// later call). The frame counts as consumed.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let (start, end) = (self.start, self.end);
        let pending = self.buf.get(start..end).unwrap_or_default();
        match frame::split_frame(pending, self.max_frame) {
            Ok(FrameStatus::Complete { consumed, frame }) => {
                let len = frame.len();
                self.start = start + consumed;
                self.last_small = consumed <= self.base;
                Ok(self.buf.get(start + 4..start + 4 + len))
            }
            Ok(FrameStatus::Incomplete { .. }) => Ok(None),
            Err(e) => {
                self.error = Some(e);
                Err(e)
            }
        }
    }

    /// Drops everything buffered and any error, keeping the allocation (shrunk back to
    /// the base capacity on the next read).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.error = None;
        self.last_small = true;
    }

    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start < self.end {
            self.buf.copy_within(self.start..self.end, 0);
        }
        self.end -= self.start;
        self.start = 0;
    }
}

/// The size of a frame with its prefix, from a valid prefix (not negative, at most
/// `max_frame` after the prefix).
fn frame_len(prefix: [u8; 4], max_frame: usize) -> Option<usize> {
    let size = usize::try_from(frame::size_prefix(&prefix)?).ok()?;
    (size <= max_frame).then_some(size + 4)
}
