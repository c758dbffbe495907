//! Values as stored: JSON in an envelope that names its format version
//! (`{"v":1,"d":...}`), so a fleet upgraded to another format never misreads an old value.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::connection::FORMAT_VERSION;

#[derive(Serialize)]
struct Out<'a, T> {
    v: u32,
    d: &'a T,
}

#[derive(Deserialize)]
struct In<T> {
    v: u32,
    d: T,
}

/// `value` in its envelope.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<String, Error> {
    Ok(serde_json::to_string(&Out { v: FORMAT_VERSION, d: value })?)
}

/// The value in `text`'s envelope; [`ErrorKind::Format`](crate::ErrorKind::Format) when it is
/// not one, or of another format version.
pub(crate) fn decode<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    #[derive(Deserialize)]
    struct Version {
        v: u32,
    }
    let version: Version = serde_json::from_str(text)?;
    if version.v != FORMAT_VERSION {
        return Err(Error::format(format!(
            "format version {} (this build reads {FORMAT_VERSION})",
            version.v
        )));
    }
    let value: In<T> = serde_json::from_str(text)?;
    debug_assert_eq!(value.v, FORMAT_VERSION);
    Ok(value.d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ErrorKind;

    #[test]
    fn values_round_trip_and_other_versions_are_refused() {
        let text = encode(&serde_json::json!({"a": 1})).unwrap();
        assert_eq!(text, r#"{"v":1,"d":{"a":1}}"#);
        assert_eq!(decode::<serde_json::Value>(&text).unwrap()["a"], 1);
        let newer = decode::<serde_json::Value>(r#"{"v":2,"d":{}}"#).unwrap_err();
        assert_eq!(newer.kind(), ErrorKind::Format);
        assert_eq!(decode::<serde_json::Value>("garbage").unwrap_err().kind(), ErrorKind::Format);
    }
}
