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
//! same method and tool, prompt or resource, and the same principal ([`Binding`]). Any failure is a [`RequestStateError`],
//! which the server answers with `-32602` ("invalid requestState"): a bad state is never
//! trusted and never re-prompted.
//!
//! ```
//! use std::time::Duration;
//! use mcpl_server::request_state::{Binding, StateSealer};
//!
//! let sealer = StateSealer::new(b"a key shared by every instance").with_ttl(Duration::from_secs(60));
//! let bind = Binding::new("tools/call", "book_flight");
//! let token = sealer.seal(&serde_json::json!({"step": 2}), &bind);
//! assert_eq!(sealer.open(&token, &bind).unwrap(), serde_json::json!({"step": 2}));
//! assert!(sealer.open(&format!("{token}-TAMPERED"), &bind).is_err());
//! assert!(sealer.open(&token, &Binding::new("tools/call", "other")).is_err());
//! ```
//!
//! # Key rotation
//!
//! A sealer holds one sealing key and, from [`StateSealer::builder`], keys that only open:
//! previous keys, each until its retirement plus the time to live (no state it sealed can be
//! valid longer; a leaked old key stops working then), and upcoming keys, which open from the
//! start so that instances can learn a key before any of them seals with it. A rotation
//! across instances: give every instance the new key as upcoming; then make it the sealing
//! key everywhere, the old one previous with the time of that step.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use mcpl_server::request_state::{Binding, StateSealer};
//!
//! let bind = Binding::new("tools/call", "book_flight");
//! let before = StateSealer::new(b"key of november");
//! let token = before.seal(&serde_json::json!({"step": 2}), &bind);
//! // December: a new key seals; November's still opens what it sealed, for one TTL more.
//! let after = StateSealer::builder(b"key of december")
//!     .previous_key(b"key of november", SystemTime::now())
//!     .build()?;
//! assert_eq!(after.open(&token, &bind)?, serde_json::json!({"step": 2}));
//! let fresh = after.seal(&serde_json::json!({"step": 3}), &bind);
//! assert!(before.open(&fresh, &bind).is_err(), "sealed with the new key");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::principal::Principal;

type HmacSha256 = Hmac<Sha256>;

/// How long a sealed state stays valid unless configured otherwise: 10 minutes.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::request_state::DEFAULT_STATE_TTL.as_secs(), 600);
/// ```
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(600);

/// The version of the envelope format.
const FORMAT: u64 = 1;

/// How many keys that only open a sealer holds at most ([`StateSealerBuilder`]): each is
/// tried on every refused token, so they are few.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::request_state::MAX_OPENING_KEYS, 8);
/// ```
pub const MAX_OPENING_KEYS: usize = 8;

/// What a sealed state is bound to: the method and the name of the tool or prompt, or the URI
/// of the resource, of the request that produced it, and who made that request (the
/// [`Principal`] of its access token; the server sets it).
///
/// # Examples
///
/// ```
/// use mcpl_server::request_state::{Binding, StateSealer};
///
/// let sealer = StateSealer::new(b"key");
/// let token = sealer.seal(&serde_json::json!(1), &Binding::new("prompts/get", "review"));
/// assert!(sealer.open(&token, &Binding::new("prompts/get", "summary")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The method (`tools/call`, `prompts/get`, `resources/read`): borrowed when it is a
    /// constant, as the server's own bindings are (no copy of the name per request).
    pub method: Cow<'static, str>,
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
    /// use mcpl_server::request_state::{Binding, RequestStateError, StateSealer};
    ///
    /// let sealer = StateSealer::new(b"secret");
    /// let invoice = Binding::new("resources/read", "billing://invoices/42");
    /// assert_eq!(invoice.method, "resources/read");
    /// let token = sealer.seal(&serde_json::json!({"approved": true}), &invoice);
    /// assert_eq!(sealer.open(&token, &invoice).unwrap()["approved"], true);
    /// let other = Binding::new("resources/read", "billing://invoices/43");
    /// assert_eq!(sealer.open(&token, &other), Err(RequestStateError::WrongBinding));
    /// ```
    pub fn new(method: impl Into<Cow<'static, str>>, name: impl Into<String>) -> Self {
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
    /// use mcpl_server::request_state::{Binding, RequestStateError, StateSealer};
    ///
    /// let sealer = StateSealer::new(b"secret");
    /// let call = Binding::new("tools/call", "transfer");
    /// let ada = call.clone().for_principal(Some(Principal::Subject("ada".into())));
    /// let token = sealer.seal(&serde_json::json!({"step": 2}), &ada);
    /// assert!(sealer.open(&token, &ada).is_ok());
    /// let bob = call.clone().for_principal(Some(Principal::Subject("bob".into())));
    /// assert_eq!(sealer.open(&token, &bob), Err(RequestStateError::WrongBinding));
    /// assert_eq!(sealer.open(&token, &call), Err(RequestStateError::WrongBinding), "nor anonymously");
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
/// use mcpl_server::request_state::{Binding, RequestStateError, StateSealer};
///
/// let bind = Binding::new("tools/call", "t");
/// let token = StateSealer::new(b"one key").seal(&serde_json::json!({}), &bind);
/// let err = StateSealer::new(b"another key").open(&token, &bind).unwrap_err();
/// assert_eq!(err, RequestStateError::BadTag);
/// assert_eq!(StateSealer::new(b"k").open("garbage", &bind), Err(RequestStateError::Malformed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestStateError {
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

/// The former name of [`RequestStateError`] (it clashed with MCPL's
/// `mcpl_core::mcpl::state::StateError`, about feature-set state).
#[deprecated(note = "renamed RequestStateError")]
pub type StateError = RequestStateError;

impl RequestStateError {
    /// The JSON-RPC error answering a request that carried this state: `-32602`
    /// "invalid requestState", with the reason in `data.reason`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::request_state::RequestStateError;
    ///
    /// let error = RequestStateError::Expired.to_error_object();
    /// assert_eq!(error.code.0, -32602);
    /// assert_eq!(error.data.unwrap()["reason"], "requestState has expired");
    /// ```
    pub fn to_error_object(self) -> ErrorObject {
        ErrorObject::new(ErrorCode::INVALID_PARAMS, "invalid requestState")
            .with_data(json!({ "reason": self.to_string() }))
    }
}

impl From<RequestStateError> for ErrorObject {
    fn from(e: RequestStateError) -> Self {
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
/// use mcpl_server::request_state::{Binding, StateSealer};
///
/// let sealer = StateSealer::new(b"shared secret").with_ttl(Duration::from_secs(30));
/// let bind = Binding::new("tools/call", "wizard");
/// let token = sealer.seal(&serde_json::json!({"page": 3}), &bind);
/// assert_eq!(sealer.open(&token, &bind).unwrap()["page"], 3);
/// ```
#[derive(Clone)]
pub struct StateSealer {
    key: Arc<[u8]>,
    /// Keys that open but do not seal.
    opening: Arc<[OpeningKey]>,
    ttl: Duration,
    /// `false` for a sealer without a key ([`StateSealer::unusable`]): no key opens.
    usable: bool,
}

/// A key that only opens: until `retired` (unix millis) plus the time to live, or always
/// (`None`, an upcoming key).
struct OpeningKey {
    key: Box<[u8]>,
    retired: Option<u128>,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the keys.
        f.debug_struct("StateSealer")
            .field("ttl", &self.ttl)
            .field("opening_keys", &self.opening.len())
            .field("usable", &self.usable)
            .finish_non_exhaustive()
    }
}

/// Builds a [`StateSealer`] with key rotation (see the [module docs](self#key-rotation)).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use mcpl_server::request_state::StateSealer;
///
/// let retired = SystemTime::now() - Duration::from_secs(3600);
/// let sealer = StateSealer::builder(b"current")
///     .previous_key(b"last month", retired)
///     .upcoming_key(b"next month")
///     .ttl(Duration::from_secs(300))
///     .build()?;
/// assert_eq!(sealer.ttl(), Duration::from_secs(300));
/// # Ok::<(), mcpl_server::request_state::RotationError>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct StateSealerBuilder {
    sealer: StateSealer,
    opening: Vec<OpeningKey>,
}

impl fmt::Debug for OpeningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpeningKey").field("retired", &self.retired).finish_non_exhaustive()
    }
}

impl StateSealerBuilder {
    /// A key that sealed until `retired_at`: it opens states for one time to live after that
    /// (what it sealed has expired by then), never later.
    pub fn previous_key(mut self, key: impl AsRef<[u8]>, retired_at: SystemTime) -> Self {
        let retired = retired_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        self.opening.push(OpeningKey { key: key.as_ref().into(), retired: Some(retired) });
        self
    }

    /// A key that will seal after a coming rotation: it opens from now on.
    pub fn upcoming_key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.opening.push(OpeningKey { key: key.as_ref().into(), retired: None });
        self
    }

    /// How long sealed states stay valid (default [`DEFAULT_STATE_TTL`]); it also bounds how
    /// long previous keys open.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.sealer.ttl = ttl;
        self
    }

    /// The sealer.
    ///
    /// # Errors
    ///
    /// [`RotationError::TooManyKeys`] past [`MAX_OPENING_KEYS`] previous and upcoming keys.
    pub fn build(self) -> Result<StateSealer, RotationError> {
        if self.opening.len() > MAX_OPENING_KEYS {
            return Err(RotationError::TooManyKeys { max: MAX_OPENING_KEYS });
        }
        Ok(StateSealer { opening: self.opening.into(), ..self.sealer })
    }
}

/// Why a [`StateSealerBuilder`] could not build.
///
/// # Examples
///
/// ```
/// use mcpl_server::request_state::{MAX_OPENING_KEYS, RotationError, StateSealer};
///
/// let mut builder = StateSealer::builder(b"current");
/// for i in 0..=MAX_OPENING_KEYS {
///     builder = builder.upcoming_key(format!("key {i}"));
/// }
/// let err = builder.build().unwrap_err();
/// assert_eq!(err, RotationError::TooManyKeys { max: MAX_OPENING_KEYS });
/// assert_eq!(err.kind(), "too_many_keys");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RotationError {
    /// More previous and upcoming keys than [`MAX_OPENING_KEYS`].
    #[error("more than {max} previous and upcoming keys")]
    TooManyKeys {
        /// The limit.
        max: usize,
    },
}

impl RotationError {
    /// A stable name for the kind of error.
    pub fn kind(&self) -> &'static str {
        match self {
            RotationError::TooManyKeys { .. } => "too_many_keys",
        }
    }
}

/// The operating system's random generator failed, so no sealing key could be drawn
/// ([`StateSealer::random`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::request_state::RandomnessError;
///
/// fn describe(e: &RandomnessError) -> String {
///     format!("{e} ({})", e.kind())
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the operating system's random generator failed")]
pub struct RandomnessError(#[source] getrandom::Error);

impl RandomnessError {
    /// A stable name for the kind of error: `no_randomness`.
    pub fn kind(&self) -> &'static str {
        "no_randomness"
    }
}

impl StateSealer {
    /// A sealer with the given secret key (any length; at least 32 random bytes advised) and
    /// the default time to live ([`DEFAULT_STATE_TTL`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let sealer = mcpl_server::request_state::StateSealer::new(std::env::var("STATE_KEY").unwrap_or_default());
    /// # drop(sealer);
    /// ```
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        StateSealer {
            key: Arc::from(key.as_ref()),
            opening: Arc::new([]),
            ttl: DEFAULT_STATE_TTL,
            usable: true,
        }
    }

    /// A builder of a sealer that seals with `key` and also opens with previous and upcoming
    /// keys (key rotation, see the [module docs](self#key-rotation)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use mcpl_server::request_state::{Binding, RequestStateError, StateSealer};
    ///
    /// let bind = Binding::new("tools/call", "t");
    /// let old = StateSealer::new(b"old").seal(&serde_json::json!(1), &bind);
    /// // Retired long ago: its window (retirement + TTL) has closed.
    /// let long_ago = SystemTime::now() - Duration::from_secs(3600);
    /// let sealer = StateSealer::builder(b"new")
    ///     .previous_key(b"old", long_ago)
    ///     .ttl(Duration::from_secs(60))
    ///     .build()?;
    /// assert_eq!(sealer.open(&old, &bind), Err(RequestStateError::BadTag));
    /// # Ok::<(), mcpl_server::request_state::RotationError>(())
    /// ```
    pub fn builder(key: impl AsRef<[u8]>) -> StateSealerBuilder {
        StateSealerBuilder { sealer: Self::new(key), opening: Vec::new() }
    }

    /// A sealer with a fresh random 32-byte key from the operating system.
    ///
    /// # Errors
    ///
    /// [`RandomnessError`] if the operating system's generator fails (there is no weaker
    /// fallback: a guessable key would let clients forge states).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::request_state::{Binding, StateSealer};
    ///
    /// let bind = Binding::new("tools/call", "t");
    /// let token = StateSealer::random()?.seal(&serde_json::json!(1), &bind);
    /// // Another random key cannot open it.
    /// assert!(StateSealer::random()?.open(&token, &bind).is_err());
    /// # Ok::<(), mcpl_server::request_state::RandomnessError>(())
    /// ```
    pub fn random() -> Result<Self, RandomnessError> {
        Self::random_from(getrandom::fill)
    }

    /// A sealer with a key that `fill` draws.
    fn random_from(
        fill: impl FnOnce(&mut [u8]) -> Result<(), getrandom::Error>,
    ) -> Result<Self, RandomnessError> {
        let mut key = [0u8; 32];
        fill(&mut key).map_err(RandomnessError)?;
        Ok(Self::new(key))
    }

    /// A sealer that opens nothing: what a server gets when it has no key (no randomness at
    /// build time). Every state and tag it is shown fails verification, so requests that
    /// carry one are refused rather than trusted.
    pub(crate) fn unusable() -> Self {
        StateSealer { usable: false, ..Self::new([]) }
    }

    /// Sets how long sealed states stay valid.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let sealer = mcpl_server::request_state::StateSealer::new(b"k").with_ttl(Duration::from_secs(5));
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
    /// use mcpl_server::request_state::{DEFAULT_STATE_TTL, StateSealer};
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
    /// use mcpl_server::request_state::{Binding, StateSealer};
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
    /// [`RequestStateError`] when the token is malformed, altered, expired or bound to another
    /// request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::request_state::{Binding, StateSealer};
    ///
    /// let (sealer, bind) = (StateSealer::new(b"k"), Binding::new("resources/read", "file:///a"));
    /// let token = sealer.seal(&serde_json::json!("payload"), &bind);
    /// assert_eq!(sealer.open(&token, &bind).unwrap(), "payload");
    /// ```
    pub fn open(&self, token: &str, bind: &Binding) -> Result<Value, RequestStateError> {
        self.open_at(token, bind, now_millis())
    }

    /// A tag of `parts` under this sealer's key, for `purpose` (so that a tag made for one
    /// purpose is never valid for another): how ids handed to clients are bound to what they
    /// name without storing the binding (see [`crate::task`]).
    pub(crate) fn tag(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        tag_with(&self.key, purpose, parts)
    }

    /// The tags of `parts` for `purpose` under every key that opens now (the sealing key
    /// first): what a tag made by [`tag`](Self::tag) before a rotation is checked against.
    pub(crate) fn opening_tags(&self, purpose: &str, parts: &[&[u8]]) -> Vec<[u8; 32]> {
        self.opening_keys(now_millis()).map(|key| tag_with(key, purpose, parts)).collect()
    }

    /// The sealing key, then the other keys that open at `now`.
    fn opening_keys(&self, now: u128) -> impl Iterator<Item = &[u8]> {
        let ttl = self.ttl.as_millis();
        let open = move |k: &&OpeningKey| k.retired.is_none_or(|r| now <= r.saturating_add(ttl));
        let keys =
            std::iter::once(&*self.key).chain(self.opening.iter().filter(open).map(|k| &*k.key));
        keys.take_while(|_| self.usable)
    }

    fn mac(&self) -> HmacSha256 {
        mac(&self.key)
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

    fn open_at(&self, token: &str, bind: &Binding, now: u128) -> Result<Value, RequestStateError> {
        let (body, tag) = token.split_once('.').ok_or(RequestStateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| RequestStateError::Malformed)?;
        let verifies = |key: &[u8]| {
            let mut mac = mac(key);
            mac.update(body.as_bytes());
            mac.verify_slice(&tag).is_ok()
        };
        if !self.opening_keys(now).any(verifies) {
            return Err(RequestStateError::BadTag);
        }
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| RequestStateError::Malformed)?;
        let envelope: Value =
            serde_json::from_slice(&bytes).map_err(|_| RequestStateError::Malformed)?;
        if envelope.get("v").and_then(Value::as_u64) != Some(FORMAT) {
            return Err(RequestStateError::Malformed);
        }
        let expires =
            envelope.get("exp").and_then(Value::as_u64).ok_or(RequestStateError::Malformed)?;
        if u128::from(expires) < now {
            return Err(RequestStateError::Expired);
        }
        let method = envelope.get("m").and_then(Value::as_str);
        let name = envelope.get("n").and_then(Value::as_str);
        let principal = envelope.get("p").and_then(Value::as_str);
        let bound = bind.principal.as_ref().map(Principal::key);
        if method != Some(&*bind.method)
            || name != Some(bind.name.as_str())
            || principal != bound.as_deref()
        {
            return Err(RequestStateError::WrongBinding);
        }
        Ok(envelope.get("d").cloned().unwrap_or(Value::Null))
    }
}

fn mac(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; the error case cannot happen.
    HmacSha256::new_from_slice(key)
        .unwrap_or_else(|_| <HmacSha256 as Mac>::new(&Default::default()))
}

fn tag_with(key: &[u8], purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = mac(key);
    for part in std::iter::once(purpose.as_bytes()).chain(parts.iter().copied()) {
        // Length-prefixed, so that parts cannot shift into one another.
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
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
    fn no_randomness_is_an_error_not_a_weaker_key() {
        use std::error::Error as _;
        let err = StateSealer::random_from(|_| Err(getrandom::Error::UNSUPPORTED)).unwrap_err();
        assert_eq!(err.kind(), "no_randomness");
        assert_eq!(err.source().unwrap().to_string(), getrandom::Error::UNSUPPORTED.to_string());
        assert!(!err.to_string().contains(&getrandom::Error::UNSUPPORTED.to_string()), "{err}");
        let drawn = StateSealer::random_from(|key| {
            key.fill(7);
            Ok(())
        })
        .unwrap();
        let token = StateSealer::new([7u8; 32]).seal(&json!(1), &bind());
        assert_eq!(drawn.open(&token, &bind()).unwrap(), json!(1));
    }

    #[test]
    fn an_unusable_sealer_opens_nothing() {
        let s = StateSealer::unusable();
        let token = s.seal(&json!({"n": 1}), &bind());
        assert_eq!(s.open(&token, &bind()), Err(RequestStateError::BadTag));
        assert!(s.opening_tags("p", &[b"x"]).is_empty());
        // Not even a token sealed with its own (empty) key.
        let empty = StateSealer::new([]).seal(&json!({"n": 1}), &bind());
        assert_eq!(s.open(&empty, &bind()), Err(RequestStateError::BadTag));
    }

    #[test]
    fn round_trip() {
        let s = StateSealer::random().unwrap();
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
        let s = StateSealer::random().unwrap();
        let token = s.seal(&json!({"admin": false}), &bind());
        assert!(s.open(&format!("{token}-TAMPERED"), &bind()).is_err());
        assert_eq!(s.open("nonsense", &bind()), Err(RequestStateError::Malformed));
        assert_eq!(s.open("", &bind()), Err(RequestStateError::Malformed));
        // A forged body with the original tag.
        let (_, tag) = token.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(
            json!({"v": 1, "m": "tools/call", "n": "t", "exp": u64::MAX, "d": {"admin": true}})
                .to_string(),
        );
        assert_eq!(s.open(&format!("{forged}.{tag}"), &bind()), Err(RequestStateError::BadTag));
        // One flipped character of the tag.
        let mut chars: Vec<char> = token.chars().collect();
        let last = chars.len() - 2;
        chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
        let flipped: String = chars.into_iter().collect();
        assert_eq!(s.open(&flipped, &bind()), Err(RequestStateError::BadTag));
        // Another key.
        assert_eq!(
            StateSealer::random().unwrap().open(&token, &bind()),
            Err(RequestStateError::BadTag)
        );
    }

    #[test]
    fn expiry() {
        let s = StateSealer::new("k").with_ttl(Duration::from_secs(10));
        let token = s.seal_at(&json!(1), &bind(), 1_000_000);
        assert_eq!(s.open_at(&token, &bind(), 1_005_000), Ok(json!(1)));
        assert_eq!(s.open_at(&token, &bind(), 1_010_000), Ok(json!(1)));
        assert_eq!(s.open_at(&token, &bind(), 1_010_001), Err(RequestStateError::Expired));
        let zero = StateSealer::new("k").with_ttl(Duration::ZERO);
        let token = zero.seal_at(&json!(1), &bind(), 5);
        assert_eq!(zero.open_at(&token, &bind(), 6), Err(RequestStateError::Expired));
    }

    #[test]
    fn binding_mismatch() {
        let s = StateSealer::random().unwrap();
        let token = s.seal(&json!({}), &bind());
        assert_eq!(
            s.open(&token, &Binding::new("tools/call", "u")),
            Err(RequestStateError::WrongBinding)
        );
        assert_eq!(
            s.open(&token, &Binding::new("prompts/get", "t")),
            Err(RequestStateError::WrongBinding)
        );
        assert_eq!(RequestStateError::WrongBinding.to_error_object().code.0, -32602);
    }

    #[test]
    fn rotation_the_newest_seals_previous_keys_open_within_their_window() {
        let bind = bind();
        let old = StateSealer::new("old").with_ttl(Duration::from_secs(10));
        let sealed_old = old.seal_at(&json!("old"), &bind, 1_000_000);
        let retired = UNIX_EPOCH + Duration::from_millis(1_002_000);
        let rotated = StateSealer::builder("new")
            .previous_key("old", retired)
            .upcoming_key("next")
            .ttl(Duration::from_secs(10))
            .build()
            .unwrap();
        // The old key opens what it sealed, within the state's own expiry.
        assert_eq!(rotated.open_at(&sealed_old, &bind, 1_005_000), Ok(json!("old")));
        assert_eq!(rotated.open_at(&sealed_old, &bind, 1_010_001), Err(RequestStateError::Expired));
        // A state forged with the old key after its window (retirement + TTL) is refused,
        // whatever expiry it claims.
        let forged = StateSealer::new("old").with_ttl(Duration::from_secs(3600));
        let late = forged.seal_at(&json!("forged"), &bind, 1_011_000);
        assert_eq!(rotated.open_at(&late, &bind, 1_012_000), Ok(json!("forged")), "in window");
        assert_eq!(rotated.open_at(&late, &bind, 1_012_001), Err(RequestStateError::BadTag));
        // The newest key seals: the old sealer cannot open it.
        let sealed_new = rotated.seal_at(&json!("new"), &bind, 1_005_000);
        assert_eq!(old.open_at(&sealed_new, &bind, 1_005_000), Err(RequestStateError::BadTag));
        assert_eq!(rotated.open_at(&sealed_new, &bind, 1_005_000), Ok(json!("new")));
        // An upcoming key opens (another instance already seals with it), always.
        let next = StateSealer::new("next").with_ttl(Duration::from_secs(10));
        let sealed_next = next.seal_at(&json!("next"), &bind, 9_000_000);
        assert_eq!(rotated.open_at(&sealed_next, &bind, 9_000_000), Ok(json!("next")));
        // An unknown key does not.
        let other = StateSealer::new("other").seal_at(&json!(1), &bind, 1_005_000);
        assert_eq!(rotated.open_at(&other, &bind, 1_005_000), Err(RequestStateError::BadTag));
        // Tags (task ids) are made with the sealing key (the clock-bound windows of the
        // other keys: `rotation_keys_are_bounded`).
        assert_eq!(rotated.opening_tags("p", &[b"x"])[0], rotated.tag("p", &[b"x"]));
        assert!(!format!("{rotated:?}").contains("old"), "keys never printed");
    }

    #[test]
    fn rotation_keys_are_bounded() {
        let mut builder = StateSealer::builder("k");
        for i in 0..MAX_OPENING_KEYS {
            builder = builder.upcoming_key(format!("{i}"));
        }
        assert!(builder.upcoming_key("one too many").build().is_err());
        let now = SystemTime::now();
        let recent = StateSealer::builder("new").previous_key("old", now).build().unwrap();
        let old = StateSealer::new("old");
        assert!(recent.opening_tags("p", &[b"x"]).contains(&old.tag("p", &[b"x"])));
        let expired = StateSealer::builder("new")
            .previous_key("old", now - Duration::from_secs(3600))
            .build()
            .unwrap();
        assert!(!expired.opening_tags("p", &[b"x"]).contains(&old.tag("p", &[b"x"])));
    }

    #[test]
    fn principals() {
        let s = StateSealer::random().unwrap();
        let ada = bind().for_principal(Some(Principal::Subject("ada".into())));
        let ada_client = bind().for_principal(Some(Principal::Client("ada".into())));
        let token = s.seal(&json!(1), &ada);
        assert_eq!(s.open(&token, &ada), Ok(json!(1)));
        assert_eq!(s.open(&token, &ada_client), Err(RequestStateError::WrongBinding));
        assert_eq!(s.open(&token, &bind()), Err(RequestStateError::WrongBinding));
        let anonymous = s.seal(&json!(1), &bind());
        assert_eq!(s.open(&anonymous, &ada), Err(RequestStateError::WrongBinding));
        assert_eq!(s.open(&anonymous, &bind()), Ok(json!(1)));
        // Tags depend on the purpose, the parts and where they split.
        assert_ne!(s.tag("a", &[b"xy"]), s.tag("b", &[b"xy"]));
        assert_ne!(s.tag("a", &[b"x", b"y"]), s.tag("a", &[b"xy"]));
        assert_eq!(s.tag("a", &[b"x", b"y"]), s.tag("a", &[b"x", b"y"]));
    }
}
