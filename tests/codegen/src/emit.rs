//! IR → Rust source.
//!
//! Every version check goes through [`cond`], which drops checks that are always true or
//! always false for the versions a struct can appear in, so the output carries only the
//! branches that can go both ways. Sizing and writing are emitted from the same walk over
//! the fields, and the view decoder, the skipper and the reference decoder likewise.

use std::fmt::Write as _;

use crate::schema::{Field, Message, Struct, Type, parse_int};
use crate::versions::{Cond, Versions, by_version, cond, cond_not};

const V: &str = "ver.version";

pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    match out.as_str() {
        "type" | "match" | "ref" | "mod" | "fn" | "struct" | "use" | "self" | "loop" | "move" => {
            format!("r#{out}")
        }
        _ => out,
    }
}

/// The API's name: the message name without `Request` / `Response`.
pub fn api_name(msg: &Message) -> &str {
    msg.name.strip_suffix("Request").or_else(|| msg.name.strip_suffix("Response")).unwrap_or(&msg.name)
}

struct Gen<'m> {
    msg: &'m Message,
    out: String,
}

/// Everything the emitter needs to know about one field within one struct.
struct F<'f> {
    f: &'f Field,
    s: &'f Struct,
    /// `"Struct.Field"`, for errors.
    path: String,
    ident: String,
    inline: Versions,
    tagged: Versions,
    /// Nullable in some version in which the field is present.
    nullable: bool,
}

impl<'f> F<'f> {
    fn new(s: &'f Struct, f: &'f Field) -> Self {
        let inline = f.inline_versions().intersect(s.versions);
        let tagged = f.tagged.intersect(s.versions);
        let present = Versions::new(f.versions.lo.max(s.versions.lo), f.versions.hi.min(s.versions.hi));
        F {
            f,
            s,
            path: format!("{}.{}", s.name, f.name),
            ident: snake(&f.name),
            inline,
            tagged,
            nullable: !f.nullable.intersect(present).is_empty(),
        }
    }

    fn elem(&self) -> &Type {
        match &self.f.ty {
            Type::Array(t) => t,
            t => t,
        }
    }
}

fn q(s: &str) -> String {
    format!("{s:?}")
}

impl Gen<'_> {
    fn line(&mut self, s: impl AsRef<str>) {
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn is_root(&self, s: &Struct) -> bool {
        s.name == self.msg.name
    }

    /// Whether `ver.flexible` is known for this struct: `Some(b)` when it is the same in
    /// every version the struct appears in.
    fn flex(&self, s: &Struct) -> Option<bool> {
        match cond(self.msg.flexible, s.versions, V) {
            Cond::Always => Some(true),
            Cond::Never => Some(false),
            Cond::If(_) => None,
        }
    }

    fn flex_expr(&self, s: &Struct) -> &'static str {
        match self.flex(s) {
            Some(true) => "true",
            Some(false) => "false",
            None => "ver.flexible",
        }
    }

    fn has_tags(&self, s: &Struct) -> bool {
        !self.msg.flexible.intersect(s.versions).is_empty()
    }

    fn needs_lifetime(&self, ty: &Type) -> bool {
        match ty {
            Type::String | Type::Bytes | Type::Records | Type::Array(_) => true,
            Type::Struct(n) => self.struct_needs_lifetime(self.msg.find(n)),
            _ => false,
        }
    }

    fn struct_needs_lifetime(&self, s: &Struct) -> bool {
        self.has_tags(s) || s.fields.iter().any(|f| self.needs_lifetime(&f.ty))
    }

    fn data_name(&self, name: &str) -> String {
        if self.struct_needs_lifetime(self.msg.find(name)) { format!("{name}<'a>") } else { name.to_string() }
    }

    fn data_elem_ty(&self, ty: &Type) -> String {
        match ty {
            Type::Bool => "bool".into(),
            Type::Int8 => "i8".into(),
            Type::Int16 => "i16".into(),
            Type::Int32 => "i32".into(),
            Type::Int64 => "i64".into(),
            Type::Uint16 => "u16".into(),
            Type::Uint32 => "u32".into(),
            Type::Float64 => "f64".into(),
            Type::Uuid => "Uuid".into(),
            Type::String => "Str<'a>".into(),
            Type::Bytes | Type::Records => "Bytes<'a>".into(),
            Type::Struct(n) => self.data_name(n),
            Type::Array(t) => format!("List<'a, {}>", self.data_elem_ty(t)),
        }
    }

    fn data_ty(&self, f: &F) -> String {
        let t = self.data_elem_ty(&f.f.ty);
        if f.nullable { format!("Option<{t}>") } else { t }
    }

    fn view_elem_ty(&self, ty: &Type) -> String {
        match ty {
            Type::String => "&'a str".into(),
            Type::Bytes => "&'a [u8]".into(),
            Type::Records => "RecordBatches<'a>".into(),
            Type::Struct(n) => format!("{n}View<'a>"),
            Type::Array(t) => format!("ArrayView<'a, {}>", self.view_elem_ty(t)),
            t => self.data_elem_ty(t),
        }
    }

    fn view_ty(&self, f: &F) -> String {
        let t = self.view_elem_ty(&f.f.ty);
        if f.nullable || self.optional_struct(f) { format!("Option<{t}>") } else { t }
    }

    /// A struct field that is not in place in every version (tagged, or absent): its view
    /// accessor returns `None` where the bytes do not hold it, and the value takes the
    /// struct's defaults.
    fn optional_struct(&self, f: &F) -> bool {
        matches!(f.f.ty, Type::Struct(_)) && !f.nullable && f.inline != f.s.versions
    }

    /// The default value as a data expression.
    fn data_default(&self, f: &F) -> String {
        let d = f.f.default.as_deref();
        if f.nullable && d == Some("null") {
            return "None".into();
        }
        let v = match &f.f.ty {
            Type::Bool => d.unwrap_or("false").to_string(),
            Type::Float64 => format!("{:?}", d.map_or(0.0, |d| d.parse::<f64>().unwrap())),
            Type::Uuid => "Uuid::ZERO".into(),
            Type::String => format!("Str::Borrowed({})", q(d.unwrap_or(""))),
            Type::Bytes | Type::Records | Type::Array(_) => "List::Borrowed(&[])".into(),
            Type::Struct(n) => format!("{n}::default()"),
            ty => int_default(ty, d),
        };
        if f.nullable { format!("Some({v})") } else { v }
    }

    /// The default value as a view expression.
    fn view_default(&self, f: &F) -> String {
        let d = f.f.default.as_deref();
        if (f.nullable && d == Some("null")) || matches!(f.f.ty, Type::Struct(_)) {
            return "None".into();
        }
        let v = match &f.f.ty {
            Type::String => q(d.unwrap_or("")),
            Type::Bytes => "&[]".into(),
            Type::Records => "RecordBatches::new(&[])".into(),
            Type::Array(_) => "ArrayView::empty(ver)".to_string(),
            Type::Struct(_) => "None".to_string(),
            _ => self.data_default(f),
        };
        if f.nullable { format!("Some({v})") } else { v }
    }

    /// An expression that is true when the data field `x` differs from its default.
    fn non_default(&self, f: &F, x: &str) -> String {
        let d = f.f.default.as_deref();
        match &f.f.ty {
            Type::String if f.nullable && d == Some("null") => format!("{x}.is_some()"),
            Type::String if f.nullable => format!("{x}.as_deref() != Some({})", q(d.unwrap_or(""))),
            Type::String => format!("{x}.as_str() != {}", q(d.unwrap_or(""))),
            Type::Bytes | Type::Records | Type::Array(_) if f.nullable && d == Some("null") => {
                format!("{x}.is_some()")
            }
            Type::Bytes | Type::Records | Type::Array(_) if f.nullable => {
                format!("!{x}.as_ref().is_some_and(|v| v.is_empty())")
            }
            Type::Bytes | Type::Records | Type::Array(_) => format!("!{x}.is_empty()"),
            Type::Struct(_) if f.nullable => format!("{x}.is_some()"),
            Type::Bool if d == Some("true") => format!("!{x}"),
            Type::Bool => x.to_string(),
            _ => format!("{x} != {}", self.data_default(f)),
        }
    }

    // ----------------------------------------------------------------- data types

    fn emit_data_struct(&mut self, s: &Struct) {
        let name = self.data_name(&s.name);
        self.doc(&s.about, "");
        if self.is_root(s) {
            self.line(format!(
                "///\n/// Versions {}; flexible from version {}. Decode it without allocating with [`{}View`].",
                self.msg.valid, self.msg.flexible.lo, s.name
            ));
        }
        // Default is derived unless a field's default differs from its type's.
        let derived = s.fields.iter().all(|f| {
            let d = self.data_default(&F::new(s, f));
            matches!(
                d.as_str(),
                "0" | "false" | "0.0" | "Str::Borrowed(\"\")" | "List::Borrowed(&[])" | "None" | "Uuid::ZERO"
            ) || d.ends_with("::default()")
        });
        // `float64` fields compare by their bits (below), so that equality is reflexive with
        // NaN; every other struct derives it.
        let floats = s.fields.iter().any(|f| f.ty == Type::Float64);
        let eq = if floats { "" } else { ", PartialEq, Eq" };
        let default = if derived { ", Default" } else { "" };
        self.line(format!("#[derive(Clone, Debug{default}{eq})]"));
        self.line("#[cfg_attr(feature = \"arbitrary\", derive(arbitrary::Arbitrary))]");
        self.line(format!("pub struct {name} {{"));
        for f in &s.fields {
            let f = F::new(s, f);
            // The description, then the schema's facts, in one paragraph.
            self.doc(&format!("{} {}", f.f.about, field_facts(&f)), "    ");
            let ty = self.data_ty(&f);
            self.line(format!("    pub {}: {ty},", f.ident));
        }
        if self.has_tags(s) {
            self.line(
                "    /// Tagged fields this schema does not know, kept so that they can be written back.",
            );
            self.line("    pub unknown_tagged_fields: List<'a, RawTaggedField<'a>>,");
        }
        self.line("}\n");

        let generics = if self.struct_needs_lifetime(s) { "<'a>" } else { "" };
        if floats {
            self.emit_bitwise_eq(s, &name, generics);
        }
        if derived {
            return;
        }
        self.line(format!("impl{generics} Default for {name} {{"));
        self.line("    fn default() -> Self {");
        self.line(format!("        {} {{", s.name));
        for f in &s.fields {
            let f = F::new(s, f);
            let d = self.data_default(&f);
            self.line(format!("            {}: {d},", f.ident));
        }
        if self.has_tags(s) {
            self.line("            unknown_tagged_fields: List::Borrowed(&[]),");
        }
        self.line("        }\n    }\n}\n");
    }

    /// `PartialEq` and `Eq` for a struct with `float64` fields, which compare by their bits
    /// (`f64::to_bits`): NaN equals a NaN of the same bits, and `0.0` differs from `-0.0`.
    fn emit_bitwise_eq(&mut self, s: &Struct, name: &str, generics: &str) {
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
        if self.has_tags(s) {
            terms.push("self.unknown_tagged_fields == other.unknown_tagged_fields".into());
        }
        self.line("/// Compares `float64` fields by their bits, so that every value equals itself (NaN included).");
        self.line(format!("impl{generics} PartialEq for {name} {{"));
        self.line("    fn eq(&self, other: &Self) -> bool {");
        self.line(format!("        {}", terms.join("\n            && ")));
        self.line("    }\n}\n");
        self.line(format!("impl{generics} Eq for {name} {{}}\n"));
    }

    fn doc(&mut self, text: &str, indent: &str) {
        for line in wrap(text, 92) {
            self.line(format!("{indent}/// {line}"));
        }
    }

    // ----------------------------------------------------------------- encoding

    fn size_expr(&self, f: &F, x: &str, in_write: bool) -> String {
        let flex = self.flex_expr(f.s);
        let p = q(&f.path);
        let t = if in_write { ".unwrap_or(0)" } else { "?" };
        let plain = |inner: &str| -> String {
            match &f.f.ty {
                Type::String => format!("wire::string_size({inner}.len(), {flex}, {p}){t}"),
                Type::Bytes | Type::Records => format!("wire::bytes_size({inner}.len(), {flex}, {p}){t}"),
                Type::Array(_) => format!("encode::array_size(&{inner}, ver, {p}){t}"),
                Type::Struct(_) => format!("{inner}.size(ver, {p}){t}"),
                ty => ty.fixed_width().unwrap().to_string(),
            }
        };
        if !f.nullable {
            return plain(x);
        }
        match &f.f.ty {
            Type::Array(_) => format!("encode::nullable_array_size({x}.as_deref(), ver, {p}){t}"),
            Type::Struct(_) => format!("match &{x} {{ Some(v) => 1 + {}, None => 1 }}", plain("v")),
            Type::String => {
                format!("match &{x} {{ Some(v) => {}, None => wire::null_size({flex}, false) }}", plain("v"))
            }
            _ => format!("match &{x} {{ Some(v) => {}, None => wire::null_size({flex}, true) }}", plain("v")),
        }
    }

    fn write_stmt(&self, f: &F, x: &str) -> String {
        let flex = self.flex_expr(f.s);
        match (&f.f.ty, f.nullable) {
            (Type::String, false) => format!("w.str(&{x}, {flex});"),
            (Type::String, true) => format!("w.nullable_str({x}.as_deref(), {flex});"),
            (Type::Bytes | Type::Records, false) => format!("w.bytes(&{x}, {flex});"),
            (Type::Bytes | Type::Records, true) => format!("w.nullable_bytes({x}.as_deref(), {flex});"),
            (Type::Array(_), false) => format!("encode::write_array(w, &{x}, ver);"),
            (Type::Array(_), true) => format!("encode::write_nullable_array(w, {x}.as_deref(), ver);"),
            (Type::Struct(_), false) => format!("{x}.write(w, ver);"),
            (Type::Struct(_), true) => {
                format!("match &{x} {{ Some(v) => {{ w.i8(1); v.write(w, ver); }} None => w.i8(-1), }}")
            }
            (ty, _) => format!("w.{}({x});", scalar_method(ty)),
        }
    }

    /// Checks run in the size step for a field in the versions where it is written in
    /// place: nulls where the version has no null.
    fn null_check(&self, f: &F, x: &str) -> Option<String> {
        if !f.nullable {
            return None;
        }
        let err = format!("return Err(EncodeError::NullNotAllowed {{ field: {} }});", q(&f.path));
        match cond_not(f.f.nullable, f.inline, V) {
            Cond::Never => None,
            Cond::Always => Some(format!("if {x}.is_none() {{ {err} }}")),
            Cond::If(c) => Some(format!("if {x}.is_none() && {c} {{ {err} }}")),
        }
    }

    /// The check that a non-ignorable field the version cannot carry holds its default,
    /// in the versions where `absent` holds (`None`: every version it is checked in).
    fn absent_check(&self, f: &F, absent: Option<&str>) -> Option<String> {
        if f.f.ignorable {
            return None;
        }
        let x = format!("self.{}", f.ident);
        let mut test = self.non_default(f, &x);
        if let Some(c) = absent {
            test = format!("{c} && {}", paren_or(&test));
        }
        Some(format!("if {test} {{ return Err(encode::not_in_version({}, ver)); }}", q(&f.path)))
    }

    fn emit_encode(&mut self, s: &Struct) {
        let name = self.data_name(&s.name);
        let lt = if self.struct_needs_lifetime(s) { "<'_>" } else { "" };
        let _ = name;
        self.line(format!("impl Encode for {}{lt} {{", s.name));

        // size
        self.line("    #[inline]");
        let fn_start = self.out.len();
        self.line("    fn size(&self, VER: Ver, _: &'static str) -> Result<usize, EncodeError> {");
        let mut body = String::new();
        let mut fixed = 0usize;
        for field in &s.fields {
            let f = F::new(s, field);
            let x = format!("self.{}", f.ident);
            let size = self.size_expr(&f, &x, false);
            let is_fixed = f.f.ty.fixed_width().is_some();
            let mut present = Vec::new();
            if let Some(c) = self.null_check(&f, &x) {
                present.push(c);
            }
            let add = format!("n += {size};");
            present.push(add);
            let absent = match cond_not(f.tagged, s.versions, V) {
                Cond::Never => None,
                Cond::Always => self.absent_check(&f, None),
                Cond::If(c) => self.absent_check(&f, Some(&c)),
            };
            match cond(f.inline, s.versions, V) {
                Cond::Always if is_fixed && present.len() == 1 => fixed += f.f.ty.fixed_width().unwrap(),
                Cond::Always => {
                    for p in present {
                        writeln!(body, "        {p}").unwrap();
                    }
                }
                Cond::Never => {
                    if let Some(a) = absent {
                        writeln!(body, "        {a}").unwrap();
                    }
                }
                Cond::If(c) => {
                    writeln!(body, "        if {c} {{").unwrap();
                    for p in present {
                        writeln!(body, "            {p}").unwrap();
                    }
                    match absent {
                        // `a` is an `if`, so it chains as `} else if ...`.
                        Some(a) => writeln!(body, "        }} else {a}").unwrap(),
                        None => writeln!(body, "        }}").unwrap(),
                    }
                }
            }
        }
        let tagged: Vec<F> = self.tagged_fields(s);
        let known = known_tags(&tagged);
        let mut tag_body = String::new();
        if self.has_tags(s) && tagged.is_empty() {
            writeln!(
                tag_body,
                "n += wire::raw_tagged_fields_size(&self.unknown_tagged_fields, {})?;",
                q(&format!("{}._tagged_fields", s.name))
            )
            .unwrap();
        } else if self.has_tags(s) {
            writeln!(tag_body, "let mut tags = TaggedSize::new();").unwrap();
            for f in &tagged {
                let x = format!("self.{}", f.ident);
                let test = self.non_default(f, &x);
                let test = match cond(f.tagged, s.versions, V) {
                    Cond::If(c) => format!("{c} && {test}"),
                    _ => test,
                };
                let size = self.size_expr(f, &x, false);
                writeln!(
                    tag_body,
                    "if {test} {{ tags.field({}, {size}, {})?; }}",
                    f.f.tag.unwrap(),
                    q(&f.path)
                )
                .unwrap();
            }
            writeln!(
                tag_body,
                "n += tags.finish(&self.unknown_tagged_fields, &[{known}], {})?;",
                q(&format!("{}._tagged_fields", s.name))
            )
            .unwrap();
        }
        let adds = body.contains("n += ") || (tag_body.contains("n += ") && self.flex(s) != Some(false));
        if adds {
            self.line(format!("        let mut n = Size::new({fixed});"));
            self.out.push_str(&body);
            self.emit_if_flex(s, &tag_body, "        ");
            self.line(format!("        n.total({})\n    }}\n", q(&s.name)));
        } else {
            self.out.push_str(&body);
            self.line(format!("        Ok({fixed})\n    }}\n"));
        }
        self.name_ver_param(fn_start);

        // write
        self.line("    #[inline]");
        let fn_start = self.out.len();
        self.line("    fn write(&self, w: &mut Writer<'_>, VER: Ver) {");
        let fields: Vec<F> = s.fields.iter().map(|f| F::new(s, f)).collect();
        let mut i = 0;
        while i < fields.len() {
            let f = &fields[i];
            let c = cond(f.inline, s.versions, V);
            // Fixed-width fields present in the same versions are written as one chunk.
            let mut j = i;
            while j < fields.len() && fields[j].f.ty.fixed_width().is_some() && fields[j].inline == f.inline {
                j += 1;
            }
            let stmt = if j - i >= 2 {
                let total: usize = fields[i..j].iter().map(|f| f.f.ty.fixed_width().unwrap()).sum();
                let mut body = format!("w.fixed(|b: &mut [u8; {total}]| {{");
                let mut at = 0;
                for g in &fields[i..j] {
                    let width = g.f.ty.fixed_width().unwrap();
                    let bytes = match g.f.ty {
                        Type::Bool => format!("[u8::from(self.{})]", g.ident),
                        Type::Uuid => format!("self.{}.0", g.ident),
                        _ => format!("self.{}.to_be_bytes()", g.ident),
                    };
                    write!(body, "b[{at}..{}].copy_from_slice(&{bytes});", at + width).unwrap();
                    at += width;
                }
                body.push_str("});");
                body
            } else {
                j = i + 1;
                self.write_stmt(f, &format!("self.{}", f.ident))
            };
            match c {
                Cond::Always => self.line(format!("        {stmt}")),
                Cond::Never => {}
                Cond::If(c) => self.line(format!("        if {c} {{ {stmt} }}")),
            }
            i = j;
        }
        if self.has_tags(s) && tagged.is_empty() {
            self.emit_if_flex(s, "w.raw_tagged_fields(&self.unknown_tagged_fields);", "        ");
        } else if self.has_tags(s) {
            let mut t = String::new();
            writeln!(t, "let unknown = self.unknown_tagged_fields.as_slice();").unwrap();
            let mut count = String::from("unknown.len()");
            for f in &tagged {
                let x = format!("self.{}", f.ident);
                let test = self.non_default(f, &x);
                let test = match cond(f.tagged, s.versions, V) {
                    Cond::If(c) => format!("{c} && {test}"),
                    _ => test,
                };
                writeln!(t, "let write_{} = {test};", f.ident.trim_start_matches("r#")).unwrap();
                write!(count, " + usize::from(write_{})", f.ident.trim_start_matches("r#")).unwrap();
            }
            writeln!(t, "w.uvarint(({count}) as u32);").unwrap();
            writeln!(t, "let mut next = 0;").unwrap();
            for f in &tagged {
                let x = format!("self.{}", f.ident);
                let tag = f.f.tag.unwrap();
                writeln!(t, "if write_{} {{", f.ident.trim_start_matches("r#")).unwrap();
                writeln!(t, "    w.raw_tags_below(unknown, &mut next, Some({tag}));").unwrap();
                writeln!(t, "    w.tag_header({tag}, {});", self.size_expr(f, &x, true)).unwrap();
                writeln!(t, "    {}", self.write_stmt(f, &x)).unwrap();
                writeln!(t, "}}").unwrap();
            }
            writeln!(t, "w.raw_tags_below(unknown, &mut next, None);").unwrap();
            self.emit_if_flex(s, &t, "        ");
        }
        self.line("    }");
        self.name_ver_param(fn_start);

        // fixed size
        let expr = by_version(s.versions, V, |v| self.encode_fixed_size(s, v), show_opt);
        if expr != "None" {
            let fn_start = self.out.len();
            self.line(format!(
                "\n    #[inline]\n    fn fixed_size(VER: Ver) -> Option<usize> {{\n        {expr}\n    }}"
            ));
            self.name_ver_param(fn_start);
        }
        self.line("}\n");
    }

    /// Names the `VER` parameter of the function emitted from `start` on `ver`, or `_` when
    /// its body does not use it.
    fn name_ver_param(&mut self, start: usize) {
        let text = self.out.split_off(start);
        let at = text.find("VER").expect("a VER parameter");
        let line_end = at + text[at..].find('\n').unwrap_or(text.len() - at);
        let (head, body) = text.split_at(line_end);
        self.out.push_str(&head.replace("VER", if uses_ver(body) { "ver" } else { "_" }));
        self.out.push_str(body);
    }

    fn emit_if_flex(&mut self, s: &Struct, body: &str, indent: &str) {
        if body.is_empty() {
            return;
        }
        match self.flex(s) {
            Some(true) => {
                for l in body.lines() {
                    self.line(format!("{indent}{l}"));
                }
            }
            Some(false) => {}
            None => {
                self.line(format!("{indent}if ver.flexible {{"));
                for l in body.lines() {
                    self.line(format!("{indent}    {l}"));
                }
                self.line(format!("{indent}}}"));
            }
        }
    }

    fn tagged_fields<'s>(&self, s: &'s Struct) -> Vec<F<'s>> {
        let mut v: Vec<F> = s.fields.iter().map(|f| F::new(s, f)).filter(|f| !f.tagged.is_empty()).collect();
        v.sort_by_key(|f| f.f.tag);
        v
    }

    /// The fixed size of the struct in version `v` for the view decoder, if it has one.
    fn view_fixed_size(&self, s: &Struct, v: i16) -> Option<usize> {
        if self.msg.flexible.contains(v) {
            return None;
        }
        let mut n = 0;
        for f in &s.fields {
            if f.inline_versions().contains(v) {
                n += f.ty.fixed_width()?;
            }
        }
        Some(n)
    }

    fn encode_fixed_size(&self, s: &Struct, v: i16) -> Option<usize> {
        let n = self.view_fixed_size(s, v)?;
        let needs_check = s.fields.iter().any(|f| !f.ignorable && !f.versions.contains(v));
        if needs_check { None } else { Some(n) }
    }

    // ----------------------------------------------------------------- views

    /// Where each inline field of `s` starts: a base (the struct's start, or one of the
    /// offsets the view stores after each variable-length field) plus a version-dependent
    /// number of bytes of fixed-width fields.
    fn layout(&self, s: &Struct) -> StructLayout {
        let fields: Vec<&Field> = s.fields.iter().collect();
        let last_inline = fields.iter().rposition(|f| !f.inline_versions().intersect(s.versions).is_empty());
        let tagged_section = self.has_tags(s);
        let mut out =
            StructLayout { places: Vec::new(), anchors: 0, tags: Place { base: None, fixed: Vec::new() } };
        let mut base: Option<usize> = None;
        let mut fixed: Vec<(Versions, usize)> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let inline = f.inline_versions().intersect(s.versions);
            out.places.push(Place { base, fixed: fixed.clone() });
            if inline.is_empty() {
                continue;
            }
            match f.ty.fixed_width() {
                Some(w) => fixed.push((inline, w)),
                None => {
                    let more = last_inline.is_some_and(|l| i < l) || tagged_section;
                    if more {
                        base = Some(out.anchors);
                        out.anchors += 1;
                        fixed.clear();
                    }
                }
            }
        }
        out.tags = Place { base, fixed };
        out
    }

    /// The offset expression of `place`, over `ver` (the caller renames it), from `at`.
    /// `possible` narrows the versions to those in which the offset is used (a field read
    /// only where it exists), so that fewer of them need telling apart.
    fn place_expr(&self, s: &Struct, place: &Place, anchors: &str, possible: Versions) -> String {
        let possible = if possible.is_empty() { s.versions } else { possible };
        let sum = by_version(
            possible,
            V,
            |v| place.fixed.iter().filter(|(vs, _)| vs.contains(v)).map(|(_, w)| w).sum::<usize>(),
            |n| n.to_string(),
        );
        match (place.base, sum.as_str()) {
            (None, _) => sum,
            (Some(a), "0") => format!("{anchors}[{a}] as usize"),
            (Some(a), _) if sum.starts_with("if") => format!("{anchors}[{a}] as usize + ({sum})"),
            (Some(a), _) => format!("{anchors}[{a}] as usize + {sum}"),
        }
    }

    /// The bytes of fixed-width fields an all-fixed struct has in each version, if it is one.
    fn all_fixed(&self, s: &Struct) -> bool {
        s.fields
            .iter()
            .all(|f| f.inline_versions().intersect(s.versions).is_empty() || f.ty.fixed_width().is_some())
    }

    fn fixed_sum(&self, s: &Struct) -> String {
        by_version(
            s.versions,
            V,
            |v| {
                s.fields
                    .iter()
                    .filter(|f| f.inline_versions().contains(v))
                    .map(|f| f.ty.fixed_width().unwrap_or(0))
                    .sum::<usize>()
            },
            |n| n.to_string(),
        )
    }

    /// Reads field `f` of type `ty` at offset `off` of `src` (a view of checked bytes).
    fn view_read(&self, f: &F, src: &str, off: &str, nullable_now: &Cond) -> String {
        let flex = self.flex_expr(f.s);
        let pick = |plain: String, nullable: String| -> String {
            if !f.nullable {
                return plain;
            }
            match nullable_now {
                Cond::Never => format!("Some({plain})"),
                _ => nullable,
            }
        };
        match &f.f.ty {
            Type::String => {
                pick(format!("{src}.str({off}, {flex})"), format!("{src}.nullable_str({off}, {flex})"))
            }
            Type::Bytes => {
                pick(format!("{src}.bytes_at({off}, {flex})"), format!("{src}.nullable_bytes({off}, {flex})"))
            }
            Type::Records => pick(
                format!("RecordBatches::new({src}.bytes_at({off}, {flex}))"),
                format!("{src}.nullable_bytes({off}, {flex}).map(RecordBatches::new)"),
            ),
            Type::Array(_) => pick(
                format!("ArrayView::at({src}, {off}, ver)"),
                format!("ArrayView::nullable_at({src}, {off}, ver)"),
            ),
            Type::Struct(n) => {
                let marked = |off: &str| {
                    format!(
                        "if {src}.i8({off}) < 0 {{ None }} else {{ Some({n}View::at({src}, {off} + 1, ver).0) }}"
                    )
                };
                match (f.nullable, nullable_now) {
                    (false, _) if self.optional_struct(f) => {
                        format!("Some({n}View::at({src}, {off}, ver).0)")
                    }
                    (false, _) => format!("{n}View::at({src}, {off}, ver).0"),
                    (true, Cond::Never) => format!("Some({n}View::at({src}, {off}, ver).0)"),
                    (true, Cond::Always) => marked(off),
                    (true, Cond::If(c)) => {
                        format!(
                            "if {c} {{ {} }} else {{ Some({n}View::at({src}, {off}, ver).0) }}",
                            marked(off)
                        )
                    }
                }
            }
            ty => format!("{src}.{}({off})", scalar_method(ty)),
        }
    }

    /// The statement checking field `f` with reader `r`.
    fn view_check(&self, f: &F, r: &str) -> String {
        let flex = self.flex_expr(f.s);
        let p = q(&f.path);
        let nullable_now = cond(f.f.nullable, f.inline.intersect(f.s.versions), V);
        let pick = |plain: String, nullable: String| -> String {
            if !f.nullable {
                return plain;
            }
            match &nullable_now {
                Cond::Always => nullable,
                Cond::Never => plain,
                Cond::If(c) => format!("if {c} {{ {nullable} }} else {{ {plain} }}"),
            }
        };
        let elem = self.view_elem_ty(f.elem());
        match &f.f.ty {
            Type::String => pick(
                format!("{r}.check_str({flex}, {p})?;"),
                format!("{r}.check_nullable_str({flex}, {p})?;"),
            ),
            Type::Bytes | Type::Records => {
                pick(format!("{r}.bytes({flex}, {p})?;"), format!("{r}.nullable_bytes({flex}, {p})?;"))
            }
            Type::Array(_) => pick(
                format!("view::check_array::<{elem}>({r}, ver, {p})?;"),
                format!("view::check_nullable_array::<{elem}>({r}, ver, {p})?;"),
            ),
            Type::Struct(n) => pick(
                format!("{n}View::check({r}, ver, {p})?;"),
                format!("if {r}.i8({p})? >= 0 {{ {n}View::check({r}, ver, {p})?; }}"),
            ),
            ty => format!("{r}.take({}, {p})?;", ty.fixed_width().unwrap()),
        }
    }

    /// The expression for the offset after field `f`, which starts at `p` of `src`.
    fn view_skip(&self, f: &F, src: &str) -> String {
        let flex = self.flex_expr(f.s);
        let nullable_now = cond(f.f.nullable, f.inline.intersect(f.s.versions), V);
        let elem = self.view_elem_ty(f.elem());
        match &f.f.ty {
            Type::String => format!("{src}.skip_str(p, {flex})"),
            Type::Bytes | Type::Records => format!("{src}.skip_bytes(p, {flex})"),
            Type::Array(_) => format!("ArrayView::<{elem}>::skip({src}, p, ver)"),
            Type::Struct(n) => {
                let marked =
                    format!("if {src}.i8(p) < 0 {{ p + 1 }} else {{ {n}View::at({src}, p + 1, ver).1 }}");
                match (f.nullable, &nullable_now) {
                    (false, _) | (true, Cond::Never) => format!("{n}View::at({src}, p, ver).1"),
                    (true, Cond::Always) => marked,
                    (true, Cond::If(c)) => {
                        format!("if {c} {{ {marked} }} else {{ {n}View::at({src}, p, ver).1 }}")
                    }
                }
            }
            _ => unreachable!("fixed-width fields are added to p"),
        }
    }

    fn emit_view(&mut self, s: &Struct) {
        let n = &s.name;
        let root = self.is_root(s);
        let lay = self.layout(s);
        let k = lay.anchors;
        if root {
            self.line(format!("/// A zero-copy view of a {n} body: {}", lower_first(&s.about)));
            self.line("///");
            self.line(format!(
                "/// [`{n}View::new`] checks the whole body; after that accessors and iterators cannot fail."
            ));
        } else {
            self.line(format!("/// A zero-copy view of a {n}: {}", lower_first(&s.about)));
        }
        self.line("#[derive(Clone, Copy)]");
        self.line(format!("pub struct {n}View<'a> {{"));
        self.line("    src: Src<'a>,\n    ver: Ver,");
        if k > 0 {
            self.line(format!(
                "    /// Offsets of the fields after variable-length ones.\n    at: [u32; {k}],"
            ));
        }
        self.line("}\n");

        let debug_fields: Vec<String> = s.fields.iter().map(|f| snake(&f.name)).collect();
        if root {
            self.line(format!("body_view!({n}View, {n}{});", if k > 0 { ", at" } else { "" }));
        }
        self.line(format!("view_common!({n}View {{ {} }});\n", debug_fields.join(", ")));

        let impl_start = self.out.len();
        self.line(format!("impl<'a> {n}View<'a> {{"));
        let body_start = self.out.len();
        let tagged = self.tagged_fields(s);
        let flexible = s.versions.intersect(self.msg.flexible);
        let tag_off = self.place_expr(s, &lay.tags, "self.at", flexible);
        for (i, field) in s.fields.iter().enumerate() {
            let f = F::new(s, field);
            let ty = self.view_ty(&f);
            let ident = &f.ident;
            let field = ident.trim_start_matches("r#");
            self.line(format!("    /// See [`{n}::{field}`]({n}#structfield.{field}).", n = s.name));
            let present_inline = cond(f.inline, s.versions, V);
            let inline_read = {
                let off = self.place_expr(s, &lay.places[i], "self.at", f.inline.intersect(s.versions));
                let nullable_now = cond(f.f.nullable, f.inline.intersect(s.versions), V);
                self.view_read(&f, "self.src", &off, &nullable_now)
            };
            let tagged_read = (!f.tagged.is_empty()).then(|| {
                let nullable_now = cond(f.f.nullable, f.tagged.intersect(s.versions), V);
                let read = self.view_read(&f, "v", "0", &nullable_now);
                let default = self.view_default(&f);
                let tag_off = self.place_expr(s, &lay.tags, "self.at", f.tagged.intersect(flexible));
                let tag = format!("self.src.tag({tag_off}, {})", f.f.tag.unwrap());
                match read.strip_prefix("Some(").and_then(|r| r.strip_suffix(')')) {
                    Some(inner) if default == "None" && !inner.contains("Some(") => {
                        format!("{tag}.map(|v| {inner})")
                    }
                    _ if default == "None" => format!("{tag}.and_then(|v| {read})"),
                    _ if default == "false" => format!("{tag}.is_some_and(|v| {read})"),
                    _ => format!("{tag}.map_or({default}, |v| {read})"),
                }
            });
            let default = self.view_default(&f);
            let body = match (present_inline, tagged_read) {
                (Cond::Always, _) => inline_read,
                (Cond::Never, None) => default,
                (Cond::Never, Some(t)) => match cond(f.tagged, s.versions, V) {
                    Cond::Always => t,
                    Cond::Never => default,
                    Cond::If(c) => format!("if {c} {{ {t} }} else {{ {default} }}"),
                },
                (Cond::If(c), None) => format!("if {c} {{ {inline_read} }} else {{ {default} }}"),
                (Cond::If(c), Some(t)) => format!("if {c} {{ {inline_read} }} else {{ {t} }}"),
            };
            let body = self_ver(&body);
            self.line(format!(
                "    #[inline]\n    pub fn {ident}(&self) -> {ty} {{\n        {body}\n    }}\n"
            ));
        }
        if self.has_tags(s) {
            let known = known_tags(&tagged);
            let expr = match self.flex(s) {
                Some(true) => format!("self.src.tagged({tag_off}, &[{known}])"),
                _ => format!(
                    "if self.ver.flexible {{ self.src.tagged({tag_off}, &[{known}]) }} else {{ TaggedIter::EMPTY }}"
                ),
            };
            self.line(format!(
                "    /// The tagged fields this schema does not know, as `(tag, bytes)` in wire order.\n    #[inline]\n    pub fn unknown_tagged_fields(&self) -> TaggedIter<'a> {{\n        {}\n    }}\n",
                expr.replace("ver.version", "self.ver.version")
            ));
        }

        if root {
            self.emit_check_pass(s, &lay, true);
        }
        if self.out.len() == body_start {
            // No accessors: no inherent impl.
            self.out.truncate(impl_start);
        } else {
            self.line("}\n");
        }

        // Element access over checked bytes.
        if !root {
            self.emit_view_element(s, &lay);
        }
    }

    /// The checking pass: every byte, once. A body's (`checked`) records the offsets its view
    /// keeps; an element's (`ElementImpl::check`) records nothing, as `at` finds them again.
    fn emit_check_pass(&mut self, s: &Struct, lay: &StructLayout, root: bool) {
        let n = &s.name;
        let k = if root { lay.anchors } else { 0 };
        let tagged = self.tagged_fields(s);
        let fn_start = self.out.len();
        if root {
            self.line(format!(
                "    #[inline]\n    fn checked(r: &mut Reader<'a>, VER: Ver) -> Result<[u32; {k}], DecodeError> {{"
            ));
        } else {
            self.line(
                "    #[inline]\n    fn check(r: &mut Reader<'a>, VER: Ver, _: &'static str) -> Result<(), DecodeError> {",
            );
        }
        if k > 0 {
            self.line(format!("        let start = r.pos();\n        let mut at = [0; {k}];"));
        }
        let mut anchor = 0;
        let fields: Vec<F> = s.fields.iter().map(|f| F::new(s, f)).collect();
        let mut i = 0;
        while i < fields.len() {
            let f = &fields[i];
            let c = cond(f.inline, s.versions, V);
            if matches!(c, Cond::Never) {
                i += 1;
                continue;
            }
            if let Some(w) = f.f.ty.fixed_width() {
                // A run of fixed-width fields present in the same versions: one bounds check.
                let mut run = vec![(f.path.clone(), w)];
                let mut j = i + 1;
                while j < fields.len()
                    && fields[j].f.ty.fixed_width().is_some()
                    && fields[j].inline == f.inline
                {
                    run.push((fields[j].path.clone(), fields[j].f.ty.fixed_width().unwrap()));
                    j += 1;
                }
                let stmt = if run.len() == 1 {
                    format!("r.take({w}, {})?;", q(&f.path))
                } else {
                    let total: usize = run.iter().map(|(_, w)| w).sum();
                    let list =
                        run.iter().map(|(p, w)| format!("({}, {w})", q(p))).collect::<Vec<_>>().join(", ");
                    format!("r.run({total}, &[{list}])?;")
                };
                self.line(format!("        {}", wrap_cond(&c, &stmt)));
                // Skip over fields absent everywhere inside the run.
                i = j;
                continue;
            }
            self.line(format!("        {}", wrap_cond(&c, &self.view_check(f, "r"))));
            if anchor < k && lay_anchor_after(lay, i, anchor) {
                self.line(format!("        at[{anchor}] = (r.pos() - start) as u32;"));
                anchor += 1;
            }
            i += 1;
        }
        if self.has_tags(s) {
            let arms = self.tag_match(s, &tagged, |g, f| {
                let chk = g.view_check(f, "value");
                format!("{{ {chk} }}")
            });
            // A struct of fixed-width fields with tagged fields has no one stride (see
            // `Ver::uniform`), wherever it is.
            let method = if self.all_fixed(s) { "fixed_struct_tagged_fields" } else { "tagged_fields" };
            let field = q(&format!("{n}._tagged_fields"));
            self.emit_if_flex(s, &format!("r.{method}({field}, {arms})?;"), "        ");
        }
        self.line(match (root, k > 0) {
            (false, _) => "        Ok(())\n    }",
            (true, true) => "        Ok(at)\n    }",
            (true, false) => "        Ok([])\n    }",
        });
        self.name_ver_param(fn_start);
    }

    fn emit_view_element(&mut self, s: &Struct, lay: &StructLayout) {
        let n = &s.name;
        let fields: Vec<F> = s.fields.iter().map(|f| F::new(s, f)).collect();
        let k = lay.anchors;
        self.line(format!("impl<'a> ElementImpl<'a> for {n}View<'a> {{"));
        let layout_expr = by_version(
            s.versions,
            V,
            |v| {
                if !self.all_fixed_in(s, v) {
                    "Layout::Var".to_string()
                } else {
                    let w: usize = s
                        .fields
                        .iter()
                        .filter(|f| f.inline_versions().contains(v))
                        .map(|f| f.ty.fixed_width().unwrap())
                        .sum();
                    if self.msg.flexible.contains(v) {
                        format!("Layout::Tagged({w})")
                    } else {
                        format!("Layout::Fixed({w})")
                    }
                }
            },
            |s| s.clone(),
        );
        // `Layout::Var` is the trait's default.
        if layout_expr != "Layout::Var" {
            let fn_start = self.out.len();
            self.line(format!(
                "    #[inline]\n    fn layout(VER: Ver) -> Layout {{\n        {layout_expr}\n    }}\n"
            ));
            self.name_ver_param(fn_start);
        }
        self.emit_check_pass(s, lay, false);
        self.line("");
        let fn_start = self.out.len();
        self.line("    #[inline]\n    fn at(src: Src<'a>, pos: usize, VER: Ver) -> (Self, usize) {");
        if self.all_fixed(s) {
            let sum = self.fixed_sum(s);
            let end = match self.flex(s) {
                Some(false) => format!("pos + {sum}"),
                _ => format!("view::fixed_end(src, pos, {sum}, ver)"),
            };
            self.line(format!(
                "        let end = {end};\n        ({}, end)\n    }}",
                self_init(k, "src.sub(pos, end)")
            ));
        } else {
            if k > 0 {
                self.line(format!("        let mut at = [0; {k}];"));
            }
            let mut anchor = 0;
            let mut pending: Vec<(Versions, usize)> = Vec::new();
            let mut first = true;
            let flush =
                |g: &Self, pending: &mut Vec<(Versions, usize)>, first: &mut bool, out: &mut Vec<String>| {
                    let sum = by_version(
                        s.versions,
                        V,
                        |v| pending.iter().filter(|(vs, _)| vs.contains(v)).map(|(_, w)| w).sum::<usize>(),
                        |n| n.to_string(),
                    );
                    let _ = g;
                    if *first {
                        out.push(if sum == "0" {
                            "let mut p = pos;".into()
                        } else {
                            format!("let mut p = pos + {}", paren(&sum)) + ";"
                        });
                        *first = false;
                    } else if sum != "0" {
                        out.push(format!("p += {sum};"));
                    }
                    pending.clear();
                };
            let mut lines = Vec::new();
            for (i, f) in fields.iter().enumerate() {
                let c = cond(f.inline, s.versions, V);
                if matches!(c, Cond::Never) {
                    continue;
                }
                if let Some(w) = f.f.ty.fixed_width() {
                    pending.push((f.inline, w));
                    continue;
                }
                flush(self, &mut pending, &mut first, &mut lines);
                let skip = self.view_skip(f, "src");
                lines.push(match &c {
                    Cond::If(cc) => format!("if {cc} {{ p = {skip}; }}"),
                    _ => format!("p = {skip};"),
                });
                if anchor < k && lay_anchor_after(lay, i, anchor) {
                    lines.push(format!("at[{anchor}] = (p - pos) as u32;"));
                    anchor += 1;
                }
            }
            flush(self, &mut pending, &mut first, &mut lines);
            if self.has_tags(s) {
                let t = "p = src.skip_tagged(p);";
                match self.flex(s) {
                    Some(true) => lines.push(t.into()),
                    Some(false) => {}
                    None => lines.push(format!("if ver.flexible {{ {t} }}")),
                }
            }
            for l in lines {
                self.line(format!("        {l}"));
            }
            self.line(format!("        ({}, p)\n    }}", self_init(k, "src.sub(pos, p)")));
        }
        self.name_ver_param(fn_start);
        self.line("}\n");
    }

    fn all_fixed_in(&self, s: &Struct, v: i16) -> bool {
        s.fields.iter().all(|f| !f.inline_versions().contains(v) || f.ty.fixed_width().is_some())
    }

    /// The closure handed to `Reader::tagged_fields`: one arm per known tag.
    fn tag_match(&self, s: &Struct, tagged: &[F], arm: impl Fn(&Self, &F) -> String) -> String {
        if tagged.is_empty() {
            return "|_, _| Ok(false)".into();
        }
        let mut out = String::from("|tag, value| {\n match tag {\n");
        let mut guarded = false;
        for f in tagged {
            let tag = f.f.tag.unwrap();
            let guard = match cond(f.tagged, s.versions.intersect(self.msg.flexible), V) {
                Cond::If(c) => {
                    guarded = true;
                    format!(" if {c}")
                }
                _ => String::new(),
            };
            writeln!(out, "{tag}{guard} => {},", arm(self, f)).unwrap();
        }
        if guarded {
            let tags = guarded_tags(tagged, s.versions.intersect(self.msg.flexible));
            writeln!(
                out,
                "{tags} => return Err(value.error(DecodeErrorKind::TagNotValidForVersion(tag), {})),",
                q(&format!("{}._tagged_fields", s.name))
            )
            .unwrap();
        }
        out.push_str("_ => return Ok(false),\n}\nOk(true)\n}");
        out
    }

    // ----------------------------------------------------------------- reference decoder

    fn owned_read_expr(&self, f: &F, r: &str) -> String {
        let flex = self.flex_expr(f.s);
        let p = q(&f.path);
        let nullable_now = cond(f.f.nullable, f.inline.intersect(f.s.versions), V);
        let pick = |plain: String, nullable: String| -> String {
            if !f.nullable {
                return plain;
            }
            match &nullable_now {
                Cond::Always => nullable,
                Cond::Never => format!("Some({plain})"),
                Cond::If(c) => format!("if {c} {{ {nullable} }} else {{ Some({plain}) }}"),
            }
        };
        match &f.f.ty {
            Type::String => pick(
                format!("owned_str({r}.str({flex}, {p})?)"),
                format!("{r}.nullable_str({flex}, {p})?.map(owned_str)"),
            ),
            Type::Bytes | Type::Records => pick(
                format!("owned_bytes({r}.bytes({flex}, {p})?)"),
                format!("{r}.nullable_bytes({flex}, {p})?.map(owned_bytes)"),
            ),
            Type::Array(_) => pick(
                format!("List::Owned(read_list({r}, ver, {p})?)"),
                format!("read_nullable_list({r}, ver, {p})?.map(List::Owned)"),
            ),
            Type::Struct(n) => pick(
                format!("{n}::read_owned({r}, ver, {p})?"),
                format!("if {r}.i8({p})? < 0 {{ None }} else {{ Some({n}::read_owned({r}, ver, {p})?) }}"),
            ),
            ty => format!("{r}.{}({p})?", scalar_method(ty)),
        }
    }

    fn emit_reference(&mut self, s: &Struct) {
        let n = &s.name;
        let ty = if self.struct_needs_lifetime(s) { format!("{n}<'static>") } else { n.clone() };
        let tagged = self.tagged_fields(s);
        self.line(format!("impl ReadOwned for {ty} {{"));
        let fn_start = self.out.len();
        self.line(
            "    fn read_owned(r: &mut Reader<'_>, VER: Ver, _: &'static str) -> Result<Self, DecodeError> {",
        );
        self.line(format!("        let mut this = {n}::default();"));
        for f in &s.fields {
            let f = F::new(s, f);
            let expr = self.owned_read_expr(&f, "r");
            match cond(f.inline, s.versions, V) {
                Cond::Always => self.line(format!("        this.{} = {expr};", f.ident)),
                Cond::Never => {}
                Cond::If(c) => self
                    .line(format!("        if {c} {{\n            this.{} = {expr};\n        }}", f.ident)),
            }
        }
        if self.has_tags(s) && tagged.is_empty() {
            let t =
                format!("read_unknown_tagged_fields!(this, r, ver, {});", q(&format!("{n}._tagged_fields")));
            match self.flex(s) {
                Some(false) => {}
                _ => self.line(format!("        {t}")),
            }
        } else if self.has_tags(s) {
            let body = {
                let mut body = String::from("|tag, value| {\n match tag {\n");
                let mut guarded = false;
                for f in &tagged {
                    let tag = f.f.tag.unwrap();
                    let guard = match cond(f.tagged, s.versions.intersect(self.msg.flexible), V) {
                        Cond::If(c) => {
                            guarded = true;
                            format!(" if {c}")
                        }
                        _ => String::new(),
                    };
                    writeln!(
                        body,
                        "{tag}{guard} => this.{} = {},",
                        f.ident,
                        self.owned_read_expr(f, "value")
                    )
                    .unwrap();
                }
                if guarded {
                    let tags = guarded_tags(&tagged, s.versions.intersect(self.msg.flexible));
                    writeln!(
                        body,
                        "{tags} => return Err(value.error(DecodeErrorKind::TagNotValidForVersion(tag), {})),",
                        q(&format!("{n}._tagged_fields"))
                    )
                    .unwrap();
                }
                body.push_str("_ => {\n unknown.push(raw_tagged_field(tag, value));\n return Ok(false);\n }\n}\nOk(true)\n}");
                body
            };
            let t = format!(
                "let mut unknown = Vec::new();\nr.tagged_fields({}, {body})?;\nthis.unknown_tagged_fields = List::Owned(unknown);",
                q(&format!("{n}._tagged_fields"))
            );
            self.emit_if_flex(s, &t, "        ");
        }
        self.line("        Ok(this)\n    }");
        self.name_ver_param(fn_start);
        self.line("}\n");

        // conversion from a view
        let lt = if self.struct_needs_lifetime(s) { "<'a>" } else { "" };
        self.line(format!("impl<'a> FromView<{n}View<'a>> for {n}{lt} {{"));
        self.line(format!("    fn from_view(view: {n}View<'a>) -> Self {{"));
        self.line(format!("        {n} {{"));
        for f in &s.fields {
            let f = F::new(s, f);
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
                (Type::Struct(_), false) if self.optional_struct(&f) => {
                    format!("{x}.map(FromView::from_view).unwrap_or_default()")
                }
                (Type::Struct(_), false) => format!("FromView::from_view({x})"),
                (Type::Struct(_), true) => format!("{x}.map(FromView::from_view)"),
                _ => x,
            };
            self.line(format!("            {}: {conv},", f.ident));
        }
        if self.has_tags(s) {
            self.line("            unknown_tagged_fields: unknown_from_view(view.unknown_tagged_fields()),");
        }
        self.line("        }\n    }\n}\n");

        // Only fields that a version can drop, and those holding structs, differ from a clone.
        let anon = if self.struct_needs_lifetime(s) { "<'_>" } else { "" };
        let mut changes = Vec::new();
        for f in &s.fields {
            let f = F::new(s, f);
            let present =
                Versions::new(f.f.versions.lo.max(s.versions.lo), f.f.versions.hi.min(s.versions.hi));
            let nested = matches!(f.elem(), Type::Struct(_));
            let (x, default) = (&f.ident, self.data_default(&f));
            match cond_not(present, s.versions, V) {
                Cond::Always => changes.push(format!("v.{x} = {default};")),
                Cond::If(c) if nested => {
                    changes.push(format!("v.{x} = if {c} {{ {default} }} else {{ v.{x}.as_version(ver) }};"))
                }
                Cond::If(c) => changes.push(format!("if {c} {{\n    v.{x} = {default};\n}}")),
                Cond::Never if nested => changes.push(format!("v.{x} = v.{x}.as_version(ver);")),
                Cond::Never => {}
            }
        }
        if self.has_tags(s) && self.flex(s) != Some(true) {
            changes
                .push("v.unknown_tagged_fields = tagged_as_version(&v.unknown_tagged_fields, ver);".into());
        }
        if changes.is_empty() {
            self.line(format!("as_version!({n}{anon});\n"));
        } else {
            let body = changes.join("\n");
            let ver = if uses_ver(&body) { "ver" } else { "_" };
            self.line(format!("as_version!({n}{anon}, |v, {ver}| {{"));
            for l in body.lines() {
                self.line(format!("    {l}"));
            }
            self.line("});\n");
        }

        if self.is_root(s) {
            self.line(format!("reference_body!({n}, {n}View);\n"));
        }
    }

    // ----------------------------------------------------------------- message-level items

    fn emit_root_items(&mut self) {
        let m = self.msg;
        let n = &m.name;
        let hi = |v: Versions| if v.hi == i16::MAX { "i16::MAX".to_string() } else { v.hi.to_string() };
        self.line(format!(
            "impl_body!({n} {{ key: {}, request: {}, versions: ({}, {}), flexible: ({}, {}) }});\n",
            m.api_key,
            m.is_request,
            m.valid.lo,
            hi(m.valid),
            m.flexible.lo,
            hi(m.flexible)
        ));
    }
}

/// Where a field starts: after `base` (`None`: the struct's start; `Some(i)`: the offset
/// the view stores after the `i`th variable-length field) and the fixed-width fields in
/// `fixed`, each present in its versions.
#[derive(Clone)]
struct Place {
    base: Option<usize>,
    fixed: Vec<(Versions, usize)>,
}

struct StructLayout {
    places: Vec<Place>,
    anchors: usize,
    tags: Place,
}

/// Whether the view stores offset `anchor` after field `i`.
fn lay_anchor_after(lay: &StructLayout, i: usize, anchor: usize) -> bool {
    let later = lay.places.iter().skip(i + 1).map(|p| p.base).chain(std::iter::once(lay.tags.base));
    later.into_iter().any(|b| b == Some(anchor)) && lay.places[..=i].iter().all(|p| p.base != Some(anchor))
}

/// `Self { .. }` of a view with `k` stored offsets.
fn self_init(k: usize, src: &str) -> String {
    let src = if src == "src" { "src".to_string() } else { format!("src: {src}") };
    if k > 0 { format!("Self {{ {src}, ver, at }}") } else { format!("Self {{ {src}, ver }}") }
}

/// `body` with the variable `ver` read from the view (`self.ver`).
fn self_ver(body: &str) -> String {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    let mut out = String::new();
    let mut rest = body;
    while let Some(i) = rest.find("ver") {
        let (before, after) = rest.split_at(i);
        out.push_str(before);
        let prev = out.chars().next_back();
        let next = after[3..].chars().next();
        let word = !ident(prev) && !next.is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(if word { "self.ver" } else { "ver" });
        rest = &after[3..];
    }
    out.push_str(rest);
    out
}

/// Whether generated code uses the variable `ver`.
fn uses_ver(body: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    body.match_indices("ver")
        .any(|(i, _)| !ident(body[..i].chars().next_back()) && !ident(body[i + 3..].chars().next()))
}

fn wrap_cond(c: &Cond, stmt: &str) -> String {
    match c {
        // `if a { .. }` under `c` is `if c && a { .. }`.
        Cond::If(c) => match stmt.strip_prefix("if ").and_then(|rest| rest.split_once(" {")) {
            Some((test, body)) if !stmt.contains(" else ") => {
                format!("if {c} && {} {{{body}", paren_or(test))
            }
            _ => format!("if {c} {{ {stmt} }}"),
        },
        _ => stmt.to_string(),
    }
}

/// `e` in parentheses when it is a disjunction (so that it can be joined with `&&`).
fn paren_or(e: &str) -> String {
    if e.contains("||") { format!("({e})") } else { e.to_string() }
}

fn paren(e: &str) -> String {
    if e.starts_with("if") { format!("({e})") } else { e.to_string() }
}

/// An integer default as a literal that reads naturally: `i32::MIN`, not `-2147483648`.
fn int_default(ty: &Type, d: Option<&str>) -> String {
    let v = d.and_then(parse_int).unwrap_or(0);
    let (rust, min, max): (&str, i64, i64) = match ty {
        Type::Int8 => ("i8", i8::MIN.into(), i8::MAX.into()),
        Type::Int16 => ("i16", i16::MIN.into(), i16::MAX.into()),
        Type::Int32 => ("i32", i32::MIN.into(), i32::MAX.into()),
        Type::Int64 => ("i64", i64::MIN, i64::MAX),
        Type::Uint16 => ("u16", 0, u16::MAX.into()),
        Type::Uint32 => ("u32", 0, u32::MAX.into()),
        _ => return v.to_string(),
    };
    match v {
        _ if v == min && v != 0 => format!("{rust}::MIN"),
        _ if v == max => format!("{rust}::MAX"),
        _ => v.to_string(),
    }
}

fn show_opt(v: &Option<usize>) -> String {
    match v {
        Some(n) => format!("Some({n})"),
        None => "None".into(),
    }
}

fn scalar_method(ty: &Type) -> &'static str {
    match ty {
        Type::Bool => "bool",
        Type::Int8 => "i8",
        Type::Int16 => "i16",
        Type::Int32 => "i32",
        Type::Int64 => "i64",
        Type::Uint16 => "u16",
        Type::Uint32 => "u32",
        Type::Float64 => "f64",
        Type::Uuid => "uuid",
        t => panic!("{t:?} is not a scalar"),
    }
}

/// The tags of the fields in `tagged` that are tagged only in some of the versions
/// `possible`: the others need no version guard.
fn guarded_tags(tagged: &[F], possible: Versions) -> String {
    let guarded = tagged.iter().filter(|f| matches!(cond(f.tagged, possible, V), Cond::If(_)));
    guarded.map(|f| f.f.tag.unwrap().to_string()).collect::<Vec<_>>().join(" | ")
}

fn known_tags(tagged: &[F]) -> String {
    tagged.iter().map(|f| f.f.tag.unwrap().to_string()).collect::<Vec<_>>().join(", ")
}

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

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

fn upper_snake(name: &str) -> String {
    snake(name).trim_start_matches("r#").to_uppercase()
}

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

/// `src/messages/<api>.rs`: data types, encoders and views of one API's request and response.
pub fn api_module(api: &str, msgs: &[&Message]) -> String {
    let mut out = String::new();
    writeln!(out, "// @generated by tests/codegen from").unwrap();
    for m in msgs {
        writeln!(out, "// src/schema/{}.", m.file).unwrap();
    }
    writeln!(out, "// Do not edit by hand: change the schema or the generator and regenerate.\n").unwrap();
    let key = msgs[0].api_key;
    writeln!(out, "//! {api} (API key {key}): the request and response bodies.\n//!").unwrap();
    for m in msgs {
        writeln!(out, "//! - `{}`: versions {}, flexible from {}.", m.name, m.valid, m.flexible.lo).unwrap();
    }
    out.push_str("\n#[allow(unused_imports)]\nuse crate::prelude::*;\n\n");
    for m in msgs {
        let mut g = Gen { msg: m, out: String::new() };
        for s in &m.structs {
            g.emit_data_struct(s);
        }
        g.emit_root_items();
        for s in &m.structs {
            g.emit_encode(s);
        }
        for s in &m.structs {
            g.emit_view(s);
        }
        out.push_str(&g.out);
    }
    out
}

/// `src/reflect/schemas.rs`: every message's schema as data, for the `kwire` command.
pub fn reflect_module(apis: &[Api]) -> String {
    let mut o = String::new();
    o.push_str("// @generated by tests/codegen from every file in src/schema.\n");
    o.push_str("// Do not edit by hand: change the schema or the generator and regenerate.\n\n");
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

/// `src/reference/<api>.rs`: the reference decoder and conversions from views.
pub fn reference_module(api: &str, msgs: &[&Message]) -> String {
    let mut out = String::new();
    writeln!(out, "// @generated by tests/codegen from").unwrap();
    for m in msgs {
        writeln!(out, "// src/schema/{}.", m.file).unwrap();
    }
    writeln!(out, "// Do not edit by hand: change the schema or the generator and regenerate.\n").unwrap();
    writeln!(out, "//! The reference decoder for {api}, and conversions from its views.\n").unwrap();
    out.push_str("// The reference decoder starts from the defaults and reads field by field, as Apache\n// Kafka's own generated readers do.\n#![allow(clippy::field_reassign_with_default)]\n\n");
    out.push_str("#[allow(unused_imports)]\nuse crate::prelude::*;\n");
    writeln!(out, "use crate::messages::{}::*;\n", snake(api)).unwrap();
    for m in msgs {
        let mut g = Gen { msg: m, out: String::new() };
        for s in &m.structs {
            g.emit_reference(s);
        }
        out.push_str(&g.out);
    }
    out
}

/// The feature that compiles an API in (`None`: always compiled, ApiVersions).
pub fn feature(api: &str) -> Option<String> {
    (api != "ApiVersions").then(|| format!("api-{}", snake(api).replace('_', "-")))
}

fn cfg_line(api: &str) -> String {
    match feature(api) {
        Some(f) => format!("#[cfg(feature = {})]\n", q(&f)),
        None => String::new(),
    }
}

pub struct Api<'m> {
    pub name: String,
    pub key: i16,
    pub request: &'m Message,
    pub response: &'m Message,
}

/// `src/messages/mod.rs`: the module list, the API key table and dispatch.
pub fn messages_mod(apis: &[Api]) -> String {
    let mut o = String::new();
    o.push_str("// @generated by tests/codegen from every file in src/schema.\n");
    o.push_str("// Do not edit by hand: change the schema or the generator and regenerate.\n\n");
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
    o.push_str("\n// The macros that turn the table below into `ApiKey` and the dispatch enums (by hand).\nmod table;\n\nuse table::{api_table, dispatch};\n\n");
    for a in apis {
        writeln!(o, "{}pub mod {};", cfg_line(&a.name), snake(&a.name)).unwrap();
    }
    o.push_str("\napi_table! {\n");
    let range = |v: Versions| {
        let hi = if v.hi == i16::MAX { "i16::MAX".to_string() } else { v.hi.to_string() };
        format!("({}, {hi})", v.lo)
    };
    for a in apis {
        let feature = feature(&a.name).map(|f| format!("feature: {}, ", q(&f))).unwrap_or_default();
        writeln!(o, "    {} = {} {{", a.name, a.key).unwrap();
        writeln!(o, "        module: {}, {feature}flexible: {},", snake(&a.name), range(a.request.flexible))
            .unwrap();
        writeln!(o, "        request: {n}Request, {n}RequestView, {},", range(a.request.valid), n = a.name)
            .unwrap();
        writeln!(
            o,
            "        response: {n}Response, {n}ResponseView, {},",
            range(a.response.valid),
            n = a.name
        )
        .unwrap();
        o.push_str("    }\n");
    }
    o.push_str("}\n");
    o
}
