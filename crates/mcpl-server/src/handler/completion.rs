//! Completers: suggestions for prompt arguments and resource template variables
//! (`completion/complete`).

use std::collections::BTreeMap;
use std::future::Future;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::Completion;

use crate::context::Context;

/// The most values one completion answer carries.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::completion::MAX_VALUES, 100);
/// ```
pub const MAX_VALUES: usize = 100;

/// What is being completed.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Prompt, PromptArgument};
/// use mcpl_server::Server;
/// use mcpl_server::completion::{CompletionRequest, matching};
/// use mcpl_server::prompt::PromptOutput;
///
/// let mut prompt = Prompt::new("trip");
/// prompt.arguments = Some(vec![PromptArgument::new("country"), PromptArgument::new("city")]);
/// let server = Server::builder("s", "1")
///     .prompt(prompt, |_c, _a| async { Ok(PromptOutput::user_text("Plan a trip.")) })
///     .prompt_completer("trip", "city", |_ctx, req: CompletionRequest| async move {
///         // Suggest cities of the country the user already picked.
///         let cities: &[&str] = match req.context.get("country").map(String::as_str) {
///             Some("France") => &["Paris", "Lyon"],
///             _ => &["London", "Lisbon"],
///         };
///         Ok(matching(cities.iter().copied(), &req.value))
///     })
///     .try_build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionRequest {
    /// The name of the prompt argument or template variable.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values of other arguments the client already resolved (`context.arguments`).
    pub context: BTreeMap<String, String>,
}

/// What a completer returns: every suggestion (the server sends the first
/// [`MAX_VALUES`] and says how many there are), or a protocol error.
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::completion::{CompletionRequest, CompletionResult, matching};
///
/// async fn colors(_ctx: Context, req: CompletionRequest) -> CompletionResult {
///     Ok(matching(["red", "green", "blue"], &req.value))
/// }
/// # drop(colors);
/// ```
pub type CompletionResult = Result<Vec<String>, ErrorObject>;

/// Suggests values for one prompt argument or template variable.
///
/// Implemented for every `Fn(Context, CompletionRequest) -> impl Future<Output =
/// CompletionResult>`.
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::completion::{Completer, CompletionRequest, CompletionResult};
///
/// async fn none(_ctx: Context, _req: CompletionRequest) -> CompletionResult {
///     Ok(Vec::new())
/// }
/// fn assert_completer(_: &impl Completer) {}
/// assert_completer(&none);
/// ```
#[diagnostic::on_unimplemented(
    note = "completers are async fns taking (Context, CompletionRequest) and returning \
            CompletionResult"
)]
pub trait Completer: Send + Sync + 'static {
    /// Suggests values.
    fn complete(
        &self,
        ctx: Context,
        request: CompletionRequest,
    ) -> BoxFuture<'static, CompletionResult>;
}

impl<F, Fut> Completer for F
where
    F: Fn(Context, CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CompletionResult> + Send + 'static,
{
    fn complete(
        &self,
        ctx: Context,
        request: CompletionRequest,
    ) -> BoxFuture<'static, CompletionResult> {
        Box::pin(self(ctx, request))
    }
}

/// The candidates that start with `typed`, ignoring ASCII case, in their order.
///
/// ```
/// let values = mcpl_server::completion::matching(["python", "perl", "rust"], "p");
/// assert_eq!(values, ["python", "perl"]);
/// ```
pub fn matching<'a>(candidates: impl IntoIterator<Item = &'a str>, typed: &str) -> Vec<String> {
    let typed = typed.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| c.to_ascii_lowercase().starts_with(&typed))
        .map(str::to_owned)
        .collect()
}

/// The completion answering with `values`: at most [`MAX_VALUES`] of them, with the total and
/// whether more exist.
pub(crate) fn capped(mut values: Vec<String>) -> Completion {
    let total = values.len();
    let has_more = total > MAX_VALUES;
    values.truncate(MAX_VALUES);
    Completion::default()
        .with_values(values)
        .with_total(u64::try_from(total).unwrap_or(u64::MAX))
        .with_has_more(has_more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_capped_at_100() {
        let c = capped((0..150).map(|i| i.to_string()).collect());
        assert_eq!((c.values.len(), c.total, c.has_more), (100, Some(150), Some(true)));
        let c = capped(vec!["a".into()]);
        assert_eq!((c.values.len(), c.total, c.has_more), (1, Some(1), Some(false)));
    }
}
