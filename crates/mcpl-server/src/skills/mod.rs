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

mod dir;

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    BlobResourceContents, DIRECTORY_MIME_TYPE, GetSkillRequestParams, GetSkillResult,
    ListSkillsResult, MAX_SKILL_BYTES, MAX_SKILL_FILES, PaginatedRequestParams,
    ReadDirectoryRequestParams, ReadDirectoryResult, Resource, ResourceContents, SKILL_MANIFEST,
    SKILL_MANIFEST_MIME_TYPE, SKILL_SCHEME, SKILLS_EXTENSION, Skill, SkillFrontmatter,
    SkillResource, SkillResources, TextResourceContents, skill_name_of,
};
use serde_json::{Value, json};

use crate::builder::{RegistrationError, Server};
use crate::events::ServerEvent;
use crate::pagination::paginate;
use crate::router::{decode, encode};

pub use self::dir::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_SKILLS,
    DEFAULT_MAX_TOTAL_BYTES, LoadError, LoadErrorKind, LoadOptions, LoadedSkills, SkillDiagnostic,
    SkillProblem, SkillProblemKind, load_dir,
};

/// Why a [`SkillBundle`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A skill path or file path breaks the naming rules (see [`SkillBundle::new`]).
    #[error(
        "invalid path {0:?}: segments are 1-255 characters of A-Z a-z 0-9 . _ ~ -, not starting with a dot"
    )]
    InvalidPath(String),
    /// The `SKILL.md` has no valid frontmatter.
    #[error("invalid SKILL.md frontmatter")]
    Frontmatter(#[source] mcpl_core::types::FrontmatterError),
    /// The last segment of the skill path is not the frontmatter's `name`.
    #[error("the skill path {path:?} must end with the skill's name {name:?}")]
    NameMismatch {
        /// The skill path.
        path: String,
        /// The frontmatter's name.
        name: String,
    },
    /// A file path is given twice (or is the root `SKILL.md`).
    #[error("the file {0:?} is already part of the skill")]
    DuplicateFile(String),
    /// The skill would have more than [`MAX_SKILL_FILES`] files or [`MAX_SKILL_BYTES`] bytes.
    #[error("the skill would exceed {MAX_SKILL_FILES} files or {MAX_SKILL_BYTES} bytes")]
    TooLarge,
    /// A dynamic skill's URI does not end in `/<name>/SKILL.md`.
    #[error("the skill URI {0:?} must end in /<name>/SKILL.md with the frontmatter's name")]
    InvalidUri(String),
}

/// What kind of [`SkillError`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillErrorKind {
    /// [`SkillError::InvalidPath`].
    InvalidPath,
    /// [`SkillError::Frontmatter`].
    Frontmatter,
    /// [`SkillError::NameMismatch`].
    NameMismatch,
    /// [`SkillError::DuplicateFile`].
    DuplicateFile,
    /// [`SkillError::TooLarge`].
    TooLarge,
    /// [`SkillError::InvalidUri`].
    InvalidUri,
}

impl SkillError {
    /// What kind of error this is.
    pub fn kind(&self) -> SkillErrorKind {
        match self {
            SkillError::InvalidPath(_) => SkillErrorKind::InvalidPath,
            SkillError::Frontmatter(_) => SkillErrorKind::Frontmatter,
            SkillError::NameMismatch { .. } => SkillErrorKind::NameMismatch,
            SkillError::DuplicateFile(_) => SkillErrorKind::DuplicateFile,
            SkillError::TooLarge => SkillErrorKind::TooLarge,
            SkillError::InvalidUri(_) => SkillErrorKind::InvalidUri,
        }
    }
}

/// Whether `segment` may be one segment of a skill or file path: 1 to 255 characters of
/// `A-Z a-z 0-9 . _ ~ -` (RFC 3986's unreserved characters, so URIs need no escaping), not
/// starting with a dot (no `.`, `..` or hidden files).
pub(crate) fn is_valid_segment(segment: &str) -> bool {
    (1..=255).contains(&segment.len())
        && !segment.starts_with('.')
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

/// `path` split into valid segments.
fn segments(path: &str) -> Result<Vec<&str>, SkillError> {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.iter().all(|s| is_valid_segment(s)) {
        Ok(parts)
    } else {
        Err(SkillError::InvalidPath(path.to_owned()))
    }
}

/// One file of a bundle, as served.
#[derive(Debug, Clone)]
struct BundleFile {
    resource: Resource,
    bytes: Arc<[u8]>,
}

/// A skill the server serves from memory: its `SKILL.md` and supporting files, with the entry
/// `skills/list` and `skills/get` return; or a dynamic skill, whose files the server serves
/// itself (as resources or resource templates) and whose entry lists none.
///
/// # Examples
///
/// ```
/// use mcpl_server::skills::{SkillBundle, SkillErrorKind};
///
/// let manifest = "---\nname: refunds\ndescription: Process refund requests\n---\nSee examples/email.md\n";
/// // Nested under the prefix `acme/billing`: skill://acme/billing/refunds/SKILL.md
/// let skill = SkillBundle::new("acme/billing/refunds", manifest)?
///     .file("examples/email.md", "Dear customer, ...")?;
/// assert_eq!(skill.uri(), "skill://acme/billing/refunds/SKILL.md");
/// assert_eq!(skill.name(), "refunds");
///
/// // The last segment must be the frontmatter's name, and paths may not climb out.
/// assert_eq!(SkillBundle::new("acme/other", manifest).unwrap_err().kind(), SkillErrorKind::NameMismatch);
/// let err = SkillBundle::new("refunds", manifest)?.file("../secrets", "x").unwrap_err();
/// assert_eq!(err.kind(), SkillErrorKind::InvalidPath);
/// # Ok::<(), mcpl_server::skills::SkillError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SkillBundle {
    entry: Skill,
    /// The files, keyed by URI (none for a dynamic skill).
    files: BTreeMap<String, BundleFile>,
}

impl SkillBundle {
    /// A skill at `skill://<path>/SKILL.md` with the manifest text `manifest`. `path` is one
    /// or more `/`-separated segments whose last one is the frontmatter's `name`; the others
    /// are an organizational prefix. Each segment is 1-255 characters of `A-Z a-z 0-9 . _ ~ -`,
    /// not starting with a dot.
    ///
    /// # Errors
    ///
    /// [`SkillError::InvalidPath`], [`SkillError::Frontmatter`] (see
    /// [`SkillFrontmatter::parse_document`]), [`SkillError::NameMismatch`], or
    /// [`SkillError::TooLarge`] for a manifest over [`MAX_SKILL_BYTES`].
    pub fn new(path: &str, manifest: impl Into<String>) -> Result<Self, SkillError> {
        let manifest = manifest.into();
        if len(manifest.as_bytes()) > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge);
        }
        let parts = segments(path)?;
        let frontmatter =
            SkillFrontmatter::parse_document(&manifest).map_err(SkillError::Frontmatter)?;
        if parts.last() != Some(&frontmatter.name.as_str()) {
            return Err(SkillError::NameMismatch { path: path.to_owned(), name: frontmatter.name });
        }
        let uri = format!("{SKILL_SCHEME}://{path}/{SKILL_MANIFEST}");
        let mut resource = Resource::new(&uri, &frontmatter.name);
        resource.description = Some(frontmatter.description.clone());
        resource.mime_type = Some(SKILL_MANIFEST_MIME_TYPE.to_owned());
        resource.size = Some(len(manifest.as_bytes()));
        let bytes: Arc<[u8]> = Arc::from(manifest.into_bytes());
        let file = SkillResource::of(&uri, &bytes);
        let entry = Skill::new(&uri, frontmatter, SkillResources::Files(vec![file]));
        let files = BTreeMap::from([(uri, BundleFile { resource, bytes })]);
        Ok(SkillBundle { entry, files })
    }

    /// A dynamic skill: its entry says `"resources": "dynamic"`, and the server serves its
    /// `SKILL.md` (at `uri`, ending in `/<name>/SKILL.md`) and its other files itself, with
    /// resources or resource templates.
    ///
    /// # Errors
    ///
    /// [`SkillError::Frontmatter`] for a name that breaks the naming rules or an empty
    /// description, [`SkillError::InvalidUri`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{SkillFrontmatter, SkillResources};
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let daily = SkillBundle::dynamic("skill://reports/daily/SKILL.md", SkillFrontmatter::new("daily", "Today's report"))?;
    /// assert_eq!(daily.entry().resources, SkillResources::Dynamic);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn dynamic(uri: &str, frontmatter: SkillFrontmatter) -> Result<Self, SkillError> {
        // The same rules as a parsed frontmatter's.
        let frontmatter = SkillFrontmatter::from_object(frontmatter.to_object())
            .map_err(SkillError::Frontmatter)?;
        if skill_name_of(uri) != Some(frontmatter.name.as_str()) {
            return Err(SkillError::InvalidUri(uri.to_owned()));
        }
        let entry = Skill::new(uri, frontmatter, SkillResources::Dynamic);
        Ok(SkillBundle { entry, files: BTreeMap::new() })
    }

    /// Adds a supporting file at `path` relative to the skill's root (`references/FORMS.md`);
    /// its MIME type is guessed from its extension.
    ///
    /// # Errors
    ///
    /// [`SkillError::InvalidPath`], [`SkillError::DuplicateFile`], or [`SkillError::TooLarge`]
    /// past [`MAX_SKILL_FILES`] files or [`MAX_SKILL_BYTES`] bytes. A dynamic skill has no
    /// files: adding one is [`SkillError::InvalidUri`].
    pub fn file(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<Self, SkillError> {
        let bytes = bytes.into();
        let parts = segments(path)?;
        let Some(root) = self.entry.root().map(str::to_owned) else {
            return Err(SkillError::InvalidUri(self.entry.uri.clone()));
        };
        let SkillResources::Files(listed) = &mut self.entry.resources else {
            return Err(SkillError::InvalidUri(self.entry.uri.clone()));
        };
        let uri = format!("{root}/{path}");
        if self.files.contains_key(&uri) {
            return Err(SkillError::DuplicateFile(path.to_owned()));
        }
        let total = listed.iter().map(|f| f.size).fold(len(&bytes), u64::saturating_add);
        if listed.len() >= MAX_SKILL_FILES || total > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge);
        }
        let name = parts.last().copied().unwrap_or(path);
        let mut resource = Resource::new(&uri, name);
        resource.mime_type = Some(mime_type(name, &bytes).to_owned());
        resource.size = Some(len(&bytes));
        listed.push(SkillResource::of(&uri, &bytes));
        self.files.insert(uri, BundleFile { resource, bytes: Arc::from(bytes) });
        Ok(self)
    }

    /// The URI of the skill's `SKILL.md`.
    pub fn uri(&self) -> &str {
        &self.entry.uri
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        self.entry.name()
    }

    /// The entry `skills/list` and `skills/get` return.
    pub fn entry(&self) -> &Skill {
        &self.entry
    }
}

fn len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

/// A MIME type for a file named `name` holding `bytes`.
pub(crate) fn mime_type(name: &str, bytes: &[u8]) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let known = match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("xml") => "application/xml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/typescript",
        Some("rs") => "text/x-rust",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "",
    };
    match known {
        "" if std::str::from_utf8(bytes).is_ok() => "text/plain",
        "" => "application/octet-stream",
        known => known,
    }
}

/// The served skills and the index of their files.
#[derive(Default)]
pub(crate) struct SkillCatalog {
    items: Vec<SkillBundle>,
    /// Every file of every skill, by URI (nested skills share files).
    files: BTreeMap<String, BundleFile>,
    pub(crate) revision: u64,
    /// Whether a skill was ever registered: the extension, once declared, stays.
    pub(crate) ever: bool,
}

impl SkillCatalog {
    fn get(&self, uri: &str) -> Option<&SkillBundle> {
        self.items.iter().find(|s| s.entry.uri == uri)
    }

    /// The entries, in registration order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &Skill> {
        self.items.iter().map(|s| &s.entry)
    }

    /// The resources of the skill files, in URI order.
    pub(crate) fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.files.values().map(|f| &f.resource)
    }

    /// The contents of the skill file at `uri`: text when it is UTF-8, else base64.
    pub(crate) fn contents(&self, uri: &str) -> Option<ResourceContents> {
        let file = self.files.get(uri)?;
        let mime = file.resource.mime_type.clone();
        Some(match std::str::from_utf8(&file.bytes) {
            Ok(text) => {
                let mut contents = TextResourceContents::new(uri, text);
                contents.mime_type = mime;
                contents.into()
            }
            Err(_) => {
                let mut contents = BlobResourceContents::new(uri, STANDARD.encode(&file.bytes));
                contents.mime_type = mime;
                contents.into()
            }
        })
    }

    /// Replaces the skills with `items`, refusing a set whose skills or files collide (two
    /// skills at one URI, one file URI with two contents, a file at a static resource's URI).
    fn set(
        &mut self,
        items: Vec<SkillBundle>,
        taken: &dyn Fn(&str) -> bool,
    ) -> Result<(), RegistrationError> {
        let mut files: BTreeMap<String, BundleFile> = BTreeMap::new();
        for (i, skill) in items.iter().enumerate() {
            if items[..i].iter().any(|s| s.entry.uri == skill.entry.uri) {
                return Err(RegistrationError::Duplicate {
                    kind: "skill",
                    key: skill.entry.uri.clone(),
                });
            }
            for (uri, file) in &skill.files {
                let clash = files.get(uri).is_some_and(|f| f.bytes != file.bytes);
                if clash || taken(uri) {
                    return Err(RegistrationError::Duplicate {
                        kind: "skill file",
                        key: uri.clone(),
                    });
                }
                // A nested skill's SKILL.md is described by that skill, not as a plain file of
                // the skill enclosing it.
                let describes_itself = *uri == skill.entry.uri;
                if describes_itself || !files.contains_key(uri) {
                    files.insert(uri.clone(), file.clone());
                }
            }
        }
        self.ever |= !items.is_empty();
        self.items = items;
        self.files = files;
        self.revision += 1;
        Ok(())
    }

    /// The direct children of the directory `uri`, in URI order; `None` when `uri` is not a
    /// directory of the served skill files.
    fn children(&self, uri: &str) -> Option<Vec<Resource>> {
        let has_path = uri.split_once("://").is_some_and(|(_, path)| !path.is_empty());
        if !has_path || uri.ends_with('/') {
            return None;
        }
        let prefix = format!("{uri}/");
        let mut children: Vec<Resource> = Vec::new();
        for (file_uri, file) in self.files.range(prefix.clone()..) {
            let Some(rest) = file_uri.strip_prefix(&prefix) else { break };
            match rest.split_once('/') {
                None => children.push(file.resource.clone()),
                Some((dir, _)) => {
                    // Keys under one subdirectory are contiguous in URI order.
                    let child = format!("{prefix}{dir}");
                    if children.last().is_none_or(|c| c.uri != child) {
                        let mut resource = Resource::new(child, dir);
                        resource.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned());
                        children.push(resource);
                    }
                }
            }
        }
        (!children.is_empty()).then_some(children)
    }
}

/// The settings declared under `capabilities.extensions`.
pub(crate) fn declaration() -> (String, Value) {
    (SKILLS_EXTENSION.to_owned(), json!({ "directoryRead": true }))
}

/// `skills/list`: one page of entries.
pub(crate) fn list(server: &Server, params: Option<Value>) -> HandlerResult {
    let params: PaginatedRequestParams = decode(params)?;
    let (revision, items) = {
        let r = server.read();
        (r.skills.revision, r.skills.entries().cloned().collect::<Vec<_>>())
    };
    let page = paginate("skills", revision, &items, params.cursor.as_deref(), server.page_size())?;
    encode(ListSkillsResult {
        skills: page.items,
        next_cursor: page.next_cursor,
        ..Default::default()
    })
}

/// `skills/get`: one entry, `-32602` for a URI that names no served skill.
pub(crate) fn get(server: &Server, params: Option<Value>) -> HandlerResult {
    let params: GetSkillRequestParams = decode(params)?;
    let entry = server.read().skills.get(&params.uri).map(|s| s.entry.clone());
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
pub(crate) fn read_directory(server: &Server, params: Option<Value>) -> HandlerResult {
    let params: ReadDirectoryRequestParams = decode(params)?;
    let (revision, children) = {
        let r = server.read();
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
    let page = paginate(&list, revision, &children, params.cursor.as_deref(), server.page_size())?;
    encode(ReadDirectoryResult {
        resources: page.items,
        next_cursor: page.next_cursor,
        ..Default::default()
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
    server: &'a Server,
}

impl<'a> SkillsMut<'a> {
    pub(crate) fn new(server: &'a Server) -> Self {
        SkillsMut { server }
    }

    /// Applies `f` to the list of skills; a list `f` makes that collides is refused and the
    /// served one stays.
    fn change(
        &self,
        f: impl FnOnce(&mut Vec<SkillBundle>) -> bool,
    ) -> Result<bool, RegistrationError> {
        let changed = {
            let mut r = self.server.write();
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
        self.server.announce(changed, ServerEvent::ResourcesListChanged);
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
        self.server.read().skills.get(uri).is_some()
    }
}

/// Registers `skill` on a builder's registry.
pub(crate) fn register(
    registry: &mut crate::registry::Registry,
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

    use super::*;

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
