//! What the instances of a fleet tell each other: the server's changes ([`FleetEvents`]), and
//! the key that seals `requestState` ([`shared_state_sealer`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use mcpl_server::request_state::StateSealer;
use mcpl_server::{Server, ServerEvent};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::{Error, Redis, codec};

/// The largest relayed message read; a larger one is not one of ours and is dropped.
const MAX_MESSAGE: usize = 64 * 1024;
/// How many events relayed from elsewhere may wait to be recognized locally.
const MAX_PENDING: usize = 1024;

/// A server event as relayed between instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Wire {
    ToolsListChanged,
    ResourcesListChanged,
    PromptsListChanged,
    ResourceUpdated { uri: String },
}

impl Wire {
    fn from_event(event: &ServerEvent) -> Option<Wire> {
        Some(match event {
            ServerEvent::ToolsListChanged => Wire::ToolsListChanged,
            ServerEvent::ResourcesListChanged => Wire::ResourcesListChanged,
            ServerEvent::PromptsListChanged => Wire::PromptsListChanged,
            ServerEvent::ResourceUpdated { uri } => Wire::ResourceUpdated { uri: uri.clone() },
            _ => return None,
        })
    }

    fn into_event(self) -> ServerEvent {
        match self {
            Wire::ToolsListChanged => ServerEvent::ToolsListChanged,
            Wire::ResourcesListChanged => ServerEvent::ResourcesListChanged,
            Wire::PromptsListChanged => ServerEvent::PromptsListChanged,
            Wire::ResourceUpdated { uri } => ServerEvent::ResourceUpdated { uri },
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Relayed {
    /// The instance that relayed it (it ignores its own).
    origin: String,
    event: Wire,
}

/// Relays a server's changes (list changes, resource updates) to every other instance of its
/// fleet over Redis pub/sub, and theirs to it: a change made at one instance reaches the
/// sessions and `subscriptions/listen` streams open at every instance. Stops when dropped.
///
/// After losing its subscription (Redis down), the relay resubscribes by itself and tells its
/// clients that every list may have changed (what happened meanwhile is unknown).
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let server = mcpl_server::Server::builder("s", "1").build();
/// let relay = mcpl_redis::FleetEvents::relay(&redis, &server)?;
/// // ... serve `server`; keep `relay` alive as long.
/// # drop(relay);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FleetEvents {
    tasks: [JoinHandle<()>; 2],
}

impl FleetEvents {
    /// Starts relaying `server`'s changes through `redis`. Must be called within a Tokio
    /// runtime.
    ///
    /// # Errors
    ///
    /// No OS randomness for this instance's relay id.
    pub fn relay(redis: &Redis, server: &Server) -> Result<FleetEvents, Error> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| Error::new(crate::ErrorKind::Command, e))?;
        let origin: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let channel = redis.key(&["events"]);
        let pending: Arc<Mutex<VecDeque<ServerEvent>>> = Arc::default();
        let outgoing = tokio::spawn(publish_local(
            redis.clone(),
            server.clone(),
            channel.clone(),
            origin.clone(),
            pending.clone(),
        ));
        let incoming =
            tokio::spawn(receive_remote(redis.clone(), server.clone(), channel, origin, pending));
        Ok(FleetEvents { tasks: [outgoing, incoming] })
    }
}

impl Drop for FleetEvents {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Whether `event` is one this relay announced itself (and so must not send back out).
fn relayed_here(pending: &Mutex<VecDeque<ServerEvent>>, event: &ServerEvent) -> bool {
    let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
    match pending.iter().position(|e| e == event) {
        Some(at) => {
            pending.remove(at);
            true
        }
        None => false,
    }
}

/// Announces `event` here, remembering it so it is not relayed back.
fn announce(server: &Server, pending: &Mutex<VecDeque<ServerEvent>>, event: ServerEvent) {
    {
        let mut pending = pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.len() >= MAX_PENDING {
            pending.pop_front();
        }
        pending.push_back(event.clone());
    }
    server.notify_change(event);
}

async fn publish_local(
    redis: Redis,
    server: Server,
    channel: String,
    origin: String,
    pending: Arc<Mutex<VecDeque<ServerEvent>>>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let mut changes = server.subscribe_changes();
    loop {
        let event = match changes.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "the fleet relay fell behind on server events");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if relayed_here(&pending, &event) {
            continue;
        }
        let Some(event) = Wire::from_event(&event) else { continue };
        let message = match codec::encode(&Relayed { origin: origin.clone(), event }) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(error = %e, "a server event could not be encoded for the fleet");
                continue;
            }
        };
        let published: Result<i64, _> = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(message)
            .query_async(&mut redis.connection())
            .await;
        if let Err(e) = published {
            let e = Error::from(e);
            tracing::warn!(error = %e, "relaying a server event to the fleet failed");
        }
    }
}

async fn receive_remote(
    redis: Redis,
    server: Server,
    channel: String,
    origin: String,
    pending: Arc<Mutex<VecDeque<ServerEvent>>>,
) {
    let mut pause = Duration::from_millis(100);
    let mut lost = false;
    loop {
        let subscribed = async {
            let mut pubsub = redis.pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, Error>(pubsub)
        };
        match subscribed.await {
            Ok(mut pubsub) => {
                pause = Duration::from_millis(100);
                if lost {
                    // Changes made while the subscription was down are unknown: say so.
                    for event in [
                        ServerEvent::ToolsListChanged,
                        ServerEvent::ResourcesListChanged,
                        ServerEvent::PromptsListChanged,
                    ] {
                        announce(&server, &pending, event);
                    }
                }
                let mut messages = pubsub.on_message();
                while let Some(message) = messages.next().await {
                    let payload = message.get_payload_bytes();
                    if payload.len() > MAX_MESSAGE {
                        continue;
                    }
                    let relayed = std::str::from_utf8(payload)
                        .map_err(Error::format)
                        .and_then(codec::decode::<Relayed>);
                    match relayed {
                        Ok(relayed) if relayed.origin != origin => {
                            announce(&server, &pending, relayed.event.into_event());
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::debug!(error = %e, "an unreadable fleet event was dropped")
                        }
                    }
                }
                tracing::warn!("the fleet event subscription was lost; resubscribing");
            }
            Err(e) => tracing::debug!(error = %e, "subscribing to the fleet's events failed"),
        }
        lost = true;
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// The fleet's `requestState` keys as kept in Redis (hex): the key that seals, the one that
/// will next (every instance already opens with it), and those retired (each opens for one
/// time to live after its retirement), newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyRing {
    current: String,
    upcoming: String,
    previous: Vec<RetiredKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetiredKey {
    key: String,
    /// When it stopped sealing, in milliseconds since the epoch.
    retired_ms: u64,
}

/// How many retired keys the ring keeps: with the upcoming key, as many as a sealer opens with
/// ([`MAX_OPENING_KEYS`](mcpl_server::request_state::MAX_OPENING_KEYS)).
const MAX_RETIRED: usize = mcpl_server::request_state::MAX_OPENING_KEYS - 1;

/// Replaces the ring `KEYS[1]` with `ARGV[2]` if it still is `ARGV[1]` (empty: absent).
const SWAP_RING: &str = r"
local now = redis.call('GET', KEYS[1])
if (now or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
";

/// 128 random bits, hex.
fn fresh_key() -> Result<String, Error> {
    let mut key = [0u8; 16];
    getrandom::fill(&mut key).map_err(|e| Error::new(crate::ErrorKind::Command, e))?;
    Ok(key.iter().map(|b| format!("{b:02x}")).collect())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

impl KeyRing {
    fn fresh() -> Result<KeyRing, Error> {
        Ok(KeyRing { current: fresh_key()?, upcoming: fresh_key()?, previous: Vec::new() })
    }

    /// The next ring: the upcoming key seals, the current one retires now, a fresh one comes.
    fn rotated(&self, now_ms: u64) -> Result<KeyRing, Error> {
        let mut previous = vec![RetiredKey { key: self.current.clone(), retired_ms: now_ms }];
        previous.extend(self.previous.iter().take(MAX_RETIRED - 1).cloned());
        Ok(KeyRing { current: self.upcoming.clone(), upcoming: fresh_key()?, previous })
    }

    fn sealer(&self) -> Result<StateSealer, Error> {
        let mut builder = StateSealer::builder(&self.current).upcoming_key(&self.upcoming);
        for retired in &self.previous {
            let at = std::time::UNIX_EPOCH + Duration::from_millis(retired.retired_ms);
            builder = builder.previous_key(&retired.key, at);
        }
        builder.build().map_err(Error::format)
    }
}

/// The ring in Redis (made by the first instance to ask), and its text as stored.
async fn load_ring(redis: &Redis) -> Result<(KeyRing, String), Error> {
    let name = redis.key(&["state-keys"]);
    let mut connection = redis.connection();
    let made = codec::encode(&KeyRing::fresh()?)?;
    let _: Option<String> =
        redis::cmd("SET").arg(&name).arg(&made).arg("NX").query_async(&mut connection).await?;
    let text: Option<String> = redis::cmd("GET").arg(&name).query_async(&mut connection).await?;
    let text = text.ok_or_else(|| Error::format("the fleet's state keys vanished"))?;
    Ok((codec::decode(&text)?, text))
}

/// The `requestState` sealer every instance of the fleet on `redis` shares, built
/// ([`StateSealer::builder`]) from the fleet's key ring in Redis, which the first instance to
/// ask makes (128 random bits a key): it seals with the current key, and opens with the
/// upcoming key and with each retired key for one time to live after its retirement. A state
/// sealed at one instance opens at any other. Whoever can read the fleet's Redis can forge
/// states: keep it private, or give every instance keys from your secret store with
/// [`StateSealer::builder`] instead.
///
/// An instance reads the ring when it calls this (as it starts); rotate the keys with
/// [`rotate_state_key`].
///
/// # Errors
///
/// Redis's failure, an unreadable ring, or no OS randomness.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let sealer = mcpl_redis::shared_state_sealer(&redis).await?;
/// let server = mcpl_server::Server::builder("s", "1").state_sealer(sealer).build();
/// # drop(server);
/// # Ok(()) }
/// ```
pub async fn shared_state_sealer(redis: &Redis) -> Result<StateSealer, Error> {
    load_ring(redis).await?.0.sealer()
}

/// Rotates the fleet's `requestState` keys (see [`shared_state_sealer`]): the upcoming key,
/// which every running instance already opens with, becomes the sealing key; the sealing key
/// retires now (it still opens for one time to live); a fresh key becomes the upcoming one.
/// Instances built from the ring before the rotation keep sealing with the retired key: restart
/// them (one by one) within one time to live of the rotation, after which what they seal no
/// longer opens at the restarted ones. The ring keeps the newest seven retired keys.
///
/// # Errors
///
/// Redis's failure, an unreadable ring, no OS randomness, or
/// [`ErrorKind::Command`](crate::ErrorKind::Command) when other rotations kept winning the race.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// mcpl_redis::rotate_state_key(&redis).await?;
/// // ... then restart the instances one by one.
/// # Ok(()) }
/// ```
pub async fn rotate_state_key(redis: &Redis) -> Result<(), Error> {
    let name = redis.key(&["state-keys"]);
    let swap = redis::Script::new(SWAP_RING);
    for _ in 0..8 {
        let (ring, text) = load_ring(redis).await?;
        let next = codec::encode(&ring.rotated(now_ms())?)?;
        let swapped: i64 =
            swap.key(&name).arg(&text).arg(next).invoke_async(&mut redis.connection()).await?;
        if swapped == 1 {
            tracing::info!("the fleet's requestState key was rotated");
            return Ok(());
        }
    }
    Err(Error::new(
        crate::ErrorKind::Command,
        "the state key ring kept changing during the rotation",
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn events_round_trip_on_the_wire() {
        for event in [
            ServerEvent::ToolsListChanged,
            ServerEvent::ResourcesListChanged,
            ServerEvent::PromptsListChanged,
            ServerEvent::ResourceUpdated { uri: "n://1".into() },
        ] {
            let wire = Wire::from_event(&event).unwrap();
            let text = serde_json::to_string(&wire).unwrap();
            assert_eq!(serde_json::from_str::<Wire>(&text).unwrap().into_event(), event);
        }
    }

    #[test]
    fn a_rotation_promotes_the_upcoming_key_and_keeps_seven_retired() {
        let mut ring = KeyRing::fresh().unwrap();
        let first = ring.clone();
        ring = ring.rotated(1_000).unwrap();
        assert_eq!(ring.current, first.upcoming);
        assert_eq!(ring.previous, [RetiredKey { key: first.current.clone(), retired_ms: 1_000 }]);
        assert_ne!(ring.upcoming, first.upcoming);
        for n in 0..10 {
            ring = ring.rotated(2_000 + n).unwrap();
        }
        assert_eq!(ring.previous.len(), MAX_RETIRED);
        assert_eq!(ring.previous[0].retired_ms, 2_009, "newest first");
        ring.sealer().unwrap();
    }

    #[test]
    fn a_state_sealed_before_a_rotation_opens_after_it_and_one_sealed_after_before_it() {
        use mcpl_server::request_state::Binding;
        let bind = Binding::new("tools/call", "t");
        let before = KeyRing::fresh().unwrap();
        let after = before.rotated(now_ms()).unwrap();
        let (old, new) = (before.sealer().unwrap(), after.sealer().unwrap());
        let sealed = old.seal(&serde_json::json!(1), &bind);
        assert_eq!(new.open(&sealed, &bind).unwrap(), 1, "the retired key opens");
        let sealed = new.seal(&serde_json::json!(2), &bind);
        assert_eq!(old.open(&sealed, &bind).unwrap(), 2, "the upcoming key opens");
        let later = after.rotated(now_ms()).unwrap().rotated(now_ms()).unwrap();
        assert!(
            later.sealer().unwrap().open(&sealed, &bind).is_ok(),
            "retired twice: still in its TTL"
        );
        assert!(KeyRing::fresh().unwrap().sealer().unwrap().open(&sealed, &bind).is_err());
    }

    #[test]
    fn an_event_relayed_here_is_recognized_once() {
        let pending = Mutex::new(VecDeque::from([ServerEvent::ToolsListChanged]));
        assert!(relayed_here(&pending, &ServerEvent::ToolsListChanged));
        assert!(!relayed_here(&pending, &ServerEvent::ToolsListChanged));
    }
}
