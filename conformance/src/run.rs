//! Running the suite against a server or a client, and starting a server under test.
//!
//! One run is one harness invocation: `server --url URL` or `client --command CMD`, then
//! either `--requirements REV` (exactly what a revision requires; the scored scenarios come
//! from `list --requirements REV`) or `[--spec-version V] --suite S | --scenario NAME`, plus
//! `--expected-failures F`, `--timeout MS` and `-o DIR`. The run directory is
//! `<out>/<role>-<V>` or `<out>/<role>-req-<REV>`; it receives the harness's result dirs,
//! `harness.log` (the harness's stdout and stderr), `scored-scenarios.txt` (requirements
//! runs), `wall_seconds`, `summary.json` and `summary.tsv`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::install::{InstallError, Installation, stderr_stdio};
use crate::score::{Report, ScoreOptions, score_dir};
use crate::{Role, log};

/// Why a run could not be carried out (a failing scenario is not an error).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The suite could not be started.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// A file-system or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The server URL is not a plain `http://host[:port][/path]` URL.
    #[error("unsupported server URL {0:?} (need http://host[:port]/path)")]
    Url(String),
    /// The server started with `--start` exited or never answered.
    #[error("server did not come up: {0}")]
    ServerStart(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.into();
    move |source| RunError::Io { what, source }
}

/// Which scenarios one run covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// `--requirements REV`: exactly what the revision requires; its scored list decides
    /// what counts.
    Requirements(String),
    /// `--spec-version V` (omitted when `V` is `none`) with `--scenario NAME` if given, else
    /// `--suite S`.
    Spec {
        /// Spec version, or `none` for no `--spec-version` flag.
        version: String,
        /// Suite name (`all` when `None`).
        suite: Option<String>,
        /// A single scenario instead of a suite.
        scenario: Option<String>,
    },
}

impl Selection {
    /// The revision label for results (`REV` or `V`).
    pub fn revision(&self) -> &str {
        match self {
            Selection::Requirements(r) => r,
            Selection::Spec { version, .. } => version,
        }
    }
}

/// Everything one run needs besides the installation.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Server or client mode.
    pub role: Role,
    /// The server URL or the client command.
    pub target: String,
    /// What to run.
    pub selection: Selection,
    /// A YAML baseline passed through with `--expected-failures` (affects only the harness's
    /// exit code).
    pub expected_failures: Option<PathBuf>,
    /// Per-scenario timeout in milliseconds, passed through with `--timeout`.
    pub timeout_ms: Option<u64>,
    /// The results root; the run directory is created beneath it.
    pub out: PathBuf,
    /// Count `WARNING` checks as failures.
    pub strict_warnings: bool,
    /// Do not stream the harness log to stderr (it is always written to `harness.log`).
    pub quiet: bool,
    /// Requirements runs: scored scenarios whose name starts with one of these prefixes are
    /// not scored (they still run and are reported as not scored).
    pub exclude: Vec<String>,
    /// Requirements runs: scenarios scored besides the revision's list.
    pub also_score: Vec<String>,
}

impl RunOptions {
    /// The run directory: `<out>/<role>-<rev>` or `<out>/<role>-req-<rev>`.
    pub fn run_dir(&self) -> PathBuf {
        let name = match &self.selection {
            Selection::Requirements(r) => format!("{}-req-{r}", self.role),
            Selection::Spec { version, .. } => format!("{}-{version}", self.role),
        };
        self.out.join(name)
    }

    /// The harness arguments for this run, `-o <dir>` last.
    pub fn harness_args(&self, dir: &Path) -> Vec<String> {
        let mut a: Vec<String> = match self.role {
            Role::Server => vec!["server".into(), "--url".into(), self.target.clone()],
            Role::Client => vec!["client".into(), "--command".into(), self.target.clone()],
        };
        match &self.selection {
            Selection::Requirements(r) => a.extend(["--requirements".into(), r.clone()]),
            Selection::Spec { version, suite, scenario } => {
                if version != "none" {
                    a.extend(["--spec-version".into(), version.clone()]);
                }
                match scenario {
                    Some(s) => a.extend(["--scenario".into(), s.clone()]),
                    None => a.extend([
                        "--suite".into(),
                        suite.clone().unwrap_or_else(|| "all".to_owned()),
                    ]),
                }
            }
        }
        if let Some(f) = &self.expected_failures {
            a.extend(["--expected-failures".into(), f.display().to_string()]);
        }
        if let Some(t) = self.timeout_ms {
            a.extend(["--timeout".into(), t.to_string()]);
        }
        a.extend(["-o".into(), dir.display().to_string()]);
        a
    }
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// The scored results.
    pub report: Report,
    /// The harness's exit code (informational only; `None` if killed by a signal).
    pub harness_code: Option<i32>,
    /// Wall-clock time of the harness run.
    pub wall: Duration,
}

impl RunOutcome {
    /// The report's summary lines, the role line extended with
    /// ` wall_s=<seconds> harness_rc=<code>`.
    pub fn summary_lines(&self) -> Vec<String> {
        let prefix = format!("{} ", self.report.role);
        let rc = self.harness_code.map_or_else(|| "signal".to_owned(), |c| c.to_string());
        self.report
            .summary_lines()
            .into_iter()
            .map(|l| {
                if l.starts_with(&prefix) {
                    format!("{l} wall_s={} harness_rc={rc}", self.wall.as_secs())
                } else {
                    l
                }
            })
            .collect()
    }
}

/// Runs the suite once and scores the run directory.
pub async fn run(inst: &Installation, opts: &RunOptions) -> Result<RunOutcome, RunError> {
    let dir = opts.run_dir();
    std::fs::create_dir_all(&dir).map_err(io_err(format!("create {}", dir.display())))?;
    let mut score = ScoreOptions::new(opts.role, opts.selection.revision());
    score.strict_warnings = opts.strict_warnings;
    if let Selection::Requirements(rev) = &opts.selection {
        let mut list = scored_list(inst, rev, opts.role).await?;
        list.retain(|name| !opts.exclude.iter().any(|prefix| name.starts_with(prefix.as_str())));
        for name in &opts.also_score {
            if !list.contains(name) {
                list.push(name.clone());
            }
        }
        let file = dir.join("scored-scenarios.txt");
        let text: String = list.iter().map(|n| format!("{n}\n")).collect();
        std::fs::write(&file, text).map_err(io_err(format!("write {}", file.display())))?;
        log(format_args!("{} scored {} scenarios at {rev}", list.len(), opts.role));
        score.scored = Some(list);
    }

    let args = opts.harness_args(&dir);
    log(format_args!("run: conformance {}", args.join(" ")));
    let log_path = dir.join("harness.log");
    let started = Instant::now();
    let status = run_logged(inst.command().args(&args), &log_path, opts.quiet).await?;
    let wall = started.elapsed();
    log(format_args!("harness {status} (informational only), wall {}s", wall.as_secs()));
    let wall_file = dir.join("wall_seconds");
    std::fs::write(&wall_file, format!("{}\n", wall.as_secs()))
        .map_err(io_err(format!("write {}", wall_file.display())))?;

    score.harness_log = Some(log_path);
    let report = score_dir(&dir, &score).map_err(io_err(format!("score {}", dir.display())))?;
    report.write_files(&dir).map_err(io_err(format!("write summary into {}", dir.display())))?;
    Ok(RunOutcome { dir, report, harness_code: status.code(), wall })
}

/// Runs `cmd` with stdout and stderr both appended to `log_path` and, unless `quiet`, to
/// our stderr.
async fn run_logged(
    cmd: &mut Command,
    log_path: &Path,
    quiet: bool,
) -> Result<std::process::ExitStatus, RunError> {
    let file = File::create(log_path).map_err(io_err(format!("create {}", log_path.display())))?;
    cmd.stdin(Stdio::null());
    if quiet {
        let dup = file.try_clone().map_err(io_err("duplicate log file"))?;
        let mut child = cmd
            .stdout(Stdio::from(dup))
            .stderr(Stdio::from(file))
            .spawn()
            .map_err(io_err("start the conformance CLI"))?;
        return child.wait().await.map_err(io_err("wait for the conformance CLI"));
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_err("start the conformance CLI"))?;
    let sink = Arc::new(Mutex::new(file));
    let out = child.stdout.take().map(|s| tokio::spawn(tee(s, Arc::clone(&sink))));
    let err = child.stderr.take().map(|s| tokio::spawn(tee(s, Arc::clone(&sink))));
    let status = child.wait().await.map_err(io_err("wait for the conformance CLI"))?;
    for task in [out, err].into_iter().flatten() {
        // A join error only means a copy task panicked; the log is best effort.
        let _ = task.await;
    }
    Ok(status)
}

async fn tee(mut src: impl AsyncRead + Unpin, sink: Arc<Mutex<File>>) {
    let mut buf = vec![0u8; 8192];
    let mut stderr = tokio::io::stderr();
    loop {
        let n = match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Ok(mut f) = sink.lock() {
            let _ = f.write_all(&buf[..n]);
        }
        let _ = stderr.write_all(&buf[..n]).await;
    }
}

/// The scenarios revision `rev` scores for `role`, from `list --requirements REV`.
pub async fn scored_list(
    inst: &Installation,
    rev: &str,
    role: Role,
) -> Result<Vec<String>, RunError> {
    let text = inst.output(&["list", "--requirements", rev]).await?;
    Ok(parse_scored_list(&text, role))
}

/// Extracts the scored scenario names for `role` from the output of
/// `list --requirements REV`: the `  - name` items under the line starting with
/// `Server scenarios` / `Client scenarios`, up to the next line starting with a capital
/// letter, ignoring everything from `Run and reported, but never scored:` on.
pub fn parse_scored_list(text: &str, role: Role) -> Vec<String> {
    let header = match role {
        Role::Server => "Server scenarios",
        Role::Client => "Client scenarios",
    };
    let mut on = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if line.starts_with("Run and reported, but never scored:") {
            break;
        }
        if line.starts_with(header) {
            on = true;
            continue;
        }
        if line.starts_with(|c: char| c.is_ascii_uppercase()) {
            on = false;
        }
        if let Some(name) = line.strip_prefix("  - ").filter(|_| on) {
            names.push(name.to_owned());
        }
    }
    names
}

/// A server under test started with `--start`, in its own process group.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pid: Option<u32>,
}

/// A parsed `http://` URL: the `host:port` to connect to, the `Host` header and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    /// `host:port` for the TCP connection.
    pub addr: String,
    /// The authority as written in the URL (for the `Host` header).
    pub authority: String,
    /// Path and query, at least `/`.
    pub path: String,
}

impl HttpTarget {
    /// Parses `http://host[:port][/path]` (`https` and user info are not supported).
    pub fn parse(url: &str) -> Result<Self, RunError> {
        let bad = || RunError::Url(url.to_owned());
        let rest = url.strip_prefix("http://").ok_or_else(bad)?;
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = path.split('#').next().unwrap_or("/");
        let path = if path.starts_with('/') { path.to_owned() } else { format!("/{path}") };
        if authority.is_empty() || authority.contains('@') {
            return Err(bad());
        }
        let has_port = match authority.rfind(']') {
            Some(close) => authority[close..].contains(':'),
            None => authority.contains(':'),
        };
        let addr = if has_port { authority.to_owned() } else { format!("{authority}:80") };
        Ok(HttpTarget { addr, authority: authority.to_owned(), path })
    }

    /// Whether something answers HTTP at the URL (any status counts).
    pub async fn answers(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.probe()).await.unwrap_or(false)
    }

    async fn probe(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(&self.addr).await else { return false };
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close\r\n\r\n",
            self.path, self.authority
        );
        if s.write_all(req.as_bytes()).await.is_err() {
            return false;
        }
        let mut head = [0u8; 5];
        s.read_exact(&mut head).await.is_ok() && &head == b"HTTP/"
    }
}

impl ServerProcess {
    /// Starts `bash -c CMD` in its own process group with output to `log_path`, and waits
    /// (up to 60 s) until `url` answers HTTP.
    pub async fn start(cmd: &str, url: &str, log_path: &Path) -> Result<Self, RunError> {
        let target = HttpTarget::parse(url)?;
        log(format_args!("starting server: {cmd}  (log: {})", log_path.display()));
        let file =
            File::create(log_path).map_err(io_err(format!("create {}", log_path.display())))?;
        let dup = file.try_clone().map_err(io_err("duplicate server log"))?;
        let child = Command::new("bash")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(dup))
            .stderr(Stdio::from(file))
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(io_err("start the server command"))?;
        let pid = child.id();
        let mut server = ServerProcess { child, pid };
        for _ in 0..120 {
            if target.answers(Duration::from_secs(2)).await {
                log(format_args!("server is up (pid {})", pid.unwrap_or(0)));
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                let tail = std::fs::read_to_string(log_path).unwrap_or_default();
                eprint!("{tail}");
                return Err(RunError::ServerStart(format!(
                    "server exited during startup ({status})"
                )));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        server.stop().await;
        Err(RunError::ServerStart(format!("no HTTP answer at {url} within 60s")))
    }

    /// Stops the server's whole process group: SIGTERM, up to 5 s grace, then SIGKILL.
    pub async fn stop(&mut self) {
        let Some(pid) = self.pid.take() else { return };
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        log(format_args!("stopping server (pgid {pid})"));
        signal_group("TERM", pid).await;
        for _ in 0..20 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        signal_group("KILL", pid).await;
        let _ = self.child.kill().await;
    }
}

/// Sends `SIG<sig>` to process group `pgid` with the `kill` utility (no libc, no unsafe).
async fn signal_group(sig: &str, pgid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), "--".to_owned(), format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// Runs the CLI with arbitrary arguments, output passed through (stdout to stdout).
pub async fn passthrough(inst: &Installation, args: &[String]) -> Result<Option<i32>, RunError> {
    let status = inst
        .command()
        .args(args)
        .stderr(stderr_stdio()?)
        .status()
        .await
        .map_err(io_err("run the conformance CLI"))?;
    Ok(status.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scored_list_parsing() {
        let text = "Requirements 2025-11-25\n\
                    Server scenarios (2):\n  - ping\n  - tools-list\n\
                    Client scenarios (1):\n  - initialize\n\
                    Run and reported, but never scored:\nServer scenarios:\n  - extra\n";
        assert_eq!(parse_scored_list(text, Role::Server), ["ping", "tools-list"]);
        assert_eq!(parse_scored_list(text, Role::Client), ["initialize"]);
    }

    #[test]
    fn url_parsing() {
        let t = HttpTarget::parse("http://127.0.0.1:9/mcp").unwrap();
        assert_eq!((t.addr.as_str(), t.path.as_str()), ("127.0.0.1:9", "/mcp"));
        let t = HttpTarget::parse("http://localhost").unwrap();
        assert_eq!((t.addr.as_str(), t.path.as_str()), ("localhost:80", "/"));
        let t = HttpTarget::parse("http://[::1]:8000/mcp?x=1").unwrap();
        assert_eq!((t.addr.as_str(), t.path.as_str()), ("[::1]:8000", "/mcp?x=1"));
        assert!(HttpTarget::parse("https://x/mcp").is_err());
    }

    #[test]
    fn harness_args() {
        let o = RunOptions {
            role: Role::Server,
            target: "http://h/mcp".into(),
            selection: Selection::Spec {
                version: "2025-11-25".into(),
                suite: None,
                scenario: Some("ping".into()),
            },
            expected_failures: None,
            timeout_ms: Some(5000),
            out: PathBuf::from("/o"),
            strict_warnings: false,
            quiet: true,
            exclude: Vec::new(),
            also_score: Vec::new(),
        };
        assert_eq!(o.run_dir(), PathBuf::from("/o/server-2025-11-25"));
        assert_eq!(
            o.harness_args(&o.run_dir()).join(" "),
            "server --url http://h/mcp --spec-version 2025-11-25 --scenario ping --timeout 5000 \
             -o /o/server-2025-11-25"
        );
    }
}
