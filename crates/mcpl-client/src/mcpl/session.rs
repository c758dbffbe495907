//! The per-connection MCPL state: the server's manifest, the grant in force, the derived
//! feature sets, readiness and the last receipt, plus the bookkeeping of pushes, channels,
//! hooks, lifecycle and manifest fetches.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, Shared};
use mcpl_core::Peer;
use mcpl_core::mcpl::authorize::AdmissionState;
use mcpl_core::mcpl::capability::CapabilityGrant;
use mcpl_core::mcpl::channels::ChannelDescriptor;
use mcpl_core::mcpl::manifest::{FeatureSets, Manifest};
use mcpl_core::mcpl::policy::{DisabledReason, PolicyReceipt, derive_feature_sets};
use mcpl_core::mcpl::state::StateTracker;
use tokio::sync::OnceCell;

use super::HostPolicy;

/// Where the MCPL negotiation of a connection stands.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus};
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_server, _session, transport) = alerts_server().await?;
/// let host = McplHost::new(HostPolicy::default());
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
///
/// let label = match host.status() {
///     Some(McplStatus::Ready) => "MCPL",
///     Some(McplStatus::Negotiating) => "MCPL (negotiating)",
///     // `Refused`, `Unanswered`, not connected, or a server without MCPL.
///     _ => "plain MCP",
/// };
/// assert_eq!(label, "MCPL");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McplStatus {
    /// The initial `featureSets/update` is in flight: every privileged method is refused.
    Negotiating,
    /// The initial policy was accepted: MCPL is in force under the current grant.
    Ready,
    /// The server refused the policy (`accepted: false`); MCPL is off (plain MCP).
    Refused,
    /// The initial policy got no answer (error or timeout); MCPL is off (plain MCP).
    Unanswered,
}

/// Feature-set derivation results.
pub(crate) type Derived = BTreeMap<String, Result<(), DisabledReason>>;

/// The outcome of one accepted `push/event`, shared by its duplicates.
pub(crate) type PushSlot = Arc<OnceCell<Option<String>>>;

pub(crate) struct Session {
    pub(crate) peer: Peer,
    pub(crate) manifest: Manifest,
    pub(crate) mcp_tools: bool,
    pub(crate) understood: BTreeSet<String>,
    pub(crate) declared: FeatureSets,
    pub(crate) status: McplStatus,
    pub(crate) grant: CapabilityGrant,
    pub(crate) derived: Derived,
    pub(crate) receipt: Option<PolicyReceipt>,
    pub(crate) pushes: Bounded<String, PushSlot>,
    pub(crate) channels: BTreeMap<String, ChannelDescriptor>,
    pub(crate) hooks_pending: usize,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) outgoing: Outgoing,
    pub(crate) fetches: VecDeque<Instant>,
    /// Whether the fetches dropped since the budget last had room were reported (once).
    pub(crate) fetch_drops_reported: bool,
    /// Whether a fetch is scheduled for when the budget has room again.
    pub(crate) trailing_fetch: bool,
    pub(crate) state: StateTracker,
    /// The `featureSets/update` exchange in flight whose receipt activates a grant.
    pub(crate) pending: Option<PendingPolicy>,
}

/// A policy exchange whose outcome is applied by whoever sees its answer first: the caller
/// awaiting it, or a server request arriving right after the answer (the reader delivers the
/// answer before it reads the next message, so that request must already see the grant).
pub(crate) type Exchange = Shared<BoxFuture<'static, Result<PolicyReceipt, Arc<mcpl_core::Error>>>>;

pub(crate) struct PendingPolicy {
    pub(crate) exchange: Exchange,
    /// The grant (and derivation) an accepted receipt activates.
    pub(crate) target: CapabilityGrant,
    pub(crate) derived: Derived,
    /// Whether this is the initial policy (its outcome also sets the status).
    pub(crate) initial: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("status", &self.status)
            .field("grant", &self.grant)
            .field("channels", &self.channels.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(
        peer: Peer,
        manifest: Manifest,
        declared: FeatureSets,
        mcp_tools: bool,
        dedupe: usize,
        budget: mcpl_core::mcpl::state::StateBudget,
    ) -> Session {
        let understood = manifest.understood_paths(mcp_tools);
        Session {
            peer,
            manifest,
            mcp_tools,
            understood,
            declared,
            status: McplStatus::Negotiating,
            grant: CapabilityGrant::none(),
            derived: Derived::new(),
            receipt: None,
            pushes: Bounded::new(dedupe),
            channels: BTreeMap::new(),
            hooks_pending: 0,
            lifecycle: Lifecycle::default(),
            outgoing: Outgoing::default(),
            fetches: VecDeque::new(),
            fetch_drops_reported: false,
            trailing_fetch: false,
            state: StateTracker::new().with_budget(budget),
            pending: None,
        }
    }

    /// The admission state of the current grant.
    pub(crate) fn admission(&self) -> AdmissionState<'_> {
        AdmissionState {
            ready: self.status == McplStatus::Ready,
            grant: &self.grant,
            declared: &self.declared,
            derived: &self.derived,
        }
    }

    /// Whether MCPL is in force and `path` granted.
    pub(crate) fn granted(&self, path: &str) -> bool {
        self.status == McplStatus::Ready && self.grant.is_granted(path)
    }

    /// Feature-set derivation under `grant` and `policy`'s selection.
    pub(crate) fn derive(&self, grant: &CapabilityGrant, policy: &HostPolicy) -> Derived {
        let disabled = policy.disabled();
        derive_feature_sets(
            &self.declared,
            grant,
            policy.enabled(),
            (!disabled.is_empty()).then_some(disabled),
        )
    }

    /// Installs a grant and the derivation that goes with it, atomically.
    pub(crate) fn install(&mut self, grant: CapabilityGrant, derived: Derived) {
        self.grant = grant;
        self.derived = derived;
    }

    /// Takes one fetch from the budget of `burst` per `window`; if it is spent, `Err` with
    /// when it has room again.
    pub(crate) fn take_fetch(&mut self, burst: usize, window: Duration) -> Result<(), Instant> {
        let now = Instant::now();
        while self.fetches.front().is_some_and(|t| now.duration_since(*t) >= window) {
            self.fetches.pop_front();
        }
        if self.fetches.len() >= burst {
            let oldest = self.fetches.front().copied().unwrap_or(now);
            return Err(oldest + window);
        }
        self.fetches.push_back(now);
        self.fetch_drops_reported = false;
        Ok(())
    }
}

/// The grant holding only the paths both grants hold (both are lists of concrete paths).
pub(crate) fn intersect(a: &CapabilityGrant, b: &CapabilityGrant) -> CapabilityGrant {
    CapabilityGrant::new(a.entries().iter().filter(|p| b.is_granted(p)).cloned())
}

/// A set enabled under both derivations stays enabled; anything else is disabled.
pub(crate) fn intersect_derived(a: &Derived, b: &Derived) -> Derived {
    b.iter()
        .map(|(name, status)| {
            let status = match (a.get(name), status) {
                (Some(Ok(())), Ok(())) => Ok(()),
                (_, Err(e)) => Err(e.clone()),
                (Some(Err(e)), Ok(())) => Err(e.clone()),
                (None, Ok(())) => Err(DisabledReason::Disabled),
            };
            (name.clone(), status)
        })
        .collect()
}

/// A map that forgets its oldest entries beyond a bound.
pub(crate) struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    pub(crate) fn new(cap: usize) -> Self {
        Bounded { map: HashMap::new(), order: VecDeque::new(), cap: cap.max(1) }
    }

    #[cfg(test)]
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub(crate) fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> V {
        if let Some(v) = self.map.get(&key) {
            return v.clone();
        }
        let v = make();
        self.map.insert(key.clone(), v.clone());
        self.order.push_back(key);
        while self.order.len() > self.cap {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        v
    }

    pub(crate) fn remove(&mut self, key: &K) {
        if self.map.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }
}

/// How many inferences the lifecycle and stream bookkeeping remember.
const TRACKED_INFERENCES: usize = 4096;

/// Lifecycle terminal tracking: exactly one terminal per `started`.
#[derive(Default)]
pub(crate) struct Lifecycle {
    started: HashSet<String>,
    started_order: VecDeque<String>,
    ended: HashSet<String>,
    ended_order: VecDeque<String>,
}

impl Lifecycle {
    /// Records a phase; `Err(defect)` if it breaks the rule (nothing recorded then).
    pub(crate) fn record(
        &mut self,
        inference_id: &str,
        terminal: bool,
    ) -> Result<(), &'static str> {
        let id = inference_id.to_owned();
        if !terminal {
            if self.started.contains(&id) || self.ended.contains(&id) {
                return Err("started twice");
            }
            push_bounded(&mut self.started, &mut self.started_order, id);
            return Ok(());
        }
        if self.ended.contains(&id) {
            return Err("a second terminal phase");
        }
        if !self.started.remove(&id) {
            return Err("a terminal phase without started");
        }
        self.started_order.retain(|s| *s != id);
        push_bounded(&mut self.ended, &mut self.ended_order, id);
        Ok(())
    }
}

fn push_bounded(set: &mut HashSet<String>, order: &mut VecDeque<String>, id: String) {
    set.insert(id.clone());
    order.push_back(id);
    while order.len() > TRACKED_INFERENCES {
        if let Some(old) = order.pop_front() {
            set.remove(&old);
        }
    }
}

/// `channels/outgoing/*` bookkeeping: the next chunk index per inference (across channels),
/// and which (inference, channel) pairs got chunks and were completed.
#[derive(Default)]
pub(crate) struct Outgoing {
    next_index: HashMap<String, u64>,
    order: VecDeque<String>,
    chunked: HashSet<(String, String)>,
    completed: HashSet<(String, String)>,
}

impl Outgoing {
    /// The index of the next chunk of `inference_id` to `channel_id`, or an error if that pair
    /// was already completed.
    pub(crate) fn chunk(&mut self, inference_id: &str, channel_id: &str) -> Result<u64, String> {
        let pair = (inference_id.to_owned(), channel_id.to_owned());
        if self.completed.contains(&pair) {
            return Err("the stream to this channel was already completed".into());
        }
        if !self.next_index.contains_key(inference_id) {
            self.order.push_back(inference_id.to_owned());
            while self.order.len() > TRACKED_INFERENCES {
                if let Some(old) = self.order.pop_front() {
                    self.next_index.remove(&old);
                    self.chunked.retain(|(i, _)| *i != old);
                    self.completed.retain(|(i, _)| *i != old);
                }
            }
        }
        let next = self.next_index.entry(inference_id.to_owned()).or_insert(0);
        let index = *next;
        *next += 1;
        self.chunked.insert(pair);
        Ok(index)
    }

    /// Marks (inference, channel) completed; an error unless it got chunks and was not
    /// completed yet.
    pub(crate) fn complete(&mut self, inference_id: &str, channel_id: &str) -> Result<(), String> {
        let pair = (inference_id.to_owned(), channel_id.to_owned());
        if self.completed.contains(&pair) {
            return Err("complete was already sent for this inference and channel".into());
        }
        if !self.chunked.remove(&pair) {
            return Err("no chunks were sent for this inference and channel".into());
        }
        self.completed.insert(pair);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_terminals() {
        let mut l = Lifecycle::default();
        assert_eq!(l.record("i", true), Err("a terminal phase without started"));
        l.record("i", false).unwrap();
        assert_eq!(l.record("i", false), Err("started twice"));
        l.record("i", true).unwrap();
        assert_eq!(l.record("i", true), Err("a second terminal phase"));
        assert_eq!(l.record("i", false), Err("started twice"));
    }

    #[test]
    fn outgoing_indexes_are_per_inference_across_channels() {
        let mut o = Outgoing::default();
        assert_eq!(o.chunk("i", "a"), Ok(0));
        assert_eq!(o.chunk("i", "b"), Ok(1));
        assert_eq!(o.chunk("j", "a"), Ok(0));
        assert!(o.complete("i", "c").is_err());
        o.complete("i", "a").unwrap();
        assert!(o.complete("i", "a").is_err());
        assert!(o.chunk("i", "a").is_err());
        assert_eq!(o.chunk("i", "b"), Ok(2));
    }

    #[test]
    fn bounded_map_forgets_the_oldest() {
        let mut b: Bounded<u32, u32> = Bounded::new(2);
        b.get_or_insert_with(1, || 10);
        b.get_or_insert_with(2, || 20);
        assert_eq!(b.get_or_insert_with(1, || 99), 10);
        b.get_or_insert_with(3, || 30);
        assert!(b.get(&1).is_none());
        b.remove(&2);
        assert!(b.get(&2).is_none());
        assert_eq!(b.get(&3), Some(&30));
    }
}
