//! Renewing a 2025 session the server forgot: the `initialize` request replayed, the new
//! session adopted, and the client told with [`TransportEvent::SessionRenewed`].

use std::sync::atomic::Ordering;

use futures::StreamExt;
use mcpl_core::jsonrpc::{Message, RequestId};
use mcpl_core::transport::{Incoming, TransportEvent};
use mcpl_core::types::{InitializeResult, names};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use super::SESSION_ID;
use super::body::read_limited;
use super::shared::{Shared, lock};
use super::sse::SseParser;

impl Shared {
    /// Renews the session `stale` that the server no longer knows (HTTP 404): replays the
    /// `initialize` request, adopts the new session id, sends `notifications/initialized` and
    /// hands the new `initialize` result to the engine as [`TransportEvent::SessionRenewed`]
    /// (a peer cannot forge it). Concurrent callers renew once. Returns whether a session is
    /// live.
    pub(super) async fn renew(&self, stale: &str) -> bool {
        let _renewing = self.renewing.lock().await;
        if let Some(current) = lock(&self.session).clone()
            && current != stale
        {
            return true;
        }
        let Some(hello) = lock(&self.hello).clone() else { return false };
        let n = self.renewals.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(renewal = n, "the server forgot the session; initializing again");
        match self.reinitialize(&hello, n).await {
            Ok((session, result)) => {
                let version = Some(result.protocol_version.as_str());
                // The owner's handle follows, so that a snapshot taken from now on holds the
                // new session, not the one the server forgot.
                self.handle.set(&session, version);
                *lock(&self.session) = Some(session);
                if let Some(v) = version {
                    *lock(&self.version) = Some(v.to_owned());
                }
                let mut headers = self.session_headers();
                self.authorize(&mut headers, "POST");
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let initialized =
                    json!({"jsonrpc": "2.0", "method": names::NOTIFICATIONS_INITIALIZED});
                let sent = self
                    .request(reqwest::Method::POST)
                    .headers(headers)
                    .body(initialized.to_string())
                    .send()
                    .await;
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "notifications/initialized after renewal failed");
                }
                let renewed = TransportEvent::SessionRenewed(Box::new(result));
                let _ = self.inbox.send(Ok(Incoming::Event(renewed))).await;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "renewing the session failed");
                *lock(&self.session) = None;
                self.handle.clear();
                false
            }
        }
    }

    /// Sends `hello` (an `initialize` request) under a fresh id; returns the new session id
    /// and the result.
    pub(super) async fn reinitialize(
        &self,
        hello: &[u8],
        n: u64,
    ) -> std::result::Result<(String, InitializeResult), String> {
        let mut request: Value = serde_json::from_slice(hello).map_err(|e| e.to_string())?;
        let id = format!("mcpl-renew-{n}");
        request["id"] = json!(id);
        let mut headers = self.base_headers();
        self.authorize(&mut headers, "POST");
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = self
            .request(reqwest::Method::POST)
            .headers(headers)
            .body(request.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("initialize got HTTP {status}"));
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or("the server assigned no session")?;
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        let id = RequestId::String(id);
        let answer = if sse {
            let mut parser = SseParser::new(self.max);
            let mut stream = response.bytes_stream();
            let mut found = None;
            'read: while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| e.to_string())?;
                for event in parser.feed(&chunk) {
                    let Ok(data) = event else { continue };
                    match Message::decode_str(&data) {
                        Ok(m) if m.id() == Some(&id) => {
                            found = Some(m);
                            break 'read;
                        }
                        Ok(other) => self.deliver(other).await,
                        Err(_) => {}
                    }
                }
            }
            found.ok_or("the initialize stream ended without a result")?
        } else {
            let body = read_limited(response, self.max).await.map_err(|_| "unreadable body")?;
            Message::decode(&body).map_err(|e| e.to_string())?
        };
        match answer {
            Message::Response(r) => {
                let result = r.result.decode().map_err(|e| e.to_string())?;
                Ok((session, result))
            }
            Message::Error(e) => Err(format!("initialize failed: {}", e.error.message)),
            _ => Err("initialize got no response".to_owned()),
        }
    }
}
