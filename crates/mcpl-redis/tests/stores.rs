//! Every store against a real `redis-server` of its own (started on a free loopback port).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use mcpl_client::cache::{Audience, CacheEntry, CacheKey, CacheStore, Invalidation};
use mcpl_core::jsonrpc::{Message, Notification};
use mcpl_core::types::{ClientCapabilities, DetailedTask, Implementation, TaskStatus};
use mcpl_redis::{
    ErrorKind, Redis, RedisCacheStore, RedisConfig, RedisEventStore, RedisServer,
    RedisSessionStore, RedisTaskStore,
};
use mcpl_server::http::event_store::{EventPosition, EventStore};
use mcpl_server::http::session_store::{SessionRecord, SessionStore, StoreErrorKind};
use mcpl_server::task::TaskStore;
use serde_json::json;

fn redis(server: &RedisServer) -> Redis {
    Redis::open(RedisConfig::new(server.url())).unwrap()
}

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.into(),
        protocol_version: "2025-11-25".into(),
        client_info: Implementation::new("c", "1"),
        client_capabilities: ClientCapabilities::default(),
        principal: None,
    }
}

fn note(n: u64) -> Message {
    Notification::new("notifications/message", Some(json!({"level": "info", "data": n}))).into()
}

#[tokio::test]
async fn sessions_are_shared_capped_and_expire() {
    let server = RedisServer::start().unwrap();
    let a = RedisSessionStore::new(redis(&server)).max_sessions(2);
    let b = RedisSessionStore::new(redis(&server)).max_sessions(2);
    a.save(record("s1")).await.unwrap();
    assert_eq!(b.load("s1").await.unwrap(), Some(record("s1")), "seen by another instance");
    assert!(b.touch("s1").await.unwrap());
    b.save(record("s2")).await.unwrap();
    // The cap is fleet-wide: a third session is refused at either instance.
    assert_eq!(a.save(record("s3")).await.unwrap_err().kind(), StoreErrorKind::Full);
    b.remove("s1").await.unwrap();
    assert!(!a.touch("s1").await.unwrap(), "removed at one, gone at the other");
    assert_eq!(a.load("s1").await.unwrap(), None);
    a.save(record("s3")).await.unwrap();
    assert_eq!(a.count().await.unwrap(), 2);
    assert!(a.expires_idle());

    // Idle expiry: a touch pushes it back; without one the session is gone.
    let short = RedisSessionStore::new(redis(&server)).idle_timeout(Duration::from_millis(300));
    short.save(record("brief")).await.unwrap();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(short.touch("brief").await.unwrap(), "kept alive by activity");
    }
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert!(!short.touch("brief").await.unwrap());
    assert_eq!(short.load("brief").await.unwrap(), None);
    // A session whose client never comes back after `initialize` goes after the handshake
    // timeout; one that does is kept for the idle timeout.
    let handshakes = RedisSessionStore::new(redis(&server))
        .handshake_timeout(Duration::from_millis(200))
        .idle_timeout(Duration::from_secs(60));
    handshakes.save(record("abandoned")).await.unwrap();
    handshakes.save(record("used")).await.unwrap();
    assert!(handshakes.load("used").await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(handshakes.load("abandoned").await.unwrap(), None);
    assert!(handshakes.touch("used").await.unwrap());
    // Hostile ids never reach Redis.
    assert_eq!(a.load(&"x".repeat(10_000)).await.unwrap(), None);
}

#[tokio::test]
async fn a_record_of_another_format_version_is_a_typed_error() {
    let server = RedisServer::start().unwrap();
    let redis = redis(&server);
    let store = RedisSessionStore::new(redis.clone());
    let mut connection = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let () = redis::cmd("SET")
        .arg("mcpl:v1:session:future")
        .arg(r#"{"v":2,"d":{}}"#)
        .query_async(&mut connection)
        .await
        .unwrap();
    let error = store.load_record("future").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Format);
    assert_eq!(store.load("future").await.unwrap_err().kind(), StoreErrorKind::Corrupt);
}

#[tokio::test]
async fn events_replay_exactly_the_missed_ones_bounded_by_count_and_age() {
    let server = RedisServer::start().unwrap();
    let a = RedisEventStore::new(redis(&server)).per_stream(3);
    let b = RedisEventStore::new(redis(&server)).per_stream(3);
    for seq in 1..=5 {
        a.append("s", EventPosition { stream: 7, seq }, &note(seq)).await;
    }
    a.append("other", EventPosition { stream: 7, seq: 1 }, &note(99)).await;
    let replay = b.replay_after("s", EventPosition { stream: 7, seq: 3 }).await.unwrap();
    assert_eq!(replay.iter().map(|(p, _)| p.seq).collect::<Vec<_>>(), [4, 5]);
    assert_eq!(replay[0].1, note(4));
    // 2 was evicted (3 kept per stream): resuming after 1 cannot be honoured.
    assert!(b.replay_after("s", EventPosition { stream: 7, seq: 1 }).await.is_none());
    // Nothing missed: an empty replay. An unknown stream: only if primed.
    assert!(b.replay_after("s", EventPosition { stream: 7, seq: 5 }).await.unwrap().is_empty());
    assert!(b.replay_after("s", EventPosition { stream: 8, seq: 0 }).await.unwrap().is_empty());
    assert!(b.replay_after("s", EventPosition { stream: 8, seq: 2 }).await.is_none());
    // Never another session's.
    let other = b.replay_after("other", EventPosition { stream: 7, seq: 0 }).await.unwrap();
    assert_eq!(other, vec![(EventPosition { stream: 7, seq: 1 }, note(99))]);

    b.discard_stream("s", 7).await;
    assert!(a.replay_after("s", EventPosition { stream: 7, seq: 3 }).await.is_none());
    a.append("s", EventPosition { stream: 9, seq: 1 }, &note(1)).await;
    b.remove_session("s").await;
    assert!(a.replay_after("s", EventPosition { stream: 9, seq: 0 }).await.unwrap().is_empty());
    assert!(a.replay_after("s", EventPosition { stream: 9, seq: 1 }).await.is_none());

    // Age: an event older than the limit is as good as evicted.
    let young = RedisEventStore::new(redis(&server)).max_age(Duration::from_millis(200));
    young.append("y", EventPosition { stream: 1, seq: 1 }, &note(1)).await;
    assert_eq!(
        young.replay_after("y", EventPosition { stream: 1, seq: 0 }).await.unwrap().len(),
        1
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(young.replay_after("y", EventPosition { stream: 1, seq: 1 }).await.is_none());
}

fn task(id: &str, status: TaskStatus) -> DetailedTask {
    let at = "2026-07-28T00:00:00.000Z".to_owned();
    let mut task = DetailedTask::new(id, status, at.clone(), at);
    task.ttl_ms = Some(60_000);
    task
}

#[tokio::test]
async fn tasks_are_shared_and_a_terminal_state_is_final() {
    let server = RedisServer::start().unwrap();
    let a = RedisTaskStore::new(redis(&server));
    let b = RedisTaskStore::new(redis(&server));
    a.create(task("t1", TaskStatus::Working)).await.unwrap();
    assert_eq!(b.get("t1").await.unwrap().unwrap().status, TaskStatus::Working);
    b.update(task("t1", TaskStatus::Cancelled)).await.unwrap();
    // The handler at the other instance finishes later: the cancellation stands.
    a.update(task("t1", TaskStatus::Completed)).await.unwrap();
    assert_eq!(a.get("t1").await.unwrap().unwrap().status, TaskStatus::Cancelled);
    assert!(b.get("t2").await.unwrap().is_none());
    // An update of an unknown task creates nothing.
    b.update(task("t2", TaskStatus::Working)).await.unwrap();
    assert!(a.get("t2").await.unwrap().is_none());
    // Expiry with ttlMs.
    let mut brief = task("t3", TaskStatus::Working);
    brief.ttl_ms = Some(100);
    a.create(brief).await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(b.get("t3").await.unwrap().is_none());
}

fn cache_key(audience: Audience, method: &str, uri: Option<&str>) -> CacheKey {
    serde_json::from_value(json!({
        "server": "http://127.0.0.1:1/mcp",
        "audience": audience,
        "method": method,
        "params": json!({"uri": uri}).to_string(),
        "uri": uri,
    }))
    .unwrap()
}

#[tokio::test]
async fn the_cache_is_shared_by_audience_and_invalidated_for_everyone() {
    let server = RedisServer::start().unwrap();
    let one = RedisCacheStore::new(redis(&server));
    let two = RedisCacheStore::new(redis(&server));
    let public = cache_key(Audience::Public, "tools/list", None);
    let alice = cache_key(Audience::Private("alice".into()), "resources/read", Some("n://1"));
    let bob = cache_key(Audience::Private("bob".into()), "resources/read", Some("n://1"));
    let entry = CacheEntry::new(json!({"tools": []}), Duration::from_secs(60));
    one.put(public.clone(), entry.clone()).await.unwrap();
    one.put(alice.clone(), CacheEntry::new(json!({"secret": "a"}), Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(two.get(&public).await.unwrap(), Some(entry), "shared between processes");
    assert!(two.get(&alice).await.unwrap().is_some());
    assert_eq!(two.get(&bob).await.unwrap(), None, "private entries are never shared");
    let other = cache_key(Audience::Private("alice".into()), "resources/read", Some("n://2"));
    two.put(other.clone(), CacheEntry::new(json!({}), Duration::from_secs(60))).await.unwrap();
    // One URI's reads go, the other's stay.
    let what = Invalidation::method("http://127.0.0.1:1/mcp", "resources/read").uri("n://1");
    assert_eq!(two.invalidate(&what).await.unwrap(), 1);
    assert_eq!(one.get(&alice).await.unwrap(), None);
    assert!(one.get(&other).await.unwrap().is_some());
    let lists = Invalidation::method("http://127.0.0.1:1/mcp", "tools/list");
    assert_eq!(one.invalidate(&lists).await.unwrap(), 1);
    assert_eq!(two.get(&public).await.unwrap(), None);
    // Oversized entries are not stored.
    let small = RedisCacheStore::new(redis(&server)).max_entry_bytes(8);
    small
        .put(
            public.clone(),
            CacheEntry::new(json!({"big": "x".repeat(64)}), Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_eq!(small.get(&public).await.unwrap(), None);
}

#[tokio::test]
async fn redis_down_is_a_typed_error_and_recovers_when_it_returns() {
    let mut server = RedisServer::start().unwrap();
    let config = RedisConfig::new(server.url()).response_timeout(Duration::from_millis(300));
    let store = RedisSessionStore::new(Redis::open(config).unwrap());
    store.save(record("s1")).await.unwrap();
    server.kill().unwrap();
    let started = std::time::Instant::now();
    let error = store.load_record("s1").await.unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Unavailable | ErrorKind::Timeout), "{error:?}");
    assert_eq!(store.save(record("s2")).await.unwrap_err().kind(), StoreErrorKind::Unavailable);
    assert!(started.elapsed() < Duration::from_secs(10), "fails fast: {:?}", started.elapsed());
    server.restart().unwrap();
    // Back (empty: persistence is off): the same store works again by itself.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match store.save(record("s3")).await {
            Ok(()) => break,
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("did not recover: {e:?}"),
        }
    }
    assert!(store.touch("s3").await.unwrap());
}
