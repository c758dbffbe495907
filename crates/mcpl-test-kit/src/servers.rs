//! Plain MCP servers in memory.

use mcpl_core::transport::memory::{MemoryTransport, pair};
use mcpl_core::types::{Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolSchema};
use mcpl_server::prompt::PromptOutput;
use mcpl_server::resource::ResourceOutput;
use mcpl_server::{Server, Session, ToolOutput};

/// A library server in memory: the resource `file:///README.md`, the template
/// `users://{id}/profile` and the prompt `greet` (argument `language`, completed from
/// `english`, `esperanto` and `french`).
///
/// Returns the served session (keep it alive) and the client's end of the transport.
pub async fn library() -> mcpl_core::Result<(Session, MemoryTransport)> {
    let mut greet = Prompt::new("greet");
    greet.arguments = Some(vec![PromptArgument::new("language")]);
    let server = Server::builder("library", "1.0.0")
        .resource(Resource::new("file:///README.md", "README"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "# Hello")])
        })
        .resource_template(
            ResourceTemplate::new("users://{id}/profile", "profile"),
            |_ctx, req| async move {
                let id = req.var("id").unwrap_or_default().to_owned();
                Ok(vec![ResourceOutput::text(req.uri, format!("user {id}"))])
            },
        )
        .prompt(greet, |_ctx, args| async move {
            let language = args.get("language").map_or("english", String::as_str);
            Ok(PromptOutput::user_text(format!("Say hello in {language}.")))
        })
        .prompt_completer("greet", "language", |_ctx, req| async move {
            Ok(mcpl_server::completion::matching(["english", "esperanto", "french"], &req.value))
        })
        .build();
    let (ours, theirs) = pair();
    Ok((server.serve(theirs).await?, ours))
}

/// A notes server, not yet served: the tool `add` (argument `item`, a string) answers
/// `added <item>`. Serve it with [`http::serve_on_ws`](crate::http::serve_on_ws) or
/// [`http::serve_on_http`](crate::http::serve_on_http); keep a clone to change its tools while
/// it runs.
pub fn notes() -> Server {
    let item = serde_json::json!({"type": "string"});
    Server::builder("notes", "1.0.0")
        .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_ctx, args| {
            let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
            let text = format!("added {item}");
            async move { Ok(ToolOutput::text(text)) }
        })
        .build()
}
