//! The encoders around borrowed records (`crate::vectored` in kwire): for every struct
//! that holds a `records` field at some depth, `EncodeVectored` (`count_parts` and
//! `write_with`), and `vectored_body!` for the body. Nothing for other messages.
//!
//! `write_with` is the struct's one write (the walk of [`data::write_body`]), with the
//! fields that hold records written through a `RecordsOut`: `Encode::write` calls it with
//! `vectored::Copied`, which copies the records into the buffer, and the vectored encoders
//! with their own, which hands them out as parts; a struct or array of structs with records
//! passes it on. `count_parts` visits the same
//! fields; since every field that is present writes at least one byte, it only needs to
//! know, run by run, whether any of the other fields is present in the version.

use std::fmt::Write as _;

use super::{Ctx, F, data};
use crate::code::{Block, FnBuilder, Stmt, Ver};
use crate::schema::{Struct, Type};
use crate::versions::{Cond, Versions};

/// The vectored encoders of the message, or nothing when it has no `records` field.
pub fn emit(cx: &Ctx) -> String {
    let root = &cx.msg.structs[0];
    if !has_records(cx, root) {
        return String::new();
    }
    let mut out = String::new();
    writeln!(out, "vectored_body!({});\n", root.name).unwrap();
    for s in cx.msg.structs.iter().filter(|s| has_records(cx, s)) {
        for f in F::all(s).iter().filter(|f| type_has_records(cx, &f.f.ty)) {
            assert!(f.tagged.is_empty(), "{}: a tagged field with records is not supported", f.path);
            let nullable_array = f.nullable && matches!(f.f.ty, Type::Array(_));
            assert!(!nullable_array, "{}: a nullable array with records is not supported", f.path);
        }
        writeln!(out, "impl EncodeVectored for {}{} {{", s.name, cx.generics(s, "'_")).unwrap();
        out.push_str(&count_fn(cx, s));
        out.push('\n');
        out.push_str(&write_fn(cx, s));
        out.push_str("}\n\n");
    }
    out
}

/// Whether a value of `s` holds a `records` field at some depth.
pub fn has_records(cx: &Ctx, s: &Struct) -> bool {
    s.fields.iter().any(|f| type_has_records(cx, &f.ty))
}

fn type_has_records(cx: &Ctx, ty: &Type) -> bool {
    match ty {
        Type::Records => true,
        Type::Struct(n) => has_records(cx, cx.msg.find(n)),
        Type::Array(t) => type_has_records(cx, t),
        _ => false,
    }
}

/// `count_parts`: the records fields in order, and `c.head()` for each run of other
/// fields in the versions where one of them is present.
fn count_fn(cx: &Ctx, s: &Struct) -> String {
    let fb = FnBuilder::method("count_parts").inline().param("c", "&mut PartCount").ver_param();
    let ver = &fb.ver;
    let possible = s.versions.intersect(cx.msg.valid);
    let mut body = Block::new();
    // The versions in which some field of the current run of fields without records is there.
    let mut run: Vec<i16> = Vec::new();
    for f in F::all(s) {
        if !type_has_records(cx, &f.f.ty) {
            run.extend(f.inline.intersect(possible).iter());
            continue;
        }
        head(&mut body, &mut run, possible, ver);
        body.under(&ver.cond(f.inline, s.versions), Stmt::line(count_stmt(&f, ver)));
    }
    // The tagged section, in the flexible versions.
    run.extend(cx.flexible_in(s).intersect(possible).iter());
    head(&mut body, &mut run, possible, ver);
    fb.finish(body)
}

/// `c.head()` where a field of `run` is there; empties `run`.
fn head(body: &mut Block, run: &mut Vec<i16>, possible: Versions, ver: &Ver) {
    run.sort_unstable();
    run.dedup();
    // The versions as ranges, then as one condition.
    let mut ranges: Vec<Versions> = Vec::new();
    for &v in run.iter() {
        match ranges.last_mut() {
            Some(r) if r.hi + 1 == v => r.hi = v,
            _ => ranges.push(Versions::new(v, v)),
        }
    }
    run.clear();
    let conds: Vec<Cond> = ranges.iter().map(|&r| ver.cond(r, possible)).collect();
    let cond = if conds.iter().any(|c| matches!(c, Cond::Always)) {
        Cond::Always
    } else {
        let tests: Vec<String> =
            conds.into_iter().filter_map(|c| if let Cond::If(t) = c { Some(t) } else { None }).collect();
        if tests.is_empty() { Cond::Never } else { Cond::If(tests.join(" || ")) }
    };
    body.under(&cond, Stmt::line("c.head();"));
}

/// The count of a field that holds records.
fn count_stmt(f: &F, ver: &Ver) -> String {
    let x = format!("self.{}", f.ident);
    match (&f.f.ty, f.nullable) {
        (Type::Records, true) => format!("c.records({x}.as_deref());"),
        (Type::Records, false) => format!("c.records(Some({x}.as_slice()));"),
        (Type::Array(_), _) => format!("vectored::count_array(c, &{x}, {});", ver.value()),
        (Type::Struct(_), true) => {
            format!("c.head();\nif let Some(v) = &{x} {{\n    v.count_parts(c, {});\n}}", ver.value())
        }
        (Type::Struct(_), false) => format!("{x}.count_parts(c, {});", ver.value()),
        (ty, _) => unreachable!("{}: {ty:?} holds no records", f.path),
    }
}

/// `write_with`: the struct's write, with the fields that hold records written through `out`.
fn write_fn(cx: &Ctx, s: &Struct) -> String {
    let fb = FnBuilder::new("write_with<'b, 'w, R: RecordsOut<'b, 'w>>")
        .inline()
        .receiver("&'b self")
        .param("w", "&mut Writer<'w>")
        .param("out", "&mut R")
        .ver_param();
    let special = |f: &F, ver: &Ver| -> Option<String> {
        if !type_has_records(cx, &f.f.ty) {
            return None;
        }
        let x = format!("self.{}", f.ident);
        Some(match (&f.f.ty, f.nullable) {
            (Type::Records, true) => {
                format!("out.records(w, {x}.as_deref(), {});", data::field_flex(cx, f, ver))
            }
            (Type::Records, false) => {
                format!("out.records(w, Some({x}.as_slice()), {});", data::field_flex(cx, f, ver))
            }
            (Type::Array(_), _) => format!("vectored::write_array(w, out, &{x}, {});", ver.value()),
            (Type::Struct(_), true) => format!(
                "match &{x} {{ Some(v) => {{ w.i8(1); v.write_with(w, out, {}); }} None => w.i8(-1), }}",
                ver.value()
            ),
            (Type::Struct(_), false) => format!("{x}.write_with(w, out, {});", ver.value()),
            (ty, _) => unreachable!("{}: {ty:?} holds no records", f.path),
        })
    };
    let body = data::write_body(cx, s, &fb.ver, &special);
    fb.finish(body)
}
