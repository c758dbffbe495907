//! Which URLs the OAuth client accepts from discovery: the rules that keep a hostile MCP
//! server (its `WWW-Authenticate` challenge, its metadata) from steering the client.
//!
//! Every URL the flow is about to use is judged before anything is sent to it: the MCP server
//! itself, the resource metadata (from the challenge or the well-known locations), the
//! authorization server (issuer) the resource names, and the authorization, token and
//! registration endpoints its metadata names.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;

use super::AuthError;

/// The rules for the URLs of an OAuth flow. The defaults are safe; each rule can be relaxed.
///
/// 1. **HTTPS.** Every URL is `https`, except plain `http` to a loopback host (`localhost`,
///    `127.0.0.0/8`, `::1`), which never leaves the machine: tokens, codes and client secrets
///    are never sent in cleartext over a network. [`allow_http`](Self::allow_http) lifts it.
/// 2. **No stepping into a private network.** A URL whose host is a loopback or
///    private-network address (RFC 1918, link-local such as the cloud metadata address
///    `169.254.169.254`, carrier-grade NAT, IPv6 unique-local and link-local, unspecified) is
///    refused unless the MCP server itself is on such a network (loopback counts as the
///    innermost): a server on the internet cannot point the client at hosts inside the
///    user's network. Host names are resolved and judged by every address they resolve to.
///    [`allow_private_networks`](Self::allow_private_networks) lifts it.
/// 3. **Resource metadata on the server's origin.** A `resource_metadata` URL in a challenge
///    must be on the MCP server's origin, like the well-known locations (the metadata's
///    `resource` must name the server in any case, and an authorization server's metadata must
///    name the issuer it was looked up for).
///    [`allow_cross_origin_resource_metadata`](Self::allow_cross_origin_resource_metadata)
///    lifts it.
///
/// A refused URL fails the flow with [`AuthError::UrlRefused`].
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{DiscoveryPolicy, OAuth};
/// # #[derive(Debug)]
/// # struct Browser;
/// # impl mcpl_client::auth::Authorizer for Browser {
/// #     fn authorize<'a>(&'a self, _url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
/// #         Box::pin(async { Err(mcpl_client::auth::AuthError::Interaction("no browser".into())) })
/// #     }
/// # }
///
/// // An intranet deployment: the MCP server on the internet-facing side, its authorization
/// // server on an internal address.
/// let policy = DiscoveryPolicy::new().allow_private_networks(true);
/// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback").discovery_policy(policy);
/// # drop(oauth);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct DiscoveryPolicy {
    allow_http: bool,
    allow_private_networks: bool,
    allow_cross_origin_resource_metadata: bool,
}

/// Why a URL was refused.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::UrlRefusal;
///
/// assert_eq!(UrlRefusal::NotHttps.kind(), "not_https");
/// assert!(UrlRefusal::NotHttps.to_string().contains("https"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlRefusal {
    /// Not `https`, and not plain `http` to a loopback host.
    #[error("not https (plain http is only for loopback hosts)")]
    NotHttps,
    /// A loopback or private-network host named for a server outside that network.
    #[error("a loopback or private-network host, and the MCP server is not on that network")]
    PrivateNetwork,
    /// Resource metadata that is not on the MCP server's origin.
    #[error("not on the MCP server's origin")]
    CrossOrigin,
}

impl UrlRefusal {
    /// A stable name: `not_https`, `private_network` or `cross_origin`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::UrlRefusal;
    ///
    /// assert_eq!(UrlRefusal::PrivateNetwork.kind(), "private_network");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            UrlRefusal::NotHttps => "not_https",
            UrlRefusal::PrivateNetwork => "private_network",
            UrlRefusal::CrossOrigin => "cross_origin",
        }
    }
}

/// How far inside the user's network a host is; a URL may not be further in than the MCP
/// server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Zone {
    Public,
    Private,
    Loopback,
}

impl DiscoveryPolicy {
    /// The default rules: HTTPS (plain HTTP to loopback only), no stepping into a private
    /// network, resource metadata on the server's origin.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::DiscoveryPolicy;
    ///
    /// assert_eq!(DiscoveryPolicy::new(), DiscoveryPolicy::default());
    /// ```
    pub fn new() -> DiscoveryPolicy {
        DiscoveryPolicy::default()
    }

    /// Accepts plain `http` URLs to any host (rule 1). Default: `false`. Only for test
    /// setups: tokens and client secrets then travel in cleartext.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::DiscoveryPolicy;
    ///
    /// let lab = DiscoveryPolicy::new().allow_http(true);
    /// # drop(lab);
    /// ```
    pub fn allow_http(mut self, allow: bool) -> DiscoveryPolicy {
        self.allow_http = allow;
        self
    }

    /// Accepts loopback and private-network hosts whatever network the MCP server is on
    /// (rule 2). Default: `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::DiscoveryPolicy;
    ///
    /// let intranet = DiscoveryPolicy::new().allow_private_networks(true);
    /// # drop(intranet);
    /// ```
    pub fn allow_private_networks(mut self, allow: bool) -> DiscoveryPolicy {
        self.allow_private_networks = allow;
        self
    }

    /// Follows a challenge's `resource_metadata` to another origin than the MCP server's
    /// (rule 3). Default: `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::DiscoveryPolicy;
    ///
    /// // The server's metadata is published by a separate host.
    /// let policy = DiscoveryPolicy::new().allow_cross_origin_resource_metadata(true);
    /// # drop(policy);
    /// ```
    pub fn allow_cross_origin_resource_metadata(mut self, allow: bool) -> DiscoveryPolicy {
        self.allow_cross_origin_resource_metadata = allow;
        self
    }

    /// Judges `url`, which the flow for the MCP server `server` is about to use as `what`
    /// (rules 1 and 2).
    pub(crate) async fn check(
        &self,
        what: &'static str,
        url: &str,
        server: &Url,
    ) -> Result<Url, AuthError> {
        let parsed = super::metadata::parse_url(url)?;
        let refused = |reason| AuthError::UrlRefused { what, url: url.to_owned(), reason };
        let secure = parsed.scheme() == "https"
            || (parsed.scheme() == "http"
                && (self.allow_http || literal_zone(&parsed) == Some(Zone::Loopback)));
        if !secure {
            tracing::debug!(what, %url, "refusing a URL that is not https");
            return Err(refused(UrlRefusal::NotHttps));
        }
        if !self.allow_private_networks && zone(&parsed).await > zone(server).await {
            tracing::debug!(what, %url, "refusing a URL inside a network the server is not in");
            return Err(refused(UrlRefusal::PrivateNetwork));
        }
        Ok(parsed)
    }

    /// Judges the `resource_metadata` URL of a challenge from `server` (rules 1 to 3).
    pub(crate) async fn check_resource_metadata(
        &self,
        url: &str,
        server: &Url,
    ) -> Result<Url, AuthError> {
        let parsed = self.check("resource metadata", url, server).await?;
        if !self.allow_cross_origin_resource_metadata && parsed.origin() != server.origin() {
            tracing::debug!(%url, "refusing resource metadata on another origin");
            return Err(AuthError::UrlRefused {
                what: "resource metadata",
                url: url.to_owned(),
                reason: UrlRefusal::CrossOrigin,
            });
        }
        Ok(parsed)
    }
}

/// The zone of `url`'s host as written (an address literal or `localhost`), if it says.
fn literal_zone(url: &Url) -> Option<Zone> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(ip_zone(IpAddr::V4(ip))),
        url::Host::Ipv6(ip) => Some(ip_zone(IpAddr::V6(ip))),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            (name.eq_ignore_ascii_case("localhost")
                || name.to_ascii_lowercase().ends_with(".localhost"))
            .then_some(Zone::Loopback)
        }
    }
}

/// The zone of `url`'s host: as written, else the innermost of the addresses its name
/// resolves to (a name that does not resolve is judged public: the request then fails).
async fn zone(url: &Url) -> Zone {
    if let Some(zone) = literal_zone(url) {
        return zone;
    }
    let Some(host) = url.host_str() else { return Zone::Public };
    let port = url.port_or_known_default().unwrap_or(443);
    match tokio::net::lookup_host((host, port)).await {
        Ok(addrs) => addrs.map(|a| ip_zone(a.ip())).max().unwrap_or(Zone::Public),
        Err(e) => {
            tracing::debug!(%host, error = %e, "could not resolve a discovered host");
            Zone::Public
        }
    }
}

fn ip_zone(ip: IpAddr) -> Zone {
    match ip {
        IpAddr::V4(ip) => v4_zone(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => v4_zone(v4),
            None => v6_zone(ip),
        },
    }
}

fn v4_zone(ip: Ipv4Addr) -> Zone {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() || ip.is_unspecified() {
        Zone::Loopback
    } else if ip.is_private()
        || ip.is_link_local()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || ip.is_broadcast()
        || ip.is_multicast()
        || a >= 240
    {
        Zone::Private
    } else {
        Zone::Public
    }
}

fn v6_zone(ip: Ipv6Addr) -> Zone {
    let first = ip.segments()[0];
    if ip.is_loopback() || ip.is_unspecified() {
        Zone::Loopback
    } else if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 || ip.is_multicast() {
        Zone::Private
    } else {
        Zone::Public
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    async fn verdict(
        policy: &DiscoveryPolicy,
        target: &str,
        server: &str,
    ) -> Result<(), &'static str> {
        match policy.check("test", target, &url(server)).await {
            Ok(_) => Ok(()),
            Err(AuthError::UrlRefused { reason, .. }) => Err(reason.kind()),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn zones_of_addresses() {
        for (ip, zone) in [
            ("127.0.0.1", Zone::Loopback),
            ("127.8.9.10", Zone::Loopback),
            ("0.0.0.0", Zone::Loopback),
            ("::1", Zone::Loopback),
            ("::", Zone::Loopback),
            ("::ffff:127.0.0.1", Zone::Loopback),
            ("10.1.2.3", Zone::Private),
            ("172.16.0.1", Zone::Private),
            ("172.31.255.255", Zone::Private),
            ("192.168.1.1", Zone::Private),
            ("169.254.169.254", Zone::Private),
            ("100.64.0.1", Zone::Private),
            ("0.1.2.3", Zone::Private),
            ("255.255.255.255", Zone::Private),
            ("fd00::1", Zone::Private),
            ("fe80::1", Zone::Private),
            ("::ffff:10.0.0.1", Zone::Private),
            ("::ffff:169.254.169.254", Zone::Private),
            ("172.32.0.1", Zone::Public),
            ("100.128.0.1", Zone::Public),
            ("93.184.215.14", Zone::Public),
            ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", Zone::Public),
        ] {
            assert_eq!(ip_zone(ip.parse().unwrap()), zone, "{ip}");
        }
    }

    #[tokio::test]
    async fn https_everywhere_but_loopback() {
        let policy = DiscoveryPolicy::new();
        let public = "https://93.184.215.14/mcp";
        assert_eq!(verdict(&policy, "https://93.184.215.15/token", public).await, Ok(()));
        assert_eq!(verdict(&policy, "http://93.184.215.15/token", public).await, Err("not_https"));
        assert_eq!(verdict(&policy, "ftp://93.184.215.15/token", public).await, Err("not_https"));
        let local = "http://127.0.0.1:3000/mcp";
        assert_eq!(verdict(&policy, "http://127.0.0.1:9000/token", local).await, Ok(()));
        assert_eq!(verdict(&policy, "http://localhost:9000/token", local).await, Ok(()));
        assert_eq!(verdict(&policy, "http://[::1]:9000/token", local).await, Ok(()));
        assert_eq!(verdict(&policy, "http://192.0.2.1/token", local).await, Err("not_https"));
        let lab = DiscoveryPolicy::new().allow_http(true);
        assert_eq!(verdict(&lab, "http://93.184.215.15/token", public).await, Ok(()));
    }

    #[tokio::test]
    async fn a_public_server_cannot_point_into_a_private_network() {
        let policy = DiscoveryPolicy::new();
        let public = "https://93.184.215.14/mcp";
        for inside in [
            "https://127.0.0.1/token",
            "https://localhost/token",
            "https://10.0.0.5/token",
            "https://169.254.169.254/latest/meta-data",
            "https://[::ffff:10.0.0.5]/token",
            "https://[fd12::5]/token",
        ] {
            assert_eq!(verdict(&policy, inside, public).await, Err("private_network"), "{inside}");
        }
        // From inside, the same network (or a less inner one) is fine.
        let intranet = "https://10.0.0.1/mcp";
        assert_eq!(verdict(&policy, "https://10.0.0.5/token", intranet).await, Ok(()));
        assert_eq!(verdict(&policy, "https://93.184.215.15/token", intranet).await, Ok(()));
        assert_eq!(
            verdict(&policy, "https://127.0.0.1/token", intranet).await,
            Err("private_network")
        );
        let local = "http://127.0.0.1:3000/mcp";
        assert_eq!(verdict(&policy, "https://10.0.0.5/token", local).await, Ok(()));
        let open = DiscoveryPolicy::new().allow_private_networks(true);
        assert_eq!(verdict(&open, "https://10.0.0.5/token", public).await, Ok(()));
    }

    #[tokio::test]
    async fn resource_metadata_stays_on_the_server_origin() {
        let policy = DiscoveryPolicy::new();
        let server = url("http://127.0.0.1:3000/mcp");
        let same = policy.check_resource_metadata("http://127.0.0.1:3000/prm", &server).await;
        assert!(same.is_ok());
        for other in ["http://127.0.0.1:3001/prm", "https://127.0.0.1:3000/prm"] {
            let err = policy.check_resource_metadata(other, &server).await.unwrap_err();
            assert!(
                matches!(err, AuthError::UrlRefused { reason: UrlRefusal::CrossOrigin, .. }),
                "{other}: {err}"
            );
        }
        let open = DiscoveryPolicy::new().allow_cross_origin_resource_metadata(true);
        assert!(open.check_resource_metadata("http://127.0.0.1:3001/prm", &server).await.is_ok());
    }
}
