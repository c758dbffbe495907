//! Method routing: one place that maps each MCP method to the feature that serves it.
//!
//! Both eras route through here; era-specific steps (the stateful handshake, the stateless
//! `_meta` checks) happen before. A feature's methods are served once the feature was ever
//! registered (so they answer for as long as its capability is declared); before that they
//! are unknown methods (`-32601`).

use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
use mcpl_core::types::{
    CacheScope, CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    CompletionReference, EmptyResult, GetPromptRequestParams, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, ResourceRequestParams, SetLevelRequestParams,
    TaskSupport, names,
};
use std::borrow::Cow;
use std::future::Future;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Either};
use serde::Serialize;
use serde_json::Value;

use crate::codec::{decode, encode};
use crate::completion::{CompletionRequest, capped};
use crate::context::{Context, lock};
use crate::features::Registry;
use crate::input::{Finished, run};
use crate::pagination::{ListedPage, Page, listed, paginate};
use crate::request_state::Binding;
use crate::resource::{ReadRequest, not_found, read, too_many_subscriptions, uri_too_long};
use crate::server::Server;
use mcpl_core::Era;
use mcpl_core::mcpl::state::StateRequestFields;

/// Whether `token` is a progress token: a string or an integer.
pub(crate) fn is_progress_token(token: &Value) -> bool {
    token.is_string() || token.is_i64() || token.is_u64()
}

/// Refuses (`-32602`) a request whose `_meta` carries a progress token of the wrong type,
/// instead of serving it and dropping its progress.
pub(crate) fn check_progress_token(
    meta: Option<&serde_json::Map<String, Value>>,
) -> Result<(), ErrorObject> {
    match meta.and_then(|m| m.get("progressToken")) {
        Some(token) if !is_progress_token(token) => Err(invalid_progress_token()),
        _ => Ok(()),
    }
}

/// The `-32602` refusal of a progress token that is neither a string nor an integer.
pub(crate) fn invalid_progress_token() -> ErrorObject {
    ErrorObject::invalid_params("_meta.progressToken must be a string or an integer")
}

/// A request's answer before it goes on the wire: a tool's result is kept typed, so that a
/// transport that writes it itself (stateless HTTP) serializes it once, straight to bytes,
/// instead of building, serializing and dropping a `Value` tree.
#[derive(Debug)]
pub(crate) enum Reply {
    /// An answer already encoded.
    Json(RawJson),
    /// A complete `tools/call` result (not boxed: a box would be one more allocation for
    /// every tool call, the hot method).
    Tool(CallToolResult),
    /// A list's page: an object whose members are the list and maybe `nextCursor`, none of
    /// those stateless-era decoration adds (so it is written without reading them first, see
    /// [`decoration::write_page`](crate::stateless::decoration::write_page)).
    Page(RawJson),
}

/// How the router answered a request.
#[cfg(feature = "http")]
pub(crate) type Outcome = Result<Reply, ErrorObject>;

impl Reply {
    /// The response to request `id` with this answer as its result, as it goes on the wire:
    /// a tool's result written straight from its type (see [`crate::result_json`]).
    #[cfg(feature = "http")]
    pub(crate) fn to_response(
        &self,
        id: &mcpl_core::jsonrpc::RequestId,
    ) -> serde_json::Result<Vec<u8>> {
        let size = match self {
            Reply::Json(value) | Reply::Page(value) => value.len(),
            Reply::Tool(_) => 192,
        };
        let mut out = Vec::with_capacity(64 + size);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id)?;
        out.extend_from_slice(br#","result":"#);
        match self {
            Reply::Json(value) | Reply::Page(value) => {
                out.extend_from_slice(value.as_str().as_bytes())
            }
            Reply::Tool(result) => crate::result_json::write(&mut out, result)?,
        }
        out.push(b'}');
        Ok(out)
    }

    /// The answer as encoded JSON; a failure is `-32603`.
    pub(crate) fn into_json(self) -> HandlerResult {
        match self {
            Reply::Json(value) | Reply::Page(value) => Ok(value),
            Reply::Tool(result) => encode(result),
        }
    }
}

/// `method` kept as a name: the methods whose handlers a server registers (those a panic is
/// logged under and a `requestState` is bound to) are borrowed, with no copy for every
/// request; any other is copied.
pub(crate) fn method_name(method: &str) -> Cow<'static, str> {
    match method {
        names::TOOLS_CALL => Cow::Borrowed(names::TOOLS_CALL),
        names::RESOURCES_READ => Cow::Borrowed(names::RESOURCES_READ),
        names::PROMPTS_GET => Cow::Borrowed(names::PROMPTS_GET),
        other => Cow::Owned(other.to_owned()),
    }
}

/// Records how a request the engine does not answer itself was answered on its span: an
/// error's code, or `tool_error` for a tool result with `isError` (see `mcpl_core::trace`).
#[cfg(feature = "http")]
pub(crate) fn record_reply(span: &tracing::Span, outcome: &Result<Reply, ErrorObject>) {
    match outcome {
        Err(error) => mcpl_core::trace::record_error(span, error),
        Ok(Reply::Tool(result)) if result.is_error() => {
            span.record(mcpl_core::trace::field::ERROR_TYPE, "tool_error");
        }
        Ok(_) => {}
    }
}

/// Serves one request of an initialized client.
pub(crate) async fn dispatch(
    server: &Server,
    ctx: Context,
    params: Option<Value>,
) -> HandlerResult {
    dispatch_reply(server, ctx, Params::Tree(params)).await?.into_json()
}

/// A request's params as the router takes them.
#[derive(Debug)]
pub(crate) enum Params {
    /// As the general decoder reads them: a tree (`None`: the request has none).
    Tree(Option<Value>),
    /// A `tools/call`'s, read typed from the body (see `http::stateless_body`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Call(PlainToolCall),
}

impl Params {
    /// Records on `span` what the params of a request of `method` name (its tool, prompt or
    /// resource), as the engine does for params it reads (see `mcpl_core::trace`).
    #[cfg(feature = "http")]
    pub(crate) fn record_target(&self, span: &tracing::Span, method: &str) {
        match self {
            Params::Tree(tree) => mcpl_core::trace::record_target(span, method, tree.as_ref()),
            // A tree of the name alone, made only for a span that records it.
            Params::Call(call) if !span.is_disabled() => {
                let named = serde_json::json!({ "name": call.name });
                mcpl_core::trace::record_target(span, method, Some(&named));
            }
            Params::Call(_) => {}
        }
    }

    /// The params as a tree.
    fn into_tree(self) -> Option<Value> {
        match self {
            Params::Tree(tree) => tree,
            Params::Call(call) => Some(call.into_tree()),
        }
    }
}

/// The params of a `tools/call` that carries a tool's `name` and its `arguments` and nothing
/// else, as most do: small (moved by value as the request is served), and typed once the call
/// is planned.
#[derive(Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct PlainToolCall {
    pub(crate) name: String,
    pub(crate) arguments: Option<serde_json::Map<String, Value>>,
}

impl PlainToolCall {
    /// The params as the tree the body held (`name`, then `arguments` if it was there).
    pub(crate) fn into_tree(self) -> Value {
        let mut params = serde_json::Map::new();
        params.insert("name".to_owned(), Value::String(self.name));
        if let Some(arguments) = self.arguments {
            params.insert("arguments".to_owned(), Value::Object(arguments));
        }
        Value::Object(params)
    }

    fn into_params(self) -> CallToolRequestParams {
        let mut params = CallToolRequestParams::new(self.name);
        params.arguments = self.arguments;
        params
    }
}

/// Serves one request of an initialized client, keeping a tool's result typed (see [`Reply`]).
///
/// Not an `async fn`: `tools/call`, the hot method, gets its future made here and returned as
/// it is (an `async fn` would hold the context twice, as its argument and again as a local);
/// every other method is served by a boxed future.
// Inlined, as are the layers below it (`call_tool`, `input::run`, `ToolRunner::call`): the
// future is then built where its caller keeps it, and the context moves fewer times.
#[inline(always)]
pub(crate) fn dispatch_reply<'a>(
    server: &'a Server,
    mut ctx: Context,
    mut params: Params,
) -> impl Future<Output = Result<Reply, ErrorObject>> + use<'a> {
    if ctx.server.is_none() {
        ctx.server = Some(std::sync::Arc::new(server.clone()));
    }
    // A stateless-era request names its revision itself; a stateful connection's revision
    // is on its spans since `initialize` (see `mcpl_core::trace`).
    let span = tracing::Span::current();
    if !span.is_disabled()
        && let Some(version) = ctx.protocol_version().filter(|v| v.era() == Era::Stateless)
    {
        mcpl_core::trace::record_version(&span, version);
    }
    // Handlers read `_meta` from the context (the engine kept a copy); decoding it again into
    // each typed params struct would be wasted work.
    if let Params::Tree(Some(Value::Object(p))) = &mut params {
        p.remove("_meta");
    }
    if ctx.request.method() == names::TOOLS_CALL {
        return Either::Left(call_tool(server, ctx, params));
    }
    let (method, params) = (ctx.request.method().to_owned(), params.into_tree());
    Either::Right(Box::pin(async move { dispatch_other(server, ctx, &method, params).await }))
}

/// Serves every method but `tools/call` (see [`dispatch_reply`]).
async fn dispatch_other(
    server: &Server,
    ctx: Context,
    method: &str,
    params: Option<Value>,
) -> Result<Reply, ErrorObject> {
    let (tools, resources, prompts, completions, skills) = {
        let r = server.read();
        (r.has_tools, r.has_resources, r.has_prompts, r.has_completions(), r.skills.ever)
    };
    let served = match method {
        names::PING => encode(EmptyResult::default()),
        names::TOOLS_LIST if tools => {
            let page = list(server, params, "tools", |r| {
                let items = r.tools.items.iter().filter(|t| t.enabled);
                (r.tools.revision, items.map(|t| t.listed.clone()).collect())
            })?;
            return encode(ListedPage { key: "tools", page }).map(Reply::Page);
        }
        names::RESOURCES_LIST if resources => {
            let page = list(server, params, "resources", |r| {
                let items = r.resources.items.iter().map(|e| e.listed.clone());
                // Skill files are resources too (see `crate::skills`).
                let items = items.chain(r.skills.resources().map(listed));
                (r.resources.revision.wrapping_add(r.skills.revision), items.collect())
            })?;
            return encode(ListedPage { key: "resources", page }).map(Reply::Page);
        }
        names::RESOURCES_TEMPLATES_LIST if resources => {
            let page = list(server, params, "resource templates", |r| {
                let items = r.templates.items.iter().map(|e| e.listed.clone());
                (r.templates.revision, items.collect())
            })?;
            return encode(ListedPage { key: "resourceTemplates", page }).map(Reply::Page);
        }
        names::RESOURCES_READ if resources => read_resource(server, ctx, params).await,
        names::RESOURCES_SUBSCRIBE if resources => {
            let params: ResourceRequestParams = decode(params)?;
            if params.uri.len() > server.max_uri_length() {
                return Err(uri_too_long(server.max_uri_length()));
            }
            let max = server.max_subscriptions();
            let mut client = lock(&ctx.client);
            let subscriptions = &mut client.subscriptions;
            if subscriptions.len() >= max && !subscriptions.contains(&params.uri) {
                // The peer's doing, not ours: DEBUG, inside the request's span.
                tracing::debug!(
                    max,
                    "resources/subscribe refused: the session's subscriptions are full"
                );
                return Err(too_many_subscriptions(max));
            }
            subscriptions.insert(params.uri);
            drop(client);
            encode(EmptyResult::default())
        }
        names::RESOURCES_UNSUBSCRIBE if resources => {
            let params: ResourceRequestParams = decode(params)?;
            let mut client = lock(&ctx.client);
            client.subscriptions.remove(&params.uri);
            drop(client);
            encode(EmptyResult::default())
        }
        names::PROMPTS_LIST if prompts => {
            let page = list(server, params, "prompts", |r| {
                let items = r.prompts.items.iter().map(|e| e.listed.clone());
                (r.prompts.revision, items.collect())
            })?;
            return encode(ListedPage { key: "prompts", page }).map(Reply::Page);
        }
        names::PROMPTS_GET if prompts => get_prompt(server, ctx, params).await,
        names::SKILLS_LIST if skills => {
            crate::skills::list(&server.inner.features, server.page_size(), params)
        }
        names::SKILLS_GET if skills => crate::skills::get(&server.inner.features, params),
        names::RESOURCES_DIRECTORY_READ if skills => {
            crate::skills::read_directory(&server.inner.features, server.page_size(), params)
        }
        names::COMPLETION_COMPLETE if completions => complete(server, ctx, params).await,
        names::TASKS_GET | names::TASKS_UPDATE | names::TASKS_CANCEL
            if ctx.era() == Era::Stateless && server.serves_tasks() =>
        {
            match method {
                names::TASKS_GET => crate::task_serving::get(server, &ctx, params).await,
                names::TASKS_UPDATE => crate::task_serving::update(server, &ctx, params).await,
                _ => crate::task_serving::cancel(server, &ctx, params).await,
            }
        }
        names::LOGGING_SET_LEVEL => {
            let params: SetLevelRequestParams = decode(params)?;
            lock(&ctx.client).log_level = Some(params.level);
            encode(EmptyResult::default())
        }
        _ if crate::mcpl::is_mcpl_method(method) => {
            crate::mcpl::request(&ctx, method, params).await
        }
        _ => Err(ErrorObject::method_not_found(method)),
    };
    served.map(Reply::Json)
}

/// One page of a list: `snapshot` gives the list's revision and items under the lock.
fn list<T>(
    server: &Server,
    params: Option<Value>,
    name: &str,
    snapshot: impl FnOnce(&Registry) -> (u64, Vec<T>),
) -> Result<Page<T>, ErrorObject> {
    let params: PaginatedRequestParams = decode(params)?;
    let (revision, items) = snapshot(&server.read());
    paginate(name, revision, items, params.cursor.as_deref(), server.page_size())
}

/// Refuses `inputResponses` or `requestState` present but `null` (`-32602`): an absent member
/// would read as a first call.
fn check_input_members(params: Option<Value>) -> Result<Option<Value>, ErrorObject> {
    for member in ["inputResponses", "requestState"] {
        if params.as_ref().and_then(|p| p.get(member)).is_some_and(Value::is_null) {
            return Err(ErrorObject::invalid_params(format_args!("{member} must not be null")));
        }
    }
    Ok(params)
}

/// Encodes how a request that may ask for input ended.
fn finish<T: Serialize>(done: Finished<T>) -> HandlerResult {
    match done {
        Finished::Complete(result) => encode(result),
        Finished::InputRequired(result) => encode(result),
    }
}

/// What a `tools/call` runs, once its params are read and its tool found.
enum ToolCall {
    /// The handler, through [`run`].
    Run {
        runner: std::sync::Arc<crate::tool::ToolRunner>,
        binding: Binding,
        args: serde_json::Map<String, Value>,
        responses: Option<mcpl_core::types::InputResponses>,
        state: Option<String>,
    },
    /// A task of the tasks extension (SEP-2663).
    Task(
        CallToolRequestParams,
        std::sync::Arc<crate::tool::ToolRunner>,
        Binding,
        crate::task::TaskOptions,
    ),
}

/// Reads a `tools/call`'s params and finds its tool; sets the context's MCPL state fields.
fn plan_tool_call(
    server: &Server,
    ctx: &mut Context,
    params: Params,
) -> Result<ToolCall, ErrorObject> {
    // One look at the registry per call: its lock is shared by every request.
    let registry = server.read();
    if !registry.has_tools {
        return Err(ErrorObject::method_not_found(names::TOOLS_CALL));
    }
    let mut params = match params {
        Params::Call(call) => call.into_params(),
        Params::Tree(tree) => match check_input_members(tree)? {
            // The members move into the typed params (no second walk of the arguments).
            Some(Value::Object(object)) => {
                CallToolRequestParams::from_object(object).map_err(ErrorObject::invalid_params)?
            }
            other => decode(other)?,
        },
    };
    let found = registry.tools.get(&params.name).filter(|t| t.enabled);
    let found = found.map(|t| (t.runner.clone(), t.task));
    // (Released before the client's lock is taken: never one while holding the other.)
    drop(registry);
    if lock(&ctx.client).mcpl.is_some() {
        ctx.mcpl_state = Some(std::sync::Arc::new(StateRequestFields::from_params(&params.extra)));
    }
    let Some((runner, task)) = found else {
        return Err(ErrorObject::invalid_params(format_args!("unknown tool {:?}", params.name)));
    };
    let name = std::mem::take(&mut params.name);
    let binding = Binding::new(names::TOOLS_CALL, name).for_principal(ctx.principal());
    // The tasks extension (SEP-2663) is served in the stateless era.
    if task.is_task_capable() && ctx.era() == Era::Stateless {
        if crate::task::client_declares(ctx) {
            return Ok(ToolCall::Task(params, runner, binding, task));
        }
        if task.support == TaskSupport::Required {
            return Err(crate::task_serving::missing_extension());
        }
    }
    Ok(ToolCall::Run {
        runner,
        binding,
        args: params.arguments.unwrap_or_default(),
        responses: params.input_responses,
        state: params.request_state,
    })
}

/// Serves a `tools/call`. Not an `async fn`, for the reason [`dispatch_reply`] gives.
// Inlined: see `dispatch_reply`.
#[inline(always)]
fn call_tool<'a>(
    server: &'a Server,
    mut ctx: Context,
    params: Params,
) -> impl Future<Output = Result<Reply, ErrorObject>> + 'a {
    let (runner, binding, args, responses, state) = match plan_tool_call(server, &mut ctx, params) {
        Ok(ToolCall::Run { runner, binding, args, responses, state }) => {
            (runner, binding, args, responses, state)
        }
        Ok(ToolCall::Task(params, runner, binding, task)) => {
            let args = params.arguments.unwrap_or_default();
            let (responses, state) = (params.input_responses, params.request_state);
            // Boxed: a task's start is the rare path, and its future would otherwise weigh on
            // every tool call's.
            let started = crate::task_serving::call(
                server, ctx, runner, binding, args, responses, state, task.start,
            );
            let started: BoxFuture<'a, Result<Reply, ErrorObject>> =
                Box::pin(async move { started.await.map(Reply::Json) });
            return Either::Right(Either::Right(started));
        }
        Err(error) => return Either::Left(std::future::ready(Err(error))),
    };
    // The stateless era runs the handler once: its arguments move into the call. The stateful
    // era may run it again (after asking the client for input): each round gets a copy.
    let once = ctx.era() == Era::Stateless;
    let (mut args, mut runner) = (Some(args), Some(runner));
    let done = run(ctx, binding, responses, state, move |ctx| {
        let (args, runner) = match once {
            true => (args.take(), runner.take()),
            false => (args.clone(), runner.clone()),
        };
        match runner {
            Some(runner) => Either::Left(runner.call(ctx, args.unwrap_or_default())),
            None => Either::Right(std::future::ready(Err(ErrorObject::internal(
                "a stateless request's tool ran twice",
            )))),
        }
    });
    Either::Right(Either::Left(done.map(|done| match done? {
        Finished::Complete(result) => Ok(Reply::Tool(result)),
        Finished::InputRequired(result) => encode(result).map(Reply::Json),
    })))
}

async fn read_resource(server: &Server, ctx: Context, params: Option<Value>) -> HandlerResult {
    let params: ReadResourceRequestParams = decode(check_input_members(params)?)?;
    let uri = params.uri;
    // Before any lookup or template match: what a template match costs grows with the URI.
    if uri.len() > server.max_uri_length() {
        return Err(uri_too_long(server.max_uri_length()));
    }
    let target = {
        let r = server.read();
        // A skill's file (see `crate::skills`): static resources first, then skill files, then
        // templates.
        if r.resources.get(&uri).is_none()
            && let Some(contents) = r.skills.contents(&uri)
        {
            return encode(ReadResourceResult::default().with_contents(vec![contents]));
        }
        match r.resources.get(&uri) {
            Some(e) => Some((e.handler.clone(), e.resource.mime_type.clone(), Default::default())),
            None => r.templates.items.iter().find_map(|t| {
                let vars = t.parsed.matches(&uri)?;
                Some((t.handler.clone(), t.template.mime_type.clone(), vars))
            }),
        }
    };
    let Some((handler, mime_type, variables)) = target else {
        return Err(not_found(&uri));
    };
    let retried = params.input_responses.is_some() || params.request_state.is_some();
    let binding = Binding::new(names::RESOURCES_READ, uri.clone()).for_principal(ctx.principal());
    let request = ReadRequest { uri, variables };
    let stateless = ctx.era() == Era::Stateless;
    let done = run(ctx, binding, params.input_responses, params.request_state, |ctx| {
        let (handler, mime_type, request) = (handler.clone(), mime_type.clone(), request.clone());
        read(handler, mime_type, ctx, request)
    })
    .await?;
    finish(match done {
        Finished::Complete(contents) => {
            let mut result = ReadResourceResult::default().with_contents(contents);
            if retried && stateless {
                // Clients must not cache the result of a request that carried input responses
                // or state.
                result.ttl_ms = Some(0);
                result.cache_scope = Some(CacheScope::Private);
            }
            Finished::Complete(result)
        }
        Finished::InputRequired(r) => Finished::InputRequired(r),
    })
}

async fn get_prompt(server: &Server, ctx: Context, params: Option<Value>) -> HandlerResult {
    let params: GetPromptRequestParams = decode(check_input_members(params)?)?;
    let Some(entry) = server.read().prompts.get(&params.name).cloned() else {
        return Err(ErrorObject::invalid_params(format_args!("unknown prompt {:?}", params.name)));
    };
    let args = params.arguments.unwrap_or_default();
    let missing = entry.missing(&args);
    if !missing.is_empty() {
        return Err(ErrorObject::invalid_params(format_args!(
            "prompt {:?} is missing required arguments: {}",
            params.name,
            missing.join(", ")
        )));
    }
    let binding = Binding::new(names::PROMPTS_GET, params.name).for_principal(ctx.principal());
    let done = run(ctx, binding, params.input_responses, params.request_state, |ctx| {
        entry.handler.get(ctx, args.clone())
    })
    .await?;
    finish(done)
}

async fn complete(server: &Server, ctx: Context, params: Option<Value>) -> HandlerResult {
    let params: CompleteRequestParams = decode(params)?;
    let argument = params.argument.name;
    let completer = {
        let r = server.read();
        match &params.reference {
            CompletionReference::Prompt(p) => {
                r.prompt_completers.get(&(p.name.clone(), argument.clone())).cloned()
            }
            CompletionReference::ResourceTemplate(t) => {
                r.template_completers.get(&(t.uri.clone(), argument.clone())).cloned()
            }
        }
    };
    let values = match completer {
        // Nothing to suggest for unknown references or arguments without a completer.
        None => Vec::new(),
        Some(completer) => {
            let request = CompletionRequest {
                argument,
                value: params.argument.value,
                context: params.context.and_then(|c| c.arguments).unwrap_or_default(),
            };
            completer.complete(ctx, request).await?
        }
    };
    encode(CompleteResult::default().with_completion(capped(values)))
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
