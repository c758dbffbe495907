//! Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`) against an
//! mcpl-rs server (a URL) or client (a command) and scores the results from the per-scenario
//! `checks.json` files, never from the harness's exit code.
//!
//! # Running
//!
//! ```text
//! # a server that is already listening, exactly what revision 2025-11-25 requires:
//! mcpl-conformance server http://127.0.0.1:8001/mcp --requirements 2025-11-25
//! # start the server first, one scenario at one spec version:
//! mcpl-conformance server http://127.0.0.1:8001/mcp --start "PORT=8001 ./conformance-server" \
//!     --spec-version 2025-11-25 --scenario ping
//! # a client binary (the harness appends the mock server's URL to the command):
//! mcpl-conformance client "./target/debug/conformance-client" --suite core --spec-version 2026-07-28
//! # re-score an existing run directory:
//! mcpl-conformance score /tmp/conformance-results/server-x/server-2025-11-25 server 2025-11-25
//! ```
//!
//! The suite needs Node >= 22: [`install`] uses `$CONFORMANCE_NODE`, else the system `node`
//! if new enough, else installs the npm package `node-linux-<arch>@22` into the cache
//! directory (`$CONFORMANCE_CACHE`, default `/tmp/mcp-conformance-cache`), where it also
//! installs the pinned suite. Machine-readable results go to stdout
//! (`SCENARIO <role> <rev> <name> PASS|FAIL|SKIP|ERROR|MISSING checks=P/T …` and one summary
//! line per run); progress and the harness log go to stderr. See [`score`] for the rules.
//!
//! # Modules
//!
//! - [`install`]: find or install Node >= 22 and the pinned suite.
//! - [`run`]: run the suite in server or client mode and score the run.
//! - [`score`]: score a results directory.
//! - [`mcpl_server`]: the MCPL server suite (`mcpl-conformance mcpl-server`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;

use serde::Serialize;

pub mod install;
pub mod mcpl_server;
pub mod run;
pub mod score;

pub use install::{InstallError, InstallOptions, Installation};
pub use run::{RunError, RunOptions, RunOutcome, Selection};
pub use score::{Report, ScenarioResult, ScoreOptions, Status, Summary};

/// The suite version this runner is pinned to.
pub const CONFORMANCE_VERSION: &str = "0.2.0-alpha.12";

/// Which side of the protocol is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A server, reached at a URL.
    Server,
    /// A client, started by the harness as a command.
    Client,
}

impl Role {
    /// `"server"` or `"client"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "server" => Ok(Role::Server),
            "client" => Ok(Role::Client),
            other => Err(format!("role must be server or client, not {other:?}")),
        }
    }
}

/// Writes a progress message to stderr (stdout is reserved for results).
pub(crate) fn log(msg: impl fmt::Display) {
    eprintln!("[mcpl-conformance] {msg}");
}
