//! The MCPL host side over a real child process (stdio), against a scripted Python server that
//! drives the conversation and logs what the host answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use mcpl_client::Client;
use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus, PushOutcome};
use mcpl_client::transport::ChildProcess;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::inference::InferenceResult;
use serde_json::{Value, json};

/// The server: answers `initialize` with a manifest; on the initial `featureSets/update` it
/// first sends a `push/event` (which the host must refuse: not ready), then answers; then it
/// sends the same `push/event` twice and a streamed `inference/request` with a string id, and
/// logs every message it receives after the handshake as one JSON line.
const SCRIPTED_SERVER: &str = r#"
import json, os, sys
log = open(os.environ["MCPL_LOG"], "a")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
def note(m):
    log.write(json.dumps(m) + "\n"); log.flush()
manifest = {"version": "0.5", "pushEvents": True, "inferenceRequest": {"streaming": True},
            "featureSets": {"mail": {"description": "m", "uses": ["pushEvents"]},
                            "ask": {"description": "a", "uses": ["inferenceRequest", "inferenceRequest.streaming"]}}}
init = recv()
send({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25",
      "capabilities": {"experimental": {"mcpl": manifest}}, "serverInfo": {"name": "py", "version": "1"}}})
note(recv())                      # notifications/initialized
update = recv(); note(update)     # featureSets/update (a request)
push = {"featureSet": "mail", "eventId": "e1", "timestamp": "2026-08-01T00:00:00Z",
        "payload": {"content": [{"type": "text", "text": "hi"}]}}
send({"jsonrpc": "2.0", "id": "early", "method": "push/event", "params": push})
note(recv())                      # -32002: not ready
send({"jsonrpc": "2.0", "id": update["id"], "result": {"accepted": True}})
send({"jsonrpc": "2.0", "id": "p1", "method": "push/event", "params": push})
note(recv())
send({"jsonrpc": "2.0", "id": "p2", "method": "push/event", "params": push})
note(recv())
send({"jsonrpc": "2.0", "id": "inf-1", "method": "inference/request", "params": {
      "featureSet": "ask", "stream": True, "messages": [{"role": "user", "content": "hi"}]}})
while True:
    m = recv(); note(m)
    if m.get("id") == "inf-1":
        break
note({"done": True})
while True:
    recv()
"#;

struct Log(PathBuf);

impl Log {
    fn new(name: &str) -> Log {
        let path = std::env::temp_dir().join(format!("mcpl-{name}-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Log(path)
    }

    fn lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn a_child_process_server_meets_readiness_dedupe_and_streaming() {
    let log = Log::new("mcpl-host-stdio");
    let host = McplHost::builder(HostPolicy::default())
        .on_push_event(|event| async move {
            PushOutcome::accepted(Some(format!("inference-for-{}", event.event_id)))
        })
        .on_inference(|call| async move {
            let chunks = call.chunks.ok_or_else(|| ErrorObject::internal("not streamed"))?;
            for part in ["Hi ", "there"] {
                chunks.send(part).await.map_err(ErrorObject::internal)?;
            }
            Ok(serde_json::from_value::<InferenceResult>(json!({"content": "Hi there",
                "model": "m", "finishReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 2}}))
            .unwrap())
        })
        .build();
    let client = Client::builder("host", "1").with_mcpl(host.clone()).build();
    let child = ChildProcess::new("python3").args(["-c", SCRIPTED_SERVER]).env("MCPL_LOG", &log.0);
    tokio::time::timeout(Duration::from_secs(30), client.connect(child))
        .await
        .expect("hang")
        .unwrap();
    assert_eq!(host.status(), Some(McplStatus::Ready));
    let lines = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let lines = log.lines();
            if lines.last().is_some_and(|l| l.get("done").is_some()) {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("hang");
    assert_eq!(lines[0]["method"], "notifications/initialized");
    assert_eq!(lines[1]["method"], "featureSets/update");
    let granted = lines[1]["params"]["effectiveCapabilities"].as_array().unwrap();
    assert!(granted.contains(&json!("pushEvents")));
    assert!(granted.contains(&json!("inferenceRequest.streaming")));
    // Before the receipt: refused.
    assert_eq!(lines[2]["id"], "early");
    assert_eq!(lines[2]["error"]["code"], -32002);
    // After: accepted once, the duplicate answered with the same inference id.
    assert_eq!(lines[3]["result"], json!({"accepted": true, "inferenceId": "inference-for-e1"}));
    assert_eq!(lines[4]["result"], lines[3]["result"]);
    // The streamed inference: chunks keyed by the string id, then the result.
    let chunks: Vec<&Value> =
        lines[5..].iter().filter(|l| l["method"] == "inference/chunk").collect();
    assert_eq!(chunks.len(), 2);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c["params"]["requestId"], "inf-1");
        assert_eq!(c["params"]["index"], i);
    }
    let response = lines.iter().find(|l| l["id"] == "inf-1").unwrap();
    assert_eq!(response["result"]["content"], "Hi there");
    client.close().await.unwrap();
}
