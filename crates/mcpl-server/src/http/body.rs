//! Reading a request body into one buffer, bounded in size and in time, whatever its chunking.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt as _;
use http_body_util::BodyExt;

/// The most reserved up front for a body whose length is not announced.
const UNANNOUNCED_RESERVE: usize = 16 * 1024;

/// Why a body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Over the limit (announced or sent).
    TooLarge,
    /// Not complete within the deadline.
    TimedOut,
    /// The connection failed, or the framing (such as chunked encoding) was malformed.
    Malformed,
}

/// Reads `body` into one contiguous buffer of at most `limit` bytes within `timeout`.
///
/// Every chunk is copied into the one buffer as it arrives and dropped, so a body sent in
/// many small reads costs its length, not a read buffer per chunk. The buffer is reserved by
/// the announced `Content-Length` (capped by `limit`); a body announcing more than `limit`
/// is refused before any of it is read.
pub(crate) async fn read<B: super::RequestBody>(
    body: B,
    limit: usize,
    timeout: Option<Duration>,
) -> Result<Bytes, BodyError> {
    let Some(timeout) = timeout else { return read_all(body, limit).await };
    // A body that came with its head is read on the first poll and needs no timer.
    let mut reading = std::pin::pin!(read_all(body, limit));
    if let Some(read) = reading.as_mut().now_or_never() {
        return read;
    }
    tokio::time::timeout(timeout, reading).await.unwrap_or(Err(BodyError::TimedOut))
}

async fn read_all<B: super::RequestBody>(mut body: B, limit: usize) -> Result<Bytes, BodyError> {
    let hint = body.size_hint();
    if usize::try_from(hint.lower()).map_or(true, |lower| lower > limit) {
        return Err(BodyError::TooLarge);
    }
    let announced = hint.exact().and_then(|n| usize::try_from(n).ok());
    // A body in one chunk (the usual case) is returned as it came; from a second chunk on,
    // each is copied into one buffer and dropped.
    let mut first: Option<Bytes> = None;
    let mut buffer: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            let e: axum::BoxError = e.into();
            tracing::debug!(error = %e, "request body failed");
            BodyError::Malformed
        })?;
        let Ok(data) = frame.into_data() else { continue };
        let had = buffer.as_ref().map_or(0, BytesMut::len) + first.as_ref().map_or(0, Bytes::len);
        if data.len() > limit - had {
            return Err(BodyError::TooLarge);
        }
        match (&mut buffer, first.take()) {
            (Some(buffer), _) => buffer.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(head)) => {
                let reserve = announced.unwrap_or(UNANNOUNCED_RESERVE).max(had + data.len());
                let mut joined = BytesMut::with_capacity(reserve.min(limit));
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&data);
                buffer = Some(joined);
            }
        }
    }
    Ok(match (buffer, first) {
        (Some(buffer), _) => buffer.freeze(),
        (None, Some(first)) => first,
        (None, None) => Bytes::new(),
    })
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;

    fn chunked(chunks: Vec<&'static [u8]>) -> Body {
        let stream = futures::stream::iter(
            chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
        );
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn reads_chunks_into_one_buffer_within_the_limit() {
        let body = read(chunked(vec![b"ab", b"c", b"", b"de"]), 5, None).await.unwrap();
        assert_eq!(&body[..], b"abcde");
        assert_eq!(read(chunked(vec![b"abc", b"def"]), 5, None).await, Err(BodyError::TooLarge));
        assert_eq!(read(Body::from("x".repeat(6)), 5, None).await, Err(BodyError::TooLarge));
        assert_eq!(&read(Body::empty(), 0, None).await.unwrap()[..], b"");
    }

    #[tokio::test]
    async fn a_body_failing_midway_is_malformed() {
        let stream = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(std::io::Error::other("reset")),
        ]);
        assert_eq!(read(Body::from_stream(stream), 10, None).await, Err(BodyError::Malformed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_ends_times_out() {
        let stream = futures::stream::pending::<Result<Bytes, std::io::Error>>();
        let outcome = read(Body::from_stream(stream), 10, Some(Duration::from_secs(1))).await;
        assert_eq!(outcome, Err(BodyError::TimedOut));
    }
}
