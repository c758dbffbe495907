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
pub const DEFAULT_MAX_INPUT_ROUNDS: usize = 10;

/// What the client does with an input-required result.
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
    pub async fn fulfil_input(&self, result: &InputRequiredResult) -> Result<InputResponses> {
        let mut responses = InputResponses::new();
        for (key, request) in result.input_requests.iter().flatten() {
            let response = self.handlers.answer(request.clone()).await.map_err(Error::from_rpc)?;
            responses.insert(key.clone(), response);
        }
        Ok(responses)
    }

    /// Sends `M`, fulfilling input-required results as the mode says.
    pub(crate) async fn send_fulfilling<M, R>(
        &self,
        mut params: M::Params,
        options: RequestOptions,
    ) -> Result<Outcome<R>>
    where
        M: Method<Result = Outcome<R>>,
        M::Params: Retryable,
    {
        let mut rounds = 0;
        loop {
            // Each send takes a fresh JSON-RPC id from the engine, and goes through
            // `Client::send` (strict checks, the response cache: which stores neither an
            // input-required result nor the answer to a retry carrying input).
            let outcome = self.send::<M>(params.clone(), options.clone()).await?;
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
            params.set_input(responses, result.request_state);
            rounds += 1;
        }
    }
}
