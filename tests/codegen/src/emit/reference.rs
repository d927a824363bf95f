//! The reference decoder and the conversions from views: `src/codec/reference/<api>.rs`.
//!
//! The decoder starts from a struct's defaults and reads field by field; it shares only the
//! wire primitives with the views, so that fuzzing can hold one against the other.

use std::fmt::Write as _;

use super::{Ctx, F, q, scalar_method};
use crate::code::{Block, FnBuilder, Stmt, Ver};
use crate::schema::{Struct, Type};
use crate::versions::Cond;

/// The reference decoder, conversion and `as_version` of every struct of the message.
pub fn emit(cx: &Ctx) -> String {
    let mut out = String::new();
    for s in &cx.msg.structs {
        out.push_str(&read_owned(cx, s));
        out.push_str(&from_view(cx, s));
        out.push_str(&as_version(cx, s));
        if cx.is_root(s) {
            writeln!(out, "#[cfg(feature = \"reference\")]\nreference_body!({});\n", s.name).unwrap();
        }
    }
    out
}

/// The expression reading field `f` with reader `r`.
fn read_expr(cx: &Ctx, f: &F, r: &str, ver: &Ver) -> String {
    let p = q(&f.path);
    let nullable_now = if f.nullable { ver.cond(f.f.nullable, f.inline) } else { Cond::Never };
    // Both forms of a type use the same parts of the version, so building the one left
    // unused records nothing the other would not.
    let pick = |plain: String, nullable: String| match (f.nullable, &nullable_now) {
        (false, _) => plain,
        (true, Cond::Always) => nullable,
        (true, Cond::Never) => format!("Some({plain})"),
        (true, Cond::If(c)) => format!("if {c} {{ {nullable} }} else {{ Some({plain}) }}"),
    };
    match &f.f.ty {
        Type::String => {
            let flex = cx.flex_expr(f.s, ver);
            pick(format!("read_str({r}, {flex}, {p})?"), format!("read_nullable_str({r}, {flex}, {p})?"))
        }
        Type::Bytes | Type::Records => {
            let flex = cx.flex_expr(f.s, ver);
            pick(format!("read_bytes({r}, {flex}, {p})?"), format!("read_nullable_bytes({r}, {flex}, {p})?"))
        }
        Type::Array(_) => {
            let v = ver.value();
            pick(
                format!("List::Owned(read_list({r}, {v}, {p})?)"),
                format!("read_nullable_list({r}, {v}, {p})?.map(List::Owned)"),
            )
        }
        Type::Struct(n) => {
            let v = ver.value();
            pick(
                format!("{n}::read_owned({r}, {v}, {p})?"),
                format!("if {r}.i8({p})? < 0 {{ None }} else {{ Some({n}::read_owned({r}, {v}, {p})?) }}"),
            )
        }
        ty => format!("{r}.{}({p})?", scalar_method(ty)),
    }
}

fn read_owned(cx: &Ctx, s: &Struct) -> String {
    let n = &s.name;
    let fb = FnBuilder::new("read_owned")
        .param("r", "&mut Reader<'_>")
        .ver_param()
        .unused("&'static str")
        .returns("Result<Self, DecodeError>");
    let ver = &fb.ver;
    let mut body = Block::new();
    body.line(format!("let mut this = {n}::default();"));
    for f in F::all(s) {
        let c = ver.cond(f.inline, s.versions);
        if !matches!(c, Cond::Never) {
            body.under(&c, Stmt::line(format!("this.{} = {};", f.ident, read_expr(cx, &f, "r", ver))));
        }
    }
    let tagged = cx.tagged_fields(s);
    let section = q(&format!("{n}._tagged_fields"));
    if cx.has_tags(s) && tagged.is_empty() {
        if cx.flex(s) != Some(false) {
            body.line(format!("read_unknown_tagged_fields!(this, r, {}, {section});", ver.value()));
        }
    } else if cx.has_tags(s) && cx.flex(s) != Some(false) {
        let arms = cx
            .tag_arms(s, &tagged, ver, |f| format!("this.{} = {}", f.ident, read_expr(cx, f, "value", ver)));
        let closure = format!(
            "|tag, value| {{\n match tag {{\n{arms}_ => {{\n unknown.push(raw_tagged_field(tag, value));\n return Ok(false);\n }}\n}}\nOk(true)\n}}"
        );
        let mut tags = Block::new();
        tags.line("let mut unknown = Vec::new();");
        tags.line(format!("r.tagged_fields({section}, {closure})?;"));
        tags.line("this.unknown_tagged_fields = List::Owned(unknown);");
        body.extend(cx.if_flexible(s, ver, tags));
    }
    body.line("Ok(this)");
    format!(
        "#[cfg(feature = \"reference\")]\nimpl ReadOwned for {n}{} {{\n{}}}\n\n",
        cx.generics(s, "'static"),
        fb.finish(body)
    )
}

/// The conversion from the view (public, so that one struct of a message can be taken
/// out of its view): strings and bytes borrowed, arrays collected.
fn from_view(cx: &Ctx, s: &Struct) -> String {
    let n = &s.name;
    let mut out = format!("impl<'a> From<{n}View<'a>> for {n}{} {{\n", cx.generics(s, "'a"));
    out.push_str("    /// Borrows the view's strings and bytes, and collects its arrays.\n");
    // Public, so compiled once in any case: inlined into the conversion of the struct that
    // holds it, it was compiled again there (see `list_from_view`).
    out.push_str("    #[inline(never)]\n");
    writeln!(out, "    fn from(view: {n}View<'a>) -> Self {{\n        {n} {{").unwrap();
    for f in F::all(s) {
        let x = format!("view.{}()", f.ident);
        let conv = match (&f.f.ty, f.nullable) {
            (Type::String, false) => format!("Str::Borrowed({x})"),
            (Type::String, true) => format!("{x}.map(Str::Borrowed)"),
            (Type::Bytes, false) => format!("List::Borrowed({x})"),
            (Type::Bytes, true) => format!("{x}.map(List::Borrowed)"),
            (Type::Records, false) => format!("List::Borrowed({x}.bytes())"),
            (Type::Records, true) => format!("{x}.map(|r| List::Borrowed(r.bytes()))"),
            (Type::Array(_), false) => format!("list_from_view({x})"),
            (Type::Array(_), true) => format!("{x}.map(list_from_view)"),
            (Type::Struct(_), false) if cx.optional_struct(&f) => {
                format!("{x}.map(Into::into).unwrap_or_default()")
            }
            (Type::Struct(_), false) => format!("{x}.into()"),
            (Type::Struct(_), true) => format!("{x}.map(Into::into)"),
            _ => x,
        };
        writeln!(out, "            {}: {conv},", f.ident).unwrap();
    }
    if cx.has_tags(s) {
        out.push_str("            unknown_tagged_fields: unknown_from_view(view.unknown_tagged_fields()),\n");
    }
    out.push_str("        }\n    }\n}\n\n");
    out
}

/// `as_version!`: the value as a version would carry it. Only fields that a version can
/// drop, and those holding structs, differ from a clone.
fn as_version(cx: &Ctx, s: &Struct) -> String {
    let n = &s.name;
    let anon = cx.generics(s, "'_");
    let ver = Ver::param();
    let mut changes = Block::new();
    for f in F::all(s) {
        let nested = matches!(f.elem(), Type::Struct(_));
        let (x, default) = (&f.ident, cx.data_default(&f));
        match ver.cond_not(f.present(), s.versions) {
            Cond::Always => changes.line(format!("v.{x} = {default};")),
            Cond::If(c) if nested => changes.line(format!(
                "v.{x} = if {c} {{ {default} }} else {{ v.{x}.as_version({}) }};",
                ver.value()
            )),
            Cond::If(c) => changes.push(Stmt::when(c, Stmt::line(format!("v.{x} = {default};")))),
            Cond::Never if nested => changes.line(format!("v.{x} = v.{x}.as_version({});", ver.value())),
            Cond::Never => {}
        }
    }
    if cx.has_tags(s) && cx.flex(s) != Some(true) {
        changes.line(format!(
            "v.unknown_tagged_fields = tagged_as_version(&v.unknown_tagged_fields, {});",
            ver.value()
        ));
    }
    if changes.is_empty() {
        return format!("as_version!({n}{anon});\n\n");
    }
    let mut out = format!("as_version!({n}{anon}, |v, {}| {{\n", ver.param_name());
    changes.render(1, &mut out);
    out.push_str("});\n\n");
    out
}
