//! Test support: real servers served in-process over WebSocket, a TCP gate in front of them
//! that refuses, holds (a stalled handshake) or passes connections, and a scripted WebSocket
//! peer built on a raw `mcpl_core::Engine`.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt, future};
use mcpl_core::Engine;
use mcpl_core::transport::framed::{FramedTransport, Inbound, Outbound};
use mcpl_host::HostEvent;
use mcpl_host::config::{HostConfig, ServerConfig};
use mcpl_server::Server;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// A generous hang guard; no test waits this long when it passes.
pub const GUARD: Duration = Duration::from_secs(30);

/// `f`, or a panic after [`GUARD`].
pub async fn within<F: Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(GUARD, f).await {
        Ok(out) => out,
        Err(_) => panic!("hang: {what}"),
    }
}

/// Serves `server` over WebSocket at `/ws` on a loopback port; its address.
pub async fn serve(server: Server) -> SocketAddr {
    let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, app));
    addr
}

/// One server's configuration: `id`, `url`, plus the members of `extra`.
pub fn server(id: &str, url: &str, extra: Value) -> ServerConfig {
    let mut s = json!({"id": id, "url": url});
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    HostConfig::from_json(&json!({"servers": [s]}).to_string()).unwrap().servers.remove(0)
}

/// The next event matching `pred` (earlier ones are dropped).
pub async fn next_event(
    events: &mut mpsc::Receiver<HostEvent>,
    what: &str,
    pred: impl Fn(&HostEvent) -> bool,
) -> HostEvent {
    within(what, async {
        loop {
            let event = events.recv().await.expect("the host's event stream ended");
            if pred(&event) {
                return event;
            }
        }
    })
    .await
}

/// Every event already queued.
pub fn drain(events: &mut mpsc::Receiver<HostEvent>) -> Vec<HostEvent> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        out.push(e);
    }
    out
}

/// What the gate does with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward it to the server.
    Pass,
    /// Accept it and send nothing back (a stalled handshake) until the mode changes.
    Hold,
    /// Close it at once (the server is down).
    Refuse,
}

/// What the gate saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted.
    pub accepted: usize,
    /// Connections held (stalled).
    pub held: usize,
    /// Held connections the client closed while they were held.
    pub abandoned: usize,
    /// Connections forwarded.
    pub passed: usize,
}

/// A TCP gate in front of a server.
pub struct Gate {
    /// `ws://<gate>/ws`.
    pub url: String,
    mode: watch::Sender<Mode>,
    stats: watch::Sender<Stats>,
    kill: watch::Sender<u64>,
}

impl Gate {
    /// A gate in front of `upstream`, starting in `mode`.
    pub async fn new(upstream: SocketAddr, mode: Mode) -> Gate {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/ws", listener.local_addr().unwrap());
        let (mode, _) = watch::channel(mode);
        let (stats, _) = watch::channel(Stats::default());
        let (kill, _) = watch::channel(0u64);
        let (m, st, k) = (mode.clone(), stats.clone(), kill.clone());
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                st.send_modify(|s| s.accepted += 1);
                tokio::spawn(gate_one(conn, upstream, m.subscribe(), st.clone(), k.subscribe()));
            }
        });
        Gate { url, mode, stats, kill }
    }

    /// Changes what happens to new (and held) connections.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// Drops every forwarded connection (the server went away).
    pub fn kill(&self) {
        self.kill.send_modify(|k| *k += 1);
    }

    /// What the gate saw so far.
    pub fn stats(&self) -> Stats {
        *self.stats.borrow()
    }

    /// Waits until `pred` holds of the stats.
    pub async fn wait(&self, what: &str, pred: impl Fn(&Stats) -> bool) -> Stats {
        let mut rx = self.stats.subscribe();
        within(what, async { *rx.wait_for(|s| pred(s)).await.unwrap() }).await
    }
}

async fn gate_one(
    mut conn: TcpStream,
    upstream: SocketAddr,
    mut mode: watch::Receiver<Mode>,
    stats: watch::Sender<Stats>,
    mut kill: watch::Receiver<u64>,
) {
    let mut pending = Vec::new();
    let mut counted = false;
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Refuse => return,
            Mode::Pass => break,
            Mode::Hold => {
                if !counted {
                    counted = true;
                    stats.send_modify(|s| s.held += 1);
                }
                let mut buf = [0u8; 4096];
                tokio::select! {
                    read = conn.read(&mut buf) => match read {
                        Ok(0) | Err(_) => {
                            stats.send_modify(|s| s.abandoned += 1);
                            return;
                        }
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    },
                    changed = mode.changed() => if changed.is_err() { return },
                }
            }
        }
    }
    let Ok(mut up) = TcpStream::connect(upstream).await else { return };
    if up.write_all(&pending).await.is_err() {
        return;
    }
    stats.send_modify(|s| s.passed += 1);
    kill.borrow_and_update();
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut conn, &mut up) => {}
        _ = kill.changed() => {}
    }
}

/// A scripted MCP peer over WebSocket: each connection gets a fresh raw engine that
/// `script` sets up (its request handlers). Returns `ws://<addr>/ws`.
pub async fn scripted(script: impl Fn(&Engine) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let script = Arc::new(script);
    let live: Arc<Mutex<Vec<Engine>>> = Arc::default();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let (script, live) = (script.clone(), live.clone());
            tokio::spawn(async move {
                let Ok(ws) = tokio_tungstenite::accept_async(conn).await else { return };
                let engine = Engine::new();
                script(&engine);
                if engine.connect(framed(ws)).await.is_ok() {
                    live.lock().unwrap().push(engine);
                }
            });
        }
    });
    url
}

/// The framed transport over a tungstenite server stream.
fn framed(stream: tokio_tungstenite::WebSocketStream<TcpStream>) -> FramedTransport {
    let (sink, stream) = stream.split();
    let stream = stream.map(|item| match item {
        Ok(Message::Text(text)) => Ok(Inbound::Text(text.as_str().to_owned())),
        Ok(Message::Close(_)) => Ok(Inbound::Closed { code: None, reason: String::new() }),
        Ok(_) => Ok(Inbound::Other),
        Err(e) => Err(mcpl_core::Error::transport("websocket receive failed", e)),
    });
    let sink = sink.sink_map_err(|e| mcpl_core::Error::transport("websocket send failed", e)).with(
        |out: Outbound| {
            future::ready(Ok::<_, mcpl_core::Error>(match out {
                Outbound::Text(text) => Message::Text(text.into()),
                Outbound::Ping => Message::Ping(Default::default()),
                Outbound::Close(code) => Message::Close(Some(CloseFrame {
                    code: code.code().into(),
                    reason: code.reason().into(),
                })),
            }))
        },
    );
    FramedTransport::new(stream, sink)
}

/// The `initialize` answer of a scripted server; `mcpl` is its manifest, if it speaks MCPL.
pub fn initialize_result(mcpl: Option<Value>) -> Value {
    let mut caps = json!({"tools": {"listChanged": true}});
    if let Some(m) = mcpl {
        caps["experimental"] = json!({"mcpl": m});
    }
    json!({"protocolVersion": "2025-11-25", "capabilities": caps,
           "serverInfo": {"name": "scripted", "version": "1"}})
}

/// A plain MCP notes server with one tool, `add`.
pub fn notes() -> Server {
    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::ToolOutput;
    let item = json!({"type": "string"});
    Server::builder("notes", "1.0.0")
        .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
            let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
            let text = format!("added {item}");
            async move { Ok(ToolOutput::text(text)) }
        })
        .build()
}

/// The text of a `tools/call` result's first block.
pub fn text(result: &mcpl_core::types::CallToolResult) -> String {
    result.content.first().and_then(|block| block.as_text()).unwrap_or_default().to_owned()
}
