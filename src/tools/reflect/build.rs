//! The builders the generated tables (`schemas.rs`) are written with, so that each field
//! takes one line: [`field`] with its name, type and versions, then a method for each fact
//! it has beyond those (nullable or tagged versions, a default, `ignorable`, an entity), then its
//! description. Everything here is `const`, so the tables stay static data.

pub(super) use super::Entity::*;
pub(super) use super::FieldType::*;
use super::{Entity, FieldSchema, FieldType};
use crate::codec::types::Versions;

/// No versions.
pub(super) const NONE: Versions = Versions::NONE;

/// Versions `lo` to `hi` (the schema's `"lo-hi"`, or `"lo"` when they are equal).
pub(super) const fn v(lo: i16, hi: i16) -> Versions {
    Versions::new(lo, hi)
}

/// Version `lo` and every later one (the schema's `"lo+"`).
pub(super) const fn since(lo: i16) -> Versions {
    Versions::new(lo, i16::MAX)
}

/// A field present in `versions`: in place, never null, no default, not ignorable, and
/// with no description until [`FieldSchema::about`] gives it one.
pub(super) const fn field(name: &'static str, ty: FieldType, versions: Versions) -> FieldSchema {
    FieldSchema {
        name,
        ty,
        versions,
        nullable_versions: NONE,
        tagged_versions: NONE,
        tag: None,
        default: None,
        ignorable: false,
        entity: None,
        about: "",
    }
}

impl FieldSchema {
    /// The field may be null in `versions`.
    pub(super) const fn nullable(mut self, versions: Versions) -> Self {
        self.nullable_versions = versions;
        self
    }

    /// The field is tagged field `tag` in `versions`.
    pub(super) const fn tagged(mut self, tag: u32, versions: Versions) -> Self {
        self.tag = Some(tag);
        self.tagged_versions = versions;
        self
    }

    /// The schema's default, as written there.
    pub(super) const fn default_value(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }

    /// A non-default value is dropped, rather than refused, in versions without the field.
    pub(super) const fn ignorable(mut self) -> Self {
        self.ignorable = true;
        self
    }

    /// The field identifies an entity of this kind (the schema's `entityType`).
    pub(super) const fn entity(mut self, entity: Entity) -> Self {
        self.entity = Some(entity);
        self
    }

    /// The description.
    pub(super) const fn about(mut self, about: &'static str) -> Self {
        self.about = about;
        self
    }
}
