//! A request read straight from its body bytes: a stateless-era one with its `_meta` apart
//! ([`read`]), or any well-formed one whole ([`read_request`], what a 2025 session's POST
//! carries).
//!
//! The general decoder ([`Message::decode`]) builds a JSON tree of the whole `params`, `_meta`
//! included, and the handler then decodes its typed params from that tree. Most of a stateless
//! request's nodes are in `_meta` (protocol version, client capabilities, client identity), and
//! a handler rarely reads it. So a well-formed request is read here in one pass: the envelope
//! into its fields, `params` into a map without `_meta`, and of `_meta` only the members the
//! endpoint checks ([`MetaFacts`]), borrowed from the body; a handler that asks for `_meta`
//! gets it read from the body then ([`LazyMeta`]).
//!
//! A `tools/call` of the plain form (a tool's `name` and `arguments`, nothing else in its
//! params but a `_meta` read apart, read after its `method`) is read with its params typed
//! ([`Incoming::call`], [`ReadRequest::call`]): no tree of them made and taken apart again by
//! the router.
//!
//! Anything this reader does not take as it is (a member it does not know, a duplicate, an
//! escaped key, `params` or `_meta` that is not an object, a `_meta` member of an unexpected
//! type, deep nesting in `_meta`) makes [`read`] return `None`, and the body goes to the general
//! decoder, whose answer (an error, or the request) is then exactly what it always was.

use std::fmt;

use axum::body::Bytes;
use mcpl_core::engine::embed::LazyMeta;
use mcpl_core::jsonrpc::{Message, Request, RequestId};
use mcpl_core::types::{ClientCapabilities, LoggingLevel, meta_keys, names};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::interned::Capabilities;
use crate::router::PlainToolCall;
use crate::stateless::admission::MetaFacts;

impl MetaFacts {
    /// The facts (what admission reads) of a `_meta` read in place; `None` where this reader defers to the tree.
    fn of_view(view: MetaView<'_>) -> Option<MetaFacts> {
        let capabilities = match view.capabilities {
            // `{}`, what most clients declare, is the default: no decoder needed for it.
            Some(raw) if is_empty_object(raw.get()) => Some(Some(Capabilities::Empty)),
            Some(raw) if raw.get().starts_with('{') => Some(
                serde_json::from_str::<ClientCapabilities>(raw.get()).ok().map(Capabilities::own),
            ),
            _ => None,
        };
        let log_level = match view.log_level {
            None => None,
            // An invalid level is refused with the general decoder's wording.
            Some(raw) => Some(serde_json::from_str::<LoggingLevel>(raw.get()).ok()?),
        };
        Some(MetaFacts {
            version: view.version.map(MetaFacts::version),
            capabilities,
            log_level: Ok(log_level),
            progress: view.progress.map(|raw| {
                // A string, or an integer (no fraction, no exponent).
                let raw = raw.get();
                raw.starts_with('"')
                    || serde_json::from_str::<serde_json::Number>(raw)
                        .is_ok_and(|n| n.is_i64() || n.is_u64())
            }),
        })
    }
}

/// Whether `json` (a JSON value, as a `RawValue` holds it) is an object without members.
fn is_empty_object(json: &str) -> bool {
    json.strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|inside| inside.trim_matches([' ', '\t', '\n', '\r']).is_empty())
}

/// The members of `_meta` the endpoint checks, borrowed from the body.
#[derive(Default)]
struct MetaView<'a> {
    version: Option<&'a str>,
    capabilities: Option<&'a RawValue>,
    log_level: Option<&'a RawValue>,
    /// The progress token sent, whatever its value (`null` included).
    progress: Option<&'a RawValue>,
}

/// A request read from the body, its params without `_meta`.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The request; without params if they are in `call`.
    pub(crate) request: Request,
    /// The params of a `tools/call` of the plain form, typed (see the module docs).
    pub(crate) call: Option<PlainToolCall>,
    pub(crate) meta: Option<LazyMeta>,
    pub(crate) facts: MetaFacts,
}

/// More brackets than this in `_meta` and it is left to the general decoder, so that what is
/// nested too deeply is refused as it always was (skipping a value sets no depth limit).
const MAX_META_BRACKETS: usize = 64;

/// Reads a well-formed request; `None` for anything else (see the module docs).
pub(crate) fn read(body: &Bytes) -> Option<Incoming> {
    // One UTF-8 check of the whole body, instead of one per string as reading bytes does.
    let text = std::str::from_utf8(body).ok()?;
    let Envelope { request, call, meta } = envelope(text, false)?;
    let (meta, facts) = match meta {
        Some(view) => {
            let facts = MetaFacts::of_view(view)?;
            let body = body.clone();
            (Some(LazyMeta::new(move || meta_of(&body))), facts)
        }
        None => (None, MetaFacts::of_tree(None)),
    };
    Some(Incoming { request, call, meta, facts })
}

/// The `_meta` object of the request in `body`, for a handler that asks for it.
fn meta_of(body: &[u8]) -> Option<Map<String, Value>> {
    let Ok(Message::Request(request)) = Message::decode(body) else { return None };
    match request.params {
        Some(Value::Object(mut params)) => match params.remove("_meta") {
            Some(Value::Object(meta)) => Some(meta),
            _ => None,
        },
        _ => None,
    }
}

struct Envelope<'a> {
    request: Request,
    /// A `tools/call`'s params, read typed (the request's own `params` are then `None`).
    call: Option<PlainToolCall>,
    meta: Option<MetaView<'a>>,
}

/// A whole request as [`read_request`] reads it.
#[derive(Debug)]
pub(crate) struct ReadRequest {
    /// The request; without params if they are in `call`.
    pub(crate) request: Request,
    /// The params of a `tools/call` of the plain form (see the module docs), typed: what the
    /// router would make of them (see `router::Params`).
    pub(crate) call: Option<PlainToolCall>,
}

#[cfg(test)]
impl ReadRequest {
    /// The request as the general decoder makes it: `call` back in its params.
    fn into_request(self) -> Request {
        with_params(self.request, self.call)
    }
}

/// `request` with the params of `call`, if any, back in it as the tree the body held.
pub(crate) fn with_params(mut request: Request, call: Option<PlainToolCall>) -> Request {
    if let Some(call) = call {
        request.params = Some(call.into_tree());
    }
    request
}

/// The request in `text`, its `_meta` read apart (or, with `keep_meta`, left in its params as
/// any other member); `None` for anything this reader does not take as it is.
fn envelope(text: &str, keep_meta: bool) -> Option<Envelope<'_>> {
    let mut json = serde_json::Deserializer::from_str(text);
    let envelope = json.deserialize_map(EnvelopeVisitor { keep_meta }).ok()?;
    // Nothing but white space after the request, as `serde_json::from_str` requires.
    json.end().ok()?;
    Some(envelope)
}

/// Reads a well-formed request, `_meta` and all, into the [`Request`] the general decoder
/// would make of it (what a 2025 session's POST carries); `None` for anything else.
pub(crate) fn read_request(body: &Bytes) -> Option<ReadRequest> {
    let text = std::str::from_utf8(body).ok()?;
    envelope(text, true).map(|Envelope { request, call, .. }| ReadRequest { request, call })
}

fn unexpected<E: de::Error>(what: &str) -> E {
    E::custom(format_args!("left to the general decoder: {what}"))
}

struct EnvelopeVisitor {
    keep_meta: bool,
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let mut version = false;
        let mut id: Option<RequestId> = None;
        let mut method: Option<String> = None;
        let mut params: Option<Params<'de>> = None;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "jsonrpc" if !version => {
                    if map.next_value::<&'de str>()? != "2.0" {
                        return Err(unexpected("version"));
                    }
                    version = true;
                }
                "id" if id.is_none() => id = Some(map.next_value()?),
                "method" if method.is_none() => method = Some(map.next_value()?),
                "params" if params.is_none() => {
                    // Typed: a `tools/call` whose method came first.
                    let typed_call = method.as_deref() == Some(names::TOOLS_CALL);
                    let seed = ParamsSeed { keep_meta: self.keep_meta, typed_call };
                    params = Some(map.next_value_seed(seed)?);
                }
                _ => return Err(unexpected("member")),
            }
        }
        let (true, Some(id), Some(method)) = (version, id, method) else {
            return Err(unexpected("not a request"));
        };
        let (params, call, meta) = match params {
            Some(Params { members: Members::Tree(rest), meta }) => {
                (Some(Value::Object(rest)), None, meta)
            }
            Some(Params { members: Members::Call(call), meta }) => (None, Some(call), meta),
            None => (None, None, None),
        };
        Ok(Envelope { request: Request { id, method, params }, call, meta })
    }
}

struct Params<'a> {
    members: Members,
    meta: Option<MetaView<'a>>,
}

/// The members of `params` (but `_meta`, when read apart).
enum Members {
    /// As a tree.
    Tree(Map<String, Value>),
    /// A `tools/call`'s `name` and `arguments`, and nothing else (see the module docs).
    Call(PlainToolCall),
}

/// A `tools/call`'s members as they are read, while they are of the plain form.
#[derive(Default)]
struct PlainCall {
    name: Option<String>,
    arguments: Option<Map<String, Value>>,
    /// Whether `arguments` came before `name` (a tree made of them keeps their order).
    arguments_first: bool,
}

impl PlainCall {
    /// Into `tree` (empty so far: these were the first members read), in the order read.
    fn spill(self, tree: &mut Map<String, Value>) {
        let name = self.name.map(|n| ("name", Value::String(n)));
        let arguments = self.arguments.map(|a| ("arguments", Value::Object(a)));
        let (first, second) =
            if self.arguments_first { (arguments, name) } else { (name, arguments) };
        for (key, value) in first.into_iter().chain(second) {
            tree.insert(key.to_owned(), value);
        }
    }
}

struct ParamsSeed {
    /// Leave `_meta` among the params, as any other member.
    keep_meta: bool,
    /// Read a `tools/call`'s params typed while they are of the plain form.
    typed_call: bool,
}

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Params<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params as an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let mut rest = Map::new();
        let mut meta = None;
        // Typed until a member of another form: then a tree, what was read first in it.
        let mut plain = self.typed_call.then(PlainCall::default);
        while let Some(key) = map.next_key::<&'de str>()? {
            if key == "_meta" && !self.keep_meta {
                if meta.is_some() {
                    return Err(unexpected("a second _meta"));
                }
                meta = Some(map.next_value_seed(MetaSeed)?);
                continue;
            }
            if let Some(call) = &mut plain {
                match (key, map.next_value::<Value>()?) {
                    ("name", Value::String(name)) if call.name.is_none() => {
                        call.name = Some(name);
                        continue;
                    }
                    ("arguments", Value::Object(arguments)) if call.arguments.is_none() => {
                        call.arguments_first = call.name.is_none();
                        call.arguments = Some(arguments);
                        continue;
                    }
                    (key, value) => {
                        if let Some(call) = plain.take() {
                            call.spill(&mut rest);
                        }
                        rest.insert(key.to_owned(), value);
                        continue;
                    }
                }
            }
            // As in a tree: the last of duplicate members stands.
            rest.insert(key.to_owned(), map.next_value()?);
        }
        let members = match plain {
            Some(PlainCall { name: Some(name), arguments, .. }) => {
                Members::Call(PlainToolCall { name, arguments })
            }
            // No name: the router refuses it from the tree, as it always did.
            Some(call) => {
                call.spill(&mut rest);
                Members::Tree(rest)
            }
            None => Members::Tree(rest),
        };
        Ok(Params { members, meta })
    }
}

struct MetaSeed;

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = MetaView<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<MetaView<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = MetaView<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("_meta as an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetaView<'de>, A::Error> {
        let mut view = MetaView::default();
        let (mut version, mut capabilities) = (false, false);
        let mut brackets = 0;
        let mut count = |raw: &RawValue| {
            brackets += raw.get().bytes().filter(|b| matches!(b, b'{' | b'[')).count();
        };
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                meta_keys::PROTOCOL_VERSION if !version => {
                    // A string or null; anything else is the general decoder's to refuse.
                    view.version = map.next_value()?;
                    version = true;
                }
                meta_keys::CLIENT_CAPABILITIES if !capabilities => {
                    view.capabilities = map.next_value::<Option<&'de RawValue>>()?;
                    view.capabilities.inspect(|raw| count(raw));
                    capabilities = true;
                }
                meta_keys::LOG_LEVEL if view.log_level.is_none() => {
                    let raw = map.next_value::<&'de RawValue>()?;
                    count(raw);
                    view.log_level = Some(raw);
                }
                meta_keys::PROGRESS_TOKEN if view.progress.is_none() => {
                    let raw = map.next_value::<&'de RawValue>()?;
                    count(raw);
                    view.progress = Some(raw);
                }
                meta_keys::PROTOCOL_VERSION
                | meta_keys::CLIENT_CAPABILITIES
                | meta_keys::LOG_LEVEL
                | meta_keys::PROGRESS_TOKEN => return Err(unexpected("a duplicate in _meta")),
                _ => count(map.next_value::<&'de RawValue>()?),
            }
        }
        if brackets > MAX_META_BRACKETS {
            return Err(unexpected("deep _meta"));
        }
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const CALL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":null}}}"#;

    fn read_str(body: &str) -> Option<Incoming> {
        read(&Bytes::copy_from_slice(body.as_bytes()))
    }

    #[test]
    fn the_facts_are_those_of_the_tree_under_the_keys_of_meta_keys() {
        let meta = json!({
            meta_keys::PROTOCOL_VERSION: "v",
            meta_keys::CLIENT_CAPABILITIES: {},
            meta_keys::LOG_LEVEL: "info",
            meta_keys::PROGRESS_TOKEN: 1,
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"_meta": meta}});
        let facts = read_str(&body.to_string()).unwrap().facts;
        let tree = MetaFacts::of_tree(meta.as_object());
        for f in [facts, tree] {
            assert_eq!(f.version.as_deref(), Some("v"));
            assert!(matches!(f.capabilities, Some(Some(_))));
            assert_eq!(f.log_level.unwrap(), Some(LoggingLevel::Info));
            assert_eq!(f.progress, Some(true));
        }
    }

    #[test]
    fn empty_capabilities_read_as_the_decoder_reads_them() {
        for json in ["{}", "{ }", "{\n\t}"] {
            assert!(is_empty_object(json), "{json}");
            let decoded: ClientCapabilities = serde_json::from_str(json).unwrap();
            assert_eq!(decoded, ClientCapabilities::default());
        }
        for json in [r#"{"a":{}}"#, "{}}", "[]", "{", "", "null"] {
            assert!(!is_empty_object(json), "{json}");
        }
    }

    #[test]
    fn a_progress_token_is_a_string_or_an_integer_wherever_it_was_read() {
        for (token, valid) in [
            (json!("p"), true),
            (json!(7), true),
            (json!(-7), true),
            (json!(u64::MAX), true),
            (json!(1.5), false),
            (json!(1e3), false),
            (json!(null), false),
            (json!(true), false),
            (json!([1]), false),
            (json!({"a": 1}), false),
        ] {
            let meta = json!({ meta_keys::PROGRESS_TOKEN: token });
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"_meta": meta}});
            let facts = read_str(&body.to_string()).unwrap().facts;
            let tree = MetaFacts::of_tree(meta.as_object());
            assert_eq!((facts.progress, tree.progress), (Some(valid), Some(valid)), "{token}");
        }
    }

    #[test]
    fn a_well_formed_request_reads_as_the_general_decoder_reads_it() {
        let Incoming { request, call, meta, facts } = read_str(CALL).unwrap();
        assert!(call.is_some(), "a plain call, its _meta read apart: typed");
        let request = with_params(request, call);
        let Message::Request(mut general) = Message::decode(CALL.as_bytes()).unwrap() else {
            panic!("a request")
        };
        let general_meta = general.params.as_mut().unwrap().as_object_mut().unwrap();
        let general_meta = general_meta.remove("_meta").unwrap();
        assert_eq!(request, general);
        assert_eq!(Value::Object(meta.unwrap().map().unwrap().clone()), general_meta);
        let tree = MetaFacts::of_tree(general_meta.as_object());
        assert_eq!(facts.version, tree.version);
        assert_eq!(facts.progress, tree.progress);
        assert_eq!(facts.progress, Some(false), "a null progress token is sent, and wrong");
        assert_eq!(facts.capabilities.is_some(), tree.capabilities.is_some());
    }

    #[test]
    fn a_whole_request_reads_as_the_general_decoder_reads_it() {
        for body in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":null}]}}}"#,
            r#"{"method":"ping","id":"x","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"p"}}}"#,
            CALL,
        ] {
            let read = read_request(&Bytes::copy_from_slice(body.as_bytes())).unwrap();
            let Message::Request(general) = Message::decode(body.as_bytes()).unwrap() else {
                panic!("a request: {body}")
            };
            assert_eq!(read.into_request(), general, "{body}");
        }
        // What the reader does not take is the general decoder's, in this mode too.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        ] {
            assert!(read_request(&Bytes::copy_from_slice(body.as_bytes())).is_none(), "{body}");
        }
    }

    #[test]
    fn a_plain_tool_call_has_its_params_read_typed_and_any_other_as_a_tree() {
        let read = |body: &str| read_request(&Bytes::copy_from_slice(body.as_bytes())).unwrap();
        // The plain form, `arguments` or not, either order: typed, the request without params.
        for (body, arguments) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#,
                Some(json!({"a": 1})),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"name":"t"}}"#,
                Some(json!({})),
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#, None),
        ] {
            let ReadRequest { request, call } = read(body);
            let call = call.unwrap_or_else(|| panic!("typed: {body}"));
            assert_eq!((request.params, call.name.as_str()), (None, "t"), "{body}");
            assert_eq!(call.arguments.map(Value::Object), arguments, "{body}");
        }
        // Anything else is a tree, with what was read before the member that made it one.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"params":{"name":"t","arguments":{}},"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"task":{},"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#,
        ] {
            let read = read(body);
            assert!(read.call.is_none(), "a tree: {body}");
            let Message::Request(general) = Message::decode(body.as_bytes()).unwrap() else {
                panic!("a request: {body}")
            };
            assert_eq!(read.request, general, "{body}");
        }
        // The stateless reader types them too, `_meta` read apart wherever it is.
        for body in [
            CALL,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"name":"t"}}"#,
        ] {
            let read = read_str(body).unwrap();
            assert!(read.call.is_some() && read.request.params.is_none(), "{body}");
        }
        // ... but not when the method comes after the params.
        let late = r#"{"jsonrpc":"2.0","id":1,"params":{"name":"t"},"method":"tools/call"}"#;
        assert!(read_str(late).unwrap().call.is_none());
        // Arguments nested past the decoder's depth limit: refused by both readers alike.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":{}{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(read_request(&Bytes::copy_from_slice(deep.as_bytes())).is_none());
        assert!(read_str(&deep).is_none());
        assert!(Message::decode(deep.as_bytes()).is_err(), "the general decoder refuses it too");
    }

    mod props {
        use proptest::prelude::*;

        use super::*;

        /// The members of a `tools/call`'s params: duplicates, any order, values of any kind.
        fn members() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
            let key = prop::sample::select(vec!["name", "arguments", "_meta", "task", "x"]);
            let value = prop::sample::select(vec![
                r#""t""#,
                r#""u""#,
                "7",
                "null",
                "{}",
                r#"{"a":[1,{"b":null}]}"#,
                r#"{"progressToken":1}"#,
                "[]",
            ]);
            prop::collection::vec((key, value), 0..5)
        }

        /// A `tools/call` with params of `members`, its method before or after them.
        fn call_body(members: &[(&str, &str)], method_first: bool) -> String {
            let params =
                members.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect::<Vec<_>>().join(",");
            let (method, params) =
                (r#""method":"tools/call""#, format!(r#""params":{{{params}}}"#));
            let (first, second) =
                if method_first { (method, params.as_str()) } else { (params.as_str(), method) };
            format!(r#"{{"jsonrpc":"2.0","id":1,{first},{second}}}"#)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn a_tool_call_reads_as_the_general_decoder_reads_it(
                members in members(),
                method_first in any::<bool>(),
            ) {
                let body = call_body(&members, method_first);
                let read = read_request(&Bytes::copy_from_slice(body.as_bytes()));
                let Ok(Message::Request(general)) = Message::decode(body.as_bytes()) else {
                    panic!("a request: {body}")
                };
                let read = read.unwrap_or_else(|| panic!("read: {body}"));
                // Typed only in the plain form, and only with the method first.
                let plain = method_first
                    && members.iter().any(|(k, v)| *k == "name" && v.starts_with('"'))
                    && general.params.as_ref().and_then(Value::as_object).is_some_and(|p| {
                        members.len() == p.len()
                            && p.iter().all(|(k, v)| match k.as_str() {
                                "name" => v.is_string(),
                                "arguments" => v.is_object(),
                                _ => false,
                            })
                    });
                prop_assert_eq!(read.call.is_some(), plain, "{}", body);
                prop_assert_eq!(read.into_request(), general, "{}", body);
            }

            #[test]
            fn a_stateless_tool_call_reads_as_the_general_decoder_reads_it(
                members in members(),
                method_first in any::<bool>(),
            ) {
                let body = call_body(&members, method_first);
                let Ok(Message::Request(mut general)) = Message::decode(body.as_bytes()) else {
                    panic!("a request: {body}")
                };
                // What the reader takes (a `_meta` it reads apart: one object), it reads as the
                // general decoder does, `_meta` aside.
                if let Some(Incoming { request, call, .. }) = read(&Bytes::copy_from_slice(body.as_bytes())) {
                    if let Some(Value::Object(p)) = &mut general.params {
                        p.remove("_meta");
                    }
                    prop_assert!(call.is_none() || method_first, "{}", body);
                    prop_assert_eq!(with_params(request, call), general, "{}", body);
                }
            }
        }
    }

    #[test]
    fn anything_unusual_is_left_to_the_general_decoder() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"x":{}1{}}}}}}}"#,
            "[".repeat(70),
            "]".repeat(70)
        );
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/logLevel":"loud"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"me\u0074hod":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            deep.as_str(),
        ] {
            assert!(read_str(body).is_none(), "{body}");
        }
        let plain = read_str(r#"{"jsonrpc":"2.0","id":"a","method":"m"}"#).unwrap();
        assert!(plain.request.params.is_none() && plain.meta.is_none());
        assert!(plain.facts.version.is_none() && plain.facts.progress.is_none());
    }
}
