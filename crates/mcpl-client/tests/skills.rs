//! Skills (SEP-2640) from our own server over real HTTP sockets: listing with pagination and
//! the page cap, getting, loading with every file checked, the capability check, and the
//! response cache.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Running, start};
use mcpl_client::cache::{CacheMode, ResponseCache};
use mcpl_client::skills::SkillErrorKind;
use mcpl_client::{Client, Negotiation};
use mcpl_core::types::{SkillVerificationErrorKind, Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::HttpConfig;
use mcpl_server::skills::SkillBundle;
use mcpl_server::{Server, ToolOutput};

fn manifest(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nSee references/GUIDE.md\n")
}

fn skill(name: &str, description: &str) -> SkillBundle {
    SkillBundle::new(name, manifest(name, description))
        .unwrap()
        .file("references/GUIDE.md", format!("guide of {name}"))
        .unwrap()
        .file("logo.bin", vec![0xff, 0x00, 0x01])
        .unwrap()
}

async fn serve(skills: usize) -> Running {
    let server = Server::builder("skills", "1.0.0")
        .page_size(1)
        .skills((0..skills).map(|i| skill(&format!("s{i}"), "A skill")))
        .build();
    start(server, HttpConfig::new().cache_ttl(Duration::from_secs(600))).await
}

async fn client(running: &Running) -> Client {
    let client = Client::new("host", "1.0.0");
    client.connect(running.transport()).await.unwrap();
    client
}

#[tokio::test]
async fn listing_follows_pages_up_to_the_cap_and_fetches_no_file() {
    let running = serve(3).await;
    let client = client(&running).await;
    let skills = client.list_skills().await.unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["s0", "s1", "s2"]);
    assert_eq!(running.probe.count_of("skills/list"), 3, "one request per page");
    assert_eq!(running.probe.count_of("resources/read"), 0, "listing reads no file");

    // The page cap bounds what a listing may cost: past it, an error, not a short list.
    let capped = Client::new("host", "1.0.0").with_max_pages(2);
    capped.connect(running.transport()).await.unwrap();
    match capped.list_skills().await {
        Err(mcpl_core::Error::ListTruncated { method, limit }) => {
            assert_eq!(method, "skills/list");
            assert_eq!(limit, mcpl_core::error::ListLimit::Pages(2));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn loading_checks_every_file_against_the_held_entry() {
    let running = serve(1).await;
    let client = client(&running).await;
    let entry = client.get_skill("skill://s0/SKILL.md").await.unwrap();
    let loaded = client.load_skill(&entry).await.unwrap();
    assert!(loaded.manifest().starts_with("---\nname: s0"));
    let guide = client.read_skill_file(&loaded, "references/GUIDE.md").await.unwrap();
    assert_eq!(guide, b"guide of s0");
    // Binary files arrive as blobs and are checked on their raw bytes.
    assert_eq!(client.read_skill_file(&loaded, "logo.bin").await.unwrap(), [0xff, 0x00, 0x01]);

    // Unlisted files and paths out of the skill are refused without a request.
    let before = running.probe.count_of("resources/read");
    let unlisted = client.read_skill_file(&loaded, "references/NEW.md").await.unwrap_err();
    assert_eq!(unlisted.verification().unwrap().kind(), SkillVerificationErrorKind::Unlisted);
    let escape = client.read_skill_file(&loaded, "../../s1/SKILL.md").await.unwrap_err();
    assert_eq!(escape.kind(), SkillErrorKind::OutsideSkill);
    assert_eq!(running.probe.count_of("resources/read"), before);

    // An unknown skill is the server's -32602.
    let unknown = client.get_skill("skill://nope/SKILL.md").await.unwrap_err();
    assert_eq!(unknown.rpc_error().unwrap().code.0, -32602);
}

#[tokio::test]
async fn content_that_no_longer_matches_the_entry_is_refused() {
    let running = serve(1).await;
    let client = client(&running).await;
    let held = client.get_skill("skill://s0/SKILL.md").await.unwrap();
    let loaded = client.load_skill(&held).await.unwrap();

    // The skill changes on the server after the host took its entry.
    running.server.skills_mut().replace(skill("s0", "A skill, rewritten")).unwrap();
    let stale = client.load_skill(&held).await.unwrap_err();
    let kind = stale.verification().unwrap().kind();
    assert!(matches!(kind, SkillVerificationErrorKind::SizeMismatch), "{stale}");
    let guide = SkillBundle::new("s0", manifest("s0", "A skill"))
        .unwrap()
        .file("references/GUIDE.md", "a different guide")
        .unwrap();
    running.server.skills_mut().replace(guide).unwrap();
    let e = client.read_skill_file(&loaded, "references/GUIDE.md").await.unwrap_err();
    assert_eq!(e.kind(), SkillErrorKind::Verification);

    // An entry whose frontmatter differs from the file's is refused even when the digest
    // matches.
    let mut entry = client.get_skill("skill://s0/SKILL.md").await.unwrap();
    client.load_skill(&entry).await.unwrap();
    entry.frontmatter.description = "Exfiltrate credentials".into();
    let e = client.load_skill(&entry).await.unwrap_err();
    assert_eq!(e.verification().unwrap().kind(), SkillVerificationErrorKind::FrontmatterMismatch);

    // So is an entry that breaks the extension's own rules.
    entry.uri = "skill://elsewhere/SKILL.md".into();
    assert_eq!(client.load_skill(&entry).await.unwrap_err().kind(), SkillErrorKind::InvalidEntry);
}

#[tokio::test]
async fn a_server_without_the_extension_is_not_asked() {
    let server = Server::builder("tools-only", "1.0.0")
        .tool(Tool::new("t", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("t")) })
        .build();
    let running = start(server, HttpConfig::new()).await;
    let client = client(&running).await;
    let e = client.list_skills().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CapabilityNotSupported);
    assert!(e.to_string().contains("io.modelcontextprotocol/skills"), "{e}");
    assert_eq!(
        client.get_skill("skill://a/SKILL.md").await.unwrap_err().kind(),
        ErrorKind::CapabilityNotSupported
    );
    assert_eq!(running.probe.count_of("skills/list") + running.probe.count_of("skills/get"), 0);
}

#[tokio::test]
async fn listings_and_entries_are_cached_like_other_lists() {
    let running = serve(2).await;
    let client = Client::builder("host", "1.0.0")
        .with_cache(ResponseCache::in_memory().principal("p"))
        .build();
    client.connect(running.transport()).await.unwrap();
    client.list_skills().await.unwrap();
    client.list_skills().await.unwrap();
    assert_eq!(running.probe.count_of("skills/list"), 2, "two pages, fetched once");
    client.get_skill("skill://s1/SKILL.md").await.unwrap();
    client.get_skill("skill://s1/SKILL.md").await.unwrap();
    assert_eq!(running.probe.count_of("skills/get"), 1);
    client.with_cache_mode(CacheMode::Refresh).get_skill("skill://s1/SKILL.md").await.unwrap();
    assert_eq!(running.probe.count_of("skills/get"), 2);
}

#[tokio::test]
async fn the_2025_era_lists_and_loads_skills_too() {
    let running = serve(2).await;
    let client = Client::new("host", "1.0.0")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(running.transport()).await.unwrap();
    let skills = client.list_skills().await.unwrap();
    assert_eq!(skills.len(), 2);
    let loaded = client.load_skill(&skills[1]).await.unwrap();
    assert_eq!(
        client.read_skill_file(&loaded, "references/GUIDE.md").await.unwrap(),
        b"guide of s1"
    );
}
