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
    assert!(stdout.contains("(protocol 2025-11-25)"), "{stdout}");
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
