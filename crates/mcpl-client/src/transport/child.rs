//! A server run as a child process, spoken to over its stdin and stdout.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::jsonrpc::Message;
use mcpl_core::transport::lines::{LineReceiver, LineSender};
use mcpl_core::transport::{
    DEFAULT_MAX_MESSAGE_SIZE, Transport, TransportReceiver, TransportSender,
};
use mcpl_core::{Error, Result};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// How long a child may take to exit after its stdin closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A server to spawn as a child process.
///
/// The child's stderr is forwarded line by line to `tracing` (target `mcpl_client::child`, level
/// INFO). The child is killed when the transport is closed or dropped. When the child exits on
/// its own, the receiver ends: cleanly for exit status 0, with a transport error naming the
/// status otherwise.
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
#[derive(Debug, Clone)]
#[must_use]
pub struct ChildProcess {
    program: OsString,
    args: Vec<OsString>,
    env: BTreeMap<OsString, OsString>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    max_message_size: usize,
}

impl ChildProcess {
    /// A child running `program` (looked up on `PATH`).
    pub fn new(program: impl Into<OsString>) -> Self {
        ChildProcess {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            env_clear: false,
            cwd: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Starts the child with only the variables set with [`env`](Self::env). Default: the
    /// child inherits this process's environment.
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// Sets the child's working directory. Default: this process's.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The largest message accepted from the child. Default: 4 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if self.env_clear {
            cmd.env_clear();
        }
        cmd.envs(&self.env);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd
    }
}

impl Transport for ChildProcess {
    type Sender = ChildSender;
    type Receiver = ChildReceiver;

    /// The command line: `stdio:` and a JSON array of the program and its arguments, plus
    /// `@` and the working directory when one is set (`stdio:["node","server.js"]@/srv`).
    /// Environment variables are left out: they often carry secrets, and who the client acts
    /// for is the cache principal's business, not the endpoint's.
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
        Some(identity)
    }

    async fn start(self) -> Result<(ChildSender, ChildReceiver)> {
        let program = self.program.to_string_lossy().into_owned();
        let mut child = self
            .command()
            .spawn()
            .map_err(|e| Error::transport(format!("could not spawn {program:?}"), e))?;
        let missing =
            || Error::Transport { context: "child stdio was not piped".into(), source: None };
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        if let Some(stderr) = child.stderr.take() {
            let name = program.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "mcpl_client::child", program = %name, "{line}");
                }
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
#[derive(Debug)]
pub struct ChildSender {
    lines: LineSender<ChildStdin>,
    child: Arc<Mutex<Child>>,
}

impl TransportSender for ChildSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.lines.send(message).await
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

fn exited(program: &str, status: ExitStatus) -> Error {
    Error::Transport {
        context: format!("server process {program:?} exited with {status}"),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_is_the_command_line_and_working_dir_not_the_environment() {
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
        assert_eq!(a.clone().env("TOKEN", "secret").endpoint(), a.endpoint());
    }
}
