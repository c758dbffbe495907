//! Input-required results (2026-07-28): a `tools/call`, `prompts/get` or `resources/read` that
//! the server can only finish with input from the client.
//!
//! The server answers `resultType: "input_required"` with `inputRequests` (sampling,
//! elicitation or roots requests keyed by ids it picks) and maybe a `requestState`. In
//! [`InputRequiredMode::Auto`] (the default) the client answers every input request with its
//! registered [handlers](crate::handlers) and sends the request again, with a fresh JSON-RPC
//! id, the answers in `inputResponses` and the `requestState` echoed byte for byte (left out
//! when the server sent none), for at most `max_rounds` rounds. In
//! [`InputRequiredMode::Manual`] the call fails with [`Error::InputRequired`], carrying the
//! input-required result; the caller answers it (for example with
//! [`Client::fulfil_input`]) and retries with the params' `input_responses` and
//! `request_state` set.

use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{
    CallToolRequestParams, GetPromptRequestParams, InputRequiredResult, InputResponses, Method,
    Outcome, ReadResourceRequestParams,
};
use mcpl_core::{Error, Result};

use crate::Client;

/// The default cap on automatically fulfilled input-required rounds.
///
/// # Examples
///
/// ```
/// use mcpl_client::InputRequiredMode;
/// use mcpl_client::input::DEFAULT_MAX_INPUT_ROUNDS;
///
/// assert_eq!(DEFAULT_MAX_INPUT_ROUNDS, 10);
/// assert_eq!(
///     InputRequiredMode::default(),
///     InputRequiredMode::Auto { max_rounds: DEFAULT_MAX_INPUT_ROUNDS }
/// );
/// ```
pub const DEFAULT_MAX_INPUT_ROUNDS: usize = 10;

/// What the client does with an input-required result.
///
/// # Examples
///
/// A tool that needs two rounds of input, and a client that allows only one:
///
/// ```
/// use mcpl_client::{Client, InputRequiredMode};
/// use mcpl_core::types::{Root, Tool, ToolSchema};
/// use mcpl_core::{Error, ErrorKind};
/// use mcpl_server::input::ToolReply;
/// use mcpl_server::{Server, ToolOutput};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// let server = Server::builder("wizard", "1.0.0")
///     .tool(Tool::new("wizard", ToolSchema::object()), |ctx, _args| async move {
///         let step = ctx.request_state().and_then(|s| s["step"].as_u64()).unwrap_or(0);
///         if step >= 2 {
///             return Ok(ToolOutput::text("finished").into());
///         }
///         let ask = ctx.input_required().list_roots(format!("roots-{step}"));
///         Ok::<ToolReply, _>(ask.state(json!({"step": step + 1})).into())
///     })
///     .build();
/// # let (transport, theirs) = mcpl_core::transport::memory::pair();
/// # let _session = server.serve(theirs).await?;
///
/// let client = Client::builder("my-app", "1.0.0")
///     .on_roots(|| async { Ok(vec![Root::new("file:///work")]) })
///     .with_input_required(InputRequiredMode::Auto { max_rounds: 1 })
///     .build();
/// client.connect(transport).await?;
/// let err = client.call_tool("wizard", ()).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InputRequired);
/// let Error::InputRequired { rounds, .. } = err else { unreachable!() };
/// assert_eq!(rounds, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputRequiredMode {
    /// Answer the input requests with the registered handlers and retry, for at most
    /// `max_rounds` rounds; then fail with [`Error::InputRequired`].
    Auto {
        /// The most rounds fulfilled for one call.
        max_rounds: usize,
    },
    /// Hand the input-required result to the caller as [`Error::InputRequired`].
    Manual,
}

impl Default for InputRequiredMode {
    fn default() -> Self {
        InputRequiredMode::Auto { max_rounds: DEFAULT_MAX_INPUT_ROUNDS }
    }
}

/// Params of the requests that may answer input-required: they carry the answers and the
/// echoed state on the retry.
pub(crate) trait Retryable: Clone {
    fn set_input(&mut self, responses: Option<InputResponses>, state: Option<String>);
}

macro_rules! retryable {
    ($($ty:ty),+) => {$(
        impl Retryable for $ty {
            fn set_input(&mut self, responses: Option<InputResponses>, state: Option<String>) {
                self.input_responses = responses;
                self.request_state = state;
            }
        }
    )+};
}

retryable!(CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams);

impl Client {
    /// Sets what the client does with input-required results. Default:
    /// [`InputRequiredMode::Auto`] with 10 rounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, InputRequiredMode};
    /// use mcpl_core::Error;
    /// use mcpl_core::engine::RequestOptions;
    /// use mcpl_core::types::{CallToolRequestParams, ContentBlock, Root};
    /// # async fn dirs_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_server::input::ToolReply;
    /// #     let server = mcpl_server::Server::builder("dirs", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("project_dirs", mcpl_core::types::ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(roots) = ctx.roots_response("roots") else {
    /// #                 return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    /// #             };
    /// #             let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    /// #             Ok(mcpl_server::ToolOutput::text(uris.join(", ")).into())
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = dirs_server().await?;
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .on_roots(|| async { Ok(vec![Root::new("file:///src")]) })
    ///     .with_input_required(InputRequiredMode::Manual)
    ///     .build();
    /// client.connect(transport).await?;
    ///
    /// // The server needs input: the call hands it to us.
    /// let Err(Error::InputRequired { result, .. }) = client.call_tool("project_dirs", ()).await
    /// else {
    ///     panic!("expected an input-required result");
    /// };
    /// // Answer it (here with the registered handlers; a UI could ask the user instead) and retry.
    /// let mut retry = CallToolRequestParams::new("project_dirs");
    /// retry.input_responses = Some(client.fulfil_input(&result).await?);
    /// retry.request_state = result.request_state.clone();
    /// let done = client.call_tool_params(retry, RequestOptions::new()).await?;
    /// assert_eq!(done.content, [ContentBlock::text("file:///src")]);
    /// # Ok(()) }
    /// ```
    pub fn with_input_required(mut self, mode: InputRequiredMode) -> Client {
        self.input_mode = mode;
        self
    }

    /// Answers every input request of `result` with the registered handlers.
    ///
    /// # Errors
    ///
    /// `Rpc` with the handler's error, or method-not-found when no handler is registered for a
    /// request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, InputRequiredMode};
    /// use mcpl_core::Error;
    /// use mcpl_core::types::{InputResponse, Root};
    /// # async fn dirs_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_server::input::ToolReply;
    /// #     let server = mcpl_server::Server::builder("dirs", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("project_dirs", mcpl_core::types::ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(roots) = ctx.roots_response("roots") else {
    /// #                 return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    /// #             };
    /// #             let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    /// #             Ok(mcpl_server::ToolOutput::text(uris.join(", ")).into())
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = dirs_server().await?;
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .on_roots(|| async { Ok(vec![Root::new("file:///src")]) })
    ///     .with_input_required(InputRequiredMode::Manual)
    ///     .build();
    /// client.connect(transport).await?;
    /// let Err(Error::InputRequired { result, .. }) = client.call_tool("project_dirs", ()).await
    /// else {
    ///     panic!("expected an input-required result");
    /// };
    ///
    /// let responses = client.fulfil_input(&result).await?;
    /// // One answer per input request, under the server's key.
    /// let Some(InputResponse::ListRoots(roots)) = responses.get("roots") else { panic!("no roots") };
    /// assert_eq!(roots.roots[0].uri, "file:///src");
    /// # Ok(()) }
    /// ```
    pub async fn fulfil_input(&self, result: &InputRequiredResult) -> Result<InputResponses> {
        let mut responses = InputResponses::new();
        for (key, request) in result.input_requests.iter().flatten() {
            let response = self.handlers.answer(request.clone()).await.map_err(Error::from_rpc)?;
            responses.insert(key.clone(), response);
        }
        Ok(responses)
    }

    /// Sends `M`, fulfilling input-required results as the mode says; each send carries, in
    /// the stateless era, the per-request `_meta` (see [`Client::with_request_meta`]).
    pub(crate) async fn send_fulfilling<M, R>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<Outcome<R>>
    where
        M: Method<Result = Outcome<R>>,
        M::Params: Retryable + Clone,
        R: serde::de::DeserializeOwned,
    {
        // Copied only for a retry that carries input.
        let mut params = std::borrow::Cow::Borrowed(params);
        let mut rounds = 0;
        loop {
            // Each send takes a fresh JSON-RPC id from the engine, and goes through
            // `Client::send` (strict checks, the response cache: which stores neither an
            // input-required result nor the answer to a retry carrying input).
            let sent = self.with_request_meta(options.clone());
            let result = self.send_json_ref::<M>(&params, sent).await?;
            // Decoded straight from the text, without a tree in between.
            let outcome = Outcome::<R>::from_json(&result).map_err(|source| {
                Error::Serialization { what: format!("{} result", M::NAME), source }
            })?;
            let Outcome::InputRequired(result) = outcome else { return Ok(outcome) };
            let max_rounds = match self.input_mode {
                InputRequiredMode::Manual => 0,
                InputRequiredMode::Auto { max_rounds } => max_rounds,
            };
            if rounds >= max_rounds {
                return Err(Error::InputRequired { rounds, result: Box::new(result) });
            }
            let responses = self.fulfil_input(&result).await?;
            tracing::debug!(method = M::NAME, round = rounds + 1, "retrying with input");
            let responses = (!responses.is_empty()).then_some(responses);
            params.to_mut().set_input(responses, result.request_state);
            rounds += 1;
        }
    }
}
