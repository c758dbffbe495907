//! Shape checks of what a server sends: each returns `Err(reason)` for the first problem.

use mcpl_core::mcpl::capability::paths;
use serde_json::Value;

type Shape = Result<(), String>;

fn string<'a>(v: &'a Value, key: &str, what: &str) -> Result<&'a str, String> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| format!("{what}: `{key}` is not a string"))
}

/// A feature-set declaration: `description` string, `uses` a non-empty array of vocabulary
/// paths.
pub(crate) fn feature_set(name: &str, v: &Value) -> Shape {
    let what = format!("feature set `{name}`");
    if !v.is_object() {
        return Err(format!("{what} is not an object"));
    }
    string(v, "description", &what)?;
    let uses =
        v.get("uses").and_then(Value::as_array).ok_or(format!("{what}: `uses` is not an array"))?;
    if uses.is_empty() {
        return Err(format!("{what}: `uses` is empty"));
    }
    for u in uses {
        match u.as_str() {
            Some(p) if paths::is_known(p) => {}
            _ => return Err(format!("{what}: `uses` holds {u}, not a capability path")),
        }
    }
    if let Some(r) = v.get("rollback")
        && !r.is_boolean()
    {
        return Err(format!("{what}: `rollback` is not a boolean"));
    }
    Ok(())
}

/// A `featureSets/update` response (the degradation receipt).
pub(crate) fn receipt(v: &Value) -> Shape {
    let accepted =
        v.get("accepted").and_then(Value::as_bool).ok_or("`accepted` is not a boolean")?;
    if !accepted {
        return match v.get("fallback").and_then(Value::as_str) {
            Some("mcp-only" | "close") => Ok(()),
            Some(other) => Err(format!("`fallback` is {other:?}, not mcp-only or close")),
            None => Err("a refusal without the required `fallback`".into()),
        };
    }
    let unavailable = match v.get("unavailableFeatures") {
        None => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => return Err("`unavailableFeatures` is not an array".into()),
    };
    for u in unavailable {
        string(u, "featureSet", "an unavailableFeatures entry")?;
        string(u, "effect", "an unavailableFeatures entry")?;
    }
    match (v.get("mode"), unavailable.is_empty()) {
        (Some(_), true) => Err("`mode` is present although nothing is degraded".into()),
        (Some(m), false) if !m.is_string() => Err("`mode` is not a string".into()),
        _ => Ok(()),
    }
}

/// The feature sets a receipt lists as unavailable.
pub(crate) fn unavailable_sets(receipt: &Value) -> Vec<String> {
    receipt
        .get("unavailableFeatures")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|u| u.get("featureSet").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn media(block: &Value, kind: &str) -> Shape {
    let data = block.get("data").is_some();
    let mime = block.get("mimeType").is_some();
    let uri = block.get("uri").is_some();
    match (data, mime, uri) {
        (true, true, false) => {
            string(block, "data", kind)?;
            string(block, "mimeType", kind).map(drop)
        }
        (false, false, true) => string(block, "uri", kind).map(drop),
        _ => Err(format!("{kind} block is neither {{data, mimeType}} nor {{uri}}: {block}")),
    }
}

/// MCPL content blocks (not MCP's): text, image, audio, resource.
pub(crate) fn content(blocks: &Value) -> Shape {
    let blocks = blocks.as_array().ok_or("content is not an array")?;
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => string(b, "text", "text block").map(drop)?,
            Some("image") => media(b, "image")?,
            Some("audio") => media(b, "audio")?,
            Some("resource") => string(b, "uri", "resource block").map(drop)?,
            Some(t) => return Err(format!("unknown content block type {t:?}")),
            None => return Err(format!("content block without a type: {b}")),
        }
    }
    Ok(())
}

/// `tags`: absent, or an array of namespaced strings.
pub(crate) fn tags(v: Option<&Value>) -> Shape {
    let Some(v) = v else { return Ok(()) };
    let tags = v.as_array().ok_or("`tags` is not an array")?;
    for t in tags {
        match t.as_str() {
            Some(s)
                if s.split_once(':')
                    .is_some_and(|(ns, rest)| !ns.is_empty() && !rest.is_empty()) => {}
            _ => return Err(format!("tag {t} is not `namespace:value`")),
        }
    }
    Ok(())
}

/// An ISO 8601 date-time (`YYYY-MM-DDTHH:MM...`).
pub(crate) fn timestamp(v: Option<&Value>) -> Shape {
    let s = v.and_then(Value::as_str).ok_or("`timestamp` is not a string")?;
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let ok = b.len() >= 16
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16);
    if ok { Ok(()) } else { Err(format!("timestamp {s:?} is not ISO 8601")) }
}

/// A channel descriptor.
pub(crate) fn descriptor(d: &Value) -> Shape {
    string(d, "id", "channel descriptor")?;
    string(d, "type", "channel descriptor")?;
    string(d, "label", "channel descriptor")?;
    match d.get("direction").and_then(Value::as_str) {
        Some("outbound" | "inbound" | "bidirectional") => Ok(()),
        other => Err(format!("channel descriptor direction {other:?}")),
    }
}

/// A `context/beforeInference` injection; `granted(position)` says whether its position was
/// granted.
pub(crate) fn injection(i: &Value, granted: impl Fn(&str) -> bool) -> Shape {
    string(i, "namespace", "injection")?;
    let position = string(i, "position", "injection")?;
    if !matches!(position, "system" | "beforeUser" | "afterUser") {
        return Err(format!("injection position {position:?}"));
    }
    if !granted(position) {
        return Err(format!("an injection at `{position}`, which the host did not grant"));
    }
    match i.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(blocks @ Value::Array(_)) => content(blocks),
        _ => Err("injection content is neither a string nor blocks".into()),
    }
}

/// `state` of a `tools/call` result.
pub(crate) fn state(s: &Value) -> Shape {
    string(s, "checkpoint", "state")?;
    match s.get("parent") {
        Some(Value::Null | Value::String(_)) => {}
        _ => return Err("state `parent` is neither a string nor null".into()),
    }
    if let Some(p) = s.get("patch") {
        let ops = p.as_array().ok_or("state `patch` is not an array")?;
        for op in ops {
            match op.get("op").and_then(Value::as_str) {
                Some("add" | "remove" | "replace" | "move" | "copy" | "test") => {}
                other => return Err(format!("patch op {other:?}")),
            }
            string(op, "path", "patch operation")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn receipts() {
        assert!(receipt(&json!({"accepted": true})).is_ok());
        assert!(receipt(&json!({"accepted": true, "mode": "degraded"})).is_err());
        let degraded = json!({"accepted": true, "mode": "degraded",
            "unavailableFeatures": [{"featureSet": "a", "effect": "disabled"}]});
        assert!(receipt(&degraded).is_ok());
        assert_eq!(unavailable_sets(&degraded), ["a"]);
        assert!(
            receipt(&json!({"accepted": true,
            "unavailableFeatures": [{"featureSet": "a"}]}))
            .is_err()
        );
        assert!(receipt(&json!({"accepted": false})).is_err());
        assert!(receipt(&json!({"accepted": false, "fallback": "mcp-only"})).is_ok());
    }

    #[test]
    fn blocks_and_tags() {
        assert!(content(&json!([{"type": "text", "text": "x"}])).is_ok());
        assert!(
            content(&json!([{"type": "image", "data": "x", "mimeType": "image/png", "uri": "u"}]))
                .is_err()
        );
        assert!(content(&json!([{"type": "image", "data": "x"}])).is_err());
        assert!(content(&json!([{"type": "resource", "uri": "u"}])).is_ok());
        assert!(tags(Some(&json!(["chat:mention", "x:k=v"]))).is_ok());
        assert!(tags(Some(&json!(["mention"]))).is_err());
        assert!(timestamp(Some(&json!("2026-11-30T04:00:00Z"))).is_ok());
        assert!(timestamp(Some(&json!("yesterday"))).is_err());
    }

    #[test]
    fn injections() {
        let i = json!({"namespace": "m", "position": "system", "content": "x"});
        assert!(injection(&i, |_| true).is_ok());
        assert!(injection(&i, |p| p != "system").is_err());
    }
}
