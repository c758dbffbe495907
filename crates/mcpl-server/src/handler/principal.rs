//! Who a request acts for: the access token a bearer-token layer verified
//! ([`http::auth`](crate::http::auth)), and the principal the server binds sessions, tasks and
//! request state to. Here, outside the `http` feature, because every transport's handlers see
//! them ([`Context::access_token`](crate::Context::access_token)).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// What a [`TokenVerifier`](crate::http::auth::TokenVerifier) learnt from a valid access token. It is added to the request's
/// extensions, for handlers mounted next to the MCP endpoint; MCP handlers read the token of
/// the request they serve with [`Context::access_token`](crate::Context::access_token).
///
/// # Examples
///
/// What a verifier might make of an introspection response:
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use mcpl_server::http::auth::AccessToken;
///
/// let introspected = serde_json::json!({
///     "active": true, "scope": "mcp:read mcp:write", "client_id": "cli-42", "sub": "ada",
/// });
/// let token = AccessToken::new(introspected["scope"].as_str().unwrap_or_default().split(' '))
///     .client_id("cli-42")
///     .subject("ada")
///     .expires_at(SystemTime::now() + Duration::from_secs(3600));
/// assert_eq!(token.scopes, ["mcp:read", "mcp:write"]);
/// assert_eq!(token.subject.as_deref(), Some("ada"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// The client the token was issued to, when known.
    pub client_id: Option<String>,
    /// The user (or other subject) the token stands for, when known.
    pub subject: Option<String>,
    /// When the token expires, when known; an expired token is refused.
    pub expires_at: Option<SystemTime>,
    /// The RFC 7638 thumbprint of the key the token is bound to (its `cnf.jkt`), for a
    /// DPoP-bound token: it is then accepted only with a proof signed by that key.
    pub dpop_jkt: Option<String>,
}

impl AccessToken {
    /// A token granting `scopes`, with no client, subject or expiry recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::AccessToken;
    ///
    /// let token = AccessToken::new(["mcp:tools"]);
    /// assert_eq!(token.scopes, vec!["mcp:tools".to_owned()]);
    /// assert_eq!((token.client_id, token.subject, token.expires_at), (None, None, None));
    /// ```
    pub fn new<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Self {
        AccessToken {
            scopes: scopes.into_iter().map(Into::into).collect(),
            client_id: None,
            subject: None,
            expires_at: None,
            dpop_jkt: None,
        }
    }

    /// The token is bound to the DPoP key of thumbprint `jkt` (the token's `cnf.jkt`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::AccessToken;
    ///
    /// // From a JWT access token's claims, say.
    /// let claims = serde_json::json!({"scope": "mcp:tools", "cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}});
    /// let mut token = AccessToken::new(claims["scope"].as_str().unwrap_or_default().split(' '));
    /// if let Some(jkt) = claims["cnf"]["jkt"].as_str() {
    ///     token = token.dpop_jkt(jkt);
    /// }
    /// assert!(token.dpop_jkt.is_some());
    /// ```
    #[must_use]
    pub fn dpop_jkt(mut self, jkt: impl Into<String>) -> Self {
        self.dpop_jkt = Some(jkt.into());
        self
    }

    /// Records the client the token was issued to.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::AccessToken;
    ///
    /// let token = AccessToken::new(["mcp:tools"]).client_id("cli-42");
    /// assert_eq!(token.client_id.as_deref(), Some("cli-42"));
    /// ```
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Records the subject the token stands for.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::AccessToken;
    ///
    /// let token = AccessToken::new(["mcp:tools"]).subject("user-7");
    /// assert_eq!(token.subject.as_deref(), Some("user-7"));
    /// ```
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Records when the token expires. [`BearerAuth`](crate::http::auth::BearerAuth) refuses the token (`401`
    /// `invalid_token`) once that time has passed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use mcpl_server::http::auth::AccessToken;
    ///
    /// // A JWT's `exp` claim, in seconds since the epoch.
    /// let exp = 1_900_000_000;
    /// let token = AccessToken::new(["mcp:tools"]).expires_at(UNIX_EPOCH + Duration::from_secs(exp));
    /// assert_eq!(token.expires_at, Some(UNIX_EPOCH + Duration::from_secs(1_900_000_000)));
    /// ```
    #[must_use]
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// Who the token acts for: its subject, or, without one, the client it was issued to;
    /// `None` when the verifier recorded neither.
    ///
    /// The server binds what a request creates to its principal: a 2025-era session, a task,
    /// the sealed `requestState` of an input-required result. Another principal's requests
    /// find none of them (a session is `404`, a task "not found", a state invalid), whatever
    /// ids they present. Requests without a token, and tokens without a principal, are all
    /// one anonymous principal: a verifier should record the subject or the client id.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::{AccessToken, Principal};
    ///
    /// let user = AccessToken::new(["mcp:tools"]).client_id("cli-42").subject("ada");
    /// assert_eq!(user.principal(), Some(Principal::Subject("ada".into())));
    /// let service = AccessToken::new(["mcp:tools"]).client_id("batch-job");
    /// assert_eq!(service.principal(), Some(Principal::Client("batch-job".into())));
    /// assert_eq!(AccessToken::new(["mcp:tools"]).principal(), None);
    /// ```
    pub fn principal(&self) -> Option<Principal> {
        match (&self.subject, &self.client_id) {
            (Some(subject), _) => Some(Principal::Subject(subject.clone())),
            (None, Some(client)) => Some(Principal::Client(client.clone())),
            (None, None) => None,
        }
    }

    #[cfg(feature = "auth")]
    pub(crate) fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|s| self.scopes.contains(s))
    }
}

/// Who a request acts for, as far as the server binds sessions, tasks and request state to it
/// (see [`AccessToken::principal`]). A subject and a client of the same name are different
/// principals.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::auth::Principal;
///
/// let ada = Principal::Subject("ada".into());
/// assert_ne!(ada, Principal::Client("ada".into()));
/// assert_eq!(serde_json::to_value(&ada)?, serde_json::json!({"subject": "ada"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Principal {
    /// The token's subject (`sub`): a user, usually.
    Subject(String),
    /// The client the token was issued to (`client_id`), for a token without a subject.
    Client(String),
}

impl Principal {
    /// The principal as one string, for what is sealed or tagged with it.
    pub(crate) fn key(&self) -> String {
        match self {
            Principal::Subject(subject) => format!("sub:{subject}"),
            Principal::Client(client) => format!("client:{client}"),
        }
    }
}
