//! Transports only a client needs.
//!
//! - [`ChildProcess`]: spawn a server as a child process and speak newline-delimited JSON over
//!   its stdin and stdout.
//! - [`HttpTransport`]: Streamable HTTP, for servers of either era.
//! - [`WebSocketTransport`]: WebSocket (`ws://`, `wss://`, and `mcpl://` URIs resolved with
//!   [`McplUri`]), the transport of MCPL servers that send requests at any time.
//!
//! [`redirect`] holds the redirect rule of every HTTP exchange: same-origin only, a few at most;
//! [`tls`] the TLS configuration of `https://`, `wss://` and `mcpl://`.
//!
//! Each transport is a feature of the crate (all on by default): `child`, `http`, `ws`; TLS is
//! `rustls` (default) or `native-tls`.

#[cfg(feature = "child")]
mod child;
#[cfg(any(feature = "http", feature = "ws"))]
mod failure;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod headers;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod mcpl_uri;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod redirect;
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub mod tls;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

#[cfg(feature = "child")]
#[cfg_attr(docsrs, doc(cfg(feature = "child")))]
pub use self::child::{
    ChildProcess, ChildReceiver, ChildSender, DEFAULT_INHERITED_ENV, MAX_STDERR_LINE,
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use self::http::{HttpReceiver, HttpSender, HttpTransport};
pub use self::mcpl_uri::{McplUri, McplUriError, McplUriErrorKind};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use self::ws::WebSocketTransport;

/// `url` for a log line or `Debug` output: its user info and query (where credentials and
/// tokens hide) replaced by `…`, its fragment dropped; text that is not a URL is shown as
/// `<not a URL>`.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::redacted_url;
///
/// assert_eq!(
///     redacted_url("https://bot:s3cret@hooks.example/T0/B1?token=abc#x"),
///     "https://…@hooks.example/T0/B1?…"
/// );
/// assert_eq!(redacted_url("ws://127.0.0.1:9000/mcpl"), "ws://127.0.0.1:9000/mcpl");
/// assert_eq!(redacted_url("not a url token=abc"), "<not a URL>");
/// ```
pub fn redacted_url(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else { return "<not a URL>".to_owned() };
    let mut out = format!("{}://", parsed.scheme());
    if !parsed.username().is_empty() || parsed.password().is_some() {
        out.push_str("…@");
    }
    if let Some(host) = parsed.host_str() {
        out.push_str(host);
    }
    if let Some(port) = parsed.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(parsed.path());
    if parsed.query().is_some() {
        out.push_str("?…");
    }
    out
}

#[cfg(all(test, feature = "http", feature = "ws"))]
mod tests {
    use super::*;

    #[test]
    fn debug_output_holds_no_credentials() {
        let url = "https://user:pa55@mcp.example/mcp?key=sk-query-secret";
        let http = HttpTransport::new(url).header("Authorization", "Bearer sk-header-secret");
        let ws = WebSocketTransport::new("wss://mcp.example/ws?token=sk-ws-secret")
            .header("Authorization", "Bearer sk-ws-header");
        let shown = format!("{:?} {ws:?}", http.unwrap());
        for secret in
            ["pa55", "sk-query-secret", "sk-header-secret", "sk-ws-secret", "sk-ws-header"]
        {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("mcp.example/mcp") && shown.contains("authorization"), "{shown}");
    }
}
