//! Schema files → a checked intermediate representation.
//!
//! The files use Apache Kafka's message-schema keys. Checks follow Kafka's generator:
//! tagged versions within flexible versions, unique tags, a tag for every tagged field, no
//! arrays of arrays, nullable only on nullable types, defaults that parse for their type.

use serde_json::Value;

use crate::versions::Versions;

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    Uint32,
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    Struct(String),
    Array(Box<Type>),
}

impl Type {
    fn parse(s: &str) -> Type {
        if let Some(inner) = s.strip_prefix("[]") {
            return Type::Array(Box::new(Type::parse(inner)));
        }
        match s {
            "bool" => Type::Bool,
            "int8" => Type::Int8,
            "int16" => Type::Int16,
            "int32" => Type::Int32,
            "int64" => Type::Int64,
            "uint16" => Type::Uint16,
            "uint32" => Type::Uint32,
            "float64" => Type::Float64,
            "uuid" => Type::Uuid,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "records" => Type::Records,
            other => Type::Struct(other.to_string()),
        }
    }

    /// Bytes a value of this type always takes, for the fixed-width types.
    pub fn fixed_width(&self) -> Option<usize> {
        Some(match self {
            Type::Bool | Type::Int8 => 1,
            Type::Int16 | Type::Uint16 => 2,
            Type::Int32 | Type::Uint32 => 4,
            Type::Int64 | Type::Float64 => 8,
            Type::Uuid => 16,
            _ => return None,
        })
    }

    pub fn is_nullable_kind(&self) -> bool {
        matches!(self, Type::String | Type::Bytes | Type::Records | Type::Array(_) | Type::Struct(_))
    }

    /// The name Kafka's schema uses, for docs.
    pub fn schema_name(&self) -> String {
        match self {
            Type::Bool => "bool".into(),
            Type::Int8 => "int8".into(),
            Type::Int16 => "int16".into(),
            Type::Int32 => "int32".into(),
            Type::Int64 => "int64".into(),
            Type::Uint16 => "uint16".into(),
            Type::Uint32 => "uint32".into(),
            Type::Float64 => "float64".into(),
            Type::Uuid => "uuid".into(),
            Type::String => "string".into(),
            Type::Bytes => "bytes".into(),
            Type::Records => "records".into(),
            Type::Struct(s) => s.clone(),
            Type::Array(t) => format!("[]{}", t.schema_name()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub versions: Versions,
    pub nullable: Versions,
    pub tagged: Versions,
    pub tag: Option<u32>,
    pub default: Option<String>,
    pub ignorable: bool,
    pub map_key: bool,
    /// What the field identifies (`entityType`), as the `reflect::Entity` variant's name.
    pub entity: Option<&'static str>,
    pub about: String,
}

impl Field {
    /// Versions in which the field is written in its place (not as a tagged field).
    pub fn inline_versions(&self) -> Versions {
        self.versions.subtract(self.tagged).expect("checked when parsed")
    }
}

#[derive(Clone, Debug)]
pub struct Struct {
    pub name: String,
    pub about: String,
    pub fields: Vec<Field>,
    /// Versions in which the struct can appear: the versions of the field that holds it,
    /// within the message's valid versions.
    pub versions: Versions,
}

#[derive(Clone, Debug)]
pub struct Message {
    pub file: String,
    pub api_key: i16,
    pub is_request: bool,
    pub name: String,
    pub about: String,
    pub valid: Versions,
    pub flexible: Versions,
    /// The message body first, then every nested struct in the order it appears.
    pub structs: Vec<Struct>,
}

impl Message {
    /// Renames struct `old` and every field type that names it.
    pub fn rename_struct(&mut self, old: &str, new: &str) {
        fn rename(ty: &mut Type, old: &str, new: &str) {
            match ty {
                Type::Struct(n) if n == old => *n = new.to_string(),
                Type::Array(t) => rename(t, old, new),
                _ => {}
            }
        }
        for s in &mut self.structs {
            if s.name == old {
                s.name = new.to_string();
            }
            for f in &mut s.fields {
                rename(&mut f.ty, old, new);
            }
        }
    }

    pub fn find(&self, name: &str) -> &Struct {
        self.structs.iter().find(|s| s.name == name).expect("struct exists")
    }
}

fn str_key<'v>(obj: &'v Value, key: &str, ctx: &str) -> Result<&'v str, String> {
    obj.get(key).and_then(Value::as_str).ok_or_else(|| format!("{ctx}: missing string \"{key}\""))
}

fn versions_key(obj: &Value, key: &str, ctx: &str) -> Result<Versions, String> {
    match obj.get(key) {
        None => Ok(Versions::NONE),
        Some(v) => Versions::parse(v.as_str().ok_or_else(|| format!("{ctx}: \"{key}\" is not a string"))?)
            .map_err(|e| format!("{ctx}: {key}: {e}")),
    }
}

pub fn parse(file: &str, text: &str) -> Result<Message, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let name = str_key(&json, "name", file)?.to_string();
    let api_key = json.get("apiKey").and_then(Value::as_i64).ok_or(format!("{file}: missing apiKey"))? as i16;
    let is_request = match str_key(&json, "type", file)? {
        "request" => true,
        "response" => false,
        t => return Err(format!("{file}: unknown type {t:?}")),
    };
    let valid = versions_key(&json, "validVersions", file)?;
    let flexible = versions_key(&json, "flexibleVersions", file)?;
    let mut msg = Message {
        file: file.to_string(),
        api_key,
        is_request,
        about: str_key(&json, "about", file)?.to_string(),
        name: name.clone(),
        valid,
        flexible,
        structs: Vec::new(),
    };
    let fields = json.get("fields").ok_or(format!("{file}: no fields"))?;
    let common = json.get("commonStructs").and_then(Value::as_array).cloned().unwrap_or_default();
    let about = msg.about.clone();
    add_struct(&mut msg, &name, &about, fields, valid, &common)?;
    Ok(msg)
}

fn add_struct(
    msg: &mut Message,
    name: &str,
    about: &str,
    fields: &Value,
    versions: Versions,
    common: &[Value],
) -> Result<(), String> {
    let ctx = format!("{}: {name}", msg.file);
    let index = msg.structs.len();
    msg.structs.push(Struct {
        name: name.to_string(),
        about: about.to_string(),
        fields: Vec::new(),
        versions,
    });
    let mut out = Vec::new();
    let mut tags = Vec::new();
    for f in fields.as_array().ok_or(format!("{ctx}: fields is not an array"))? {
        let fname = str_key(f, "name", &ctx)?.to_string();
        let fctx = format!("{ctx}.{fname}");
        let ty = Type::parse(str_key(f, "type", &fctx)?);
        let field = Field {
            name: fname.clone(),
            versions: versions_key(f, "versions", &fctx)?,
            nullable: versions_key(f, "nullableVersions", &fctx)?,
            tagged: versions_key(f, "taggedVersions", &fctx)?,
            tag: f.get("tag").and_then(Value::as_u64).map(|t| t as u32),
            default: f.get("default").and_then(Value::as_str).map(str::to_string),
            ignorable: f.get("ignorable").and_then(Value::as_bool).unwrap_or(false),
            map_key: f.get("mapKey").and_then(Value::as_bool).unwrap_or(false),
            entity: entity(f, &fctx)?,
            about: str_key(f, "about", &fctx)?.to_string(),
            ty: ty.clone(),
        };
        if field.versions.is_empty() {
            return Err(format!("{fctx}: no versions"));
        }
        if !field.nullable.is_empty() && !ty.is_nullable_kind() {
            return Err(format!("{fctx}: nullable versions on a type that cannot be null"));
        }
        if !field.tagged.is_empty() {
            if !field.tagged.is_subset_of(msg.flexible) {
                return Err(format!("{fctx}: tagged versions outside the flexible versions"));
            }
            let Some(tag) = field.tag else { return Err(format!("{fctx}: tagged field without a tag")) };
            if tags.contains(&tag) {
                return Err(format!("{fctx}: duplicate tag {tag}"));
            }
            tags.push(tag);
            if field.versions.subtract(field.tagged).is_none() {
                return Err(format!("{fctx}: untagged versions are not one range"));
            }
        } else if field.tag.is_some() {
            return Err(format!("{fctx}: a tag without tagged versions"));
        }
        check_default(&field, &fctx)?;
        let elem = match &ty {
            Type::Array(inner) => {
                if matches!(**inner, Type::Array(_)) {
                    return Err(format!("{fctx}: arrays of arrays are not allowed; use an array of structs"));
                }
                Some((**inner).clone())
            }
            t => Some(t.clone()),
        };
        if let Some(Type::Struct(sname)) = elem {
            let inner_versions = field.versions.intersect(versions);
            match f.get("fields") {
                Some(sub) => {
                    let about = field.about.clone();
                    add_struct(msg, &sname, &about, sub, inner_versions, common)?;
                }
                None => {
                    let def = common
                        .iter()
                        .find(|c| c.get("name").and_then(Value::as_str) == Some(sname.as_str()))
                        .ok_or(format!("{fctx}: struct {sname} has no fields and is not a common struct"))?;
                    if msg.structs.iter().any(|s| s.name == sname) {
                        widen(msg, &sname, inner_versions);
                    } else {
                        let about = str_key(def, "about", &fctx).unwrap_or(&field.about).to_string();
                        add_struct(msg, &sname, &about, &def["fields"], inner_versions, common)?;
                    }
                }
            }
        }
        out.push(field);
    }
    msg.structs[index].fields = out;
    Ok(())
}

/// A common struct used again: it can appear in the versions of every use, and so can the
/// structs nested in it.
fn widen(msg: &mut Message, name: &str, versions: Versions) {
    let Some(i) = msg.structs.iter().position(|s| s.name == name) else { return };
    let old = msg.structs[i].versions;
    let hull = if versions.is_empty() {
        old
    } else if old.is_empty() {
        versions
    } else {
        Versions::new(old.lo.min(versions.lo), old.hi.max(versions.hi))
    };
    if hull == old {
        return;
    }
    msg.structs[i].versions = hull;
    let children: Vec<(String, Versions)> = msg.structs[i]
        .fields
        .iter()
        .filter_map(|f| match &f.ty {
            Type::Struct(n) => Some((n.clone(), f.versions.intersect(hull))),
            Type::Array(t) => match &**t {
                Type::Struct(n) => Some((n.clone(), f.versions.intersect(hull))),
                _ => None,
            },
            _ => None,
        })
        .collect();
    for (child, v) in children {
        widen(msg, &child, v);
    }
}

fn check_default(f: &Field, ctx: &str) -> Result<(), String> {
    let Some(d) = &f.default else { return Ok(()) };
    let ok = match f.ty {
        Type::Bool => d == "true" || d == "false",
        Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 | Type::Uint16 | Type::Uint32 => {
            parse_int(d).is_some()
        }
        Type::Float64 => d.parse::<f64>().is_ok(),
        Type::String => true,
        _ => d == "null" && !f.nullable.is_empty(),
    };
    if d == "null" && f.nullable.is_empty() {
        return Err(format!("{ctx}: default null on a field that is never nullable"));
    }
    if ok { Ok(()) } else { Err(format!("{ctx}: default {d:?} does not fit type {}", f.ty.schema_name())) }
}

pub fn parse_int(s: &str) -> Option<i64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A field's `entityType`, as the name of its `reflect::Entity` variant.
fn entity(f: &Value, ctx: &str) -> Result<Option<&'static str>, String> {
    let Some(v) = f.get("entityType") else { return Ok(None) };
    Ok(Some(match v.as_str() {
        Some("topicName") => "TopicName",
        Some("groupId") => "GroupId",
        Some("transactionalId") => "TransactionalId",
        Some("producerId") => "ProducerId",
        Some("brokerId") => "BrokerId",
        _ => return Err(format!("{ctx}: unknown entityType {v}")),
    }))
}
