//! One instance of a fleet: the Streamable HTTP endpoint with every store on Redis, so that
//! any instance serves any client (see `examples/fleet/README.md`).
//!
//! Configured by the environment: `REDIS_URL` (default `redis://127.0.0.1:6379/`), `PORT`
//! (default 3000; 0 picks a free one), `INSTANCE` (a name its `whoami` tool answers with),
//! `REDIS_PREFIX` (default `mcpl-fleet`). Prints `listening on http://ADDR/mcp` on stdout once
//! it serves.

use std::time::Duration;

use mcpl_core::types::{Tool, ToolSchema};
use mcpl_redis::{Redis, RedisConfig, RedisEventStore, RedisSessionStore, RedisTaskStore};
use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};
use mcpl_server::task::TaskOptions;
use mcpl_server::{Server, ToolOutput};

/// The longest a tool of this example waits, whatever it is asked.
const MAX_WAIT: Duration = Duration::from_secs(30);

fn wait_arg(args: &mcpl_server::tool::Arguments, name: &str) -> Duration {
    let ms = args.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
    Duration::from_millis(ms).min(MAX_WAIT)
}

fn fleet_server(instance: String, redis: &Redis) -> Server {
    let (who, job_by) = (instance.clone(), instance);
    Server::builder("fleet-example", "1.0.0")
        .task_store(RedisTaskStore::new(redis.clone()))
        .tool(Tool::new("whoami", ToolSchema::object()), move |_ctx, _args| {
            let who = who.clone();
            async move { Ok(ToolOutput::text(who)) }
        })
        // Reports `count` (at most 100) progress steps `delay_ms` apart, then answers.
        .tool(Tool::new("ticks", ToolSchema::object()), |ctx, args| async move {
            let count = args.get("count").and_then(|v| v.as_u64()).unwrap_or(3).min(100);
            let delay = wait_arg(&args, "delay_ms");
            for step in 1..=count {
                tokio::time::sleep(delay).await;
                let _ = ctx.progress(step as f64, Some(count as f64), None).await;
            }
            Ok(ToolOutput::text(format!("{count} ticks")))
        })
        // A task (2026 era) that works for `ms` and then names the instance that ran it.
        .task_tool(
            Tool::new("job", ToolSchema::object()),
            TaskOptions::optional(),
            move |_ctx, args| {
                let by = job_by.clone();
                async move {
                    tokio::time::sleep(wait_arg(&args, "ms")).await;
                    Ok(ToolOutput::text(format!("done by {by}")))
                }
            },
        )
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    mcpl_examples::init_logging();
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let port: u16 = env("PORT", "3000").parse()?;
    let instance = env("INSTANCE", &format!("instance-{}", std::process::id()));
    let redis = Redis::open(
        RedisConfig::new(env("REDIS_URL", "redis://127.0.0.1:6379/"))
            .prefix(env("REDIS_PREFIX", "mcpl-fleet")),
    )?;
    let connections = ConnectionConfig::new().shutdown_on(mcpl_examples::shutdown_signal());
    let endpoint = StreamableHttp::with_stores(
        fleet_server(instance.clone(), &redis),
        HttpConfig::new().connections(connections),
        RedisEventStore::new(redis.clone()),
        RedisSessionStore::new(redis),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    eprintln!("{instance} serving");
    endpoint.serve_at(listener, "/mcp").await?;
    Ok(())
}
