//! Property tests of the parsers: no input panics, valid JSON is never a parse error, and
//! decoding is stable under re-encoding and under arbitrary stream chunking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcpl_core::jsonrpc::{ErrorCode, Message};
use mcpl_core::transport::TransportReceiver;
use mcpl_core::transport::lines::LineReceiver;
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("jsonrpc".to_owned()),
                    Just("id".to_owned()),
                    Just("method".to_owned()),
                    Just("params".to_owned()),
                    Just("result".to_owned()),
                    Just("error".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Valid messages of every kind.
fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![any::<i64>().prop_map(Value::from), "[ -~]{0,8}".prop_map(Value::String)];
    let params = prop::option::of(
        prop::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    );
    (id, "[a-z/]{1,16}", params, json_value(), 0..4u8).prop_map(|(id, method, params, result, kind)| {
        let mut m = match kind {
            0 => json!({"jsonrpc": "2.0", "id": id, "method": method}),
            1 => json!({"jsonrpc": "2.0", "method": method}),
            2 => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": method}}),
        };
        if let (Some(p), true) = (params, kind < 2) {
            m["params"] = p;
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        match Message::decode(&bytes) {
            Ok(msg) => prop_assert_eq!(Message::decode(&msg.encode()).unwrap(), msg),
            Err(e) => prop_assert!(e.code() == ErrorCode::PARSE_ERROR || e.code() == ErrorCode::INVALID_REQUEST),
        }
    }

    #[test]
    fn reading_as_text_decides_as_reading_bytes(
        v in message(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        // A valid message with one byte put in somewhere: often invalid UTF-8 or JSON.
        let mut bytes = serde_json::to_vec(&v).unwrap();
        bytes.insert(at.index(bytes.len() + 1), byte);
        let ours = Message::decode(&bytes);
        let serde = serde_json::from_slice::<Message>(&bytes);
        prop_assert_eq!(ours.is_ok(), serde.is_ok());
        if let Ok(text) = std::str::from_utf8(&bytes) {
            match (&ours, Message::decode_str(text)) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, &b),
                (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code()),
                _ => prop_assert!(false, "decode and decode_str disagree"),
            }
        }
    }

    #[test]
    fn valid_json_is_never_a_parse_error(v in json_value()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        if let Err(e) = Message::decode(&bytes) {
            prop_assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
            prop_assert_eq!(e.is_batch(), v.is_array());
        }
    }

    #[test]
    fn valid_messages_decode_and_round_trip(v in message()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        let msg = Message::decode(&bytes).unwrap();
        let back: Value = serde_json::from_slice(&msg.encode()).unwrap();
        prop_assert_eq!(back, v);
    }

    #[test]
    fn line_framing_is_independent_of_chunking(
        msgs in prop::collection::vec(message(), 1..8),
        chunk in 1usize..64,
    ) {
        let mut stream = Vec::new();
        for m in &msgs {
            stream.extend(serde_json::to_vec(m).unwrap());
            stream.push(b'\n');
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let decoded = rt.block_on(async move {
            let (mut w, r) = tokio::io::duplex(chunk);
            let writer = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                for piece in stream.chunks(chunk) {
                    w.write_all(piece).await.unwrap();
                }
            });
            let mut rx = LineReceiver::new(tokio::io::BufReader::with_capacity(chunk.max(8), r), 1 << 20);
            let mut out = Vec::new();
            while let Some(m) = rx.recv().await.unwrap() {
                out.push(serde_json::to_value(&m).unwrap());
            }
            writer.await.unwrap();
            out
        });
        prop_assert_eq!(decoded, msgs);
    }
}

/// Params of `tools/call` as a server may receive them: the known members with values of any
/// type (right or wrong), and unknown ones.
fn call_tool_object() -> impl Strategy<Value = serde_json::Map<String, Value>> {
    let task = prop_oneof![json_value(), any::<u32>().prop_map(|ttl| json!({ "ttl": ttl })),];
    let responses = prop_oneof![
        json_value(),
        Just(json!({ "q1": { "action": "accept", "content": { "x": 1 } } })),
    ];
    let meta = prop_oneof![json_value(), Just(json!({ "progressToken": 1 }))];
    (
        prop_oneof![json_value(), "[a-z_]{1,8}".prop_map(Value::String)],
        prop_oneof![json_value(), Just(json!({ "a": [1, { "b": null }] }))],
        task,
        responses,
        prop_oneof![json_value(), "[A-Za-z0-9]{0,8}".prop_map(Value::String)],
        meta,
        prop::collection::btree_map("[a-z]{1,5}", json_value(), 0..3),
        any::<u8>(),
    )
        .prop_map(|(name, arguments, task, responses, state, meta, unknown, present)| {
            let mut object: serde_json::Map<String, Value> = unknown.into_iter().collect();
            let members = [
                ("name", name),
                ("arguments", arguments),
                ("task", task),
                ("inputResponses", responses),
                ("requestState", state),
                ("_meta", meta),
            ];
            for (i, (key, value)) in members.into_iter().enumerate() {
                if present & (1 << i) != 0 {
                    object.insert(key.to_owned(), value);
                }
            }
            object
        })
}

proptest! {
    /// `CallToolRequestParams::from_object` reads exactly what `serde_json::from_value` reads,
    /// and refuses exactly what it refuses.
    #[test]
    fn call_tool_params_from_an_object_read_as_from_a_value(object in call_tool_object()) {
        use mcpl_core::types::CallToolRequestParams;
        let by_value =
            serde_json::from_value::<CallToolRequestParams>(Value::Object(object.clone()));
        let by_object = CallToolRequestParams::from_object(object);
        match (by_value, by_object) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "from_value {:?} but from_object {:?}", a, b),
        }
    }
}
