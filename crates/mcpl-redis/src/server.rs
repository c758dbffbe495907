//! [`RedisServer`]: a private `redis-server` process for tests and local runs.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started `redis-server` may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// A `redis-server` of its own: on a free loopback port, in a fresh temporary directory, with
/// persistence off; stopped (by its PID) and its directory removed when dropped. For tests
/// and local runs; a fleet in production connects to its operator's Redis.
///
/// Needs `redis-server` on the `PATH` (Debian: `apt-get install redis-server`).
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = mcpl_redis::RedisServer::start()?;
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new(server.url()))?;
/// redis.ping().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one and waits until it accepts connections.
    ///
    /// # Errors
    ///
    /// `redis-server` could not be run, or did not come up in time.
    pub fn start() -> std::io::Result<RedisServer> {
        let dir = std::env::temp_dir().join(format!(
            "mcpl-redis-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer { child: None, port: 0, dir };
        let mut last = None;
        // A port found free may be taken before the server binds it: try a few.
        for _ in 0..5 {
            server.port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => {
                    server.kill()?;
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("redis-server did not start")))
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "yes"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> std::io::Result<()> {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait()?
            {
                return Err(std::io::Error::other(format!("redis-server exited: {status}")));
            }
            if ping(self.addr()) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "redis-server did not answer"))
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// Its URL, for [`RedisConfig::new`](crate::RedisConfig::new).
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr())
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills it (what a crash looks like to its clients) and waits for it to exit.
    ///
    /// # Errors
    ///
    /// The kill failed.
    pub fn kill(&mut self) -> std::io::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts it again on the same port (empty: persistence is off), after [`kill`](Self::kill).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill()?;
        self.spawn()
    }
}

/// Whether a Redis at `addr` answers `PING`.
fn ping(addr: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
