//! Decode and encode errors.
//!
//! Both error types are small and `Copy`, carry no heap data and work without `alloc`.
//! A [`DecodeError`] says what was wrong ([`DecodeErrorKind`]), at which byte offset of
//! the input it was found, and in which field (a static path such as
//! `"ListOffsetsPartition.Timestamp"`). An [`EncodeError`] comes from the size step of an
//! encoder (a value the version cannot carry) or from a buffer that is too short.

use core::fmt;

/// What was wrong with the bytes being decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended early: `needed` bytes were required at the error offset, but only
    /// `available` remained.
    Truncated {
        /// Bytes the field needed.
        needed: u32,
        /// Bytes that were left.
        available: u32,
    },
    /// An unsigned varint used more than five bytes (ten for a varlong).
    VarintTooLong,
    /// A varint's value does not fit its type. Not returned by this crate's readers: a last
    /// byte's bits beyond the type are dropped, as Apache Kafka drops them (the overflow
    /// policy of the wire layer); kept so that code matching on it still builds.
    VarintOverflow,
    /// A length or count prefix was negative (other than the null marker -1).
    InvalidLength(i32),
    /// A string was longer than Kafka's limit of 32767 bytes.
    StringTooLong(u32),
    /// An array claimed more elements than there are bytes left.
    ArrayTooLong(u32),
    /// A null (length -1, or compact length 0) in a field that is not nullable in this version.
    UnexpectedNull,
    /// A string was not valid UTF-8.
    InvalidUtf8,
    /// The message does not exist in this version.
    UnsupportedVersion(i16),
    /// A tag in a tagged-field section was not greater than the tag before it.
    TagOutOfOrder(u32),
    /// A known tag appeared in a version in which its field is not tagged.
    TagNotValidForVersion(u32),
    /// A known tagged field's declared size differs from the size of its content.
    TaggedSizeMismatch {
        /// The tag.
        tag: u32,
        /// The size its header declared.
        declared: u32,
        /// The size its content actually took.
        actual: u32,
    },
    /// Bytes were left over after the end of a message body.
    TrailingBytes(u32),
    /// A frame's size prefix is over the limit the caller set.
    FrameTooLarge {
        /// The size the prefix claims.
        size: u32,
        /// The limit.
        max: u32,
    },
}

/// An error found while decoding, with the byte offset and the field where it was found.
///
/// Offsets count from the start of the bytes handed to the decoder (for a body view, the
/// first byte of the body; for a frame parser, the first byte of the size prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    kind: DecodeErrorKind,
    offset: u32,
    field: &'static str,
}

impl DecodeError {
    /// Creates an error of `kind` at `offset` in `field`.
    pub const fn new(kind: DecodeErrorKind, offset: usize, field: &'static str) -> Self {
        let offset = if offset > u32::MAX as usize { u32::MAX } else { offset as u32 };
        DecodeError { kind, offset, field }
    }

    /// What was wrong.
    pub const fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// The byte offset at which the problem was found.
    pub const fn offset(&self) -> usize {
        self.offset as usize
    }

    /// The field being decoded, as `"Struct.Field"` (or a structural name such as
    /// `"RequestHeader"` or `"Frame"`).
    pub const fn field(&self) -> &'static str {
        self.field
    }

    /// The same error with its offset moved forward by `by` bytes, for errors found in a
    /// slice that starts `by` bytes into a larger buffer.
    pub const fn shifted(self, by: usize) -> Self {
        DecodeError::new(self.kind, self.offset as usize + by, self.field)
    }
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeErrorKind::Truncated { needed, available } => {
                write!(f, "truncated: needed {needed} bytes, {available} left")
            }
            DecodeErrorKind::VarintTooLong => f.write_str("varint is too long"),
            DecodeErrorKind::VarintOverflow => f.write_str("varint overflows its type"),
            DecodeErrorKind::InvalidLength(n) => write!(f, "invalid length {n}"),
            DecodeErrorKind::StringTooLong(n) => {
                write!(f, "string of {n} bytes is longer than 32767")
            }
            DecodeErrorKind::ArrayTooLong(n) => {
                write!(f, "array of {n} elements is longer than the bytes left")
            }
            DecodeErrorKind::UnexpectedNull => f.write_str("null in a non-nullable field"),
            DecodeErrorKind::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            DecodeErrorKind::UnsupportedVersion(v) => write!(f, "version {v} is not supported"),
            DecodeErrorKind::TagOutOfOrder(t) => {
                write!(f, "tag {t} is not above the tag before it")
            }
            DecodeErrorKind::TagNotValidForVersion(t) => {
                write!(f, "tag {t} is not valid in this version")
            }
            DecodeErrorKind::TaggedSizeMismatch { tag, declared, actual } => {
                write!(f, "tagged field {tag} declares {declared} bytes but its content takes {actual}")
            }
            DecodeErrorKind::TrailingBytes(n) => write!(f, "{n} bytes left after the message"),
            DecodeErrorKind::FrameTooLarge { size, max } => {
                write!(f, "frame of {size} bytes is over the limit of {max}")
            }
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {} ({})", self.kind, self.offset, self.field)
    }
}

impl core::error::Error for DecodeError {}

/// An error from an encoder.
///
/// Every variant but [`EncodeError::BufferTooSmall`] (and [`EncodeError::TooFewParts`]) comes from the size step
/// (`encoded_len`). `encode` writes in one pass and checks on the way; when it does not
/// finish it returns the size step's error, so it reports the same errors, and for a value
/// the size step accepts it can only fail for a short buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message does not exist in this version.
    UnsupportedVersion {
        /// The message name, e.g. `"ListOffsetsRequest"`.
        message: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// A field holds a value other than its default in a version that cannot carry it,
    /// and the field is not ignorable.
    FieldNotInVersion {
        /// The field, as `"Struct.Field"`.
        field: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// A nullable field is null in a version where it is not nullable.
    NullNotAllowed {
        /// The field, as `"Struct.Field"`.
        field: &'static str,
    },
    /// A string is longer than the version's length prefix allows (32767 bytes for
    /// every Kafka string).
    StringTooLong {
        /// The field, as `"Struct.Field"`.
        field: &'static str,
        /// The string's length in bytes.
        len: usize,
    },
    /// A byte array, array or whole message is too long for its length prefix.
    TooLong {
        /// The field, as `"Struct.Field"`.
        field: &'static str,
    },
    /// Unknown tagged fields are not in strictly ascending tag order, or use the tag of a
    /// field the schema knows.
    InvalidTaggedFields {
        /// The struct whose tagged fields are wrong.
        field: &'static str,
        /// The offending tag.
        tag: u32,
    },
    /// The output buffer is shorter than the encoded message.
    BufferTooSmall {
        /// Bytes the encoding needs.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
    /// The part array given to a vectored encoder ([`crate::codec::vectored`]) has fewer entries
    /// than the encoding has parts.
    TooFewParts {
        /// Parts the encoding has.
        needed: usize,
        /// Entries the array has.
        available: usize,
    },
    /// A vectored encoder handed out a different number of parts than it had counted: a bug
    /// in kwire (please report it), checked in every build profile, like
    /// [`EncodeError::SizeMismatch`].
    PartsMismatch {
        /// The message being encoded.
        message: &'static str,
        /// The parts counted first.
        counted: usize,
        /// The parts handed out.
        written: usize,
    },
    /// The encoder's write and size steps disagree (it wrote a different number of bytes
    /// than it had sized, or its write stopped for a value the size step accepts in a buffer
    /// that holds it): a bug in kwire (please report it). Checked in every build profile;
    /// the bytes are not usable.
    SizeMismatch {
        /// The message being encoded.
        message: &'static str,
        /// The size computed first.
        sized: usize,
        /// The bytes written.
        written: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::UnsupportedVersion { message, version } => {
                write!(f, "{message} has no version {version}")
            }
            EncodeError::FieldNotInVersion { field, version } => {
                write!(f, "{field} is set to a non-default value but version {version} cannot carry it")
            }
            EncodeError::NullNotAllowed { field } => {
                write!(f, "{field} is null but not nullable in this version")
            }
            EncodeError::StringTooLong { field, len } => {
                write!(f, "{field} is {len} bytes, over the 32767-byte string limit")
            }
            EncodeError::TooLong { field } => write!(f, "{field} is too long for its length prefix"),
            EncodeError::InvalidTaggedFields { field, tag } => {
                write!(f, "unknown tagged field {tag} of {field} is out of order or uses a known tag")
            }
            EncodeError::BufferTooSmall { needed, available } => {
                write!(f, "buffer too small: need {needed} bytes, have {available}")
            }
            EncodeError::TooFewParts { needed, available } => {
                write!(f, "part array too small: need {needed} entries, have {available}")
            }
            EncodeError::PartsMismatch { message, counted, written } => {
                write!(
                    f,
                    "bug in kwire: {message} was counted at {counted} parts but {written} were handed out"
                )
            }
            EncodeError::SizeMismatch { message, sized, written } => {
                write!(f, "bug in kwire: {message} was sized at {sized} bytes but {written} were written")
            }
        }
    }
}

impl core::error::Error for EncodeError {}
