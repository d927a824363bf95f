//! The value types and their encoders: the first half of `src/codec/messages/<api>.rs`.
//!
//! Sizing and writing are emitted from the same walk over the fields.

use std::fmt::Write as _;

use super::layout::{self, encode_fixed_size};
use super::{Ctx, F, doc, known_tags, q, scalar_method, snake, vectored};
use crate::code::{Block, Else, FnBuilder, Stmt, Ver, paren_or};
use crate::schema::{Struct, Type};
use crate::versions::{self, Cond, Versions};

/// Every struct of the message, its `impl_body!`, and every encoder.
pub fn emit(cx: &Ctx) -> String {
    let mut out = String::new();
    for s in &cx.msg.structs {
        out.push_str(&data_struct(cx, s));
    }
    out.push_str(&root_items(cx));
    for s in &cx.msg.structs {
        out.push_str(&encoder(cx, s));
    }
    out
}

/// The defaults that `#[derive(Default)]` gives.
fn is_type_default(d: &str) -> bool {
    matches!(d, "0" | "false" | "0.0" | "Str::Borrowed(\"\")" | "List::Borrowed(&[])" | "None" | "Uuid::ZERO")
        || d.ends_with("::default()")
}

fn data_struct(cx: &Ctx, s: &Struct) -> String {
    let mut out = String::new();
    let name = cx.data_name(&s.name);
    let fields = F::all(s);
    out.push_str(&doc(&s.about, ""));
    if cx.is_root(s) {
        writeln!(
            out,
            "///\n/// Versions {}; flexible from version {}. Decode it without allocating with [`{}View`].",
            cx.msg.valid, cx.msg.flexible.lo, s.name
        )
        .unwrap();
    }
    // Default is derived unless a field's default differs from its type's.
    let derived = fields.iter().all(|f| is_type_default(&cx.data_default(f)));
    // `float64` fields compare by their bits (below), so that equality is reflexive with
    // NaN; every other struct derives it.
    let floats = s.fields.iter().any(|f| f.ty == Type::Float64);
    let eq = if floats { "" } else { ", PartialEq, Eq" };
    let default = if derived { ", Default" } else { "" };
    writeln!(out, "#[derive(Clone, Debug{default}{eq})]").unwrap();
    out.push_str("#[cfg_attr(feature = \"arbitrary\", derive(arbitrary::Arbitrary))]\n");
    writeln!(out, "pub struct {name} {{").unwrap();
    for f in &fields {
        // The description, then the schema's facts, in one paragraph.
        out.push_str(&doc(&format!("{} {}", f.f.about, field_facts(f)), "    "));
        writeln!(out, "    pub {}: {},", f.ident, cx.data_ty(f)).unwrap();
    }
    if cx.has_tags(s) {
        out.push_str(
            "    /// Tagged fields this schema does not know, kept so that they can be written back.\n",
        );
        out.push_str("    pub unknown_tagged_fields: List<'a, RawTaggedField<'a>>,\n");
    }
    out.push_str("}\n\n");

    let generics = cx.generics(s, "'a");
    if floats {
        out.push_str(&bitwise_eq(cx, s, &name, &generics));
    }
    if !derived {
        writeln!(
            out,
            "impl{generics} Default for {name} {{\n    fn default() -> Self {{\n        {} {{",
            s.name
        )
        .unwrap();
        for f in &fields {
            writeln!(out, "            {}: {},", f.ident, cx.data_default(f)).unwrap();
        }
        if cx.has_tags(s) {
            out.push_str("            unknown_tagged_fields: List::Borrowed(&[]),\n");
        }
        out.push_str("        }\n    }\n}\n\n");
    }
    out
}

/// `PartialEq` and `Eq` for a struct with `float64` fields, which compare by their bits
/// (`f64::to_bits`): NaN equals a NaN of the same bits, and `0.0` differs from `-0.0`.
fn bitwise_eq(cx: &Ctx, s: &Struct, name: &str, generics: &str) -> String {
    let mut terms: Vec<String> = s
        .fields
        .iter()
        .map(|f| {
            let x = snake(&f.name);
            // A float64 is never nullable (the schema check allows null only on strings,
            // bytes, records, arrays and structs).
            if f.ty == Type::Float64 {
                format!("self.{x}.to_bits() == other.{x}.to_bits()")
            } else {
                format!("self.{x} == other.{x}")
            }
        })
        .collect();
    if cx.has_tags(s) {
        terms.push("self.unknown_tagged_fields == other.unknown_tagged_fields".into());
    }
    let mut out = String::new();
    out.push_str(
        "/// Compares `float64` fields by their bits, so that every value equals itself (NaN included).\n",
    );
    writeln!(out, "impl{generics} PartialEq for {name} {{").unwrap();
    out.push_str("    fn eq(&self, other: &Self) -> bool {\n");
    writeln!(out, "        {}", terms.join("\n            && ")).unwrap();
    out.push_str("    }\n}\n\n");
    writeln!(out, "impl{generics} Eq for {name} {{}}\n").unwrap();
    out
}

/// The facts of the schema about a field, for its doc.
fn field_facts(f: &F) -> String {
    let mut s = format!("(`{}`, versions {}", f.f.ty.schema_name(), f.f.versions);
    if !f.f.nullable.is_empty() {
        write!(s, "; nullable in {}", f.f.nullable).unwrap();
    }
    if let Some(tag) = f.f.tag {
        write!(s, "; tagged (tag {tag}) in {}", f.f.tagged).unwrap();
    }
    if let Some(d) = &f.f.default {
        write!(s, "; default `{d}`").unwrap();
    }
    if f.f.ignorable {
        s.push_str("; ignorable");
    }
    if f.f.map_key {
        s.push_str("; map key");
    }
    s.push_str(".)");
    s
}

/// `impl_body!`: the body's key, direction and versions.
fn root_items(cx: &Ctx) -> String {
    let m = cx.msg;
    let hi = |v: Versions| if v.hi == i16::MAX { "i16::MAX".to_string() } else { v.hi.to_string() };
    format!(
        "impl_body!({} {{ key: {}, request: {}, versions: ({}, {}), flexible: ({}, {}) }});\n\n",
        m.name,
        m.api_key,
        m.is_request,
        m.valid.lo,
        hi(m.valid),
        m.flexible.lo,
        hi(m.flexible)
    )
}

/// The `flexible` argument of the wire calls for field `f`: a literal where every version
/// that has the field is flexible, or none is, even if the struct's versions differ.
pub fn field_flex(cx: &Ctx, f: &F, ver: &Ver) -> String {
    match versions::cond(cx.msg.flexible, f.present(), "") {
        Cond::Always => "true".into(),
        Cond::Never => "false".into(),
        Cond::If(_) => cx.flex_expr(f.s, ver),
    }
}

/// The size of field `f` held in `x`. In `size` (`in_write` false) an error returns; in
/// `write` the expression is the `Result` itself, which the tagged field's header needs.
fn size_expr(cx: &Ctx, f: &F, x: &str, in_write: bool, ver: &Ver) -> String {
    let p = q(&f.path);
    let t = if in_write { "" } else { "?" };
    let ok = |e: String| if in_write { format!("Ok({e})") } else { e };
    let plain = |inner: &str| -> String {
        match &f.f.ty {
            Type::String => format!("wire::string_size({inner}.len(), {}, {p}){t}", field_flex(cx, f, ver)),
            Type::Bytes | Type::Records => {
                format!("wire::bytes_size({inner}.len(), {}, {p}){t}", field_flex(cx, f, ver))
            }
            Type::Array(_) => format!("encode::array_size(&{inner}, {}, {p}){t}", ver.value()),
            Type::Struct(_) => format!("{inner}.size({}, {p}){t}", ver.value()),
            ty => ok(ty.fixed_width().unwrap().to_string()),
        }
    };
    if !f.nullable {
        return plain(x);
    }
    match &f.f.ty {
        Type::Array(_) => format!("encode::nullable_array_size({x}.as_deref(), {}, {p}){t}", ver.value()),
        Type::Struct(_) if in_write => {
            format!("match &{x} {{ Some(v) => {}.map(|n| n + 1), None => Ok(1) }}", plain("v"))
        }
        Type::Struct(_) => format!("match &{x} {{ Some(v) => 1 + {}, None => 1 }}", plain("v")),
        ty => {
            let wide = !matches!(ty, Type::String);
            let null = ok(format!("wire::null_size({}, {wide})", field_flex(cx, f, ver)));
            format!("match &{x} {{ Some(v) => {}, None => {null} }}", plain("v"))
        }
    }
}

fn write_stmt(cx: &Ctx, f: &F, x: &str, ver: &Ver) -> String {
    let flex = || field_flex(cx, f, ver);
    match (&f.f.ty, f.nullable) {
        (Type::String, false) => format!("w.str(&{x}, {});", flex()),
        (Type::String, true) => format!("w.nullable_str({x}.as_deref(), {});", flex()),
        (Type::Bytes | Type::Records, false) => format!("w.bytes(&{x}, {});", flex()),
        (Type::Bytes | Type::Records, true) => format!("w.nullable_bytes({x}.as_deref(), {});", flex()),
        (Type::Array(_), false) => format!("encode::write_array(w, &{x}, {});", ver.value()),
        (Type::Array(_), true) => {
            format!("encode::write_nullable_array(w, {x}.as_deref(), {});", ver.value())
        }
        (Type::Struct(_), false) => format!("{x}.write(w, {});", ver.value()),
        (Type::Struct(_), true) => {
            format!(
                "match &{x} {{ Some(v) => {{ w.i8(1); v.write(w, {}); }} None => w.i8(-1), }}",
                ver.value()
            )
        }
        (ty, _) => format!("w.{}({x});", scalar_method(ty)),
    }
}

/// The check, in the size step, that a nullable field written in place is not null in a
/// version without null.
fn null_check(f: &F, x: &str, ver: &Ver) -> Option<Stmt> {
    if !f.nullable {
        return None;
    }
    let err = format!("return Err(EncodeError::NullNotAllowed {{ field: {} }});", q(&f.path));
    match ver.cond_not(f.f.nullable, f.inline) {
        Cond::Never => None,
        Cond::Always => Some(Stmt::when(format!("{x}.is_none()"), Stmt::line(err))),
        Cond::If(c) => Some(Stmt::when(format!("{x}.is_none() && {c}"), Stmt::line(err))),
    }
}

/// The check that a non-ignorable field the version cannot carry holds its default, in
/// the versions where `absent` holds (`None`: every version it is checked in).
fn absent_check(cx: &Ctx, f: &F, absent: Option<&str>, ver: &Ver) -> Option<Stmt> {
    if f.f.ignorable {
        return None;
    }
    let mut test = cx.non_default(f, &format!("self.{}", f.ident));
    if let Some(c) = absent {
        test = format!("{c} && {}", paren_or(&test));
    }
    let err = format!("return Err(encode::not_in_version({}, {}));", q(&f.path), ver.value());
    Some(Stmt::when(test, Stmt::line(err)))
}

/// The absent check of `f` in the versions in which it is not tagged.
fn absent_when_untagged(cx: &Ctx, f: &F, ver: &Ver) -> Option<Stmt> {
    match ver.cond_not(f.tagged, f.s.versions) {
        Cond::Never => None,
        Cond::Always => absent_check(cx, f, None, ver),
        Cond::If(c) => absent_check(cx, f, Some(&c), ver),
    }
}

/// The test, in `write`, that the value holds something the version cannot carry: the
/// checks of [`absent_check`] and [`null_check`] as one condition, so that `write` rejects
/// the value (the size step, run then, names the field).
fn refusal(cx: &Ctx, s: &Struct, ver: &Ver) -> Option<String> {
    // Each test under its version condition (`None`: every version), grouped by condition.
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut add = |cond: Option<String>, test: String| match groups.iter_mut().find(|(c, _)| *c == cond) {
        Some((_, tests)) => tests.push(test),
        None => groups.push((cond, vec![test])),
    };
    for f in F::all(s) {
        let x = format!("self.{}", f.ident);
        if !f.f.ignorable {
            let test = cx.non_default(&f, &x);
            match ver.cond_not(f.present(), s.versions) {
                Cond::Never => {}
                Cond::Always => add(None, test),
                Cond::If(c) => add(Some(c), test),
            }
        }
        if f.nullable {
            let null = format!("{x}.is_none()");
            match (ver.cond(f.inline, s.versions), ver.cond_not(f.f.nullable, f.inline)) {
                (Cond::Never, _) | (_, Cond::Never) => {}
                (Cond::Always, Cond::Always) => add(None, null),
                (Cond::If(c), Cond::Always) | (Cond::Always, Cond::If(c)) => add(Some(c), null),
                (Cond::If(a), Cond::If(b)) => add(Some(format!("{a} && {b}")), null),
            }
        }
    }
    let terms: Vec<String> = groups
        .into_iter()
        .map(|(cond, tests)| {
            let any = tests.join(" || ");
            match cond {
                Some(c) => format!("{c} && {}", paren_or(&any)),
                None => any,
            }
        })
        .collect();
    match terms.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(many.iter().map(|t| format!("({t})")).collect::<Vec<_>>().join(" || ")),
    }
}

/// The test of whether tagged field `f` is written: it differs from its default, in a
/// version in which it is tagged.
fn tag_written(cx: &Ctx, f: &F, ver: &Ver) -> String {
    let test = cx.non_default(f, &format!("self.{}", f.ident));
    match ver.cond(f.tagged, f.s.versions) {
        Cond::If(c) => format!("{c} && {test}"),
        _ => test,
    }
}

fn encoder(cx: &Ctx, s: &Struct) -> String {
    let mut out = format!("impl Encode for {}{} {{\n", s.name, cx.generics(s, "'_"));
    out.push_str(&size_fn(cx, s));
    out.push('\n');
    out.push_str(&write_fn(cx, s));
    if let Some(f) = fixed_size_fn(cx, s) {
        out.push('\n');
        out.push_str(&f);
    }
    out.push_str("}\n\n");
    out
}

fn size_fn(cx: &Ctx, s: &Struct) -> String {
    let fb = FnBuilder::method("size")
        .inline()
        .ver_param()
        .unused("&'static str")
        .returns("Result<usize, EncodeError>");
    let ver = &fb.ver;
    let mut body = Block::new();
    let mut fixed = 0usize;
    let mut adds = false;
    for f in F::all(s) {
        let x = format!("self.{}", f.ident);
        let is_fixed = f.f.ty.fixed_width().is_some();
        let present = |ver: &Ver| {
            let mut b = Block::new();
            if let Some(c) = null_check(&f, &x, ver) {
                b.push(c);
            }
            b.line(format!("n += {};", size_expr(cx, &f, &x, false, ver)));
            b
        };
        match ver.cond(f.inline, s.versions) {
            Cond::Always if is_fixed && !f.nullable => fixed += f.f.ty.fixed_width().unwrap(),
            Cond::Always => {
                body.extend(present(ver));
                adds = true;
            }
            Cond::Never => {
                if let Some(a) = absent_when_untagged(cx, &f, ver) {
                    body.push(a);
                }
            }
            Cond::If(c) => {
                let then = present(ver);
                adds = true;
                let otherwise = absent_when_untagged(cx, &f, ver).map(|a| Else::If(Box::new(a)));
                body.push(Stmt::If { cond: c, then, otherwise });
            }
        }
    }
    let tagged = cx.tagged_fields(s);
    let mut tags = Block::new();
    let section = q(&format!("{}._tagged_fields", s.name));
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        adds = true;
        if tagged.is_empty() {
            tags.line(format!("n += wire::raw_tagged_fields_size(&self.unknown_tagged_fields, {section})?;"));
        } else {
            tags.line("let mut tags = TaggedSize::new();");
            for f in &tagged {
                let test = tag_written(cx, f, ver);
                let size = size_expr(cx, f, &format!("self.{}", f.ident), false, ver);
                let add = format!("tags.field({}, {size}, {})?;", f.tag(), q(&f.path));
                tags.push(Stmt::when(test, Stmt::line(add)));
            }
            let known = known_tags(&tagged);
            tags.line(format!("n += tags.finish(&self.unknown_tagged_fields, &[{known}], {section})?;"));
        }
    }
    let mut all = Block::new();
    if adds {
        all.line(format!("let mut n = Size::new({fixed});"));
        all.extend(body);
        all.extend(cx.if_flexible(s, ver, tags));
        all.line(format!("n.total({})", q(&s.name)));
    } else {
        all.extend(body);
        all.line(format!("Ok({fixed})"));
    }
    fb.finish(all)
}

/// `write`; for a struct with records, the vectored encoder's `write_with` with the
/// records copied in place (`super::vectored`), so that the struct's write is emitted once.
fn write_fn(cx: &Ctx, s: &Struct) -> String {
    let fb = FnBuilder::method("write").inline().param("w", "&mut Writer<'_>").ver_param();
    if vectored::has_records(cx, s) {
        let call = format!("self.write_with(w, &mut vectored::Copied, {});", fb.ver.value());
        return fb.finish(Stmt::line(call));
    }
    let body = write_body(cx, s, &fb.ver, &|_, _| None);
    fb.finish(body)
}

/// The statements of `write`: every field in order, then the tagged section. `special`
/// writes a field its own way where it returns a statement (the fields that hold records,
/// `super::vectored`).
pub fn write_body(cx: &Ctx, s: &Struct, ver: &Ver, special: &dyn Fn(&F, &Ver) -> Option<String>) -> Block {
    let fields = F::all(s);
    let mut body = Block::new();
    if let Some(test) = refusal(cx, s, ver) {
        body.push(Stmt::when(test, Stmt::line("w.reject();")));
    }
    for (i, j) in layout::fixed_groups(&fields) {
        let f = &fields[i];
        if j - i == 1 || f.f.ty.fixed_width().is_none() {
            let stmt =
                special(f, ver).unwrap_or_else(|| write_stmt(cx, f, &format!("self.{}", f.ident), ver));
            body.under(&ver.cond(f.inline, s.versions), Stmt::line(stmt));
            continue;
        }
        // Consecutive fixed-width fields are written as one chunk per version: the fields
        // each version has, under one bounds check (a field present in some versions only
        // splits the chunk by version instead of writing it on its own).
        let cases = versions::runs(s.versions, |v| {
            (i..j).filter(|&k| fields[k].inline.contains(v)).collect::<Vec<usize>>()
        });
        let covered = cases.iter().all(|(_, ks)| !ks.is_empty());
        let cases: Vec<(Versions, String)> = cases
            .iter()
            .filter(|(_, ks)| !ks.is_empty())
            .map(|(range, ks)| (*range, fixed_chunk(cx, &fields, ks, ver)))
            .collect();
        // Latest first, so where the cases cover every version each needs only its lowest.
        let cond = |range: Versions| {
            let range = if covered { Versions::new(range.lo, s.versions.hi) } else { range };
            match ver.cond(range, s.versions) {
                Cond::If(c) => c,
                _ => unreachable!("a version-dependent chunk with a case in every version"),
            }
        };
        let Some(((first_range, first), later)) = cases.split_first() else { continue };
        if later.is_empty() {
            body.under(&ver.cond(*first_range, s.versions), Stmt::line(first.clone()));
            continue;
        }
        // An `if` chain; the earliest case is the `else` when the cases cover every version.
        let mut rest = if covered {
            Else::Block(Stmt::line(first.clone()).into())
        } else {
            Else::If(Box::new(Stmt::when(cond(*first_range), Stmt::line(first.clone()))))
        };
        let (last, middle) = later.split_last().unwrap();
        for (range, stmt) in middle {
            let node =
                Stmt::If { cond: cond(*range), then: Stmt::line(stmt.clone()).into(), otherwise: Some(rest) };
            rest = Else::If(Box::new(node));
        }
        body.push(Stmt::If {
            cond: cond(last.0),
            then: Stmt::line(last.1.clone()).into(),
            otherwise: Some(rest),
        });
    }
    let tagged = cx.tagged_fields(s);
    let mut tags = Block::new();
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        if tagged.is_empty() {
            tags.line("w.raw_tagged_fields(&self.unknown_tagged_fields);");
        } else {
            tags.line("let unknown = self.unknown_tagged_fields.as_slice();");
            let mut written = Vec::new();
            for f in &tagged {
                tags.line(format!("let write_{} = {};", f.bare(), tag_written(cx, f, ver)));
                written.push(format!("usize::from(write_{})", f.bare()));
            }
            let known = known_tags(&tagged);
            tags.line(format!("w.tag_count(unknown, &[{known}], {});", written.join(" + ")));
            tags.line("let mut next = 0;");
            for f in &tagged {
                let x = format!("self.{}", f.ident);
                let tag = f.tag();
                let mut then = Block::new();
                then.line(format!("w.raw_tags_below(unknown, &mut next, Some({tag}));"));
                then.line(match f.f.ty.fixed_width() {
                    Some(n) => format!("w.tag_header({tag}, {n});"),
                    None => format!(
                        "match {} {{ Ok(len) => w.tag_header({tag}, len), Err(_) => w.reject(), }}",
                        size_expr(cx, f, &x, true, ver)
                    ),
                });
                then.line(write_stmt(cx, f, &x, ver));
                tags.push(Stmt::when(format!("write_{}", f.bare()), then));
            }
            tags.line("w.raw_tags_below(unknown, &mut next, None);");
        }
    }
    body.extend(cx.if_flexible(s, ver, tags));
    body
}

/// The fixed-width fields `ks` of `fields` written as one chunk (`Writer::fixed`), or the
/// one field's own write.
fn fixed_chunk(cx: &Ctx, fields: &[F], ks: &[usize], ver: &Ver) -> String {
    if let [k] = ks {
        let f = &fields[*k];
        return write_stmt(cx, f, &format!("self.{}", f.ident), ver);
    }
    let total: usize = ks.iter().map(|&k| fields[k].f.ty.fixed_width().unwrap()).sum();
    let mut chunk = format!("w.fixed(|b: &mut [u8; {total}]| {{");
    let mut at = 0;
    for &k in ks {
        let g = &fields[k];
        let width = g.f.ty.fixed_width().unwrap();
        let bytes = match g.f.ty {
            Type::Bool => format!("[u8::from(self.{})]", g.ident),
            Type::Uuid => format!("self.{}.0", g.ident),
            _ => format!("self.{}.to_be_bytes()", g.ident),
        };
        write!(chunk, "b[{at}..{}].copy_from_slice(&{bytes});", at + width).unwrap();
        at += width;
    }
    chunk.push_str("});");
    chunk
}

/// `fixed_size`, where some version of `s` has a size known without the value.
fn fixed_size_fn(cx: &Ctx, s: &Struct) -> Option<String> {
    let fb = FnBuilder::new("fixed_size").inline().ver_param().returns("Option<usize>");
    let show = |v: &Option<usize>| v.map_or("None".to_string(), |n| format!("Some({n})"));
    let size = fb.ver.by_version(s.versions, |v| encode_fixed_size(cx, s, v), show);
    (size.constant() != Some(&None)).then(|| fb.finish(Stmt::line(size.text)))
}
