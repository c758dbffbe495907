//! `mcpl-conformance mcpl-server`: drives an MCPL 0.5 server through negotiation, grants and
//! policy updates, push events, context hooks, state and rollback, inference, channels and
//! manifest changes, and reports one verdict per check.
//!
//! The suite plays the host over plain JSON-RPC (it deliberately sends things a well-behaved
//! host never would, such as a malformed policy). Server-initiated behaviour is provoked through
//! an optional MCP tool, [`TRIGGER_TOOL`], described in `conformance/README.md`; checks that
//! need it, or a capability the server does not advertise, are skipped.
//!
//! ```no_run
//! use mcpl_conformance::mcpl_server::{Options, Target, run};
//!
//! # async fn f() {
//! let report = run(&Target::Command("./my-mcpl-server".into()), &Options::default()).await;
//! for check in &report.checks {
//!     println!("{check}");
//! }
//! assert!(report.passed_all());
//! # }
//! ```

mod checks;
mod host;
mod shape;

use std::fmt;
use std::time::Duration;

pub use host::Target;

/// The name of the optional tool through which the suite provokes server-initiated messages.
pub const TRIGGER_TOOL: &str = "mcpl_conformance_trigger";

/// How the suite runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only checks whose name starts with this prefix (e.g. `policy/`).
    pub only: Option<String>,
    /// How long the suite watches for messages that must NOT arrive.
    pub quiet_window: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { only: None, quiet_window: Duration::from_millis(400) }
    }
}

/// A check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The server behaved as the spec requires.
    Pass,
    /// It did not; why.
    Fail(String),
    /// The check does not apply (capability not advertised, no trigger tool); why.
    Skip(String),
}

/// One check and its verdict.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The stable name, `group/check`.
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
}

impl fmt::Display for CheckResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Pass => write!(f, "PASS {}", self.name),
            Verdict::Fail(why) => write!(f, "FAIL {}: {why}", self.name),
            Verdict::Skip(why) => write!(f, "SKIP {}: {why}", self.name),
        }
    }
}

/// Every check's verdict, in the order they ran.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The checks.
    pub checks: Vec<CheckResult>,
}

impl Report {
    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.checks.iter().filter(|c| f(&c.verdict)).count()
    }

    /// How many passed.
    pub fn passed(&self) -> usize {
        self.count(|v| *v == Verdict::Pass)
    }

    /// How many failed.
    pub fn failed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Fail(_)))
    }

    /// How many were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Skip(_)))
    }

    /// Whether nothing failed and at least one check passed.
    pub fn passed_all(&self) -> bool {
        self.failed() == 0 && self.passed() > 0
    }

    /// The verdict of the check named `name`.
    pub fn verdict(&self, name: &str) -> Option<&Verdict> {
        self.checks.iter().find(|c| c.name == name).map(|c| &c.verdict)
    }

    /// The one-line summary.
    pub fn summary(&self) -> String {
        format!(
            "mcpl-server: {} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        )
    }
}

/// Runs the suite against `target`.
pub async fn run(target: &Target, options: &Options) -> Report {
    checks::run(target, options).await
}

pub(crate) const USAGE: &str = "\
usage: mcpl-conformance mcpl-server --command \"CMD ARGS\" [--only PREFIX] [--quiet-window MS]

Drives an MCPL 0.5 server over stdio (CMD is run with `sh -c`) and prints one line per check:
`PASS name`, `FAIL name: why` or `SKIP name: why`, then a summary. Exit 0 only if no check
failed (and at least one passed); 1 if any failed; 2 on bad arguments.";

/// Runs the command line `args` (after `mcpl-server`); the process exit code.
pub async fn main(args: &[String]) -> u8 {
    let mut target = None;
    let mut options = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.clone().next()) {
            ("-h" | "--help", _) => {
                println!("{USAGE}");
                return 0;
            }
            ("--command", Some(v)) => {
                target = Some(Target::Command(v.clone()));
                it.next();
            }
            ("--only", Some(v)) => {
                options.only = Some(v.clone());
                it.next();
            }
            ("--quiet-window", Some(v)) => match v.parse() {
                Ok(ms) => {
                    options.quiet_window = Duration::from_millis(ms);
                    it.next();
                }
                Err(_) => {
                    eprintln!("--quiet-window wants milliseconds\n{USAGE}");
                    return 2;
                }
            },
            _ => {
                eprintln!("unexpected argument {a}\n{USAGE}");
                return 2;
            }
        }
    }
    let Some(target) = target else {
        eprintln!("{USAGE}");
        return 2;
    };
    let report = run(&target, &options).await;
    for c in &report.checks {
        println!("{c}");
    }
    println!("{}", report.summary());
    if report.passed_all() { 0 } else { 1 }
}
