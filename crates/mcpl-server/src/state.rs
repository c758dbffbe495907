//! Sealing the `requestState` of input-required results (2026-07-28).
//!
//! A `requestState` travels through the client, so it is attacker-controlled. A
//! [`StateSealer`] turns a JSON payload into an opaque token the server can trust again:
//!
//! ```text
//! base64url(envelope) "." base64url(HMAC-SHA256(key, base64url(envelope)))
//! envelope = {"v": 1, "m": method, "n": name, "exp": unix-millis, "d": payload}
//!            (and "p": principal, for a state sealed for one)
//! ```
//!
//! Opening checks the tag (in constant time), the expiry, and that the token was sealed for the
//! same method and tool, prompt or resource, and the same principal ([`Binding`]). Any failure is a [`StateError`],
//! which the server answers with `-32602` ("invalid requestState"): a bad state is never
//! trusted and never re-prompted.
//!
//! ```
//! use std::time::Duration;
//! use mcpl_server::state::{Binding, StateSealer};
//!
//! let sealer = StateSealer::new(b"a key shared by every instance").with_ttl(Duration::from_secs(60));
//! let bind = Binding::new("tools/call", "book_flight");
//! let token = sealer.seal(&serde_json::json!({"step": 2}), &bind);
//! assert_eq!(sealer.open(&token, &bind).unwrap(), serde_json::json!({"step": 2}));
//! assert!(sealer.open(&format!("{token}-TAMPERED"), &bind).is_err());
//! assert!(sealer.open(&token, &Binding::new("tools/call", "other")).is_err());
//! ```

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::http::auth::Principal;

type HmacSha256 = Hmac<Sha256>;

/// How long a sealed state stays valid unless configured otherwise: 10 minutes.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::state::DEFAULT_STATE_TTL.as_secs(), 600);
/// ```
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// The version of the envelope format.
const FORMAT: u64 = 1;

/// What a sealed state is bound to: the method and the name of the tool or prompt, or the URI
/// of the resource, of the request that produced it, and who made that request (the
/// [`Principal`] of its access token; the server sets it).
///
/// # Examples
///
/// ```
/// use mcpl_server::state::{Binding, StateSealer};
///
/// let sealer = StateSealer::new(b"key");
/// let token = sealer.seal(&serde_json::json!(1), &Binding::new("prompts/get", "review"));
/// assert!(sealer.open(&token, &Binding::new("prompts/get", "summary")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub name: String,
    /// Who made the request; `None`: anonymous.
    pub principal: Option<Principal>,
}

impl Binding {
    /// A binding to `method` on the tool, prompt or resource `name`.
    ///
    /// # Examples
    ///
    /// A state sealed while reading one resource opens only for that resource:
    ///
    /// ```
    /// use mcpl_server::state::{Binding, StateError, StateSealer};
    ///
    /// let sealer = StateSealer::new(b"secret");
    /// let invoice = Binding::new("resources/read", "billing://invoices/42");
    /// assert_eq!(invoice.method, "resources/read");
    /// let token = sealer.seal(&serde_json::json!({"approved": true}), &invoice);
    /// assert_eq!(sealer.open(&token, &invoice).unwrap()["approved"], true);
    /// let other = Binding::new("resources/read", "billing://invoices/43");
    /// assert_eq!(sealer.open(&token, &other), Err(StateError::WrongBinding));
    /// ```
    pub fn new(method: impl Into<String>, name: impl Into<String>) -> Self {
        Binding { method: method.into(), name: name.into(), principal: None }
    }

    /// This binding, for requests of `principal` only (`None`: anonymous ones).
    ///
    /// # Examples
    ///
    /// A state sealed for Ada's request does not open for Bob's:
    ///
    /// ```
    /// use mcpl_server::http::auth::Principal;
    /// use mcpl_server::state::{Binding, StateError, StateSealer};
    ///
    /// let sealer = StateSealer::new(b"secret");
    /// let call = Binding::new("tools/call", "transfer");
    /// let ada = call.clone().for_principal(Some(Principal::Subject("ada".into())));
    /// let token = sealer.seal(&serde_json::json!({"step": 2}), &ada);
    /// assert!(sealer.open(&token, &ada).is_ok());
    /// let bob = call.clone().for_principal(Some(Principal::Subject("bob".into())));
    /// assert_eq!(sealer.open(&token, &bob), Err(StateError::WrongBinding));
    /// assert_eq!(sealer.open(&token, &call), Err(StateError::WrongBinding), "nor anonymously");
    /// ```
    #[must_use]
    pub fn for_principal(mut self, principal: Option<Principal>) -> Self {
        self.principal = principal;
        self
    }
}

/// Why a sealed state was refused.
///
/// # Examples
///
/// ```
/// use mcpl_server::state::{Binding, StateError, StateSealer};
///
/// let bind = Binding::new("tools/call", "t");
/// let token = StateSealer::new(b"one key").seal(&serde_json::json!({}), &bind);
/// let err = StateSealer::new(b"another key").open(&token, &bind).unwrap_err();
/// assert_eq!(err, StateError::BadTag);
/// assert_eq!(StateSealer::new(b"k").open("garbage", &bind), Err(StateError::Malformed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The token is not a sealed state at all (format, encoding or JSON).
    #[error("malformed requestState")]
    Malformed,
    /// The tag does not match: the token was altered or sealed with another key.
    #[error("requestState failed verification")]
    BadTag,
    /// The token is older than its time to live.
    #[error("requestState has expired")]
    Expired,
    /// The token was sealed for another method, tool, prompt or resource, or for another
    /// principal.
    #[error("requestState belongs to another request")]
    WrongBinding,
}

impl StateError {
    /// The JSON-RPC error answering a request that carried this state: `-32602`
    /// "invalid requestState", with the reason in `data.reason`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::state::StateError;
    ///
    /// let error = StateError::Expired.to_error_object();
    /// assert_eq!(error.code.0, -32602);
    /// assert_eq!(error.data.unwrap()["reason"], "requestState has expired");
    /// ```
    pub fn to_error_object(self) -> ErrorObject {
        ErrorObject::new(ErrorCode::INVALID_PARAMS, "invalid requestState")
            .with_data(json!({ "reason": self.to_string() }))
    }
}

impl From<StateError> for ErrorObject {
    fn from(e: StateError) -> Self {
        e.to_error_object()
    }
}

/// Seals and opens `requestState` tokens with HMAC-SHA256 (see the [module docs](self)).
///
/// Cheap to clone (clones share the key). [`StateSealer::random`] draws a per-process key,
/// which is the default of every server; a deployment with several instances behind one
/// endpoint sets the same key on each with [`StateSealer::new`] (and
/// [`ServerBuilder::state_sealer`](crate::ServerBuilder::state_sealer)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::state::{Binding, StateSealer};
///
/// let sealer = StateSealer::new(b"shared secret").with_ttl(Duration::from_secs(30));
/// let bind = Binding::new("tools/call", "wizard");
/// let token = sealer.seal(&serde_json::json!({"page": 3}), &bind);
/// assert_eq!(sealer.open(&token, &bind).unwrap()["page"], 3);
/// ```
#[derive(Clone)]
pub struct StateSealer {
    key: Arc<[u8]>,
    ttl: Duration,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("StateSealer").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

impl StateSealer {
    /// A sealer with the given secret key (any length; at least 32 random bytes advised) and
    /// the default time to live ([`DEFAULT_STATE_TTL`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let sealer = mcpl_server::state::StateSealer::new(std::env::var("STATE_KEY").unwrap_or_default());
    /// # drop(sealer);
    /// ```
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        StateSealer { key: Arc::from(key.as_ref()), ttl: DEFAULT_STATE_TTL }
    }

    /// A sealer with a fresh random 32-byte key from the operating system.
    ///
    /// Should the operating system's generator fail, the key is drawn from the standard
    /// library's per-process hash seeds instead (and a warning is logged).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::state::{Binding, StateSealer};
    ///
    /// let bind = Binding::new("tools/call", "t");
    /// let token = StateSealer::random().seal(&serde_json::json!(1), &bind);
    /// // Another random key cannot open it.
    /// assert!(StateSealer::random().open(&token, &bind).is_err());
    /// ```
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        if let Err(e) = getrandom::fill(&mut key) {
            tracing::warn!(error = %e, "no OS randomness for the requestState key; using hash seeds");
            for (i, chunk) in key.chunks_mut(8).enumerate() {
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_usize(i);
                hasher.write_u128(now_millis());
                chunk.copy_from_slice(&hasher.finish().to_le_bytes());
            }
        }
        Self::new(key)
    }

    /// Sets how long sealed states stay valid.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let sealer = mcpl_server::state::StateSealer::random().with_ttl(Duration::from_secs(5));
    /// assert_eq!(sealer.ttl(), Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long sealed states stay valid.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::Server;
    /// use mcpl_server::state::{DEFAULT_STATE_TTL, StateSealer};
    ///
    /// assert_eq!(StateSealer::new(b"k").ttl(), DEFAULT_STATE_TTL);
    /// // A server's sealer takes the time to live set on its builder.
    /// let server = Server::builder("s", "1").request_state_ttl(Duration::from_secs(120)).build();
    /// assert_eq!(server.state_sealer().ttl(), Duration::from_secs(120));
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Seals `payload` for requests matching `bind`, valid for the sealer's time to live.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::state::{Binding, StateSealer};
    ///
    /// let token = StateSealer::new(b"k").seal(&serde_json::json!({"a": 1}), &Binding::new("tools/call", "t"));
    /// assert!(token.contains('.'), "envelope.tag");
    /// ```
    pub fn seal(&self, payload: &Value, bind: &Binding) -> String {
        self.seal_at(payload, bind, now_millis())
    }

    /// Opens a token sealed by [`seal`](Self::seal) (with the same key) for `bind`, giving its
    /// payload.
    ///
    /// # Errors
    ///
    /// [`StateError`] when the token is malformed, altered, expired or bound to another
    /// request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::state::{Binding, StateSealer};
    ///
    /// let (sealer, bind) = (StateSealer::new(b"k"), Binding::new("resources/read", "file:///a"));
    /// let token = sealer.seal(&serde_json::json!("payload"), &bind);
    /// assert_eq!(sealer.open(&token, &bind).unwrap(), "payload");
    /// ```
    pub fn open(&self, token: &str, bind: &Binding) -> Result<Value, StateError> {
        self.open_at(token, bind, now_millis())
    }

    /// A tag of `parts` under this sealer's key, for `purpose` (so that a tag made for one
    /// purpose is never valid for another): how ids handed to clients are bound to what they
    /// name without storing the binding (see [`crate::task`]).
    pub(crate) fn tag(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.mac();
        for part in std::iter::once(purpose.as_bytes()).chain(parts.iter().copied()) {
            // Length-prefixed, so that parts cannot shift into one another.
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length; the error case cannot happen.
        HmacSha256::new_from_slice(&self.key)
            .unwrap_or_else(|_| <HmacSha256 as Mac>::new(&Default::default()))
    }

    fn seal_at(&self, payload: &Value, bind: &Binding, now: u128) -> String {
        let expires = now.saturating_add(self.ttl.as_millis());
        let mut envelope = json!({
            "v": FORMAT,
            "m": bind.method,
            "n": bind.name,
            "exp": u64::try_from(expires).unwrap_or(u64::MAX),
            "d": payload,
        });
        if let (Some(principal), Value::Object(envelope)) = (&bind.principal, &mut envelope) {
            envelope.insert("p".into(), Value::String(principal.key()));
        }
        let body = URL_SAFE_NO_PAD.encode(envelope.to_string());
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    fn open_at(&self, token: &str, bind: &Binding, now: u128) -> Result<Value, StateError> {
        let (body, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateError::Malformed)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::BadTag)?;
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| StateError::Malformed)?;
        let envelope: Value = serde_json::from_slice(&bytes).map_err(|_| StateError::Malformed)?;
        if envelope.get("v").and_then(Value::as_u64) != Some(FORMAT) {
            return Err(StateError::Malformed);
        }
        let expires = envelope.get("exp").and_then(Value::as_u64).ok_or(StateError::Malformed)?;
        if u128::from(expires) < now {
            return Err(StateError::Expired);
        }
        let method = envelope.get("m").and_then(Value::as_str);
        let name = envelope.get("n").and_then(Value::as_str);
        let principal = envelope.get("p").and_then(Value::as_str);
        let bound = bind.principal.as_ref().map(Principal::key);
        if method != Some(bind.method.as_str())
            || name != Some(bind.name.as_str())
            || principal != bound.as_deref()
        {
            return Err(StateError::WrongBinding);
        }
        Ok(envelope.get("d").cloned().unwrap_or(Value::Null))
    }
}

impl Default for StateSealer {
    /// [`StateSealer::random`].
    fn default() -> Self {
        Self::random()
    }
}

fn now_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bind() -> Binding {
        Binding::new("tools/call", "t")
    }

    #[test]
    fn round_trip() {
        let s = StateSealer::random();
        let payload = json!({"round": 2, "answers": {"name": "Alice"}, "list": [1, 2]});
        let token = s.seal(&payload, &bind());
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
        assert_eq!(s.open(&token, &bind()).unwrap(), payload);
        // Another sealer with the same key opens it too (multi-instance deployments).
        let key = b"shared key";
        let token = StateSealer::new(key).seal(&payload, &bind());
        assert_eq!(StateSealer::new(key).open(&token, &bind()).unwrap(), payload);
    }

    #[test]
    fn tampering_is_detected() {
        let s = StateSealer::random();
        let token = s.seal(&json!({"admin": false}), &bind());
        assert!(s.open(&format!("{token}-TAMPERED"), &bind()).is_err());
        assert_eq!(s.open("nonsense", &bind()), Err(StateError::Malformed));
        assert_eq!(s.open("", &bind()), Err(StateError::Malformed));
        // A forged body with the original tag.
        let (_, tag) = token.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(
            json!({"v": 1, "m": "tools/call", "n": "t", "exp": u64::MAX, "d": {"admin": true}})
                .to_string(),
        );
        assert_eq!(s.open(&format!("{forged}.{tag}"), &bind()), Err(StateError::BadTag));
        // One flipped character of the tag.
        let mut chars: Vec<char> = token.chars().collect();
        let last = chars.len() - 2;
        chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
        let flipped: String = chars.into_iter().collect();
        assert_eq!(s.open(&flipped, &bind()), Err(StateError::BadTag));
        // Another key.
        assert_eq!(StateSealer::random().open(&token, &bind()), Err(StateError::BadTag));
    }

    #[test]
    fn expiry() {
        let s = StateSealer::new("k").with_ttl(Duration::from_secs(10));
        let token = s.seal_at(&json!(1), &bind(), 1_000_000);
        assert_eq!(s.open_at(&token, &bind(), 1_005_000), Ok(json!(1)));
        assert_eq!(s.open_at(&token, &bind(), 1_010_000), Ok(json!(1)));
        assert_eq!(s.open_at(&token, &bind(), 1_010_001), Err(StateError::Expired));
        let zero = StateSealer::new("k").with_ttl(Duration::ZERO);
        let token = zero.seal_at(&json!(1), &bind(), 5);
        assert_eq!(zero.open_at(&token, &bind(), 6), Err(StateError::Expired));
    }

    #[test]
    fn binding_mismatch() {
        let s = StateSealer::random();
        let token = s.seal(&json!({}), &bind());
        assert_eq!(s.open(&token, &Binding::new("tools/call", "u")), Err(StateError::WrongBinding));
        assert_eq!(
            s.open(&token, &Binding::new("prompts/get", "t")),
            Err(StateError::WrongBinding)
        );
        assert_eq!(StateError::WrongBinding.to_error_object().code.0, -32602);
    }

    #[test]
    fn principals() {
        let s = StateSealer::random();
        let ada = bind().for_principal(Some(Principal::Subject("ada".into())));
        let ada_client = bind().for_principal(Some(Principal::Client("ada".into())));
        let token = s.seal(&json!(1), &ada);
        assert_eq!(s.open(&token, &ada), Ok(json!(1)));
        assert_eq!(s.open(&token, &ada_client), Err(StateError::WrongBinding));
        assert_eq!(s.open(&token, &bind()), Err(StateError::WrongBinding));
        let anonymous = s.seal(&json!(1), &bind());
        assert_eq!(s.open(&anonymous, &ada), Err(StateError::WrongBinding));
        assert_eq!(s.open(&anonymous, &bind()), Ok(json!(1)));
        // Tags depend on the purpose, the parts and where they split.
        assert_ne!(s.tag("a", &[b"xy"]), s.tag("b", &[b"xy"]));
        assert_ne!(s.tag("a", &[b"x", b"y"]), s.tag("a", &[b"xy"]));
        assert_eq!(s.tag("a", &[b"x", b"y"]), s.tag("a", &[b"x", b"y"]));
    }
}
