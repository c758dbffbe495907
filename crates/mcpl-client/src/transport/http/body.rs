//! Reading response bodies within bounds: a whole JSON body up to the size limit, or the
//! start of an error body.

use std::time::Duration;

use futures::StreamExt;
use mcpl_core::error::HTTP_BODY_SNIPPET;

/// How long reading the start of an error response's body may take.
pub(super) const SNIPPET_WAIT: Duration = Duration::from_secs(5);

pub(super) enum ReadError {
    TooLarge,
    Http(reqwest::Error),
}

pub(super) async fn read_limited(
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, ReadError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadError::TooLarge);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(ReadError::Http)?;
        if body.len() + chunk.len() > max {
            return Err(ReadError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of `response`'s body, at most [`HTTP_BODY_SNIPPET`] bytes, read for at most
/// [`SNIPPET_WAIT`] (what arrived by then).
pub(super) async fn read_snippet(response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let read = async {
        while let Some(Ok(chunk)) = stream.next().await {
            let room = HTTP_BODY_SNIPPET - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= HTTP_BODY_SNIPPET {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(SNIPPET_WAIT, read).await;
    body
}
