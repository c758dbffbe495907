//! The redirect rule of every HTTP exchange the client makes (the Streamable HTTP transport
//! and the OAuth client): follow a redirect only to the origin the request went to, at most
//! [`MAX_REDIRECTS`] times; refuse anything else with [`RedirectRefused`].
//!
//! A redirect to another origin would carry the request there: its body, the session id,
//! custom headers such as an API key (reqwest drops only `Authorization` and cookies), or, for
//! `301`/`302`/`303`, the headers on a `GET`. The origin is scheme, host and port, so a
//! downgrade from `https` to `http` on the same host is refused too.
//!
//! A `reqwest::Client` handed to
//! [`HttpTransport::http_client`](crate::transport::HttpTransport::http_client) or
//! [`OAuth::http_client`](crate::auth::OAuth::http_client) keeps its own redirect policy:
//! build it with [`policy`] to keep this rule.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//!
//! use mcpl_client::transport::{HttpTransport, redirect};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let http = reqwest::Client::builder()
//!     .connect_timeout(Duration::from_secs(5))
//!     .redirect(redirect::policy())
//!     .build()?;
//! let transport = HttpTransport::new("https://mcp.example.com/mcp").http_client(http);
//! # drop(transport);
//! # Ok(()) }
//! ```

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

/// The most redirects one request follows.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::redirect::MAX_REDIRECTS;
///
/// assert_eq!(MAX_REDIRECTS, 5);
/// ```
pub const MAX_REDIRECTS: usize = 5;

/// Why a redirect was not followed.
///
/// It is the [`source`](std::error::Error::source) of the transport error of the request
/// (find it with [`RedirectRefused::find`]), and of
/// [`AuthError::Redirect`](crate::auth::AuthError::Redirect) in the OAuth client.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::redirect::RedirectRefused;
///
/// let refused = RedirectRefused::CrossOrigin {
///     from: "https://mcp.example.com".into(),
///     to: "https://elsewhere.example.net".into(),
/// };
/// assert_eq!(refused.kind(), "cross_origin");
/// assert!(refused.to_string().contains("elsewhere.example.net"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectRefused {
    /// The redirect leads to another origin.
    #[error("redirect from {from} to another origin ({to}) refused")]
    CrossOrigin {
        /// The origin the request was sent to.
        from: String,
        /// The origin the server redirected to.
        to: String,
    },
    /// The request was redirected more than [`MAX_REDIRECTS`] times.
    #[error("more than {limit} redirects")]
    TooMany {
        /// The limit.
        limit: usize,
    },
}

impl RedirectRefused {
    /// A stable name for the reason: `cross_origin` or `too_many`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::redirect::{MAX_REDIRECTS, RedirectRefused};
    ///
    /// assert_eq!(RedirectRefused::TooMany { limit: MAX_REDIRECTS }.kind(), "too_many");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            RedirectRefused::CrossOrigin { .. } => "cross_origin",
            RedirectRefused::TooMany { .. } => "too_many",
        }
    }

    /// The refusal somewhere in the [`source`](std::error::Error::source) chain of `error`
    /// (a `reqwest::Error`, an [`mcpl_core::Error`], ...), if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::redirect::RedirectRefused;
    ///
    /// let refused = RedirectRefused::TooMany { limit: 5 };
    /// let error = mcpl_core::Error::Transport {
    ///     context: "could not POST".into(),
    ///     source: Some(Box::new(refused.clone())),
    /// };
    /// assert_eq!(RedirectRefused::find(&error), Some(&refused));
    /// ```
    pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a RedirectRefused> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
                return Some(refused);
            }
            next = e.source();
        }
        None
    }
}

/// The redirect policy: same-origin redirects only, at most [`MAX_REDIRECTS`].
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::redirect;
///
/// # fn main() -> Result<(), reqwest::Error> {
/// let http = reqwest::Client::builder().redirect(redirect::policy()).build()?;
/// # drop(http);
/// # Ok(()) }
/// ```
pub fn policy() -> Policy {
    Policy::custom(judge)
}

fn judge(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let Some(first) = attempt.previous().first() else { return attempt.follow() };
    let (from, to) = (origin(first), origin(attempt.url()));
    if from != to {
        tracing::debug!(%from, %to, "refusing a redirect to another origin");
        return attempt.error(RedirectRefused::CrossOrigin { from, to });
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        tracing::debug!(limit = MAX_REDIRECTS, "refusing one redirect too many");
        return attempt.error(RedirectRefused::TooMany { limit: MAX_REDIRECTS });
    }
    attempt.follow()
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}
