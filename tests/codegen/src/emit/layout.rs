//! Where fields are: the offsets a view stores, where each field starts from them, and the
//! fixed sizes of structs, by version. Shared by the encoders and the views.

use super::{Ctx, F};
use crate::code::Ver;
use crate::schema::{Field, Struct};
use crate::versions::Versions;

/// Where a field starts: after `base` (`None`: the struct's start; `Some(i)`: the offset
/// the view stores after the `i`th variable-length field) and the fixed-width fields in
/// `fixed`, each present in its versions.
#[derive(Clone)]
pub struct Place {
    pub base: Option<usize>,
    pub fixed: Vec<(Versions, usize)>,
}

/// The places of a struct's fields and of its tagged section, and how many offsets its
/// view stores.
pub struct StructLayout {
    pub places: Vec<Place>,
    pub anchors: usize,
    pub tags: Place,
}

impl StructLayout {
    /// Where each inline field of `s` starts: a base (the struct's start, or one of the
    /// offsets the view stores after each variable-length field) plus a version-dependent
    /// number of bytes of fixed-width fields.
    pub fn of(cx: &Ctx, s: &Struct) -> StructLayout {
        let fields: Vec<&Field> = s.fields.iter().collect();
        let last_inline = fields.iter().rposition(|f| !f.inline_versions().intersect(s.versions).is_empty());
        let tagged_section = cx.has_tags(s);
        let mut out =
            StructLayout { places: Vec::new(), anchors: 0, tags: Place { base: None, fixed: Vec::new() } };
        let mut base: Option<usize> = None;
        let mut fixed: Vec<(Versions, usize)> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let inline = f.inline_versions().intersect(s.versions);
            out.places.push(Place { base, fixed: fixed.clone() });
            if inline.is_empty() {
                continue;
            }
            match f.ty.fixed_width() {
                Some(w) => fixed.push((inline, w)),
                None => {
                    let more = last_inline.is_some_and(|l| i < l) || tagged_section;
                    if more {
                        base = Some(out.anchors);
                        out.anchors += 1;
                        fixed.clear();
                    }
                }
            }
        }
        out.tags = Place { base, fixed };
        out
    }

    /// Whether the view stores offset `anchor` after field `i`.
    pub fn anchor_after(&self, i: usize, anchor: usize) -> bool {
        let later = self.places.iter().skip(i + 1).map(|p| p.base).chain(std::iter::once(self.tags.base));
        later.into_iter().any(|b| b == Some(anchor))
            && self.places[..=i].iter().all(|p| p.base != Some(anchor))
    }
}

impl Place {
    /// The offset expression of the place, from the stored offsets `anchors`. `possible`
    /// narrows the versions to those in which the offset is used (a field read only where
    /// it exists), so that fewer of them need telling apart.
    pub fn expr(&self, s: &Struct, anchors: &str, possible: Versions, ver: &Ver) -> String {
        let possible = if possible.is_empty() { s.versions } else { possible };
        let sum = ver.by_version(
            possible,
            |v| self.fixed.iter().filter(|(vs, _)| vs.contains(v)).map(|(_, w)| w).sum::<usize>(),
            |n| n.to_string(),
        );
        match (self.base, sum.constant()) {
            (None, _) => sum.text,
            (Some(a), Some(0)) => format!("{anchors}[{a}] as usize"),
            (Some(a), _) => format!("{anchors}[{a}] as usize + {}", sum.operand()),
        }
    }
}

/// Whether every field of `s` in place is fixed-width, in every version.
pub fn all_fixed(s: &Struct) -> bool {
    s.fields
        .iter()
        .all(|f| f.inline_versions().intersect(s.versions).is_empty() || f.ty.fixed_width().is_some())
}

/// Whether every field of `s` in place in version `v` is fixed-width.
pub fn all_fixed_in(s: &Struct, v: i16) -> bool {
    s.fields.iter().all(|f| !f.inline_versions().contains(v) || f.ty.fixed_width().is_some())
}

/// The bytes of the fixed-width fields in place in version `v`.
pub fn fixed_bytes(s: &Struct, v: i16) -> usize {
    s.fields.iter().filter(|f| f.inline_versions().contains(v)).map(|f| f.ty.fixed_width().unwrap_or(0)).sum()
}

/// The bytes of fixed-width fields of an all-fixed struct, by version.
pub fn fixed_sum(s: &Struct, ver: &Ver) -> String {
    ver.by_version(s.versions, |v| fixed_bytes(s, v), |n| n.to_string()).text
}

/// The fixed size of the struct in version `v` for the view decoder, if it has one.
pub fn view_fixed_size(cx: &Ctx, s: &Struct, v: i16) -> Option<usize> {
    if cx.msg.flexible.contains(v) {
        return None;
    }
    let mut n = 0;
    for f in &s.fields {
        if f.inline_versions().contains(v) {
            n += f.ty.fixed_width()?;
        }
    }
    Some(n)
}

/// The size every value of `s` has in version `v`, when it is fixed and the encoder has
/// nothing to check.
pub fn encode_fixed_size(cx: &Ctx, s: &Struct, v: i16) -> Option<usize> {
    let n = view_fixed_size(cx, s, v)?;
    let needs_check = s.fields.iter().any(|f| !f.ignorable && !f.versions.contains(v));
    if needs_check { None } else { Some(n) }
}

/// Groups of consecutive fixed-width fields, whatever their versions: `(start, end)` index
/// pairs over `fields`; any other field is a group of one.
pub fn fixed_groups(fields: &[F]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < fields.len() {
        let mut j = i + 1;
        if fields[i].f.ty.fixed_width().is_some() {
            while j < fields.len() && fields[j].f.ty.fixed_width().is_some() {
                j += 1;
            }
        }
        out.push((i, j));
        i = j;
    }
    out
}
