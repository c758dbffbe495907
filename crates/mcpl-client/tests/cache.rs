//! The response cache against our own server over real HTTP sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Running, eventually, start};
use mcpl_client::cache::{CacheKey, CacheMode, CacheStore, MemoryStore, ResponseCache};
use mcpl_client::{Client, Negotiation};
use mcpl_core::types::{Resource, Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::HttpConfig;
use mcpl_server::resource::ResourceOutput;
use mcpl_server::{Server, ToolOutput};

/// A server named "same-name" whatever its tools, so only the endpoint tells servers apart.
fn server(tool: &str) -> Server {
    Server::builder("same-name", "1.0.0")
        .tool(Tool::new(tool, ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("ok"))
        })
        .resource(Resource::new("mem:///secret", "secret"), |ctx, req| async move {
            let who = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(vec![ResourceOutput::text(req.uri, format!("secret for {who}"))])
        })
        .build()
}

async fn serve(tool: &str, ttl: Duration) -> Running {
    start(server(tool), HttpConfig::new().cache_ttl(ttl)).await
}

const LONG: Duration = Duration::from_secs(600);

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

async fn client(running: &Running, cache: ResponseCache) -> Client {
    let client = Client::builder("c", "1").with_cache(cache).build();
    client.connect(running.transport()).await.unwrap();
    client
}

#[tokio::test]
async fn clients_sharing_a_store_never_see_entries_of_another_server() {
    let (a, b) = (serve("alpha", LONG).await, serve("beta", LONG).await);
    let store = Arc::new(MemoryStore::new());
    let cache = ResponseCache::new(store.clone()).principal("same-user");
    let to_a = client(&a, cache.clone()).await;
    let to_b = client(&b, cache).await;
    assert_eq!(to_a.server().unwrap().server_info, to_b.server().unwrap().server_info);

    assert_eq!(names(&to_a.list_tools().await.unwrap()), ["alpha"]);
    assert_eq!(names(&to_b.list_tools().await.unwrap()), ["beta"]);
    assert_eq!((a.probe.count_of("tools/list"), b.probe.count_of("tools/list")), (1, 1));
    // Each is answered from its own entry from now on.
    assert_eq!(names(&to_a.list_tools().await.unwrap()), ["alpha"]);
    assert_eq!(names(&to_b.list_tools().await.unwrap()), ["beta"]);
    assert_eq!((a.probe.count_of("tools/list"), b.probe.count_of("tools/list")), (1, 1));
    assert_eq!(store.len(), 2);
}

#[tokio::test]
async fn private_results_stay_with_their_principal_and_public_ones_are_shared() {
    let s = serve("tool", LONG).await;
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let alice = client(&s, ResponseCache::new(store.clone()).principal("alice")).await;
    let bob = client(&s, ResponseCache::new(store.clone()).principal("bob")).await;
    let nobody = client(&s, ResponseCache::new(store.clone())).await;

    // tools/list is public: fetched once, then shared by every principal.
    alice.list_tools().await.unwrap();
    bob.list_tools().await.unwrap();
    nobody.list_tools().await.unwrap();
    assert_eq!(s.probe.count_of("tools/list"), 1);

    // resources/read is private: each principal fetches its own.
    let read = alice.read_resource("mem:///secret").await.unwrap();
    assert_eq!(read.contents.len(), 1);
    alice.read_resource("mem:///secret").await.unwrap();
    assert_eq!(s.probe.count_of("resources/read"), 1);
    bob.read_resource("mem:///secret").await.unwrap();
    assert_eq!(s.probe.count_of("resources/read"), 2);
    bob.read_resource("mem:///secret").await.unwrap();
    assert_eq!(s.probe.count_of("resources/read"), 2);
    // Without a principal, private results are never cached.
    nobody.read_resource("mem:///secret").await.unwrap();
    nobody.read_resource("mem:///secret").await.unwrap();
    assert_eq!(s.probe.count_of("resources/read"), 4);
}

#[tokio::test]
async fn entries_expire_after_their_ttl() {
    let s = serve("tool", Duration::from_millis(100)).await;
    let client = client(&s, ResponseCache::in_memory().principal("p")).await;
    client.list_tools().await.unwrap();
    // Twice within the ttl would be one fetch; on a loaded machine the second call may already
    // be past it, so only the expiry is asserted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = s.probe.count_of("tools/list");
    client.list_tools().await.unwrap();
    assert_eq!(s.probe.count_of("tools/list"), before + 1);

    // A long ttl keeps answering from the cache.
    let s = serve("tool", LONG).await;
    let client = self::client(&s, ResponseCache::in_memory().principal("p")).await;
    for _ in 0..3 {
        client.list_tools().await.unwrap();
    }
    assert_eq!(s.probe.count_of("tools/list"), 1);
}

#[tokio::test]
async fn modes_use_refresh_and_bypass() {
    let s = serve("first", LONG).await;
    let client = client(&s, ResponseCache::in_memory().principal("p")).await;
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    s.server
        .tools_mut()
        .add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("2"))
        })
        .unwrap();
    // Use: the cached list.
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(s.probe.count_of("tools/list"), 1);
    // Bypass: fetched, and not stored.
    let bypass = client.with_cache_mode(CacheMode::Bypass);
    assert_eq!(bypass.list_tools().await.unwrap().len(), 2);
    assert_eq!(s.probe.count_of("tools/list"), 2);
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(s.probe.count_of("tools/list"), 2);
    // Refresh: fetched, and stored for the next Use.
    let refresh = client.with_cache_mode(CacheMode::Refresh);
    assert_eq!(refresh.list_tools().await.unwrap().len(), 2);
    assert_eq!(s.probe.count_of("tools/list"), 3);
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    assert_eq!(s.probe.count_of("tools/list"), 3);
}

#[tokio::test]
async fn a_stale_entry_is_served_when_the_server_fails_only_if_asked() {
    let s = serve("tool", Duration::from_millis(50)).await;
    let store = Arc::new(MemoryStore::new());
    let stale_ok = client(&s, ResponseCache::new(store.clone()).serve_stale_on_error(true)).await;
    let strict = client(&s, ResponseCache::new(store.clone())).await;
    assert_eq!(names(&stale_ok.list_tools().await.unwrap()), ["tool"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.probe.fail(true);
    // Expired, and the server answers 503: the stale list is served...
    assert_eq!(names(&stale_ok.list_tools().await.unwrap()), ["tool"]);
    // ...but not to a client that did not ask for it.
    let error = strict.list_tools().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::HttpStatus, "{error}");
    // A refusal that is not a failure to reach the server is never papered over.
    s.probe.fail(false);
    let refused = stale_ok.read_resource("mem:///missing").await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Rpc);
    assert_eq!(s.probe.count_of("tools/list"), 3);
}

#[tokio::test]
async fn list_changed_invalidates_the_cached_list() {
    // A 2025-era session: results carry no ttlMs, so a default ttl makes them cacheable, and
    // the server announces list changes on the session's stream.
    let s = serve("first", LONG).await;
    let client = Client::builder("c", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .with_cache(ResponseCache::in_memory().principal("p").default_ttl(LONG))
        .build();
    client.connect(s.transport()).await.unwrap();
    let posts = || s.probe.seen().iter().filter(|l| *l == "POST").count();
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    let after_first = posts();
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(posts(), after_first, "the second listing came from the cache");
    // The standalone stream must be open before the change is announced.
    eventually("the standalone stream is open", async || s.probe.seen().iter().any(|l| l == "GET"))
        .await;
    s.server
        .tools_mut()
        .add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("2"))
        })
        .unwrap();
    eventually("the list change reaches the cache", async || {
        client.list_tools().await.unwrap().len() == 2
    })
    .await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn store_keys_are_the_endpoint_not_the_server_name() {
    let s = serve("tool", LONG).await;
    let store = Arc::new(MemoryStore::new());
    let client = client(&s, ResponseCache::new(store.clone())).await;
    client.list_tools().await.unwrap();
    let key: CacheKey = serde_json::from_value(serde_json::json!({
        "server": s.url(), "audience": "public", "method": "tools/list", "params": "{}"
    }))
    .unwrap();
    let found = store.get(&key).await.unwrap();
    assert!(found.is_some(), "the entry is under the endpoint URL");
}

/// A 2026 server offering one of everything cacheable.
fn everything() -> Server {
    use mcpl_core::types::{Prompt, ResourceTemplate};
    use mcpl_server::prompt::PromptOutput;
    Server::builder("everything", "1.0.0")
        .tool(Tool::new("tool", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("ok"))
        })
        .resource(Resource::new("mem:///a", "a"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "a")])
        })
        .resource_template(ResourceTemplate::new("mem:///t/{id}", "t"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "t")])
        })
        .prompt(Prompt::new("p"), |_ctx, _args| async move { Ok(PromptOutput::user_text("hi")) })
        .build()
}

#[tokio::test]
async fn every_list_and_read_call_is_answered_through_the_cache() {
    let s = start(everything(), HttpConfig::new().cache_ttl(LONG)).await;
    let client = client(&s, ResponseCache::in_memory().principal("p")).await;
    for _ in 0..3 {
        assert_eq!(client.list_tools().await.unwrap().len(), 1);
        assert_eq!(client.list_resources().await.unwrap().len(), 1);
        assert_eq!(client.list_resource_templates().await.unwrap().len(), 1);
        assert_eq!(client.list_prompts().await.unwrap().len(), 1);
        assert_eq!(client.read_resource("mem:///a").await.unwrap().contents.len(), 1);
    }
    for method in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
    ] {
        assert_eq!(s.probe.count_of(method), 1, "{method} was fetched once");
    }
    // Calls that are never cached still reach the server every time.
    for _ in 0..2 {
        client.get_prompt("p", Default::default()).await.unwrap();
    }
    assert_eq!(s.probe.count_of("prompts/get"), 2);
}

#[tokio::test]
async fn input_required_results_and_their_retries_are_never_cached() {
    use mcpl_core::types::{
        ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitationSchema,
    };
    use mcpl_server::input::ReadReply;
    let server = Server::builder("asks", "1.0.0")
        .resource(Resource::new("mem:///ask", "ask"), |ctx, req| async move {
            let reply: ReadReply = if ctx.elicited("ok").is_some() {
                vec![ResourceOutput::text(req.uri, "answered")].into()
            } else {
                let form = ElicitRequestFormParams::new("ok?", ElicitationSchema::default());
                ctx.input_required().elicit("ok", form).into()
            };
            Ok(reply)
        })
        .resource(Resource::new("mem:///plain", "plain"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "plain")])
        })
        .build();
    let s = start(server, HttpConfig::new().cache_ttl(LONG)).await;
    let store = Arc::new(MemoryStore::new());
    let client = Client::builder("c", "1")
        .with_cache(ResponseCache::new(store.clone()).principal("p"))
        .on_elicitation(|_form| async move {
            let mut result = ElicitResult::new(ElicitAction::Accept);
            result.content = Some(Default::default());
            Ok(result)
        })
        .build();
    client.connect(s.transport()).await.unwrap();
    assert!(client.server().unwrap().is_stateless());
    for round in 1..=2 {
        let read = client.read_resource("mem:///ask").await.unwrap();
        let text = serde_json::to_value(&read.contents).unwrap()[0]["text"].clone();
        assert_eq!(text, "answered");
        // Each read: the first request (input required) and its retry, both sent.
        assert_eq!(s.probe.count_of("resources/read"), 2 * round);
    }
    assert!(store.is_empty(), "neither the input-required result nor the retry was stored");
    // The same client does cache a plain read (the assertion above is not vacuous).
    client.read_resource("mem:///plain").await.unwrap();
    client.read_resource("mem:///plain").await.unwrap();
    assert_eq!(s.probe.count_of("resources/read"), 5);
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn a_notification_invalidates_the_cache_before_the_users_handler_runs() {
    let s = serve("first", LONG).await;
    let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    // The handler holds on until the test has listed again: were the cache invalidated only
    // after the handler, that listing would still be answered from the cache.
    let release = Arc::new(tokio::sync::Notify::new());
    let held = release.clone();
    let client = Client::builder("c", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .on_tools_list_changed(move || {
            let (tx, held) = (tx.clone(), held.clone());
            async move {
                let _ = tx.send(());
                held.notified().await;
            }
        })
        .with_cache(ResponseCache::in_memory().principal("p").default_ttl(LONG))
        .build();
    client.connect(s.transport()).await.unwrap();
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    eventually("the standalone stream is open", async || s.probe.seen().iter().any(|l| l == "GET"))
        .await;
    s.server
        .tools_mut()
        .add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("2"))
        })
        .unwrap();
    // The user's handler hears the change...
    tokio::time::timeout(Duration::from_secs(30), changed.recv()).await.expect("hang guard");
    // ...and by then the cached list is gone: the next listing is fetched.
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    release.notify_one();
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_change_heard_on_a_2026_listen_stream_invalidates_the_cache() {
    use futures::StreamExt;
    use mcpl_core::types::{ServerNotification, SubscriptionFilter};
    let s = serve("first", LONG).await;
    // A user handler for the same notification, held until the test has listed again (see
    // above): the stream and the handler both see it, and only after the cache.
    let release = Arc::new(tokio::sync::Notify::new());
    let held = release.clone();
    let client = Client::builder("c", "1")
        .with_cache(ResponseCache::in_memory().principal("p"))
        .on_tools_list_changed(move || {
            let held = held.clone();
            async move { held.notified().await }
        })
        .build();
    client.connect(s.transport()).await.unwrap();
    assert!(client.server().unwrap().is_stateless());
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(names(&client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(s.probe.count_of("tools/list"), 1);
    let filter = SubscriptionFilter::default().with_tools_list_changed(true);
    let mut listen = client.listen(filter).await.unwrap();
    let guard = Duration::from_secs(30);
    let ack = tokio::time::timeout(guard, listen.next()).await.expect("hang guard").unwrap();
    assert!(matches!(ack, ServerNotification::SubscriptionsAcknowledged(_)), "{ack:?}");
    s.server
        .tools_mut()
        .add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("2"))
        })
        .unwrap();
    let change = tokio::time::timeout(guard, listen.next()).await.expect("hang guard").unwrap();
    assert!(matches!(change, ServerNotification::ToolListChanged(_)), "{change:?}");
    // The stream got it after the cache dropped the list: fetched again, with the new tool.
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
    assert_eq!(s.probe.count_of("tools/list"), 2);
    release.notify_one();
}

#[tokio::test]
async fn a_header_mismatch_refreshes_the_tool_list_past_the_cache() {
    use serde_json::json;
    let regional = Tool::new(
        "regional",
        ToolSchema::object()
            .with_property("region", json!({"type": "string", "x-mcp-header": "Region"})),
    );
    let server = Server::builder("regions", "1.0.0")
        .tool(regional, |_ctx, args| async move {
            Ok(ToolOutput::text(format!("region={}", args["region"])))
        })
        .build();
    let s = start(server, HttpConfig::new().cache_ttl(LONG)).await;
    let store = Arc::new(MemoryStore::new());
    // One client lists the tools into the shared store...
    let first = client(&s, ResponseCache::new(store.clone())).await;
    first.list_tools().await.unwrap();
    // ...so a second one, on a new transport, gets the list from the cache: its transport
    // never saw a tools/list result and sends the call without `Mcp-Param-Region`.
    let second = client(&s, ResponseCache::new(store.clone())).await;
    assert_eq!(second.list_tools().await.unwrap().len(), 1);
    assert_eq!(s.probe.count_of("tools/list"), 1);
    let mut args = serde_json::Map::new();
    args.insert("region".into(), json!("eu"));
    // The server answers the header mismatch; the client refreshes the list from the server
    // (not from the cache) and the retry carries the header.
    let result = second.call_tool("regional", args).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(text, r#"region="eu""#);
    assert_eq!(s.probe.count_of("tools/list"), 2, "the retry's tools/list went to the server");
    assert_eq!(s.probe.count_of("tools/call"), 2);
}
