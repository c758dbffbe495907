#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Runs the built `mcpl-conformance manifest-digest` on the MCPL digest conformance vectors.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcpl-conformance");

fn vectors() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/mcpl-core/tests/fixtures/mcpl-manifest-digest-vectors.json"
    );
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["vectors"].as_array().unwrap().clone()
}

fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .arg("manifest-digest")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap().trim_end().to_owned()
}

#[test]
fn every_vector_through_stdin() {
    let list = vectors();
    assert_eq!(list.len(), 25);
    for v in &list {
        let name = v["name"].as_str().unwrap();
        let input = serde_json::to_vec(&v["input"]).unwrap();
        let out = run_stdin(&["-"], &input);
        if let Some(code) = v["expectError"].as_str() {
            assert_eq!(out.status.code(), Some(1), "{name}");
            assert_eq!(stdout(&out), format!("error: {code}"), "{name}");
        } else {
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(stdout(&out), v["digest"].as_str().unwrap(), "{name}");
            let canonical = run_stdin(&["--canonical"], &input);
            assert_eq!(stdout(&canonical), v["canonicalJson"].as_str().unwrap(), "{name}");
        }
    }
}

#[test]
fn a_file_argument_and_errors() {
    let dir = std::env::temp_dir().join(format!("mcpl-digest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("manifest.json");
    let example = vectors().into_iter().find(|v| v["name"] == "rfc-003-worked-example").unwrap();
    // Pretty-printed on purpose: whitespace and member order must not matter.
    std::fs::write(&file, serde_json::to_string_pretty(&example["input"]).unwrap()).unwrap();
    let out = Command::new(BIN).arg("manifest-digest").arg(&file).output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout(&out), "sha256:_YZTS0h1tqTAMZI6eElCszSQE2WNx3xhAhmgUvNI9H4");

    let out = run_stdin(&[], b"[1, 2]");
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(1), "error: manifest_not_object"));
    let out = run_stdin(&[], b"{\"version\": ");
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(1), "error: invalid_json"));
    let out = run_stdin(&[], b"{}");
    assert_eq!(stdout(&out), "sha256:RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o");

    let missing =
        Command::new(BIN).args(["manifest-digest", "/nonexistent/m.json"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let bad = Command::new(BIN).args(["manifest-digest", "--frob"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
