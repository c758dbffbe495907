//! What a failure of the HTTP or WebSocket library means, as a typed [`mcpl_core::Error`]:
//! a refused connection is [`ErrorKind::Connect`](mcpl_core::ErrorKind::Connect), a TLS failure
//! [`ErrorKind::Tls`](mcpl_core::ErrorKind::Tls), a timeout
//! [`ErrorKind::TransportTimeout`](mcpl_core::ErrorKind::TransportTimeout), each with the
//! library's error as its source.

#[cfg(feature = "http")]
use mcpl_core::Error;

/// Whether `error` or one of its causes is a TLS failure (a certificate the roots do not
/// trust, a handshake that failed). The TLS libraries' errors often arrive wrapped in an
/// `io::Error`, whose `source` skips the wrapped error: those are looked into too.
pub(crate) fn is_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        #[cfg(feature = "rustls")]
        if e.is::<rustls::Error>() {
            return true;
        }
        #[cfg(all(feature = "native-tls", not(feature = "rustls")))]
        {
            // The platform's TLS errors have no type this crate can name: go by their text.
            let text = e.to_string().to_ascii_lowercase();
            if ["certificate", "tls", "ssl", "handshake"].iter().any(|w| text.contains(w)) {
                return true;
            }
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref)
            && is_tls(inner)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// The error of an HTTP exchange with `endpoint` (a URL without credentials) that failed
/// with `e`, which had a connect timeout of `connect_timeout` if known.
#[cfg(feature = "http")]
pub(crate) fn http(
    endpoint: &str,
    e: reqwest::Error,
    connect_timeout: Option<std::time::Duration>,
) -> Error {
    use super::redirect::RedirectRefused;
    if let Some(refused) = RedirectRefused::find(&e) {
        return Error::Transport {
            context: format!("{endpoint} redirected the request where the client does not follow"),
            source: Some(Box::new(refused.clone())),
        };
    }
    if is_tls(&e) {
        return Error::Tls { endpoint: endpoint.to_owned(), source: Box::new(e) };
    }
    if e.is_timeout() {
        let (during, timeout) = if e.is_connect() {
            (format!("connecting to {endpoint}"), connect_timeout)
        } else {
            (format!("the HTTP exchange with {endpoint}"), None)
        };
        return Error::TransportTimeout { during, timeout };
    }
    if e.is_connect() {
        return Error::Connect { endpoint: endpoint.to_owned(), source: Box::new(e) };
    }
    Error::Transport {
        context: format!("the HTTP exchange with {endpoint} failed"),
        source: Some(Box::new(e)),
    }
}

/// Whether a request that failed with `e` found the server gone: no connection could be made
/// (refused, TLS, a connect timeout), or the connection closed before any response (what a
/// pooled connection to a server that died or restarted gives). A timeout of the exchange and
/// a refused redirect are not.
#[cfg(feature = "http")]
pub(crate) fn gone(e: &reqwest::Error) -> bool {
    if e.is_redirect() || super::redirect::RedirectRefused::find(e).is_some() {
        return false;
    }
    e.is_connect() || (e.is_request() && !e.is_timeout())
}

/// Whether `error` shows that the server cannot be reached at all (so the connection is
/// over), rather than one exchange going wrong.
#[cfg(feature = "http")]
pub(crate) fn unreachable(error: &Error) -> bool {
    match error {
        Error::Connect { .. } | Error::Tls { .. } => true,
        Error::TransportTimeout { during, .. } => during.starts_with("connecting"),
        _ => false,
    }
}

/// A copy of `error` (one of those [`unreachable`] accepts) to end the connection with, its
/// cause kept as text (the original goes to the request that failed).
#[cfg(feature = "http")]
pub(crate) fn copy(error: &Error) -> Error {
    let cause = || -> mcpl_core::error::BoxError {
        let mut text = String::new();
        let mut next = std::error::Error::source(error);
        while let Some(e) = next {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&e.to_string());
            next = e.source();
        }
        text.into()
    };
    match error {
        Error::Connect { endpoint, .. } => {
            Error::Connect { endpoint: endpoint.clone(), source: cause() }
        }
        Error::Tls { endpoint, .. } => Error::Tls { endpoint: endpoint.clone(), source: cause() },
        Error::TransportTimeout { during, timeout } => {
            Error::TransportTimeout { during: during.clone(), timeout: *timeout }
        }
        other => Error::Transport { context: other.to_string(), source: Some(cause()) },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn tls_errors_are_found_inside_io_errors() {
        let plain = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!is_tls(&plain));
        #[cfg(feature = "rustls")]
        {
            let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
            let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
            assert!(is_tls(&wrapped));
        }
    }

    #[test]
    #[cfg(feature = "http")]
    fn a_copy_keeps_the_kind_and_the_cause_text() {
        let refused = std::io::Error::other("connection refused");
        let e =
            Error::Connect { endpoint: "http://127.0.0.1:1/mcp".into(), source: refused.into() };
        assert!(unreachable(&e));
        let copy = copy(&e);
        assert_eq!(copy.kind(), e.kind());
        assert_eq!(std::error::Error::source(&copy).unwrap().to_string(), "connection refused");
    }
}
