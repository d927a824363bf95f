//! `src/codec/messages/answers.rs`: what a server writes for a request without a handler
//! of its API: the response that refuses the whole request with one error code
//! (`ResponseBody::error_response`), and where a response keeps its top-level throttle time
//! (`throttle_time_at`), so that it can be set after the response is written.
//!
//! Both come from the response schemas' top level: one arm per API for the first (it builds
//! a typed value), and arms grouped by offset for the second.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::layout::StructLayout;
use super::{Api, Ctx, GENERATED_FROM_ALL, feature, q};
use crate::schema::{Field, Message, Type};
use crate::versions::{self, Cond, Versions};

/// The response's top-level field `name`, checked to be `ty` and written in place.
fn top_level<'m>(msg: &'m Message, name: &str, ty: Type) -> Option<(usize, &'m Field)> {
    let (i, f) = msg.structs[0].fields.iter().enumerate().find(|(_, f)| f.name == name)?;
    assert!(f.ty == ty, "{}.{name} is not {ty:?}", msg.name);
    assert!(f.tagged.is_empty(), "{}.{name} is tagged", msg.name);
    Some((i, f))
}

/// "The version is in `wanted`", over the variable `version`, for a message valid in `valid`.
/// A range with both ends inside `valid` reads as `(lo..=hi).contains(&version)`.
fn when(wanted: Versions, valid: Versions) -> Cond {
    let w = wanted.intersect(valid);
    match versions::cond(wanted, valid, "version") {
        Cond::If(_) if w.lo > valid.lo && w.hi < valid.hi && w.lo != w.hi => {
            Cond::If(format!("({}..={}).contains(&version)", w.lo, w.hi))
        }
        c => c,
    }
}

/// One arm of `error_response`: the API's default response, with its top-level
/// `ErrorCode` set where the version has one.
fn error_arm(a: &Api) -> String {
    let resp = a.response;
    let value = match top_level(resp, "ErrorCode", Type::Int16) {
        None => "Default::default()".to_string(),
        Some((_, f)) => {
            let code = match when(f.versions, resp.valid) {
                Cond::Always => "code".to_string(),
                Cond::Never => unreachable!("{}.ErrorCode is in no valid version", resp.name),
                Cond::If(c) => format!("if {c} {{ code }} else {{ 0 }}"),
            };
            format!("{} {{ error_code: {code}, ..Default::default() }}", resp.name)
        }
    };
    let cfg = feature(&a.name).map(|f| format!("#[cfg(feature = {})]\n", q(&f))).unwrap_or_default();
    format!("{cfg}ApiKey::{n} => Self::{n}({value}),\n", n = a.name)
}

/// Where an API's top-level throttle time is: after fixed-width fields only (an offset by
/// version, as an expression over `version`), or after a variable-length field (its view
/// finds it).
enum Throttle {
    Fixed(String),
    AfterVariable,
}

fn throttle(a: &Api) -> Option<(Cond, Throttle)> {
    let resp = a.response;
    let (i, f) = top_level(resp, "ThrottleTimeMs", Type::Int32)?;
    let s = &resp.structs[0];
    let layout = StructLayout::of(&Ctx { msg: resp }, s);
    let place = &layout.places[i];
    let inline = f.inline_versions().intersect(resp.valid);
    let at = match place.base {
        Some(_) => Throttle::AfterVariable,
        None => {
            let runs = versions::runs(inline, |v| {
                place.fixed.iter().filter(|(vs, _)| vs.contains(v)).map(|(_, w)| w).sum::<usize>()
            });
            Throttle::Fixed(versions::show_runs(&runs, "version", |n| n.to_string()))
        }
    };
    Some((when(inline, resp.valid), at))
}

/// `src/codec/messages/answers.rs`.
pub fn module(apis: &[Api]) -> String {
    let mut o = String::from(GENERATED_FROM_ALL);
    o.push_str(
        "//! What a server writes for a request without a handler of its API: the response that\n\
         //! refuses the whole request ([`ResponseBody::error_response`]), and where a response\n\
         //! keeps its throttle time ([`throttle_time_at`]).\n\n",
    );
    o.push_str("#[allow(unused_imports)]\nuse super::*;\nuse crate::ApiKey;\nuse crate::codec::error_code::ErrorCode;\n\n");

    o.push_str("impl ResponseBody<'static> {\n");
    o.push_str(
        "    /// The response of `api_key` at `version` that refuses a whole request with `code`\n\
         /// (what Kafka's `getErrorResponse` is for): every field at its default but the\n\
         /// top-level `ErrorCode`, set to `code` where the version has one. A response that\n\
         /// reports errors only per entry (per topic, partition, group or resource) is\n\
         /// answered with its defaults, and so with no entries.\n\
         /// `None` for an API this build leaves out.\n",
    );
    // Only APIs behind features have a top-level `ErrorCode` that some versions lack.
    o.push_str("    #[cfg_attr(not(feature = \"all-apis\"), allow(unused_variables))]\n");
    o.push_str(
        "    pub fn error_response(api_key: ApiKey, version: i16, code: ErrorCode) -> Option<Self> {\n",
    );
    o.push_str("        let code = code.to_i16();\n        Some(match api_key {\n");
    for a in apis {
        o.push_str(&error_arm(a));
    }
    o.push_str("            // An API this build leaves out.\n            #[allow(unreachable_patterns)]\n            _ => return None,\n        })\n    }\n}\n\n");

    // The arms of `throttle_time_at`, the APIs with the same condition and offset together.
    let mut fixed: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    let mut variable = Vec::new();
    for a in apis {
        let Some((cond, at)) = throttle(a) else { continue };
        let guard = match cond {
            Cond::Always => String::new(),
            Cond::Never => continue,
            Cond::If(c) => format!(" if {c}"),
        };
        match at {
            Throttle::Fixed(offset) => fixed.entry((guard, offset)).or_default().push(&a.name),
            Throttle::AfterVariable => variable.push((guard, a)),
        }
    }
    o.push_str(
        "/// Where the top-level `ThrottleTimeMs` of a response body of `api_key` at `version`\n\
         /// starts, when the version (one kwire supports) has the field. Only the responses\n\
         /// where a variable-length field comes first (ApiVersions, Produce, ...) read\n\
         /// `body`, through their views; the others have it at an offset fixed by the\n\
         /// version, so `body` may be partial there (a Fetch response whose records are still\n\
         /// to come).\n",
    );
    o.push_str("pub fn throttle_time_at(api_key: ApiKey, version: i16, body: &[u8]) -> Option<usize> {\n");
    o.push_str("    match api_key {\n");
    for ((guard, offset), names) in &fixed {
        let pat: Vec<String> = names.iter().map(|n| format!("ApiKey::{n}")).collect();
        writeln!(o, "        {}{guard} => Some({offset}),", pat.join(" | ")).unwrap();
    }
    for (guard, a) in &variable {
        let cfg = feature(&a.name).map(|f| format!("#[cfg(feature = {})]\n", q(&f))).unwrap_or_default();
        writeln!(
            o,
            "{cfg}ApiKey::{n}{guard} => {n}ResponseView::new(body, version).ok().map(|v| v.throttle_time_ms_at()),",
            n = a.name
        )
        .unwrap();
    }
    o.push_str("        _ => None,\n    }\n}\n");
    o
}
