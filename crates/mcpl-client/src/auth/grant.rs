//! The grants of a client acting without a user at hand: the JWT bearer grant (RFC 7523
//! section 2.1) for workload identity federation, and enterprise-managed authorization (an
//! ID-JAG from the enterprise's identity provider by token exchange, RFC 8693, then presented
//! with the JWT bearer grant).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{AuthError, ClientCredentials};

/// `grant_type` of the JWT bearer grant (RFC 7523 section 2.1).
pub(crate) const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of a token exchange (RFC 8693).
pub(crate) const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693 section 3).
pub(crate) const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion authorization grant (the ID-JAG draft).
pub(crate) const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// An assertion file larger than this is refused (workload tokens are a few kilobytes).
const MAX_ASSERTION_BYTES: u64 = 64 * 1024;

/// Where a JWT the client presents comes from: a workload identity token
/// ([`OAuth::jwt_bearer`](super::OAuth::jwt_bearer)) or the user's ID token from single sign-on
/// ([`IdentityProvider`]). Asked each time one is needed, so a source may hand out a token
/// that rotates.
///
/// # Examples
///
/// ```
/// use futures::future::BoxFuture;
/// use mcpl_client::auth::{AssertionSource, AuthError};
///
/// /// The token a metadata service hands the workload.
/// #[derive(Debug)]
/// struct FromEnv;
///
/// impl AssertionSource for FromEnv {
///     fn assertion(&self) -> BoxFuture<'_, Result<String, AuthError>> {
///         Box::pin(async {
///             std::env::var("WORKLOAD_TOKEN").map_err(|e| AuthError::Assertion(e.to_string()))
///         })
///     }
/// }
/// ```
pub trait AssertionSource: Send + Sync + fmt::Debug {
    /// The current assertion (a compact JWT).
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthError>>;
}

/// A fixed assertion. Never shown in `Debug` output.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::Assertion;
///
/// let assertion = Assertion::new("eyJhbGciOiJFUzI1NiJ9.e30.sig");
/// assert!(!format!("{assertion:?}").contains("eyJ"));
/// ```
#[derive(Clone)]
pub struct Assertion(String);

impl Assertion {
    /// The assertion `jwt`.
    pub fn new(jwt: impl Into<String>) -> Self {
        Assertion(jwt.into())
    }
}

impl fmt::Debug for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Assertion(<redacted>)")
    }
}

impl AssertionSource for Assertion {
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

/// An assertion read from a file each time it is needed: a token the platform rotates in
/// place, such as a Kubernetes projected service account token. At most 64 KiB; surrounding
/// whitespace is dropped.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{AssertionFile, ClientCredentials, OAuth};
///
/// let token = AssertionFile::new("/var/run/secrets/tokens/mcp-token");
/// let oauth = OAuth::jwt_bearer(None, ClientCredentials::public("my-workload"), token);
/// # drop(oauth);
/// ```
#[derive(Debug, Clone)]
pub struct AssertionFile(PathBuf);

impl AssertionFile {
    /// The assertion in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AssertionFile(path.into())
    }
}

impl AssertionSource for AssertionFile {
    fn assertion(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(async move {
            use tokio::io::AsyncReadExt;
            let fail = |e: std::io::Error| {
                AuthError::Assertion(format!("reading {}: {e}", self.0.display()))
            };
            let file = tokio::fs::File::open(&self.0).await.map_err(fail)?;
            let mut text = String::new();
            file.take(MAX_ASSERTION_BYTES + 1).read_to_string(&mut text).await.map_err(fail)?;
            if text.len() as u64 > MAX_ASSERTION_BYTES {
                return Err(AuthError::Assertion(format!(
                    "{} is larger than {MAX_ASSERTION_BYTES} bytes",
                    self.0.display()
                )));
            }
            let jwt = text.trim();
            if jwt.is_empty() {
                return Err(AuthError::Assertion(format!("{} is empty", self.0.display())));
            }
            Ok(jwt.to_owned())
        })
    }
}

/// The enterprise's identity provider, for enterprise-managed authorization
/// ([`OAuth::enterprise`](super::OAuth::enterprise)): the user's ID token is exchanged there
/// (RFC 8693) for an ID-JAG, an identity assertion addressed to the MCP server's
/// authorization server, which then issues the access token for it (JWT bearer grant).
///
/// The identity provider is the application's configuration, not something a server names,
/// so its URLs are not held to the [`DiscoveryPolicy`](super::DiscoveryPolicy).
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{Assertion, ClientCredentials, IdentityProvider};
///
/// // The ID token the user got at sign-in, and this client's registration at the IdP.
/// let idp = IdentityProvider::new(
///     "https://idp.example.com",
///     ClientCredentials::confidential("idp-client", "idp-secret"),
///     Assertion::new("eyJ...id-token"),
/// )
/// .token_endpoint("https://idp.example.com/oauth2/token");
/// assert_eq!(idp.issuer(), "https://idp.example.com");
/// ```
#[derive(Debug, Clone)]
pub struct IdentityProvider {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) client: ClientCredentials,
    pub(crate) id_token: Arc<dyn AssertionSource>,
}

impl IdentityProvider {
    /// The identity provider `issuer`, where this client is registered as `client`, and
    /// where the user's ID token comes from `id_token`. Its token endpoint is discovered from
    /// its metadata unless set with [`token_endpoint`](Self::token_endpoint).
    pub fn new(
        issuer: impl Into<String>,
        client: ClientCredentials,
        id_token: impl AssertionSource + 'static,
    ) -> Self {
        IdentityProvider {
            issuer: issuer.into(),
            token_endpoint: None,
            client,
            id_token: Arc::new(id_token),
        }
    }

    /// The token endpoint, instead of discovering it.
    #[must_use]
    pub fn token_endpoint(mut self, url: impl Into<String>) -> Self {
        self.token_endpoint = Some(url.into());
        self
    }

    /// The identity provider's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// How a client acting on its own behalf obtains tokens.
#[derive(Debug, Clone)]
pub(crate) enum MachineGrant {
    /// The client credentials grant.
    ClientCredentials,
    /// The JWT bearer grant with an assertion from this source (workload identity).
    JwtBearer(Arc<dyn AssertionSource>),
    /// Token exchange at the identity provider, then the JWT bearer grant.
    Enterprise(Box<IdentityProvider>),
}

impl MachineGrant {
    /// The grant's `grant_type` at the MCP server's authorization server.
    pub(crate) fn grant_type(&self) -> &'static str {
        match self {
            MachineGrant::ClientCredentials => "client_credentials",
            MachineGrant::JwtBearer(_) | MachineGrant::Enterprise(_) => JWT_BEARER_GRANT,
        }
    }
}

/// The last assertion an authorization server (or identity provider) refused for a server,
/// by digest: a refusal is final for that assertion (only a refused one is remembered, and
/// only the last).
#[derive(Debug, Default)]
pub(crate) struct Refused(std::sync::Mutex<Option<Refusal>>);

/// A refusal: the server, the assertion's digest, the OAuth error and its description.
type Refusal = (String, [u8; 32], String, Option<String>);

impl Refused {
    /// The refusal of the assertion of digest `digest` at `server`, if it was refused.
    pub(crate) fn previous(&self, server: &str, digest: [u8; 32]) -> Option<AuthError> {
        let last = super::lock(&self.0);
        let (s, d, error, description) = last.as_ref()?;
        (s == server && *d == digest)
            .then(|| AuthError::Refused { error: error.clone(), description: description.clone() })
    }

    /// Records `e` when it is a refusal (not a transient failure).
    pub(crate) fn record(&self, server: &str, digest: [u8; 32], e: &AuthError) {
        if let AuthError::Refused { error, description } = e {
            *super::lock(&self.0) =
                Some((server.to_owned(), digest, error.clone(), description.clone()));
        }
    }
}

/// Checks a token exchange response is an ID-JAG, and gives it.
pub(crate) fn id_jag(response: &serde_json::Map<String, Value>) -> Result<String, AuthError> {
    let issued = response.get("issued_token_type").and_then(Value::as_str);
    if issued != Some(ID_JAG_TOKEN_TYPE) {
        return Err(AuthError::InvalidResponse(format!(
            "the token exchange issued {issued:?}, not an ID-JAG"
        )));
    }
    response
        .get("access_token")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| AuthError::InvalidResponse("token exchange without access_token".into()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn assertion_files_are_trimmed_bounded_and_typed_errors() {
        let dir = std::env::temp_dir().join(format!("mcpl-assertion-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "  eyJ.a.b\n").unwrap();
        assert_eq!(AssertionFile::new(&path).assertion().await.unwrap(), "eyJ.a.b");
        std::fs::write(&path, "x".repeat(MAX_ASSERTION_BYTES as usize + 1)).unwrap();
        assert_eq!(AssertionFile::new(&path).assertion().await.unwrap_err().kind(), "assertion");
        std::fs::write(&path, "\n").unwrap();
        assert_eq!(AssertionFile::new(&path).assertion().await.unwrap_err().kind(), "assertion");
        let missing = AssertionFile::new(dir.join("missing"));
        assert_eq!(missing.assertion().await.unwrap_err().kind(), "assertion");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn token_exchange_must_issue_an_id_jag() {
        let ok = json!({"access_token": "jag", "issued_token_type": ID_JAG_TOKEN_TYPE});
        assert_eq!(id_jag(ok.as_object().unwrap()).unwrap(), "jag");
        let other = json!({"access_token": "at", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"});
        assert_eq!(id_jag(other.as_object().unwrap()).unwrap_err().kind(), "invalid_response");
        let none = json!({"issued_token_type": ID_JAG_TOKEN_TYPE});
        assert!(id_jag(none.as_object().unwrap()).is_err());
    }
}
