//! Subscribing to one pub/sub channel of the fleet, through Redis outages.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::{Error, Redis, codec};

/// How many messages may wait for their reader; more are dropped.
const BUFFER: usize = 1024;

/// The messages published on `channel` (each a `T` in its format envelope), read by a task
/// of its own until the stream is dropped. The subscription is made again after a loss (what
/// was published meanwhile is lost); a message larger than `max_bytes`, unreadable, or past
/// a full buffer is dropped. `what` names the messages in logs.
pub(crate) fn subscribe<T: DeserializeOwned + Send + 'static>(
    redis: &Redis,
    channel: String,
    max_bytes: usize,
    what: &'static str,
) -> BoxStream<'static, T> {
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(receive(redis.clone(), channel, max_bytes, what, tx));
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|message| (message, rx))
    }))
}

async fn receive<T: DeserializeOwned>(
    redis: Redis,
    channel: String,
    max_bytes: usize,
    what: &'static str,
    tx: mpsc::Sender<T>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        let subscribed = async {
            let mut pubsub = redis.pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, Error>(pubsub)
        };
        let subscribed = tokio::select! {
            subscribed = subscribed => subscribed,
            () = tx.closed() => return,
        };
        if let Ok(mut pubsub) = redis.noted(what, subscribed) {
            pause = Duration::from_millis(100);
            let mut messages = pubsub.on_message();
            loop {
                let message = tokio::select! {
                    message = messages.next() => message,
                    () = tx.closed() => return,
                };
                let Some(message) = message else { break };
                let payload = message.get_payload_bytes();
                if payload.len() > max_bytes {
                    tracing::debug!(
                        what,
                        bytes = payload.len(),
                        "an oversized message was dropped"
                    );
                    continue;
                }
                let decoded = std::str::from_utf8(payload)
                    .map_err(Error::format)
                    .and_then(codec::decode::<T>);
                match decoded {
                    Ok(decoded) => {
                        if tx.try_send(decoded).is_err() {
                            tracing::debug!(what, "the reader fell behind; a message was dropped");
                        }
                    }
                    Err(e) => {
                        tracing::debug!(what, error = %e, "an unreadable message was dropped")
                    }
                }
            }
            tracing::warn!(what, "the subscription was lost; subscribing again");
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = tx.closed() => return,
        }
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}
