//! Scalar values as the schema walker reads them and the JSON encoder builds them, with
//! the conventions both sides share: JSON key names, schema defaults, display forms and
//! Kafka's string forms of UUIDs and bytes.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use kwire::reflect::{FieldSchema, FieldType};

use crate::json::J;

/// A single value of a schema type other than an array or a struct (plus the null of a
/// nullable struct).
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// `bool`.
    Bool(bool),
    /// `int8`.
    I8(i8),
    /// `int16`.
    I16(i16),
    /// `int32`.
    I32(i32),
    /// `int64`.
    I64(i64),
    /// `uint16`.
    U16(u16),
    /// `uint32`.
    U32(u32),
    /// `float64`.
    F64(f64),
    /// `uuid`.
    Uuid([u8; 16]),
    /// `string`, `None` for null.
    Str(Option<String>),
    /// `bytes` or `records`, `None` for null.
    Bytes(Option<Vec<u8>>),
    /// A null struct.
    Null,
}

impl Scalar {
    /// The value as Apache Kafka's JSON converters write it.
    pub fn to_json(&self) -> J {
        match self {
            Scalar::Bool(b) => J::Bool(*b),
            Scalar::I8(v) => J::Int(i64::from(*v)),
            Scalar::I16(v) => J::Int(i64::from(*v)),
            Scalar::I32(v) => J::Int(i64::from(*v)),
            Scalar::I64(v) => J::Int(*v),
            Scalar::U16(v) => J::Int(i64::from(*v)),
            Scalar::U32(v) => J::Int(i64::from(*v)),
            Scalar::F64(v) => J::Float(*v),
            Scalar::Uuid(u) => J::Str(uuid_string(u)),
            Scalar::Str(Some(s)) => J::Str(s.clone()),
            Scalar::Bytes(Some(b)) => J::Str(STANDARD.encode(b)),
            Scalar::Str(None) | Scalar::Bytes(None) | Scalar::Null => J::Null,
        }
    }

    /// The value for the tree view (strings and bytes get their prefix noted by the
    /// caller).
    pub fn display(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::I8(v) => v.to_string(),
            Scalar::I16(v) => v.to_string(),
            Scalar::I32(v) => v.to_string(),
            Scalar::I64(v) => v.to_string(),
            Scalar::U16(v) => v.to_string(),
            Scalar::U32(v) => v.to_string(),
            Scalar::F64(v) => v.to_string(),
            Scalar::Uuid(u) => uuid_string(u),
            Scalar::Str(Some(s)) => format!("{s:?}"),
            Scalar::Bytes(Some(b)) => bytes_preview(b),
            Scalar::Str(None) | Scalar::Bytes(None) | Scalar::Null => "null".into(),
        }
    }

    /// Whether this is the field's default value (the schema's `default`, else the type's
    /// zero value), as Kafka decides which tagged fields to write.
    pub fn is_default(&self, field: &FieldSchema) -> bool {
        self == &default_scalar(&field.ty, field.default).unwrap_or(Scalar::Null)
    }
}

/// A short form of a byte string: its length and up to 16 bytes in hex.
pub fn bytes_preview(b: &[u8]) -> String {
    let shown: String = b.iter().take(16).map(|x| format!("{x:02x}")).collect();
    let more = if b.len() > 16 { "..." } else { "" };
    match b.len() {
        0 => "0 bytes".into(),
        1 => format!("1 byte: {shown}"),
        n => format!("{n} bytes: {shown}{more}"),
    }
}

/// Kafka's string form of a UUID: URL-safe base64 of the 16 bytes, without padding.
pub fn uuid_string(u: &[u8; 16]) -> String {
    URL_SAFE_NO_PAD.encode(u)
}

/// Reads a UUID in Kafka's form (22 characters of URL-safe base64) or in the usual
/// hyphenated hex form.
pub fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    if let Some(bytes) = URL_SAFE_NO_PAD.decode(s).ok().and_then(|b| <[u8; 16]>::try_from(b).ok()) {
        return Some(bytes);
    }
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if s.len() != 36 || hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The JSON key of a schema field, as Kafka's generator makes it: the name with its first
/// letter in lower case (`ReplicaId` becomes `replicaId`).
pub fn json_key(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A type's name as the schema language writes it (`int32`, `[]ListOffsetsTopic`).
pub fn type_name(ty: &FieldType) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = ty.write_name(&mut s);
    s
}

/// The default of a scalar-typed field, from the schema's `default` text (`None` when the
/// field has no scalar form, or the text does not parse).
pub fn default_scalar(ty: &FieldType, default: Option<&str>) -> Option<Scalar> {
    let text = default.unwrap_or("");
    let int = |t: &str| -> Option<i64> {
        if t.is_empty() {
            return Some(0);
        }
        let (neg, digits) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => i64::from_str_radix(hex, 16).ok()?,
            None => digits.parse::<i64>().ok()?,
        };
        Some(if neg { -v } else { v })
    };
    Some(match ty {
        FieldType::Bool => Scalar::Bool(text == "true"),
        FieldType::Int8 => Scalar::I8(i8::try_from(int(text)?).ok()?),
        FieldType::Int16 => Scalar::I16(i16::try_from(int(text)?).ok()?),
        FieldType::Int32 => Scalar::I32(i32::try_from(int(text)?).ok()?),
        FieldType::Int64 => Scalar::I64(int(text)?),
        FieldType::Uint16 => Scalar::U16(u16::try_from(int(text)?).ok()?),
        FieldType::Uint32 => Scalar::U32(u32::try_from(int(text)?).ok()?),
        FieldType::Float64 => Scalar::F64(if text.is_empty() { 0.0 } else { text.parse().ok()? }),
        FieldType::Uuid => Scalar::Uuid([0; 16]),
        FieldType::String if text == "null" => Scalar::Str(None),
        FieldType::String => Scalar::Str(Some(text.to_string())),
        FieldType::Bytes | FieldType::Records if text == "null" => Scalar::Bytes(None),
        FieldType::Bytes | FieldType::Records => Scalar::Bytes(Some(Vec::new())),
        FieldType::Struct(_) | FieldType::Array(_) => return None,
    })
}

/// Decodes base64 as Kafka's JSON writes bytes (standard alphabet); padding is optional.
pub fn parse_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(s).ok()
}

/// Encodes bytes as standard base64 with padding, as Kafka's JSON writes them.
pub fn base64(b: &[u8]) -> String {
    STANDARD.encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_forms() {
        let zero = [0u8; 16];
        assert_eq!(uuid_string(&zero), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(parse_uuid("AAAAAAAAAAAAAAAAAAAAAA"), Some(zero));
        let u = parse_uuid("01234567-89ab-cdef-0123-456789abcdef").unwrap();
        assert_eq!(u[0], 0x01);
        assert_eq!(parse_uuid(&uuid_string(&u)), Some(u));
        assert_eq!(parse_uuid("short"), None);
    }

    #[test]
    fn keys_and_defaults() {
        assert_eq!(json_key("ReplicaId"), "replicaId");
        assert_eq!(default_scalar(&FieldType::Int32, Some("-2147483648")), Some(Scalar::I32(i32::MIN)));
        assert_eq!(default_scalar(&FieldType::String, Some("null")), Some(Scalar::Str(None)));
        assert_eq!(default_scalar(&FieldType::Bool, Some("true")), Some(Scalar::Bool(true)));
        assert_eq!(default_scalar(&FieldType::Int16, Some("0x10")), Some(Scalar::I16(16)));
    }
}
