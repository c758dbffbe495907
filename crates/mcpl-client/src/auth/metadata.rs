//! Discovery: protected resource metadata (RFC 9728) and authorization server metadata
//! (RFC 8414, OpenID Connect Discovery).

use reqwest::Url;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{AuthError, DiscoveryPolicy};

/// The largest metadata or token response read.
pub(crate) const MAX_BODY: usize = 256 * 1024;

/// The protected resource metadata of an MCP server (RFC 9728).
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::ResourceMetadata;
/// use serde_json::json;
///
/// // As served at `/.well-known/oauth-protected-resource` (RFC 9728).
/// let metadata: ResourceMetadata = serde_json::from_value(json!({
///     "resource": "https://mcp.example.com/mcp",
///     "authorization_servers": ["https://auth.example.com"],
///     "scopes_supported": ["mcp:tools"],
///     "bearer_methods_supported": ["header"],
/// }))?;
/// assert_eq!(metadata.authorization_servers, ["https://auth.example.com"]);
/// assert_eq!(metadata.scopes_supported, Some(vec!["mcp:tools".to_owned()]));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource identifier, sent as the `resource` parameter.
    pub resource: String,
    /// The issuers of the authorization servers that protect the resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// Whether the resource accepts DPoP-bound access tokens only (RFC 9728).
    #[serde(default)]
    pub dpop_bound_access_tokens_required: Option<bool>,
}

/// Authorization server metadata (RFC 8414; OpenID provider metadata has the same fields).
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::ServerMetadata;
/// use serde_json::json;
///
/// // As served at `/.well-known/oauth-authorization-server` (RFC 8414).
/// let metadata: ServerMetadata = serde_json::from_value(json!({
///     "issuer": "https://auth.example.com",
///     "authorization_endpoint": "https://auth.example.com/authorize",
///     "token_endpoint": "https://auth.example.com/token",
///     "code_challenge_methods_supported": ["S256"],
/// }))?;
/// assert_eq!(metadata.token_endpoint, "https://auth.example.com/token");
/// assert_eq!(metadata.registration_endpoint, None); // no dynamic registration here
/// assert!(metadata.code_challenge_methods_supported.iter().flatten().any(|m| m == "S256"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes the client (absent at servers that only issue tokens to
    /// clients acting on their own behalf).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens become access tokens.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The PKCE methods supported; S256 is required.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The grant types supported.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Whether URL client ids (client ID metadata documents) are accepted.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// The DPoP proof algorithms the server accepts (RFC 9449 section 5.1).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// Whether `scope` is listed in `scopes_supported`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::ServerMetadata;
    /// use serde_json::json;
    ///
    /// let metadata: ServerMetadata = serde_json::from_value(json!({
    ///     "issuer": "https://auth.example.com",
    ///     "token_endpoint": "https://auth.example.com/token",
    ///     "scopes_supported": ["openid", "offline_access"],
    /// }))?;
    /// // Refresh tokens are asked for only where the server offers them.
    /// assert!(metadata.supports_scope("offline_access"));
    /// assert!(!metadata.supports_scope("admin"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported.iter().flatten().any(|s| s == scope)
    }
}

/// GETs `url` and decodes its JSON body; `Ok(None)` for a 4xx (try the next location).
pub(crate) async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<Option<T>, AuthError> {
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| AuthError::exchange(url, &e))?;
    let status = response.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(AuthError::Http { url: url.to_owned(), detail: format!("HTTP {status}") });
    }
    let body = read_limited(response, url).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| AuthError::InvalidMetadata { url: url.to_owned(), detail: e.to_string() })
}

/// Reads a body of at most [`MAX_BODY`] bytes.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    url: &str,
) -> Result<Vec<u8>, AuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| AuthError::exchange(url, &e))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::Http {
                url: url.to_owned(),
                detail: format!("response larger than {MAX_BODY} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub(crate) fn parse_url(url: &str) -> Result<Url, AuthError> {
    Url::parse(url)
        .map_err(|e| AuthError::InvalidUrl { url: url.to_owned(), detail: e.to_string() })
}

/// The origin of `url` (`scheme://host[:port]`).
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Fetches the protected resource metadata of `server`: from the challenge's
/// `resource_metadata` when given (if `policy` accepts it), else at the path-aware well-known
/// location, then the root.
pub(crate) async fn discover_resource(
    http: &reqwest::Client,
    policy: &DiscoveryPolicy,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<ResourceMetadata, AuthError> {
    let server_url = server.as_str();
    let mut candidates = Vec::new();
    if let Some(url) = from_challenge {
        candidates.push(policy.check_resource_metadata(url, server).await?.to_string());
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!("{}/.well-known/oauth-protected-resource{path}", origin(server)));
    }
    candidates.push(format!("{}/.well-known/oauth-protected-resource", origin(server)));
    for url in &candidates {
        if let Some(metadata) = get_json::<ResourceMetadata>(http, url).await? {
            tracing::debug!(%url, resource = %metadata.resource, "protected resource metadata");
            check_resource(server_url, &metadata.resource)?;
            return Ok(metadata);
        }
    }
    Err(AuthError::NoResourceMetadata { server: server_url.to_owned() })
}

/// What stands in for the protected resource metadata of a server that has none (the
/// 2025-03-26 revision): the server's origin is its authorization server.
pub(crate) fn legacy_resource(server_url: &str, server: &Url) -> ResourceMetadata {
    ResourceMetadata {
        resource: server_url.to_owned(),
        authorization_servers: vec![origin(server)],
        scopes_supported: None,
        dpop_bound_access_tokens_required: None,
    }
}

/// The metadata of an authorization server that publishes none (the 2025-03-26 revision):
/// the default endpoints at its origin, and PKCE S256, which that revision requires.
pub(crate) fn default_endpoints(issuer: &str) -> ServerMetadata {
    let base = issuer.trim_end_matches('/');
    ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: Some(format!("{base}/authorize")),
        token_endpoint: format!("{base}/token"),
        registration_endpoint: Some(format!("{base}/register")),
        scopes_supported: None,
        code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
        token_endpoint_auth_methods_supported: None,
        grant_types_supported: None,
        authorization_response_iss_parameter_supported: None,
        client_id_metadata_document_supported: None,
        dpop_signing_alg_values_supported: None,
    }
}

/// The metadata of an authorization server known only by its issuer and token endpoint (an
/// identity provider the application configured).
pub(crate) fn token_endpoint_only(issuer: &str, token_endpoint: &str) -> ServerMetadata {
    ServerMetadata {
        authorization_endpoint: None,
        token_endpoint: token_endpoint.to_owned(),
        registration_endpoint: None,
        code_challenge_methods_supported: None,
        ..default_endpoints(issuer)
    }
}

/// The resource of the metadata must identify the server: the same origin, and a path that is
/// a prefix (by whole segments) of the server's.
fn check_resource(server_url: &str, resource: &str) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        server: server_url.to_owned(),
        resource: resource.to_owned(),
    };
    let server = parse_url(server_url)?;
    let declared = Url::parse(resource).map_err(|_| mismatch())?;
    if origin(&server) != origin(&declared) || declared.fragment().is_some() {
        return Err(mismatch());
    }
    let prefix = declared.path().trim_end_matches('/');
    let path = server.path();
    let within = path == prefix
        || path.trim_end_matches('/') == prefix
        || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'));
    if within { Ok(()) } else { Err(mismatch()) }
}

/// Fetches the metadata of the authorization server `issuer`, trying in order (RFC 8414,
/// OpenID Connect Discovery, as the MCP specification lists them):
///
/// - for an issuer with a path: `/.well-known/oauth-authorization-server/<path>`,
///   `/.well-known/openid-configuration/<path>`, `/<path>/.well-known/openid-configuration`;
/// - without: `/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration`.
///
/// The document's `issuer` must be exactly `issuer`.
pub(crate) async fn discover_server(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<ServerMetadata, AuthError> {
    let url = parse_url(issuer)?;
    let base = origin(&url);
    let path = url.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{base}/.well-known/oauth-authorization-server"),
            format!("{base}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{base}/.well-known/oauth-authorization-server{path}"),
            format!("{base}/.well-known/openid-configuration{path}"),
            format!("{base}{path}/.well-known/openid-configuration"),
        ]
    };
    for candidate in &candidates {
        if let Some(metadata) = get_json::<ServerMetadata>(http, candidate).await? {
            if metadata.issuer != issuer {
                return Err(AuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: metadata.issuer,
                });
            }
            return Ok(metadata);
        }
    }
    Err(AuthError::NoServerMetadata { issuer: issuer.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_must_identify_the_server() {
        assert!(check_resource("http://h:1/mcp", "http://h:1/mcp").is_ok());
        assert!(check_resource("http://h:1/mcp", "http://h:1").is_ok());
        assert!(check_resource("http://h:1/mcp", "http://h:1/").is_ok());
        assert!(check_resource("http://h:1/a/mcp", "http://h:1/a").is_ok());
        assert!(check_resource("http://h:1/mcp", "https://evil.example.com/mcp").is_err());
        assert!(check_resource("http://h:1/mcp", "http://h:2/mcp").is_err());
        assert!(check_resource("http://h:1/mcpx", "http://h:1/mcp").is_err());
        assert!(check_resource("http://h:1/mcp", "http://h:1/other").is_err());
        assert!(check_resource("http://h:1/mcp", "not a url").is_err());
    }
}
