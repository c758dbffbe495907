//! Resource handlers: reading static resources and resources described by URI templates.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::FutureExt as _;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    BlobResourceContents, Resource, ResourceContents, ResourceTemplate, TextResourceContents,
};
use serde_json::json;

use crate::builder::RegistrationError;
use crate::context::Context;
use crate::input::{ReadReply, Reply};
use crate::uri_template::UriTemplate;

/// What a resource handler returns: the resource's contents, or a protocol error (see
/// [`not_found`]).
///
/// A handler that may ask the client for input returns `Result<ReadReply, ErrorObject>`
/// instead (see [`crate::input`]).
pub type ReadResult = Result<Vec<ResourceContents>, ErrorObject>;

/// What is being read: the URI and, for a resource template, the values of its variables.
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
    pub fn var(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// Serves the reads of one resource or resource template.
///
/// Implemented for every `Fn(Context, ReadRequest) -> impl Future<Output = Result<R,
/// ErrorObject>>` where `R` converts into a [`ReadReply`] (the contents, or a [`ReadReply`]
/// for handlers that may ask for input).
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
#[derive(Debug, Clone, Copy)]
pub struct ResourceOutput;

impl ResourceOutput {
    /// Text contents of the resource at `uri`.
    ///
    /// The MIME type, when not set, is the one of the resource or template being read.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> ResourceContents {
        TextResourceContents::new(uri, text).into()
    }

    /// Binary contents of the resource at `uri`, from raw bytes (base64-encoded here).
    pub fn bytes(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> ResourceContents {
        BlobResourceContents::new(uri, STANDARD.encode(bytes)).into()
    }

    /// Binary contents of the resource at `uri`, from base64 data.
    pub fn blob(uri: impl Into<String>, base64: impl Into<String>) -> ResourceContents {
        BlobResourceContents::new(uri, base64).into()
    }
}

/// The error answering a read of a resource that does not exist: `-32602` with
/// `data: {"uri": uri}`.
///
/// The server answers this for URIs no resource or template matches; a template handler
/// returns it for matching URIs that name nothing.
pub fn not_found(uri: &str) -> ErrorObject {
    ErrorObject::invalid_params(format_args!("resource not found: {uri}"))
        .with_data(json!({ "uri": uri }))
}

/// A registered static resource.
#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

/// A registered resource template.
#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
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
        Ok(TemplateEntry { template, parsed, handler })
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
