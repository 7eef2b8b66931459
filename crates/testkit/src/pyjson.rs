//! JSON written byte for byte like Python's `json.dumps` with its defaults, in insertion order.
//!
//! The reference mock is Python: its wire bytes have `", "` and `": "` separators, `\uXXXX`
//! escapes for every non-ASCII character and keys in the order they were inserted. Tool arguments
//! travel as JSON *strings* that the CLIs echo back, and `input_json_delta` fragments are cut by
//! length, so matching the bytes keeps the two mocks interchangeable. Requests are parsed into
//! the same tree, so a tool result that is not a string is dumped in the order the client wrote
//! it, as the reference does. `serde_json::Value` sorts keys (the workspace does not enable
//! `preserve_order`, and enabling it here would change every crate built alongside), hence this
//! small ordered tree.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON value whose objects keep insertion order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// A number that is not an `i64` (a float, or an integer beyond `i64`).
    Number(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Builds a [`Json::Obj`] in the order written: `obj! { "type": "text", "index": 0 }`.
macro_rules! obj {
    ($($key:literal : $value:expr),* $(,)?) => {
        $crate::pyjson::Json::Obj(vec![
            $(($key.to_owned(), $crate::pyjson::Json::from($value)),)*
        ])
    };
}
pub(crate) use obj;

impl Json {
    /// Python's `dict(self, key=value)`: replaces an existing key in place, else appends it.
    pub(crate) fn with(mut self, key: &str, value: impl Into<Json>) -> Json {
        let value = value.into();
        if let Json::Obj(entries) = &mut self {
            match entries.iter_mut().find(|(existing, _)| existing == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key.to_owned(), value)),
            }
        }
        self
    }

    /// Whether this is an object with `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The value of `key` when this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The keys of an object, in order (none for anything else).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        let entries: &[(String, Json)] = match self {
            Json::Obj(entries) => entries,
            _ => &[],
        };
        entries.iter().map(|(k, _)| k.as_str())
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of an array (`None` for anything else).
    pub(crate) fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Arr(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn is_object(&self) -> bool {
        matches!(self, Json::Obj(_))
    }

    /// Python's truthiness: `null`, `false`, `0`, `""`, `[]` and `{}` are false.
    pub(crate) fn is_truthy(&self) -> bool {
        match self {
            Json::Null => false,
            Json::Bool(b) => *b,
            Json::Int(n) => *n != 0,
            Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Json::Str(s) => !s.is_empty(),
            Json::Arr(items) => !items.is_empty(),
            Json::Obj(entries) => !entries.is_empty(),
        }
    }

    /// The text as `json.dumps(value)` writes it.
    pub(crate) fn dumps(&self) -> String {
        let mut out = String::new();
        write_value(self, &mut out);
        out
    }
}

/// Parses a request body, keeping key order; a repeated key keeps its first place and its last
/// value, as Python's `json.loads` does.
pub(crate) fn parse(raw: &[u8]) -> serde_json::Result<Json> {
    serde_json::from_slice(raw)
}

fn write_value(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(true) => out.push_str("true"),
        Json::Bool(false) => out.push_str("false"),
        Json::Int(n) => out.push_str(&n.to_string()),
        Json::Number(n) => write_number(n, out),
        Json::Str(s) => write_str(s, out),
        Json::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Json::Obj(entries) => {
            out.push('{');
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(key, out);
                out.push_str(": ");
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

fn write_number(n: &serde_json::Number, out: &mut String) {
    if n.is_u64() || n.is_i64() {
        out.push_str(&n.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&python_float_repr(f));
    } else {
        out.push_str(&n.to_string());
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form outside `1e-4 <= |f| < 1e16`.
fn python_float_repr(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".to_owned()
        } else if f > 0.0 {
            "Infinity".to_owned()
        } else {
            "-Infinity".to_owned()
        };
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if f != 0.0 && !(-4..16).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let plain = format!("{f}");
    if plain.contains('.') {
        plain
    } else {
        plain + ".0"
    }
}

/// A string with Python's `ensure_ascii=True` escaping.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
impl From<&Value> for Json {
    fn from(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| Json::Number(n.clone()), Json::Int),
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Arr(items.iter().map(Json::from).collect()),
            Value::Object(map) => Json::Obj(
                map.iter()
                    .map(|(key, item)| (key.clone(), Json::from(item)))
                    .collect(),
            ),
        }
    }
}

impl From<&Json> for Value {
    fn from(value: &Json) -> Value {
        match value {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(n) => Value::from(*n),
            Json::Number(n) => Value::Number(n.clone()),
            Json::Str(s) => Value::String(s.clone()),
            Json::Arr(items) => Value::Array(items.iter().map(Value::from).collect()),
            Json::Obj(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, item)| (key.clone(), Value::from(item)))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Int(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
        Ok(i64::try_from(n).map_or_else(|_| Json::Number(n.into()), Json::Int))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Json, E> {
        Ok(Json::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut object = Json::Obj(Vec::new());
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            object = object.with(&key, value);
        }
        Ok(object)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl From<&String> for Json {
    fn from(s: &String) -> Json {
        Json::Str(s.clone())
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<i64> for Json {
    fn from(n: i64) -> Json {
        Json::Int(n)
    }
}

impl From<usize> for Json {
    fn from(n: usize) -> Json {
        Json::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<Vec<Json>> for Json {
    fn from(items: Vec<Json>) -> Json {
        Json::Arr(items)
    }
}

impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(value: Option<T>) -> Json {
        value.map_or(Json::Null, Into::into)
    }
}

#[cfg(test)]
#[path = "pyjson_tests.rs"]
mod tests;
