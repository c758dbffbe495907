//! A server run as a child process, spoken to over its stdin and stdout.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::jsonrpc::{Message, RequestId};
use mcpl_core::log_safe::LogSafe;
use mcpl_core::transport::lines::{LineReceiver, LineSender};
use mcpl_core::transport::{
    DEFAULT_MAX_MESSAGE_SIZE, Transport, TransportReceiver, TransportSender, WriteNow,
};
use mcpl_core::{Error, Result};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// How long a child may take to exit after its stdin closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A server to spawn as a child process.
///
/// **Environment.** The child does not inherit this process's environment (which may hold API
/// keys and cloud credentials a server has no business seeing). It gets the variables named in
/// [`DEFAULT_INHERITED_ENV`] that are set here (on Unix `HOME`, `LOGNAME`, `PATH`, `SHELL`,
/// `TERM`, `USER`, `LANG`, `LC_ALL`, `TMPDIR`; on Windows the usual system variables), plus
/// those set with [`env`](Self::env). [`inherit_env`](Self::inherit_env) passes everything on;
/// [`env_clear`](Self::env_clear) passes nothing but what `env` sets.
///
/// The child's stderr is forwarded line by line to `tracing` (target `mcpl_client::child`, level
/// INFO), each line cut at [`max_stderr_line`](Self::max_stderr_line) bytes (default
/// [`MAX_STDERR_LINE`]) and its control characters escaped. The child is killed when the
/// transport is closed or dropped. When the child exits on its own, the receiver ends: cleanly
/// for exit status 0, with a transport error naming the status otherwise.
///
/// Its `Debug` output shows the names of the variables set, never their values.
///
/// # Examples
///
/// ```no_run
/// use mcpl_client::transport::ChildProcess;
///
/// let server = ChildProcess::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .env("LOG_LEVEL", "debug")
///     .current_dir("/tmp");
/// # drop(server);
/// ```
#[derive(Clone)]
#[must_use]
pub struct ChildProcess {
    program: OsString,
    args: Vec<OsString>,
    env: BTreeMap<OsString, OsString>,
    base: EnvBase,
    cwd: Option<PathBuf>,
    max_message_size: usize,
    max_stderr_line: usize,
}

/// Which of this process's variables a child starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EnvBase {
    /// [`DEFAULT_INHERITED_ENV`].
    Minimal,
    /// Everything.
    Inherit,
    /// Nothing.
    Empty,
}

/// The variables a [`ChildProcess`] inherits by default (those that are set): what a program
/// needs to find its tools, home and locale, and nothing that usually holds a secret.
#[cfg(not(windows))]
pub const DEFAULT_INHERITED_ENV: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR"];

/// The variables a [`ChildProcess`] inherits by default (those that are set): what a program
/// needs to find its tools, home and locale, and nothing that usually holds a secret.
#[cfg(windows)]
pub const DEFAULT_INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
];

/// The longest stderr line of a child forwarded to `tracing`, in bytes; the rest of a longer
/// line is dropped (and counted in the log record), so a child writing without newlines cannot
/// grow this process.
pub const MAX_STDERR_LINE: usize = 8 * 1024;

impl std::fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Variable values often are secrets: names only.
        let env: Vec<_> = self.env.keys().collect();
        f.debug_struct("ChildProcess")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("base_env", &self.base)
            .field("cwd", &self.cwd)
            .field("max_message_size", &self.max_message_size)
            .field("max_stderr_line", &self.max_stderr_line)
            .finish()
    }
}

impl ChildProcess {
    /// A child running `program` (looked up on `PATH`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::ErrorKind;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = Client::new("my-app", "1.0.0");
    /// // The program is spawned when the client connects; one that cannot be is `Connect`,
    /// // with the operating system's error as its source.
    /// let err = client.connect(ChildProcess::new("/nonexistent/mcp-server")).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Connect);
    /// assert!(err.to_string().contains("/nonexistent/mcp-server"));
    /// assert!(std::error::Error::source(&err).is_some());
    /// assert!(!client.is_connected());
    /// # }
    /// ```
    pub fn new(program: impl Into<OsString>) -> Self {
        ChildProcess {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            base: EnvBase::Minimal,
            cwd: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_stderr_line: MAX_STDERR_LINE,
        }
    }

    /// Adds an argument.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::Transport;
    ///
    /// let server = ChildProcess::new("node").arg("server.js").arg("--stdio");
    /// // The endpoint identity (what the response cache partitions by) is the command line.
    /// assert_eq!(server.endpoint().as_deref(), Some(r#"stdio:["node","server.js","--stdio"]"#));
    /// ```
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::Transport;
    ///
    /// let server = ChildProcess::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]);
    /// assert_eq!(
    ///     server.endpoint().as_deref(),
    ///     Some(r#"stdio:["npx","-y","@modelcontextprotocol/server-everything"]"#)
    /// );
    /// ```
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::jsonrpc::Message;
    /// use mcpl_core::transport::{Transport, TransportReceiver};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A child that writes the message it finds in its environment.
    /// let child = ChildProcess::new("sh")
    ///     .args(["-c", r#"printf '%s\n' "$MESSAGE""#])
    ///     .env("MESSAGE", r#"{"jsonrpc":"2.0","method":"hello"}"#);
    /// // Variables often carry secrets: the endpoint identity holds only their digest.
    /// let endpoint = child.endpoint().unwrap_or_default();
    /// assert!(endpoint.starts_with(r#"stdio:["sh","-c","printf '%s\\n' \"$MESSAGE\""]#env=sha256:"#));
    /// assert!(!endpoint.contains("hello"));
    ///
    /// let (_tx, mut rx) = child.start().await?;
    /// let Some(Message::Notification(hello)) = rx.recv().await? else { panic!("no message") };
    /// assert_eq!(hello.method, "hello");
    /// # Ok(()) }
    /// ```
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Starts the child with only the variables set with [`env`](Self::env), not even those
    /// of [`DEFAULT_INHERITED_ENV`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::jsonrpc::Message;
    /// use mcpl_core::transport::{Transport, TransportReceiver};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A child that reports whether it sees `HOME` and `MODE`.
    /// let script = r#"printf '{"jsonrpc":"2.0","method":"env","params":{"home":"%s","mode":"%s"}}\n' "${HOME:-unset}" "$MODE""#;
    /// let child = ChildProcess::new("/bin/sh").args(["-c", script]).env_clear().env("MODE", "sandbox");
    ///
    /// let (_tx, mut rx) = child.start().await?;
    /// let Some(Message::Notification(env)) = rx.recv().await? else { panic!("no message") };
    /// let params = env.params.unwrap_or_default();
    /// assert_eq!(params["home"], "unset");
    /// assert_eq!(params["mode"], "sandbox");
    /// # Ok(()) }
    /// ```
    pub fn env_clear(mut self) -> Self {
        self.base = EnvBase::Empty;
        self
    }

    /// Passes this process's whole environment on to the child (plus what [`env`](Self::env)
    /// sets). Only for servers trusted with every secret this process holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::{ChildProcess, DEFAULT_INHERITED_ENV};
    /// use mcpl_core::jsonrpc::Message;
    /// use mcpl_core::transport::{Transport, TransportReceiver};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A variable of this process that is not passed on by default.
    /// let simple = |k: &String| k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    /// let own = std::env::vars().map(|(k, _)| k).find(|k| {
    ///     simple(k) && !DEFAULT_INHERITED_ENV.contains(&k.as_str())
    /// });
    /// # let Some(name) = own else { return Ok(()) };
    /// // A child that says whether it sees it.
    /// let script = r#"if printenv "$1" >/dev/null; then s=yes; else s=no; fi
    /// printf '{"jsonrpc":"2.0","method":"env","params":{"seen":"%s"}}\n' "$s""#;
    /// let seen = |child: ChildProcess| async move {
    ///     let (_tx, mut rx) = child.start().await?;
    ///     let Some(Message::Notification(n)) = rx.recv().await? else { panic!("no message") };
    ///     Ok::<_, mcpl_core::Error>(n.params.unwrap_or_default()["seen"].clone())
    /// };
    /// let child = ChildProcess::new("/bin/sh").args(["-c", script, "sh", &name]);
    /// assert_eq!(seen(child.clone()).await?, "no");
    /// assert_eq!(seen(child.inherit_env()).await?, "yes");
    /// # Ok(()) }
    /// ```
    pub fn inherit_env(mut self) -> Self {
        self.base = EnvBase::Inherit;
        self
    }

    /// Sets the child's working directory. Default: this process's.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::Transport;
    ///
    /// let server = ChildProcess::new("node").arg("server.js").current_dir("/srv/mcp");
    /// // The same command in another directory is another server.
    /// assert_eq!(server.endpoint().as_deref(), Some(r#"stdio:["node","server.js"]@/srv/mcp"#));
    /// ```
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The largest message accepted from the child. Default: 4 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    /// use mcpl_core::ErrorKind;
    /// use mcpl_core::jsonrpc::{Message, Notification};
    /// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // `cat` sends every line back: a stand-in for a server with a very long answer.
    /// let (mut tx, mut rx) = ChildProcess::new("cat").max_message_size(1024).start().await?;
    /// let long = Notification::new("long", Some(json!({"text": "x".repeat(2000)})));
    /// tx.send(Message::Notification(long)).await?;
    /// let short = Notification::new("short", None);
    /// tx.send(Message::Notification(short)).await?;
    ///
    /// // The long line is refused, and reading goes on with the next one.
    /// assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::MessageTooLarge);
    /// assert_eq!(rx.recv().await?.and_then(|m| m.method().map(str::to_owned)).as_deref(), Some("short"));
    /// tx.close().await?;
    /// # Ok(()) }
    /// ```
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// The longest stderr line forwarded to `tracing`, in bytes (at least 1). Default:
    /// [`MAX_STDERR_LINE`]. The rest of a longer line is read and dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::ChildProcess;
    ///
    /// // Keep stderr lines short in the logs of a chatty server.
    /// let server = ChildProcess::new("node").arg("server.js").max_stderr_line(512);
    /// # drop(server);
    /// ```
    pub fn max_stderr_line(mut self, bytes: usize) -> Self {
        self.max_stderr_line = bytes.max(1);
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match self.base {
            EnvBase::Inherit => {}
            EnvBase::Empty => {
                cmd.env_clear();
            }
            EnvBase::Minimal => {
                cmd.env_clear();
                for name in DEFAULT_INHERITED_ENV {
                    if let Some(value) = std::env::var_os(name) {
                        cmd.env(name, value);
                    }
                }
            }
        }
        cmd.envs(&self.env);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd
    }
}

impl ChildProcess {
    /// The hex SHA-256 of the environment this transport sets, if it sets any (variables, or
    /// a base other than the default minimal one): the base (0 minimal, 1 empty, 2 inherited),
    /// then each variable (in key order) as length-prefixed key and value bytes.
    fn environment_digest(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        if self.env.is_empty() && self.base == EnvBase::Minimal {
            return None;
        }
        let base: u8 = match self.base {
            EnvBase::Minimal => 0,
            EnvBase::Empty => 1,
            EnvBase::Inherit => 2,
        };
        let mut hash = Sha256::new();
        hash.update([base]);
        for (key, value) in &self.env {
            for part in [key, value] {
                let bytes = part.as_encoded_bytes();
                hash.update((bytes.len() as u64).to_be_bytes());
                hash.update(bytes);
            }
        }
        Some(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl Transport for ChildProcess {
    type Sender = ChildSender;
    type Receiver = ChildReceiver;

    /// The command line: `stdio:` and a JSON array of the program and its arguments, plus
    /// `@` and the working directory when one is set (`stdio:["node","server.js"]@/srv`), plus
    /// `#env=` and a SHA-256 digest of the environment this transport sets (the variables
    /// given with [`env`](ChildProcess::env), and [`env_clear`](ChildProcess::env_clear) or
    /// [`inherit_env`](ChildProcess::inherit_env)) when it sets any: two children differing
    /// only in a variable are different servers to the response cache. The variables are
    /// hashed, never written out (they often carry secrets). The values the child takes from
    /// this process's environment are not part of it.
    fn endpoint(&self) -> Option<String> {
        let words: Vec<String> = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        let mut identity = format!("stdio:{}", serde_json::Value::from(words));
        if let Some(dir) = &self.cwd {
            identity.push('@');
            identity.push_str(&dir.to_string_lossy());
        }
        if let Some(digest) = self.environment_digest() {
            identity.push_str("#env=sha256:");
            identity.push_str(&digest);
        }
        Some(identity)
    }

    async fn start(self) -> Result<(ChildSender, ChildReceiver)> {
        let program = self.program.to_string_lossy().into_owned();
        let mut child = self.command().spawn().map_err(|e| Error::Connect {
            endpoint: format!("the server process {program:?}"),
            source: Box::new(e),
        })?;
        let missing =
            || Error::Transport { context: "child stdio was not piped".into(), source: None };
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        if let Some(stderr) = child.stderr.take() {
            let (name, max_line) = (program.clone(), self.max_stderr_line);
            tokio::spawn(async move {
                forward_stderr(BufReader::new(stderr), max_line, |line, dropped| {
                    let line = String::from_utf8_lossy(line);
                    let (program, line) = (LogSafe(&name), LogSafe(&line));
                    if dropped == 0 {
                        tracing::info!(target: "mcpl_client::child", %program, "{line}");
                    } else {
                        tracing::info!(target: "mcpl_client::child", %program, truncated_bytes = dropped, "{line}");
                    }
                })
                .await;
            });
        }
        tracing::debug!(program = %program, pid = child.id(), "spawned server process");
        let child = Arc::new(Mutex::new(child));
        Ok((
            ChildSender { lines: LineSender::new(stdin), child: child.clone() },
            ChildReceiver {
                lines: LineReceiver::new(BufReader::new(stdout), self.max_message_size),
                child,
                program,
            },
        ))
    }
}

/// The sending half of a [`ChildProcess`]: writes to the child's stdin.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::ChildProcess;
/// use mcpl_core::jsonrpc::{Message, Notification};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// // `cat` echoes what it reads: what the sender writes comes back to the receiver.
/// let (mut tx, mut rx) = ChildProcess::new("cat").start().await?;
/// let ping = Message::Notification(Notification::new("notifications/ping", None));
/// tx.send(ping.clone()).await?;
/// assert_eq!(rx.recv().await?, Some(ping));
/// // Closing stdin lets the child exit (or kills it after a grace period).
/// tx.close().await?;
/// assert_eq!(rx.recv().await?, None);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ChildSender {
    lines: LineSender<ChildStdin>,
    child: Arc<Mutex<Child>>,
}

impl TransportSender for ChildSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.lines.send(message).await
    }

    fn write_now(&mut self, message: &Message, related: Option<&RequestId>) -> WriteNow {
        self.lines.write_now(message, related)
    }

    async fn finish(&mut self) -> Result<()> {
        self.lines.finish().await
    }

    /// Closes the child's stdin, gives it a moment to exit, then kills it.
    async fn close(self) -> Result<()> {
        let _ = self.lines.close().await;
        let mut child = self.child.lock().await;
        match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
            Ok(Ok(status)) => {
                tracing::debug!(%status, "server process exited");
                Ok(())
            }
            Ok(Err(e)) => Err(e.into()),
            Err(_) => {
                tracing::debug!("server process did not exit; killing it");
                child.kill().await.map_err(Error::from)
            }
        }
    }
}

/// The receiving half of a [`ChildProcess`]: reads the child's stdout.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::ChildProcess;
/// use mcpl_core::ErrorKind;
/// use mcpl_core::transport::{Transport, TransportReceiver};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// // A child that fails: its end is reported with its exit status.
/// let (_tx, mut rx) = ChildProcess::new("sh").args(["-c", "exit 3"]).start().await?;
/// let err = rx.recv().await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Transport);
/// assert!(err.to_string().contains("exit status: 3"));
///
/// // A child that exits with status 0 ends the receiver cleanly.
/// let (_tx, mut rx) = ChildProcess::new("true").start().await?;
/// assert_eq!(rx.recv().await?, None);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ChildReceiver {
    lines: LineReceiver<BufReader<ChildStdout>>,
    child: Arc<Mutex<Child>>,
    program: String,
}

impl TransportReceiver for ChildReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        match self.lines.recv().await? {
            Some(message) => Ok(Some(message)),
            None => {
                // Stdout closed: report how the child ended.
                let status = {
                    let mut child = self.child.lock().await;
                    tokio::time::timeout(EXIT_GRACE, child.wait()).await
                };
                match status {
                    Ok(Ok(status)) if status.success() => Ok(None),
                    Ok(Ok(status)) => Err(exited(&self.program, status)),
                    Ok(Err(e)) => Err(e.into()),
                    Err(_) => Ok(None),
                }
            }
        }
    }
}

/// Reads `reader` to its end, handing each line (without its newline) to `emit` with the
/// number of bytes dropped from it: a line longer than `max` is cut there, and the rest of it
/// is read and dropped without being kept.
async fn forward_stderr<R: AsyncBufRead + Unpin>(
    mut reader: R,
    max: usize,
    mut emit: impl FnMut(&[u8], usize),
) {
    let mut line: Vec<u8> = Vec::new();
    let mut dropped = 0usize;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let (part, newline) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (&chunk[..at], true),
            None => (chunk, false),
        };
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        dropped += part.len().saturating_sub(room);
        let used = part.len() + usize::from(newline);
        reader.consume(used);
        if newline {
            emit(&line, dropped);
            line.clear();
            dropped = 0;
        }
    }
    if !line.is_empty() || dropped > 0 {
        emit(&line, dropped);
    }
}

fn exited(program: &str, status: ExitStatus) -> Error {
    Error::Transport {
        context: format!("server process {program:?} exited with {status}"),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_lines_are_capped_and_a_flood_is_never_kept() {
        // 10 MiB without a newline, then two short lines; read through a small buffer.
        let mut input = vec![b'x'; 10 << 20];
        input.extend_from_slice(b"\nok\nlast");
        let reader = BufReader::with_capacity(4096, &input[..]);
        let mut seen = Vec::new();
        forward_stderr(reader, 100, |line, dropped| seen.push((line.to_vec(), dropped))).await;
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (vec![b'x'; 100], (10 << 20) - 100));
        assert_eq!(seen[1], (b"ok".to_vec(), 0));
        assert_eq!(seen[2], (b"last".to_vec(), 0));
    }

    #[test]
    fn debug_shows_variable_names_not_values() {
        let child = ChildProcess::new("srv").env("API_KEY", "sk-very-secret");
        let shown = format!("{child:?}");
        assert!(shown.contains("API_KEY") && !shown.contains("sk-very-secret"), "{shown}");
    }

    #[tokio::test]
    async fn the_default_environment_is_minimal() {
        let script = "env | cut -d= -f1";
        let cmd = ChildProcess::new("/bin/sh").args(["-c", script]).env("EXTRA", "1").command();
        let out = {
            let mut cmd = cmd;
            cmd.stdin(Stdio::null());
            cmd.output().await.unwrap()
        };
        let names: Vec<String> =
            String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        for name in &names {
            // The shell adds a few of its own.
            let shells = ["PWD", "SHLVL", "_", "OLDPWD"];
            assert!(
                DEFAULT_INHERITED_ENV.contains(&name.as_str())
                    || shells.contains(&name.as_str())
                    || name == "EXTRA",
                "{name} leaked into the child: {names:?}"
            );
        }
        assert!(names.contains(&"EXTRA".to_owned()));
        if std::env::var_os("PATH").is_some() {
            assert!(names.contains(&"PATH".to_owned()));
        }
    }

    #[test]
    fn endpoint_is_the_command_line_working_dir_and_hashed_environment() {
        let a = ChildProcess::new("node").args(["server.js", "--port", "1"]);
        assert_eq!(a.endpoint().as_deref(), Some(r#"stdio:["node","server.js","--port","1"]"#));
        // Arguments cannot run together: ["a b"] is not ["a", "b"].
        let joined = ChildProcess::new("node").arg("server.js --port").arg("1");
        assert_ne!(joined.endpoint(), a.endpoint());
        let elsewhere = a.clone().current_dir("/srv");
        assert_eq!(
            elsewhere.endpoint().as_deref(),
            Some(r#"stdio:["node","server.js","--port","1"]@/srv"#)
        );
        // The environment it sets is part of it, hashed.
        let with_token = |token: &str| a.clone().env("TOKEN", token).endpoint().unwrap();
        assert_ne!(with_token("secret"), a.endpoint().unwrap());
        assert_ne!(with_token("secret"), with_token("other"));
        assert_eq!(with_token("secret"), with_token("secret"));
        assert!(
            with_token("secret")
                .starts_with(r#"stdio:["node","server.js","--port","1"]#env=sha256:"#)
        );
        assert!(
            !with_token("secret").contains("secret") && !with_token("secret").contains("TOKEN")
        );
        assert_eq!(with_token("secret").len(), a.endpoint().unwrap().len() + 12 + 64);
        // Keys and values cannot run together, and a cleared environment counts.
        let ab = a.clone().env("A", "BC").endpoint();
        assert_ne!(ab, a.clone().env("AB", "C").endpoint());
        assert_ne!(a.clone().env_clear().endpoint(), a.endpoint());
        assert_ne!(a.clone().inherit_env().endpoint(), a.endpoint());
        assert_ne!(a.clone().inherit_env().endpoint(), a.clone().env_clear().endpoint());
    }
}
