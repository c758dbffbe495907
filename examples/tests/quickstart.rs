//! Runs the quickstart binary for real: a client process spawning a server process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn quickstart_talks_to_a_real_child_process() {
    let out = Command::new(env!("CARGO_BIN_EXE_quickstart")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("connected to weather-example"), "{stdout}");
    // `Negotiation::Auto` over stdio: the server answers `server/discover`, so the stateless era.
    assert!(stdout.contains("(protocol 2026-07-28)"), "{stdout}");
    assert!(stdout.contains("tool forecast:"), "{stdout}");
    assert!(stdout.contains("call forecast -> ok: Lisbon:"), "{stdout}");
    assert!(stdout.contains("21.5 °C = 70.7 °F"), "{stdout}");
    assert!(stdout.contains("call forecast -> error:"), "{stdout}");
    assert!(stdout.trim_end().ends_with("closed"), "{stdout}");
}

#[test]
fn weather_server_answers_a_raw_initialize_over_stdio() {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_weather-server"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    drop(stdin);
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    assert!(child.wait().unwrap().success());
}

#[test]
fn http_server_answers_initialize_over_a_real_socket() {
    use std::io::{BufRead, BufReader, Read, Write};
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_http-server"))
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the "listening" line.
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.to_ascii_lowercase().contains("mcp-session-id:"), "{response}");
    assert!(response.contains("\"protocolVersion\":\"2025-11-25\""), "{response}");
}

#[test]
fn the_oauth_example_reaches_a_protected_server() {
    let out = Command::new(env!("CARGO_BIN_EXE_oauth")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("connected to weather-example (authorized)"), "{stdout}");
    assert!(stdout.contains("tool forecast"), "{stdout}");
    assert!(stdout.contains("call forecast -> "), "{stdout}");
    assert!(stdout.trim_end().ends_with("closed"), "{stdout}");
}
