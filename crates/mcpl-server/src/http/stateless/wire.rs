//! Stateless-era answers as they go on the wire: a result gains `resultType` and the server's
//! identity in `_meta` as it is serialized (by the rule of
//! [`decoration`](crate::stateless::decoration): what the handler set stays), written from the
//! endpoint's serialized copy of the identity instead of being inserted into each result; a
//! tool's result is serialized straight from its type.

use mcpl_core::jsonrpc::{Message, RequestId};

use crate::cache::CacheHint;
use crate::router::Reply;
use crate::stateless::decoration;

/// A stateless-era message as it goes on the wire. A response's result gains `resultType`
/// (`complete`, unless the handler set one), `_meta` with the server's identity (unless the
/// handler set one; written from the endpoint's serialized copy, `server_info`) and, when
/// complete, the caching hint `hint` (see [`decoration::write_decorated`]).
pub(super) fn wire(
    message: &Message,
    server_info: &str,
    hint: Option<CacheHint>,
) -> serde_json::Result<Vec<u8>> {
    let response = match message {
        Message::Response(response) if response.result.is_object() => response,
        _ => return serde_json::to_vec(message),
    };
    let mut out = open_response(&response.id, server_info.len() + response.result.len())?;
    decoration::write_decorated(&mut out, response.result.as_str(), server_info, hint)?;
    out.push(b'}');
    Ok(out)
}

/// The answer to request `id` as it goes on the wire, like [`wire`]; a tool's result is
/// serialized straight from its type, with `resultType` and `_meta` (and in it the server's
/// identity, unless the handler set one) written first.
pub(super) fn wire_reply(
    id: &RequestId,
    reply: Reply,
    server_info: &str,
    hint: Option<CacheHint>,
) -> serde_json::Result<Vec<u8>> {
    let mut result = match reply {
        // Members the type does not know may not repeat the two this writes.
        Reply::Tool(result)
            if !result.extra.contains_key("_meta") && !result.extra.contains_key("resultType") =>
        {
            result
        }
        Reply::Page(page) => {
            let mut out = open_response(id, server_info.len() + page.len())?;
            decoration::write_page(&mut out, page.as_str(), server_info, hint)?;
            out.push(b'}');
            return Ok(out);
        }
        reply => {
            let result = reply.into_json().map_err(|e| serde::ser::Error::custom(e.message))?;
            return wire(
                &Message::Response(mcpl_core::jsonrpc::Response::new(id.clone(), result)),
                server_info,
                hint,
            );
        }
    };
    let (meta, result_type) = (result.meta.take().unwrap_or_default().0, result.result_type.take());
    let mut out = open_response(id, 192 + server_info.len())?;
    out.extend_from_slice(br#"{"resultType":"#);
    match &result_type {
        Some(t) => serde_json::to_writer(&mut out, t)?,
        None => out.extend_from_slice(br#""complete""#),
    }
    out.extend_from_slice(br#","_meta":"#);
    decoration::write_meta(&mut out, &meta, server_info)?;
    // The rest of the result is an object whose members follow the two above: its opening
    // brace becomes a comma (or, if it has no members, it goes).
    let at = out.len();
    crate::result_json::write(&mut out, &result)?;
    if out[at..] == *b"{}" {
        out.truncate(at);
    } else if out.get(at) == Some(&b'{') && out.last() == Some(&b'}') {
        out[at] = b',';
        out.pop();
    } else {
        return Err(serde::ser::Error::custom("a tool's result is not an object"));
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// A response's opening, `{"jsonrpc":"2.0","id":ID,"result":`, with room for `more` bytes.
fn open_response(id: &RequestId, more: usize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + more);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":"#);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mcpl_core::jsonrpc::{ErrorObject, ErrorResponse};
    use mcpl_core::types::{CallToolResult, meta_keys};
    use serde_json::{Map, Value, json};

    fn on_the_wire(result: Value) -> Value {
        let message =
            Message::Response(mcpl_core::jsonrpc::Response::new(RequestId::from(7), result));
        let bytes = wire(&message, r#"{"name":"s","version":"1"}"#, None).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_result_gains_its_result_type_and_the_server_identity() {
        let info = json!({"name": "s", "version": "1"});
        assert_eq!(
            on_the_wire(json!({"content": [], "isError": false})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "content": [], "isError": false, "resultType": "complete",
                "_meta": {meta_keys::SERVER_INFO: info},
            }})
        );
        assert_eq!(
            on_the_wire(json!({})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "complete", "_meta": {meta_keys::SERVER_INFO: info},
            }})
        );
    }

    #[test]
    fn what_the_handler_set_is_kept() {
        let info = json!({"name": "s", "version": "1"});
        let own = json!({"name": "own"});
        assert_eq!(
            on_the_wire(json!({"resultType": "input_required", "_meta": {"a": "\"b\""}})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "input_required",
                "_meta": {"a": "\"b\"", meta_keys::SERVER_INFO: info},
            }})
        );
        assert_eq!(
            on_the_wire(json!({"_meta": {meta_keys::SERVER_INFO: own}})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "complete", "_meta": {meta_keys::SERVER_INFO: own},
            }})
        );
        assert_eq!(
            on_the_wire(json!({"_meta": null})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "_meta": null}})
        );
    }

    /// A tool's result written from its type, as JSON.
    fn typed_on_the_wire(result: CallToolResult) -> Value {
        let id = RequestId::from("r-1");
        let info = r#"{"name":"s","version":"1"}"#;
        let bytes = wire_reply(&id, Reply::Tool(result), info, None).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_typed_tool_result_goes_as_its_value_would() {
        use mcpl_core::types::{ContentBlock, Meta, ResultType};
        let own = json!({"name": "own"});
        let results = [
            CallToolResult::success(vec![ContentBlock::text("a \"quoted\"\n text")]),
            CallToolResult::error("failed"),
            CallToolResult::default()
                .with_structured_content(json!({"n": 1, "s": [true, null]}))
                .with_meta(Meta(Map::from_iter([("k".to_owned(), json!({"x": 1}))])))
                .with_extra(Map::from_iter([("other".to_owned(), json!(2))])),
            CallToolResult::default()
                .with_meta(Meta(Map::from_iter([(meta_keys::SERVER_INFO.to_owned(), own)])))
                .with_result_type(ResultType::Complete),
            CallToolResult::default().with_meta(Meta::new()),
            // Unknown members repeating the two the writer adds: the value path takes over.
            CallToolResult::default()
                .with_extra(Map::from_iter([("_meta".to_owned(), json!({"z": 0}))])),
        ];
        for result in results {
            let mut by_value = on_the_wire(serde_json::to_value(&result).unwrap());
            by_value["id"] = json!("r-1");
            assert_eq!(typed_on_the_wire(result), by_value);
        }
    }

    #[test]
    fn other_messages_go_as_they_are() {
        let message =
            Message::Response(mcpl_core::jsonrpc::Response::new(RequestId::from(1), json!([1])));
        let bytes = wire(&message, "{}", None).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap()["result"], json!([1]));
        let error = Message::Error(ErrorResponse::new(
            Some(RequestId::from(1)),
            ErrorObject::internal("x"),
        ));
        assert_eq!(wire(&error, "{}", None).unwrap(), serde_json::to_vec(&error).unwrap());
    }
}
