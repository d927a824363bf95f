//! The `reflect` tables against the schema files they are generated from: every message of
//! `src/codec/schema/*.json` (the headers aside), and in it every field at every depth, common
//! structs included, says in `kwire::reflect` what its file says.
//!
//! Compared: the message's name, API key, direction, valid and flexible versions and
//! `about`; for each field, in order, its name, type (nested struct names included; a struct
//! name that the request and response share is prefixed with the message's name), versions,
//! nullable and tagged versions, tag, default (as written), `ignorable`, `entityType` and
//! `about`. A field of the file that the table lacks, or the other way round, fails.

#![cfg(feature = "reflect")]

use std::path::Path;

use kwire::ApiKey;
use kwire::reflect::{FieldSchema, FieldType, MessageSchema, StructSchema, request_schema, response_schema};
use kwire::types::Versions;
use serde_json::Value;

/// `"none"`, `"N"`, `"N+"` or `"A-B"`, as the generator reads them (`None` when absent).
fn versions(v: Option<&Value>) -> Option<(i16, i16)> {
    let s = v?.as_str().expect("versions are strings").trim();
    let n = |t: &str| t.trim().parse::<i16>().expect("a version number");
    if s == "none" {
        None
    } else if let Some(lo) = s.strip_suffix('+') {
        Some((n(lo), i16::MAX))
    } else if let Some((lo, hi)) = s.split_once('-') {
        Some((n(lo), n(hi)))
    } else {
        Some((n(s), n(s)))
    }
}

fn same_versions(have: Versions, want: Option<(i16, i16)>) -> bool {
    match want {
        None => have.is_empty(),
        Some((lo, hi)) => have.min == lo && have.max == hi,
    }
}

fn type_name(ty: &FieldType) -> String {
    let mut s = String::new();
    ty.write_name(&mut s).unwrap();
    s
}

/// The struct a field's type names, if it is a struct or an array of structs.
fn struct_of(ty: &FieldType) -> Option<&'static StructSchema> {
    match ty {
        FieldType::Struct(s) => Some(s),
        FieldType::Array(t) => struct_of(t),
        _ => None,
    }
}

struct Check<'j> {
    message: &'j str,
    common: &'j [Value],
    errors: Vec<String>,
    fields: usize,
}

impl Check<'_> {
    fn expect(
        &mut self,
        ok: bool,
        path: &str,
        what: &str,
        have: impl std::fmt::Debug,
        want: impl std::fmt::Debug,
    ) {
        if !ok {
            self.errors.push(format!("{path}: {what}: the table has {have:?}, the file {want:?}"));
        }
    }

    fn fields(&mut self, path: &str, table: &StructSchema, file: &Value) {
        let file = file.as_array().expect("fields is an array");
        self.expect(table.fields.len() == file.len(), path, "field count", table.fields.len(), file.len());
        for (have, want) in table.fields.iter().zip(file) {
            self.field(path, have, want);
        }
    }

    fn field(&mut self, parent: &str, have: &FieldSchema, want: &Value) {
        self.fields += 1;
        let name = want["name"].as_str().expect("a field name");
        let path = format!("{parent}.{name}");
        self.expect(have.name == name, &path, "name", have.name, name);

        let file_ty = want["type"].as_str().expect("a field type");
        let table_ty = type_name(&have.ty);
        // Vote's `PartitionData`, say, is `VoteRequestPartitionData` in the request's table.
        let (prefix, elem) = match file_ty.strip_prefix("[]") {
            Some(e) => ("[]", e),
            None => ("", file_ty),
        };
        let renamed = format!("{prefix}{}{elem}", self.message);
        let ok = table_ty == file_ty || (struct_of(&have.ty).is_some() && table_ty == renamed);
        self.expect(ok, &path, "type", &table_ty, file_ty);

        self.expect(
            same_versions(have.versions, versions(want.get("versions"))),
            &path,
            "versions",
            have.versions,
            want.get("versions"),
        );
        let nullable = want.get("nullableVersions");
        self.expect(
            same_versions(have.nullable_versions, versions(nullable)),
            &path,
            "nullable versions",
            have.nullable_versions,
            nullable,
        );
        let tagged = want.get("taggedVersions");
        self.expect(
            same_versions(have.tagged_versions, versions(tagged)),
            &path,
            "tagged versions",
            have.tagged_versions,
            tagged,
        );
        let tag = want.get("tag").map(|t| t.as_u64().expect("a numeric tag") as u32);
        self.expect(have.tag == tag, &path, "tag", have.tag, tag);
        // A default the file writes as a number or a boolean would be lost by the generator,
        // which reads strings: it shows here as a difference.
        let default = want.get("default").map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_string));
        self.expect(have.default == default.as_deref(), &path, "default", have.default, &default);
        let ignorable = want.get("ignorable").and_then(Value::as_bool).unwrap_or(false);
        self.expect(have.ignorable == ignorable, &path, "ignorable", have.ignorable, ignorable);
        let entity = want.get("entityType").and_then(Value::as_str);
        let have_entity = have.entity.map(|e| e.schema_name());
        self.expect(have_entity == entity, &path, "entityType", have_entity, entity);
        let about = want["about"].as_str().expect("an about");
        self.expect(have.about == about, &path, "about", have.about, about);

        if let Some(inner) = struct_of(&have.ty) {
            let sub = match want.get("fields") {
                Some(f) => f,
                None => {
                    let common = self.common.iter().find(|c| c["name"].as_str() == Some(elem));
                    match common {
                        Some(c) => &c["fields"],
                        None => {
                            self.errors.push(format!("{path}: struct {elem} has no fields in the file"));
                            return;
                        }
                    }
                }
            };
            self.fields(&path, inner, sub);
        } else if want.get("fields").is_some() {
            self.errors.push(format!("{path}: the file has nested fields, the table a {table_ty}"));
        }
    }
}

#[test]
fn every_table_says_what_its_schema_file_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codec/schema");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().ends_with("Header.json"))
        .collect();
    files.sort();
    let mut errors = Vec::new();
    let (mut messages, mut fields) = (0, 0);
    for file in &files {
        let json: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let key = json["apiKey"].as_i64().unwrap() as i16;
        let api =
            ApiKey::from_i16(key).unwrap_or_else(|| panic!("{}: API key {key} unknown", file.display()));
        let is_request = json["type"] == "request";
        let table: &MessageSchema = if is_request { request_schema(api) } else { response_schema(api) };
        let name = json["name"].as_str().unwrap();
        let mut at = |ok: bool, what: &str, have: String, want: String| {
            if !ok {
                errors.push(format!("{name}: {what}: the table has {have}, the file {want}"));
            }
        };
        at(table.name == name, "name", table.name.into(), name.into());
        at(table.api_key == key, "API key", table.api_key.to_string(), key.to_string());
        at(table.is_request == is_request, "direction", table.is_request.to_string(), is_request.to_string());
        let valid = versions(json.get("validVersions"));
        at(
            same_versions(table.versions, valid),
            "versions",
            format!("{:?}", table.versions),
            format!("{valid:?}"),
        );
        let flexible = versions(json.get("flexibleVersions"));
        let ok = same_versions(table.flexible_versions, flexible);
        at(ok, "flexible versions", format!("{:?}", table.flexible_versions), format!("{flexible:?}"));
        let about = json["about"].as_str().unwrap();
        at(table.about == about, "about", table.about.into(), about.into());
        at(table.body.name == name, "body name", table.body.name.into(), name.into());

        let common = json.get("commonStructs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let mut check = Check { message: name, common, errors: Vec::new(), fields: 0 };
        check.fields(name, table.body, &json["fields"]);
        errors.extend(check.errors);
        messages += 1;
        fields += check.fields;
    }
    assert!(errors.is_empty(), "{} differences:\n{}", errors.len(), errors.join("\n"));
    // Every file was read, and every API has a request and a response.
    assert_eq!(messages, files.len());
    assert!(messages >= 2 * 90, "{messages} messages");
    println!("{messages} messages, {fields} fields: the tables match the files");
}

/// Whether a struct, or one nested in it at any depth, has a `Host` string and a `Port`
/// int32.
#[cfg(feature = "alloc")]
fn has_address(s: &'static StructSchema) -> bool {
    let host = s.fields.iter().any(|f| f.name == "Host" && matches!(f.ty, FieldType::String));
    let port = s.fields.iter().any(|f| f.name == "Port" && matches!(f.ty, FieldType::Int32));
    (host && port) || s.fields.iter().filter_map(|f| struct_of(&f.ty)).any(has_address)
}

#[cfg(feature = "alloc")]
#[test]
fn carries_addresses_is_what_the_response_schemas_say() {
    // UpdateRaftVoter's answer names the KRaft leader's address, but it is a controller's
    // request to the controllers, which no client sends through a broker or a proxy.
    let controllers_only = [ApiKey::UpdateRaftVoter];
    let wrong: Vec<&str> = ApiKey::ALL
        .iter()
        .filter(|key| !controllers_only.contains(key))
        .filter(|&&key| kwire::filter::carries_addresses(key) != has_address(response_schema(key).body))
        .map(|&key| response_schema(key).name)
        .collect();
    assert!(wrong.is_empty(), "carries_addresses disagrees with these response schemas: {wrong:?}");
}
