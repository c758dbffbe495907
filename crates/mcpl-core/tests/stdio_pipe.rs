//! Stdin and stdout as pipes, read and written through the runtime's IO driver
//! (`transport::stdio`). The test runs itself as a child process (no libtest harness, so that
//! its stdout carries only what the child writes), its stdin and stdout pipes of this process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mcpl_core::transport::stdio::{StdinReader, StdoutWriter};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const ROLE: &str = "MCPL_STDIO_PIPE_ROLE";
const BOUND: Duration = Duration::from_secs(20);
/// Larger than a pipe's buffer (64 KiB on Linux), so the child's write must wait for room.
const BIG: usize = 1 << 20;

fn main() {
    if std::env::var(ROLE).is_ok() {
        return child();
    }
    #[cfg(unix)]
    {
        echoes_lines_through_pipes_and_exits_with_stdin_still_open();
        println!("stdio_pipe: ok");
    }
}

/// Echoes one line, then a line of `BIG` bytes, then returns from `main` (dropping its
/// runtime) without waiting for stdin to close. Exits 3 when stdin or stdout was not taken as
/// a pipe.
fn child() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let code = rt.block_on(async {
        let input = StdinReader::new();
        let mut output = StdoutWriter::new();
        if !input.is_pipe() || !output.is_pipe() {
            return 3;
        }
        let mut lines = tokio::io::BufReader::new(input).lines();
        let line = lines.next_line().await.unwrap().unwrap();
        output.write_all(format!("echo {line}\n").as_bytes()).await.unwrap();
        let mut big = vec![b'x'; BIG];
        big.push(b'\n');
        output.write_all(&big).await.unwrap();
        output.flush().await.unwrap();
        0
    });
    // Dropping a runtime waits for its blocking threads: were stdin read on tokio's blocking
    // pool, this would hang until the parent closed stdin.
    drop(rt);
    std::process::exit(code);
}

#[cfg(unix)]
fn echoes_lines_through_pipes_and_exits_with_stdin_still_open() {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .env(ROLE, "child")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin.write_all(b"hello\n").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "echo hello\n");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.len(), BIG + 1, "the whole big line arrives");
    assert!(line[..BIG].bytes().all(|b| b == b'x'));
    // Stdin stays open (held in `stdin`): the child must exit anyway.
    let status = wait_bounded(&mut child);
    assert_eq!(status.code(), Some(0), "the child took stdin and stdout as pipes and exited");
    drop(stdin);
}

#[cfg(unix)]
fn wait_bounded(child: &mut std::process::Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > BOUND {
            child.kill().ok();
            panic!("the child did not exit with its stdin open");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
