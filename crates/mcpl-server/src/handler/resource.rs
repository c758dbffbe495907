//! Resource handlers: reading static resources and resources described by URI templates.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::FutureExt as _;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
use mcpl_core::types::{
    BlobResourceContents, Resource, ResourceContents, ResourceTemplate, TextResourceContents,
};
use serde_json::json;

use crate::context::Context;
use crate::handler::registration::RegistrationError;
use crate::input::{ReadReply, Reply};
use crate::uri_template::UriTemplate;

/// The longest resource URI a server reads or subscribes to unless configured otherwise
/// ([`ServerBuilder::max_uri_length`](crate::ServerBuilder::max_uri_length)): 8 KiB.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::resource::DEFAULT_MAX_URI_LENGTH, 8 * 1024);
/// ```
pub const DEFAULT_MAX_URI_LENGTH: usize = 8 * 1024;

/// The most resources one session (or connection) subscribes to unless configured otherwise
/// (see [`ServerBuilder::max_subscriptions`](crate::ServerBuilder::max_subscriptions)).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::resource::DEFAULT_MAX_SUBSCRIPTIONS, 1024);
/// ```
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 1024;

/// `-32602`: the session already subscribes to the most resources it may.
pub(crate) fn too_many_subscriptions(max: usize) -> ErrorObject {
    ErrorObject::invalid_params(format_args!("more than {max} resource subscriptions"))
        .with_data(json!({ "maxSubscriptions": max }))
}

/// The set of resource URIs a session subscribed to (`resources/subscribe`).
///
/// Boxed while it has members, nothing while empty: most sessions never subscribe, and an
/// idle one keeps 8 bytes for it.
#[derive(Debug, Clone, Default)]
#[expect(clippy::box_collection, reason = "8 bytes while empty, not the set's 24")]
pub(crate) struct Subscriptions(Option<Box<std::collections::BTreeSet<String>>>);

impl Subscriptions {
    /// How many URIs.
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |set| set.len())
    }

    /// Whether `uri` is subscribed to.
    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.0.as_ref().is_some_and(|set| set.contains(uri))
    }

    /// Subscribes to `uri`.
    pub(crate) fn insert(&mut self, uri: String) {
        self.0.get_or_insert_with(Default::default).insert(uri);
    }

    /// Unsubscribes from `uri`; the last one gives the memory back.
    pub(crate) fn remove(&mut self, uri: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(uri);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// The `-32602` refusal of a resource URI longer than `max` bytes (the URI is not repeated).
pub(crate) fn uri_too_long(max: usize) -> ErrorObject {
    ErrorObject::invalid_params(format_args!("resource URI longer than {max} bytes"))
        .with_data(json!({ "maxUriLength": max }))
}

/// What a resource handler returns: the resource's contents, or a protocol error (see
/// [`not_found`]).
///
/// A handler that may ask the client for input returns `Result<ReadReply, ErrorObject>`
/// instead (see [`crate::input`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::resource::{ReadRequest, ReadResult, ResourceOutput, not_found};
///
/// async fn user(_ctx: Context, req: ReadRequest) -> ReadResult {
///     match req.var("id") {
///         Some("1") => Ok(vec![ResourceOutput::text(&req.uri, "Ada")]),
///         _ => Err(not_found(&req.uri)),
///     }
/// }
/// # let _ = mcpl_server::Server::builder("s", "1")
/// #     .resource_template(mcpl_core::types::ResourceTemplate::new("users://{id}", "user"), user);
/// ```
pub type ReadResult = Result<Vec<ResourceContents>, ErrorObject>;

/// What is being read: the URI and, for a resource template, the values of its variables.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::ResourceTemplate;
/// use mcpl_server::Server;
/// use mcpl_server::resource::{ReadRequest, ResourceOutput};
///
/// let server = Server::builder("s", "1")
///     .resource_template(ResourceTemplate::new("logs://{day}", "logs"), |_ctx, req: ReadRequest| async move {
///         let day = req.var("day").unwrap_or("today").to_owned();
///         Ok(vec![ResourceOutput::text(req.uri, format!("log of {day}"))])
///     })
///     .build();
/// # drop(server);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// The template's variables read from the URI (percent-decoded); empty for a static
    /// resource.
    pub variables: BTreeMap<String, String>,
}

impl ReadRequest {
    /// The value of the template variable `name`, if the URI defined it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::resource::ReadRequest;
    ///
    /// let req = ReadRequest {
    ///     uri: "users://42/profile".into(),
    ///     variables: [("id".to_owned(), "42".to_owned())].into(),
    /// };
    /// assert_eq!(req.var("id"), Some("42"));
    /// assert_eq!(req.var("name"), None);
    /// ```
    pub fn var(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// Serves the reads of one resource or resource template.
///
/// Implemented for every `Fn(Context, ReadRequest) -> impl Future<Output = Result<R,
/// ErrorObject>>` where `R` converts into a [`ReadReply`] (the contents, or a [`ReadReply`]
/// for handlers that may ask for input).
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::resource::{ReadRequest, ReadResult, ResourceHandler, ResourceOutput};
///
/// async fn motd(_ctx: Context, req: ReadRequest) -> ReadResult {
///     Ok(vec![ResourceOutput::text(req.uri, "Welcome!")])
/// }
/// fn assert_handler(_: &impl ResourceHandler) {}
/// assert_handler(&motd);
/// ```
#[diagnostic::on_unimplemented(
    note = "resource handlers are async fns taking (Context, ReadRequest) and returning \
            ReadResult or Result<ReadReply, ErrorObject>"
)]
pub trait ResourceHandler: Send + Sync + 'static {
    /// Serves one read.
    fn read(
        &self,
        ctx: Context,
        request: ReadRequest,
    ) -> BoxFuture<'static, Result<ReadReply, ErrorObject>>;
}

impl<F, Fut, R> ResourceHandler for F
where
    F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    R: Into<ReadReply> + 'static,
{
    fn read(
        &self,
        ctx: Context,
        request: ReadRequest,
    ) -> BoxFuture<'static, Result<ReadReply, ErrorObject>> {
        Box::pin(self(ctx, request).map(|r| r.map(Into::into)))
    }
}

/// Builders for resource contents.
///
/// # Examples
///
/// ```
/// use mcpl_server::resource::ResourceOutput;
///
/// let text = ResourceOutput::text("file:///a.txt", "hello");
/// let png = ResourceOutput::bytes("file:///a.png", [0x89, b'P', b'N', b'G']);
/// assert_eq!(serde_json::to_value(&text).unwrap()["text"], "hello");
/// assert_eq!(serde_json::to_value(&png).unwrap()["blob"], "iVBORw==");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ResourceOutput;

impl ResourceOutput {
    /// Text contents of the resource at `uri`.
    ///
    /// The MIME type, when not set, is the one of the resource or template being read.
    ///
    /// # Examples
    ///
    /// ```
    /// let contents = mcpl_server::resource::ResourceOutput::text("mem://note", "remember");
    /// assert_eq!(serde_json::to_value(&contents).unwrap()["uri"], "mem://note");
    /// ```
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> ResourceContents {
        TextResourceContents::new(uri, text).into()
    }

    /// Binary contents of the resource at `uri`, from raw bytes (base64-encoded here).
    ///
    /// # Examples
    ///
    /// ```
    /// let contents = mcpl_server::resource::ResourceOutput::bytes("mem://bin", b"hi");
    /// assert_eq!(serde_json::to_value(&contents).unwrap()["blob"], "aGk=");
    /// ```
    pub fn bytes(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> ResourceContents {
        BlobResourceContents::new(uri, STANDARD.encode(bytes)).into()
    }

    /// Binary contents of the resource at `uri`, from base64 data.
    ///
    /// # Examples
    ///
    /// ```
    /// let contents = mcpl_server::resource::ResourceOutput::blob("mem://bin", "aGk=");
    /// assert_eq!(serde_json::to_value(&contents).unwrap()["blob"], "aGk=");
    /// ```
    pub fn blob(uri: impl Into<String>, base64: impl Into<String>) -> ResourceContents {
        BlobResourceContents::new(uri, base64).into()
    }
}

/// The error answering a read of a resource that does not exist: `-32602` with
/// `data: {"uri": uri}`.
///
/// The server answers this for URIs no resource or template matches; a template handler
/// returns it for matching URIs that name nothing.
///
/// # Examples
///
/// ```
/// let error = mcpl_server::resource::not_found("file:///missing");
/// assert_eq!(error.code.0, -32602);
/// assert_eq!(error.data.unwrap()["uri"], "file:///missing");
/// ```
pub fn not_found(uri: &str) -> ErrorObject {
    ErrorObject::invalid_params(format_args!("resource not found: {uri}"))
        .with_data(json!({ "uri": uri }))
}

/// A registered static resource.
#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    /// The definition as a `resources/list` page carries it, encoded once at registration.
    pub(crate) listed: RawJson,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

impl ResourceEntry {
    /// A resource served by `handler`.
    pub(crate) fn new(resource: Resource, handler: Arc<dyn ResourceHandler>) -> Self {
        ResourceEntry { listed: crate::pagination::listed(&resource), resource, handler }
    }
}

/// A registered resource template.
#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    /// The definition as a `resources/templates/list` page carries it, encoded once at
    /// registration.
    pub(crate) listed: RawJson,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

impl TemplateEntry {
    pub(crate) fn new(
        template: ResourceTemplate,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<Self, RegistrationError> {
        let parsed = UriTemplate::parse(&template.uri_template)
            .map_err(|e| RegistrationError::InvalidTemplate(e.to_string()))?;
        let listed = crate::pagination::listed(&template);
        Ok(TemplateEntry { template, listed, parsed, handler })
    }
}

/// Runs a read and gives contents without a MIME type the resource's one.
pub(crate) async fn read(
    handler: Arc<dyn ResourceHandler>,
    mime_type: Option<String>,
    ctx: Context,
    request: ReadRequest,
) -> Result<ReadReply, ErrorObject> {
    let mut contents = match handler.read(ctx, request).await? {
        Reply::Complete(contents) => contents,
        input_required => return Ok(input_required),
    };
    if let Some(mime) = mime_type {
        for c in &mut contents {
            let slot = match c {
                ResourceContents::Text(t) => &mut t.mime_type,
                ResourceContents::Blob(b) => &mut b.mime_type,
            };
            slot.get_or_insert_with(|| mime.clone());
        }
    }
    Ok(Reply::Complete(contents))
}
