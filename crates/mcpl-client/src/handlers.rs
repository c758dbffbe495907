//! Handlers for what a server asks of the client: sampling (`sampling/createMessage`),
//! elicitation (`elicitation/create`, form and URL modes) and roots (`roots/list`).
//!
//! One set of handlers serves both eras: in the stateful (2025) era the server sends these as
//! JSON-RPC requests, which the client answers; in the stateless (2026-07-28) era they arrive
//! inside an input-required result, and the client answers them and retries (see
//! [`InputRequiredMode`](crate::InputRequiredMode)). The client capabilities the client declares
//! (in `initialize`, or in every request's `_meta`) follow from which handlers are registered.
//!
//! ```
//! use mcpl_client::Client;
//! use mcpl_core::types::{
//!     CreateMessageResult, ElicitAction, ElicitResult, Role, Root, SamplingMessageContentBlock,
//!     TextContent,
//! };
//!
//! let client = Client::new("my-app", "1.0.0")
//!     .on_sampling(|params| async move {
//!         let reply = SamplingMessageContentBlock::Text(TextContent::new(
//!             format!("{} messages seen", params.messages.len()),
//!         ));
//!         Ok(CreateMessageResult::new(Role::Assistant, reply, "my-model"))
//!     })
//!     .on_elicitation(|_form| async move { Ok(ElicitResult::new(ElicitAction::Decline)) })
//!     .on_roots(|| async move { Ok(vec![Root::new("file:///home/me/project")]) });
//! assert!(client.capabilities().sampling.is_some());
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{
    ClientCapabilities, CreateMessage, CreateMessageRequestParams, CreateMessageResult, Elicit,
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams,
    ElicitResult, ElicitValue, ElicitationCapability, InputRequest, InputResponse, ListRoots,
    ListRootsResult, Outcome, Root, RootsCapability, SamplingCapability,
};
use serde_json::Value;

use crate::Client;

/// What a handler answers: its result, or a JSON-RPC error for the server.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::handlers::HandlerResult;
/// use mcpl_core::jsonrpc::ErrorObject;
/// use mcpl_core::types::Root;
///
/// // A named handler; an `Err` goes back to the server as a JSON-RPC error.
/// async fn workspace_roots() -> HandlerResult<Vec<Root>> {
///     let Ok(dir) = std::env::current_dir() else {
///         return Err(ErrorObject::internal("no working directory"));
///     };
///     Ok(vec![Root::new(format!("file://{}", dir.display()))])
/// }
///
/// let client = Client::new("my-app", "1.0.0").on_roots(workspace_roots);
/// assert!(client.capabilities().roots.is_some());
/// ```
pub type HandlerResult<T> = Result<T, ErrorObject>;

type Handler<P, R> = Arc<dyn Fn(P) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync>;
type RootsHandler = Arc<dyn Fn() -> BoxFuture<'static, HandlerResult<Vec<Root>>> + Send + Sync>;

/// The registered handlers of a client.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    sampling: Option<Handler<CreateMessageRequestParams, CreateMessageResult>>,
    form: Option<Handler<ElicitRequestFormParams, ElicitResult>>,
    url: Option<Handler<ElicitRequestURLParams, ElicitResult>>,
    roots: Option<RootsHandler>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation_form", &self.form.is_some())
            .field("elicitation_url", &self.url.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

fn missing(method: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("this client does not handle {method}"))
}

impl Handlers {
    /// `base` with the capabilities the registered handlers provide.
    pub(crate) fn declare(&self, base: &ClientCapabilities) -> ClientCapabilities {
        let mut caps = base.clone();
        if self.sampling.is_some() {
            caps.sampling.get_or_insert_with(SamplingCapability::default);
        }
        if self.form.is_some() || self.url.is_some() {
            let e = caps.elicitation.get_or_insert_with(ElicitationCapability::default);
            if self.form.is_some() {
                e.form.get_or_insert_with(Default::default);
            }
            if self.url.is_some() {
                e.url.get_or_insert_with(Default::default);
            }
        }
        if self.roots.is_some() {
            caps.roots.get_or_insert_with(RootsCapability::default);
        }
        caps
    }

    /// Answers `sampling/createMessage`.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> HandlerResult<CreateMessageResult> {
        match &self.sampling {
            Some(handler) => handler(params).await,
            None => Err(missing("sampling/createMessage")),
        }
    }

    /// Answers `elicitation/create`. An accepted form is completed with the schema's defaults
    /// for the fields the handler left out (SEP-1034).
    pub(crate) async fn elicit(&self, params: ElicitRequestParams) -> HandlerResult<ElicitResult> {
        match params {
            ElicitRequestParams::Form(form) => {
                let Some(handler) = &self.form else {
                    return Err(missing("elicitation/create (form mode)"));
                };
                let schema = serde_json::to_value(&form.requested_schema).unwrap_or(Value::Null);
                let mut result = handler(form).await?;
                if result.action == ElicitAction::Accept {
                    apply_defaults(&schema, &mut result);
                }
                Ok(result)
            }
            ElicitRequestParams::Url(url) => match &self.url {
                Some(handler) => handler(url).await,
                None => Err(missing("elicitation/create (URL mode)")),
            },
        }
    }

    /// Answers `roots/list`.
    pub(crate) async fn list_roots(&self) -> HandlerResult<ListRootsResult> {
        match &self.roots {
            Some(handler) => {
                Ok(ListRootsResult { roots: handler().await?, ..ListRootsResult::default() })
            }
            None => Err(missing("roots/list")),
        }
    }

    /// Answers one input request of an input-required result.
    pub(crate) async fn answer(&self, request: InputRequest) -> HandlerResult<InputResponse> {
        let invalid =
            |m: &str| ErrorObject::invalid_params(format!("{m} input request without params"));
        Ok(match request {
            InputRequest::CreateMessage(r) => InputResponse::CreateMessage(
                self.sample(r.params.ok_or_else(|| invalid("sampling/createMessage"))?).await?,
            ),
            InputRequest::Elicit(r) => InputResponse::Elicit(
                self.elicit(r.params.ok_or_else(|| invalid("elicitation/create"))?).await?,
            ),
            InputRequest::ListRoots(_) => InputResponse::ListRoots(self.list_roots().await?),
        })
    }
}

/// Fills the fields an accepted form left out with the schema's `default`s.
fn apply_defaults(schema: &Value, result: &mut ElicitResult) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    let content = result.content.get_or_insert_with(BTreeMap::new);
    for (name, field) in properties {
        if content.contains_key(name) {
            continue;
        }
        let default = field.get("default").cloned();
        if let Some(value) = default.and_then(|d| serde_json::from_value::<ElicitValue>(d).ok()) {
            content.insert(name.clone(), value);
        }
    }
}

impl Client {
    /// Answers `sampling/createMessage` with `handler` and declares the `sampling` capability.
    ///
    /// The handler runs for 2025-era requests from the server and for sampling requests in
    /// 2026-era input-required results. An `Err` goes back to the server as the JSON-RPC error
    /// (2025), or fails the call that needed the input (2026).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, CreateMessageRequestParams, CreateMessageResult, Role, SamplingContent,
    ///     SamplingMessage, SamplingMessageContentBlock, TextContent, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that asks the client's model a question.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("capital", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(answer) = ctx.sampling_response("ask") {
    ///             let SamplingContent::Single(SamplingMessageContentBlock::Text(said)) = &answer.content
    ///             else {
    ///                 return Ok(ToolOutput::error("not text").into());
    ///             };
    ///             return Ok(ToolOutput::text(format!("{} says {}", answer.model, said.text)).into());
    ///         }
    ///         let question = TextContent::new("Capital of France? One word.");
    ///         let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(question));
    ///         let params = CreateMessageRequestParams::new(vec![message], 20);
    ///         Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// // The client's "model": here a canned answer.
    /// let client = Client::new("my-app", "1.0.0").on_sampling(|params| async move {
    ///     assert_eq!(params.max_tokens, 20);
    ///     let reply = SamplingMessageContentBlock::Text(TextContent::new("Paris"));
    ///     Ok(CreateMessageResult::new(Role::Assistant, reply, "some-llm"))
    /// });
    /// client.connect(transport).await?;
    /// let result = client.call_tool("capital", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("some-llm says Paris")]);
    /// # Ok(()) }
    /// ```
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Client
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<CreateMessageResult>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |p| Box::pin(handler(p))));
        self.install_handlers();
        self
    }

    /// Answers form-mode `elicitation/create` with `handler` and declares `elicitation.form`.
    ///
    /// When the handler accepts, fields it left out of `content` are filled from the schema's
    /// `default` values.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue,
    ///     ElicitationSchema, StringSchema, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that asks the user for their name.
    /// let server = Server::builder("greeter", "1.0.0")
    ///     .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(ElicitValue::String(name)) = ctx.elicited("who").and_then(|c| c.get("name")) {
    ///             return Ok(ToolOutput::text(format!("Hello, {name}!")).into());
    ///         }
    ///         let form = ElicitationSchema::default()
    ///             .with_property("name", StringSchema::default())
    ///             .with_required("name");
    ///         let ask = ElicitRequestFormParams::new("What is your name?", form);
    ///         Ok::<ToolReply, _>(ctx.input_required().elicit("who", ask).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// // The client shows the form to its user; here the user types "Ada".
    /// let client = Client::new("my-app", "1.0.0").on_elicitation(|form| async move {
    ///     assert_eq!(form.message, "What is your name?");
    ///     let mut result = ElicitResult::new(ElicitAction::Accept);
    ///     result.content = Some(BTreeMap::from([("name".to_owned(), ElicitValue::String("Ada".into()))]));
    ///     Ok(result)
    /// });
    /// client.connect(transport).await?;
    /// let result = client.call_tool("greet", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("Hello, Ada!")]);
    /// # Ok(()) }
    /// ```
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Client
    where
        F: Fn(ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.form = Some(Arc::new(move |p| Box::pin(handler(p))));
        self.install_handlers();
        self
    }

    /// Answers URL-mode `elicitation/create` (send the user to a URL) with `handler` and
    /// declares `elicitation.url`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, ElicitAction, ElicitRequestURLParams, ElicitResult, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that sends the user to a sign-in page before it goes on.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("connect_account", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(answer) = ctx.elicitation_response("sign_in") {
    ///             return Ok(ToolOutput::text(format!("sign-in: {:?}", answer.action)).into());
    ///         }
    ///         let ask = ElicitRequestURLParams::new("Sign in to continue", "https://example.com/sign-in");
    ///         Ok::<ToolReply, _>(ctx.input_required().elicit("sign_in", ask).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("my-app", "1.0.0").on_url_elicitation(|request| async move {
    ///     // A real client opens `request.url` in a browser once the user agrees.
    ///     assert_eq!(request.url, "https://example.com/sign-in");
    ///     Ok(ElicitResult::new(ElicitAction::Accept))
    /// });
    /// assert!(client.capabilities().elicitation.and_then(|e| e.url).is_some());
    /// client.connect(transport).await?;
    /// let result = client.call_tool("connect_account", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("sign-in: Accept")]);
    /// # Ok(()) }
    /// ```
    pub fn on_url_elicitation<F, Fut>(mut self, handler: F) -> Client
    where
        F: Fn(ElicitRequestURLParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.url = Some(Arc::new(move |p| Box::pin(handler(p))));
        self.install_handlers();
        self
    }

    /// Answers `roots/list` with the roots `handler` returns and declares `roots`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{ContentBlock, Root, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that works on the directories the client shares.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("project_dirs", ToolSchema::object()), |ctx, _args| async move {
    ///         let Some(roots) = ctx.roots_response("roots") else {
    ///             return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    ///         };
    ///         let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    ///         Ok(ToolOutput::text(uris.join(", ")).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("my-app", "1.0.0").on_roots(|| async {
    ///     Ok(vec![Root::new("file:///src/api"), Root::new("file:///src/web")])
    /// });
    /// client.connect(transport).await?;
    /// let result = client.call_tool("project_dirs", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("file:///src/api, file:///src/web")]);
    /// # Ok(()) }
    /// ```
    pub fn on_roots<F, Fut>(mut self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Vec<Root>>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move || Box::pin(handler())));
        self.install_handlers();
        self
    }

    /// The capabilities this client declares: the base ones plus those its handlers provide.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{ElicitAction, ElicitResult};
    ///
    /// let plain = Client::new("my-app", "1.0.0");
    /// assert!(plain.capabilities().elicitation.is_none());
    ///
    /// let client = plain.on_elicitation(|_form| async { Ok(ElicitResult::new(ElicitAction::Decline)) });
    /// let caps = client.capabilities();
    /// let elicitation = caps.elicitation.expect("declared by the handler");
    /// assert!(elicitation.form.is_some());
    /// assert!(elicitation.url.is_none());
    /// assert!(caps.sampling.is_none() && caps.roots.is_none());
    /// ```
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = self.handlers.declare(&self.capabilities);
        if let Some(host) = &self.mcpl {
            if let Ok(advertisement) = serde_json::to_value(host.advertisement()) {
                caps.experimental
                    .get_or_insert_with(Default::default)
                    .insert(mcpl_core::mcpl::manifest::EXPERIMENTAL_KEY.to_owned(), advertisement);
            }
        }
        caps
    }

    /// Registers the current handlers with the engine, for 2025-era server requests.
    fn install_handlers(&self) {
        let h = self.handlers.clone();
        if h.sampling.is_some() {
            let h = h.clone();
            self.engine.on::<CreateMessage, _, _>(move |_ctx, params| {
                let h = h.clone();
                async move { h.sample(params).await.map(Outcome::Complete) }
            });
        }
        if h.form.is_some() || h.url.is_some() {
            let h = h.clone();
            self.engine.on::<Elicit, _, _>(move |_ctx, params| {
                let h = h.clone();
                async move { h.elicit(params).await.map(Outcome::Complete) }
            });
        }
        if h.roots.is_some() {
            self.engine.on::<ListRoots, _, _>(move |_ctx, _params| {
                let h = h.clone();
                async move { h.list_roots().await }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::types::{ElicitationSchema, NumberSchema, NumberType, StringSchema};
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn accepted_forms_get_schema_defaults_for_omitted_fields() {
        let handlers = Handlers {
            form: Some(Arc::new(|_p| {
                Box::pin(async {
                    let mut r = ElicitResult::new(ElicitAction::Accept);
                    r.content = Some(BTreeMap::from([(
                        "name".to_owned(),
                        ElicitValue::String("Ann".into()),
                    )]));
                    Ok(r)
                })
            })),
            ..Handlers::default()
        };
        let mut age = NumberSchema::new(NumberType::Integer);
        age.default = Some(30.0);
        let schema = ElicitationSchema::default()
            .with_property(
                "name",
                StringSchema { default: Some("John".into()), ..Default::default() },
            )
            .with_property("age", age)
            .with_property("nick", StringSchema::default());
        let params = ElicitRequestFormParams::new("who?", schema);
        let result = handlers.elicit(params.into()).await.unwrap();
        let content = serde_json::to_value(&result.content).unwrap();
        assert_eq!(content, json!({"name": "Ann", "age": 30}));
    }

    #[test]
    fn capabilities_follow_the_handlers() {
        let h = Handlers::default();
        assert_eq!(h.declare(&ClientCapabilities::default()), ClientCapabilities::default());
        let h = Handlers {
            url: Some(Arc::new(|_p| {
                Box::pin(async { Ok(ElicitResult::new(ElicitAction::Cancel)) })
            })),
            ..Handlers::default()
        };
        let caps = serde_json::to_value(h.declare(&ClientCapabilities::default())).unwrap();
        assert_eq!(caps, json!({"elicitation": {"url": {}}}));
    }
}
