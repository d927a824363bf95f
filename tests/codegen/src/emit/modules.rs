//! The API list and the module lists: `src/codec/api_key/table.rs` (`ApiKey` and its version
//! tables), `src/codec/messages/mod.rs` (the modules, and the rows the dispatch enums are built
//! from) and `src/codec/reference/mod.rs`.

use std::fmt::Write as _;

use super::{Api, GENERATED_FROM_ALL, feature, q, snake};
use crate::versions::Versions;

pub(super) fn cfg_line(api: &str) -> String {
    match feature(api) {
        Some(f) => format!("#[cfg(feature = {})]\n", q(&f)),
        None => String::new(),
    }
}

fn range(v: Versions) -> String {
    let hi = if v.hi == i16::MAX { "i16::MAX".to_string() } else { v.hi.to_string() };
    format!("Versions::new({}, {hi})", v.lo)
}

/// `src/codec/api_key/table.rs`: `ApiKey` and the facts of every API (key, name, feature,
/// versions), below the messages so that framing and encoding need not import them.
pub fn api_key(apis: &[Api]) -> String {
    let mut o = String::new();
    o.push_str(GENERATED_FROM_ALL);
    o.push_str("//! `ApiKey` and its tables, one arm per API.\n\n");
    o.push_str("use crate::codec::types::Versions;\n\n");
    o.push_str("/// The APIs this crate supports, with their version tables.\n");
    o.push_str("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[non_exhaustive]\npub enum ApiKey {\n");
    for a in apis {
        writeln!(o, "    /// {} (key {}).\n    {} = {},", a.name, a.key, a.name, a.key).unwrap();
    }
    o.push_str("}\n\nimpl ApiKey {\n");
    o.push_str("    /// Every supported API, by key.\n    pub const ALL: &'static [ApiKey] = &[\n");
    for a in apis {
        writeln!(o, "        ApiKey::{},", a.name).unwrap();
    }
    o.push_str("    ];\n\n");
    o.push_str("    /// The API with this key, if this crate supports it.\n    pub const fn from_i16(key: i16) -> Option<ApiKey> {\n        match key {\n");
    for a in apis {
        writeln!(o, "            {} => Some(ApiKey::{}),", a.key, a.name).unwrap();
    }
    o.push_str("            _ => None,\n        }\n    }\n\n");
    let table = |o: &mut String, doc: &str, sig: &str, arm: &dyn Fn(&Api) -> String| {
        writeln!(o, "    /// {doc}\n    pub const fn {sig} {{\n        match self {{").unwrap();
        for a in apis {
            writeln!(o, "            ApiKey::{} => {},", a.name, arm(a)).unwrap();
        }
        o.push_str("        }\n    }\n\n");
    };
    table(
        &mut o,
        "Whether this build has the API's messages: every API has a feature `api-<name>` (all\n    /// are on by default, through `all-apis`); ApiVersions is always there.",
        "is_enabled(self) -> bool",
        &|a| match feature(&a.name) {
            Some(f) => format!("cfg!(feature = {})", q(&f)),
            None => "true".into(),
        },
    );
    table(&mut o, "The API's name, as Kafka spells it.", "name(self) -> &'static str", &|a| q(&a.name));
    table(&mut o, "The request versions this crate supports.", "request_versions(self) -> Versions", &|a| {
        range(a.request.valid)
    });
    table(
        &mut o,
        "The response versions this crate supports.",
        "response_versions(self) -> Versions",
        &|a| range(a.response.valid),
    );
    table(
        &mut o,
        "The versions that use the flexible encoding (compact strings and arrays, tagged fields).",
        "flexible_versions(self) -> Versions",
        &|a| range(a.request.flexible),
    );
    o.truncate(o.len() - 1);
    o.push_str("}\n");
    o
}

/// `src/codec/messages/mod.rs`: the module list and the rows of dispatch.
pub fn messages(apis: &[Api]) -> String {
    let mut o = String::new();
    o.push_str(GENERATED_FROM_ALL);
    o.push_str("//! Every supported message: data types with encoders, and zero-copy views.\n//!\n");
    o.push_str("//! | API | key | request versions | response versions | flexible from |\n//! |---|---:|---|---|---|\n");
    for a in apis {
        writeln!(
            o,
            "//! | [{}]({}) | {} | {} | {} | {} |",
            a.name,
            snake(&a.name),
            a.key,
            a.request.valid,
            a.response.valid,
            a.request.flexible.lo
        )
        .unwrap();
    }
    o.push_str("\n// The macros that turn the table below into the dispatch enums (by hand).\nmod table;\n\n// Each response's error answer and where its throttle time is (generated).\nmod answers;\npub use answers::throttle_time_at;\n\nuse crate::ApiKey;\nuse table::{api_table, dispatch};\n\n");
    for a in apis {
        writeln!(o, "{}pub mod {};", cfg_line(&a.name), snake(&a.name)).unwrap();
    }
    o.push_str("\napi_table! {\n");
    for a in apis {
        let feature = feature(&a.name).map(|f| format!("feature: {}, ", q(&f))).unwrap_or_default();
        writeln!(o, "    {} {{", a.name).unwrap();
        writeln!(o, "        module: {}, {feature}", snake(&a.name)).unwrap();
        writeln!(o, "        request: {n}Request, {n}RequestView,", n = a.name).unwrap();
        writeln!(o, "        response: {n}Response, {n}ResponseView,", n = a.name).unwrap();
        o.push_str("    }\n");
    }
    o.push_str("}\n");
    o.push_str(&super::entities::table(apis));
    o
}

/// `src/codec/reference/mod.rs`: the reference decoder's modules, one per API.
pub fn reference(apis: &[Api]) -> String {
    let mut o = String::from("// @generated by tests/codegen. Do not edit by hand.\n\n");
    o.push_str("//! Owned values from views (`From<…View>`, feature `owned`), and the reference decoder:\n");
    o.push_str("//! owned values decoded by a separate, straightforward, allocating code path\n");
    o.push_str(
        "//! (`Message::decode`, feature `reference`). Fuzz targets hold the two against each other.\n\n",
    );
    o.push_str("mod convert;\n#[cfg(feature = \"reference\")]\nmod read;\n\n");
    for a in apis {
        writeln!(o, "{}mod {};", cfg_line(&a.name), snake(&a.name)).unwrap();
    }
    o.push_str("\npub(crate) use convert::*;\n#[cfg(feature = \"reference\")]\npub(crate) use read::*;\n");
    o
}
