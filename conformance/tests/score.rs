//! Scoring of results directories built on disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpl_conformance::score::{ScoreOptions, score_dir};
use mcpl_conformance::{Report, Role, Status};
use serde_json::{Value, json};

const TS: &str = "2026-01-02T03-04-05-678Z";
const TS_LATER: &str = "2026-01-02T03-09-05-678Z";

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "mcpl-conformance-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Creates `<rel>-<ts>/` and, if given, its `checks.json`.
    fn result(&self, rel: &str, ts: &str, checks: Option<&str>) {
        let d = self.0.join(format!("{rel}-{ts}"));
        fs::create_dir_all(&d).unwrap();
        if let Some(c) = checks {
            fs::write(d.join("checks.json"), c).unwrap();
        }
    }

    fn checks(&self, rel: &str, checks: Value) {
        self.result(rel, TS, Some(&checks.to_string()));
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn check(id: &str, status: &str) -> Value {
    json!({ "id": id, "name": id, "description": "d", "status": status })
}

fn score(dir: &TempDir, role: Role, f: impl FnOnce(&mut ScoreOptions)) -> Report {
    let mut opts = ScoreOptions::new(role, "2025-11-25");
    f(&mut opts);
    score_dir(dir.path(), &opts).unwrap()
}

fn find<'a>(r: &'a Report, name: &str) -> &'a mcpl_conformance::ScenarioResult {
    r.scenarios.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn pass_and_fail() {
    let d = TempDir::new();
    d.checks(
        "server-ping",
        json!([check("ping", "SUCCESS"), check("wire-schema-valid", "SUCCESS")]),
    );
    d.checks(
        "server-tools-list",
        json!([
            check("tools-list", "FAILURE"),
            check("x", "SUCCESS"),
            check("tools-list", "FAILURE")
        ]),
    );
    let r = score(&d, Role::Server, |_| {});
    assert_eq!(r.scenarios.len(), 2);
    let ping = find(&r, "ping");
    assert_eq!((ping.status, ping.passed, ping.total), (Status::Pass, 2, 2));
    let tl = find(&r, "tools-list");
    assert_eq!(tl.status, Status::Fail);
    assert_eq!((tl.passed, tl.failed, tl.total), (1, 2, 3));
    assert_eq!(tl.failing, ["tools-list"]);
    assert_eq!(
        r.lines(),
        [
            "SCENARIO server 2025-11-25 ping PASS checks=2/2 failed=0 warnings=0",
            "SCENARIO server 2025-11-25 tools-list FAIL checks=1/3 failed=2 warnings=0 \
             failing=tools-list",
            "server 2025-11-25: passed=1 failed=1 scenarios=2 checks_passed=3 checks_failed=2 \
             warnings=0",
            "FAILING server 2025-11-25: tools-list",
        ]
    );
    assert!(!r.success());
}

#[test]
fn skip_only_is_skip_and_not_counted() {
    let d = TempDir::new();
    d.checks("server-ping", json!([check("ping", "SUCCESS")]));
    d.checks(
        "server-sep-2640-skills",
        json!([check("skills", "SKIPPED"), check("wire-schema-valid", "SUCCESS")]),
    );
    let r = score(&d, Role::Server, |_| {});
    let s = find(&r, "sep-2640-skills");
    assert_eq!(s.status, Status::Skip);
    assert_eq!(s.skipped_checks, Some(1));
    assert_eq!(
        s.line(Role::Server, "2025-11-25", false),
        "SCENARIO server 2025-11-25 sep-2640-skills SKIP checks=1/1 failed=0 warnings=0 \
         skipped_checks=1"
    );
    assert_eq!((r.summary.scenarios, r.summary.passed, r.summary.skipped), (1, 1, 1));
    assert_eq!(r.summary.checks_passed, 1);
    assert_eq!(
        r.summary_lines()[0],
        "server 2025-11-25: passed=1 failed=0 scenarios=1 checks_passed=1 checks_failed=0 \
         warnings=0 skipped=1"
    );
    assert_eq!(r.summary_lines()[1], "FAILING server 2025-11-25: (none)");
    assert!(r.success());
}

#[test]
fn missing_checks_json_is_error_or_log_verdict() {
    let d = TempDir::new();
    d.result("server-ping", TS, None);
    d.result("server-tasks-a", TS, None);
    d.result("server-boom", TS, None);
    fs::write(
        d.path().join("harness.log"),
        "SKIPPED: scenario 'tasks-a' is not applicable at 2025-11-25\n\
         Failed to run scenario boom: TypeError\nFailed to run scenario never-made-a-dir: x\n",
    )
    .unwrap();
    let r = score(&d, Role::Server, |_| {});
    let ping = find(&r, "ping");
    assert_eq!((ping.status, ping.failed, ping.total), (Status::Error, 1, 1));
    assert_eq!(ping.failing, ["no-checks.json"]);
    assert_eq!(find(&r, "tasks-a").status, Status::Skip);
    assert_eq!(find(&r, "boom").failing, ["harness-exception"]);
    let never = find(&r, "never-made-a-dir");
    assert_eq!((never.status, never.dir.is_none()), (Status::Error, true));
    assert_eq!(r.summary.failing, ["boom", "never-made-a-dir", "ping"]);
}

#[test]
fn unparseable_checks_json_is_error() {
    let d = TempDir::new();
    d.result("server-ping", TS, Some("{not json"));
    d.result("server-obj", TS, Some(r#"{"checks": []}"#));
    let r = score(&d, Role::Server, |_| {});
    for n in ["ping", "obj"] {
        let s = find(&r, n);
        assert_eq!(s.status, Status::Error);
        assert_eq!(s.failing, ["unparseable-checks.json"]);
    }
}

#[test]
fn nested_client_names_and_no_prefix_strip() {
    let d = TempDir::new();
    d.checks("auth/metadata-default", json!([check("prm", "SUCCESS")]));
    d.checks("auth/nested/deeper", json!([check("x", "FAILURE")]));
    d.checks("server-lookalike", json!([check("y", "SUCCESS")]));
    // A plain dir without a timestamp is only descended into.
    fs::create_dir_all(d.path().join("empty-group")).unwrap();
    let r = score(&d, Role::Client, |_| {});
    let names: Vec<&str> = r.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["auth/metadata-default", "auth/nested/deeper", "server-lookalike"]);
    assert_eq!(find(&r, "auth/metadata-default").status, Status::Pass);
    assert!(
        r.scenario_lines()[1].starts_with("SCENARIO client 2025-11-25 auth/nested/deeper FAIL")
    );
}

#[test]
fn wire_schema_only_or_warning_only_fails() {
    let d = TempDir::new();
    d.checks("server-ping", json!([check("wire-schema-valid", "SUCCESS")]));
    d.checks("server-warn", json!([check("w", "WARNING"), check("i", "INFO")]));
    d.checks("server-empty", json!([]));
    let r = score(&d, Role::Server, |_| {});
    for n in ["ping", "warn", "empty"] {
        let s = find(&r, n);
        assert_eq!(s.status, Status::Fail, "{n}");
        assert_eq!(s.failing, ["no-scenario-checks-passed"], "{n}");
    }
    assert_eq!(
        find(&r, "ping").line(Role::Server, "2025-11-25", false),
        "SCENARIO server 2025-11-25 ping FAIL checks=1/1 failed=0 warnings=0 \
         failing=no-scenario-checks-passed"
    );
    assert_eq!(r.summary.warnings, 1);
}

#[test]
fn strict_warnings() {
    let d = TempDir::new();
    d.checks("server-ping", json!([check("ping", "SUCCESS"), check("slow", "WARNING")]));
    let lax = score(&d, Role::Server, |_| {});
    assert_eq!(find(&lax, "ping").status, Status::Pass);
    assert_eq!(lax.summary.warnings, 1);
    let strict = score(&d, Role::Server, |o| o.strict_warnings = true);
    let s = find(&strict, "ping");
    assert_eq!((s.status, s.failed), (Status::Fail, 0));
    assert_eq!(s.failing, ["slow"]);
}

#[test]
fn scored_list_and_missing() {
    let d = TempDir::new();
    d.checks("server-ping", json!([check("ping", "SUCCESS")]));
    d.checks("server-extra", json!([check("e", "FAILURE")]));
    let scored = vec!["ping".to_owned(), "tools-list".to_owned()];
    let r = score(&d, Role::Server, |o| o.scored = Some(scored));
    assert_eq!(
        r.lines(),
        [
            "SCENARIO server req-2025-11-25 extra FAIL checks=0/1 failed=1 warnings=0 scored=no \
             failing=e",
            "SCENARIO server req-2025-11-25 ping PASS checks=1/1 failed=0 warnings=0 scored=yes",
            "SCENARIO server req-2025-11-25 tools-list MISSING checks=0/0 failed=0 warnings=0 \
             scored=yes failing=not-run",
            "server req-2025-11-25: passed=1 failed=1 scenarios=2 checks_passed=1 checks_failed=0 \
             warnings=0",
            "FAILING server req-2025-11-25: tools-list",
            "NOT_SCORED server req-2025-11-25: passed=0 failed=1 scenarios=1 failing=extra",
        ]
    );
    assert!(!r.success());
}

#[test]
fn newest_run_wins_and_summary_files() {
    let d = TempDir::new();
    d.result("server-ping", TS, Some(&json!([check("ping", "FAILURE")]).to_string()));
    d.result("server-ping", TS_LATER, Some(&json!([check("ping", "SUCCESS")]).to_string()));
    let r = score(&d, Role::Server, |_| {});
    assert_eq!(r.scenarios.len(), 1);
    assert_eq!(r.scenarios[0].status, Status::Pass);
    r.write_files(d.path()).unwrap();
    let tsv = fs::read_to_string(d.path().join("summary.tsv")).unwrap();
    assert_eq!(
        tsv,
        "scenario\tstatus\tpassed\ttotal\tfailed\twarnings\tscored\tfailing\nping\tPASS\t1\t1\t0\t0\t1\t\n"
    );
    let json: Value =
        serde_json::from_str(&fs::read_to_string(d.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["passed"], 1);
    assert_eq!(json["scenarios"][0]["status"], "PASS");
    assert_eq!(json["not_scored"], Value::Null);
}

#[test]
fn missing_root_scores_everything_missing() {
    let d = TempDir::new();
    let r = score_dir(&d.path().join("nope"), &{
        let mut o = ScoreOptions::new(Role::Client, "2026-07-28");
        o.scored = Some(vec!["initialize".to_owned()]);
        o
    })
    .unwrap();
    assert_eq!(r.scenarios[0].status, Status::Missing);
    assert_eq!(r.summary.failed, 1);
}
