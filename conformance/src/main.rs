//! `mcpl-conformance`: run the official MCP conformance suite against a server or client and
//! score it. Run `mcpl-conformance help` for usage.

mod manifest_digest;

use std::path::PathBuf;
use std::process::ExitCode;

use mcpl_conformance::install::{self, InstallOptions};
use mcpl_conformance::run::{self, RunOptions, Selection, ServerProcess};
use mcpl_conformance::score::{self, ScoreOptions};
use mcpl_conformance::{Installation, Role};

const USAGE: &str = "\
usage:
  mcpl-conformance server URL   [options]   the server must listen at URL (or use --start)
  mcpl-conformance client \"CMD\" [options]   the harness runs CMD <mock-server-url> per scenario
  mcpl-conformance score DIR ROLE REV [SCORED_FILE] [--strict-warnings 0|1] [--min-pass N]
                                            re-score a run dir, e.g. OUT/server-2025-11-25
  mcpl-conformance install                  install Node >= 22 and the pinned suite, print paths
  mcpl-conformance list [ARGS...]           passthrough to the suite's `list`
  mcpl-conformance raw ARGS...              passthrough to the suite's CLI
  mcpl-conformance manifest-digest [FILE|-] [--canonical]
                                            MCPL manifest revision (sha256:...) of a JSON
                                            manifest (stdin if no FILE); exit 1 and
                                            `error: <code>` if it has none
  mcpl-conformance mcpl-server (--command \"CMD ARGS\" | --url ws://...) [--only PREFIX]
                                            the MCPL 0.5 server suite (stdio or WebSocket): one
                                            PASS/FAIL/SKIP line per check, exit 0 only
                                            if none failed

options (server/client):
  --spec-version V[,V2]   spec versions, one run each (default 2025-11-25,2026-07-28);
                          \"none\" = no --spec-version (every scenario at its own version)
  --suite S               suite (default all)
  --scenario NAME         a single scenario (with --spec-version)
  --requirements R[,R2]   exactly what revision R requires (replaces --spec-version/--suite);
                          only its scored scenarios count, missing ones are MISSING
  --exclude P[,P2]        with --requirements: do not score scenarios whose name starts
                          with P (e.g. auth/); they still run and show as NOT_SCORED
  --also-score N[,N2]     with --requirements: score these scenarios too
  --expected-failures F   YAML baseline passed to the harness (affects its exit code only)
  --timeout MS            per-scenario timeout passed to the harness
  -o, --out DIR           results root (default /tmp/conformance-results/<role>-<stamp>)
  --start \"CMD\"           server mode: start CMD (bash -c, own process group), wait until
                          URL answers HTTP, run, then stop it
  --start-log FILE        where --start's output goes (default OUT/server.log)
  --strict-warnings 0|1   count WARNING checks as failures (default 0; env STRICT_WARNINGS)
  --min-pass N            exit 0 if at least N scored scenarios passed in total (ratchet)
  -q, --quiet             do not stream the harness log to stderr (always in OUT)

environment: CONFORMANCE_VERSION, CONFORMANCE_CACHE (default /tmp/mcp-conformance-cache),
CONFORMANCE_NODE (a node >= 22), NODE_PKG_VERSION (default 22).
stdout: SCENARIO lines and summary lines; stderr: progress and the harness log.
exit: 0 all scored scenarios passed, 1 some failed, 2 usage or setup error.";

/// A usage or setup error: message, exit 2.
struct Fatal(String);

impl<E: std::fmt::Display> From<E> for Fatal {
    fn from(e: E) -> Self {
        Fatal(e.to_string())
    }
}

#[derive(Debug, Default)]
struct Args {
    specs: Option<String>,
    suite: Option<String>,
    requirements: Option<String>,
    scenario: Option<String>,
    expected_failures: Option<PathBuf>,
    timeout_ms: Option<u64>,
    out: Option<PathBuf>,
    start: Option<String>,
    start_log: Option<PathBuf>,
    strict_warnings: bool,
    min_pass: Option<usize>,
    quiet: bool,
    exclude: Vec<String>,
    also_score: Vec<String>,
    positional: Vec<String>,
}

fn parse_args(argv: &[String]) -> Result<Args, Fatal> {
    let mut a = Args {
        strict_warnings: std::env::var("STRICT_WARNINGS").is_ok_and(|v| v == "1"),
        ..Args::default()
    };
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value =
            || it.next().cloned().ok_or_else(|| Fatal(format!("option {arg} needs a value")));
        match arg.as_str() {
            "--spec-version" => a.specs = Some(value()?),
            "--suite" => a.suite = Some(value()?),
            "--requirements" => a.requirements = Some(value()?),
            "--scenario" => a.scenario = Some(value()?),
            "--expected-failures" => a.expected_failures = Some(PathBuf::from(value()?)),
            "--timeout" => a.timeout_ms = Some(number(arg, &value()?)?),
            "-o" | "--out" => a.out = Some(PathBuf::from(value()?)),
            "--start" => a.start = Some(value()?),
            "--start-log" => a.start_log = Some(PathBuf::from(value()?)),
            "--strict-warnings" => {
                a.strict_warnings = match value()?.as_str() {
                    "1" => true,
                    "0" => false,
                    v => return Err(Fatal(format!("--strict-warnings takes 0 or 1, not {v:?}"))),
                }
            }
            "--min-pass" => a.min_pass = Some(number(arg, &value()?)?),
            "--exclude" => a.exclude.extend(split_list(&value()?).map(str::to_owned)),
            "--also-score" => a.also_score.extend(split_list(&value()?).map(str::to_owned)),
            "-q" | "--quiet" => a.quiet = true,
            s if s.starts_with('-') && s.len() > 1 => {
                return Err(Fatal(format!("unknown option {s}")));
            }
            _ => a.positional.push(arg.clone()),
        }
    }
    Ok(a)
}

fn number<T: std::str::FromStr>(opt: &str, v: &str) -> Result<T, Fatal> {
    v.parse().map_err(|_| Fatal(format!("{opt} needs a number, not {v:?}")))
}

fn exit_code(passed: usize, all_passed: bool, min_pass: Option<usize>) -> ExitCode {
    let ok = match min_pass {
        Some(n) => passed >= n,
        None => all_passed,
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match real_main(argv).await {
        Ok(code) => code,
        Err(Fatal(msg)) => {
            eprintln!("[mcpl-conformance] error: {msg}");
            ExitCode::from(2)
        }
    }
}

async fn real_main(argv: Vec<String>) -> Result<ExitCode, Fatal> {
    let Some((mode, rest)) = argv.split_first() else {
        eprintln!("{USAGE}");
        return Ok(ExitCode::from(2));
    };
    match mode.as_str() {
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        "score" => score_cmd(parse_args(rest)?),
        "install" => {
            let inst = install_suite().await?;
            println!("node {}", inst.node.display());
            println!("cli {}", inst.cli.display());
            println!("version {}", inst.version);
            Ok(ExitCode::SUCCESS)
        }
        "list" | "raw" => {
            let inst = install_suite().await?;
            let mut args = rest.to_vec();
            if mode == "list" {
                args.insert(0, "list".to_owned());
            }
            let code = run::passthrough(&inst, &args).await?;
            Ok(ExitCode::from(code.and_then(|c| u8::try_from(c).ok()).unwrap_or(1)))
        }
        "manifest-digest" => Ok(manifest_digest::run(rest).map_err(Fatal)?),
        "mcpl-server" => Ok(ExitCode::from(mcpl_conformance::mcpl_server::main(rest).await)),
        "server" => run_cmd(Role::Server, parse_args(rest)?).await,
        "client" => run_cmd(Role::Client, parse_args(rest)?).await,
        other => Err(Fatal(format!(
            "unknown mode {other:?} (server|client|score|install|list|raw|manifest-digest|mcpl-server)"
        ))),
    }
}

async fn install_suite() -> Result<Installation, Fatal> {
    Ok(install::install(&InstallOptions::from_env()).await?)
}

fn score_cmd(a: Args) -> Result<ExitCode, Fatal> {
    let [dir, role, rev, scored @ ..] = a.positional.as_slice() else {
        return Err(Fatal("usage: score DIR ROLE REV [SCORED_FILE]".to_owned()));
    };
    if scored.len() > 1 {
        return Err(Fatal("usage: score DIR ROLE REV [SCORED_FILE]".to_owned()));
    }
    let dir = PathBuf::from(dir);
    let dir = dir.canonicalize().unwrap_or(dir);
    let mut opts = ScoreOptions::new(role.parse::<Role>()?, rev.clone());
    opts.strict_warnings = a.strict_warnings;
    if let Some(f) = scored.first().filter(|f| !f.is_empty()) {
        opts.scored = score::read_scored_file(&PathBuf::from(f))?;
    }
    let report = score::score_dir(&dir, &opts)?;
    if dir.is_dir() {
        report.write_files(&dir)?;
    }
    for l in report.lines() {
        println!("{l}");
    }
    Ok(exit_code(report.summary.passed, report.success(), a.min_pass))
}

async fn run_cmd(role: Role, a: Args) -> Result<ExitCode, Fatal> {
    let [target] = a.positional.as_slice() else {
        return Err(Fatal(format!("{role} needs exactly one target (URL or command)")));
    };
    if a.start.is_some() && role != Role::Server {
        return Err(Fatal("--start is for server mode".to_owned()));
    }
    let selections: Vec<Selection> = match &a.requirements {
        Some(reqs) => split_list(reqs).map(|r| Selection::Requirements(r.to_owned())).collect(),
        None => split_list(a.specs.as_deref().unwrap_or("2025-11-25,2026-07-28"))
            .map(|v| Selection::Spec {
                version: v.to_owned(),
                suite: a.suite.clone(),
                scenario: a.scenario.clone(),
            })
            .collect(),
    };
    if selections.is_empty() {
        return Err(Fatal("no revision to run".to_owned()));
    }
    if a.requirements.is_none() && !(a.exclude.is_empty() && a.also_score.is_empty()) {
        return Err(Fatal("--exclude and --also-score need --requirements".to_owned()));
    }
    let expected_failures = match &a.expected_failures {
        Some(f) => Some(f.canonicalize().map_err(|e| format!("{}: {e}", f.display()))?),
        None => None,
    };
    let inst = install_suite().await?;

    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("/tmp/conformance-results/{role}-{}", utc_stamp()))
    });
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let out = out.canonicalize()?;

    let mut server = match &a.start {
        Some(cmd) => {
            let log = a.start_log.clone().unwrap_or_else(|| out.join("server.log"));
            Some(ServerProcess::start(cmd, target, &log).await?)
        }
        None => None,
    };

    let runs = async {
        let mut summary = Vec::new();
        let (mut passed, mut all_passed) = (0, true);
        for selection in selections {
            let opts = RunOptions {
                role,
                target: target.clone(),
                selection,
                expected_failures: expected_failures.clone(),
                timeout_ms: a.timeout_ms,
                out: out.clone(),
                strict_warnings: a.strict_warnings,
                quiet: a.quiet,
                exclude: a.exclude.clone(),
                also_score: a.also_score.clone(),
            };
            let outcome = run::run(&inst, &opts).await?;
            for l in outcome.report.scenario_lines() {
                println!("{l}");
            }
            summary.extend(outcome.summary_lines());
            passed += outcome.report.summary.passed;
            all_passed &= outcome.report.success();
        }
        Ok::<_, Fatal>((summary, passed, all_passed))
    };
    let result = tokio::select! {
        r = runs => r,
        _ = tokio::signal::ctrl_c() => Err(Fatal("interrupted".to_owned())),
    };
    if let Some(server) = &mut server {
        server.stop().await;
    }
    let (summary, passed, all_passed) = result?;
    println!("----");
    for l in summary {
        println!("{l}");
    }
    eprintln!("[mcpl-conformance] results in {}", out.display());
    Ok(exit_code(passed, all_passed, a.min_pass))
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|v| !v.is_empty())
}

/// The current UTC time as `YYYYMMDDTHHMMSSZ`.
fn utc_stamp() -> String {
    let now = std::time::SystemTime::now();
    let rfc3339 = humantime::format_rfc3339_seconds(now).to_string(); // 2026-07-28T12:34:56Z
    rfc3339.replace(['-', ':'], "")
}
