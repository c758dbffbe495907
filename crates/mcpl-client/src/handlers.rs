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
//! let client = Client::builder("my-app", "1.0.0")
//!     .on_sampling(|params| async move {
//!         let reply = SamplingMessageContentBlock::Text(TextContent::new(
//!             format!("{} messages seen", params.messages.len()),
//!         ));
//!         Ok(CreateMessageResult::new(Role::Assistant, reply, "my-model"))
//!     })
//!     .on_elicitation(|_form| async move { Ok(ElicitResult::new(ElicitAction::Decline)) })
//!     .on_roots(|| async move { Ok(vec![Root::new("file:///home/me/project")]) })
//!     .build();
//! assert!(client.capabilities().sampling.is_some());
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use mcpl_core::Engine;
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
/// let client = Client::builder("my-app", "1.0.0").on_roots(workspace_roots).build();
/// assert!(client.capabilities().roots.is_some());
/// ```
pub type HandlerResult<T> = Result<T, ErrorObject>;

type Handler<P, R> = Arc<dyn Fn(P) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync>;
type RootsHandler = Arc<dyn Fn() -> BoxFuture<'static, HandlerResult<Vec<Root>>> + Send + Sync>;

/// The registered handlers of a client.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) sampling: Option<Handler<CreateMessageRequestParams, CreateMessageResult>>,
    pub(crate) form: Option<Handler<ElicitRequestFormParams, ElicitResult>>,
    pub(crate) url: Option<Handler<ElicitRequestURLParams, ElicitResult>>,
    pub(crate) roots: Option<RootsHandler>,
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
    /// Registers the handlers set on `engine`.
    pub(crate) fn install(&self, engine: &Engine) {
        let h = self.clone();
        if h.sampling.is_some() {
            let h = h.clone();
            engine.on::<CreateMessage, _, _>(move |_ctx, params| {
                let h = h.clone();
                async move { h.sample(params).await.map(Outcome::Complete) }
            });
        }
        if h.form.is_some() || h.url.is_some() {
            let h = h.clone();
            engine.on::<Elicit, _, _>(move |_ctx, params| {
                let h = h.clone();
                async move { h.elicit(params).await.map(Outcome::Complete) }
            });
        }
        if h.roots.is_some() {
            engine.on::<ListRoots, _, _>(move |_ctx, _params| {
                let h = h.clone();
                async move { h.list_roots().await }
            });
        }
    }

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
            Some(handler) => Ok(ListRootsResult::default().with_roots(handler().await?)),
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
    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_sampling`](crate::ClientBuilder::on_sampling). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_sampling(..)` then `build()`"
    )]
    pub fn on_sampling<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<CreateMessageResult>> + Send + 'static,
    {
        self.to_builder().on_sampling(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_elicitation`](crate::ClientBuilder::on_elicitation). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_elicitation(..)` then `build()`"
    )]
    pub fn on_elicitation<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.to_builder().on_elicitation(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_url_elicitation`](crate::ClientBuilder::on_url_elicitation). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_url_elicitation(..)` then `build()`"
    )]
    pub fn on_url_elicitation<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(ElicitRequestURLParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.to_builder().on_url_elicitation(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_roots`](crate::ClientBuilder::on_roots). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_roots(..)` then `build()`"
    )]
    pub fn on_roots<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Vec<Root>>> + Send + 'static,
    {
        self.to_builder().on_roots(handler).build()
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
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .on_elicitation(|_form| async { Ok(ElicitResult::new(ElicitAction::Decline)) })
    ///     .build();
    /// let caps = client.capabilities();
    /// let elicitation = caps.elicitation.expect("declared by the handler");
    /// assert!(elicitation.form.is_some());
    /// assert!(elicitation.url.is_none());
    /// assert!(caps.sampling.is_none() && caps.roots.is_none());
    /// ```
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = self.handlers.declare(&self.capabilities);
        if let Some(host) = &self.mcpl
            && let Ok(advertisement) = serde_json::to_value(host.advertisement())
        {
            caps.experimental
                .get_or_insert_with(Default::default)
                .insert(mcpl_core::mcpl::manifest::EXPERIMENTAL_KEY.to_owned(), advertisement);
        }
        caps
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
            .with_property("name", StringSchema::default().with_default("John"))
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
