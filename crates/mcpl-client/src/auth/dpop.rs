//! DPoP (RFC 9449): access tokens bound to a key the client holds, presented with a fresh
//! signed proof on every request, so that a token stolen in transit or from a log is useless
//! without the key.
//!
//! Given a key ([`OAuth::dpop`](super::OAuth::dpop)), the client sends a proof (`DPoP` header:
//! a JWT of type `dpop+jwt` carrying the public key, the method `htm`, the URL `htu` without
//! query or fragment, `iat` and a unique `jti`) with every token request to an authorization
//! server that lists `ES256` in `dpop_signing_alg_values_supported`; the tokens it receives
//! with `token_type` `DPoP` are then presented as `Authorization: DPoP <token>`, each request
//! with a proof that also carries `ath`, the SHA-256 of the token.
//!
//! Server nonces (RFC 9449 sections 8 and 9): a `DPoP-Nonce` header on any response of an
//! authorization server or MCP server is remembered per origin (a bounded table) and put in the
//! next proofs sent there; a `use_dpop_nonce` refusal is answered by sending again, once, with
//! the new nonce.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{AuthError, ClientKey, random_token};

/// The only proof algorithm this client signs with.
pub(crate) const ALG: &str = "ES256";

/// The OAuth error of a refusal asking for a (new) nonce.
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// The response header carrying a server's nonce.
pub(crate) const NONCE_HEADER: &str = "dpop-nonce";

/// At most this many origins' nonces are remembered; past it the table starts over.
const MAX_NONCES: usize = 64;

/// A nonce longer than this is not kept (servers send short opaque strings).
const MAX_NONCE_BYTES: usize = 512;

/// A DPoP proof of `htm` on `url` (its query and fragment dropped), with `ath` for
/// `access_token` and the `nonce` when given.
pub(crate) fn proof(
    key: &ClientKey,
    htm: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, AuthError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    proof_at(key, htm, url, access_token, nonce, now)
}

fn proof_at(
    key: &ClientKey,
    htm: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
    now: u64,
) -> Result<String, AuthError> {
    let header = json!({ "typ": "dpop+jwt", "alg": ALG, "jwk": key.public_jwk() });
    let mut claims = json!({
        "jti": random_token(16)?,
        "htm": htm,
        "htu": htu(url)?,
        "iat": now,
    });
    if let Some(token) = access_token {
        claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
    }
    if let Some(nonce) = nonce {
        claims["nonce"] = json!(nonce);
    }
    Ok(key.sign(&header, &claims))
}

/// The `htu` of a request to `url`: the URL without its query and fragment (RFC 9449 4.2).
pub(crate) fn htu(url: &str) -> Result<String, AuthError> {
    let mut parsed = super::metadata::parse_url(url)?;
    parsed.set_query(None);
    parsed.set_fragment(None);
    Ok(parsed.to_string())
}

/// The nonces servers gave, by origin.
#[derive(Debug, Default)]
pub(crate) struct Nonces(Mutex<HashMap<String, String>>);

impl Nonces {
    /// The nonce to put in a proof sent to `url`, if its server gave one.
    pub(crate) fn get(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        super::lock(&self.0).get(&origin).cloned()
    }

    /// Remembers `nonce` for the server of `url`; whether it is new. A nonce that is not
    /// `NQCHAR` (RFC 9449 8.1: printable ASCII, no `"` or `\`) or is too long is ignored.
    pub(crate) fn set(&self, url: &str, nonce: &str) -> bool {
        let valid = !nonce.is_empty()
            && nonce.len() <= MAX_NONCE_BYTES
            && nonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
        let Some(origin) = origin(url).filter(|_| valid) else {
            tracing::debug!(%url, "ignoring an invalid DPoP nonce");
            return false;
        };
        let mut nonces = super::lock(&self.0);
        if nonces.len() >= MAX_NONCES && !nonces.contains_key(&origin) {
            nonces.clear();
        }
        nonces.insert(origin, nonce.to_owned()).as_deref() != Some(nonce)
    }
}

fn origin(url: &str) -> Option<String> {
    Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::{Signature, VerifyingKey};
    use serde_json::Value;

    use super::*;

    fn part(segment: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
    }

    #[test]
    fn proof_is_a_signed_dpop_jwt_with_the_request_claims() {
        let key = ClientKey::generate().unwrap();
        let jwt =
            proof_at(&key, "POST", "https://mcp.example/mcp?x=1#f", Some("tok"), Some("n-1"), 7)
                .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = part(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "never the private key");
        let claims = part(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["iat"], 7);
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")));
        // The signature verifies with the key in the header.
        let jwk = &header["jwk"];
        let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(jwk[c].as_str().unwrap()).unwrap();
        let point = p256::EncodedPoint::from_affine_coordinates(
            coordinate("x").as_slice().into(),
            coordinate("y").as_slice().into(),
            false,
        );
        let public = VerifyingKey::from_encoded_point(&point).unwrap();
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
        // A fresh jti each time; no ath or nonce unless asked.
        let other = proof_at(&key, "GET", "https://mcp.example/mcp", None, None, 7).unwrap();
        let other = part(other.split('.').nth(1).unwrap());
        assert_ne!(other["jti"], claims["jti"]);
        assert!(other.get("ath").is_none() && other.get("nonce").is_none());
    }

    #[test]
    fn nonces_are_per_origin_validated_and_bounded() {
        let nonces = Nonces::default();
        assert!(nonces.set("https://as.example/token", "abc"));
        assert!(!nonces.set("https://as.example/other", "abc"), "same origin, same nonce");
        assert_eq!(nonces.get("https://as.example/anything").as_deref(), Some("abc"));
        assert_eq!(nonces.get("https://rs.example/mcp"), None);
        for bad in ["", "with space", "quo\"te", "back\\slash", &"n".repeat(MAX_NONCE_BYTES + 1)] {
            assert!(!nonces.set("https://rs.example/mcp", bad), "{bad:?}");
        }
        assert_eq!(nonces.get("https://rs.example/mcp"), None);
        for i in 0..MAX_NONCES * 2 {
            nonces.set(&format!("https://h{i}.example/"), "n");
        }
        assert!(super::super::lock(&nonces.0).len() <= MAX_NONCES);
    }
}
