//! The zero-copy views: the second half of `src/codec/messages/<api>.rs`.
//!
//! A body's view checks every byte once (`checked`) and keeps the offsets that follow
//! variable-length fields; an element's view (`ElementImpl`) checks the same way, then
//! finds its fields again from the checked bytes (`at`).

use std::fmt::Write as _;

use super::layout::{StructLayout, all_fixed, all_fixed_in, fixed_bytes, fixed_sum};
use super::{Ctx, F, known_tags, lower_first, q, scalar_method};
use crate::code::{Block, Else, FnBuilder, Stmt, Ver};
use crate::schema::{Struct, Type};
use crate::versions::{Cond, Versions};

/// Every view of the message.
pub fn emit(cx: &Ctx) -> String {
    cx.msg.structs.iter().map(|s| view(cx, s)).collect()
}

/// `if c { a } else { b }` as an expression.
fn if_else(c: &str, a: &str, b: &str) -> String {
    format!("if {c} {{ {a} }} else {{ {b} }}")
}

/// Whether the view's default of `f` is `None`.
fn default_is_none(f: &F) -> bool {
    (f.nullable && f.f.default.as_deref() == Some("null")) || matches!(f.f.ty, Type::Struct(_))
}

/// The default value of `f` as a view expression.
fn view_default(cx: &Ctx, f: &F, ver: &Ver) -> String {
    if default_is_none(f) {
        return "None".into();
    }
    let d = f.f.default.as_deref();
    let v = match &f.f.ty {
        Type::String => q(d.unwrap_or("")),
        Type::Bytes => "&[]".into(),
        Type::Records => "RecordBatches::new(&[])".into(),
        Type::Array(_) => format!("ArrayView::empty({})", ver.value()),
        _ => cx.data_default(f),
    };
    if f.nullable { format!("Some({v})") } else { v }
}

/// A field read from a view: an expression of the accessor's type, or one known to be
/// `Some` of an inner expression (which a tagged read maps into the tag's `Option`).
enum Read {
    Plain(String),
    Some(String),
}

impl Read {
    fn expr(self) -> String {
        match self {
            Read::Plain(e) => e,
            Read::Some(e) => format!("Some({e})"),
        }
    }
}

/// Reads field `f` at offset `off` of `src` (a view of checked bytes); `nullable_now` says
/// whether it can be null there.
fn read(cx: &Ctx, f: &F, src: &str, off: &str, nullable_now: &Cond, ver: &Ver) -> Read {
    // Both forms of a type use the same parts of the version, so building the one left
    // unused records nothing the other would not.
    let pick = |plain: String, nullable: String| match (f.nullable, nullable_now) {
        (false, _) => Read::Plain(plain),
        (true, Cond::Never) => Read::Some(plain),
        (true, _) => Read::Plain(nullable),
    };
    match &f.f.ty {
        Type::String => {
            let flex = cx.flex_expr(f.s, ver);
            pick(format!("{src}.str({off}, {flex})"), format!("{src}.nullable_str({off}, {flex})"))
        }
        Type::Bytes => {
            let flex = cx.flex_expr(f.s, ver);
            pick(format!("{src}.bytes_at({off}, {flex})"), format!("{src}.nullable_bytes({off}, {flex})"))
        }
        Type::Records => {
            let flex = cx.flex_expr(f.s, ver);
            pick(
                format!("RecordBatches::new({src}.bytes_at({off}, {flex}))"),
                format!("{src}.nullable_bytes({off}, {flex}).map(RecordBatches::new)"),
            )
        }
        Type::Array(_) => {
            let v = ver.value();
            pick(
                format!("ArrayView::at({src}, {off}, {v})"),
                format!("ArrayView::nullable_at({src}, {off}, {v})"),
            )
        }
        Type::Struct(n) => {
            let v = ver.value();
            let at = format!("{n}View::at({src}, {off}, {v}).0");
            let marked = if_else(
                &format!("{src}.i8({off}) < 0"),
                "None",
                &format!("Some({n}View::at({src}, {off} + 1, {v}).0)"),
            );
            match (f.nullable, nullable_now) {
                (false, _) if cx.optional_struct(f) => Read::Some(at),
                (false, _) => Read::Plain(at),
                (true, Cond::Never) => Read::Some(at),
                (true, Cond::Always) => Read::Plain(marked),
                (true, Cond::If(c)) => Read::Plain(if_else(c, &marked, &format!("Some({at})"))),
            }
        }
        ty => Read::Plain(format!("{src}.{}({off})", scalar_method(ty))),
    }
}

/// The statement checking field `f` with reader `r`.
pub(super) fn check(cx: &Ctx, f: &F, r: &str, ver: &Ver) -> Stmt {
    let p = q(&f.path);
    let nullable_now = if f.nullable { ver.cond(f.f.nullable, f.inline) } else { Cond::Never };
    // As in `read`, both forms use the same parts of the version.
    let pick = |plain: Stmt, nullable: Stmt| match &nullable_now {
        Cond::Always => nullable,
        Cond::Never => plain,
        Cond::If(c) => {
            Stmt::If { cond: c.clone(), then: nullable.into(), otherwise: Some(Else::Block(plain.into())) }
        }
    };
    let line = |s: String| Stmt::line(s);
    match &f.f.ty {
        Type::String => {
            let flex = cx.flex_expr(f.s, ver);
            pick(
                line(format!("{r}.check_str({flex}, {p})?;")),
                line(format!("{r}.check_nullable_str({flex}, {p})?;")),
            )
        }
        Type::Bytes | Type::Records => {
            let flex = cx.flex_expr(f.s, ver);
            pick(
                line(format!("{r}.bytes({flex}, {p})?;")),
                line(format!("{r}.nullable_bytes({flex}, {p})?;")),
            )
        }
        Type::Array(_) => {
            let (elem, v) = (cx.view_elem_ty(f.elem()), ver.value());
            pick(
                line(format!("view::check_array::<{elem}>({r}, {v}, {p})?;")),
                line(format!("view::check_nullable_array::<{elem}>({r}, {v}, {p})?;")),
            )
        }
        Type::Struct(n) => {
            let check = format!("{n}View::check({r}, {}, {p})?;", ver.value());
            pick(line(check.clone()), Stmt::when(format!("{r}.i8({p})? >= 0"), line(check)))
        }
        ty => line(format!("{r}.take({}, {p})?;", ty.fixed_width().unwrap())),
    }
}

/// The expression for the offset after field `f`, which starts at `p` of `src`.
fn skip(cx: &Ctx, f: &F, src: &str, ver: &Ver) -> String {
    let flex = || cx.flex_expr(f.s, ver);
    let elem = cx.view_elem_ty(f.elem());
    match &f.f.ty {
        Type::String => format!("{src}.skip_str(p, {})", flex()),
        Type::Bytes | Type::Records => format!("{src}.skip_bytes(p, {})", flex()),
        Type::Array(_) => format!("ArrayView::<{elem}>::skip({src}, p, {})", ver.value()),
        Type::Struct(n) => {
            let at = |off: &str| format!("{n}View::at({src}, {off}, {}).1", ver.value());
            let marked = || if_else(&format!("{src}.i8(p) < 0"), "p + 1", &at("p + 1"));
            let nullable_now = if f.nullable { ver.cond(f.f.nullable, f.inline) } else { Cond::Never };
            match nullable_now {
                Cond::Never => at("p"),
                Cond::Always => marked(),
                Cond::If(c) => if_else(&c, &marked(), &at("p")),
            }
        }
        _ => unreachable!("fixed-width fields are added to p"),
    }
}

fn view(cx: &Ctx, s: &Struct) -> String {
    let n = &s.name;
    let root = cx.is_root(s);
    let lay = StructLayout::of(cx, s);
    let k = lay.anchors;
    let mut out = String::new();
    if root {
        writeln!(out, "/// A zero-copy view of a {n} body: {}", lower_first(&s.about)).unwrap();
        out.push_str("///\n");
        writeln!(
            out,
            "/// [`{n}View::new`] checks the whole body; after that accessors and iterators cannot fail."
        )
        .unwrap();
    } else {
        writeln!(out, "/// A zero-copy view of a {n}: {}", lower_first(&s.about)).unwrap();
    }
    out.push_str("#[derive(Clone, Copy)]\n");
    // An element of fixed-width fields keeps its head cut once (`view::Fixed`), so that its
    // accessors need no bounds checks.
    let src_ty = match fixed_head(s) {
        Some(head) if !root => format!("view::Fixed<'a, {head}>"),
        _ => "Src<'a>".to_string(),
    };
    writeln!(out, "pub struct {n}View<'a> {{\n    src: {src_ty},\n    ver: Ver,").unwrap();
    if k > 0 {
        writeln!(out, "    /// Offsets of the fields after variable-length ones.\n    at: [u32; {k}],")
            .unwrap();
    }
    let texts = if root { Vec::new() } else { text_fields(s) };
    if !texts.is_empty() {
        writeln!(
            out,
            "    /// Where the strings' bytes start, found while finding the element's end.\n    text: [u32; {}],",
            texts.len()
        )
        .unwrap();
    }
    out.push_str("}\n\n");

    let fields = F::all(s);
    if root {
        let fast = if fast_eligible(cx, s) { "fast " } else { "" };
        writeln!(out, "body_view!({fast}{n}View, {n}{});", if k > 0 { ", at" } else { "" }).unwrap();
    }
    let names: Vec<&str> = fields.iter().map(|f| f.ident.as_str()).collect();
    writeln!(out, "view_common!({n}View {{ {} }});\n", names.join(", ")).unwrap();

    let mut items = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let text = texts.iter().position(|&t| t == i);
        items.push(accessor(cx, f, &lay, i, text));
        if root && !cx.msg.is_request && f.f.name == "ThrottleTimeMs" && lay.places[i].base.is_some() {
            items.push(throttle_time_at(f, &lay, i));
        }
    }
    if cx.has_tags(s) {
        items.push(unknown_tagged_fields(cx, s, &lay));
    }
    if root {
        items.push(check_pass(cx, s, &lay, true));
        items.extend(fast_pass(cx, s, &lay, true));
    }
    if !items.is_empty() {
        writeln!(out, "impl<'a> {n}View<'a> {{").unwrap();
        for item in items {
            out.push_str(&item);
        }
        out.push_str("}\n\n");
    }
    if !root {
        out.push_str(&element(cx, s, &lay));
    }
    out
}

/// The head a view of `s` cuts when every field of `s` is fixed-width: the most bytes they
/// take in any version.
fn fixed_head(s: &Struct) -> Option<usize> {
    all_fixed(s).then(|| s.versions.iter().map(|v| fixed_bytes(s, v)).max().unwrap_or(0))
}

/// The fields of an element view of `s` whose bytes it keeps (`text`), by their index in
/// `F::all(s)`: its strings that are never null, when `s` has variable-length fields.
fn text_fields(s: &Struct) -> Vec<usize> {
    if all_fixed(s) {
        return Vec::new();
    }
    let fields = F::all(s);
    (0..fields.len())
        .filter(|&i| fields[i].f.ty == Type::String && !fields[i].nullable && !fields[i].inline.is_empty())
        .collect()
}

/// The accessor of field `i`; `text` is its place in the element's kept strings, if it is one.
fn accessor(cx: &Ctx, f: &F, lay: &StructLayout, i: usize, text: Option<usize>) -> String {
    let s = f.s;
    let field = f.bare();
    let fb = FnBuilder::view_method(&f.ident)
        .doc(format!("See [`{n}::{field}`]({n}#structfield.{field}).", n = s.name))
        .inline()
        .public()
        .returns(cx.view_ty(f));
    let ver = &fb.ver;
    let inline_read = || {
        if let Some(t) = text {
            // The string ends where the offset stored after it says, or with the element.
            let next = lay.places.get(i + 1).map_or(lay.tags.base, |p| p.base);
            let end = match next {
                Some(a) if next != lay.places[i].base => format!("self.at[{a}] as usize"),
                _ => "self.src.bytes().len()".to_string(),
            };
            return format!("self.src.text(self.text[{t}] as usize, {end})");
        }
        let off = lay.places[i].expr(s, "self.at", f.inline, ver);
        let nullable_now = ver.cond(f.f.nullable, f.inline);
        read(cx, f, "self.src", &off, &nullable_now, ver).expr()
    };
    let tagged_read = || {
        let nullable_now = ver.cond(f.f.nullable, f.tagged);
        let read = read(cx, f, "v", "0", &nullable_now, ver);
        let tag_off = lay.tags.expr(s, "self.at", f.tagged, ver);
        let tag = format!("self.src.tag({tag_off}, {})", f.tag());
        // The tag's `Option<Reader>` becomes the accessor's value.
        let false_by_default = f.f.ty == Type::Bool && f.f.default.as_deref().is_none_or(|d| d == "false");
        match (read, default_is_none(f)) {
            (Read::Some(inner), true) => format!("{tag}.map(|v| {inner})"),
            (read, true) => format!("{tag}.and_then(|v| {})", read.expr()),
            (read, false) if false_by_default => format!("{tag}.is_some_and(|v| {})", read.expr()),
            (read, false) => format!("{tag}.map_or({}, |v| {})", view_default(cx, f, ver), read.expr()),
        }
    };
    let is_tagged = !f.tagged.is_empty();
    let body = match ver.cond(f.inline, s.versions) {
        Cond::Always => inline_read(),
        Cond::Never if !is_tagged => view_default(cx, f, ver),
        Cond::Never => match ver.cond(f.tagged, s.versions) {
            Cond::Always => tagged_read(),
            Cond::Never => view_default(cx, f, ver),
            Cond::If(c) => if_else(&c, &tagged_read(), &view_default(cx, f, ver)),
        },
        Cond::If(c) if !is_tagged => if_else(&c, &inline_read(), &view_default(cx, f, ver)),
        Cond::If(c) => if_else(&c, &inline_read(), &tagged_read()),
    };
    fb.finish(Stmt::line(body)) + "\n"
}

/// Where a response's top-level throttle time starts, when variable-length fields come
/// before it (see `answers.rs`, which asks only in the versions that have it).
fn throttle_time_at(f: &F, lay: &StructLayout, i: usize) -> String {
    let fb = FnBuilder::view_method("throttle_time_ms_at")
        .doc("Where [`Self::throttle_time_ms`] starts in the body, in a version that has it.")
        .crate_public()
        .returns("usize");
    let off = lay.places[i].expr(f.s, "self.at", f.inline, &fb.ver);
    fb.finish(Stmt::line(off)) + "\n"
}

fn unknown_tagged_fields(cx: &Ctx, s: &Struct, lay: &StructLayout) -> String {
    let fb = FnBuilder::view_method("unknown_tagged_fields")
        .doc("The tagged fields this schema does not know, as `(tag, bytes)` in wire order.")
        .inline()
        .public()
        .returns("TaggedIter<'a>");
    let ver = &fb.ver;
    let known = known_tags(&cx.tagged_fields(s));
    let tagged =
        || format!("self.src.tagged({}, &[{known}])", lay.tags.expr(s, "self.at", cx.flexible_in(s), ver));
    // The check pass found every tagged section of a struct other than the body empty
    // when the body is `uniform` (see `Ver::uniform`): no need to read it again.
    let uniform = format!("{}.uniform", ver.value());
    let body = match (cx.flex(s), cx.is_root(s)) {
        (Some(true), true) => tagged(),
        (Some(true), false) => if_else(&uniform, "TaggedIter::EMPTY", &tagged()),
        (_, true) => if_else(&ver.flexible(), &tagged(), "TaggedIter::EMPTY"),
        (_, false) => if_else(&format!("{} && !{uniform}", ver.flexible()), &tagged(), "TaggedIter::EMPTY"),
    };
    fb.finish(Stmt::line(body)) + "\n"
}

/// The closure handed to `Reader::tagged_fields`: one arm per known tag.
fn tag_match(cx: &Ctx, s: &Struct, tagged: &[F], ver: &Ver) -> String {
    let arms = cx.tag_arms(s, tagged, ver, |f| {
        let mut b = String::new();
        check(cx, f, "value", ver).render(0, &mut b);
        format!("{{ {b} }}")
    });
    format!("|tag, value| {{\n match tag {{\n{arms}_ => return Ok(false),\n}}\nOk(true)\n}}")
}

/// The field steps of a check pass (`checked`, `check` and `fast` share them), each under
/// its version condition: a run of fixed-width fields present in the same versions is one
/// step, `fixed(run)` (one bounds check), any other field `other(field)`. When the pass
/// keeps `k` offsets, it records each after the field that ends where it points.
fn check_steps(
    s: &Struct,
    lay: &StructLayout,
    ver: &Ver,
    k: usize,
    mut fixed: impl FnMut(&[F]) -> Stmt,
    mut other: impl FnMut(&F) -> Stmt,
) -> Block {
    let mut body = Block::new();
    if k > 0 {
        body.line("let start = r.pos();");
        body.line(format!("let mut at = [0; {k}];"));
    }
    let mut anchor = 0;
    let fields = F::all(s);
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        let c = ver.cond(f.inline, s.versions);
        if matches!(c, Cond::Never) {
            i += 1;
            continue;
        }
        if f.f.ty.fixed_width().is_some() {
            let mut j = i + 1;
            while j < fields.len() && fields[j].f.ty.fixed_width().is_some() && fields[j].inline == f.inline {
                j += 1;
            }
            body.under(&c, fixed(&fields[i..j]));
            i = j;
            continue;
        }
        body.under(&c, other(f));
        if anchor < k && lay.anchor_after(i, anchor) {
            body.line(format!("at[{anchor}] = (r.pos() - start) as u32;"));
            anchor += 1;
        }
        i += 1;
    }
    body
}

/// The bytes a run of fixed-width fields takes.
fn run_width(run: &[F]) -> usize {
    run.iter().map(|f| f.f.ty.fixed_width().unwrap()).sum()
}

/// The checking pass: every byte, once. A body's (`checked`) records the offsets its view
/// keeps; an element's (`ElementImpl::check`) records nothing, as `at` finds them again.
fn check_pass(cx: &Ctx, s: &Struct, lay: &StructLayout, root: bool) -> String {
    let n = &s.name;
    let k = if root { lay.anchors } else { 0 };
    let fb = if root {
        FnBuilder::new("checked")
            .inline()
            .param("r", "&mut Reader<'a>")
            .ver_param()
            .returns(format!("Result<[u32; {k}], DecodeError>"))
    } else {
        FnBuilder::new("check")
            .inline()
            .param("r", "&mut Reader<'a>")
            .ver_param()
            .unused("&'static str")
            .returns("Result<(), DecodeError>")
    };
    let ver = &fb.ver;
    let mut body = check_steps(
        s,
        lay,
        ver,
        k,
        |run| {
            let stmt = match run {
                [f] => format!("r.take({}, {})?;", f.f.ty.fixed_width().unwrap(), q(&f.path)),
                _ => {
                    let list: Vec<String> = run
                        .iter()
                        .map(|g| format!("({}, {})", q(&g.path), g.f.ty.fixed_width().unwrap()))
                        .collect();
                    format!("r.run({}, &[{}])?;", run_width(run), list.join(", "))
                }
            };
            Stmt::line(stmt)
        },
        |f| check(cx, f, "r", ver),
    );
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        let tagged = cx.tagged_fields(s);
        // A struct that is not the body, with tagged fields, makes the body not `uniform`
        // (see `Ver::uniform`): structs of fixed-width fields have no one stride then, and
        // every struct's accessors read their tagged sections again.
        let prefix = if root { "" } else { "fixed_struct_" };
        let field = q(&format!("{n}._tagged_fields"));
        // A struct that knows no tag calls the reader's one non-generic form, so that the
        // section's loop is not compiled again for each struct's closure.
        let call = if tagged.is_empty() {
            format!("r.{prefix}unknown_tagged_fields({field})?;")
        } else {
            format!("r.{prefix}tagged_fields({field}, {})?;", tag_match(cx, s, &tagged, ver))
        };
        body.extend(cx.if_flexible(s, ver, Stmt::line(call).into()));
    }
    body.line(match (root, k > 0) {
        (false, _) => "Ok(())",
        (true, true) => "Ok(at)",
        (true, false) => "Ok([])",
    });
    fb.finish(body)
}

/// Whether a struct gets a fast pass (a body's `fast`, an element's `ElementImpl::fast`):
/// every field in place in some version is a string, fixed-width, an array of either or of
/// such structs, or such a struct (never null), so that the pass makes no call. Tagged
/// fields need nothing: only an empty tagged section is on the fast path.
fn fast_eligible(cx: &Ctx, s: &Struct) -> bool {
    let eligible = |ty: &Type| match ty {
        Type::String => true,
        Type::Struct(n) => fast_eligible(cx, cx.msg.find(n)),
        t => t.fixed_width().is_some(),
    };
    F::all(s).iter().filter(|f| !f.inline.is_empty()).all(|f| match &f.f.ty {
        Type::Array(t) => eligible(t),
        Type::Struct(_) => !f.nullable && eligible(&f.f.ty),
        t => eligible(t),
    })
}

/// Whether the fast pass of the body calls the `ElementImpl::fast` of `s`, an element:
/// the body has a fast pass, and `s` is a field of a struct it reaches, or the element
/// of an array of such a struct where `s` has variable length (elements of fixed-width
/// fields are checked as one run, without their `fast`).
fn fast_reached(cx: &Ctx, s: &Struct) -> bool {
    fn reaches(cx: &Ctx, from: &Struct, to: &str) -> bool {
        F::all(from).iter().filter(|f| !f.inline.is_empty()).any(|f| match &f.f.ty {
            Type::Struct(n) => n == to || reaches(cx, cx.msg.find(n), to),
            Type::Array(t) => match &**t {
                Type::Struct(n) => (n == to && !all_fixed(cx.msg.find(n))) || reaches(cx, cx.msg.find(n), to),
                _ => false,
            },
            _ => false,
        })
    }
    let root = cx.msg.find(&cx.msg.name);
    fast_eligible(cx, root) && reaches(cx, root, &s.name)
}

/// The fast step of field `f` (not fixed-width): its reads (`Reader::fast_*`,
/// `view::fast_array`, an element's `fast`) answer `None` for anything off the fast path.
fn fast_step(cx: &Ctx, f: &F, ver: &Ver) -> Stmt {
    let flex = cx.flex_expr(f.s, ver);
    // Asked only where used: asking records a use of the version.
    let v = || ver.value();
    let nullable_now = if f.nullable { ver.cond(f.f.nullable, f.inline) } else { Cond::Never };
    let (plain, nullable) = match &f.f.ty {
        Type::Array(t) => {
            let call = |n: bool| match (&**t, t.fixed_width()) {
                (Type::Struct(_), _) => {
                    format!("view::fast_array::<{}>(r, {flex}, {n}, {})?;", cx.view_elem_ty(t), v())
                }
                (_, Some(w)) => format!("r.fast_fixed_array({flex}, {n}, {w})?;"),
                _ => format!("r.fast_str_array({flex}, {n})?;"),
            };
            (Stmt::line(call(false)), Stmt::line(call(true)))
        }
        // Never null (see `fast_eligible`).
        Type::Struct(n) => return Stmt::line(format!("{n}View::fast(r, {})?;", v())),
        _ => (
            Stmt::line(format!("r.fast_str({flex})?;")),
            Stmt::line(format!("r.fast_nullable_str({flex})?;")),
        ),
    };
    match nullable_now {
        Cond::Always => nullable,
        Cond::Never => plain,
        Cond::If(c) => {
            Stmt::If { cond: c, then: nullable.into(), otherwise: Some(Else::Block(plain.into())) }
        }
    }
}

/// The fast pass of a struct `fast_eligible` takes: `checked` without errors for a body
/// (`fast`, which also records the offsets), `ElementImpl::check` without errors for an
/// element (`ElementImpl::fast`). `None` means anything off the fast path (an error, a
/// long or non-ASCII string, tagged fields), and the body's `build` then runs `checked`.
fn fast_pass(cx: &Ctx, s: &Struct, lay: &StructLayout, root: bool) -> Option<String> {
    if !fast_eligible(cx, s) {
        return None;
    }
    let k = if root { lay.anchors } else { 0 };
    let fb = FnBuilder::new("fast")
        .inline_always()
        .param("r", "&mut Reader<'a>")
        .ver_param()
        .returns(if root { format!("Option<[u32; {k}]>") } else { "Option<()>".to_string() });
    let ver = &fb.ver;
    let mut body = check_steps(
        s,
        lay,
        ver,
        k,
        |run| Stmt::line(format!("r.fast_take({})?;", run_width(run))),
        |f| fast_step(cx, f, ver),
    );
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        // Known tags or not, only an empty section is on the fast path.
        body.extend(cx.if_flexible(s, ver, Stmt::line("r.fast_no_tags()?;").into()));
    }
    body.line(match (root, k > 0) {
        (false, _) => "Some(())",
        (true, true) => "Some(at)",
        (true, false) => "Some([])",
    });
    Some(fb.finish(body))
}

/// An element's `Layout` in one version.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Var,
    Fixed(usize),
    Tagged(usize),
}

impl Layout {
    fn expr(&self) -> String {
        match self {
            Layout::Var => "Layout::Var".into(),
            Layout::Fixed(n) => format!("Layout::Fixed({n})"),
            Layout::Tagged(n) => format!("Layout::Tagged({n})"),
        }
    }
}

fn element(cx: &Ctx, s: &Struct, lay: &StructLayout) -> String {
    let n = &s.name;
    let mut out = format!("impl<'a> ElementImpl<'a> for {n}View<'a> {{\n");
    let fb = FnBuilder::new("layout").inline().ver_param().returns("Layout");
    let layout = fb.ver.by_version(
        s.versions,
        |v| match (all_fixed_in(s, v), cx.msg.flexible.contains(v)) {
            (false, _) => Layout::Var,
            (true, true) => Layout::Tagged(fixed_bytes(s, v)),
            (true, false) => Layout::Fixed(fixed_bytes(s, v)),
        },
        Layout::expr,
    );
    // `Layout::Var` is the trait's default.
    if layout.constant() != Some(&Layout::Var) {
        out.push_str(&fb.finish(Stmt::line(layout.text)));
        out.push('\n');
    }
    out.push_str(&check_pass(cx, s, lay, false));
    out.push('\n');
    if fast_reached(cx, s)
        && let Some(fast) = fast_pass(cx, s, lay, false)
    {
        out.push_str(&fast);
        out.push('\n');
    }
    out.push_str(&at_fn(cx, s, lay));
    out.push_str("}\n\n");
    out
}

/// `ElementImpl::at`: the element at `pos` of checked bytes, and where it ends.
fn at_fn(cx: &Ctx, s: &Struct, lay: &StructLayout) -> String {
    let fb = FnBuilder::new("at")
        .inline()
        .param("src", "Src<'a>")
        .param("pos", "usize")
        .ver_param()
        .returns("(Self, usize)");
    let ver = &fb.ver;
    let k = lay.anchors;
    let mut body = Block::new();
    if all_fixed(s) {
        let sum = fixed_sum(s, ver);
        let end = match cx.flex(s) {
            Some(false) => format!("pos + {sum}"),
            _ => format!("view::fixed_end(src, pos, {sum}, {})", ver.value()),
        };
        body.line(format!("let end = {end};"));
        body.line(format!("({}, end)", self_init(k, false, "view::Fixed::new(src, pos, end)", ver)));
        return fb.finish(body) + "\n" + &whole_fn();
    }
    if k > 0 {
        body.line(format!("let mut at = [0; {k}];"));
    }
    let texts = text_fields(s);
    if !texts.is_empty() {
        body.line(format!("let mut text = [0; {}];", texts.len()));
    }
    let mut anchor = 0;
    let mut pending: Vec<(Versions, usize)> = Vec::new();
    let mut first = true;
    let flush = |pending: &mut Vec<(Versions, usize)>, first: &mut bool, body: &mut Block| {
        let sum = ver.by_version(
            s.versions,
            |v| pending.iter().filter(|(vs, _)| vs.contains(v)).map(|(_, w)| w).sum::<usize>(),
            |n| n.to_string(),
        );
        if *first {
            body.line(match sum.constant() {
                Some(0) => "let mut p = pos;".to_string(),
                _ => format!("let mut p = pos + {};", sum.operand()),
            });
            *first = false;
        } else if sum.constant() != Some(&0) {
            body.line(format!("p += {};", sum.text));
        }
        pending.clear();
    };
    for (i, f) in F::all(s).iter().enumerate() {
        let c = ver.cond(f.inline, s.versions);
        if matches!(c, Cond::Never) {
            continue;
        }
        if let Some(w) = f.f.ty.fixed_width() {
            pending.push((f.inline, w));
            continue;
        }
        flush(&mut pending, &mut first, &mut body);
        let step = match texts.iter().position(|&t| t == i) {
            Some(t) => format!("(text[{t}], p) = src.str_start(pos, p, {});", cx.flex_expr(f.s, ver)),
            None => format!("p = {};", skip(cx, f, "src", ver)),
        };
        body.under(&c, Stmt::line(step));
        if anchor < k && lay.anchor_after(i, anchor) {
            body.line(format!("at[{anchor}] = (p - pos) as u32;"));
            anchor += 1;
        }
    }
    flush(&mut pending, &mut first, &mut body);
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        body.extend(cx.if_flexible(s, ver, Stmt::line("p = src.skip_tagged(p);").into()));
    }
    body.line(format!("({}, p)", self_init(k, !texts.is_empty(), "src.sub(pos, p)", ver)));
    fb.finish(body)
}

/// `ElementImpl::whole` of a struct of fixed-width fields: the view of exactly `src`, for
/// iterators that step over elements of one stride. Such a view stores no offsets.
fn whole_fn() -> String {
    let fb = FnBuilder::new("whole").inline().param("src", "Src<'a>").ver_param().returns("Self");
    let init = format!("Self {{ src: view::Fixed::whole(src), {} }}", fb.ver.value());
    fb.finish(Stmt::line(init))
}

/// `Self { .. }` of a view with `k` stored offsets, and kept strings if `text`.
fn self_init(k: usize, text: bool, src: &str, ver: &Ver) -> String {
    let v = ver.value();
    let at = if k > 0 { ", at" } else { "" };
    let text = if text { ", text" } else { "" };
    format!("Self {{ src: {src}, {v}{at}{text} }}")
}
