//! The checks, in groups. Each group opens its own connection(s), so state from one group never
//! leaks into another.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::changes::changed_domains;
use mcpl_core::mcpl::digest;
use mcpl_core::mcpl::manifest::Manifest;
use serde_json::{Map, Value, json};

use super::host::{ANSWER_TIMEOUT, HostConn, Target};
use super::{CheckResult, Options, Report, TRIGGER_TOOL, Verdict, shape};

/// Methods a server may only send to an MCPL host, once granted.
const MCPL_SERVER_METHODS: &[&str] = &[
    "push/event",
    "inference/request",
    "model/info",
    "channels/register",
    "channels/changed",
    "channels/incoming",
    "channels/list",
    "mcpl/manifestChanged",
];

/// Methods removed in MCPL 0.5: a server answers them like any unknown method.
const REMOVED_METHODS: &[&str] = &["context/afterInference", "scope/elevate", "tags/describe"];

const INJECT_SYSTEM: &str = "contextHooks.beforeInference.inject.system";
const OBSERVE: &str = "contextHooks.beforeInference.observe";

type Outcome = Result<(), String>;

/// What the first connection learned about the server.
struct Probe {
    /// The manifest, verbatim.
    manifest: Value,
    /// The capability paths the server advertises (as understood).
    understood: BTreeSet<String>,
    /// The declared feature sets (object form), verbatim.
    sets: BTreeMap<String, Value>,
    /// Whether the trigger tool is listed.
    trigger: bool,
    /// The tools the server lists.
    tools: Vec<Value>,
}

impl Probe {
    /// Every understood path except `inject.system` (which a host denies by default).
    fn full_grant(&self) -> Vec<String> {
        self.grant_without(&[INJECT_SYSTEM])
    }

    fn grant_without(&self, removed: &[&str]) -> Vec<String> {
        self.understood.iter().filter(|p| !removed.contains(&p.as_str())).cloned().collect()
    }

    fn advertises(&self, path: &str) -> bool {
        self.understood.contains(path)
    }

    /// The first declared set whose `uses` holds `capability`.
    fn set_using(&self, capability: &str) -> Option<String> {
        self.sets.iter().find_map(|(name, v)| {
            let uses = v.get("uses")?.as_array()?;
            uses.iter().any(|u| u.as_str() == Some(capability)).then(|| name.clone())
        })
    }

    /// Why a trigger-driven check about `capability` cannot run, if it cannot: the feature set
    /// that would carry it.
    fn triggerable(&self, capability: &str) -> Result<String, String> {
        if !self.advertises(capability) {
            return Err(format!("the server does not advertise `{capability}`"));
        }
        if !self.trigger {
            return Err(format!("the server lists no `{TRIGGER_TOOL}` tool"));
        }
        self.set_using(capability)
            .ok_or_else(|| format!("no declared feature set uses `{capability}`"))
    }
}

/// Collects verdicts, honouring `--only`.
struct Checks<'a> {
    report: Report,
    options: &'a Options,
}

impl Checks<'_> {
    fn wants(&self, group: &str) -> bool {
        match &self.options.only {
            None => true,
            Some(p) => group.starts_with(p.as_str()) || p.starts_with(group),
        }
    }

    fn record(&mut self, name: &str, verdict: Verdict) {
        if self.options.only.as_ref().is_none_or(|p| name.starts_with(p.as_str())) {
            self.report.checks.push(CheckResult { name: name.to_owned(), verdict });
        }
    }

    fn outcome(&mut self, name: &str, outcome: Outcome) {
        let verdict = match outcome {
            Ok(()) => Verdict::Pass,
            Err(why) => Verdict::Fail(why),
        };
        self.record(name, verdict);
    }

    fn skip(&mut self, name: &str, why: impl Into<String>) {
        self.record(name, Verdict::Skip(why.into()));
    }

    /// Records `name` as the result of `f`, or as skipped when `applies` is `Err`.
    fn gated<T>(
        &mut self,
        name: &str,
        applies: &Result<T, String>,
        outcome: impl FnOnce(&T) -> Outcome,
    ) {
        match applies {
            Ok(t) => {
                let o = outcome(t);
                self.outcome(name, o);
            }
            Err(why) => self.skip(name, why.clone()),
        }
    }
}

fn expect_error(reply: Result<Value, ErrorObject>, code: i64, what: &str) -> Outcome {
    match reply {
        Ok(v) => Err(format!("{what}: expected error {code}, got the result {v}")),
        Err(e) if e.code.0 == code => Ok(()),
        Err(e) => Err(format!("{what}: expected error {code}, got {} ({})", e.code.0, e.message)),
    }
}

fn expect_ok(reply: Result<Value, ErrorObject>, what: &str) -> Result<Value, String> {
    reply.map_err(|e| format!("{what}: the server answered error {} ({})", e.code.0, e.message))
}

/// The grant `featureSets/update` params.
fn grant(paths: &[String]) -> Value {
    json!({"effectiveCapabilities": paths})
}

/// Reads a trigger outcome: `Ok(result)` when sent and answered with a result.
fn sent(outcome: &Value) -> Result<Value, String> {
    match outcome.get("sent").and_then(Value::as_bool) {
        Some(true) => Ok(outcome.get("result").cloned().unwrap_or(Value::Null)),
        Some(false) => Err(format!(
            "the server did not send it: {}",
            outcome.get("refusal").and_then(Value::as_str).unwrap_or("no reason given")
        )),
        None => Err(format!("the trigger outcome has no boolean `sent`: {outcome}")),
    }
}

fn not_sent(outcome: &Value) -> Outcome {
    match outcome.get("sent").and_then(Value::as_bool) {
        Some(false) => Ok(()),
        Some(true) => Err("the server sent it anyway".into()),
        None => Err(format!("the trigger outcome has no boolean `sent`: {outcome}")),
    }
}

pub(super) async fn run(target: &Target, options: &Options) -> Report {
    let mut c = Checks { report: Report::default(), options };
    let probe = match negotiation(target, &mut c).await {
        Ok(p) => p,
        Err(why) => {
            c.record("negotiation/connect", Verdict::Fail(why));
            return c.report;
        }
    };
    let Some(probe) = probe else { return c.report };
    let window = options.quiet_window;
    type Group = for<'a> fn(
        &'a Target,
        &'a Probe,
        &'a mut Checks<'_>,
        Duration,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Outcome> + Send + 'a>,
    >;
    let groups: [(&str, Group); 8] = [
        ("policy", |t, p, c, w| Box::pin(policy(t, p, c, w))),
        ("policy", |t, p, c, w| Box::pin(policy_notifications(t, p, c, w))),
        ("push", |t, p, c, w| Box::pin(push(t, p, c, w))),
        ("hooks", |t, p, c, w| Box::pin(hooks(t, p, c, w))),
        ("state", |t, p, c, w| Box::pin(state(t, p, c, w))),
        ("inference", |t, p, c, w| Box::pin(inference(t, p, c, w))),
        ("channels", |t, p, c, w| Box::pin(channels(t, p, c, w))),
        ("manifest", |t, p, c, w| Box::pin(manifest(t, p, c, w))),
    ];
    for (name, group) in groups {
        if !c.wants(name) {
            continue;
        }
        if let Err(why) = group(target, &probe, &mut c, window).await {
            c.record(&format!("{name}/connection"), Verdict::Fail(why));
        }
    }
    c.report
}

/// Opens a connection and sends the initial policy `params`; the receipt.
async fn granted(target: &Target, params: Value) -> Result<(HostConn, Value), String> {
    let conn = HostConn::open(target, true).await?;
    let receipt = expect_ok(conn.policy(params).await?, "featureSets/update")?;
    Ok((conn, receipt))
}

async fn negotiation(target: &Target, c: &mut Checks<'_>) -> Result<Option<Probe>, String> {
    let conn = HostConn::open(target, true).await?;
    let Some(raw) = conn.raw_manifest().cloned() else {
        c.record(
            "negotiation/manifest",
            Verdict::Fail("the initialize result has no capabilities.experimental.mcpl".into()),
        );
        conn.close().await;
        return Ok(None);
    };
    let Some(manifest) = conn.manifest() else {
        c.record(
            "negotiation/manifest",
            Verdict::Fail(format!("experimental.mcpl is not an object: {raw}")),
        );
        conn.close().await;
        return Ok(None);
    };
    c.outcome("negotiation/manifest", Ok(()));
    c.outcome(
        "negotiation/version",
        match manifest.version() {
            Some("0.5") => Ok(()),
            other => Err(format!("version is {other:?}, not \"0.5\"")),
        },
    );
    let mut sets = BTreeMap::new();
    let sets_outcome = match raw.get("featureSets") {
        None => Ok(()),
        Some(Value::Object(m)) => m.iter().try_for_each(|(name, v)| {
            sets.insert(name.clone(), v.clone());
            if name.is_empty() || !digest::is_identifier(name) {
                return Err(format!("feature set name {name:?} is not an identifier"));
            }
            shape::feature_set(name, v)
        }),
        Some(Value::Array(_)) => Err("featureSets is an array; MCPL 0.5 keys it by name".into()),
        Some(other) => Err(format!("featureSets is not an object: {other}")),
    };
    c.outcome("negotiation/feature-sets", sets_outcome);
    match raw.get("revision") {
        None => c.skip("negotiation/revision", "the manifest carries no revision"),
        Some(r) => {
            let computed = digest::revision(&raw).map(String::from);
            c.outcome(
                "negotiation/revision",
                match (r.as_str(), computed) {
                    (Some(r), Ok(d)) if r == d => Ok(()),
                    (Some(r), Ok(d)) => {
                        Err(format!("revision {r} is not the canonical digest {d}"))
                    }
                    (_, Err(e)) => Err(format!("the manifest has no digest: {e}")),
                    (None, _) => Err("revision is not a string".into()),
                },
            );
        }
    }
    let fetched = conn.request("mcpl/manifest", json!({})).await?;
    c.outcome(
        "negotiation/manifest-method",
        match fetched {
            Ok(v) => same_manifest(&raw, &v),
            Err(e) if e.code.0 == -32601 && raw.get("revision").is_none() => Ok(()),
            Err(e) if e.code.0 == -32601 => {
                Err("the manifest has a revision (manifest changes) but mcpl/manifest is not implemented".into())
            }
            Err(e) => Err(format!("mcpl/manifest answered error {} ({})", e.code.0, e.message)),
        },
    );
    let unknown = conn.request("mcpl/conformanceNoSuchMethod", json!({})).await?;
    c.outcome("negotiation/unknown-method", expect_error(unknown, -32601, "an unknown method"));
    let mut removed = Ok(());
    for m in REMOVED_METHODS {
        let reply = conn.request(m, json!({})).await?;
        removed = removed.and(expect_error(reply, -32601, m));
    }
    c.outcome("negotiation/removed-methods", removed);

    let understood = manifest.understood_paths(conn.has_mcp_tools());
    let tools = match conn.request("tools/list", json!({})).await? {
        Ok(v) => v.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let trigger = tools.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(TRIGGER_TOOL));
    conn.close().await;
    let probe = Probe { manifest: raw, understood, sets, trigger, tools };

    // A host without MCPL gets plain MCP: no MCPL message, whatever the server is asked to do.
    let mut plain = HostConn::open(target, false).await?;
    let mut outcome = match plain.raw_manifest() {
        _ if plain.request("ping", json!({})).await?.is_err() => Err("ping failed".into()),
        _ => Ok(()),
    };
    if let Ok(set) = probe.triggerable("pushEvents") {
        let o = plain.trigger("push", json!({"featureSet": set})).await?;
        outcome = outcome.and(not_sent(&o));
    }
    let got = plain.collect(MCPL_SERVER_METHODS, c.options.quiet_window).await;
    if let Some(m) = got.first() {
        outcome = outcome.and(Err(format!("sent {} to a host without MCPL", m.method)));
    }
    c.outcome("negotiation/plain-mcp-host", outcome);
    plain.close().await;
    Ok(Some(probe))
}

/// Whether two manifests have the same content (canonical form, revision aside).
fn same_manifest(a: &Value, b: &Value) -> Outcome {
    let ca = digest::canonicalize(a).map_err(|e| e.to_string())?;
    let cb = digest::canonicalize(b).map_err(|e| e.to_string())?;
    if ca != cb {
        return Err(format!("mcpl/manifest returned a different manifest: {cb}"));
    }
    if a.get("revision").is_some() && b.get("revision") != a.get("revision") {
        return Err("mcpl/manifest returned a different revision".into());
    }
    Ok(())
}

async fn policy(target: &Target, p: &Probe, c: &mut Checks<'_>, window: Duration) -> Outcome {
    let push = p.triggerable("pushEvents");
    let mut conn = HostConn::open(target, true).await?;
    // Before the initial policy request the server must send nothing capability-dependent.
    let mut quiet = Ok(());
    if let Ok(set) = &push {
        quiet = not_sent(&conn.trigger("push", json!({"featureSet": set})).await?);
    }
    if let Some(m) = conn.collect(MCPL_SERVER_METHODS, window).await.first() {
        quiet = quiet.and(Err(format!("sent {} before the initial policy", m.method)));
    }
    c.outcome("policy/quiet-before-policy", quiet);

    let receipt = conn.policy(grant(&p.full_grant())).await?;
    c.outcome(
        "policy/initial-receipt",
        expect_ok(receipt, "featureSets/update").and_then(|r| shape::receipt(&r)),
    );

    // A path in both lists: malformed, refused with -32602, and the grant fails closed.
    let overlap = p.understood.iter().next().cloned().unwrap_or_else(|| "pushEvents".into());
    let params = json!({"effectiveCapabilities": p.full_grant(), "deniedCapabilities": [overlap]});
    c.outcome(
        "policy/malformed-overlap",
        expect_error(conn.policy(params).await?, -32602, "an overlapping policy"),
    );
    if let Ok(set) = &push {
        let o = conn.trigger("push", json!({"featureSet": set})).await?;
        c.outcome("policy/malformed-fails-closed", not_sent(&o));
    } else if let Err(why) = &push {
        c.skip("policy/malformed-fails-closed", why.clone());
    }
    conn.close().await;

    // Nothing granted: every declared set is reported unavailable.
    let (conn, receipt) = granted(target, json!({"effectiveCapabilities": []})).await?;
    let outcome = shape::receipt(&receipt).and_then(|()| {
        let listed = shape::unavailable_sets(&receipt);
        let missing: Vec<&String> = p.sets.keys().filter(|s| !listed.contains(s)).collect();
        if !missing.is_empty() {
            return Err(format!("with nothing granted, the receipt omits {missing:?}"));
        }
        if !p.sets.is_empty() && receipt.get("mode").and_then(Value::as_str) != Some("degraded") {
            return Err("with every feature set unavailable, `mode` is not \"degraded\"".into());
        }
        Ok(())
    });
    c.outcome("policy/degradation-receipt", outcome);
    conn.close().await;

    // `effectiveCapabilities` absent from a request grants nothing.
    let (conn, _) = granted(target, json!({})).await?;
    match &push {
        Ok(set) => {
            let o = conn.trigger("push", json!({"featureSet": set})).await?;
            c.outcome("policy/absent-grant-is-nothing", not_sent(&o));
        }
        Err(why) => c.skip("policy/absent-grant-is-nothing", why.clone()),
    }
    conn.close().await;

    let Ok(set) = push else {
        let why = push.err().unwrap_or_default();
        for n in ["policy/reduction-immediate", "policy/disabled-set", "policy/enabled-allowlist"] {
            c.skip(n, why.clone());
        }
        return Ok(());
    };
    let set_arg = json!({"featureSet": set});
    // A reduction takes effect at once.
    let (conn, _) = granted(target, grant(&p.full_grant())).await?;
    let before = sent(&conn.trigger("push", set_arg.clone()).await?);
    let outcome = match before {
        Err(why) => Err(format!("with pushEvents granted: {why}")),
        Ok(_) => {
            let narrowed = p.grant_without(&[INJECT_SYSTEM, "pushEvents"]);
            expect_ok(conn.policy(grant(&narrowed)).await?, "featureSets/update")?;
            not_sent(&conn.trigger("push", set_arg.clone()).await?)
                .map_err(|e| format!("after pushEvents was revoked: {e}"))
        }
    };
    c.outcome("policy/reduction-immediate", outcome);
    conn.close().await;

    // `disabled` subtracts a set; the receipt says so.
    let params = json!({"effectiveCapabilities": p.full_grant(), "disabled": [set]});
    let (conn, receipt) = granted(target, params).await?;
    let mut outcome = not_sent(&conn.trigger("push", set_arg.clone()).await?);
    if !shape::unavailable_sets(&receipt).contains(&set) {
        outcome = outcome.and(Err(format!("the receipt does not list the disabled set {set}")));
    }
    c.outcome("policy/disabled-set", outcome);
    conn.close().await;

    // `enabled` is an allowlist: a set it does not name is disabled.
    let params = json!({"effectiveCapabilities": p.full_grant(), "enabled": []});
    let (conn, _) = granted(target, params).await?;
    c.outcome("policy/enabled-allowlist", not_sent(&conn.trigger("push", set_arg).await?));
    conn.close().await;
    Ok(())
}

async fn policy_notifications(
    target: &Target,
    p: &Probe,
    c: &mut Checks<'_>,
    window: Duration,
) -> Outcome {
    let push = p.triggerable("pushEvents");
    let Ok(set) = push else {
        let why = push.err().unwrap_or_default();
        c.skip("policy/notification-cannot-widen", why.clone());
        c.skip("policy/notification-narrows", why);
        return Ok(());
    };
    let set_arg = json!({"featureSet": set});
    // A notification cannot establish readiness or widen the grant.
    let mut conn = HostConn::open(target, true).await?;
    conn.notify("featureSets/update", grant(&p.full_grant())).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut outcome = not_sent(&conn.trigger("push", set_arg.clone()).await?);
    if let Some(m) = conn.collect(&["push/event"], window).await.first() {
        outcome = outcome.and(Err(format!("sent {} after a notification-only grant", m.method)));
    }
    c.outcome("policy/notification-cannot-widen", outcome);
    conn.close().await;

    // A notification's `disabled` narrows at once.
    let (conn, _) = granted(target, grant(&p.full_grant())).await?;
    let outcome = match sent(&conn.trigger("push", set_arg.clone()).await?) {
        Err(why) => Err(format!("with pushEvents granted: {why}")),
        Ok(_) => {
            conn.notify("featureSets/update", json!({"disabled": [set]})).await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            not_sent(&conn.trigger("push", set_arg).await?)
                .map_err(|e| format!("after a notification disabled {set}: {e}"))
        }
    };
    c.outcome("policy/notification-narrows", outcome);
    conn.close().await;
    Ok(())
}

async fn push(target: &Target, p: &Probe, c: &mut Checks<'_>, _window: Duration) -> Outcome {
    let applies = p.triggerable("pushEvents");
    let Ok(set) = &applies else {
        c.gated("push/event", &applies, |_| Ok(()));
        c.gated("push/host-error-preserved", &applies, |_| Ok(()));
        return Ok(());
    };
    let (mut conn, _) = granted(target, grant(&p.full_grant())).await?;
    let outcome = conn.trigger("push", json!({"featureSet": set})).await?;
    let event = conn.expect("push/event", ANSWER_TIMEOUT).await;
    let check = (|| {
        let result = sent(&outcome)?;
        let event = event.ok_or("no push/event arrived")?;
        if !event.is_request() {
            return Err("push/event arrived as a notification; it is a request".into());
        }
        let params = &event.params;
        let fs = params
            .get("featureSet")
            .and_then(Value::as_str)
            .ok_or("push/event has no featureSet")?;
        if !p.sets.contains_key(fs) {
            return Err(format!("push/event is tagged with the undeclared set {fs}"));
        }
        if p.set_using("pushEvents").is_some() && !uses(p, fs, "pushEvents") {
            return Err(format!("push/event is tagged with {fs}, whose uses lacks pushEvents"));
        }
        match params.get("eventId").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => {}
            _ => return Err("push/event has no eventId".into()),
        }
        shape::timestamp(params.get("timestamp"))?;
        shape::content(
            params.pointer("/payload/content").ok_or("push/event has no payload.content")?,
        )?;
        shape::tags(params.get("tags"))?;
        if result != json!({"accepted": true}) {
            return Err(format!("the trigger reported {result}, not the host's answer"));
        }
        Ok(())
    })();
    c.outcome("push/event", check);

    // The host's error (code and data) reaches the server intact.
    let data = json!({"featureSet": set});
    if let Ok(mut r) = conn.responder.lock() {
        r.push =
            Err(ErrorObject::new(mcpl_core::jsonrpc::ErrorCode(-32001), "Feature set not enabled")
                .with_data(data.clone()));
    }
    let outcome = conn.trigger("push", json!({"featureSet": set})).await?;
    let check = match outcome.get("error") {
        Some(e) if e.get("code") == Some(&json!(-32001)) && e.get("data") == Some(&data) => Ok(()),
        Some(e) => Err(format!("the server reported the host's error as {e}")),
        None => Err(format!("the host answered an error but the trigger reported {outcome}")),
    };
    c.outcome("push/host-error-preserved", check);
    conn.close().await;
    Ok(())
}

fn uses(p: &Probe, set: &str, capability: &str) -> bool {
    p.sets
        .get(set)
        .and_then(|v| v.get("uses"))
        .and_then(Value::as_array)
        .is_some_and(|u| u.iter().any(|x| x.as_str() == Some(capability)))
}

fn before_inference(user_message: Value) -> Value {
    json!({
        "inferenceId": "conformance-inference-1",
        "conversationId": "conformance-conversation",
        "turnIndex": 0,
        "userMessage": user_message,
        "model": super::host::model_info(),
    })
}

async fn hooks(target: &Target, p: &Probe, c: &mut Checks<'_>, _window: Duration) -> Outcome {
    let leaves: Vec<&str> = paths::VOCABULARY
        .iter()
        .copied()
        .filter(|x| x.starts_with("contextHooks.") && p.advertises(x))
        .collect();
    let applies: Result<(), String> = if leaves.is_empty() {
        Err("the server advertises no contextHooks".into())
    } else {
        Ok(())
    };
    if applies.is_err() {
        for n in ["hooks/before-inference", "hooks/write-without-read", "hooks/lifecycle"] {
            c.gated(n, &applies, |_| Ok(()));
        }
        return Ok(());
    }
    let full = p.full_grant();
    let (conn, _) = granted(target, grant(&full)).await?;
    let reply = conn
        .request("context/beforeInference", before_inference(json!("What do you remember?")))
        .await?;
    let check = expect_ok(reply, "context/beforeInference").and_then(|r| hook_result(p, &r, &full));
    c.outcome("hooks/before-inference", check);

    // Injection without observation: called with `userMessage: null`, answered all the same.
    let inject_only = p.grant_without(&[INJECT_SYSTEM, OBSERVE]);
    if inject_only.iter().any(|x| x.starts_with("contextHooks.beforeInference.inject.")) {
        expect_ok(conn.policy(grant(&inject_only)).await?, "featureSets/update")?;
        let reply = conn.request("context/beforeInference", before_inference(Value::Null)).await?;
        let check = expect_ok(reply, "context/beforeInference")
            .and_then(|r| hook_result(p, &r, &inject_only));
        c.outcome("hooks/write-without-read", check);
    } else {
        c.skip("hooks/write-without-read", "the server advertises no inject position");
    }

    if p.advertises("inferenceLifecycle") {
        expect_ok(conn.policy(grant(&full)).await?, "featureSets/update")?;
        let base = json!({"inferenceId": "conformance-inference-2", "conversationId": "conformance-conversation", "turnIndex": 1});
        let mut started = base.clone();
        started["phase"] = json!("started");
        let mut completed = base;
        completed["phase"] = json!("completed");
        completed["usage"] = json!({"inputTokens": 10, "outputTokens": 5});
        conn.notify("inference/lifecycle", started).await?;
        conn.notify("inference/lifecycle", completed).await?;
        let check =
            expect_ok(conn.request("ping", json!({})).await?, "ping after inference/lifecycle")
                .map(drop);
        c.outcome("hooks/lifecycle", check);
    } else {
        c.skip("hooks/lifecycle", "the server does not advertise inferenceLifecycle");
    }
    conn.close().await;
    Ok(())
}

fn hook_result(p: &Probe, r: &Value, granted: &[String]) -> Outcome {
    let fs = r.get("featureSet").and_then(Value::as_str).ok_or("the result has no featureSet")?;
    if !p.sets.contains_key(fs) {
        return Err(format!("the result names the undeclared set {fs}"));
    }
    let injections =
        r.get("contextInjections").and_then(Value::as_array).ok_or("no contextInjections array")?;
    for i in injections {
        shape::injection(i, |pos| {
            let path = format!("contextHooks.beforeInference.inject.{pos}");
            granted.contains(&path)
        })?;
    }
    Ok(())
}

/// Minimal arguments for a tool: each required property gets a plain value of its type.
fn minimal_arguments(tool: &Value) -> Value {
    let schema = tool.get("inputSchema");
    let props = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
    let required = schema.and_then(|s| s.get("required")).and_then(Value::as_array);
    let mut args = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let ty =
            props.and_then(|p| p.get(name)).and_then(|p| p.get("type")).and_then(Value::as_str);
        let v = match ty {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("conformance"),
        };
        args.insert(name.to_owned(), v);
    }
    Value::Object(args)
}

fn tool_feature_set(tool: &Value) -> Option<&str> {
    tool.get("featureSet").or_else(|| tool.pointer("/_meta/featureSet")).and_then(Value::as_str)
}

async fn state(target: &Target, p: &Probe, c: &mut Checks<'_>, _window: Duration) -> Outcome {
    const NAMES: [&str; 4] =
        ["state/checkpoint", "state/lineage", "state/rollback", "state/rollback-unknown"];
    let stateful = p.tools.iter().find_map(|t| {
        let fs = tool_feature_set(t)?;
        let decl = p.sets.get(fs)?;
        (decl.get("rollback") == Some(&Value::Bool(true))).then(|| (t.clone(), fs.to_owned()))
    });
    let Some((tool, set)) = stateful else {
        for n in NAMES {
            c.skip(n, "no listed tool is tagged with a feature set declaring rollback");
        }
        return Ok(());
    };
    let name = tool.get("name").cloned().unwrap_or(Value::Null);
    let (conn, _) = granted(target, grant(&p.full_grant())).await?;
    let call = json!({"name": name, "arguments": minimal_arguments(&tool)});
    let first = expect_ok(conn.request("tools/call", call.clone()).await?, "tools/call")?;
    let first_state = first.get("state").cloned();
    let check = match &first_state {
        None => Err(format!("the result of a tool in the stateful set {set} has no state")),
        Some(s) => shape::state(s),
    };
    c.outcome("state/checkpoint", check.clone());
    let Some(first_state) = first_state.filter(|_| check.is_ok()) else {
        for n in &NAMES[1..] {
            c.skip(n, "no valid state from the first call");
        }
        conn.close().await;
        return Ok(());
    };
    let first_cp = first_state.get("checkpoint").cloned().unwrap_or(Value::Null);

    // The next call carries what the host has; its result descends from the first checkpoint.
    let mut next = call;
    match first_state.get("data") {
        Some(data) => next["state"] = data.clone(),
        None => next["checkpoint"] = first_cp.clone(),
    }
    let second = expect_ok(conn.request("tools/call", next).await?, "tools/call")?;
    let check = match second.get("state") {
        None => Err("the second call's result has no state".into()),
        Some(s) => shape::state(s).and_then(|()| {
            if s.get("parent") == Some(&first_cp) {
                Ok(())
            } else {
                Err(format!(
                    "the second checkpoint's parent is {:?}, not {first_cp}",
                    s.get("parent")
                ))
            }
        }),
    };
    c.outcome("state/lineage", check);

    let reply =
        conn.request("state/rollback", json!({"featureSet": set, "checkpoint": first_cp})).await?;
    let check = expect_ok(reply, "state/rollback").and_then(|r| {
        if r.get("checkpoint").and_then(Value::as_str).is_none() {
            return Err(format!("the rollback result has no checkpoint: {r}"));
        }
        match r.get("success") {
            Some(Value::Bool(_)) => Ok(()),
            _ => Err(format!("the rollback result has no boolean success: {r}")),
        }
    });
    c.outcome("state/rollback", check);

    let unknown = "conformance-no-such-checkpoint";
    let reply =
        conn.request("state/rollback", json!({"featureSet": set, "checkpoint": unknown})).await?;
    let check = match reply {
        Err(e) if e.code.0 == -32005 => match e.data.as_ref().and_then(|d| d.get("checkpoint")) {
            Some(cp) if cp == unknown => Ok(()),
            _ => Err("-32005 without data.checkpoint naming the checkpoint".into()),
        },
        other => expect_error(other, -32005, "rollback to an unknown checkpoint"),
    };
    c.outcome("state/rollback-unknown", check);
    conn.close().await;
    Ok(())
}

async fn inference(target: &Target, p: &Probe, c: &mut Checks<'_>, window: Duration) -> Outcome {
    let applies = p.triggerable("inferenceRequest");
    let names = ["inference/request", "inference/streaming", "inference/stream-needs-grant"];
    match &applies {
        Err(why) => names.iter().for_each(|n| c.skip(n, why.clone())),
        Ok(set) => {
            let (mut conn, _) = granted(target, grant(&p.full_grant())).await?;
            let outcome =
                conn.trigger("inference", json!({"featureSet": set, "stream": false})).await?;
            let request = conn.expect("inference/request", ANSWER_TIMEOUT).await;
            let check = (|| {
                let result = sent(&outcome)?;
                let request = request.ok_or("no inference/request arrived")?;
                let params = &request.params;
                let fs = params.get("featureSet").and_then(Value::as_str).ok_or("no featureSet")?;
                if !p.sets.contains_key(fs) {
                    return Err(format!("tagged with the undeclared set {fs}"));
                }
                let messages =
                    params.get("messages").and_then(Value::as_array).ok_or("no messages array")?;
                if messages.iter().any(|m| m.get("role").is_none() || m.get("content").is_none()) {
                    return Err("a message lacks role or content".into());
                }
                if result.get("content") != Some(&json!("pong")) {
                    return Err(format!("the trigger reported {result}, not the host's answer"));
                }
                Ok(())
            })();
            c.outcome("inference/request", check);

            if p.advertises("inferenceRequest.streaming") {
                let outcome =
                    conn.trigger("inference", json!({"featureSet": set, "stream": true})).await?;
                let request = conn.expect("inference/request", ANSWER_TIMEOUT).await;
                let check = (|| {
                    sent(&outcome)?;
                    let request = request.ok_or("no inference/request arrived")?;
                    if request.params.get("stream") != Some(&json!(true)) {
                        return Err("the request does not ask for stream: true".into());
                    }
                    match outcome.get("chunks") {
                        Some(ch) if *ch == json!(["po", "ng"]) => Ok(()),
                        other => Err(format!(
                            "the server saw chunks {other:?}, the host sent [\"po\",\"ng\"]"
                        )),
                    }
                })();
                c.outcome("inference/streaming", check);

                let without = p.grant_without(&[INJECT_SYSTEM, "inferenceRequest.streaming"]);
                expect_ok(conn.policy(grant(&without)).await?, "featureSets/update")?;
                conn.drain().await;
                let outcome =
                    conn.trigger("inference", json!({"featureSet": set, "stream": true})).await?;
                let mut check = not_sent(&outcome);
                if !conn.collect(&["inference/request"], window).await.is_empty() {
                    check = check
                        .and(Err("a streaming inference/request arrived without the grant".into()));
                }
                c.outcome("inference/stream-needs-grant", check);
            } else {
                let why = "the server does not advertise inferenceRequest.streaming";
                c.skip("inference/streaming", why);
                c.skip("inference/stream-needs-grant", why);
            }
            conn.close().await;
        }
    }

    let applies = p.triggerable("modelInfo");
    match &applies {
        Err(why) => {
            ["model/info", "model/info-needs-grant"].iter().for_each(|n| c.skip(n, why.clone()))
        }
        Ok(_) => {
            let (mut conn, _) = granted(target, grant(&p.full_grant())).await?;
            let outcome = conn.trigger("model_info", json!({})).await?;
            let request = conn.expect("model/info", ANSWER_TIMEOUT).await;
            let check = sent(&outcome).and_then(|result| {
                request.ok_or("no model/info arrived")?;
                if result == super::host::model_info() {
                    Ok(())
                } else {
                    Err(format!("the trigger reported {result}, not the host's answer"))
                }
            });
            c.outcome("model/info", check);
            expect_ok(
                conn.policy(grant(&p.grant_without(&[INJECT_SYSTEM, "modelInfo"]))).await?,
                "featureSets/update",
            )?;
            conn.drain().await;
            let mut check = not_sent(&conn.trigger("model_info", json!({})).await?);
            if !conn.collect(&["model/info"], window).await.is_empty() {
                check = check.and(Err("model/info arrived without the grant".into()));
            }
            c.outcome("model/info-needs-grant", check);
            conn.close().await;
        }
    }
    Ok(())
}

async fn channels(target: &Target, p: &Probe, c: &mut Checks<'_>, _window: Duration) -> Outcome {
    const NAMES: [&str; 7] = [
        "channels/register",
        "channels/list",
        "channels/open",
        "channels/close-unknown",
        "channels/publish",
        "channels/incoming",
        "channels/changed-request-form",
    ];
    if !p.advertises("channels.register") || !p.trigger {
        let why = if p.trigger {
            "the server does not advertise channels.register"
        } else {
            "no trigger tool"
        };
        for n in NAMES {
            c.skip(n, why);
        }
        return Ok(());
    }
    let (mut conn, _) = granted(target, grant(&p.full_grant())).await?;
    if let Ok(mut r) = conn.responder.lock() {
        r.register_first_only = true;
    }
    let outcome = conn.trigger("register_channels", json!({})).await?;
    let request = conn.expect("channels/register", ANSWER_TIMEOUT).await;
    let mut registered: Option<Value> = None;
    let check = (|| {
        let result = sent(&outcome)?;
        let request = request.ok_or("no channels/register arrived")?;
        let list =
            request.params.get("channels").and_then(Value::as_array).ok_or("no channels array")?;
        if list.is_empty() {
            return Err("channels/register with no channel".into());
        }
        list.iter().try_for_each(shape::descriptor)?;
        registered = list.first().cloned();
        let results = result
            .get("results")
            .and_then(Value::as_array)
            .ok_or("the trigger reported no results")?;
        if results.len() != list.len() {
            return Err("the server saw a different number of itemized results".into());
        }
        Ok(())
    })();
    c.outcome("channels/register", check);
    let channel_id = registered.as_ref().and_then(|d| d.get("id")).cloned();

    let reply = conn.request("channels/list", json!({})).await?;
    c.outcome(
        "channels/list",
        match reply {
            Ok(v) if v.get("channels").is_some_and(Value::is_array) => Ok(()),
            Ok(v) => Err(format!("channels/list result has no channels array: {v}")),
            Err(_) => Ok(()),
        },
    );

    if p.advertises("channels.lifecycle") {
        let ty = registered
            .as_ref()
            .and_then(|d| d.get("type"))
            .cloned()
            .unwrap_or(json!("conformance"));
        let reply = conn.request("channels/open", json!({"type": ty, "address": {}})).await?;
        c.outcome(
            "channels/open",
            match reply {
                Ok(v) => v
                    .get("channel")
                    .ok_or("no channel in the result".to_owned())
                    .and_then(shape::descriptor),
                Err(e) if e.code.0 == -32024 => Ok(()),
                Err(e) => Err(format!(
                    "channels/open answered {} ({}), not a channel or -32024",
                    e.code.0, e.message
                )),
            },
        );
        let reply = conn
            .request("channels/close", json!({"channelId": "conformance-no-such-channel"}))
            .await?;
        c.outcome(
            "channels/close-unknown",
            expect_error(reply, -32023, "closing an unknown channel"),
        );
    } else {
        c.skip("channels/open", "the server does not advertise channels.lifecycle");
        c.skip("channels/close-unknown", "the server does not advertise channels.lifecycle");
    }

    match (&channel_id, p.advertises("channels.publish")) {
        (Some(id), true) => {
            let params = json!({"conversationId": "conformance-conversation", "channelId": id,
                                "content": [{"type": "text", "text": "hello from the conformance host"}]});
            let reply = conn.request("channels/publish", params).await?;
            c.outcome(
                "channels/publish",
                expect_ok(reply, "channels/publish").and_then(|v| match v.get("delivered") {
                    Some(Value::Bool(_)) => Ok(()),
                    _ => Err(format!("the publish result has no boolean delivered: {v}")),
                }),
            );
        }
        (None, _) => c.skip("channels/publish", "no channel was registered"),
        (_, false) => c.skip("channels/publish", "the server does not advertise channels.publish"),
    }

    match (&channel_id, p.advertises("channels.incoming")) {
        (Some(id), true) => {
            let outcome = conn.trigger("incoming", json!({"channelId": id})).await?;
            let request = conn.expect("channels/incoming", ANSWER_TIMEOUT).await;
            let check = (|| {
                sent(&outcome)?;
                let request = request.ok_or("no channels/incoming arrived")?;
                let messages = request
                    .params
                    .get("messages")
                    .and_then(Value::as_array)
                    .ok_or("no messages array")?;
                if messages.is_empty() {
                    return Err("channels/incoming with no message".into());
                }
                for m in messages {
                    for key in ["channelId", "messageId", "timestamp"] {
                        if m.get(key).and_then(Value::as_str).is_none() {
                            return Err(format!("an incoming message has no {key}"));
                        }
                    }
                    let author = m.get("author").ok_or("an incoming message has no author")?;
                    if author.get("id").is_none() || author.get("name").is_none() {
                        return Err("the author lacks id or name".into());
                    }
                    shape::timestamp(m.get("timestamp"))?;
                    shape::content(m.get("content").ok_or("an incoming message has no content")?)?;
                    shape::tags(m.get("tags"))?;
                }
                Ok(())
            })();
            c.outcome("channels/incoming", check);
        }
        (None, _) => c.skip("channels/incoming", "no channel was registered"),
        (_, false) => {
            c.skip("channels/incoming", "the server does not advertise channels.incoming")
        }
    }

    let outcome = conn.trigger("channels_changed", json!({})).await?;
    let message = conn.expect("channels/changed", ANSWER_TIMEOUT).await;
    let check = sent(&outcome).and_then(|_| match message {
        None => Err("no channels/changed arrived".into()),
        Some(m) if !m.is_request() => {
            Err("channels/changed arrived as a notification, not a request".into())
        }
        Some(m) => {
            let added = m.params.get("added").and_then(Value::as_array);
            added.into_iter().flatten().try_for_each(shape::descriptor)
        }
    });
    c.outcome("channels/changed-request-form", check);
    conn.close().await;
    Ok(())
}

async fn manifest(target: &Target, p: &Probe, c: &mut Checks<'_>, window: Duration) -> Outcome {
    let (mut conn, _) = granted(target, grant(&p.full_grant())).await?;
    let spurious = conn.collect(&["mcpl/manifestChanged"], window).await;
    c.outcome(
        "manifest/no-spurious-announcement",
        if spurious.is_empty() {
            Ok(())
        } else {
            Err("mcpl/manifestChanged right after the handshake".into())
        },
    );
    if !p.trigger || p.manifest.get("revision").is_none() {
        let why = if p.trigger {
            "the manifest has no revision (no manifest changes)"
        } else {
            "no trigger tool"
        };
        c.skip("manifest/change-announced", why);
        conn.close().await;
        return Ok(());
    }
    let outcome = conn.trigger("change_manifest", json!({})).await?;
    let note = conn.expect("mcpl/manifestChanged", ANSWER_TIMEOUT).await;
    let check = match (sent(&outcome), note) {
        (Err(why), _) => Err(why),
        (Ok(_), None) => Err("no mcpl/manifestChanged arrived".into()),
        (Ok(_), Some(note)) => {
            let fetched =
                expect_ok(conn.request("mcpl/manifest", json!({})).await?, "mcpl/manifest")?;
            announced(&p.manifest, &note.params, &fetched)
        }
    };
    c.outcome("manifest/change-announced", check);
    conn.close().await;
    Ok(())
}

/// An announcement is `{revision, domains}` exactly, its revision is the digest of what
/// `mcpl/manifest` returns, and its domains are those that changed.
fn announced(before: &Value, params: &Value, fetched: &Value) -> Outcome {
    let obj = params.as_object().ok_or("params are not an object")?;
    if let Some(k) = obj.keys().find(|k| *k != "revision" && *k != "domains") {
        return Err(format!("params carry the extra member {k}"));
    }
    let revision = obj.get("revision").and_then(Value::as_str).ok_or("no revision")?;
    let digest = digest::revision(fetched).map_err(|e| e.to_string())?;
    if revision != digest.as_str() {
        return Err(format!("announced {revision}, but the fetched manifest's digest is {digest}"));
    }
    if fetched.get("revision").and_then(Value::as_str) != Some(revision) {
        return Err(
            "mcpl/manifest returned a manifest whose revision is not the announced one".into()
        );
    }
    let domains: BTreeSet<&str> = obj
        .get("domains")
        .and_then(Value::as_array)
        .ok_or("no domains array")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let old =
        Manifest::from_value(before.clone()).map_err(|_| "the old manifest is not an object")?;
    let new =
        Manifest::from_value(fetched.clone()).map_err(|_| "the new manifest is not an object")?;
    let expected = changed_domains(&old, &new).map_err(|e| e.to_string())?;
    let expected: BTreeSet<String> = expected
        .iter()
        .filter_map(|d| serde_json::to_value(d).ok()?.as_str().map(str::to_owned))
        .collect();
    let domains: BTreeSet<String> = domains.into_iter().map(str::to_owned).collect();
    if domains.is_empty() || domains != expected {
        return Err(format!("announced domains {domains:?}, but {expected:?} changed"));
    }
    Ok(())
}
