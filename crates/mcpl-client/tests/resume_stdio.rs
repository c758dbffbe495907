//! Session resume and the response cache over real child processes (stdio).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use mcpl_client::cache::{MemoryStore, ResponseCache};
use mcpl_client::transport::ChildProcess;
use mcpl_client::{Client, Negotiation};
use mcpl_core::{ErrorKind, ProtocolVersion};

/// A scripted server of both eras: answers `server/discover`, `initialize` and `tools/list`
/// (with cache hints), and appends the method of every request it receives to `$MCP_LOG`.
const SCRIPTED_SERVER: &str = r#"
import json, os, sys
log = open(os.environ["MCP_LOG"], "a")
info = {"name": "scripted", "version": "7"}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    log.write(msg["method"] + "\n"); log.flush()
    if msg["method"] == "server/discover":
        result = {"resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
                  "capabilities": {"tools": {}}, "instructions": "scripted",
                  "ttlMs": 60000, "cacheScope": "public",
                  "_meta": {"io.modelcontextprotocol/serverInfo": info}}
    elif msg["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}],
                  "resultType": "complete", "ttlMs": 60000, "cacheScope": "public"}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

struct Log(PathBuf);

impl Log {
    fn new(name: &str) -> Log {
        let path = std::env::temp_dir().join(format!("mcpl-{name}-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Log(path)
    }

    fn methods(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    fn child(&self) -> ChildProcess {
        child(&self.0)
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn child(log: &Path) -> ChildProcess {
    ChildProcess::new("python3").args(["-c", SCRIPTED_SERVER]).env("MCP_LOG", log)
}

#[tokio::test]
async fn a_stateless_child_is_resumed_in_a_new_process_with_zero_round_trips() {
    let log = Log::new("resume-stdio");
    let store = std::sync::Arc::new(MemoryStore::new());
    let client = Client::builder("c", "1").with_cache(ResponseCache::new(store.clone())).build();
    let details = client.connect(log.child()).await.unwrap();
    assert!(details.is_stateless());
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    assert_eq!(log.methods(), ["server/discover", "tools/list"]);

    // The child is gone with the connection; a new one, started the same way, is resumed.
    let snapshot = client.suspend().await.unwrap();
    assert!(snapshot.endpoint.as_deref().unwrap().starts_with("stdio:[\"python3\""));
    let resumed = client.resume(log.child(), snapshot).await.unwrap();
    assert_eq!(resumed, details);
    assert_eq!(client.server().unwrap().server_info.name, "scripted");
    // Nothing was sent to the new child, and the cached list is still the server's.
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    assert_eq!(log.methods(), ["server/discover", "tools/list"]);
    assert_eq!(store.len(), 1);
    // A call that must reach the server does, over the resumed connection.
    client.ping().await.unwrap();
    assert_eq!(log.methods(), ["server/discover", "tools/list", "server/discover"]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_stateful_child_cannot_be_suspended_and_stays_connected() {
    let log = Log::new("resume-stdio-2025");
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(log.child()).await.unwrap();
    assert!(client.session_snapshot().is_some_and(|s| !s.is_resumable()));
    let error = client.suspend().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Transport);
    assert!(client.is_connected());
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn children_differing_only_in_their_environment_keep_apart_in_the_cache() {
    let (first, second) = (Log::new("env-first"), Log::new("env-second"));
    let store = std::sync::Arc::new(MemoryStore::new());
    let cache = ResponseCache::new(store.clone());
    // The same command line and directory; only `MCP_LOG` differs (a token would, too).
    let a = Client::builder("c", "1").with_cache(cache.clone()).build();
    a.connect(first.child()).await.unwrap();
    assert_eq!(a.list_tools().await.unwrap().len(), 1);
    let b = Client::builder("c", "1").with_cache(cache).build();
    b.connect(second.child()).await.unwrap();
    assert_eq!(b.list_tools().await.unwrap().len(), 1);
    // Each child was asked for its own list: the second was not answered from the first's.
    assert_eq!(first.methods(), ["server/discover", "tools/list"]);
    assert_eq!(second.methods(), ["server/discover", "tools/list"]);
    assert_eq!(store.len(), 2);
    // The identity holds a digest of the environment, not its values.
    let endpoint = a.session_snapshot().unwrap().endpoint.unwrap();
    assert!(endpoint.contains("#env=sha256:") && !endpoint.contains("env-first"), "{endpoint}");
    a.close().await.unwrap();
    b.close().await.unwrap();
}
