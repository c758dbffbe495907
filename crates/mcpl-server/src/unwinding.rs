//! A handler's panic answered as `-32603`, for the paths that run a handler themselves.

use std::borrow::Cow;
use std::future::Future;

use futures::FutureExt as _;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::names;

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

/// `method` as [`unwinding`] names it: the methods whose handlers a server registers are
/// borrowed (no copy of the name for every request), any other is copied.
pub(crate) fn method_name(method: &str) -> Cow<'static, str> {
    match method {
        names::TOOLS_CALL => Cow::Borrowed(names::TOOLS_CALL),
        names::RESOURCES_READ => Cow::Borrowed(names::RESOURCES_READ),
        names::PROMPTS_GET => Cow::Borrowed(names::PROMPTS_GET),
        other => Cow::Owned(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_methods_are_borrowed_and_others_copied() {
        for method in [names::TOOLS_CALL, names::RESOURCES_READ, names::PROMPTS_GET] {
            assert!(matches!(method_name(method), Cow::Borrowed(m) if m == method));
        }
        assert!(matches!(method_name("x/y"), Cow::Owned(m) if m == "x/y"));
    }
}
