//! What the instances of a fleet tell each other: the server's changes ([`FleetEvents`]), and
//! the key that seals `requestState` ([`shared_state_sealer`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use mcpl_server::state::StateSealer;
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

/// The `requestState` sealer every instance of the fleet on `redis` shares: its key is made
/// (128 random bits) by the first instance to ask and kept in Redis, so a state sealed at one
/// instance opens at any other. Whoever can read the fleet's Redis can forge states: keep it
/// private, or give every instance a key from your secret store with
/// [`StateSealer::new`] instead. Not rotated.
///
/// # Errors
///
/// Redis's failure, or no OS randomness.
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
    let mut key = [0u8; 16];
    getrandom::fill(&mut key).map_err(|e| Error::new(crate::ErrorKind::Command, e))?;
    let fresh: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let name = redis.key(&["state-key"]);
    let mut connection = redis.connection();
    let _: Option<String> =
        redis::cmd("SET").arg(&name).arg(&fresh).arg("NX").query_async(&mut connection).await?;
    let key: Option<String> = redis::cmd("GET").arg(&name).query_async(&mut connection).await?;
    let key = key.ok_or_else(|| Error::format("the fleet's state key vanished"))?;
    Ok(StateSealer::new(key))
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
    fn an_event_relayed_here_is_recognized_once() {
        let pending = Mutex::new(VecDeque::from([ServerEvent::ToolsListChanged]));
        assert!(relayed_here(&pending, &ServerEvent::ToolsListChanged));
        assert!(!relayed_here(&pending, &ServerEvent::ToolsListChanged));
    }
}
