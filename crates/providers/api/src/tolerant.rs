//! Tolerant decoding, shared by the agent CLIs' wire types: a field that is `null` or absent
//! reads as its default, and a known message whose `params` / `data` is `null` or absent reads
//! as an empty object — the CLIs omit what is empty, and older versions send `null`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::Undecodable;

/// `null` or absent → the default value (`#[serde(default, deserialize_with = "nullable")]`).
pub fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The `params` or `data` of a known message named `name`, decoded as `T` (`null` counts as
/// `{}`); the error names the message.
pub fn decode_body<T: DeserializeOwned>(name: &str, body: Value) -> Result<T, Undecodable> {
    let body = match body {
        Value::Null => Value::Object(Map::new()),
        body => body,
    };
    serde_json::from_value(body).map_err(|error| Undecodable(format!("`{name}`: {error}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "nullable")]
        items: Vec<u32>,
    }

    #[test]
    fn null_and_absent_read_as_empty_and_a_bad_field_names_the_message() {
        assert_eq!(
            decode_body::<Body>("m", Value::Null).unwrap(),
            Body::default()
        );
        assert_eq!(
            decode_body::<Body>("m", json!({ "items": null })).unwrap(),
            Body::default()
        );
        assert_eq!(
            decode_body::<Body>("m", json!({ "items": [1] }))
                .unwrap()
                .items,
            [1]
        );
        let error = decode_body::<Body>("turn/started", json!({ "items": "x" })).unwrap_err();
        assert!(error.0.starts_with("`turn/started`: "), "{error}");
    }
}
