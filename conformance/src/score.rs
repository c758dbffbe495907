//! Scoring of a conformance results directory from its per-scenario `checks.json` files.
//!
//! The harness writes one directory per scenario run, named
//! `<prefix><scenario>-<ISO timestamp with ':' and '.' replaced by '-'>` (for example
//! `server-ping-2026-01-02T03-04-05-678Z`). Server result directories carry the prefix
//! `server-`; client scenario names may contain `/`, which gives nested directories
//! (`auth/metadata-default-…`). Every result directory should hold a `checks.json`: an array
//! of `{ "id", "status", … }` objects with `status` one of `SUCCESS`, `FAILURE`, `WARNING`,
//! `INFO` or `SKIPPED`.
//!
//! A scenario is scored (never from the harness's exit code) as follows:
//!
//! - [`Status::Fail`] if it has a `FAILURE` check (or a `WARNING` with strict warnings);
//! - otherwise [`Status::Pass`] if at least one of its *own* checks (ids not starting with
//!   `wire-schema-`, which the harness appends to every scenario) is `SUCCESS`;
//! - otherwise [`Status::Skip`] if some check was `SKIPPED`, else [`Status::Fail`] with the
//!   synthetic failing id `no-scenario-checks-passed`;
//! - [`Status::Error`] when `checks.json` is missing (`no-checks.json`, or `harness-exception`
//!   when the harness log says it failed to run the scenario) or is not a JSON array
//!   (`unparseable-checks.json`); a directory without `checks.json` whose scenario the harness
//!   log reports as not applicable is a [`Status::Skip`];
//! - [`Status::Missing`] for a scenario of the scored list that did not run at all.
//!
//! Skipped scenarios are left out of [`Summary::scenarios`].

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::Role;

/// Synthetic check id prefix the harness appends to every scenario.
const WIRE_SCHEMA_PREFIX: &str = "wire-schema-";

/// The verdict on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// At least one own check succeeded and none failed.
    Pass,
    /// A check failed, or no own check succeeded.
    Fail,
    /// The scenario's own checks were all skipped, or the harness skipped the scenario.
    Skip,
    /// The scenario ran but left no usable `checks.json`.
    Error,
    /// A scored scenario that did not run.
    Missing,
}

impl Status {
    /// The upper-case name used in the `SCENARIO` lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
            Status::Error => "ERROR",
            Status::Missing => "MISSING",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The score of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioResult {
    /// Scenario name as the harness knows it (client names may contain `/`).
    pub name: String,
    /// The verdict.
    pub status: Status,
    /// Number of `SUCCESS` checks.
    pub passed: usize,
    /// Number of `FAILURE` checks (1 for an [`Status::Error`]).
    pub failed: usize,
    /// Number of `WARNING` checks.
    pub warnings: usize,
    /// `passed + failed`.
    pub total: usize,
    /// Number of `SKIPPED` checks (only when `checks.json` was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_checks: Option<usize>,
    /// Ids of failing checks, deduplicated, in order, plus synthetic reasons such as
    /// `no-scenario-checks-passed`, `no-checks.json`, `harness-exception`, `not-run`.
    pub failing: Vec<String>,
    /// Whether the scenario counts toward the main summary (always true without a scored
    /// list).
    pub scored: bool,
    /// The result directory, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl ScenarioResult {
    fn error(name: &str, reason: &str, dir: Option<PathBuf>) -> Self {
        ScenarioResult {
            name: name.to_owned(),
            status: Status::Error,
            passed: 0,
            failed: 1,
            warnings: 0,
            total: 1,
            skipped_checks: None,
            failing: vec![reason.to_owned()],
            scored: true,
            dir,
        }
    }

    /// The machine-readable line
    /// `SCENARIO <role> <label> <name> <STATUS> checks=P/T failed=F warnings=W
    /// [skipped_checks=K] [scored=yes|no] [failing=a,b]`.
    pub fn line(&self, role: Role, label: &str, with_scored: bool) -> String {
        let mut l = format!(
            "SCENARIO {role} {label} {} {} checks={}/{} failed={} warnings={}",
            self.name, self.status, self.passed, self.total, self.failed, self.warnings
        );
        if let Some(k) = self.skipped_checks.filter(|k| *k > 0) {
            l.push_str(&format!(" skipped_checks={k}"));
        }
        if with_scored {
            l.push_str(if self.scored { " scored=yes" } else { " scored=no" });
        }
        if !self.failing.is_empty() {
            l.push_str(" failing=");
            l.push_str(&self.failing.join(","));
        }
        l
    }
}

/// Totals over a set of scenarios; skipped scenarios are excluded from everything but
/// [`Summary::skipped`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Scenarios that ran (everything but [`Status::Skip`]).
    pub scenarios: usize,
    /// Scenarios with [`Status::Pass`].
    pub passed: usize,
    /// Scenarios that ran and did not pass.
    pub failed: usize,
    /// Scenarios with [`Status::Skip`].
    pub skipped: usize,
    /// Sum of `SUCCESS` checks over the scenarios that ran.
    pub checks_passed: usize,
    /// Sum of `FAILURE` checks over the scenarios that ran.
    pub checks_failed: usize,
    /// Sum of `WARNING` checks over the scenarios that ran.
    pub warnings: usize,
    /// Names of the scenarios that ran and did not pass.
    pub failing: Vec<String>,
}

impl Summary {
    /// Summarises the given results.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a ScenarioResult>) -> Self {
        let mut s = Summary::default();
        for r in results {
            if r.status == Status::Skip {
                s.skipped += 1;
                continue;
            }
            s.scenarios += 1;
            if r.status == Status::Pass {
                s.passed += 1;
            } else {
                s.failed += 1;
                s.failing.push(r.name.clone());
            }
            s.checks_passed += r.passed;
            s.checks_failed += r.failed;
            s.warnings += r.warnings;
        }
        s
    }
}

/// What to score and how.
#[derive(Debug, Clone)]
pub struct ScoreOptions {
    /// Whose results these are (server result dirs carry the `server-` prefix).
    pub role: Role,
    /// The revision label (spec version or requirements revision).
    pub revision: String,
    /// The harness log (`harness.log`), used to detect skipped and errored scenarios.
    pub harness_log: Option<PathBuf>,
    /// The scenarios a requirements revision scores; `None` scores everything.
    pub scored: Option<Vec<String>>,
    /// Count `WARNING` checks as failures.
    pub strict_warnings: bool,
}

impl ScoreOptions {
    /// Options for `role` at `revision`, scoring everything, harness log `<dir>/harness.log`
    /// chosen by [`score_dir`] when left `None`.
    pub fn new(role: Role, revision: impl Into<String>) -> Self {
        ScoreOptions {
            role,
            revision: revision.into(),
            harness_log: None,
            scored: None,
            strict_warnings: false,
        }
    }
}

/// The scored results of one run directory.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Whose results these are.
    pub role: Role,
    /// The revision scored.
    pub revision: String,
    /// Whether a scored-scenario list was applied.
    pub requirements: bool,
    /// Summary over the scored scenarios.
    pub summary: Summary,
    /// Summary over the scenarios outside the scored list (only with a scored list).
    pub not_scored: Option<Summary>,
    /// Every scenario: the ones found sorted by name, then the missing scored ones.
    pub scenarios: Vec<ScenarioResult>,
}

impl Report {
    /// The revision label: `req-<rev>` with a scored list, else `<rev>`.
    pub fn label(&self) -> String {
        if self.requirements { format!("req-{}", self.revision) } else { self.revision.clone() }
    }

    /// One `SCENARIO …` line per scenario.
    pub fn scenario_lines(&self) -> Vec<String> {
        let label = self.label();
        self.scenarios.iter().map(|r| r.line(self.role, &label, self.requirements)).collect()
    }

    /// The summary lines: `<role> <label>: passed=…`, `FAILING <role> <label>: …` and, with a
    /// scored list, `NOT_SCORED <role> <label>: …`.
    pub fn summary_lines(&self) -> Vec<String> {
        let (role, label, m) = (self.role, self.label(), &self.summary);
        let mut lines = Vec::new();
        let mut l = format!(
            "{role} {label}: passed={} failed={} scenarios={} checks_passed={} checks_failed={} \
             warnings={}",
            m.passed, m.failed, m.scenarios, m.checks_passed, m.checks_failed, m.warnings
        );
        if m.skipped > 0 {
            l.push_str(&format!(" skipped={}", m.skipped));
        }
        lines.push(l);
        lines.push(format!("FAILING {role} {label}: {}", or_none(&m.failing.join(" "))));
        if let Some(x) = &self.not_scored {
            let mut l = format!(
                "NOT_SCORED {role} {label}: passed={} failed={} scenarios={}",
                x.passed, x.failed, x.scenarios
            );
            if x.skipped > 0 {
                l.push_str(&format!(" skipped={}", x.skipped));
            }
            l.push_str(&format!(" failing={}", or_none(&x.failing.join(","))));
            lines.push(l);
        }
        lines
    }

    /// All lines: scenario lines, then summary lines.
    pub fn lines(&self) -> Vec<String> {
        let mut v = self.scenario_lines();
        v.extend(self.summary_lines());
        v
    }

    /// Whether every scored scenario that ran passed (and none is missing).
    pub fn success(&self) -> bool {
        self.summary.failed == 0
    }

    /// Writes `summary.json` and `summary.tsv` into `dir`.
    pub fn write_files(&self, dir: &Path) -> io::Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        fs::write(dir.join("summary.json"), json)?;
        let mut tsv =
            String::from("scenario\tstatus\tpassed\ttotal\tfailed\twarnings\tscored\tfailing\n");
        for r in &self.scenarios {
            tsv.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                r.name,
                r.status,
                r.passed,
                r.total,
                r.failed,
                r.warnings,
                u8::from(r.scored),
                r.failing.join(",")
            ));
        }
        fs::write(dir.join("summary.tsv"), tsv)
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "(none)" } else { s }
}

/// Reads a scored-scenario list: one name per line, empty lines ignored, duplicates dropped
/// (first occurrence kept). A missing file yields `Ok(None)`.
pub fn read_scored_file(path: &Path) -> io::Result<Option<Vec<String>>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(dedup(text.split('\n').filter(|l| !l.is_empty()).map(str::to_owned)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn dedup(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    items.into_iter().filter(|s| seen.insert(s.clone())).collect()
}

/// Scores the results directory `root` (for example `OUT/server-2025-11-25`). A missing
/// `root` yields no found scenarios (so every scored scenario is [`Status::Missing`]).
pub fn score_dir(root: &Path, opts: &ScoreOptions) -> io::Result<Report> {
    let log_path = opts.harness_log.clone().unwrap_or_else(|| root.join("harness.log"));
    let log_text = match fs::read(&log_path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let skipped_in_log: HashSet<String> =
        log_matches(&log_text, "SKIPPED: scenario ", true, " is not applicable")
            .into_iter()
            .collect();
    let errored_in_log = dedup(log_matches(&log_text, "Failed to run scenario ", false, ":"));

    let mut found: BTreeMap<String, ScenarioResult> = BTreeMap::new();
    if root.is_dir() {
        let ctx = WalkCtx {
            root,
            opts,
            skipped_in_log: &skipped_in_log,
            errored_in_log: &errored_in_log,
        };
        walk(root, &ctx, &mut found)?;
    }
    for n in &errored_in_log {
        if !found.contains_key(n) {
            found.insert(n.clone(), ScenarioResult::error(n, "harness-exception", None));
        }
    }
    let mut all: Vec<ScenarioResult> = found.into_values().collect();
    all.sort_by(|a, b| locale_compare(&a.name, &b.name));
    if let Some(scored) = &opts.scored {
        let set: HashSet<&str> = scored.iter().map(String::as_str).collect();
        for r in &mut all {
            r.scored = set.contains(r.name.as_str());
        }
        let ran: HashSet<String> = all.iter().map(|r| r.name.clone()).collect();
        for n in scored {
            if !ran.contains(n) {
                all.push(ScenarioResult {
                    name: n.clone(),
                    status: Status::Missing,
                    passed: 0,
                    failed: 0,
                    warnings: 0,
                    total: 0,
                    skipped_checks: None,
                    failing: vec!["not-run".to_owned()],
                    scored: true,
                    dir: None,
                });
            }
        }
    }
    let summary = Summary::of(all.iter().filter(|r| r.scored));
    let not_scored = opts.scored.as_ref().map(|_| Summary::of(all.iter().filter(|r| !r.scored)));
    Ok(Report {
        role: opts.role,
        revision: opts.revision.clone(),
        requirements: opts.scored.is_some(),
        summary,
        not_scored,
        scenarios: all,
    })
}

struct WalkCtx<'a> {
    root: &'a Path,
    opts: &'a ScoreOptions,
    skipped_in_log: &'a HashSet<String>,
    errored_in_log: &'a [String],
}

fn walk(
    dir: &Path,
    ctx: &WalkCtx<'_>,
    out: &mut BTreeMap<String, ScenarioResult>,
) -> io::Result<()> {
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            entries.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    }
    // Byte order, as Node's readdir (libuv sorts): a reused dir keeps the newest run.
    entries.sort();
    for (name, full) in entries {
        if strip_timestamp(&name).is_none() {
            walk(&full, ctx, out)?;
            continue;
        }
        let rel = full.strip_prefix(ctx.root).unwrap_or(&full);
        let rel: Vec<String> =
            rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let joined = rel.join("/");
        let mut scenario = strip_timestamp(&joined).unwrap_or(&joined);
        if ctx.opts.role == Role::Server {
            scenario = scenario.strip_prefix("server-").unwrap_or(scenario);
        }
        let r = score_result_dir(scenario, &full, ctx);
        out.insert(scenario.to_owned(), r);
    }
    Ok(())
}

fn score_result_dir(name: &str, dir: &Path, ctx: &WalkCtx<'_>) -> ScenarioResult {
    let f = dir.join("checks.json");
    if !f.exists() {
        if ctx.skipped_in_log.contains(name) {
            return ScenarioResult {
                name: name.to_owned(),
                status: Status::Skip,
                passed: 0,
                failed: 0,
                warnings: 0,
                total: 0,
                skipped_checks: None,
                failing: vec![],
                scored: true,
                dir: Some(dir.to_path_buf()),
            };
        }
        let reason = if ctx.errored_in_log.iter().any(|n| n == name) {
            "harness-exception"
        } else {
            "no-checks.json"
        };
        return ScenarioResult::error(name, reason, Some(dir.to_path_buf()));
    }
    let checks = fs::read(&f)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| if let Value::Array(a) = v { Some(a) } else { None });
    let Some(checks) = checks else {
        return ScenarioResult::error(name, "unparseable-checks.json", None);
    };
    let mut r = score_checks(name, &checks, ctx.opts.strict_warnings);
    r.dir = Some(dir.to_path_buf());
    r
}

/// Scores one scenario from the parsed array of its `checks.json`.
pub fn score_checks(name: &str, checks: &[Value], strict_warnings: bool) -> ScenarioResult {
    fn status_of(c: &Value) -> Option<&str> {
        c.get("status").and_then(Value::as_str)
    }
    // JavaScript's String(c.id).
    fn id_of(c: &Value) -> String {
        match c.get("id") {
            None => "undefined".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        }
    }
    let by = |s: &'static str| checks.iter().filter(move |c| status_of(c) == Some(s));
    let mut failing: Vec<String> = by("FAILURE").map(id_of).collect();
    if strict_warnings {
        failing.extend(by("WARNING").map(id_of));
    }
    let passed = by("SUCCESS").count();
    let failed = by("FAILURE").count();
    let warnings = by("WARNING").count();
    let skipped = by("SKIPPED").count();
    let mut status = if failing.is_empty() { Status::Pass } else { Status::Fail };
    let own_success = by("SUCCESS").filter(|c| !id_of(c).starts_with(WIRE_SCHEMA_PREFIX)).count();
    if own_success == 0 && failing.is_empty() {
        if skipped > 0 {
            status = Status::Skip;
        } else {
            status = Status::Fail;
            failing.push("no-scenario-checks-passed".to_owned());
        }
    }
    ScenarioResult {
        name: name.to_owned(),
        status,
        passed,
        failed,
        warnings,
        total: passed + failed,
        skipped_checks: Some(skipped),
        failing: dedup(failing),
        scored: true,
        dir: None,
    }
}

/// If `s` ends with `-YYYY-MM-DDTHH-MM-SS-mmmZ`, returns `s` without it.
fn strip_timestamp(s: &str) -> Option<&str> {
    const PAT: &[u8] = b"-dddd-dd-ddTdd-dd-dd-dddZ";
    let b = s.as_bytes();
    if b.len() < PAT.len() {
        return None;
    }
    let cut = b.len() - PAT.len();
    let ok = b[cut..].iter().zip(PAT).all(|(c, p)| match p {
        b'd' => c.is_ascii_digit(),
        p => c == p,
    });
    // `cut` is at an ASCII '-', hence a char boundary.
    if ok { s.get(..cut) } else { None }
}

/// The captured names of all matches of the regex `<prefix>(\S+?)<suffix>`, or with
/// `quoted` of `<prefix>.(\S+?).<suffix>` (`.` = any character but a line break, the
/// quotes around the name): the name is the shortest non-whitespace run that fits. Neither
/// prefix nor suffix can occur inside a name, so matches never overlap.
fn log_matches(text: &str, prefix: &str, quoted: bool, suffix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(prefix) {
        let start = from + pos + prefix.len();
        from = from + pos + 1;
        let mut rest = &text[start..];
        if quoted {
            let mut it = rest.chars();
            match it.next() {
                Some(c) if c != '\n' && c != '\r' => rest = it.as_str(),
                _ => continue,
            }
        }
        // Lazy \S+?: try each end position, shortest first.
        for (i, c) in rest.char_indices() {
            if c.is_whitespace() {
                break;
            }
            let end = i + c.len_utf8();
            let tail = &rest[end..];
            let hit = if quoted {
                let mut t = tail.chars();
                matches!(t.next(), Some(q) if q != '\n' && q != '\r')
                    && t.as_str().starts_with(suffix)
            } else {
                tail.starts_with(suffix)
            };
            if hit {
                out.push(rest[..end].to_owned());
                break;
            }
        }
    }
    out
}

/// An approximation of JavaScript's `String.prototype.localeCompare` (ICU root collation)
/// for scenario names: punctuation before digits before letters, letters case-insensitive
/// first, then lower case before upper case.
fn locale_compare(a: &str, b: &str) -> Ordering {
    fn class(c: char) -> (u8, u32) {
        // ICU root order of common punctuation: _ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # % ` ^ + < = > | ~ $
        const PUNCT: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
        if c.is_whitespace() {
            (0, c as u32)
        } else if let Some(i) = PUNCT.find(c) {
            (1, i as u32)
        } else if c.is_ascii_digit() {
            (2, c as u32)
        } else if c.is_alphabetic() {
            (3, c.to_lowercase().next().map_or(c as u32, |l| l as u32))
        } else {
            (4, c as u32)
        }
    }
    let primary = a.chars().map(class).cmp(b.chars().map(class));
    primary.then_with(|| {
        // Tertiary: lower case sorts before upper case.
        let flip = |c: char| if c.is_uppercase() { 1u8 } else { 0 };
        a.chars().map(flip).cmp(b.chars().map(flip))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_suffix() {
        assert_eq!(strip_timestamp("server-ping-2026-01-02T03-04-05-678Z"), Some("server-ping"));
        assert_eq!(strip_timestamp("auth"), None);
        assert_eq!(strip_timestamp("ping-2026-01-02T03:04:05.678Z"), None);
    }

    #[test]
    fn log_regexes() {
        let log = "x SKIPPED: scenario 'tasks-a' is not applicable here\n\
                   Failed to run scenario auth/basic: boom\n\
                   Failed to run scenario a b: no\n\
                   SKIPPED: scenario \"b\" is not applicable\n";
        assert_eq!(
            log_matches(log, "SKIPPED: scenario ", true, " is not applicable"),
            ["tasks-a", "b"]
        );
        assert_eq!(log_matches(log, "Failed to run scenario ", false, ":"), ["auth/basic"]);
    }

    #[test]
    fn collation() {
        let mut v =
            vec!["tools-call", "tools_call", "tools/x", "Tools", "tools", "tools2", "a-b", "ab"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(
            v,
            ["a-b", "ab", "tools", "Tools", "tools_call", "tools-call", "tools/x", "tools2"]
        );
    }
}
