//! The event streams: a request's SSE response (resumed with `Last-Event-ID` when it ends
//! early) and the standalone `GET` stream of a 2025 session (reopened with backoff, given up
//! after its retries; a server that cannot be reached then ends the connection).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcpl_core::Error;
use mcpl_core::jsonrpc::{Message, RequestId};
use reqwest::header::{ACCEPT, HeaderValue};
use reqwest::{Method, StatusCode};

use super::body::{ReadError, read_snippet};
use super::retry::backoff;
use super::shared::{LAST_EVENT_ID_HEADER, Shared, insert, lock, session_expired};
use super::sse::SseParser;
use crate::transport::failure;
use crate::transport::redirect::RedirectRefused;

/// How long opening the standalone stream may hold up the handshake.
pub(super) const STANDALONE_WAIT: Duration = Duration::from_secs(5);
/// A standalone stream that ends sooner than this without a single event counts as a failed
/// attempt (so a server that ends every stream at once is given up on).
pub(super) const SHORT_STREAM: Duration = Duration::from_secs(1);

/// How a request's stream ended.
pub(super) enum StreamEnd {
    /// The response arrived.
    Answered,
    /// The stream ended first; resume after the last event id.
    Ended {
        last_id: Option<String>,
        retry: Option<Duration>,
        /// Whether the stream carried any event (a message, or an event id).
        progressed: bool,
    },
}

impl Shared {
    /// Resumes a request's stream that ended before its response.
    pub(super) async fn resume(
        self: Arc<Self>,
        id: RequestId,
        initialize: bool,
        mut end: StreamEnd,
    ) {
        let mut attempts = 0;
        let mut last_error: Option<Error> = None;
        loop {
            let (last_id, retry) = match end {
                StreamEnd::Answered => return,
                StreamEnd::Ended { last_id: Some(last_id), retry, .. } => (last_id, retry),
                StreamEnd::Ended { last_id: None, .. } => {
                    let detail = "the response stream ended before the response, with no event \
                                  id to resume from"
                        .to_owned();
                    self.fail(&id, Error::ProtocolViolation { detail, source: None }).await;
                    return;
                }
            };
            if attempts >= self.max_resume {
                let gone =
                    last_error.as_ref().filter(|e| failure::unreachable(e)).map(failure::copy);
                let error = Error::Transport {
                    context: format!("the response stream ended and {attempts} resumptions failed"),
                    source: last_error.map(|e| Box::new(e) as mcpl_core::error::BoxError),
                };
                self.fail(&id, error).await;
                if let Some(gone) = gone {
                    self.end(gone).await;
                }
                return;
            }
            attempts += 1;
            tokio::time::sleep(backoff(retry, self.min_retry, 0)).await;
            let mut headers = self.session_headers();
            self.authorize(&mut headers, "GET");
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            insert(&mut headers, &LAST_EVENT_ID_HEADER, &last_id);
            let response = match self.request(Method::GET).headers(headers).send().await {
                Ok(r) => r,
                Err(e) => {
                    let error = self.failed(e);
                    if RedirectRefused::find(&error).is_some() {
                        self.fail(&id, error).await;
                        return;
                    }
                    tracing::debug!(error = %error, "resumption GET failed");
                    last_error = Some(error);
                    end = StreamEnd::Ended { last_id: Some(last_id), retry, progressed: false };
                    continue;
                }
            };
            let status = response.status();
            if status == StatusCode::NOT_FOUND && lock(&self.session).is_some() {
                // The stream belonged to a session the server forgot: renew the session for
                // later requests; this one's answer is lost with it.
                let stale = lock(&self.session).clone().unwrap_or_default();
                if self.renew(&stale).await {
                    let context = "the session expired while the response was pending".to_owned();
                    self.fail(&id, Error::Transport { context, source: None }).await;
                } else {
                    self.end(session_expired()).await;
                }
                return;
            }
            if !status.is_success() {
                let body = read_snippet(response).await;
                self.fail(&id, Error::http_status(status.as_u16(), &body, None)).await;
                return;
            }
            end = match self.read_sse(response, Some(&id), initialize).await {
                StreamEnd::Ended { last_id: new_id, retry: new_retry, progressed } => {
                    StreamEnd::Ended {
                        last_id: new_id.or(Some(last_id)),
                        retry: new_retry.or(retry),
                        progressed,
                    }
                }
                answered => answered,
            };
        }
    }

    /// Opens the standalone `GET` stream of a 2025 session.
    ///
    /// Returns once the server answered the first `GET` (or after [`STANDALONE_WAIT`]), so that
    /// what the server sends on the stream right after the handshake is not lost. Reading
    /// continues in the background: when the stream ends, it is reopened with `Last-Event-ID`
    /// after the server's `retry` (default 500 ms); failed attempts back off exponentially
    /// (capped at 30 s) and give up after `max_resume_attempts` in a row.
    pub(super) async fn open_standalone(shared: &Arc<Self>) {
        if !shared.standalone || lock(&shared.session).is_none() {
            return;
        }
        let first = tokio::time::timeout(STANDALONE_WAIT, shared.get_stream(None)).await.ok();
        let this = shared.clone();
        shared.spawn(async move { this.standalone_loop(first).await });
    }

    /// `GET` of the session's event stream, after `last_id` if given.
    pub(super) async fn get_stream(
        &self,
        last_id: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let mut headers = self.session_headers();
        self.authorize(&mut headers, "GET");
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(last) = last_id {
            insert(&mut headers, &LAST_EVENT_ID_HEADER, last);
        }
        self.request(Method::GET).headers(headers).send().await
    }

    pub(super) async fn standalone_loop(
        self: Arc<Self>,
        mut next: Option<reqwest::Result<reqwest::Response>>,
    ) {
        let mut last_id: Option<String> = None;
        let mut retry = None;
        let mut failures: u32 = 0;
        loop {
            let response = match next.take() {
                Some(response) => response,
                None => self.get_stream(last_id.as_deref()).await,
            };
            match response {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server offers no standalone stream");
                    return;
                }
                Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                    let stale = lock(&self.session).clone().unwrap_or_default();
                    if !self.renew(&stale).await {
                        self.end(session_expired()).await;
                        return;
                    }
                    // A new session: its stream starts afresh.
                    last_id = None;
                    continue;
                }
                Ok(r) if r.status() == StatusCode::CONFLICT => {
                    // A continued (resumed) session whose previous stream the server has not
                    // seen end yet: try again after the backoff, within the same bound.
                    failures += 1;
                    tracing::debug!(failures, "the standalone stream is still taken; retrying");
                    if failures > self.max_resume {
                        return;
                    }
                }
                Ok(r) if r.status().is_success() => {
                    let opened = tokio::time::Instant::now();
                    if let StreamEnd::Ended { last_id: l, retry: r, progressed } =
                        self.read_sse(r, None, false).await
                    {
                        last_id = l.or(last_id);
                        retry = r.or(retry);
                        if progressed || opened.elapsed() >= SHORT_STREAM {
                            failures = 0;
                        } else {
                            // Ended at once with nothing in it: an attempt that failed.
                            failures += 1;
                            tracing::debug!(failures, "the standalone stream ended empty");
                            if failures > self.max_resume {
                                return;
                            }
                        }
                    }
                }
                Ok(r) => {
                    tracing::debug!(status = %r.status(), "standalone stream refused");
                    return;
                }
                Err(e) if RedirectRefused::find(&e).is_some() => {
                    tracing::debug!(error = %e, "the standalone stream was redirected; not reopening");
                    return;
                }
                Err(e) => {
                    failures += 1;
                    let error = self.failed(e);
                    tracing::debug!(error = %error, failures, "standalone stream failed");
                    if failures > self.max_resume {
                        if failure::unreachable(&error) {
                            // The server is gone: so is the connection.
                            self.end(error).await;
                        }
                        return;
                    }
                }
            }
            tokio::time::sleep(backoff(retry, self.min_retry, failures)).await;
        }
    }

    /// Reads an SSE stream, delivering every message, until it ends or answers `id`.
    pub(super) async fn read_sse(
        &self,
        response: reqwest::Response,
        id: Option<&RequestId>,
        initialize: bool,
    ) -> StreamEnd {
        let mut parser = SseParser::new(self.max);
        let mut stream = response.bytes_stream();
        let mut delivered = false;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::debug!(error = %e, "SSE stream broke");
                    break;
                }
            };
            for event in parser.feed(&chunk) {
                let data = match event {
                    Ok(data) => data,
                    Err(ReadError::TooLarge) => {
                        if let Some(id) = id {
                            self.too_large(id).await;
                            return StreamEnd::Answered;
                        }
                        tracing::debug!(limit = self.max, "SSE event over the size limit; dropped");
                        continue;
                    }
                    Err(ReadError::Http(_)) => continue,
                };
                match Message::decode_str(&data) {
                    Ok(message) => {
                        let answers = id.is_some()
                            && matches!(&message, Message::Response(_) | Message::Error(_))
                            && message.id() == id;
                        if answers && initialize {
                            self.learn_version(&message);
                        }
                        delivered = true;
                        self.deliver(message).await;
                        if answers {
                            return StreamEnd::Answered;
                        }
                    }
                    Err(e) => {
                        let _ = self.inbox.send(Err(Error::InvalidMessage(Box::new(e)))).await;
                    }
                }
            }
        }
        let progressed = delivered || parser.last_id.is_some();
        StreamEnd::Ended { last_id: parser.last_id, retry: parser.retry, progressed }
    }
}
