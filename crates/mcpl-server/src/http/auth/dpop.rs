//! DPoP-bound access tokens (RFC 9449) at the protected resource: `Authorization: DPoP
//! <token>` with a proof in the `DPoP` header, checked before the request goes on.
//!
//! The token itself is checked by the application's [`TokenVerifier`](super::TokenVerifier),
//! which reports the key it is bound to ([`AccessToken::dpop_jkt`](super::AccessToken::dpop_jkt),
//! from the JWT's `cnf.jkt` or the introspection response). The proof must then be a JWS of
//! type `dpop+jwt`, signed `ES256` with the public key in its `jwk` header (whose RFC 7638
//! thumbprint is the token's `jkt`), with `htm` the request's method, `htu` its URL (query and
//! fragment excluded), `ath` the SHA-256 of the token, `iat` within the allowed clock skew,
//! and a `jti` never seen before within that window (a bounded cache). A DPoP-bound token
//! presented as a bearer token is refused.
//!
//! The signature is checked by `p256` (ECDSA P-256, SHA-256); only the JWS compact framing and
//! the thumbprint are written here. A JWT library would add a second crypto stack (ring or
//! aws-lc, or RSA, P-384 and Ed25519 implementations) for the single algorithm accepted, and
//! accepting one algorithm only leaves no algorithm-confusion surface (`none`, HMAC with a
//! public key) to get wrong.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::Uri;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The only proof algorithm accepted.
pub const DPOP_ALGORITHM: &str = "ES256";

/// Why a DPoP proof was refused; the server answers `401` with
/// `WWW-Authenticate: DPoP error="invalid_dpop_proof"` (or `error="invalid_token"` for
/// [`DpopError::KeyMismatch`], [`DpopError::Unbound`] and [`DpopError::BoundTokenAsBearer`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::http::auth::DpopError;
///
/// assert_eq!(DpopError::Replayed.kind(), "replayed");
/// assert_eq!(DpopError::Replayed.oauth_error(), "invalid_dpop_proof");
/// assert_eq!(DpopError::KeyMismatch.oauth_error(), "invalid_token");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// A DPoP token without a `DPoP` header.
    #[error("no DPoP proof")]
    Missing,
    /// More than one `DPoP` header.
    #[error("more than one DPoP proof")]
    Multiple,
    /// The proof is larger than allowed.
    #[error("the DPoP proof is too large")]
    TooLarge,
    /// Not a JWS of type `dpop+jwt` with a public JWK and the required claims.
    #[error("malformed DPoP proof")]
    Malformed,
    /// An algorithm other than `ES256` (`none` included).
    #[error("unsupported DPoP proof algorithm")]
    UnsupportedAlgorithm,
    /// The signature does not verify with the key in the proof.
    #[error("the DPoP proof signature does not verify")]
    BadSignature,
    /// `htm` is not the request's method.
    #[error("the DPoP proof is for another method")]
    WrongMethod,
    /// `htu` is not the request's URL.
    #[error("the DPoP proof is for another URL")]
    WrongUrl,
    /// `iat` is outside the allowed clock skew.
    #[error("the DPoP proof is not fresh")]
    Stale,
    /// The proof's `jti` was seen already.
    #[error("the DPoP proof was used before")]
    Replayed,
    /// `ath` is not the hash of the presented token.
    #[error("the DPoP proof is for another access token")]
    WrongTokenHash,
    /// The proof's key is not the one the token is bound to.
    #[error("the access token is bound to another key")]
    KeyMismatch,
    /// The token is not bound to any key, yet presented with DPoP.
    #[error("the access token is not DPoP-bound")]
    Unbound,
    /// A DPoP-bound token presented as a bearer token.
    #[error("a DPoP-bound access token presented as a bearer token")]
    BoundTokenAsBearer,
    /// A bearer token where the resource accepts DPoP-bound tokens only.
    #[error("the resource accepts DPoP-bound access tokens only")]
    BearerRefused,
}

impl DpopError {
    /// A stable name for the kind of refusal.
    pub fn kind(&self) -> &'static str {
        match self {
            DpopError::Missing => "missing",
            DpopError::Multiple => "multiple",
            DpopError::TooLarge => "too_large",
            DpopError::Malformed => "malformed",
            DpopError::UnsupportedAlgorithm => "unsupported_algorithm",
            DpopError::BadSignature => "bad_signature",
            DpopError::WrongMethod => "wrong_method",
            DpopError::WrongUrl => "wrong_url",
            DpopError::Stale => "stale",
            DpopError::Replayed => "replayed",
            DpopError::WrongTokenHash => "wrong_token_hash",
            DpopError::KeyMismatch => "key_mismatch",
            DpopError::Unbound => "unbound",
            DpopError::BoundTokenAsBearer => "bound_token_as_bearer",
            DpopError::BearerRefused => "bearer_refused",
        }
    }

    /// The OAuth `error` of the challenge answering it.
    pub fn oauth_error(&self) -> &'static str {
        match self {
            DpopError::KeyMismatch
            | DpopError::Unbound
            | DpopError::BoundTokenAsBearer
            | DpopError::BearerRefused => "invalid_token",
            _ => "invalid_dpop_proof",
        }
    }
}

/// How DPoP proofs are checked ([`BearerAuth::dpop`](super::BearerAuth::dpop)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::http::auth::DpopConfig;
///
/// let config = DpopConfig::new().max_clock_skew(Duration::from_secs(30)).required(true);
/// assert_eq!(config.clock_skew(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct DpopConfig {
    max_proof_bytes: usize,
    max_clock_skew: Duration,
    replay_cache: usize,
    required: bool,
}

impl Default for DpopConfig {
    fn default() -> Self {
        DpopConfig {
            max_proof_bytes: 8 * 1024,
            max_clock_skew: Duration::from_secs(60),
            replay_cache: 100_000,
            required: false,
        }
    }
}

impl DpopConfig {
    /// The defaults: proofs of at most 8 KiB, `iat` within 60 s of the server's clock, the
    /// `jti`s of the last 100 000 proofs remembered, bearer tokens accepted too.
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest `DPoP` header accepted.
    pub fn max_proof_bytes(mut self, bytes: usize) -> Self {
        self.max_proof_bytes = bytes;
        self
    }

    /// How far a proof's `iat` may be from the server's clock, either way; also how long its
    /// `jti` is remembered.
    pub fn max_clock_skew(mut self, skew: Duration) -> Self {
        self.max_clock_skew = skew;
        self
    }

    /// How many `jti`s are remembered at most. When full, the one closest to leaving the
    /// window goes first (a proof that old is refused as stale soon anyway).
    pub fn replay_cache(mut self, entries: usize) -> Self {
        self.replay_cache = entries.max(1);
        self
    }

    /// Whether only DPoP-bound tokens are accepted (bearer tokens refused); advertised as
    /// `dpop_bound_access_tokens_required` in the protected resource metadata.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// The allowed clock skew.
    pub fn clock_skew(&self) -> Duration {
        self.max_clock_skew
    }

    /// Whether only DPoP-bound tokens are accepted.
    pub fn is_required(&self) -> bool {
        self.required
    }
}

/// Checks proofs and remembers their `jti`s.
#[derive(Debug)]
pub(crate) struct ProofChecker {
    pub(crate) config: DpopConfig,
    seen: Mutex<Seen>,
}

/// The `jti`s seen, each with when it may be forgotten (unix seconds) and its arrival order.
#[derive(Debug, Default)]
struct Seen {
    by_jti: HashSet<String>,
    by_expiry: BTreeSet<(u64, u64, String)>,
    arrivals: u64,
}

/// What a request presents.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// The URL the request was made to (scheme, authority and path).
    pub(crate) url: String,
    pub(crate) token: &'a str,
    /// The `DPoP` header values.
    pub(crate) proofs: Vec<&'a [u8]>,
}

impl ProofChecker {
    pub(crate) fn new(config: DpopConfig) -> Self {
        ProofChecker { config, seen: Mutex::new(Seen::default()) }
    }

    /// Checks the request's proof against the token bound to `jkt` (`None`: not bound).
    pub(crate) fn check(&self, request: &Request<'_>, jkt: Option<&str>) -> Result<(), DpopError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.check_at(request, jkt, now)
    }

    fn check_at(
        &self,
        request: &Request<'_>,
        jkt: Option<&str>,
        now: u64,
    ) -> Result<(), DpopError> {
        let proof = match request.proofs.as_slice() {
            [] => return Err(DpopError::Missing),
            [one] => *one,
            _ => return Err(DpopError::Multiple),
        };
        if proof.len() > self.config.max_proof_bytes {
            return Err(DpopError::TooLarge);
        }
        let proof = std::str::from_utf8(proof).map_err(|_| DpopError::Malformed)?;
        let (thumbprint, claims) = verify_jws(proof)?;
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        let jti = text("jti").filter(|j| !j.is_empty() && j.len() <= 256);
        let (Some(jti), Some(htm), Some(htu)) = (jti, text("htm"), text("htu")) else {
            return Err(DpopError::Malformed);
        };
        let iat = claims.get("iat").and_then(Value::as_u64).ok_or(DpopError::Malformed)?;
        if htm != request.method {
            return Err(DpopError::WrongMethod);
        }
        if !same_url(htu, &request.url) {
            return Err(DpopError::WrongUrl);
        }
        let skew = self.config.max_clock_skew.as_secs();
        if iat.abs_diff(now) > skew {
            return Err(DpopError::Stale);
        }
        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(request.token.as_bytes()));
        if text("ath") != Some(ath.as_str()) {
            return Err(DpopError::WrongTokenHash);
        }
        match jkt {
            None => return Err(DpopError::Unbound),
            Some(jkt) if jkt != thumbprint => return Err(DpopError::KeyMismatch),
            Some(_) => {}
        }
        self.remember(jti, iat.saturating_add(skew), now)
    }

    /// Records `jti` until `forget_at`; refuses one seen already.
    fn remember(&self, jti: &str, forget_at: u64, now: u64) -> Result<(), DpopError> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget what left the window, then refuse a replay, then make room (the entry
        // closest to leaving the window first, the earliest of those first).
        while seen.by_expiry.first().is_some_and(|first| first.0 < now) {
            seen.pop_first();
        }
        if seen.by_jti.contains(jti) {
            return Err(DpopError::Replayed);
        }
        while seen.by_jti.len() >= self.config.replay_cache {
            seen.pop_first();
        }
        seen.arrivals += 1;
        let arrival = seen.arrivals;
        seen.by_jti.insert(jti.to_owned());
        seen.by_expiry.insert((forget_at, arrival, jti.to_owned()));
        Ok(())
    }
}

impl Seen {
    fn pop_first(&mut self) {
        if let Some((_, _, jti)) = self.by_expiry.pop_first() {
            self.by_jti.remove(&jti);
        }
    }
}

/// Verifies the proof's JWS: its header (`typ`, `alg`, a public P-256 `jwk`) and signature;
/// the key's thumbprint and the claims.
fn verify_jws(proof: &str) -> Result<(String, serde_json::Map<String, Value>), DpopError> {
    let mut parts = proof.split('.');
    let (Some(header_b64), Some(claims_b64), Some(signature_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(DpopError::Malformed);
    };
    let header = decode_object(header_b64)?;
    if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
        return Err(DpopError::Malformed);
    }
    if header.get("alg").and_then(Value::as_str) != Some(DPOP_ALGORITHM) {
        return Err(DpopError::UnsupportedAlgorithm);
    }
    let jwk = header.get("jwk").and_then(Value::as_object).ok_or(DpopError::Malformed)?;
    let member = |name: &str| jwk.get(name).and_then(Value::as_str);
    if jwk.contains_key("d") || member("kty") != Some("EC") || member("crv") != Some("P-256") {
        return Err(DpopError::Malformed);
    }
    let (Some(x), Some(y)) = (member("x"), member("y")) else {
        return Err(DpopError::Malformed);
    };
    let coordinate = |c: &str| {
        let bytes = URL_SAFE_NO_PAD.decode(c).map_err(|_| DpopError::Malformed)?;
        <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| DpopError::Malformed)
    };
    let point = p256::EncodedPoint::from_affine_coordinates(
        &coordinate(x)?.into(),
        &coordinate(y)?.into(),
        false,
    );
    let key = VerifyingKey::from_encoded_point(&point).map_err(|_| DpopError::Malformed)?;
    let signature = URL_SAFE_NO_PAD.decode(signature_b64).map_err(|_| DpopError::Malformed)?;
    let signature = Signature::from_slice(&signature).map_err(|_| DpopError::Malformed)?;
    let signing_input = &proof[..header_b64.len() + 1 + claims_b64.len()];
    key.verify(signing_input.as_bytes(), &signature).map_err(|_| DpopError::BadSignature)?;
    let claims = decode_object(claims_b64)?;
    Ok((thumbprint(x, y), claims))
}

fn decode_object(segment: &str) -> Result<serde_json::Map<String, Value>, DpopError> {
    let bytes = URL_SAFE_NO_PAD.decode(segment).map_err(|_| DpopError::Malformed)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(DpopError::Malformed),
    }
}

/// The RFC 7638 SHA-256 thumbprint of a P-256 public key, base64url.
pub(crate) fn thumbprint(x: &str, y: &str) -> String {
    // The required members in lexicographic order, no whitespace (RFC 7638 section 3); `x`
    // and `y` are base64url, so nothing in them needs escaping.
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Whether `htu` names `url` (RFC 9449 4.3: without query and fragment; scheme and host
/// compared case-insensitively, a default port the same as none).
fn same_url(htu: &str, url: &str) -> bool {
    if htu.contains(['?', '#']) {
        return false;
    }
    let normal = |u: &str| -> Option<(String, String, u16, String)> {
        let uri = u.parse::<Uri>().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        let default = if scheme == "https" { 443 } else { 80 };
        let port = authority.port_u16().unwrap_or(default);
        let path = match uri.path() {
            "" => "/".to_owned(),
            p => p.to_owned(),
        };
        Some((scheme, authority.host().to_ascii_lowercase(), port, path))
    };
    match (normal(htu), normal(url)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer;
    use serde_json::json;

    use super::*;

    const URL: &str = "https://mcp.example/mcp";

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[3u8; 32].into()).unwrap()
    }

    fn jwk(key: &SigningKey) -> Value {
        let point = key.verifying_key().to_encoded_point(false);
        json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
            "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
        })
    }

    fn jkt(key: &SigningKey) -> String {
        let jwk = jwk(key);
        thumbprint(jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap())
    }

    fn sign(key: &SigningKey, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature: Signature = key.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }

    fn header(key: &SigningKey) -> Value {
        json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk(key)})
    }

    fn claims(jti: &str, now: u64) -> Value {
        json!({
            "jti": jti, "htm": "POST", "htu": URL, "iat": now,
            "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")),
        })
    }

    fn request(proof: &str) -> Request<'_> {
        Request {
            method: "POST",
            url: URL.to_owned(),
            token: "tok",
            proofs: vec![proof.as_bytes()],
        }
    }

    fn checker() -> ProofChecker {
        ProofChecker::new(DpopConfig::new())
    }

    #[test]
    fn thumbprint_matches_rfc_9449_example() {
        // The key of the proof example of RFC 9449 section 4.2 and its `jkt` (section 6.1).
        assert_eq!(
            thumbprint(
                "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
                "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"
            ),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
    }

    #[test]
    fn a_valid_proof_passes_once() {
        let (k, now) = (key(), 1_000);
        let proof = sign(&k, &header(&k), &claims("a", now));
        let c = checker();
        assert_eq!(c.check_at(&request(&proof), Some(&jkt(&k)), now), Ok(()));
        assert_eq!(c.check_at(&request(&proof), Some(&jkt(&k)), now), Err(DpopError::Replayed));
        // With query, different case of host, default port: the same URL.
        let mut r = request(&proof);
        r.url = "https://MCP.example:443/mcp".to_owned();
        let fresh = sign(&k, &header(&k), &claims("b", now));
        let mut r2 = request(&fresh);
        r2.url = r.url.clone();
        assert_eq!(c.check_at(&r2, Some(&jkt(&k)), now), Ok(()));
    }

    #[test]
    fn every_claim_is_checked() {
        let (k, now) = (key(), 1_000);
        let c = checker();
        let jkt = jkt(&k);
        let with = |f: &dyn Fn(&mut Value)| {
            let mut cl = claims("x", now);
            f(&mut cl);
            sign(&k, &header(&k), &cl)
        };
        let cases: Vec<(String, DpopError)> = vec![
            (with(&|c| c["htm"] = json!("GET")), DpopError::WrongMethod),
            (with(&|c| c["htu"] = json!("https://mcp.example/other")), DpopError::WrongUrl),
            (with(&|c| c["htu"] = json!("https://evil.example/mcp")), DpopError::WrongUrl),
            (with(&|c| c["htu"] = json!(format!("{URL}?q=1"))), DpopError::WrongUrl),
            (with(&|c| c["iat"] = json!(now - 61)), DpopError::Stale),
            (with(&|c| c["iat"] = json!(now + 61)), DpopError::Stale),
            (with(&|c| c["ath"] = json!("other")), DpopError::WrongTokenHash),
            (with(&|c| drop(c.as_object_mut().unwrap().remove("ath"))), DpopError::WrongTokenHash),
            (with(&|c| drop(c.as_object_mut().unwrap().remove("jti"))), DpopError::Malformed),
            (with(&|c| c["jti"] = json!("j".repeat(257))), DpopError::Malformed),
            (with(&|c| c["iat"] = json!("now")), DpopError::Malformed),
        ];
        for (proof, expected) in cases {
            assert_eq!(c.check_at(&request(&proof), Some(&jkt), now), Err(expected));
        }
        let good = sign(&k, &header(&k), &claims("y", now));
        assert_eq!(
            c.check_at(&request(&good), Some("another-jkt"), now),
            Err(DpopError::KeyMismatch)
        );
        assert_eq!(c.check_at(&request(&good), None, now), Err(DpopError::Unbound));
    }

    #[test]
    fn hostile_proofs_are_typed_refusals() {
        let (k, now) = (key(), 1_000);
        let c = checker();
        let jkt = jkt(&k);
        let check = |proof: &str| c.check_at(&request(proof), Some(&jkt), now);
        let body = URL_SAFE_NO_PAD.encode(claims("z", now).to_string());
        // `alg: none`, HS256 (with the public key as secret), RS256: refused before anything.
        for alg in ["none", "HS256", "RS256", "ES384", "es256"] {
            let mut h = header(&k);
            h["alg"] = json!(alg);
            let proof = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(h.to_string()));
            assert_eq!(check(&proof), Err(DpopError::UnsupportedAlgorithm), "{alg}");
        }
        // A private key in the header, another type, another curve, a bad point.
        for mutate in [
            (|h: &mut Value| h["jwk"]["d"] = json!("AAAA")) as fn(&mut Value),
            |h| h["typ"] = json!("JWT"),
            |h| h["jwk"]["crv"] = json!("P-384"),
            |h| h["jwk"]["x"] = json!(URL_SAFE_NO_PAD.encode([0u8; 32])),
            |h| h["jwk"]["y"] = json!("not base64!"),
            |h| drop(h.as_object_mut().unwrap().remove("jwk")),
        ] {
            let mut h = header(&k);
            mutate(&mut h);
            assert_eq!(check(&sign(&k, &h, &claims("z", now))), Err(DpopError::Malformed), "{h}");
        }
        // Signed by another key than the one in the header.
        let other = SigningKey::from_bytes(&[4u8; 32].into()).unwrap();
        let forged = sign(&other, &header(&k), &claims("z", now));
        assert_eq!(check(&forged), Err(DpopError::BadSignature));
        // A tampered claim set.
        let good = sign(&k, &header(&k), &claims("z", now));
        let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
        let mut cl = claims("z", now);
        cl["htm"] = json!("POST");
        cl["jti"] = json!("zz");
        parts[1] = URL_SAFE_NO_PAD.encode(cl.to_string());
        assert_eq!(check(&parts.join(".")), Err(DpopError::BadSignature));
        // Garbage.
        for junk in ["", ".", "..", "a.b.c", "a.b.c.d", "\u{1F600}.x.y", &"A".repeat(100)] {
            assert!(check(junk).is_err(), "{junk:?}");
        }
        // Oversized, missing, several, not UTF-8.
        let huge = "A".repeat(DpopConfig::new().max_proof_bytes + 1);
        assert_eq!(check(&huge), Err(DpopError::TooLarge));
        let none = Request { proofs: vec![], ..request("") };
        assert_eq!(c.check_at(&none, Some(&jkt), now), Err(DpopError::Missing));
        let two = Request { proofs: vec![good.as_bytes(), good.as_bytes()], ..request("") };
        assert_eq!(c.check_at(&two, Some(&jkt), now), Err(DpopError::Multiple));
        let binary = Request { proofs: vec![&[0xff, 0xfe]], ..request("") };
        assert_eq!(c.check_at(&binary, Some(&jkt), now), Err(DpopError::Malformed));
        // The good proof still passes after all that.
        assert_eq!(check(&good), Ok(()));
    }

    #[test]
    fn the_replay_cache_is_bounded_and_forgets_outside_the_window() {
        let k = key();
        let c = ProofChecker::new(DpopConfig::new().replay_cache(4));
        let jkt = jkt(&k);
        for i in 0..20 {
            let proof = sign(&k, &header(&k), &claims(&format!("j{i}"), 1_000));
            assert_eq!(c.check_at(&request(&proof), Some(&jkt), 1_000), Ok(()));
        }
        assert!(c.seen.lock().unwrap().by_jti.len() <= 4);
        // The latest ones are still refused as replays.
        for i in 16..20 {
            let last = sign(&k, &header(&k), &claims(&format!("j{i}"), 1_000));
            assert_eq!(c.check_at(&request(&last), Some(&jkt), 1_000), Err(DpopError::Replayed));
        }
        // Past the window, entries are dropped (and such old proofs are stale anyway).
        let later = sign(&k, &header(&k), &claims("late", 1_100));
        assert_eq!(c.check_at(&request(&later), Some(&jkt), 1_100), Ok(()));
        assert_eq!(c.seen.lock().unwrap().by_jti.len(), 1);
    }
}
