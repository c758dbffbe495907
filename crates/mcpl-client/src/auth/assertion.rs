//! The client's P-256 key and the JWTs it signs: `private_key_jwt` client authentication
//! (RFC 7523 section 2.2, a short-lived JWT presented at the token endpoint instead of a
//! secret) and DPoP proofs ([`super::dpop`]).
//!
//! The signatures are `p256`'s (ECDSA P-256 with SHA-256, JWS `ES256`); only the JWS compact
//! framing (`base64url(header).base64url(claims).base64url(r || s)`) and the RFC 7638 JWK
//! thumbprint are written here.
//!
//! # Why not `jsonwebtoken`
//!
//! Checked against jsonwebtoken 12 (the same holds since 10): it signs through one of two
//! backends, and neither fits. With `rust_crypto` it adds 42 crates to this crate's tree: a
//! second RustCrypto stack at newer majors (`p256` 0.14, `sha2` 0.11, `hmac` 0.13) plus RSA,
//! P-384 and Ed25519, for the one algorithm used. With `aws_lc_rs` it adds only 6 while rustls is
//! on, but then the `auth` feature needs aws-lc (a C build) also with `native-tls` or no TLS at
//! all. Either way it picks its backend through a process-wide provider: when another crate of
//! the application enables the other backend and nobody installs one, signing (`encode`) and
//! the JWK calls DPoP needs panic. It does not generate keys either, so `p256` would stay for
//! [`ClientKey::generate`]. What it would replace here is the compact framing, a few lines.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{AuthError, random_token};

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 section 2.2).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid: long enough for one token request, no longer.
const LIFETIME_SECS: u64 = 300;

/// An upper bound on a PEM private key's size, so untrusted input stays bounded.
const MAX_PEM_BYTES: usize = 16 * 1024;

/// A client's ECDSA P-256 private key (JWS `ES256`): for `private_key_jwt` authentication, and
/// as the proof-of-possession key of DPoP ([`OAuth::dpop`](super::OAuth::dpop)).
///
/// The key never appears in `Debug` output or logs.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{ClientCredentials, ClientKey};
///
/// let pem = rcgen::KeyPair::generate()?.serialize_pem(); // a P-256 key, PKCS#8 PEM
/// let key = ClientKey::from_pkcs8_pem(&pem)?;
/// // The key never shows in Debug output.
/// assert!(!format!("{key:?}").contains("PRIVATE KEY"));
/// let mut credentials = ClientCredentials::public("my-service");
/// credentials.signing_key = Some(key);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientKey(SigningKey);

impl ClientKey {
    /// Reads a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) P-256 private key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::ClientKey;
    ///
    /// let pem = rcgen::KeyPair::generate()?.serialize_pem();
    /// assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    /// assert!(ClientKey::from_pkcs8_pem(&pem).is_ok());
    /// // Anything else is refused, with a reason.
    /// let err = ClientKey::from_pkcs8_pem("-----BEGIN RSA PRIVATE KEY-----").unwrap_err();
    /// assert_eq!(err.kind(), "invalid_key");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, AuthError> {
        if pem.len() > MAX_PEM_BYTES {
            return Err(AuthError::InvalidKey(format!(
                "the PEM is {} bytes, more than {MAX_PEM_BYTES}",
                pem.len()
            )));
        }
        SigningKey::from_pkcs8_pem(pem.trim())
            .map(ClientKey)
            .map_err(|e| AuthError::InvalidKey(format!("not a PKCS#8 PEM P-256 key: {e}")))
    }

    /// A fresh random key (32 bytes from the operating system's generator), for a DPoP key
    /// that lives as long as the process.
    ///
    /// # Errors
    ///
    /// [`AuthError::Random`] when the operating system has no randomness to give.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::ClientKey;
    ///
    /// let (a, b) = (ClientKey::generate()?, ClientKey::generate()?);
    /// assert_ne!(a.thumbprint(), b.thumbprint());
    /// # Ok::<(), mcpl_client::auth::AuthError>(())
    /// ```
    pub fn generate() -> Result<Self, AuthError> {
        // A uniformly drawn 32-byte string is a valid scalar but with probability ~2^-32;
        // a few draws make failure impossible in practice, and it stays an error, not a loop.
        for _ in 0..4 {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
            if let Ok(key) = SigningKey::from_bytes(&bytes.into()) {
                return Ok(ClientKey(key));
            }
        }
        Err(AuthError::Random("no valid P-256 scalar drawn".into()))
    }

    /// The key's public JWK (`kty`, `crv`, `x`, `y`), as DPoP proofs carry it.
    pub(crate) fn public_jwk(&self) -> Value {
        let point = self.0.verifying_key().to_encoded_point(false);
        let coordinate = |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c));
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": coordinate(point.x()),
            "y": coordinate(point.y()),
        })
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key, base64url: the `jkt` a DPoP-bound
    /// token is bound to (`cnf.jkt`) and the `dpop_jkt` of an authorization request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::ClientKey;
    ///
    /// let key = ClientKey::generate()?;
    /// assert_eq!(key.thumbprint().len(), 43, "32 bytes, base64url");
    /// assert_eq!(key.thumbprint(), key.clone().thumbprint());
    /// # Ok::<(), mcpl_client::auth::AuthError>(())
    /// ```
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        // The required members in lexicographic order, no whitespace (RFC 7638 section 3).
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap_or_default(),
            jwk["y"].as_str().unwrap_or_default()
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// A JWS (compact serialization) of `claims` under `header`, signed ES256.
    pub(crate) fn sign(&self, header: &Value, claims: &Value) -> String {
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        // JWS ES256: the signature is the fixed-size r || s, not DER.
        let signature: Signature = self.0.sign(signing_input.as_bytes());
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }

    /// A client assertion for `client_id` addressed to the authorization server `audience`
    /// (its issuer identifier): `iss` = `sub` = `client_id`, `iat`, `exp` and a random `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.assertion_at(client_id, audience, now)
    }

    fn assertion_at(&self, client_id: &str, audience: &str, now: u64) -> Result<String, AuthError> {
        let header = json!({ "alg": "ES256", "typ": "JWT" });
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + LIFETIME_SECS,
            "jti": random_token(16)?,
        });
        Ok(self.sign(&header, &claims))
    }
}

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    use serde_json::Value;

    use super::*;

    fn key() -> (ClientKey, VerifyingKey) {
        let secret = SigningKey::from_bytes(&[7u8; 32].into()).unwrap();
        let pem = secret.to_pkcs8_pem(LineEnding::LF).unwrap();
        let key = ClientKey::from_pkcs8_pem(&pem).unwrap();
        (key, *secret.verifying_key())
    }

    fn part(segment: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
    }

    #[test]
    fn assertion_is_signed_es256_with_the_expected_claims() {
        let (key, public) = key();
        let jwt = key.assertion_at("client-1", "https://as.example", 1_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        public.verify(input.as_bytes(), &signature).unwrap();
        // A different message does not verify with that signature.
        assert!(public.verify(b"tampered", &signature).is_err());

        let header = part(parts[0]);
        assert_eq!(header["alg"], "ES256");
        let claims = part(parts[1]);
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["iat"], 1_000);
        assert_eq!(claims["exp"], 1_000 + LIFETIME_SECS);
        let jti = claims["jti"].as_str().unwrap();
        assert!(jti.len() >= 16);
        let again = part(
            key.assertion_at("client-1", "https://as.example", 1_000)
                .unwrap()
                .split('.')
                .nth(1)
                .unwrap(),
        );
        assert_ne!(again["jti"], claims["jti"], "jti must be fresh per assertion");
    }

    #[test]
    fn a_key_selects_private_key_jwt_and_is_redacted() {
        let secret = SigningKey::from_bytes(&[9u8; 32].into()).unwrap();
        let pem = secret.to_pkcs8_pem(LineEnding::LF).unwrap();
        let credentials = crate::auth::ClientCredentials::private_key_jwt("c", &pem).unwrap();
        let meta: crate::auth::ServerMetadata = serde_json::from_value(json!({
            "issuer": "https://as", "token_endpoint": "https://as/t",
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
        }))
        .unwrap();
        assert_eq!(crate::auth::token_auth_method(&meta, &credentials), "private_key_jwt");
        let text = format!("{credentials:?}");
        assert!(text.contains("<redacted>") && !text.contains("PRIVATE KEY"), "{text}");
        let secret_only = crate::auth::ClientCredentials::confidential("c", "s");
        assert_ne!(crate::auth::token_auth_method(&meta, &secret_only), "private_key_jwt");
    }

    #[test]
    fn bad_keys_are_typed_errors_and_keys_stay_out_of_debug() {
        let err = ClientKey::from_pkcs8_pem(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
        )
        .unwrap_err();
        assert_eq!(err.kind(), "invalid_key");
        assert_eq!(
            ClientKey::from_pkcs8_pem(&"A".repeat(MAX_PEM_BYTES + 1)).unwrap_err().kind(),
            "invalid_key"
        );
        let (key, _) = key();
        assert_eq!(format!("{key:?}"), "ClientKey(<redacted>)");
    }
}
