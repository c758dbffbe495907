//! The HTTP example server out of file descriptors (run under `prlimit`): it backs off, says
//! so once for the whole burst instead of an ERROR per retry, and serves again once
//! descriptors free up.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

const BOUND: Duration = Duration::from_secs(20);

#[tokio::test]
async fn out_of_file_descriptors_the_server_backs_off_logs_once_and_recovers() {
    if std::process::Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("skipped: no prlimit on this machine");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new("prlimit")
        .arg("--nofile=40:40")
        .arg(env!("CARGO_BIN_EXE_http-server"))
        .env("PORT", port.to_string())
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(BOUND, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening on") {
                return;
            }
        }
        panic!("the server ended before listening");
    })
    .await
    .unwrap();
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let _ = lines_tx.send(line);
        }
    });
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // More connections than the server has descriptors, held for a while.
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(held);
    // Served again once they are gone.
    let request = "GET /mcp HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n";
    tokio::time::timeout(BOUND, async {
        loop {
            if let Ok(mut tcp) = TcpStream::connect(addr).await {
                tcp.write_all(request.as_bytes()).await.ok();
                let mut answer = Vec::new();
                tcp.read_to_end(&mut answer).await.ok();
                if answer.starts_with(b"HTTP/1.1 405") {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server did not serve again");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut log = Vec::new();
    while let Ok(line) = lines.try_recv() {
        log.push(line);
    }
    let failed = log.iter().filter(|l| l.contains("accepting connections failed")).count();
    assert_eq!(failed, 1, "one line for the burst:\n{}", log.join("\n"));
    assert!(log.iter().any(|l| l.contains("accepting connections again")), "{}", log.join("\n"));
    assert!(!log.iter().any(|l| l.contains("ERROR")), "{}", log.join("\n"));
    child.kill().await.ok();
}
