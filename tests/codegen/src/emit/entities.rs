//! The entity walkers: for each message whose schema holds entity fields, one function per
//! struct that holds one at any depth, appended to `src/codec/messages/<api>.rs`, and the
//! table of them in `src/codec/messages/mod.rs` (`entity_walker`). A walker reports each
//! entity field to the hand-written `crate::codec::entities::Walk` (its kind, where its
//! bytes are, the tagged-field sizes around it) and moves past every other field with the
//! views' own checks, so the generated code is a list of steps in wire order.
//!
//! Entity fields: strings (or arrays of strings) marked as topic names, group ids or
//! transactional ids; FindCoordinator's keys (group or transactional ids by their
//! `KeyType`, unmarked); topic ids (`uuid` fields named `TopicId`); and error messages
//! (unmarked strings named `...ErrorMessage`, which may quote entity names).

use std::fmt::Write as _;

use super::{Api, Ctx, F, cfg_line, q, snake};
use crate::code::{Block, FnBuilder, Stmt, Ver};
use crate::schema::{Field, Message, Struct, Type};
use crate::versions::Cond;

/// The `EntityKind` variant a field's values are, if they are entities.
pub fn kind(m: &Message, f: &Field) -> Option<&'static str> {
    let array = matches!(f.ty, Type::Array(_));
    match elem(f) {
        Type::String => match f.entity {
            Some(e @ ("TopicName" | "GroupId" | "TransactionalId")) => Some(e),
            Some(_) => None,
            None if m.api_key == 10 && matches!(f.name.as_str(), "Key" | "CoordinatorKeys") => {
                Some("CoordinatorKey")
            }
            None if !array && f.name.ends_with("ErrorMessage") => Some("ErrorMessage"),
            None => None,
        },
        Type::Uuid if !array && f.name == "TopicId" => Some("TopicId"),
        _ => None,
    }
}

fn elem(f: &Field) -> &Type {
    match &f.ty {
        Type::Array(t) => t,
        t => t,
    }
}

/// Whether a field is an entity or holds one.
fn holds_field(m: &Message, f: &Field) -> bool {
    kind(m, f).is_some() || matches!(elem(f), Type::Struct(n) if holds(m, m.find(n)))
}

/// Whether a struct holds an entity field at any depth.
pub fn holds(m: &Message, s: &Struct) -> bool {
    s.fields.iter().any(|f| holds_field(m, f))
}

/// The walker function's name for struct `name`.
fn fn_name(name: &str) -> String {
    format!("{}_entities", snake(name).trim_start_matches("r#"))
}

/// A bool expression from a version condition.
fn flag(c: Cond) -> String {
    match c {
        Cond::Always => "true".into(),
        Cond::Never => "false".into(),
        Cond::If(c) => c,
    }
}

/// The step for field `f` with reader `r`, in versions `possible` (where it is in place, or
/// tagged).
fn step(cx: &Ctx, f: &F, r: &str, ver: &Ver) -> Stmt {
    let m = cx.msg;
    let p = q(&f.path);
    let possible = f.present();
    let nullable = || flag(if f.nullable { ver.cond(f.f.nullable, possible) } else { Cond::Never });
    let flex = || cx.flex_expr(f.s, ver);
    let array = matches!(f.f.ty, Type::Array(_));
    match (kind(m, f.f), elem(f.f)) {
        (Some("TopicId"), _) => Stmt::line(format!("w.topic_id({r}, {p})?;")),
        (Some(k), _) if array => {
            Stmt::line(format!("w.texts({r}, EntityKind::{k}, {}, {}, {p})?;", flex(), nullable()))
        }
        (Some(k), _) => {
            Stmt::line(format!("w.text({r}, EntityKind::{k}, {}, {}, {p})?;", flex(), nullable()))
        }
        (None, Type::Struct(n)) if holds(m, m.find(n)) => {
            let how = if array { "each" } else { "one" };
            Stmt::line(format!("w.{how}({r}, {}, {}, {}, {p})?;", ver.value(), nullable(), fn_name(n)))
        }
        _ => super::view::check(cx, f, r, ver),
    }
}

/// The walker of one struct.
fn walker(cx: &Ctx, s: &Struct) -> String {
    let root = cx.is_root(s);
    let mut fb = FnBuilder::new(format!("{}<'a>", fn_name(&s.name)))
        .doc(format!("Reports the entity fields of a {} to `w` (see `crate::codec::entities`).", s.name))
        .param("r", "&mut Reader<'a>")
        .ver_param()
        .param("w", "&mut Walk<'a, '_>")
        .returns("Result<(), DecodeError>");
    if root {
        fb = fb.crate_public();
    }
    let ver = &fb.ver;
    let mut body = Block::new();
    for f in F::all(s) {
        let c = ver.cond(f.inline, s.versions);
        if matches!(c, Cond::Never) {
            continue;
        }
        body.under(&c, step(cx, &f, "r", ver));
    }
    if cx.has_tags(s) && cx.flex(s) != Some(false) {
        let tagged: Vec<F> = cx.tagged_fields(s).into_iter().filter(|f| holds_field(cx.msg, f.f)).collect();
        let field = q(&format!("{}._tagged_fields", s.name));
        let call = if tagged.is_empty() {
            format!("r.unknown_tagged_fields({field})?;")
        } else {
            let possible = cx.flexible_in(s);
            let mut arms = String::new();
            for f in &tagged {
                let guard = match ver.cond(f.tagged, possible) {
                    Cond::If(c) => format!(" if {c}"),
                    _ => String::new(),
                };
                let mut b = String::new();
                step(cx, f, "value", ver).render(0, &mut b);
                writeln!(arms, "{}{guard} => {{ {b} }}", f.tag()).unwrap();
            }
            format!(
                "w.tagged(r, &mut |tag, value, w| {{\n match tag {{\n{arms}_ => return Ok(false),\n}}\nOk(true)\n}}, {field})?;"
            )
        };
        body.extend(cx.if_flexible(s, ver, Stmt::line(call).into()));
    }
    body.line("Ok(())");
    fb.finish(body)
}

/// The walkers of a message, or nothing if it holds no entity field.
pub fn emit(cx: &Ctx) -> String {
    let m = cx.msg;
    let mut out = String::new();
    if !holds(m, &m.structs[0]) {
        return out;
    }
    writeln!(out, "\n// The entity walkers of {} (see `crate::codec::entities`).\n", m.name).unwrap();
    for s in m.structs.iter().filter(|s| holds(m, s)) {
        // Only the filters and the schema tools (`owned`) use them.
        out.push_str("#[cfg(feature = \"owned\")]\n");
        out.push_str(&walker(cx, s).trim_start().replace("\n    ", "\n"));
        out.push('\n');
    }
    out
}

/// `entity_walker`, the table of the root walkers by API and direction, for
/// `src/codec/messages/mod.rs`.
pub fn table(apis: &[Api]) -> String {
    let mut o = String::from(
        "\n/// The entity walker of `api`'s requests (`request`) or responses, if its schema holds\n/// entity fields (see `crate::codec::entities`).\n#[cfg(feature = \"owned\")]\npub(crate) fn entity_walker(api: ApiKey, request: bool) -> Option<crate::codec::entities::WalkFn> {\n    match (api, request) {\n",
    );
    for a in apis {
        for m in [a.request, a.response] {
            if holds(m, &m.structs[0]) {
                let cfg = cfg_line(&a.name);
                writeln!(
                    o,
                    "{}        (ApiKey::{}, {}) => Some({}::{}),",
                    if cfg.is_empty() { cfg } else { format!("        {cfg}") },
                    a.name,
                    m.is_request,
                    snake(&a.name),
                    fn_name(&m.name)
                )
                .unwrap();
            }
        }
    }
    o.push_str("        _ => None,\n    }\n}\n");
    o
}
