#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Ops alerts the host raises, against scripted servers over real WebSocket connections:
//! `mcpl-policy-refused`, `mcpl-tools-stale` then `mcpl-tools-fresh`, and the webhook's throttle
//! window on an injected clock.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_host::alerts::{ManualClock, OpsAlert, kinds};
use mcpl_host::config::HostConfig;
use mcpl_host::{Host, HostEvent};
use serde_json::{Value, json};
use support::{drain, initialize_result, next_event, scripted, within};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::watch;

fn alerts_of(events: &[HostEvent], kind: &str) -> Vec<OpsAlert> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Alert(a) if a.kind == kind => Some(a.clone()),
            _ => None,
        })
        .collect()
}

fn one_server(url: &str) -> HostConfig {
    HostConfig::from_json(&json!({"servers": {"s": {"url": url, "reconnect": false}}}).to_string())
        .unwrap()
}

#[tokio::test]
async fn a_refused_policy_raises_mcpl_policy_refused() {
    let manifest = json!({"version": "0.5", "pushEvents": true,
        "featureSets": {"mail": {"description": "mail", "uses": ["pushEvents"]}}});
    let url = scripted(move |engine| {
        let manifest = manifest.clone();
        engine.on_request("initialize", move |_, _| {
            let answer = initialize_result(Some(manifest.clone()));
            async move { Ok(answer) }
        });
        engine.on_request("featureSets/update", |_, _| async {
            Ok(json!({"accepted": false, "fallback": "mcp-only", "reason": "needs push events",
                      "missingCapabilities": ["pushEvents"]}))
        });
        engine.on_request("tools/list", |_, _| async { Ok(json!({"tools": []})) });
    })
    .await;
    let config = json!({"servers": {"s": {"url": url, "reconnect": false,
        "grant": {"deny": ["pushEvents"]}}}});
    let config = HostConfig::from_json(&config.to_string()).unwrap();
    let (host, mut events) = Host::start(config).await.unwrap();
    let HostEvent::Alert(alert) = next_event(
        &mut events,
        "the policy alert",
        |e| matches!(e, HostEvent::Alert(a) if a.kind == kinds::POLICY_REFUSED),
    )
    .await
    else {
        unreachable!()
    };
    assert_eq!(alert.subject, "s");
    assert_eq!(alert.data["fallback"], "mcp-only");
    assert_eq!(alert.data["reason"], "needs push events");
    assert_eq!(alert.data["missingCapabilities"], json!(["pushEvents"]));
    // The message names what is missing and what would grant it.
    assert_eq!(
        alert.message,
        "server s refused the host policy (needs push events): it needs pushEvents, which is \
         not granted (remove the pattern matching \"pushEvents\" from the server's grant.deny)"
    );
    // MCPL is off; the server stays connected as plain MCP.
    assert!(!host.mcpl("s").unwrap().is_ready());
    host.shutdown().await;
}

#[tokio::test]
async fn a_refresh_that_works_again_raises_mcpl_tools_fresh() {
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    let url = scripted(move |engine| {
        engine.on_request("initialize", |_, _| async { Ok(initialize_result(None)) });
        let counter = counter.clone();
        engine.on_request("tools/list", move |_, _| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    return Err(ErrorObject::internal("the index is rebuilding"));
                }
                Ok(json!({"tools": [{"name": "find", "inputSchema": {"type": "object"}}]}))
            }
        });
    })
    .await;
    let (host, mut events) = Host::start(one_server(&url)).await.unwrap();
    let first = drain(&mut events);
    assert_eq!(alerts_of(&first, kinds::TOOLS_STALE).len(), 1);
    assert!(alerts_of(&first, kinds::TOOLS_FRESH).is_empty());
    host.refresh_tools("s").await;
    let fresh = alerts_of(&drain(&mut events), kinds::TOOLS_FRESH);
    assert_eq!(fresh.len(), 1, "the stale alert is cleared");
    assert_eq!(fresh[0].subject, "s");
    assert_eq!(host.tools()[0].name, "mcpl--s--find");
    // Only a refresh after a failure clears anything.
    host.refresh_tools("s").await;
    assert!(alerts_of(&drain(&mut events), kinds::TOOLS_FRESH).is_empty());
    assert_eq!(lists.load(Ordering::SeqCst), 3);
    host.shutdown().await;
}

/// A loopback endpoint that answers every POST with 204 and keeps the JSON bodies.
async fn webhook() -> (String, Arc<Mutex<Vec<Value>>>, watch::Receiver<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let (count, rx) = watch::channel(0usize);
    let kept = bodies.clone();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let (kept, count) = (kept.clone(), count.clone());
            tokio::spawn(async move {
                let mut reader = BufReader::new(conn);
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    kept.lock().unwrap().push(serde_json::from_slice(&body).unwrap());
                    count.send_modify(|c| *c += 1);
                    let answer = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, bodies, rx)
}

#[tokio::test]
async fn the_webhook_throttle_window_follows_the_injected_clock() {
    // A server that lists one tool twice: every refresh raises `mcpl-duplicate-tools`.
    let url = scripted(|engine| {
        engine.on_request("initialize", |_, _| async { Ok(initialize_result(None)) });
        engine.on_request("tools/list", |_, _| async {
            let tool = json!({"name": "find", "inputSchema": {"type": "object"}});
            Ok(json!({"tools": [tool.clone(), tool]}))
        });
    })
    .await;
    let (hook, bodies, mut posted) = webhook().await;
    let mut config = one_server(&url);
    config.ops_webhook = Some(hook);
    let clock = Arc::new(ManualClock::default());
    let (host, mut events) = Host::builder(config).clock(clock.clone()).start().await.unwrap();
    within("the first post", posted.wait_for(|n| *n == 1)).await.unwrap();
    host.refresh_tools("s").await; // inside the window: not posted
    clock.advance(Duration::from_secs(15 * 60));
    host.refresh_tools("s").await; // the window has passed on the host's clock
    within("the second post", posted.wait_for(|n| *n == 2)).await.unwrap();
    assert_eq!(alerts_of(&drain(&mut events), kinds::DUPLICATE_TOOLS).len(), 3);
    // Posts are sent in the background; give a wrongly posted second alert time to arrive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert!(bodies.iter().all(|b| b["kind"] == kinds::DUPLICATE_TOOLS && b["subject"] == "s"));
    host.shutdown().await;
}
