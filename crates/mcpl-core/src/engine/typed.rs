//! Typed requests, notifications and handlers, keyed by the method marker types of
//! [`crate::types`].

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::handler::{NotificationContext, RequestContext};
use super::{Engine, Peer, RequestOptions};
use crate::error::{Error, Result};
use crate::jsonrpc::{ErrorObject, RawJson};
use crate::types::{Method, NotificationMethod};

fn to_params<T: Serialize>(what: &str, params: &T) -> Result<Option<Value>> {
    let value = serde_json::to_value(params)
        .map_err(|source| Error::Serialization { what: format!("{what} params"), source })?;
    Ok(match value {
        Value::Null => None,
        other => Some(other),
    })
}

/// Reads params, treating absent params as `{}` so optional-params methods decode.
fn from_params<T: DeserializeOwned>(params: Option<Value>) -> std::result::Result<T, ErrorObject> {
    let value = params.unwrap_or_else(|| Value::Object(Default::default()));
    serde_json::from_value(value).map_err(ErrorObject::invalid_params)
}

impl Peer {
    /// Sends the request of method `M` and decodes its result.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use mcpl_core::engine::RequestOptions;
    /// use mcpl_core::types::{CallTool, CallToolRequestParams};
    ///
    /// # async fn run(peer: mcpl_core::Peer) -> mcpl_core::Result<()> {
    /// let params = CallToolRequestParams::new("get_weather");
    /// let result = peer.send::<CallTool>(params, RequestOptions::new()).await?;
    /// # drop(result); Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Peer::request`], plus `Serialization` if the result does not decode as `M::Result`.
    ///
    /// # Cancel safety
    ///
    /// As [`Peer::request`]: dropping the future cancels the request.
    pub async fn send<M: Method>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Result> {
        let params = to_params(M::NAME, &params)?;
        let result = self.request_raw(M::NAME, params, options).await?;
        result
            .decode()
            .map_err(|source| Error::Serialization { what: format!("{} result", M::NAME), source })
    }

    /// Sends the notification of method `N`.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, or `Serialization` if the params do not serialize.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn send_notification<N: NotificationMethod>(&self, params: N::Params) -> Result<()> {
        let params = to_params(N::NAME, &params)?;
        self.notify(N::NAME, params).await
    }
}

impl Engine {
    /// Registers a typed handler for the requests of method `M`.
    ///
    /// Params that do not decode as `M::Params` are answered with `-32602` (invalid params)
    /// without calling the handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::Engine;
    /// use mcpl_core::types::{EmptyResult, Ping};
    ///
    /// let engine = Engine::new();
    /// engine.on::<Ping, _, _>(|_ctx, _params| async { Ok(EmptyResult::default()) });
    /// ```
    pub fn on<M, F, Fut>(&self, handler: F) -> &Self
    where
        M: Method,
        F: Fn(RequestContext, M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<M::Result, ErrorObject>> + Send + 'static,
    {
        let handler = std::sync::Arc::new(handler);
        self.on_request(M::NAME, move |ctx: RequestContext, params: Option<Value>| {
            let handler = handler.clone();
            async move {
                let params: M::Params = from_params(params)?;
                let result = handler(ctx, params).await?;
                RawJson::encode(&result).map_err(ErrorObject::internal)
            }
        })
    }

    /// Registers a typed handler for the notifications of method `N`. Notifications whose params
    /// do not decode are dropped with a debug log.
    pub fn on_notification_of<N, F, Fut>(&self, handler: F) -> &Self
    where
        N: NotificationMethod,
        F: Fn(NotificationContext, N::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = std::sync::Arc::new(handler);
        self.on_notification(N::NAME, move |ctx: NotificationContext, params: Option<Value>| {
            let handler = handler.clone();
            async move {
                match from_params::<N::Params>(params) {
                    Ok(params) => handler(ctx, params).await,
                    Err(e) => {
                        tracing::debug!(method = N::NAME, error = %e, "undecodable notification")
                    }
                }
            }
        })
    }
}
