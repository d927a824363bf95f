//! The schemas as data: `src/reflect/schemas.rs`, every message's `MessageSchema` and the
//! `StructSchema` of every struct in it.

use std::fmt::Write as _;

use super::{Api, GENERATED_FROM_ALL, q, snake, upper_snake};
use crate::schema::{Message, Type};
use crate::versions::Versions;

fn versions_expr(v: Versions) -> String {
    if v.is_empty() {
        "Versions::NONE".into()
    } else if v.hi == i16::MAX {
        format!("Versions::new({}, i16::MAX)", v.lo)
    } else {
        format!("Versions::new({}, {})", v.lo, v.hi)
    }
}

fn field_type_expr(ty: &Type) -> String {
    match ty {
        Type::Bool => "FieldType::Bool".into(),
        Type::Int8 => "FieldType::Int8".into(),
        Type::Int16 => "FieldType::Int16".into(),
        Type::Int32 => "FieldType::Int32".into(),
        Type::Int64 => "FieldType::Int64".into(),
        Type::Uint16 => "FieldType::Uint16".into(),
        Type::Uint32 => "FieldType::Uint32".into(),
        Type::Float64 => "FieldType::Float64".into(),
        Type::Uuid => "FieldType::Uuid".into(),
        Type::String => "FieldType::String".into(),
        Type::Bytes => "FieldType::Bytes".into(),
        Type::Records => "FieldType::Records".into(),
        Type::Struct(n) => format!("FieldType::Struct(&{}_SCHEMA)", upper_snake(n)),
        Type::Array(t) => format!("FieldType::Array(&{})", field_type_expr(t)),
    }
}

/// The message's schema as static data (`crate::reflect`).
fn schema_tables(m: &Message) -> String {
    let mut o = String::new();
    let root = upper_snake(&m.name);
    writeln!(o, "/// The schema of {} as data, for generic tools.", m.name).unwrap();
    writeln!(o, "pub static {root}_MESSAGE_SCHEMA: MessageSchema = MessageSchema {{").unwrap();
    writeln!(o, "    name: {},", q(&m.name)).unwrap();
    writeln!(o, "    api_key: {},", m.api_key).unwrap();
    writeln!(o, "    is_request: {},", m.is_request).unwrap();
    writeln!(o, "    versions: {},", versions_expr(m.valid)).unwrap();
    writeln!(o, "    flexible_versions: {},", versions_expr(m.flexible)).unwrap();
    writeln!(o, "    about: {},", q(&m.about)).unwrap();
    writeln!(o, "    body: &{root}_SCHEMA,\n}};\n").unwrap();
    for s in &m.structs {
        writeln!(o, "/// The schema of {} as data.", s.name).unwrap();
        writeln!(o, "pub static {}_SCHEMA: StructSchema = StructSchema {{", upper_snake(&s.name)).unwrap();
        writeln!(o, "    name: {},\n    fields: &[", q(&s.name)).unwrap();
        for f in &s.fields {
            writeln!(o, "        FieldSchema {{").unwrap();
            writeln!(o, "            name: {},", q(&f.name)).unwrap();
            writeln!(o, "            ty: {},", field_type_expr(&f.ty)).unwrap();
            writeln!(o, "            versions: {},", versions_expr(f.versions)).unwrap();
            writeln!(o, "            nullable_versions: {},", versions_expr(f.nullable)).unwrap();
            writeln!(o, "            tagged_versions: {},", versions_expr(f.tagged)).unwrap();
            writeln!(o, "            tag: {:?},", f.tag).unwrap();
            writeln!(
                o,
                "            default: {},",
                f.default.as_ref().map_or("None".to_string(), |d| format!("Some({})", q(d)))
            )
            .unwrap();
            writeln!(o, "            ignorable: {},", f.ignorable).unwrap();
            writeln!(o, "            about: {},", q(&f.about)).unwrap();
            writeln!(o, "        }},").unwrap();
        }
        writeln!(o, "    ],\n}};\n").unwrap();
    }
    o
}

/// `src/reflect/schemas.rs`: every message's schema as data, for the `kwire` command.
pub fn module(apis: &[Api]) -> String {
    let mut o = String::new();
    o.push_str(GENERATED_FROM_ALL);
    o.push_str("//! Every message's schema as static data.\n\n");
    o.push_str("use super::{FieldSchema, FieldType, MessageSchema, StructSchema};\nuse crate::messages::ApiKey;\nuse crate::types::Versions;\n\n");
    for (fname, doc, pick) in [
        ("request_schema", "The request schema of `api`.", true),
        ("response_schema", "The response schema of `api`.", false),
    ] {
        writeln!(
            o,
            "/// {doc}\npub const fn {fname}(api: ApiKey) -> &'static MessageSchema {{\n    match api {{"
        )
        .unwrap();
        for a in apis {
            let m = if pick { a.request } else { a.response };
            writeln!(
                o,
                "        ApiKey::{} => &{}::{}_MESSAGE_SCHEMA,",
                a.name,
                snake(&a.name),
                upper_snake(&m.name)
            )
            .unwrap();
        }
        o.push_str("    }\n}\n\n");
    }
    for a in apis {
        writeln!(o, "/// {}.\nmod {} {{\n    use super::*;\n", a.name, snake(&a.name)).unwrap();
        o.push_str(&schema_tables(a.request));
        o.push_str(&schema_tables(a.response));
        o.push_str("}\n\n");
    }
    o
}
