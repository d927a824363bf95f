//! Where a walk is: the [`Path`] from the frame part to the current field, and the
//! [`WalkError`] that says where a walk stopped.

use core::fmt;

use super::super::{FieldSchema, FieldType, StructSchema};
use crate::ApiKey;
use crate::codec::error::DecodeError;

/// The deepest nesting of fields the walker follows (Kafka's schemas nest at most four
/// deep); a deeper schema is refused with [`WalkError::TooDeep`].
pub const MAX_DEPTH: usize = 8;

/// Which part of a frame a walk reads: the root of every [`Path`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramePart {
    /// A request or response header.
    Header,
    /// A message body.
    Body,
}

/// One step of a [`Path`]: a field, and for an element of an array field its index.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// The field.
    pub field: &'static FieldSchema,
    /// For an array field: the element being read, once the walk is inside one.
    pub index: Option<usize>,
}

/// Where the walk is: the part, then the fields (and array indexes) from the top struct
/// down to the current field. It displays as Kafka's JSON path,
/// `body.topics[0].partitions[2].timestamp`, with ` (tagged fields)` appended inside a
/// tagged-field section's framing.
///
/// It is small and `Copy` (each step is a field's position in its struct and an element
/// index; the fields are found from the top struct's schema when asked for).
#[derive(Clone, Copy)]
pub struct Path {
    part: FramePart,
    root: &'static StructSchema,
    /// Per step: the field's index in its struct, and the element index plus one (0: none).
    steps: [(u16, u32); MAX_DEPTH],
    len: u8,
    pub(super) tagged: bool,
}

impl Path {
    /// The path of the top struct `root` of `part`, before any field.
    pub const fn new(part: FramePart, root: &'static StructSchema) -> Self {
        Path { part, root, steps: [(0, 0); MAX_DEPTH], len: 0, tagged: false }
    }

    /// The part of the frame.
    pub const fn part(&self) -> FramePart {
        self.part
    }

    /// The top struct's schema.
    pub const fn root(&self) -> &'static StructSchema {
        self.root
    }

    /// The steps from the top struct down, the current field last.
    pub fn steps(&self) -> impl Iterator<Item = Step> + '_ {
        let mut owner = Some(self.root);
        self.steps.iter().take(usize::from(self.len)).map_while(move |&(field, index)| {
            let field = owner?.fields.get(usize::from(field))?;
            let mut ty = &field.ty;
            while let FieldType::Array(inner) = ty {
                ty = inner;
            }
            owner = match ty {
                FieldType::Struct(s) => Some(*s),
                _ => None,
            };
            Some(Step { field, index: index.checked_sub(1).map(|i| i as usize) })
        })
    }

    /// The number of steps.
    pub const fn depth(&self) -> usize {
        self.len as usize
    }

    /// The current field (the last step), if the walk is inside one.
    pub fn field(&self) -> Option<&'static FieldSchema> {
        self.steps().last().map(|s| s.field)
    }

    /// Whether the walk is reading a tagged-field section's framing (its count, a tag or
    /// a size) rather than a field.
    pub const fn in_tagged_framing(&self) -> bool {
        self.tagged
    }

    pub(super) fn push(&mut self, field: usize) -> bool {
        match (self.steps.get_mut(usize::from(self.len)), u16::try_from(field)) {
            (Some(slot), Ok(field)) => {
                *slot = (field, 0);
                self.len += 1;
                true
            }
            _ => false,
        }
    }

    pub(super) fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    /// Sets (or with `None` clears) the element index of the last step.
    pub(super) fn set_index(&mut self, index: Option<usize>) {
        if let Some(last) = self.len.checked_sub(1).and_then(|i| self.steps.get_mut(usize::from(i))) {
            last.1 = index.map_or(0, |i| u32::try_from(i).unwrap_or(u32::MAX - 1) + 1);
        }
    }
}

/// Writes a schema field name as its JSON key (first letter in lower case).
pub(crate) fn write_key(name: &str, f: &mut impl fmt::Write) -> fmt::Result {
    let mut chars = name.chars();
    if let Some(first) = chars.next() {
        for c in first.to_lowercase() {
            f.write_char(c)?;
        }
        f.write_str(chars.as_str())?;
    }
    Ok(())
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.part {
            FramePart::Header => "header",
            FramePart::Body => "body",
        })?;
        for step in self.steps() {
            f.write_str(".")?;
            write_key(step.field.name, f)?;
            if let Some(i) = step.index {
                write!(f, "[{i}]")?;
            }
        }
        if self.tagged {
            f.write_str(" (tagged fields)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Path({self})")
    }
}

/// Why a walk stopped.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum WalkError {
    /// The bytes break a wire rule: the same error kind and offset as the typed views
    /// report, with the path to the field.
    Decode {
        /// The error (its `field` is the schema field's name).
        error: DecodeError,
        /// Where it was found.
        path: Path,
    },
    /// The schema nests deeper than [`MAX_DEPTH`] (no Kafka schema does).
    TooDeep {
        /// The offset reached.
        offset: usize,
    },
    /// A request header names an API key kwire does not know.
    UnknownApiKey {
        /// The key.
        key: i16,
        /// The offset of the key.
        offset: usize,
    },
    /// A request header names a version kwire does not have for its API.
    UnsupportedVersion {
        /// The API.
        key: ApiKey,
        /// The version.
        version: i16,
        /// The offset of the version.
        offset: usize,
    },
}

impl WalkError {
    /// The offset where the problem was found.
    pub fn offset(&self) -> usize {
        match self {
            WalkError::Decode { error, .. } => error.offset(),
            WalkError::TooDeep { offset }
            | WalkError::UnknownApiKey { offset, .. }
            | WalkError::UnsupportedVersion { offset, .. } => *offset,
        }
    }

    /// The decode error, when the problem is one the typed views report.
    pub fn decode_error(&self) -> Option<DecodeError> {
        match self {
            WalkError::Decode { error, .. } => Some(*error),
            _ => None,
        }
    }

    /// The path, for a decode error.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WalkError::Decode { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkError::Decode { error, path } => {
                write!(f, "{} at offset {} ({path})", error.kind(), error.offset())
            }
            WalkError::TooDeep { offset } => write!(f, "schema nests too deep at offset {offset}"),
            WalkError::UnknownApiKey { key, .. } => write!(f, "API key {key} is not supported"),
            WalkError::UnsupportedVersion { key, version, .. } => {
                write!(f, "{} has no request version {version}", key.name())
            }
        }
    }
}

impl core::error::Error for WalkError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            WalkError::Decode { error, .. } => Some(error),
            _ => None,
        }
    }
}
