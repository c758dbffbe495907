//! The `WWW-Authenticate: Bearer ...` (RFC 6750, RFC 9728 section 5.1) and `DPoP ...`
//! (RFC 9449 section 7.1) challenges.
//!
//! # Why not `http-auth`
//!
//! `http-auth` (0.1.10, its parser alone) reads every challenge the auth conformance scenarios
//! send, `DPoP error="use_dpop_nonce"` and `error=` parameters included, but it is strict where
//! a client must not be: one byte outside ASCII in any quoted string (RFC 9110 allows it, as
//! `obs-text`; think of an `error_description` in French) or a `token68` anywhere in the header
//! is a syntax error for the whole header, and the challenge it was in is lost with all its
//! parameters, the `resource_metadata` a client needs to authorize at all included (it yields a
//! challenge only once the next one begins). So the parsing stays here: one pass over the
//! header, linear in its length, reading what it can.

/// What a server said when it refused a request: the parameters of its `Bearer` or `DPoP`
/// challenge.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::Challenge;
///
/// let header = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#;
/// let challenge = Challenge::parse(header);
/// assert!(challenge.is_insufficient_scope());
/// assert_eq!(challenge.scope.as_deref(), Some("files:read files:write"));
/// assert_eq!(
///     challenge.resource_metadata.as_deref(),
///     Some("https://mcp.example.com/.well-known/oauth-protected-resource")
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// `error`: `invalid_token`, `insufficient_scope`...
    pub error: Option<String>,
    /// `scope`: the scopes the server needs, space-separated.
    pub scope: Option<String>,
    /// `resource_metadata`: the URL of the protected resource metadata document.
    pub resource_metadata: Option<String>,
    /// Whether the server offered the `DPoP` scheme.
    pub dpop: bool,
}

impl Challenge {
    /// Parses the value of a `WWW-Authenticate` header; parameters of other schemes than
    /// `Bearer` and `DPoP` are ignored (the first value of each parameter counts). Malformed input yields what could be read.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::Challenge;
    ///
    /// // Parameters of other schemes are ignored; quoted strings are unescaped.
    /// let challenge = Challenge::parse(r#"Basic realm="x", Bearer error="invalid_token", scope="a\"b""#);
    /// assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
    /// assert_eq!(challenge.scope.as_deref(), Some(r#"a"b"#));
    /// // Malformed input yields what could be read.
    /// assert_eq!(Challenge::parse("Bearer ,,, ="), Challenge::default());
    /// ```
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let mut in_bearer = false;
        let mut rest = header.trim();
        while !rest.is_empty() {
            rest = rest.trim_start_matches([',', ' ', '\t']);
            let token_end = rest.find(['=', ',', ' ']).unwrap_or(rest.len());
            let token = &rest[..token_end];
            let after = rest[token_end..].trim_start();
            if let Some(value_part) = after.strip_prefix('=') {
                // An auth-param: token = token / quoted-string.
                let value_part = value_part.trim_start();
                let (value, remaining) = if let Some(quoted) = value_part.strip_prefix('"') {
                    let mut value = String::new();
                    let mut chars = quoted.char_indices();
                    let mut end = quoted.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, escaped)) = chars.next() {
                                    value.push(escaped);
                                }
                            }
                            '"' => {
                                end = i + 1;
                                break;
                            }
                            c => value.push(c),
                        }
                    }
                    (value, &quoted[end.min(quoted.len())..])
                } else {
                    let end = value_part.find([',', ' ']).unwrap_or(value_part.len());
                    (value_part[..end].to_owned(), &value_part[end..])
                };
                if in_bearer {
                    let slot = match token.to_ascii_lowercase().as_str() {
                        "error" => Some(&mut challenge.error),
                        "scope" => Some(&mut challenge.scope),
                        "resource_metadata" => Some(&mut challenge.resource_metadata),
                        _ => None,
                    };
                    if let Some(slot) = slot.filter(|slot| slot.is_none()) {
                        *slot = Some(value);
                    }
                }
                rest = remaining;
            } else {
                // A scheme name (or a token68, which Bearer challenges do not use). The token
                // is not empty: `rest` starts with neither ',' nor ' ', and not '=' here.
                let dpop = token.eq_ignore_ascii_case("dpop");
                challenge.dpop |= dpop;
                in_bearer = dpop || token.eq_ignore_ascii_case("bearer");
                rest = after;
            }
        }
        challenge
    }

    /// Whether the server asked for more scopes (`insufficient_scope`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::Challenge;
    ///
    /// // A step-up: authorize again with more scopes.
    /// assert!(Challenge::parse(r#"Bearer error="insufficient_scope", scope="admin""#).is_insufficient_scope());
    /// // An expired or unknown token: refresh or authorize again with the same scopes.
    /// assert!(!Challenge::parse(r#"Bearer error="invalid_token""#).is_insufficient_scope());
    /// ```
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quoted_and_token_params() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse("Bearer error=invalid_token,scope=\"x\\\"y\"");
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("x\"y"));
    }

    #[test]
    fn reads_dpop_challenges() {
        let c = Challenge::parse(
            r#"DPoP error="use_dpop_nonce", algs="ES256", resource_metadata="https://x/m""#,
        );
        assert!(c.dpop);
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://x/m"));
        let both = Challenge::parse(r#"Bearer scope="a", DPoP algs="ES256", scope="b""#);
        assert!(both.dpop);
        assert_eq!(both.scope.as_deref(), Some("a"), "the first value counts");
        assert!(!Challenge::parse(r#"Bearer scope="a""#).dpop);
    }

    #[test]
    fn reads_past_text_outside_ascii_and_token68() {
        let c = Challenge::parse(
            r#"Bearer error="invalid_token", error_description="Jeton expiré", resource_metadata="https://x/m""#,
        );
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://x/m"));
        let c = Challenge::parse(r#"Bearer scope="a b", Basic xyz=="#);
        assert_eq!(c.scope.as_deref(), Some("a b"));
    }

    #[test]
    fn ignores_other_schemes_and_garbage() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope="s""#);
        assert_eq!(c.scope.as_deref(), Some("s"));
        let c = Challenge::parse(r#"Basic scope="s""#);
        assert_eq!(c.scope, None);
        for junk in ["", "Bearer", "=", "Bearer =\"", "\"\"\"", ",,,", "Bearer a=\"unterminated"] {
            let _ = Challenge::parse(junk);
        }
    }
}
