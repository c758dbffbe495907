#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! What the host says about a feature set its grant leaves disabled, with the channel server
//! as a child process: `chat.assist` needs `inferenceRequest`, `inferenceRequest.streaming`
//! and `modelInfo`; a host that answers inference but has no model to describe sees its `ask`
//! refused with text naming `modelInfo`, and the host explains what would grant it. With the
//! remedy applied, `ask` works.

use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::hooks::{ModelInfo, Usage};
use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
use mcpl_host::config::HostConfig;
use mcpl_host::unavailable::Remedy;
use mcpl_host::{Host, HostBuilder, ToolCall};
use serde_json::{Value, json};

const GUARD: Duration = Duration::from_secs(60);
const CHANNELS: &str = env!("CARGO_BIN_EXE_mcpl-channel-server");

fn builder(grant: Value) -> HostBuilder {
    let config = json!({"servers": {"chat": {"command": CHANNELS, "grant": {"allow": grant}}}});
    Host::builder(HostConfig::from_json(&config.to_string()).unwrap()).on_inference(
        |_server, _call| async {
            Ok::<_, ErrorObject>(InferenceResult::new(
                "a drafted reply",
                "example-model",
                FinishReason::EndTurn,
                Usage::default().with_input_tokens(1u64).with_output_tokens(3u64),
            ))
        },
    )
}

fn text(call: &ToolCall) -> String {
    call.result.text().unwrap_or_else(|| panic!("not text: {:?}", call.result))
}

#[tokio::test]
async fn a_disabled_feature_set_names_the_missing_capability_and_how_to_grant_it() {
    // Inference is answered and allowed; no model info is offered, and none is allowed.
    let grant = json!(["tools", "inferenceRequest", "inferenceRequest.streaming"]);
    let (host, _events) =
        tokio::time::timeout(GUARD, builder(grant).start()).await.expect("hang").unwrap();
    let call = host.call_tool("mcpl--chat--ask", json!({"prompt": "hello"})).await.unwrap();
    assert_eq!(call.result.is_error, Some(true));
    // The server's refusal names the capability.
    assert_eq!(
        text(&call),
        "feature set \"chat.assist\" is disabled: the host did not grant modelInfo (its uses \
         need it)"
    );
    // The host says what would grant it.
    let disabled = host.disabled_feature_sets("chat");
    let assist = disabled.iter().find(|d| d.feature_set == "chat.assist").expect("chat.assist");
    let missing: Vec<&str> = assist.missing.iter().map(|m| m.capability.as_str()).collect();
    assert_eq!(missing, ["modelInfo"]);
    assert_eq!(assist.missing[0].remedies, [Remedy::Handler("model_info"), Remedy::Allow]);
    assert_eq!(
        assist.to_string(),
        "feature set \"chat.assist\" of server \"chat\" is disabled: it needs modelInfo, which is \
         not granted (the host offers it only with HostBuilder::model_info; add \"modelInfo\" to \
         the server's grant.allow)"
    );
    host.shutdown().await;

    // Both remedies applied: the set is enabled and `ask` reaches the host's model.
    let grant = json!(["tools", "inferenceRequest", "inferenceRequest.streaming", "modelInfo"]);
    let model = ModelInfo::new("example-model", "example", 8192).with_capabilities(vec![]);
    let (host, _events) = tokio::time::timeout(GUARD, builder(grant).model_info(model).start())
        .await
        .expect("hang")
        .unwrap();
    assert!(host.disabled_feature_sets("chat").iter().all(|d| d.feature_set != "chat.assist"));
    let call = host.call_tool("mcpl--chat--ask", json!({"prompt": "hello"})).await.unwrap();
    assert_eq!((call.result.is_error, text(&call).as_str()), (None, "a drafted reply"));
    host.shutdown().await;
}
