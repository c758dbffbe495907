//! Server memory under hostile clients on loopback: a body dribbled one byte per write, N slow
//! connections (half-sent heads, half-sent bodies), and a WebSocket client that sends calls
//! but reads none of their answers. A benchmark, not a test: it prints
//! the server's resident memory (`VmRSS`, and the peak `VmHWM`, from `/proc`) at each step.
//!
//! ```sh
//! cargo bench -p mcpl-server --bench hostile                 # this crate's endpoint, in a child
//! cargo bench -p mcpl-server --bench hostile -- --server target/release/mcpl-conformance-server
//! ```
//!
//! With `--server PATH`, the server is that binary, started with `PORT` set (as the
//! conformance fixture is); otherwise this binary re-runs itself as a server of one `echo`
//! tool (`StreamableHttp` at `/mcp` and `WebSocketEndpoint` at `/ws` on `http::serve`, default
//! settings; the WebSocket steps run only then). Options: `--dribble BYTES` (default
//! 131072), `--every N` and `--pause-us US` (a pause of US µs, default 20, after every N
//! one-byte writes, default 1, so that the server reads about one byte at a time),
//! `--slow N` (default 500), `--hold SECS` (how long the slow connections are held before
//! the last reading, default 12), `--unread N` (the calls of the client that reads nothing,
//! 64 KB each, default 2000; 0 skips the step). Figures: `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SERVE_ENV: &str = "MCPL_HOSTILE_BENCH_SERVE";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    if let Ok(port) = std::env::var(SERVE_ENV) {
        runtime.block_on(serve(port.parse().unwrap()));
        return;
    }
    runtime.block_on(bench());
}

async fn serve(port: u16) {
    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::http::{HttpConfig, StreamableHttp};
    let server = mcpl_server::Server::builder("hostile-bench", "0")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(mcpl_server::ToolOutput::text(serde_json::Value::Object(args).to_string()))
        })
        .build();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let ws =
        mcpl_server::ws::WebSocketEndpoint::new(server.clone(), mcpl_server::ws::WsConfig::new());
    let app = StreamableHttp::new(server, HttpConfig::new())
        .into_router("/mcp")
        .merge(ws.into_router("/ws"));
    mcpl_server::http::serve(listener, app).await.unwrap();
}

/// Opens a WebSocket to `/ws` by hand (so that frames can be written byte by byte).
async fn websocket(addr: std::net::SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    tcp.write_all(
        b"GET /ws HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: upgrade\r\n\
          sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n",
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tcp.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    tcp
}

/// A `ping` request padded to about `size` bytes.
fn ping(size: usize) -> String {
    let pad = "x".repeat(size.saturating_sub(60));
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{pad}"}}}}"#)
}

/// Whether the server answered on `tcp` within a few seconds (any bytes).
async fn answered(tcp: &mut TcpStream) -> &'static str {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => "answered",
        Ok(_) => "closed",
        Err(_) => "no answer",
    }
}

struct Args {
    server: Option<String>,
    dribble: usize,
    slow: usize,
    hold: u64,
    /// Yield to the scheduler after this many 1-byte writes (1: after each).
    every: usize,
    /// How long each pause is, in microseconds.
    pause_us: u64,
    /// How many calls the client that reads nothing sends.
    unread: usize,
}

fn args() -> Args {
    let mut args = Args {
        server: None,
        dribble: 128 * 1024,
        slow: 500,
        hold: 12,
        every: 1,
        pause_us: 20,
        unread: 2000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--server" => args.server = it.next(),
            "--dribble" => args.dribble = it.next().unwrap().parse().unwrap(),
            "--slow" => args.slow = it.next().unwrap().parse().unwrap(),
            "--hold" => args.hold = it.next().unwrap().parse().unwrap(),
            "--pause-us" => args.pause_us = it.next().unwrap().parse().unwrap(),
            "--every" => args.every = it.next().unwrap().parse::<usize>().unwrap().max(1),
            "--unread" => args.unread = it.next().unwrap().parse().unwrap(),
            _ => {} // `cargo bench` passes `--bench`
        }
    }
    args
}

/// A short pause between writes (blocking: the writer is the only thing this bench does then).
fn pause(us: u64) {
    if us > 0 {
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// The server's `VmRSS` and `VmHWM`, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn report(pid: u32, step: &str) {
    let (rss, hwm) = memory(pid);
    println!(
        "{step:<58} rss {:>8.1} MiB  peak {:>8.1} MiB",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
}

/// Step 3: a WebSocket client that sends `calls` calls of `echo` (64 KB each, so as much to
/// answer) and reads nothing: how much the server reads of them, its memory, and whether
/// (and when) it closes the connection.
async fn unread(addr: std::net::SocketAddr, pid: u32, calls: usize) {
    let mut tcp = websocket(addr).await;
    let pad = "x".repeat(64 * 1024);
    let started = Instant::now();
    let mut sent = 0usize;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"unread","version":"0"}}}"#;
    let ready = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let messages = [init.to_owned(), ready.to_owned()].into_iter().chain((1..=calls).map(|id| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"pad":"{pad}"}}}}}}"#
        )
    }));
    for call in messages {
        // A masked text frame (zero key: the payload goes as it is).
        let mut frame = vec![0x81];
        match call.len() {
            n @ 0..126 => frame.push(0x80 | n as u8),
            n @ 126..65536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&[0, 0, 0, 0]);
        frame.extend_from_slice(call.as_bytes());
        match tokio::time::timeout(Duration::from_secs(2), tcp.write_all(&frame)).await {
            Ok(Ok(())) => sent += frame.len(),
            // Stalled for 2 s: the server stopped reading (or went away).
            Ok(Err(_)) | Err(_) => break,
        }
    }
    report(
        pid,
        &format!(
            "a WebSocket client reading nothing: {:.1} of {:.1} MB of calls taken",
            sent as f64 / 1e6,
            (calls * (64 * 1024 + 120)) as f64 / 1e6
        ),
    );
    // Closed: a write fails (the server reset the connection). Never read: that would let
    // the server write again.
    let deadline = Instant::now() + Duration::from_secs(45);
    let outcome = loop {
        if Instant::now() > deadline {
            break "still open 45 s later".to_owned();
        }
        match tcp.try_write(&[0x89, 0x80, 0, 0, 0, 0]) {
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                break format!(
                    "closed {:.0} s after the first call",
                    started.elapsed().as_secs_f64()
                );
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    report(pid, &format!("... {outcome}"));
}

fn head(extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: echo\r\n{extra}\r\n"
    )
}

/// Whether the server closed `tcp` (read returns 0 or fails without blocking long).
async fn closed(tcp: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(Duration::from_millis(1), tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

async fn bench() {
    let args = args();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = match &args.server {
        Some(path) => std::process::Command::new(path),
        None => {
            let mut me = std::process::Command::new(std::env::current_exe().unwrap());
            me.env(SERVE_ENV, port.to_string());
            me
        }
    };
    let mut child = child.env("PORT", port.to_string()).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "the server did not listen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "server: {}",
        args.server.as_deref().unwrap_or(
            "this bench: a StreamableHttp router and a WebSocket endpoint on http::serve"
        )
    );
    report(pid, "idle");

    // 1. A body dribbled one byte per write.
    let pad = "x".repeat(args.dribble.saturating_sub(200));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"pad":"{pad}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    tcp.write_all(head(&format!("content-length: {}\r\n", body.len())).as_bytes()).await.unwrap();
    let started = Instant::now();
    for (i, byte) in body.as_bytes().iter().enumerate() {
        if tcp.write_all(std::slice::from_ref(byte)).await.is_err() {
            println!("  the server closed the connection after {i} bytes");
            break;
        }
        if i % args.every == 0 {
            pause(args.pause_us);
        }
    }
    let mut answer = vec![0u8; 16];
    let got = tokio::time::timeout(Duration::from_secs(30), tcp.read(&mut answer)).await;
    let status = match got {
        Ok(Ok(n)) => String::from_utf8_lossy(&answer[..n]).into_owned(),
        _ => "no answer".to_owned(),
    };
    report(
        pid,
        &format!(
            "after a {} B body in 1-byte writes ({:.1} s, {})",
            body.len(),
            started.elapsed().as_secs_f64(),
            status.trim()
        ),
    );
    drop(tcp);

    if args.server.is_none() {
        // 1b. A WebSocket message dribbled one byte per write, in one frame (masked with a
        // zero key, so the payload goes as it is).
        let message = ping(args.dribble);
        let mut tcp = websocket(addr).await;
        let mut frame = vec![0x81, 0x80 | 127];
        frame.extend_from_slice(&(message.len() as u64).to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 0]);
        tcp.write_all(&frame).await.unwrap();
        let started = Instant::now();
        for (i, byte) in message.as_bytes().iter().enumerate() {
            tcp.write_all(std::slice::from_ref(byte)).await.unwrap();
            if i % args.every == 0 {
                pause(args.pause_us);
            }
        }
        let outcome = answered(&mut tcp).await;
        report(
            pid,
            &format!(
                "after a {} B WebSocket frame in 1-byte writes ({:.1} s, {outcome})",
                message.len(),
                started.elapsed().as_secs_f64()
            ),
        );
        drop(tcp);
        // 1c. The same message in 1-byte continuation frames.
        let mut tcp = websocket(addr).await;
        let started = Instant::now();
        let bytes = message.as_bytes();
        for (i, byte) in bytes.iter().enumerate() {
            let opcode = match (i, i + 1 == bytes.len()) {
                (0, _) => 0x01,
                (_, true) => 0x80,
                _ => 0x00,
            };
            if tcp.write_all(&[opcode, 0x81, 0, 0, 0, 0, *byte]).await.is_err() {
                break;
            }
            if i % args.every == 0 {
                pause(args.pause_us);
            }
        }
        let outcome = answered(&mut tcp).await;
        report(
            pid,
            &format!(
                "after it again in {} 1-byte fragments ({:.1} s, {outcome})",
                bytes.len(),
                started.elapsed().as_secs_f64()
            ),
        );
        drop(tcp);
    }

    // 2. N connections with a half-sent head, then N with a half-sent body.
    let mut slow = Vec::with_capacity(args.slow * 2);
    for _ in 0..args.slow {
        let Ok(mut tcp) = TcpStream::connect(addr).await else { break };
        tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: local").await.ok();
        slow.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    report(pid, &format!("{} connections holding a half-sent head", slow.len()));
    for _ in 0..args.slow {
        let Ok(mut tcp) = TcpStream::connect(addr).await else { break };
        tcp.write_all(head("content-length: 4000000\r\n").as_bytes()).await.ok();
        tcp.write_all(&[b'{'; 1024]).await.ok();
        slow.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    report(pid, &format!("... and {} more holding a half-sent body", args.slow));
    tokio::time::sleep(Duration::from_secs(args.hold)).await;
    let mut open = 0;
    for tcp in &mut slow {
        if !closed(tcp).await {
            open += 1;
        }
    }
    report(pid, &format!("{} s later: {open} of {} still open", args.hold, slow.len()));
    drop(slow);

    if args.server.is_none() && args.unread > 0 {
        unread(addr, pid, args.unread).await;
    }
    child.kill().ok();
    child.wait().ok();
}
