//! The skills extension over Streamable HTTP: a server serving skills loaded from a temporary
//! directory tree with hostile entries (a symlink out of the root, an oversized manifest, a
//! bad name), in both eras, and changed at run time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpl_core::types::{ContentDigest, SkillResource};
use mcpl_server::Server;
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::skills::{LoadOptions, SkillBundle, SkillProblemKind, load_dir};
use serde_json::{Value, json};

/// A temporary directory, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let n =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let root =
            std::env::temp_dir().join(format!("mcpl-skills-it-{tag}-{}-{n}", std::process::id()));
        fs::create_dir_all(&root).unwrap();
        Tree(root)
    }

    fn write(&self, path: &str, bytes: impl AsRef<[u8]>) -> &Tree {
        let full = self.0.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, bytes).unwrap();
        self
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn manifest(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nmetadata:\n  version: \"2\"\n---\n# {name}\n"
    )
}

const FORMS: &str = "# Forms\n";

/// The tree: two good skills (one nested under a prefix, one with files in subdirectories),
/// and three hostile ones.
fn hostile_tree(outside: &Tree) -> Tree {
    let tree = Tree::new("root");
    tree.write("pdf-processing/SKILL.md", manifest("pdf-processing", "Fill PDF forms"))
        .write("pdf-processing/references/FORMS.md", FORMS)
        .write("pdf-processing/templates/regional/eu.md", "EU")
        .write("pdf-processing/logo.png", [0x89, b'P', b'N', b'G', 0xff])
        .write("acme/billing/refunds/SKILL.md", manifest("refunds", "Process refunds"));
    // An oversized manifest.
    let big = format!("{}{}", manifest("huge", "Too big"), "x".repeat(64 * 1024));
    tree.write("huge/SKILL.md", big);
    // A bad name: the directory is not a valid skill name.
    tree.write("Bad_Name/SKILL.md", manifest("Bad_Name", "Invalid name"));
    // A symlink out of the root, inside an otherwise good skill.
    outside.write("secret.txt", "top secret");
    tree.write("leaky/SKILL.md", manifest("leaky", "Links out"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        tree.path().join("leaky/secret.txt"),
    )
    .unwrap();
    #[cfg(not(unix))]
    tree.write("leaky/bad name.txt", "x");
    tree
}

async fn start(server: Server) -> SocketAddr {
    let config = HttpConfig::new().cache_ttl(Duration::from_secs(60));
    let app = StreamableHttp::new(server, config).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    addr
}

/// A 2026-07-28 request's whole answer (result or error).
async fn stateless(addr: SocketAddr, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if method == "resources/read" {
        request = request.header("mcp-name", body["params"]["uri"].as_str().unwrap());
    }
    let send = request.body(body.to_string()).send();
    let response = tokio::time::timeout(Duration::from_secs(10), send).await.unwrap().unwrap();
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method}: {text}"))
}

async fn result(addr: SocketAddr, method: &str, params: Value) -> Value {
    let answer = stateless(addr, method, params).await;
    assert!(answer["result"].is_object(), "{method}: {answer}");
    answer["result"].clone()
}

#[tokio::test]
async fn a_hostile_tree_serves_only_its_good_skills_over_http() {
    let outside = Tree::new("outside");
    let tree = hostile_tree(&outside);
    let loaded = load_dir(tree.path(), &LoadOptions::default().max_file_bytes(16 * 1024)).unwrap();
    let refused: Vec<(&str, SkillProblemKind)> =
        loaded.diagnostics.iter().map(|d| (d.path.as_str(), d.problem.kind())).collect();
    assert!(refused.contains(&("huge/SKILL.md", SkillProblemKind::TooLarge)), "{refused:?}");
    assert!(refused.contains(&("Bad_Name", SkillProblemKind::Invalid)), "{refused:?}");
    assert!(refused.contains(&("leaky", SkillProblemKind::RefusedFile)), "{refused:?}");
    #[cfg(unix)]
    assert!(refused.contains(&("leaky/secret.txt", SkillProblemKind::Symlink)), "{refused:?}");
    let addr = start(Server::builder("skills-it", "1.0.0").skills(loaded.skills).build()).await;

    // Declared, with directory reads, next to the resources capability.
    let discover = result(addr, "server/discover", json!({})).await;
    let capabilities = &discover["capabilities"];
    assert_eq!(
        capabilities["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
    assert!(capabilities["resources"].is_object());

    // The listing: the good skills only, with cache hints.
    let list = result(addr, "skills/list", json!({})).await;
    let uris: Vec<&str> =
        list["skills"].as_array().unwrap().iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"]);
    assert_eq!(
        (list["ttlMs"].clone(), list["cacheScope"].clone()),
        (json!(60_000), json!("public"))
    );
    assert!(list.get("nextCursor").is_none());
    assert!(!list.to_string().contains("top secret"));

    // One entry: the verbatim frontmatter and every file with its digest and size.
    let got = result(addr, "skills/get", json!({"uri": "skill://pdf-processing/SKILL.md"})).await;
    let skill = &got["skill"];
    assert_eq!(
        skill["frontmatter"],
        json!({"name": "pdf-processing", "description": "Fill PDF forms", "metadata": {"version": "2"}})
    );
    let files: Vec<SkillResource> = serde_json::from_value(skill["resources"].clone()).unwrap();
    let forms =
        files.iter().find(|f| f.uri == "skill://pdf-processing/references/FORMS.md").unwrap();
    assert_eq!(forms.digest, ContentDigest::of(FORMS.as_bytes()));
    assert_eq!(files.len(), 4);
    assert!(
        got["ttlMs"].is_u64() && got["cacheScope"].is_string() && got.get("nextCursor").is_none()
    );

    // Unknown skills, and a file that is not a SKILL.md, are -32602.
    for uri in [
        "skill://huge/SKILL.md",
        "skill://leaky/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
    ] {
        let answer = stateless(addr, "skills/get", json!({"uri": uri})).await;
        assert_eq!(answer["error"]["code"], -32602, "{uri}: {answer}");
    }

    // The files are resources: listed (SKILL.md with its frontmatter's name and description),
    // read as text, or as a blob when not UTF-8.
    let resources = result(addr, "resources/list", json!({})).await;
    let manifest_resource = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .unwrap();
    assert_eq!(manifest_resource["name"], "pdf-processing");
    assert_eq!(manifest_resource["description"], "Fill PDF forms");
    assert_eq!(manifest_resource["mimeType"], "text/markdown");
    let read = result(
        addr,
        "resources/read",
        json!({"uri": "skill://pdf-processing/references/FORMS.md"}),
    )
    .await;
    assert_eq!(read["contents"][0]["text"], FORMS);
    let png =
        result(addr, "resources/read", json!({"uri": "skill://pdf-processing/logo.png"})).await;
    assert_eq!(png["contents"][0]["blob"], "iVBOR/8=");
    assert_eq!(png["contents"][0]["mimeType"], "image/png");
    let leaked =
        stateless(addr, "resources/read", json!({"uri": "skill://leaky/secret.txt"})).await;
    assert_eq!(leaked["error"]["code"], -32602);

    // Directories: direct children, subdirectories as inode/directory; files are not
    // directories.
    let dir =
        result(addr, "resources/directory/read", json!({"uri": "skill://pdf-processing"})).await;
    let children: Vec<(&str, &str)> = dir["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        children,
        [
            ("pdf-processing", "text/markdown"),
            ("logo.png", "image/png"),
            ("references", "inode/directory"),
            ("templates", "inode/directory"),
        ]
    );
    let prefix =
        result(addr, "resources/directory/read", json!({"uri": "skill://acme/billing"})).await;
    assert_eq!(prefix["resources"][0]["uri"], "skill://acme/billing/refunds");
    for not_a_dir in ["skill://pdf-processing/SKILL.md", "skill://nothing", "skill://leaky"] {
        let answer = stateless(addr, "resources/directory/read", json!({"uri": not_a_dir})).await;
        assert_eq!(answer["error"]["code"], -32602, "{not_a_dir}: {answer}");
    }
}

#[tokio::test]
async fn pages_hold_whole_entries_and_cursors_round_trip() {
    let skill = |name: &str| SkillBundle::new(name, manifest(name, "d")).unwrap();
    let server = Server::builder("paged", "1.0.0")
        .page_size(2)
        .skills([skill("a"), skill("b"), skill("c")])
        .build();
    let addr = start(server).await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = result(addr, "skills/list", params).await;
        for entry in page["skills"].as_array().unwrap() {
            // Each entry is whole: its file list is on the same page.
            assert!(
                entry["resources"].as_array().unwrap().iter().any(|f| f["uri"] == entry["uri"])
            );
            seen.push(entry["frontmatter"]["name"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ["a", "b", "c"]);
    let bad = stateless(addr, "skills/list", json!({"cursor": "not-a-cursor"})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn skills_change_at_run_time_and_stateful_sessions_see_them_too() {
    let server = Server::builder("live", "1.0.0").build();
    let addr = start(server.clone()).await;
    // Before any skill, the methods are unknown and nothing is declared.
    let unknown = stateless(addr, "skills/list", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let tree = Tree::new("live");
    tree.write("notes/SKILL.md", manifest("notes", "Take notes"));
    let loaded = load_dir(tree.path(), &LoadOptions::default()).unwrap();
    server.skills_mut().replace_all(loaded.skills).unwrap();
    let list = result(addr, "skills/list", json!({})).await;
    assert_eq!(list["skills"][0]["uri"], "skill://notes/SKILL.md");

    // The tree changes, and is loaded again.
    tree.write("notes/SKILL.md", manifest("notes", "Take better notes"));
    let loaded = load_dir(tree.path(), &LoadOptions::default()).unwrap();
    server.skills_mut().replace_all(loaded.skills).unwrap();
    let got = result(addr, "skills/get", json!({"uri": "skill://notes/SKILL.md"})).await;
    assert_eq!(got["skill"]["frontmatter"]["description"], "Take better notes");
    assert!(server.skills_mut().remove("skill://notes/SKILL.md"));
    let gone = stateless(addr, "skills/get", json!({"uri": "skill://notes/SKILL.md"})).await;
    assert_eq!(gone["error"]["code"], -32602);
    // Still declared (a capability, once declared, stays), with an empty listing.
    let list = result(addr, "skills/list", json!({})).await;
    assert_eq!(list["skills"], json!([]));

    // The 2025 era: the same methods on a session, without cache hints.
    server
        .skills_mut()
        .add(SkillBundle::new("notes", manifest("notes", "Again")).unwrap())
        .unwrap();
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let post = |body: Value| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
    };
    post(initialized).await.unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {}});
    let text = post(list).await.unwrap().text().await.unwrap();
    let message: Value = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|m| m.get("id").is_some())
            .unwrap()
    });
    assert_eq!(message["result"]["skills"][0]["frontmatter"]["description"], "Again");
    assert!(message["result"].get("ttlMs").is_none());
}
