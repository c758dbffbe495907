//! [`SkillBundle`]: one skill's files, as the server serves them, and why one could not be made.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcpl_core::types::{
    MAX_SKILL_BYTES, MAX_SKILL_FILES, Resource, SKILL_MANIFEST, SKILL_MANIFEST_MIME_TYPE,
    SKILL_SCHEME, Skill, SkillFrontmatter, SkillResource, SkillResources, skill_name_of,
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
pub(super) struct BundleFile {
    pub(super) resource: Resource,
    pub(super) bytes: Arc<[u8]>,
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
    pub(super) entry: Skill,
    /// The files, keyed by URI (none for a dynamic skill).
    pub(super) files: BTreeMap<String, BundleFile>,
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

pub(super) fn len(bytes: &[u8]) -> u64 {
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
