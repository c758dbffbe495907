//! Asking the client for input: one handler API for both eras.
//!
//! A handler of `tools/call`, `prompts/get` or `resources/read` may answer "input required"
//! instead of its result: it builds an [`InputRequired`] with [`Context::input_required`]
//! (elicitation, sampling or roots requests, keyed by names it picks, plus an optional sealed
//! state) and returns it as its [`Reply`]. The server then gets the answers and calls the
//! handler again, which reads them from its [`Context`] ([`Context::elicited`],
//! [`Context::sampling_response`], [`Context::roots_response`], [`Context::request_state`]):
//!
//! - **2026-07-28** (stateless HTTP): the reply goes to the client as an input-required result
//!   (`resultType: "input_required"`, `inputRequests`, `requestState`); the client retries the
//!   request with `inputResponses` and the `requestState` echoed.
//! - **Up to 2025-11-25** (stdio, 2025 HTTP sessions): the server sends each input request to
//!   the client as a real JSON-RPC request (`elicitation/create`, `sampling/createMessage`,
//!   `roots/list`), collects the answers and calls the handler again at once, for at most
//!   [`MAX_INPUT_ROUNDS`] rounds. A client error answers the request with that error.
//!
//! Requests the client did not declare the capability for are left out (see
//! [`InputRequired::elicit`]); a handler that can do without checks
//! [`Context::supports_elicitation`] and friends first and degrades. An input-required reply
//! whose every request was left out answers `-32021` (missing required client capability,
//! naming what is missing in `data.requiredCapabilities`).
//!
//! ```
//! use mcpl_core::jsonrpc::ErrorObject;
//! use mcpl_core::types::{ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema};
//! use mcpl_server::input::ToolReply;
//! use mcpl_server::tool::Arguments;
//! use mcpl_server::{Context, Server, ToolOutput};
//!
//! async fn greet(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
//!     if let Some(name) = ctx.elicited("user_name").and_then(|c| c.get("name")) {
//!         return Ok(ToolOutput::text(format!("Hello, {name:?}!")).into());
//!     }
//!     let form = ElicitationSchema::default()
//!         .with_property("name", StringSchema::default())
//!         .with_required("name");
//!     let ask = ElicitRequestFormParams::new("What is your name?", form);
//!     Ok(ctx.input_required().elicit("user_name", ask).into())
//! }
//!
//! let server = Server::builder("greeter", "1.0.0")
//!     .tool(Tool::new("greet", ToolSchema::object()), greet)
//!     .build();
//! # drop(server);
//! ```

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::Either;
use mcpl_core::engine::RequestOptions;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{
    CallToolResult, ClientCapabilities, CreateMessage, CreateMessageRequestParams, Elicit,
    ElicitInputRequest, ElicitRequestParams, GetPromptResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponse, InputResponses, ListRoots, ListRootsInputRequest, Outcome,
    ResourceContents, SamplingInputRequest,
};
use mcpl_core::{Era, ProtocolVersion};
use serde_json::{Map, Value, json};

use crate::context::Context;
use crate::request_state::{Binding, RequestStateError, StateSealer};

/// The most times a handler is called again with answers fetched from a client of the
/// stateful era before the request fails (`-32603`).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::input::MAX_INPUT_ROUNDS, 10);
/// ```
pub const MAX_INPUT_ROUNDS: usize = 10;

/// What a handler that may ask for input returns: its result, or [`InputRequired`].
///
/// Any result converts into it with `.into()`, and so does an [`InputRequired`] (for the
/// result types of `tools/call`, `prompts/get` and `resources/read`).
///
/// # Examples
///
/// ```
/// use mcpl_server::ToolOutput;
/// use mcpl_server::input::{Reply, ToolReply};
///
/// let done: ToolReply = ToolOutput::text("ok").into();
/// assert!(done.is_complete());
/// let text = done.map(|r| r.content.len()).complete();
/// assert_eq!(text, Some(1));
/// ```
#[derive(Debug)]
pub enum Reply<T> {
    /// The request is done.
    Complete(T),
    /// The handler needs answers from the client first.
    InputRequired(InputRequired),
}

/// What a tool handler may reply.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::input::ToolReply;
/// use mcpl_server::{Server, ToolOutput};
///
/// let server = Server::builder("s", "1")
///     .tool(Tool::new("roots", ToolSchema::object()), |ctx, _args| async move {
///         match ctx.roots_response("roots") {
///             Some(roots) => Ok(ToolOutput::text(format!("{} roots", roots.roots.len())).into()),
///             None => Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into()),
///         }
///     })
///     .build();
/// # drop(server);
/// ```
pub type ToolReply = Reply<CallToolResult>;
/// What a prompt handler may reply.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::Prompt;
/// use mcpl_server::Server;
/// use mcpl_server::input::PromptReply;
/// use mcpl_server::prompt::PromptOutput;
///
/// let server = Server::builder("s", "1")
///     .prompt(Prompt::new("project"), |ctx, _args| async move {
///         match ctx.roots_response("roots") {
///             Some(r) => Ok(PromptOutput::user_text(format!("Work in {:?}", r.roots.first().map(|r| &r.uri))).into()),
///             None => Ok::<PromptReply, _>(ctx.input_required().list_roots("roots").into()),
///         }
///     })
///     .build();
/// # drop(server);
/// ```
pub type PromptReply = Reply<GetPromptResult>;
/// What a resource handler may reply.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::Resource;
/// use mcpl_server::Server;
/// use mcpl_server::input::ReadReply;
/// use mcpl_server::resource::ResourceOutput;
///
/// let server = Server::builder("s", "1")
///     .resource(Resource::new("mem://workspace", "workspace"), |ctx, req| async move {
///         match ctx.roots_response("roots") {
///             Some(r) => Ok(vec![ResourceOutput::text(req.uri, format!("{} roots", r.roots.len()))].into()),
///             None => Ok::<ReadReply, _>(ctx.input_required().list_roots("roots").into()),
///         }
///     })
///     .build();
/// # drop(server);
/// ```
pub type ReadReply = Reply<Vec<ResourceContents>>;

impl<T> Reply<T> {
    /// Whether the reply is the finished result.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::ToolOutput;
    /// use mcpl_server::input::ToolReply;
    ///
    /// assert!(ToolReply::from(ToolOutput::text("x")).is_complete());
    /// ```
    pub fn is_complete(&self) -> bool {
        matches!(self, Reply::Complete(_))
    }

    /// The finished result, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::ToolOutput;
    /// use mcpl_server::input::ToolReply;
    ///
    /// let result = ToolReply::from(ToolOutput::text("x")).complete().unwrap();
    /// assert_eq!(result.content.len(), 1);
    /// ```
    pub fn complete(self) -> Option<T> {
        match self {
            Reply::Complete(t) => Some(t),
            Reply::InputRequired(_) => None,
        }
    }

    /// Maps the finished result.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::input::Reply;
    ///
    /// let reply: Reply<u32> = Reply::Complete(2);
    /// assert_eq!(reply.map(|n| n * 10).complete(), Some(20));
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Reply<U> {
        match self {
            Reply::Complete(t) => Reply::Complete(f(t)),
            Reply::InputRequired(i) => Reply::InputRequired(i),
        }
    }
}

impl<T> From<T> for Reply<T> {
    fn from(t: T) -> Self {
        Reply::Complete(t)
    }
}

impl From<InputRequired> for ToolReply {
    fn from(i: InputRequired) -> Self {
        Reply::InputRequired(i)
    }
}

impl From<InputRequired> for PromptReply {
    fn from(i: InputRequired) -> Self {
        Reply::InputRequired(i)
    }
}

impl From<InputRequired> for ReadReply {
    fn from(i: InputRequired) -> Self {
        Reply::InputRequired(i)
    }
}

/// An input-required reply under construction: the requests for the client, and the state to
/// get back with the answers. Made by [`Context::input_required`].
///
/// Each request is checked against the capabilities the client declared (per request in
/// 2026-07-28, at `initialize` before): one the client cannot serve is left out, and noted
/// so that a reply whose every request was left out answers `-32021` naming what was
/// missing. A reply with no request but a [`state`](Self::state) asks the client to retry
/// with that state.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema};
/// use mcpl_server::input::ToolReply;
/// use mcpl_server::{Server, ToolOutput};
/// use serde_json::json;
///
/// let server = Server::builder("s", "1")
///     .tool(Tool::new("deploy", ToolSchema::object()), |ctx, _args| async move {
///         if let Some(fields) = ctx.elicited("confirm") {
///             let target = ctx.request_state().and_then(|s| s["target"].as_str()).unwrap_or("?");
///             return Ok(ToolOutput::text(format!("deployed to {target}: {fields:?}")).into());
///         }
///         let form = ElicitationSchema::default().with_property("reason", StringSchema::default());
///         let reply = ctx
///             .input_required()
///             .elicit("confirm", ElicitRequestFormParams::new("Deploy to production?", form))
///             .state(json!({"target": "production"}));
///         Ok::<ToolReply, _>(reply.into())
///     })
///     .build();
/// # drop(server);
/// ```
#[derive(Debug)]
#[must_use]
pub struct InputRequired(Box<Pending>);

#[derive(Debug)]
struct Pending {
    requests: InputRequests,
    state: Option<String>,
    state_error: Option<ErrorObject>,
    missing: Map<String, Value>,
    capabilities: Option<ClientCapabilities>,
    sealing: Option<(StateSealer, Binding)>,
}

impl InputRequired {
    pub(crate) fn new(
        capabilities: Option<ClientCapabilities>,
        sealing: Option<(StateSealer, Binding)>,
    ) -> Self {
        InputRequired(Box::new(Pending {
            requests: InputRequests::new(),
            state: None,
            state_error: None,
            missing: Map::new(),
            capabilities,
            sealing,
        }))
    }

    /// Asks the user, through the client, to fill in a form or visit a URL
    /// (`elicitation/create`); read the answer with [`Context::elicitation_response`] or
    /// [`Context::elicited`] under `key`.
    ///
    /// Left out unless the client declared `elicitation` (form mode: an empty object or
    /// `form`; URL mode: `url`).
    ///
    /// # Examples
    ///
    /// A tool that asks the user which environment to deploy to:
    ///
    /// ```
    /// use mcpl_core::types::{ElicitRequestFormParams, ElicitValue, ElicitationSchema, StringSchema, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("deploy", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(ElicitValue::String(env)) = ctx.elicited("target").and_then(|f| f.get("env")) {
    ///             return Ok(ToolOutput::text(format!("deploying to {env}")).into());
    ///         }
    ///         let form = ElicitationSchema::default()
    ///             .with_property("env", StringSchema::default())
    ///             .with_required("env");
    ///         let ask = ElicitRequestFormParams::new("Deploy to which environment?", form);
    ///         Ok::<ToolReply, _>(ctx.input_required().elicit("target", ask).into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("elicitation/create", |_ctx, _params| async {
    ///     // The user picked "staging" in the form the client showed.
    ///     Ok(json!({"action": "accept", "content": {"env": "staging"}}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "deploy", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "deploying to staging");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn elicit(
        mut self,
        key: impl Into<String>,
        params: impl Into<ElicitRequestParams>,
    ) -> Self {
        let params = params.into();
        let url = matches!(params, ElicitRequestParams::Url(_));
        if supports_elicitation(self.0.capabilities.as_ref(), url) {
            let request = ElicitInputRequest::new(params);
            self.0.requests.insert(key.into(), InputRequest::Elicit(request));
        } else {
            let needed = if url { json!({"url": {}}) } else { json!({}) };
            self.0.missing.insert("elicitation".into(), needed);
        }
        self
    }

    /// Asks the client to sample its model (`sampling/createMessage`); read the answer with
    /// [`Context::sampling_response`] under `key`.
    ///
    /// Left out unless the client declared `sampling` (and `sampling.tools` when `params`
    /// has tools or a tool choice).
    ///
    /// # Examples
    ///
    /// A tool that has the client's model summarize its argument:
    ///
    /// ```
    /// use mcpl_core::types::{
    ///     CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock, TextContent, Tool,
    ///     ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let schema = ToolSchema::object().with_property("text", json!({"type": "string"}));
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("summarize", schema), |ctx, args| async move {
    ///         if let Some(answer) = ctx.sampling_response("summary") {
    ///             return Ok(ToolOutput::text(format!("summary by {}", answer.model)).into());
    ///         }
    ///         let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default();
    ///         let prompt = TextContent::new(format!("Summarize in one line:\n{text}"));
    ///         let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(prompt));
    ///         let params = CreateMessageRequestParams::new(vec![message], 100);
    ///         Ok::<ToolReply, _>(ctx.input_required().sample("summary", params).into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("sampling/createMessage", |_ctx, _params| async {
    ///     Ok(json!({"role": "assistant", "model": "small-llm", "content": {"type": "text", "text": "Short."}}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "summarize", "arguments": {"text": "A long story."}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "summary by small-llm");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn sample(mut self, key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        let tools = params.tools.is_some() || params.tool_choice.is_some();
        if supports_sampling(self.0.capabilities.as_ref(), tools) {
            let request = SamplingInputRequest::new(params);
            self.0.requests.insert(key.into(), InputRequest::CreateMessage(request));
        } else {
            let needed = if tools { json!({"tools": {}}) } else { json!({}) };
            self.0.missing.insert("sampling".into(), needed);
        }
        self
    }

    /// Asks the client for its roots (`roots/list`); read the answer with
    /// [`Context::roots_response`] under `key`.
    ///
    /// Left out unless the client declared `roots`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("where", ToolSchema::object()), |ctx, _args| async move {
    ///         let Some(roots) = ctx.roots_response("roots") else {
    ///             return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    ///         };
    ///         let first = roots.roots.first().map(|r| r.uri.clone()).unwrap_or_default();
    ///         Ok(ToolOutput::text(first).into())
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn list_roots(mut self, key: impl Into<String>) -> Self {
        if self.0.capabilities.as_ref().is_some_and(|c| c.roots.is_some()) {
            let request = ListRootsInputRequest::new(Default::default());
            self.0.requests.insert(key.into(), InputRequest::ListRoots(request));
        } else {
            self.0.missing.insert("roots".into(), json!({}));
        }
        self
    }

    /// Adds any input request, checked against the client's capabilities like the other
    /// methods.
    ///
    /// # Examples
    ///
    /// Passing on input requests as they arrive on the wire, for example from an upstream
    /// 2026-07-28 server this tool fronts:
    ///
    /// ```
    /// use mcpl_core::types::{InputRequest, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("proxy", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(roots) = ctx.roots_response("upstream-1") {
    ///             return Ok(ToolOutput::text(format!("forwarded {} roots", roots.roots.len())).into());
    ///         }
    ///         // What the upstream server asked for, in its `inputRequests`.
    ///         let upstream = json!({"upstream-1": {"method": "roots/list"}});
    ///         let requests: std::collections::BTreeMap<String, InputRequest> =
    ///             serde_json::from_value(upstream).map_err(mcpl_core::jsonrpc::ErrorObject::internal)?;
    ///         let reply = requests.into_iter().fold(ctx.input_required(), |r, (key, req)| r.request(key, req));
    ///         Ok::<ToolReply, _>(reply.into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("roots/list", |_ctx, _params| async { Ok(json!({"roots": [{"uri": "file:///repo"}]})) });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "proxy", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "forwarded 1 roots");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn request(self, key: impl Into<String>, request: InputRequest) -> Self {
        match request {
            InputRequest::Elicit(r) => match r.params {
                Some(params) => self.elicit(key, params),
                None => self,
            },
            InputRequest::CreateMessage(r) => match r.params {
                Some(params) => self.sample(key, params),
                None => self,
            },
            InputRequest::ListRoots(_) => self.list_roots(key),
        }
    }

    /// Sets the state the handler gets back with the answers ([`Context::request_state`]).
    ///
    /// The state is sealed (HMAC-SHA256, with an expiry, bound to this request's method and
    /// tool, prompt or resource; see [`crate::request_state`]), so the handler can trust what comes
    /// back; a state that was altered, expired or belongs to another request is refused with
    /// `-32602` before the handler runs. Each round's state replaces the previous one.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("paged", ToolSchema::object()), |ctx, _args| async move {
    ///         // No request, only a state: the client calls again with it (2026 era).
    ///         match ctx.request_state() {
    ///             Some(state) => Ok(ToolOutput::text(format!("resumed at {}", state["offset"])).into()),
    ///             None => Ok::<ToolReply, _>(ctx.input_required().state(json!({"offset": 100})).into()),
    ///         }
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn state(mut self, state: Value) -> Self {
        match &self.0.sealing {
            Some((sealer, bind)) => self.0.state = Some(sealer.seal(&state, bind)),
            None => {
                self.0.state_error = Some(ErrorObject::internal(
                    "requestState can only be set while serving tools/call, prompts/get or \
                     resources/read",
                ));
            }
        }
        self
    }

    /// The requests kept so far, by key: those the client declared the capability for.
    ///
    /// # Examples
    ///
    /// The client declared `roots` but not `sampling`, so only the roots request is kept; the
    /// handler notes what it asked for in its state:
    ///
    /// ```
    /// use mcpl_core::types::{
    ///     CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock, TextContent, Tool,
    ///     ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("index", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(state) = ctx.request_state() {
    ///             return Ok(ToolOutput::text(format!("asked for {}", state["asked"])).into());
    ///         }
    ///         let hello = SamplingMessageContentBlock::Text(TextContent::new("Describe this project."));
    ///         let params = CreateMessageRequestParams::new(vec![SamplingMessage::new(Role::User, hello)], 50);
    ///         let ask = ctx.input_required().list_roots("roots").sample("describe", params);
    ///         let asked: Vec<String> = ask.requests().keys().cloned().collect();
    ///         Ok::<ToolReply, _>(ask.state(json!({"asked": asked})).into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("roots/list", |_ctx, _params| async { Ok(json!({"roots": []})) });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "index", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], r#"asked for ["roots"]"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn requests(&self) -> &InputRequests {
        &self.0.requests
    }

    /// Whether there is neither a request nor a state.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |ctx, _args| async move {
    ///         let ask = ctx.input_required().list_roots("roots");
    ///         if ask.is_empty() {
    ///             // The client cannot list roots: carry on without them.
    ///             return Ok(ToolOutput::text("no roots").into());
    ///         }
    ///         assert_eq!(ask.requests().len(), 1);
    ///         Ok::<ToolReply, _>(ask.into())
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.requests.is_empty() && self.0.state.is_none()
    }

    /// The wire result, or why there can be none.
    pub(crate) fn into_result(self) -> Result<InputRequiredResult, ErrorObject> {
        let p = *self.0;
        if let Some(e) = p.state_error {
            return Err(e);
        }
        if p.requests.is_empty() && !p.missing.is_empty() {
            // Everything asked for needs a capability the client lacks: retrying cannot help.
            return Err(ErrorObject::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
            )
            .with_data(json!({ "requiredCapabilities": p.missing })));
        }
        if p.requests.is_empty() && p.state.is_none() {
            return Err(ErrorObject::internal("the handler required input but asked for nothing"));
        }
        Ok({
            let mut result = InputRequiredResult::default();
            result.input_requests = (!p.requests.is_empty()).then_some(p.requests);
            result.request_state = p.state;
            result
        })
    }
}

/// Whether `capabilities` allow an elicitation (URL mode when `url`).
pub(crate) fn supports_elicitation(capabilities: Option<&ClientCapabilities>, url: bool) -> bool {
    let Some(e) = capabilities.and_then(|c| c.elicitation.as_ref()) else { return false };
    if url { e.url.is_some() } else { e.form.is_some() || e.url.is_none() }
}

/// Whether `capabilities` allow sampling (with tools when `tools`).
pub(crate) fn supports_sampling(capabilities: Option<&ClientCapabilities>, tools: bool) -> bool {
    let Some(s) = capabilities.and_then(|c| c.sampling.as_ref()) else { return false };
    !tools || s.tools.is_some()
}

/// The answers a handler call sees: the input responses and the verified state.
#[derive(Debug, Clone, Default)]
pub(crate) struct InputState {
    pub(crate) responses: InputResponses,
    pub(crate) state: Option<Value>,
    pub(crate) binding: Option<Binding>,
}

/// A request's input, as its context holds it.
#[derive(Debug, Clone, Default)]
pub(crate) enum InputSlot {
    /// Not a request that may ask for input.
    #[default]
    None,
    /// A first call (no answers, no state): the name of the tool or prompt, or the resource's
    /// URI, that a state would be bound to (with the request's method and principal, see
    /// [`InputSlot::binding`]). Most requests are first calls: a shared [`InputState`] would
    /// be one more allocation for each, and a whole [`Binding`] would weigh on every move of
    /// the context.
    Bound(String),
    /// The answers and verified state the request was given.
    Given(Arc<InputState>),
}

impl InputSlot {
    /// What a state sealed for the request of `ctx` (whose slot this is) is bound to, if it
    /// may ask for input.
    pub(crate) fn binding(&self, ctx: &Context) -> Option<Cow<'_, Binding>> {
        match self {
            InputSlot::None => None,
            InputSlot::Bound(name) => {
                let method = crate::router::method_name(ctx.request().method());
                let binding = Binding::new(method, name.clone()).for_principal(ctx.principal());
                Some(Cow::Owned(binding))
            }
            InputSlot::Given(state) => state.binding.as_ref().map(Cow::Borrowed),
        }
    }

    /// The answers and state given, if any.
    pub(crate) fn given(&self) -> Option<&InputState> {
        match self {
            InputSlot::Given(state) => Some(state),
            _ => None,
        }
    }
}

impl InputState {
    /// Verifies `raw_state` (if any) for `binding`.
    pub(crate) fn open(
        sealer: Option<&StateSealer>,
        binding: Binding,
        responses: Option<InputResponses>,
        raw_state: Option<String>,
    ) -> Result<Self, ErrorObject> {
        let state = match (raw_state, sealer) {
            (None, _) => None,
            (Some(token), Some(sealer)) => Some(sealer.open(&token, &binding)?),
            (Some(_), None) => return Err(RequestStateError::BadTag.into()),
        };
        Ok(InputState { responses: responses.unwrap_or_default(), state, binding: Some(binding) })
    }
}

/// How a request that may ask for input ended.
pub(crate) enum Finished<T> {
    Complete(T),
    InputRequired(InputRequiredResult),
}

/// Runs `handler` for one request that may ask for input (see the [module docs](self)).
///
/// In the stateless era the handler runs once, with `ctx` itself (the client answers and
/// retries); in the stateful era with a copy of it per round. Not an `async fn`: in the
/// stateless era the returned future is the handler's own, not one holding the context too.
// Inlined: see `router::dispatch_reply`.
#[inline(always)]
pub(crate) fn run<T, F, Fut>(
    ctx: Context,
    binding: Binding,
    responses: Option<InputResponses>,
    request_state: Option<String>,
    mut handler: F,
) -> impl Future<Output = Result<Finished<T>, ErrorObject>>
where
    F: FnMut(Context) -> Fut,
    Fut: Future<Output = Result<Reply<T>, ErrorObject>>,
{
    if ctx.era() == Era::Stateless {
        let input = match (responses, request_state) {
            // The method and principal are the context's own (see `InputSlot::binding`).
            (None, None) => InputSlot::Bound(binding.name),
            (responses, request_state) => {
                let sealer = ctx.server().map(|s| s.state_sealer());
                match InputState::open(sealer, binding, responses, request_state) {
                    Ok(input) => InputSlot::Given(Arc::new(input)),
                    Err(e) => return Either::Left(Either::Left(std::future::ready(Err(e)))),
                }
            }
        };
        let mut ctx = ctx;
        ctx.input = input;
        return Either::Left(Either::Right(handler(ctx).map(|reply| match reply? {
            Reply::Complete(t) => Ok(Finished::Complete(t)),
            Reply::InputRequired(required) => Ok(Finished::InputRequired(required.into_result()?)),
        })));
    }
    // Boxed: the stateful era's rounds hold the context twice and the input state; inline
    // they would weigh on every stateless request's future too (which is the other branch).
    Either::Right(Box::pin(async move {
        let sealer = ctx.server().map(|s| s.state_sealer());
        let mut input = match (responses, request_state) {
            // A first call (what a 2025 client's request always is: it answers the server's
            // own requests and does not retry) is bound by name, as in the stateless era: no
            // state to open, nothing shared.
            (None, None) => InputSlot::Bound(binding.name.clone()),
            (responses, request_state) => InputSlot::Given(Arc::new(InputState::open(
                sealer,
                binding.clone(),
                responses,
                request_state,
            )?)),
        };
        for round in 0..=MAX_INPUT_ROUNDS {
            let mut round_ctx = ctx.clone();
            round_ctx.input = std::mem::take(&mut input);
            let required = match handler(round_ctx).await? {
                Reply::Complete(t) => return Ok(Finished::Complete(t)),
                Reply::InputRequired(required) => required.into_result()?,
            };
            if round == MAX_INPUT_ROUNDS {
                break;
            }
            // Boxed: asking the client is the rare path (the stateful era's input requests),
            // and inline its future would weigh on every request's (about 3 KB).
            let answers =
                Box::pin(ask_client(&ctx, required.input_requests.unwrap_or_default())).await?;
            let state = required.request_state;
            // The next round is bound as this one was (copied only now: most requests end
            // in their first round).
            let again = binding.clone();
            input =
                InputSlot::Given(Arc::new(InputState::open(sealer, again, Some(answers), state)?));
        }
        Err(ErrorObject::internal(format_args!(
            "the handler still required input after {MAX_INPUT_ROUNDS} rounds"
        )))
    }))
}

/// Sends each input request to a stateful-era client as a real request, one after the other,
/// and collects the answers.
async fn ask_client(ctx: &Context, requests: InputRequests) -> Result<InputResponses, ErrorObject> {
    let mut answers = InputResponses::new();
    let options = || RequestOptions::new().cancel_on(ctx.request().cancellation_token());
    let peer = ctx.peer();
    let before_modes = ctx.protocol_version().is_some_and(|v| v < ProtocolVersion::V2025_11_25);
    let task = || ErrorObject::internal("the client answered an input request with a task");
    let missing = |method: &str| ErrorObject::internal(format_args!("{method} without params"));
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicit(r) => {
                let mut params = r.params.ok_or_else(|| missing("elicitation/create"))?;
                if let (true, ElicitRequestParams::Form(form)) = (before_modes, &mut params) {
                    // `mode` is new in 2025-11-25.
                    form.mode = None;
                }
                match peer.send::<Elicit>(params, options()).await {
                    Ok(Outcome::Complete(result)) => InputResponse::Elicit(result),
                    Ok(_) => return Err(task()),
                    Err(e) => return Err(e.to_error_object()),
                }
            }
            InputRequest::CreateMessage(r) => {
                let params = r.params.ok_or_else(|| missing("sampling/createMessage"))?;
                match peer.send::<CreateMessage>(params, options()).await {
                    Ok(Outcome::Complete(result)) => InputResponse::CreateMessage(result),
                    Ok(_) => return Err(task()),
                    Err(e) => return Err(e.to_error_object()),
                }
            }
            InputRequest::ListRoots(r) => {
                let params = r.params.unwrap_or_default();
                match peer.send::<ListRoots>(params, options()).await {
                    Ok(result) => InputResponse::ListRoots(result),
                    Err(e) => return Err(e.to_error_object()),
                }
            }
        };
        answers.insert(key, answer);
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn caps(v: Value) -> Option<ClientCapabilities> {
        Some(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn capability_gating() {
        let form = || mcpl_core::types::ElicitRequestFormParams::new("?", Default::default());
        let sample = || CreateMessageRequestParams::new(vec![], 10);
        let only_sampling = InputRequired::new(caps(json!({"sampling": {}})), None)
            .elicit("e", form())
            .sample("s", sample())
            .list_roots("r");
        assert_eq!(only_sampling.requests().keys().collect::<Vec<_>>(), ["s"]);
        let result = only_sampling.into_result().unwrap();
        assert_eq!(result.input_requests.unwrap().len(), 1);

        let nothing =
            InputRequired::new(caps(json!({})), None).elicit("e", form()).sample("s", sample());
        let e = nothing.into_result().unwrap_err();
        assert_eq!(e.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            e.data.unwrap(),
            json!({"requiredCapabilities": {"elicitation": {}, "sampling": {}}})
        );

        let url = mcpl_core::types::ElicitRequestURLParams::new("go", "https://x");
        let form_only = InputRequired::new(caps(json!({"elicitation": {}})), None)
            .elicit("u", url.clone())
            .elicit("f", form());
        assert_eq!(form_only.requests().keys().collect::<Vec<_>>(), ["f"]);
        let url_only = InputRequired::new(caps(json!({"elicitation": {"url": {}}})), None)
            .elicit("u", url)
            .elicit("f", form());
        assert_eq!(url_only.requests().keys().collect::<Vec<_>>(), ["u"]);

        let mut tools = sample();
        tools.tools = Some(vec![]);
        let plain = InputRequired::new(caps(json!({"sampling": {}})), None).sample("t", tools);
        assert!(plain.is_empty());
        assert!(InputRequired::new(None, None).is_empty());
    }

    #[test]
    fn state_needs_a_request_to_bind_to() {
        let e = InputRequired::new(None, None).state(json!(1)).into_result().unwrap_err();
        assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
        let sealing = Some((StateSealer::random().unwrap(), Binding::new("tools/call", "t")));
        let r = InputRequired::new(None, sealing).state(json!(1)).into_result().unwrap();
        assert!(r.request_state.is_some() && r.input_requests.is_none());
    }
}
