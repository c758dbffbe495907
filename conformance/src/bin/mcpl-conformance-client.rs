//! `mcpl-conformance-client`: the client under test for the official MCP conformance suite's
//! client scenarios, built with `mcpl-client`.
//!
//! The harness runs `mcpl-conformance-client <serverUrl>` once per scenario with
//! `MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION` (the revision to pin: a
//! dated 2025 revision speaks the stateful `initialize` lifecycle, 2026-07-28 the stateless
//! one) and, for some scenarios, `MCP_CONFORMANCE_CONTEXT` (JSON). Every scenario connects,
//! lists tools, makes the calls the scenario expects and closes (the skills scenarios,
//! `sep-2640-client-*`, list skills; the verification ones then load the first skill and read
//! its files, each checked against the entry). Every connection authorizes
//! with `mcpl_client::auth` when the server asks: the interactive step follows the test
//! authorization server's redirect with a plain GET; tokens are DPoP-bound where the
//! authorization server supports it; the context's ID token (enterprise-managed
//! authorization) or workload token (workload identity) is used when given; `auth/*` scenarios
//! also call each tool (step-up). Logs go to stderr only.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpl_client::auth::{
    Assertion, AuthError, Authorizer, ClientCredentials, ClientKey, IdentityProvider, OAuth,
};

use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use mcpl_core::types::{
    CreateMessageResult, ElicitAction, ElicitResult, Role, Root, SamplingMessageContentBlock,
    SkillResources, TextContent, Tool,
};
use serde_json::{Map, Value, json};

/// Where the test authorization server sends the browser back (never listened on: the
/// redirect is read from the `Location` header).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client id metadata document URL the suite expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The "user": requests the authorization URL and returns where it redirects.
#[derive(Debug)]
struct FollowRedirect {
    http: reqwest::Client,
}

impl Authorizer for FollowRedirect {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let response = self
                .http
                .get(url)
                .send()
                .await
                .map_err(|e| AuthError::Interaction(e.to_string()))?;
            response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .ok_or_else(|| {
                    AuthError::Interaction(format!("no redirect (HTTP {})", response.status()))
                })
        })
    }
}

/// The OAuth client: pre-registered credentials from the scenario context when given, an
/// enterprise identity provider's ID token (`auth/enterprise-managed-authorization`), a
/// workload's identity token (`auth/wif-jwt-bearer`); a DPoP key for authorization servers
/// that support DPoP (`auth/dpop`, `auth/dpop-nonce`).
fn oauth(context: &Value) -> Option<Arc<OAuth>> {
    let oauth = grant(context)?;
    match ClientKey::generate() {
        Ok(key) => Some(Arc::new(oauth.dpop(key))),
        Err(e) => {
            log(format_args!("no DPoP key: {e}"));
            Some(Arc::new(oauth))
        }
    }
}

fn grant(context: &Value) -> Option<OAuth> {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build();
    let http = match http {
        Ok(http) => http,
        Err(e) => {
            log(format_args!("no HTTP client for OAuth: {e}"));
            return None;
        }
    };
    let mut oauth = OAuth::new(FollowRedirect { http }, REDIRECT_URI)
        .client_name("mcpl-conformance-client")
        .client_metadata_url(CLIENT_METADATA_URL);
    let text = |k: &str| context.get(k).and_then(Value::as_str);
    if let (Some(id_token), Some(idp), Some(id), Some(secret)) =
        (text("idp_id_token"), text("idp_issuer"), text("client_id"), text("client_secret"))
    {
        // Enterprise-managed: the ID token becomes an ID-JAG at the IdP, then an access token.
        let idp_client = ClientCredentials::public(text("idp_client_id").unwrap_or(id));
        let mut idp = IdentityProvider::new(idp, idp_client, Assertion::new(id_token));
        if let Some(endpoint) = text("idp_token_endpoint") {
            idp = idp.token_endpoint(endpoint);
        }
        return Some(OAuth::enterprise(None, ClientCredentials::confidential(id, secret), idp));
    }
    if let (Some(jwt), Some(id)) = (text("valid_jwt"), text("client_id")) {
        // Workload identity: the platform's token, presented with the JWT bearer grant.
        return Some(OAuth::jwt_bearer(None, ClientCredentials::public(id), Assertion::new(jwt)));
    }
    let key = text("private_key_pem");
    match (text("client_id"), text("client_secret"), key, text("issuer")) {
        // Pre-registered at a named authorization server: the authorization code flow.
        (Some(id), secret, _, Some(issuer)) => {
            let credentials = match secret {
                Some(secret) => ClientCredentials::confidential(id, secret),
                None => ClientCredentials::public(id),
            };
            oauth = oauth.client(issuer, credentials);
        }
        // A machine client (no user) with a private key: `private_key_jwt` authentication.
        (Some(id), _, Some(pem), None) => match ClientCredentials::private_key_jwt(id, pem) {
            Ok(credentials) => oauth = OAuth::client_credentials(None, credentials),
            Err(e) => log(format_args!("unusable private_key_pem: {e}")),
        },
        // A machine client (no user): the client credentials grant.
        (Some(id), Some(secret), None, None) => {
            oauth = OAuth::client_credentials(None, ClientCredentials::confidential(id, secret));
        }
        _ => {}
    }
    Some(oauth)
}

/// The harness kills a client after 30 s; finish (and say why) before that.
const OVERALL_TIMEOUT: Duration = Duration::from_secs(25);

/// The focal tool of `json-schema-2020-12-preservation`.
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
/// The tool that echoes a schema back in `json-schema-2020-12-preservation`.
const SCHEMA_ECHO: &str = "json_schema_echo";

fn log(message: impl std::fmt::Display) {
    eprintln!("mcpl-conformance-client: {message}");
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        log("usage: mcpl-conformance-client <serverUrl>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str::<Value>(&c).ok())
        .unwrap_or(Value::Null);
    log(format_args!("scenario {scenario:?}, version {version:?}, server {url}"));

    let negotiation = match version.as_deref() {
        None | Some("") => Negotiation::auto(),
        Some(v) => match ProtocolVersion::parse(v) {
            Some(v) => Negotiation::pinned(v),
            None => {
                log(format_args!("unknown protocol version {v:?}; negotiating"));
                Negotiation::auto()
            }
        },
    };
    let oauth = oauth(&context);
    let run = Run { client: client(negotiation), scenario, context, oauth };
    match tokio::time::timeout(OVERALL_TIMEOUT, run.run(url)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            log(format_args!("failed: {e}"));
            ExitCode::FAILURE
        }
        Err(_) => {
            log("timed out");
            ExitCode::FAILURE
        }
    }
}

/// The client under test: it answers elicitations by accepting (the SDK fills omitted fields
/// from the schema's defaults), sampling requests with a fixed text, and `roots/list` with one
/// root, so it declares all three capabilities.
fn client(negotiation: Negotiation) -> Client {
    Client::builder("mcpl-conformance-client", env!("CARGO_PKG_VERSION"))
        .with_negotiation(negotiation)
        .on_elicitation(|form| async move {
            log(format_args!("elicitation: {:?}; accepting with defaults", form.message));
            Ok(ElicitResult::new(ElicitAction::Accept))
        })
        .on_sampling(|params| async move {
            log(format_args!("sampling: {} messages", params.messages.len()));
            let text = SamplingMessageContentBlock::Text(TextContent::new(
                "This is a response from the conformance client.",
            ));
            Ok(CreateMessageResult::new(Role::Assistant, text, "mcpl-conformance-model"))
        })
        .on_roots(|| async move { Ok(vec![Root::new("file:///tmp/mcpl-conformance")]) })
        .build()
}

struct Run {
    client: Client,
    scenario: String,
    context: Value,
    oauth: Option<Arc<OAuth>>,
}

impl Run {
    fn transport(&self, url: &str) -> HttpTransport {
        let transport = HttpTransport::new(url);
        match &self.oauth {
            Some(oauth) => transport.auth(oauth.clone()),
            None => transport,
        }
    }

    async fn run(mut self, url: String) -> mcpl_core::Result<()> {
        let details = match self.client.connect(self.transport(&url)).await {
            // A pinned client does not retry a `-32022` rejection itself: retry once with the
            // newest version the server listed that this SDK speaks.
            Err(mcpl_core::Error::UnsupportedProtocolVersion { requested, supported }) => {
                let Some(version) = ProtocolVersion::ALL
                    .iter()
                    .rev()
                    .copied()
                    .find(|v| supported.iter().any(|s| s == v.as_str()))
                else {
                    return Err(mcpl_core::Error::UnsupportedProtocolVersion {
                        requested,
                        supported,
                    });
                };
                log(format_args!("{requested} rejected; retrying with {version}"));
                self.client = client(Negotiation::pinned(version));
                self.client.connect(self.transport(&url)).await?
            }
            other => other?,
        };
        log(format_args!(
            "connected: {} {} speaking {}",
            details.server_info.name, details.server_info.version, details.protocol_version
        ));
        let outcome = self.scenario().await;
        if let Err(e) = self.client.close().await {
            log(format_args!("close: {e}"));
        }
        outcome
    }

    async fn scenario(&self) -> mcpl_core::Result<()> {
        let tools = self.list_tools().await?;
        match self.scenario.as_str() {
            "tools_call" => self.call("add_numbers", args(json!({"a": 2, "b": 3}))).await,
            "elicitation-sep1034-client-defaults" => {
                // The server elicits during the call; the handler accepts and the SDK fills
                // in the schema's defaults.
                self.call("test_client_elicitation_defaults", Map::new()).await
            }
            "sse-retry" => self.call("test_reconnection", Map::new()).await,
            "sep-2322-client-request-state" => {
                // Each of these but the last answers `input_required` first; the SDK answers
                // through the handlers and retries (fresh id, `requestState` echoed exactly).
                for name in [
                    "test_mrtr_echo_state",
                    "test_mrtr_no_state",
                    "test_mrtr_unrelated",
                    "test_mrtr_no_result_type",
                ] {
                    self.call(name, Map::new()).await?;
                }
                Ok(())
            }
            "http-custom-headers" => {
                let calls = self.context.get("toolCalls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    let Some(name) = call.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    let arguments = call.get("arguments").cloned().map(args).unwrap_or_default();
                    self.call(name, arguments).await?;
                }
                Ok(())
            }
            "http-standard-headers" | "http-invalid-tool-headers" | "request-metadata" => {
                // The HTTP transport refuses the tools whose `x-mcp-header` annotations are
                // invalid (InvalidToolHeaders) without sending anything.
                for tool in &tools {
                    self.call(&tool.name, sample_arguments(tool)).await?;
                }
                Ok(())
            }
            "json-schema-2020-12-preservation" => {
                let Some(focal) = tools.iter().find(|t| t.name == SCHEMA_TOOL) else {
                    log(format_args!("the server did not list {SCHEMA_TOOL}"));
                    return Ok(());
                };
                let schema = serde_json::to_value(&focal.input_schema).unwrap_or(Value::Null);
                self.call(SCHEMA_ECHO, args(json!({ "schema": schema }))).await
            }
            // Step-up and re-authorization happen on calls after the listing.
            s if s.starts_with("auth/") => {
                for tool in &tools {
                    self.call(&tool.name, sample_arguments(tool)).await?;
                }
                Ok(())
            }
            // Skills: list them (nothing more: a host fetches no file ahead of need); in the
            // verification scenarios the model then "asks" for the first skill.
            "sep-2640-client-no-prefetch" => self.skills(false).await,
            s if s.starts_with("sep-2640-client-verify-") => self.skills(true).await,
            // initialize, json-schema-ref-no-deref: connect, list tools, close. A `$ref` is
            // never dereferenced: schemas are kept as data.
            _ => Ok(()),
        }
    }

    async fn list_tools(&self) -> mcpl_core::Result<Vec<Tool>> {
        match self.client.list_tools().await {
            Ok(tools) => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                log(format_args!("tools: {names:?}"));
                Ok(tools)
            }
            // A server without tools is not a failure of the scenario.
            Err(mcpl_core::Error::CapabilityNotSupported { .. }) => {
                log("the server offers no tools");
                Ok(Vec::new())
            }
            Err(e) => Err(e),
        }
    }

    /// Lists the server's skills; with `load`, loads the first one (its `SKILL.md`, checked
    /// against the entry) and then reads each of its other files (each checked). Content that
    /// fails a check is refused, and nothing more of that skill is read.
    async fn skills(&self, load: bool) -> mcpl_core::Result<()> {
        let skills = self.client.list_skills().await?;
        let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
        log(format_args!("skills: {names:?}"));
        let Some(first) = skills.first().filter(|_| load) else { return Ok(()) };
        let skill = match self.client.load_skill(first).await {
            Ok(skill) => skill,
            Err(e) => {
                log(format_args!("{}: refused: {}", first.uri, error_chain(&e)));
                return Ok(());
            }
        };
        log(format_args!("loaded {} ({} bytes)", first.uri, skill.manifest().len()));
        let SkillResources::Files(files) = &first.resources else { return Ok(()) };
        for file in files.iter().filter(|f| f.uri != first.uri) {
            match self.client.read_skill_file(&skill, &file.uri).await {
                Ok(bytes) => log(format_args!("read {} ({} bytes)", file.uri, bytes.len())),
                Err(e) => {
                    log(format_args!("{}: refused: {}", file.uri, error_chain(&e)));
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    async fn call(&self, name: &str, arguments: Map<String, Value>) -> mcpl_core::Result<()> {
        match self.client.call_tool(name, arguments).await {
            Ok(result) => {
                let text = serde_json::to_string(&result.content).unwrap_or_default();
                log(format_args!("{name}: is_error={:?} {text}", result.is_error));
                Ok(())
            }
            Err(e) if e.is_closed() => Err(e),
            Err(e) => {
                // Keep going: later calls may still be scored.
                log(format_args!("{name}: {e}"));
                Ok(())
            }
        }
    }
}

/// `e` and its causes, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The object inside `value`, or an empty map.
fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Arguments for `tool`: a plausible value for each required property.
fn sample_arguments(tool: &Tool) -> Map<String, Value> {
    let mut arguments = Map::new();
    let properties = tool.input_schema.properties.as_ref();
    for name in tool.input_schema.required.iter().flatten() {
        let schema = properties.and_then(|p| p.get(name));
        let value = schema
            .and_then(|s| s.get("default").cloned())
            .or_else(|| {
                schema.and_then(|s| s.get("enum")).and_then(Value::as_array)?.first().cloned()
            })
            .unwrap_or_else(|| match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                Some("null") => Value::Null,
                _ => json!("test"),
            });
        arguments.insert(name.clone(), value);
    }
    arguments
}
