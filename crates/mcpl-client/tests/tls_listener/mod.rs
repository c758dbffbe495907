//! A TLS listener for axum, shared by the tests that serve over real TLS.

#![allow(dead_code)]

use std::net::SocketAddr;

/// A TLS listener for axum: each accepted TCP connection goes through the TLS handshake first.
pub(crate) struct TlsListener {
    pub(crate) tcp: tokio::net::TcpListener,
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else { continue };
            // A client that refuses the certificate ends the handshake: wait for the next.
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
