//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): serving Agent Skills.
//!
//! A skill is a directory of files led by a `SKILL.md` whose YAML frontmatter names it. The
//! server serves each file as a resource at `skill://<skill-path>/<file-path>` (read with
//! `resources/read`, listed by `resources/list`), and describes each skill with an entry: the
//! frontmatter as JSON and the digest and size of every file (`skills/list`, paginated like
//! the other lists, each entry whole on one page; `skills/get` by the URI of the `SKILL.md`,
//! `-32602` for a URI it does not serve). `resources/directory/read` lists the children of any
//! directory of the served skills (subdirectories with the MIME type `inode/directory`).
//!
//! Skills come from code ([`SkillBundle`], registered with
//! [`ServerBuilder::skill`](crate::ServerBuilder::skill)) or from a directory tree of skills
//! ([`load_dir`], with the safety rules described there). Once a skill is registered the
//! server declares the extension (with `directoryRead: true`) and the `resources` capability.
//! [`Server::skills_mut`](crate::Server::skills_mut) changes them while sessions are live; each
//! change tells clients that the resource list changed (skill files are resources).
//!
//! In the stateless (2026-07-28) era the `skills/list` and `skills/get` results carry cache
//! hints like the other lists (see [`crate::cache`]: [`CachedResult::SkillsList`] and
//! [`CachedResult::SkillsGet`]).
//!
//! [`CachedResult::SkillsList`]: crate::cache::CachedResult::SkillsList
//! [`CachedResult::SkillsGet`]: crate::cache::CachedResult::SkillsGet
//!
//! ```
//! use mcpl_server::Server;
//! use mcpl_server::skills::SkillBundle;
//!
//! let manifest = "---\nname: git-workflow\ndescription: Follow the team's Git conventions\n---\n\
//!                 Read `references/BRANCHES.md` first.\n";
//! let skill = SkillBundle::new("git-workflow", manifest)?
//!     .file("references/BRANCHES.md", "Branch from `main`.")?;
//! let server = Server::builder("docs", "1.0.0").skill(skill).build();
//!
//! let entry = &server.skills()[0];
//! assert_eq!(entry.uri, "skill://git-workflow/SKILL.md");
//! assert_eq!(entry.frontmatter.description, "Follow the team's Git conventions");
//! let extensions = server.capabilities().extensions.unwrap();
//! assert_eq!(extensions["io.modelcontextprotocol/skills"]["directoryRead"], true);
//! # Ok::<(), mcpl_server::skills::SkillError>(())
//! ```

mod bundle;
pub(crate) mod catalog;
mod dir;

use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, PaginatedRequestParams,
    ReadDirectoryRequestParams, ReadDirectoryResult,
};
use serde_json::{Value, json};

use crate::codec::{decode, encode};
use crate::events::ServerEvent;
use crate::features::{Features, Registry};
use crate::handler::registration::RegistrationError;
use crate::pagination::paginate;

pub use self::bundle::{SkillBundle, SkillError, SkillErrorKind};
pub use self::dir::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_SKILLS,
    DEFAULT_MAX_TOTAL_BYTES, LoadError, LoadErrorKind, LoadOptions, LoadedSkills, SkillDiagnostic,
    SkillProblem, SkillProblemKind, load_dir,
};

/// `skills/list`: one page of entries.
pub(crate) fn list(
    features: &Features,
    page_size: Option<usize>,
    params: Option<Value>,
) -> HandlerResult {
    let params: PaginatedRequestParams = decode(params)?;
    let (revision, items) = {
        let r = features.read();
        (r.skills.revision, r.skills.entries().cloned().collect::<Vec<_>>())
    };
    let page = paginate("skills", revision, items, params.cursor.as_deref(), page_size)?;
    encode({
        let mut result = ListSkillsResult::default().with_skills(page.items);
        result.next_cursor = page.next_cursor;
        result
    })
}

/// `skills/get`: one entry, `-32602` for a URI that names no served skill.
pub(crate) fn get(features: &Features, params: Option<Value>) -> HandlerResult {
    let params: GetSkillRequestParams = decode(params)?;
    let entry = features.read().skills.get(&params.uri).map(|s| s.entry.clone());
    match entry {
        Some(skill) => encode(GetSkillResult::new(skill)),
        None => {
            Err(ErrorObject::invalid_params(format_args!("no skill is served at {}", params.uri))
                .with_data(json!({ "uri": params.uri })))
        }
    }
}

/// `resources/directory/read`: one page of a directory's children, `-32602` for a URI that
/// is not a directory of the served skills.
pub(crate) fn read_directory(
    features: &Features,
    page_size: Option<usize>,
    params: Option<Value>,
) -> HandlerResult {
    let params: ReadDirectoryRequestParams = decode(params)?;
    let (revision, children) = {
        let r = features.read();
        (r.skills.revision, r.skills.children(&params.uri))
    };
    let Some(children) = children else {
        return Err(ErrorObject::invalid_params(format_args!(
            "{} is not a directory resource",
            params.uri
        ))
        .with_data(json!({ "uri": params.uri })));
    };
    let list = format!("directory {}", params.uri);
    let page = paginate(&list, revision, children, params.cursor.as_deref(), page_size)?;
    encode({
        let mut result = ReadDirectoryResult::default().with_resources(page.items);
        result.next_cursor = page.next_cursor;
        result
    })
}

/// Changes a server's skills while it serves; every change tells live sessions that the
/// resource list changed (`notifications/resources/list_changed`).
///
/// # Examples
///
/// ```
/// use mcpl_server::{Server, ServerEvent};
/// use mcpl_server::skills::SkillBundle;
///
/// let server = Server::builder("s", "1").build();
/// let mut changes = server.subscribe_changes();
/// let skill = SkillBundle::new("hello", "---\nname: hello\ndescription: Greets\n---\nSay hi.\n")?;
/// server.skills_mut().add(skill).unwrap();
/// assert_eq!(changes.try_recv().unwrap(), ServerEvent::ResourcesListChanged);
/// assert!(server.skills_mut().contains("skill://hello/SKILL.md"));
/// assert!(server.skills_mut().remove("skill://hello/SKILL.md"));
/// assert!(server.skills().is_empty());
/// # Ok::<(), mcpl_server::skills::SkillError>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct SkillsMut<'a> {
    features: &'a Features,
}

impl<'a> SkillsMut<'a> {
    pub(crate) fn new(features: &'a Features) -> Self {
        SkillsMut { features }
    }

    /// Applies `f` to the list of skills; a list `f` makes that collides is refused and the
    /// served one stays.
    fn change(
        &self,
        f: impl FnOnce(&mut Vec<SkillBundle>) -> bool,
    ) -> Result<bool, RegistrationError> {
        let changed = {
            let mut r = self.features.write();
            let mut items = r.skills.items.clone();
            if !f(&mut items) {
                return Ok(false);
            }
            let registry = &mut *r;
            let resources = &registry.resources;
            registry.skills.set(items, &|uri| resources.get(uri).is_some())?;
            registry.has_resources = true;
            true
        };
        self.features.announce(changed, ServerEvent::ResourcesListChanged);
        Ok(changed)
    }

    /// Adds a skill at the end of the list.
    ///
    /// # Errors
    ///
    /// [`RegistrationError::Duplicate`] for a skill URI already served, or a file URI served
    /// with other contents (by another skill, or as a static resource).
    pub fn add(&self, skill: SkillBundle) -> Result<(), RegistrationError> {
        self.change(|items| {
            items.push(skill);
            true
        })
        .map(drop)
    }

    /// Adds a skill, or replaces the one with its URI where it stands in the list.
    ///
    /// # Errors
    ///
    /// [`RegistrationError::Duplicate`] for a file URI served with other contents.
    pub fn replace(&self, skill: SkillBundle) -> Result<(), RegistrationError> {
        self.change(|items| {
            match items.iter().position(|s| s.entry.uri == skill.entry.uri) {
                Some(i) => items[i] = skill,
                None => items.push(skill),
            }
            true
        })
        .map(drop)
    }

    /// Serves exactly `skills`, in this order, in one change (a directory loaded again with
    /// [`load_dir`], say).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add), for collisions within `skills`; the served skills then stay.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let skill = |name: &str| SkillBundle::new(name, format!("---\nname: {name}\ndescription: d\n---\n"));
    /// let server = Server::builder("s", "1").skill(skill("old")?).build();
    /// server.skills_mut().replace_all([skill("a")?, skill("b")?]).unwrap();
    /// let names: Vec<_> = server.skills().into_iter().map(|s| s.frontmatter.name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn replace_all(
        &self,
        skills: impl IntoIterator<Item = SkillBundle>,
    ) -> Result<(), RegistrationError> {
        let skills: Vec<SkillBundle> = skills.into_iter().collect();
        self.change(|items| {
            *items = skills;
            true
        })
        .map(drop)
    }

    /// Removes the skill whose `SKILL.md` is at `uri`; returns whether it existed.
    pub fn remove(&self, uri: &str) -> bool {
        let removed = self.change(|items| {
            let before = items.len();
            items.retain(|s| s.entry.uri != uri);
            items.len() != before
        });
        // Removing a skill frees URIs: it cannot collide.
        removed.unwrap_or(false)
    }

    /// Whether a skill with this `SKILL.md` URI is served.
    pub fn contains(&self, uri: &str) -> bool {
        self.features.read().skills.get(uri).is_some()
    }
}

/// Registers `skill` on a builder's registry.
pub(crate) fn register(
    registry: &mut Registry,
    skill: SkillBundle,
) -> Result<(), RegistrationError> {
    let mut items = registry.skills.items.clone();
    items.push(skill);
    let resources = &registry.resources;
    registry.skills.set(items, &|uri| resources.get(uri).is_some())?;
    registry.has_resources = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::catalog::SkillCatalog;
    use super::*;
    use mcpl_core::types::{
        DIRECTORY_MIME_TYPE, MAX_SKILL_BYTES, MAX_SKILL_FILES, ResourceContents, SkillFrontmatter,
        SkillResources,
    };

    fn skill(path: &str) -> SkillBundle {
        let name = path.rsplit('/').next().unwrap();
        SkillBundle::new(path, format!("---\nname: {name}\ndescription: The {name} skill\n---\n"))
            .unwrap()
    }

    #[test]
    fn bundles_list_every_file_with_its_digest() {
        let bundle = skill("pdf").file("references/FORMS.md", "forms").unwrap();
        let SkillResources::Files(files) = &bundle.entry().resources else { panic!("files") };
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].uri, "skill://pdf/references/FORMS.md");
        files[1].verify(b"forms").unwrap();
        bundle.entry().check().unwrap();
        for bad in ["", "a//b", ".hidden", "a/../b", "/abs", "a b", "a\\b", "é"] {
            let e = skill("pdf").file(bad, "x").unwrap_err();
            assert_eq!(e.kind(), SkillErrorKind::InvalidPath, "{bad:?}");
        }
        let twice = bundle.clone().file("references/FORMS.md", "again").unwrap_err();
        assert_eq!(twice.kind(), SkillErrorKind::DuplicateFile);
        let manifest = skill("pdf").file("SKILL.md", "x").unwrap_err();
        assert_eq!(manifest.kind(), SkillErrorKind::DuplicateFile);
    }

    #[test]
    fn bundles_are_bounded_by_the_extension_limits() {
        let mut bundle = skill("many");
        for i in 0..MAX_SKILL_FILES - 1 {
            bundle = bundle.file(&format!("f{i}"), "").unwrap();
        }
        assert_eq!(
            bundle.clone().file("one-more", "").unwrap_err().kind(),
            SkillErrorKind::TooLarge
        );
        let big = vec![0u8; usize::try_from(MAX_SKILL_BYTES).unwrap()];
        assert_eq!(skill("big").file("blob", big).unwrap_err().kind(), SkillErrorKind::TooLarge);
    }

    #[test]
    fn directories_list_direct_children() {
        let mut catalog = SkillCatalog::default();
        let a = skill("acme/pdf")
            .file("templates/invoice.md", "i")
            .unwrap()
            .file("templates/regional/eu.md", "e")
            .unwrap()
            .file("templates.md", "t")
            .unwrap();
        catalog.set(vec![a], &|_| false).unwrap();
        let names = |uri: &str| -> Vec<(String, Option<String>)> {
            catalog.children(uri).unwrap().into_iter().map(|r| (r.name, r.mime_type)).collect()
        };
        let dir = Some(DIRECTORY_MIME_TYPE.to_owned());
        assert_eq!(names("skill://acme"), [("pdf".to_owned(), dir.clone())]);
        let md = Some("text/markdown".to_owned());
        assert_eq!(
            names("skill://acme/pdf"),
            [
                ("pdf".to_owned(), md.clone()),
                ("templates.md".to_owned(), md.clone()),
                ("templates".to_owned(), dir.clone()),
            ]
        );
        assert_eq!(
            names("skill://acme/pdf/templates"),
            [("invoice.md".to_owned(), md), ("regional".to_owned(), dir)]
        );
        for not_a_dir in [
            "skill://acme/pdf/SKILL.md",
            "skill://acme/pdf/",
            "skill://",
            "skill://acme/pd",
            "other://acme",
        ] {
            assert!(catalog.children(not_a_dir).is_none(), "{not_a_dir}");
        }
    }

    #[test]
    fn colliding_sets_are_refused() {
        let mut catalog = SkillCatalog::default();
        let e = catalog.set(vec![skill("a"), skill("a")], &|_| false).unwrap_err();
        assert!(matches!(e, RegistrationError::Duplicate { kind: "skill", .. }));
        let one = skill("a").file("x", "1").unwrap();
        let other = SkillBundle::new("a", "---\nname: a\ndescription: The a skill\n---\n")
            .unwrap()
            .file("x", "2")
            .unwrap();
        assert!(catalog.set(vec![one.clone(), other], &|_| false).is_err());
        assert!(catalog.set(vec![one], &|uri| uri == "skill://a/x").is_err());
        assert_eq!(catalog.revision, 0, "nothing changed");
    }

    #[test]
    fn nested_skills_share_files_and_keep_their_own_description() {
        let inner = "---\nname: b\ndescription: The inner skill\n---\n";
        let outer = skill("a").file("b/SKILL.md", inner).unwrap();
        let nested = SkillBundle::new("a/b", inner).unwrap();
        let mut catalog = SkillCatalog::default();
        catalog.set(vec![outer, nested], &|_| false).unwrap();
        let listed: Vec<_> =
            catalog.resources().map(|r| (r.uri.as_str(), r.name.as_str())).collect();
        assert_eq!(listed, [("skill://a/SKILL.md", "a"), ("skill://a/b/SKILL.md", "b")]);
        assert!(matches!(
            catalog.contents("skill://a/b/SKILL.md"),
            Some(ResourceContents::Text(_))
        ));
    }

    #[test]
    fn dynamic_skills_follow_the_naming_rules() {
        let ok =
            SkillBundle::dynamic("skill://r/daily/SKILL.md", SkillFrontmatter::new("daily", "d"));
        assert_eq!(ok.unwrap().entry().resources, SkillResources::Dynamic);
        let bad_name =
            SkillBundle::dynamic("skill://Daily/SKILL.md", SkillFrontmatter::new("Daily", "d"));
        assert_eq!(bad_name.unwrap_err().kind(), SkillErrorKind::Frontmatter);
        let empty =
            SkillBundle::dynamic("skill://daily/SKILL.md", SkillFrontmatter::new("daily", " "));
        assert_eq!(empty.unwrap_err().kind(), SkillErrorKind::Frontmatter);
        let elsewhere =
            SkillBundle::dynamic("skill://other/SKILL.md", SkillFrontmatter::new("daily", "d"));
        assert_eq!(elsewhere.unwrap_err().kind(), SkillErrorKind::InvalidUri);
        let no_files =
            SkillBundle::dynamic("skill://daily/SKILL.md", SkillFrontmatter::new("daily", "d"))
                .unwrap()
                .file("x", "y");
        assert_eq!(no_files.unwrap_err().kind(), SkillErrorKind::InvalidUri);
    }

    #[test]
    fn binary_files_are_served_as_blobs() {
        let bundle = skill("bin").file("data.bin", vec![0xff, 0x00]).unwrap();
        let mut catalog = SkillCatalog::default();
        catalog.set(vec![bundle], &|_| false).unwrap();
        let Some(ResourceContents::Blob(blob)) = catalog.contents("skill://bin/data.bin") else {
            panic!("a blob")
        };
        assert_eq!(blob.blob, "/wA=");
        assert_eq!(blob.mime_type.as_deref(), Some("application/octet-stream"));
        assert!(catalog.contents("skill://bin/missing").is_none());
    }
}
