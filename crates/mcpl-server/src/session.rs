//! Serving one connection: the `initialize` handshake, the lifecycle guard and the methods.
//!
//! The lifecycle of a stateful-era connection has three phases. Before the `initialize`
//! response only `initialize` and `ping` are served (anything else is refused with `-32600`);
//! `initialize` negotiates the protocol version (the client's, if this SDK speaks it as a
//! stateful revision, else the newest stateful one); a second `initialize` is refused.

use std::sync::{Arc, Mutex, PoisonError};

use mcpl_core::engine::{CloseReason, Engine, HandlerResult, RequestContext};
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    CallToolRequestParams, ClientCapabilities, EmptyResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, names,
};
use mcpl_core::{Era, Peer, ProtocolVersion, Result, Transport};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::builder::Server;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No `initialize` yet.
    New,
    /// `initialize` answered.
    Initialized,
    /// `notifications/initialized` received.
    Ready,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    version: Option<ProtocolVersion>,
    client_info: Option<Implementation>,
    client_capabilities: Option<ClientCapabilities>,
}

type SharedState = Arc<Mutex<State>>;

fn lock_state(s: &SharedState) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One served connection.
#[derive(Debug, Clone)]
pub struct Session {
    engine: Engine,
    peer: Peer,
    state: SharedState,
}

impl Server {
    /// Serves this server on `transport` until the peer goes away or [`Session::close`] is
    /// called.
    ///
    /// # Errors
    ///
    /// The transport's start error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it resolves leaves nothing running.
    pub async fn serve<T: Transport>(&self, transport: T) -> Result<Session> {
        let engine = Engine::new();
        let state: SharedState = Arc::new(Mutex::new(State {
            phase: Phase::New,
            version: None,
            client_info: None,
            client_capabilities: None,
        }));
        let (server, st) = (self.clone(), state.clone());
        engine.on_any_request(move |ctx: RequestContext, params: Option<Value>| {
            let (server, st) = (server.clone(), st.clone());
            async move { route(&server, &st, ctx, params).await }
        });
        let st = state.clone();
        engine.on_notification(
            names::NOTIFICATIONS_INITIALIZED,
            move |_ctx, _params: Option<Value>| {
                let st = st.clone();
                async move {
                    let mut s = lock_state(&st);
                    if s.phase == Phase::Initialized {
                        s.phase = Phase::Ready;
                    }
                }
            },
        );
        engine.on_close(|reason: &CloseReason| tracing::debug!(%reason, "session closed"));
        let peer = engine.connect(transport).await?;
        Ok(Session { engine, peer, state })
    }
}

impl Session {
    /// The protocol version negotiated by `initialize`, once it happened.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock_state(&self.state).version
    }

    /// The client's identity, once it initialized.
    pub fn client_info(&self) -> Option<Implementation> {
        lock_state(&self.state).client_info.clone()
    }

    /// The client's capabilities, once it initialized.
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        lock_state(&self.state).client_capabilities.clone()
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn is_ready(&self) -> bool {
        lock_state(&self.state).phase == Phase::Ready
    }

    /// The client, for sending requests and notifications to it.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the connection ends.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// Closes the connection.
    ///
    /// # Errors
    ///
    /// The transport's close error.
    pub async fn close(&self) -> Result<()> {
        self.engine.close().await
    }
}

fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Default::default())))
        .map_err(ErrorObject::invalid_params)
}

fn encode<T: Serialize>(value: T) -> HandlerResult {
    serde_json::to_value(value).map_err(ErrorObject::internal)
}

async fn route(
    server: &Server,
    st: &SharedState,
    ctx: RequestContext,
    params: Option<Value>,
) -> HandlerResult {
    let method = ctx.method().to_owned();
    let phase = lock_state(st).phase;
    match method.as_str() {
        names::PING => return encode(EmptyResult::default()),
        names::INITIALIZE => return initialize(server, st, params),
        _ if phase == Phase::New => {
            return Err(ErrorObject::invalid_request(format_args!(
                "{method} before initialize: the server is not initialized"
            )));
        }
        _ => {}
    }
    match method.as_str() {
        names::TOOLS_LIST => {
            let tools = server.tools().cloned().collect();
            encode(ListToolsResult { tools, ..ListToolsResult::default() })
        }
        names::TOOLS_CALL => {
            let params: CallToolRequestParams = decode(params)?;
            let Some(entry) = server.tool(&params.name) else {
                return Err(ErrorObject::invalid_params(format_args!(
                    "unknown tool {:?}",
                    params.name
                )));
            };
            let handler = entry.handler.clone();
            encode(handler.call(ctx, params.arguments.unwrap_or_default()).await?)
        }
        _ => Err(ErrorObject::method_not_found(&method)),
    }
}

fn initialize(server: &Server, st: &SharedState, params: Option<Value>) -> HandlerResult {
    let params: InitializeRequestParams = decode(params)?;
    let version = ProtocolVersion::parse(&params.protocol_version)
        .filter(|v| v.era() == Era::Stateful)
        .unwrap_or(ProtocolVersion::LATEST_STATEFUL);
    {
        let mut s = lock_state(st);
        if s.phase != Phase::New {
            return Err(ErrorObject::invalid_request("initialize was already received"));
        }
        s.phase = Phase::Initialized;
        s.version = Some(version);
        s.client_info = Some(params.client_info);
        s.client_capabilities = Some(params.capabilities);
    }
    tracing::debug!(%version, "initialized");
    let mut result =
        InitializeResult::new(version.as_str(), server.capabilities(), server.info().clone());
    result.instructions = server.inner.instructions.clone();
    encode(result)
}
