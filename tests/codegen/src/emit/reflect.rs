//! The schemas as data: `src/tools/reflect/schemas.rs`, every message's `MessageSchema` and the
//! `StructSchema` of every struct in it, one line per field with the builders of the
//! hand-written `src/tools/reflect/build.rs`.

use std::fmt::Write as _;

use super::{Api, GENERATED_FROM_ALL, q, snake, upper_snake};
use crate::schema::{Field, Message, Type};
use crate::versions::{MAX, Versions};

/// A version range with the builders: `NONE`, `since(3)`, `v(0, 4)`.
fn versions(v: Versions) -> String {
    if v.is_empty() {
        "NONE".into()
    } else if v.hi == MAX {
        format!("since({})", v.lo)
    } else {
        format!("v({}, {})", v.lo, v.hi)
    }
}

/// The name of the static holding struct `name`'s schema.
fn struct_static(name: &str) -> String {
    upper_snake(name)
}

/// A `FieldType`, its variants imported: `Int32`, `Array(&Struct(&LIST_OFFSETS_TOPIC))`.
fn field_type(ty: &Type) -> String {
    match ty {
        Type::Struct(n) => format!("Struct(&{})", struct_static(n)),
        Type::Array(t) => format!("Array(&{})", field_type(t)),
        Type::Bool => "Bool".into(),
        Type::Int8 => "Int8".into(),
        Type::Int16 => "Int16".into(),
        Type::Int32 => "Int32".into(),
        Type::Int64 => "Int64".into(),
        Type::Uint16 => "Uint16".into(),
        Type::Uint32 => "Uint32".into(),
        Type::Float64 => "Float64".into(),
        Type::Uuid => "Uuid".into(),
        Type::String => "String".into(),
        Type::Bytes => "Bytes".into(),
        Type::Records => "Records".into(),
    }
}

/// One field: `field(name, type, versions)`, a method per further fact, then `.about(..)`.
fn field(f: &Field) -> String {
    let mut o = format!("field({}, {}, {})", q(&f.name), field_type(&f.ty), versions(f.versions));
    if !f.nullable.is_empty() {
        write!(o, ".nullable({})", versions(f.nullable)).unwrap();
    }
    if let Some(tag) = f.tag {
        write!(o, ".tagged({tag}, {})", versions(f.tagged)).unwrap();
    }
    if let Some(d) = &f.default {
        write!(o, ".default_value({})", q(d)).unwrap();
    }
    if f.ignorable {
        o.push_str(".ignorable()");
    }
    if let Some(entity) = f.entity {
        write!(o, ".entity({entity})").unwrap();
    }
    write!(o, ".about({})", q(&f.about)).unwrap();
    o
}

/// The items of the message: its schema (`REQUEST` or `RESPONSE`) and its structs'
/// schemas, indented for the API's module.
fn message(m: &Message) -> Vec<String> {
    let mut items = vec![format!(
        "    pub static {}: MessageSchema = MessageSchema {{ name: {}, api_key: {}, is_request: {}, versions: {}, flexible_versions: {}, body: &{}, about: {} }};\n",
        if m.is_request { "REQUEST" } else { "RESPONSE" },
        q(&m.name),
        m.api_key,
        m.is_request,
        versions(m.valid),
        versions(m.flexible),
        struct_static(&m.name),
        q(&m.about),
    )];
    for s in &m.structs {
        let mut o = format!(
            "    static {}: StructSchema = StructSchema {{ name: {}, fields: &[\n",
            struct_static(&s.name),
            q(&s.name)
        );
        for f in &s.fields {
            writeln!(o, "        {},", field(f)).unwrap();
        }
        o.push_str("    ] };\n");
        items.push(o);
    }
    items
}

/// `src/tools/reflect/schemas.rs`: every message's schema as data, for generic tools.
pub fn module(apis: &[Api]) -> String {
    let mut o = String::from(GENERATED_FROM_ALL);
    o.push_str("//! Every message's schema as static data: a module per API, one line per field (the\n");
    o.push_str("//! builders are in `build.rs`).\n\n");
    o.push_str("use super::build::*;\nuse super::{MessageSchema, StructSchema};\nuse crate::ApiKey;\n\n");
    for (fname, doc, side) in [
        ("request_schema", "The request schema of `api`.", "REQUEST"),
        ("response_schema", "The response schema of `api`.", "RESPONSE"),
    ] {
        writeln!(
            o,
            "/// {doc}\npub const fn {fname}(api: ApiKey) -> &'static MessageSchema {{\n    match api {{"
        )
        .unwrap();
        for a in apis {
            writeln!(o, "        ApiKey::{} => &{}::{side},", a.name, snake(&a.name)).unwrap();
        }
        o.push_str("    }\n}\n\n");
    }
    let modules: Vec<String> = apis
        .iter()
        .map(|a| {
            let mut items = message(a.request);
            items.extend(message(a.response));
            // One line per field reads as a table; rustfmt would break the long ones.
            format!(
                "/// {}.\n#[rustfmt::skip]\nmod {} {{\n    use super::*;\n\n{}}}\n",
                a.name,
                snake(&a.name),
                items.join("\n")
            )
        })
        .collect();
    o.push_str(&modules.join("\n"));
    o
}
