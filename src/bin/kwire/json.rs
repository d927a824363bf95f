//! The `json` output: a small JSON value that keeps keys in schema order, its printer, and
//! the conversion of a decoded node tree into Kafka's JSON form.

use std::fmt::Write as _;

use crate::value::base64;
use crate::walk::{Node, Role};

/// A JSON value whose objects keep their keys in insertion (schema) order.
#[derive(Clone, Debug, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number; NaN and the infinities are written as the strings `"NaN"`,
    /// `"Infinity"` and `"-Infinity"`, which JSON cannot carry as numbers.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<J>),
    /// An object, keys in order.
    Obj(Vec<(String, J)>),
}

impl J {
    /// Writes the value, pretty-printed with two-space indents, or on one line.
    pub fn write(&self, out: &mut String, pretty: bool, indent: usize) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Int(v) => {
                let _ = write!(out, "{v}");
            }
            J::Float(v) => match serde_json::Number::from_f64(*v) {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None if v.is_nan() => out.push_str("\"NaN\""),
                None if *v > 0.0 => out.push_str("\"Infinity\""),
                None => out.push_str("\"-Infinity\""),
            },
            J::Str(s) => push_string(out, s),
            J::Arr(items) => {
                if items.is_empty() {
                    out.push_str("[]");
                    return;
                }
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, pretty, indent + 1);
                    item.write(out, pretty, indent + 1);
                }
                newline(out, pretty, indent);
                out.push(']');
            }
            J::Obj(fields) => {
                if fields.is_empty() {
                    out.push_str("{}");
                    return;
                }
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, pretty, indent + 1);
                    push_string(out, key);
                    out.push(':');
                    if pretty {
                        out.push(' ');
                    }
                    value.write(out, pretty, indent + 1);
                }
                newline(out, pretty, indent);
                out.push('}');
            }
        }
    }

    /// The value as text, pretty-printed or compact.
    pub fn to_text(&self, pretty: bool) -> String {
        let mut out = String::new();
        self.write(&mut out, pretty, 0);
        out
    }
}

fn newline(out: &mut String, pretty: bool, indent: usize) {
    if pretty {
        out.push('\n');
        for _ in 0..indent {
            out.push_str("  ");
        }
    }
}

fn push_string(out: &mut String, s: &str) {
    // serde_json escapes exactly what JSON requires; serialising a &str cannot fail.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// The JSON object of a struct-like node (header, body, struct element): its keyed
/// children in order, known tagged fields that differ from their default, and unknown
/// tagged fields under `_unknownTaggedFields`.
pub fn object(node: &Node) -> J {
    let mut fields = Vec::new();
    let mut unknown = Vec::new();
    for child in &node.children {
        if matches!(child.role, Role::Tagged) {
            for entry in &child.children {
                match (&entry.role, &entry.key) {
                    (Role::Unknown { tag, data }, _) => unknown.push(J::Obj(vec![
                        ("tag".into(), J::Int(i64::from(*tag))),
                        ("data".into(), J::Str(base64(data))),
                    ])),
                    (_, Some(key)) if !entry.json_default => fields.push((key.clone(), value(entry))),
                    _ => {}
                }
            }
        } else if let Some(key) = &child.key {
            fields.push((key.clone(), value(child)));
        }
    }
    if !unknown.is_empty() {
        fields.push(("_unknownTaggedFields".into(), J::Arr(unknown)));
    }
    J::Obj(fields)
}

/// The JSON value of a field or element node.
pub fn value(node: &Node) -> J {
    match &node.role {
        Role::Leaf(s) => s.to_json(),
        Role::Array { null: true } => J::Null,
        Role::Array { null: false } => {
            J::Arr(node.children.iter().filter(|c| c.element).map(value).collect())
        }
        Role::Object => object(node),
        Role::Plain | Role::Tagged | Role::Unknown { .. } => J::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::J;

    #[test]
    fn prints_in_order() {
        let v = J::Obj(vec![
            ("b".into(), J::Int(1)),
            ("a".into(), J::Arr(vec![J::Str("x\"y".into()), J::Null])),
            ("e".into(), J::Obj(vec![])),
            ("f".into(), J::Float(f64::NAN)),
        ]);
        assert_eq!(v.to_text(false), r#"{"b":1,"a":["x\"y",null],"e":{},"f":"NaN"}"#);
        assert_eq!(
            v.to_text(true),
            "{\n  \"b\": 1,\n  \"a\": [\n    \"x\\\"y\",\n    null\n  ],\n  \"e\": {},\n  \"f\": \"NaN\"\n}"
        );
    }
}
