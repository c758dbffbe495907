//! One instance of a fleet: the Streamable HTTP endpoint with every store on Redis, so that
//! any instance serves any client (see `examples/fleet/README.md`).
//!
//! Configured by the environment: `REDIS_URL` (default `redis://127.0.0.1:6379/`), `PORT`
//! (default 3000; 0 picks a free one), `INSTANCE` (a name its `whoami` tool answers with),
//! `REDIS_PREFIX` (default `mcpl-fleet`), `STATE_TTL_MS` (how long a `requestState` stays
//! valid; default 10 minutes). Redis must be up when it starts (it reads the fleet's
//! `requestState` key). Prints `listening on http://ADDR/mcp` on stdout once
//! it serves.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{
    ElicitRequestFormParams, ElicitValue, ElicitationSchema, Resource, StringSchema, Tool,
    ToolSchema,
};
use mcpl_redis::{
    FleetEvents, Redis, RedisConfig, RedisEventStore, RedisSessionStore, RedisTaskStore,
};
use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};
use mcpl_server::input::ToolReply;
use mcpl_server::resource::ResourceOutput;
use mcpl_server::task::TaskOptions;
use mcpl_server::{Server, ToolOutput};

/// The longest a tool of this example waits, whatever it is asked.
const MAX_WAIT: Duration = Duration::from_secs(30);

fn wait_arg(args: &mcpl_server::tool::Arguments, name: &str) -> Duration {
    let ms = args.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
    Duration::from_millis(ms).min(MAX_WAIT)
}

/// How many `job` handlers run here.
static RUNNING_JOBS: AtomicUsize = AtomicUsize::new(0);

/// Counts a running `job` handler until dropped (the handler finished or was stopped).
struct Running;

impl Running {
    fn new() -> Running {
        RUNNING_JOBS.fetch_add(1, Ordering::SeqCst);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING_JOBS.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn fleet_server(instance: String, redis: &Redis) -> Result<Server, mcpl_redis::Error> {
    let (who, job_by, rounds_by) = (instance.clone(), instance.clone(), instance.clone());
    let (log_by, ask_by, greet_by) = (instance.clone(), instance.clone(), instance);
    let mut builder = Server::builder("fleet-example", "1.0.0");
    if let Some(ms) = std::env::var("STATE_TTL_MS").ok().and_then(|ms| ms.parse().ok()) {
        builder = builder.request_state_ttl(Duration::from_millis(ms));
    }
    Ok(builder
        .task_store(RedisTaskStore::new(redis.clone()))
        // A state sealed at one instance opens at every other (the fleet's key ring, read as
        // the instance starts; see `mcpl_redis::rotate_state_key`).
        .state_sealer(mcpl_redis::shared_state_sealer(redis).await?)
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
                    let _running = Running::new();
                    tokio::time::sleep(wait_arg(&args, "ms")).await;
                    Ok(ToolOutput::text(format!("done by {by}")))
                }
            },
        )
        // A task that asks the client's name (its state goes `input_required`), then answers
        // with it: the answer (`tasks/update`) may come to any instance.
        .task_tool(
            Tool::new("greet_job", ToolSchema::object()),
            TaskOptions::optional(),
            move |ctx, _args| {
                let by = greet_by.clone();
                async move {
                    if let Some(answer) = ctx.elicited("who") {
                        let name = match answer.get("name") {
                            Some(ElicitValue::String(name)) => name.as_str(),
                            _ => "?",
                        };
                        let reply: ToolReply = ToolOutput::text(format!("{by} greets {name}")).into();
                        return Ok(reply);
                    }
                    let form =
                        ElicitationSchema::default().with_property("name", StringSchema::default());
                    let ask = ctx
                        .input_required()
                        .elicit("who", ElicitRequestFormParams::new("Your name?", form));
                    Ok(ask.into())
                }
            },
        )
        // How many `job` handlers are running at this instance.
        .tool(Tool::new("running_jobs", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text(RUNNING_JOBS.load(Ordering::SeqCst).to_string()))
        })
        // The note at `uri` changed (its data lives in a shared database, say): every client
        // subscribed to it is told, at whichever instance it listens.
        .tool(Tool::new("update_note", ToolSchema::object()), |ctx, args| async move {
            let uri = args.get("uri").and_then(|v| v.as_str()).unwrap_or("note://1").to_owned();
            if let Some(server) = ctx.server() {
                server.notify_resource_updated(uri.clone());
            }
            Ok(ToolOutput::text(format!("updated {uri}")))
        })
        // Two rounds: asks for a name, carrying its state in `requestState`; the answer may
        // come to any instance, which opens that state with the fleet's key.
        .tool(Tool::new("two_rounds", ToolSchema::object()), move |ctx, _args| {
            let here = rounds_by.clone();
            async move {
                if let Some(state) = ctx.request_state() {
                    let from = state["asked_by"].as_str().unwrap_or("?").to_owned();
                    let reply: ToolReply =
                        ToolOutput::text(format!("asked by {from}, answered at {here}")).into();
                    return Ok(reply);
                }
                let form =
                    ElicitationSchema::default().with_property("name", StringSchema::default());
                let ask = ctx
                    .input_required()
                    .elicit("who", ElicitRequestFormParams::new("Your name?", form))
                    .state(serde_json::json!({"asked_by": here}));
                Ok(ask.into())
            }
        })
        // The note the `update_note` tool changes (2025 clients subscribe to it).
        .resource(Resource::new("note://1", "note"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "a note")])
        })
        // Logs `ms` after it answered, outside the request (on the session's standalone
        // stream, wherever in the fleet it is connected).
        .tool(Tool::new("log_later", ToolSchema::object()), move |ctx, args| {
            let by = log_by.clone();
            async move {
                let wait = wait_arg(&args, "ms");
                let peer = ctx.peer().unrelated();
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let log = serde_json::json!({"level": "info", "data": format!("logged by {by}")});
                    let _ = peer.notify("notifications/message", Some(log)).await;
                });
                Ok(ToolOutput::text("later"))
            }
        })
        // Asks the client (elicitation) and answers with what it said: on this request's
        // stream, or (`unrelated`) on the standalone stream. The client's answer may come to
        // any instance.
        .tool(Tool::new("ask_client", ToolSchema::object()), move |ctx, args| {
            let by = ask_by.clone();
            async move {
                let peer = if args.get("unrelated").and_then(|v| v.as_bool()).unwrap_or(false) {
                    ctx.peer().unrelated()
                } else {
                    ctx.peer().clone()
                };
                let ask = serde_json::json!({"mode": "form", "message": "Your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
                let options = RequestOptions::default().timeout(MAX_WAIT);
                let answer = match peer.request("elicitation/create", Some(ask), options).await {
                    Ok(answer) => answer,
                    Err(e) => return Ok(ToolOutput::error(format!("no answer: {e}"))),
                };
                let name = answer["content"]["name"].as_str().unwrap_or("?").to_owned();
                Ok(ToolOutput::text(format!("{by} was told {name}")))
            }
        })
        // Adds a tool here: the list changed (every client is told, at every instance).
        .tool(Tool::new("add_tool", ToolSchema::object()), |ctx, _args| async move {
            let name = format!("extra-{}", std::process::id());
            if let Some(server) = ctx.server() {
                let _ = server
                    .tools_mut()
                    .add(Tool::new(name.clone(), ToolSchema::object()), |_c, _a| async {
                        Ok(ToolOutput::text("extra"))
                    });
            }
            Ok(ToolOutput::text(format!("added {name}")))
        })
        .build())
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
    let server = fleet_server(instance.clone(), &redis).await?;
    // Changes made here reach the clients of every instance, and theirs reach ours.
    let _relay = FleetEvents::relay(&redis, &server)?;
    let connections = ConnectionConfig::new().shutdown_on(mcpl_examples::shutdown_signal());
    let endpoint = StreamableHttp::with_stores(
        server,
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
