//! What a connection is linked to, shared by the client, its notification routing and
//! session resumption.

use mcpl_core::Transport;
use mcpl_core::transport::SessionHandle;

/// What a connection is linked to: the transport's endpoint identity and session handle.
#[derive(Debug, Default)]
pub(crate) struct Link {
    /// The endpoint identity: the response cache's server partition.
    pub(crate) endpoint: Option<String>,
    /// The transport's server-side session, if it has one.
    pub(crate) session: Option<SessionHandle>,
}

impl Link {
    pub(crate) fn of<T: Transport>(transport: &T) -> Link {
        Link { endpoint: transport.endpoint(), session: transport.session() }
    }
}
