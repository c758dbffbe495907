//! A handler's panic answered as `-32603`, for the paths that run a handler themselves.

use std::borrow::Cow;
use std::future::Future;

use futures::FutureExt as _;
use mcpl_core::jsonrpc::ErrorObject;

/// Runs a handler's future, answering a panic with `-32603` and logging it once (at ERROR, with
/// what it panicked with: a panic is a bug of the server, not of the client). The engine does
/// the same for the handlers it spawns; this serves the paths that run a handler themselves
/// (stateless HTTP, tasks).
///
/// Not an `async fn`: one would hold `handler` twice in its state (as its argument, and again
/// as the future it awaits), doubling what every request's future weighs and copies.
pub(crate) fn unwinding<T, F>(
    method: impl Into<Cow<'static, str>>,
    handler: F,
) -> impl Future<Output = Result<T, ErrorObject>>
where
    F: Future<Output = Result<T, ErrorObject>>,
{
    let method = method.into();
    std::panic::AssertUnwindSafe(handler).catch_unwind().map(move |caught| match caught {
        Ok(outcome) => outcome,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a value that is not a string");
            tracing::error!(method = &*method, panic = what, "request handler panicked");
            Err(ErrorObject::internal("the request handler panicked"))
        }
    })
}
