//! Server-sent events framing, written by hand so that every frame is exactly what MCP needs:
//! each JSON message on a single `data:` line, and a priming event with an id and an *empty*
//! `data:` field (which a generic SSE writer drops, leaving clients nothing to resume from).

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::event_store::EventPosition;

/// One SSE event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    id: Option<EventPosition>,
    retry: Option<Duration>,
    data: Bytes,
}

impl SseEvent {
    /// Sets the event id (`<stream>-<seq>`).
    pub(crate) fn id(mut self, id: EventPosition) -> Self {
        self.id = Some(id);
        self
    }

    /// Sets the reconnection delay advised to the client.
    pub(crate) fn retry(mut self, delay: Duration) -> Self {
        self.retry = Some(delay);
        self
    }

    /// Sets the data (UTF-8 text; JSON here); may be empty. Shared, not copied.
    pub(crate) fn data(mut self, data: impl Into<Bytes>) -> Self {
        self.data = data.into();
        self
    }

    /// The wire form: `id:`, `retry:`, one `data:` line per line of data (at least one), and
    /// the blank line that ends the event.
    pub(crate) fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.data.len() + 64);
        self.encode_into(&mut out);
        Bytes::from(out)
    }

    /// Appends the wire form (see [`encode`](Self::encode)) to `out`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        if let Some(id) = self.id {
            out.extend_from_slice(b"id: ");
            push_decimal(out, id.stream);
            out.push(b'-');
            push_decimal(out, id.seq);
            out.push(b'\n');
        }
        if let Some(retry) = self.retry {
            out.extend_from_slice(b"retry: ");
            push_decimal(out, u64::try_from(retry.as_millis()).unwrap_or(u64::MAX));
            out.push(b'\n');
        }
        // One `data:` line per line (`\n`, or `\r\n`), found with `memchr`: the data is
        // scanned a vector at a time, not byte by byte.
        let mut rest = &self.data[..];
        loop {
            let (line, next) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], Some(&rest[at + 1..])),
                None => (rest, None),
            };
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
            out.push(b'\n');
            match next {
                Some(next) => rest = next,
                None => break,
            }
        }
        out.push(b'\n');
    }
}

/// Writes `n` in decimal (what `format!` would, without its machinery: every event's id).
fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

const KEEP_ALIVE_FRAME: &[u8] = b": keep-alive\n\n";

type EventStream = Pin<Box<dyn Stream<Item = Result<SseEvent, Infallible>> + Send>>;

/// When a stream ends early because the server shuts down: once `stop` resolves, a last
/// frame advises the client to reconnect after `retry`, and the stream ends.
pub(crate) struct Stop {
    pub(crate) stop: Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    pub(crate) retry: Duration,
}

/// An SSE response whose events were all ready when it started (a request answered at once):
/// `frame`, their wire form, in one piece; then `after` (forgetting the stored events) runs
/// once the connection has taken the frame, before the body ends. No stream adapters, no
/// keep-alive timer, no shutdown watch: there is nothing left to wait for.
pub(crate) fn response_complete(
    frame: Bytes,
    after: Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) -> Response {
    sse_response(Body::new(Complete { frame: Some(frame), after: Some(after) }))
}

/// The body of [`response_complete`]. Its length is not announced: the connection polls it
/// once more after the frame (a body of known length would be dropped as soon as it was all
/// written), which runs `after`.
struct Complete {
    frame: Option<Bytes>,
    after: Option<Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl hyper::body::Body for Complete {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        if let Some(frame) = self.frame.take() {
            return std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(frame))));
        }
        if let Some(after) = self.after.as_mut() {
            std::task::ready!(after.as_mut().poll(cx));
            self.after = None;
        }
        std::task::Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.frame.is_none() && self.after.is_none()
    }
}

/// An SSE response streaming `events`, with a keep-alive comment after every `keep_alive` of
/// silence. The response ends when `events` ends, or early by `stop` (see [`Stop`]).
pub(crate) fn response_until<S>(events: S, keep_alive: Duration, stop: Option<Stop>) -> Response
where
    S: Stream<Item = Result<SseEvent, Infallible>> + Send + 'static,
{
    let events: EventStream = Box::pin(events);
    let period = keep_alive.max(Duration::from_millis(10));
    let frames = futures::stream::unfold(Some((events, stop)), move |state| async move {
        let (mut events, mut stop) = state?;
        let stopping = async {
            match &mut stop {
                Some(stop) => (&mut stop.stop).await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            biased;
            () = stopping => {
                let retry = stop.as_ref().map_or(0, |s| s.retry.as_millis());
                return Some((Ok(Bytes::from(format!("retry: {retry}\n\n"))), None));
            }
            next = tokio::time::timeout(period, events.next()) => next,
        };
        match next {
            Ok(Some(Ok(event))) => {
                Some((Ok::<_, Infallible>(event.encode()), Some((events, stop))))
            }
            Ok(Some(Err(never))) => match never {},
            Ok(None) => None,
            Err(_) => Some((Ok(Bytes::from_static(KEEP_ALIVE_FRAME)), Some((events, stop)))),
        }
    });
    sse_response(Body::from_stream(frames.map(|f| f.map_err(|e| match e {}))))
}

/// A `200` response with `body` and the headers of an SSE stream.
fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priming_event_has_an_empty_data_line() {
        let at = EventPosition { stream: 3, seq: 0 };
        let e = SseEvent::default().id(at).retry(Duration::from_secs(1)).data("");
        assert_eq!(e.encode(), Bytes::from_static(b"id: 3-0\nretry: 1000\ndata: \n\n"));
    }

    #[test]
    fn json_stays_on_one_line_and_multiline_data_is_split() {
        let at = EventPosition { stream: 1, seq: 1 };
        let e = SseEvent::default().id(at).data(r#"{"a":1}"#);
        assert_eq!(e.encode(), Bytes::from_static(b"id: 1-1\ndata: {\"a\":1}\n\n"));
        let e = SseEvent::default().data("x\r\ny");
        assert_eq!(e.encode(), Bytes::from_static(b"data: x\ndata: y\n\n"));
        let at = EventPosition { stream: u64::MAX, seq: 10 };
        let e = SseEvent::default().id(at).data(String::from("a\n\nb"));
        assert_eq!(
            e.encode(),
            Bytes::from_static(b"id: 18446744073709551615-10\ndata: a\ndata: \ndata: b\n\n")
        );
        let e = SseEvent::default().data(String::from("a\n\nb"));
        assert_eq!(e.encode(), Bytes::from_static(b"data: a\ndata: \ndata: b\n\n"));
        let e = SseEvent::default().data("a\n");
        assert_eq!(e.encode(), Bytes::from_static(b"data: a\ndata: \n\n"));
    }

    proptest::proptest! {
        /// Every line of the data (split at `\n`, a `\r` before it dropped) is one `data:`
        /// line, in order, whatever the data.
        #[test]
        fn data_lines_are_the_lines_of_the_data(data in proptest::collection::vec(
            proptest::sample::select(vec![b'a', b'\n', b'\r', b' ', b'{']), 0..64)
        ) {
            let mut expected = Vec::new();
            for line in data.split(|&b| b == b'\n') {
                expected.extend_from_slice(b"data: ");
                expected.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
                expected.push(b'\n');
            }
            expected.push(b'\n');
            let encoded = SseEvent::default().data(data).encode();
            proptest::prop_assert_eq!(&encoded[..], &expected[..]);
        }
    }
}
