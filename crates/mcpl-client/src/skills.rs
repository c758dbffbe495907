//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): listing, getting and
//! loading a server's Agent Skills, with every file checked against its entry.
//!
//! [`Client::list_skills`] follows `skills/list` pagination (with the page cap of
//! [`Client::with_max_pages`]); [`Client::get_skill`] asks for one entry by the URI of its
//! `SKILL.md`. Both need the server to have declared the extension (`CapabilityNotSupported`
//! otherwise, with nothing sent), and both go through the response cache like the other lists
//! (see [`crate::cache`]).
//!
//! Listing fetches no file. [`Client::load_skill`] reads the skill's `SKILL.md` when the skill
//! is loaded and checks it against the held entry (size, then digest, then the frontmatter field
//! by field); [`Client::read_skill_file`] reads a supporting file later, and only one the held
//! entry lists, checked the same way. Content that fails a check is never returned: the error
//! says why ([`SkillVerificationError`]); refresh the entry with `get_skill` and load again.
//!
//! ```
//! use mcpl_client::Client;
//! # async fn docs_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
//! #     use mcpl_server::skills::SkillBundle;
//! #     let manifest = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\nThe fields are in references/FORMS.md.\n";
//! #     let skill = SkillBundle::new("pdf-processing", manifest)
//! #         .and_then(|s| s.file("references/FORMS.md", "# Forms"))
//! #         .map_err(|e| mcpl_core::Error::Transport { context: e.to_string(), source: None })?;
//! #     let server = mcpl_server::Server::builder("docs", "1.0.0").skill(skill).build();
//! #     let (ours, theirs) = mcpl_core::transport::memory::pair();
//! #     Ok((server.serve(theirs).await?, ours))
//! # }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (_session, transport) = docs_server().await?;
//! let client = Client::new("my-host", "1.0.0");
//! client.connect(transport).await?;
//!
//! let skills = client.list_skills().await?; // entries only: nothing is read yet
//! assert_eq!(skills[0].name(), "pdf-processing");
//!
//! // The model asked for the skill: read and check its SKILL.md, then a file it names.
//! let skill = client.load_skill(&skills[0]).await?;
//! assert!(skill.manifest().contains("references/FORMS.md"));
//! let forms = client.read_skill_file(&skill, "references/FORMS.md").await?;
//! assert_eq!(forms, b"# Forms");
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_core::types::{
    GetSkill, GetSkillRequestParams, ListSkills, MAX_SKILL_BYTES, Method, ResourceContents, Skill,
    SkillResources, SkillVerificationError,
};

use crate::Client;

/// Why a skill could not be loaded or one of its files read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The request failed (the connection, the server's error, a missing capability).
    #[error("the request for the skill failed")]
    Request(#[source] mcpl_core::Error),
    /// The content read does not match the held entry: it must not be used.
    #[error("the skill's content failed verification")]
    Verification(#[source] SkillVerificationError),
    /// The entry itself breaks the extension's rules (see [`Skill::check`]): hosts must not
    /// load it.
    #[error("invalid skill entry: {0}")]
    InvalidEntry(String),
    /// The path leaves the skill's root (`../`), or the skill has no root.
    #[error("{0:?} is not a file of the skill")]
    OutsideSkill(String),
    /// The server answered without contents for the file, or with base64 that does not
    /// decode.
    #[error("the server sent no usable contents for {0}")]
    NoContents(String),
    /// A dynamic skill's reads exceeded [`MAX_SKILL_BYTES`] in all.
    #[error("the dynamic skill's files exceed {MAX_SKILL_BYTES} bytes")]
    TooLarge,
}

/// What kind of [`SkillError`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillErrorKind {
    /// [`SkillError::Request`].
    Request,
    /// [`SkillError::Verification`].
    Verification,
    /// [`SkillError::InvalidEntry`].
    InvalidEntry,
    /// [`SkillError::OutsideSkill`].
    OutsideSkill,
    /// [`SkillError::NoContents`].
    NoContents,
    /// [`SkillError::TooLarge`].
    TooLarge,
}

impl SkillError {
    /// What kind of error this is.
    pub fn kind(&self) -> SkillErrorKind {
        match self {
            SkillError::Request(_) => SkillErrorKind::Request,
            SkillError::Verification(_) => SkillErrorKind::Verification,
            SkillError::InvalidEntry(_) => SkillErrorKind::InvalidEntry,
            SkillError::OutsideSkill(_) => SkillErrorKind::OutsideSkill,
            SkillError::NoContents(_) => SkillErrorKind::NoContents,
            SkillError::TooLarge => SkillErrorKind::TooLarge,
        }
    }

    /// The verification failure, if that is what this is.
    pub fn verification(&self) -> Option<&SkillVerificationError> {
        match self {
            SkillError::Verification(e) => Some(e),
            _ => None,
        }
    }
}

impl From<mcpl_core::Error> for SkillError {
    fn from(e: mcpl_core::Error) -> Self {
        SkillError::Request(e)
    }
}

/// A skill loaded from the entry it was approved under: its checked `SKILL.md`, and the entry
/// that later reads of its files are checked against.
#[derive(Debug)]
pub struct LoadedSkill {
    entry: Skill,
    manifest: String,
    /// Bytes read so far for a dynamic skill (bounded by [`MAX_SKILL_BYTES`]).
    dynamic_bytes: AtomicU64,
}

impl LoadedSkill {
    /// The held entry.
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The `SKILL.md` text, as read and checked.
    pub fn manifest(&self) -> &str {
        &self.manifest
    }
}

impl Client {
    /// Lists every skill the server publishes (`skills/list`), following pagination within the
    /// client's list caps ([`with_max_pages`](Self::with_max_pages)). Fetches no file.
    ///
    /// # Errors
    ///
    /// `CapabilityNotSupported` if the server did not declare the skills extension (nothing is
    /// sent); `ListTruncated` past a list cap; otherwise `ConnectionClosed`, a timeout, or the
    /// server's error.
    pub async fn list_skills(&self) -> mcpl_core::Result<Vec<Skill>> {
        self.check_skills(ListSkills::NAME)?;
        self.list_pages::<ListSkills, _>(|page| (page.skills, page.next_cursor)).await
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), whether or not the
    /// listing showed it; call it again to refresh a held entry.
    ///
    /// # Errors
    ///
    /// As [`list_skills`](Self::list_skills); a URI the server does not serve is its `-32602`.
    pub async fn get_skill(&self, uri: &str) -> mcpl_core::Result<Skill> {
        self.check_skills(GetSkill::NAME)?;
        let result = self.send::<GetSkill>(GetSkillRequestParams::new(uri), self.options()).await?;
        Ok(result.skill)
    }

    /// Loads `skill`: checks the entry, reads its `SKILL.md` (`resources/read`) and checks it
    /// against the entry (size and digest, unless the entry is `dynamic`; then the frontmatter,
    /// field by field). Only a skill that passes is returned.
    ///
    /// # Errors
    ///
    /// [`SkillError::InvalidEntry`], [`SkillError::Verification`], [`SkillError::NoContents`],
    /// or [`SkillError::Request`].
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, SkillError> {
        skill.check().map_err(SkillError::InvalidEntry)?;
        let bytes = self.read_bytes(&skill.uri).await?;
        let dynamic_bytes = AtomicU64::new(0);
        match skill.file(&skill.uri) {
            Some(listed) => listed.verify(&bytes).map_err(SkillError::Verification)?,
            // `check` passed, so only a dynamic entry lists no SKILL.md: unverifiable, counted.
            None => {
                dynamic_bytes.store(len(&bytes), Ordering::Relaxed);
                if len(&bytes) > MAX_SKILL_BYTES {
                    return Err(SkillError::TooLarge);
                }
            }
        }
        let manifest = String::from_utf8(bytes).map_err(|_| {
            SkillError::Verification(SkillVerificationError::Frontmatter(
                mcpl_core::types::FrontmatterError::Missing,
            ))
        })?;
        skill.frontmatter.verify_document(&manifest).map_err(SkillError::Verification)?;
        Ok(LoadedSkill { entry: skill.clone(), manifest, dynamic_bytes })
    }

    /// Reads a file of a loaded skill, given relative to the skill's root
    /// (`references/FORMS.md`) or as a full URI. With a file list, only a listed file is read,
    /// and its content is checked against its entry; a dynamic skill's files are read as they
    /// are, up to [`MAX_SKILL_BYTES`] in all.
    ///
    /// # Errors
    ///
    /// [`SkillError::OutsideSkill`], [`SkillError::Verification`] (an unlisted file is
    /// [`SkillVerificationError::Unlisted`], and nothing is sent), [`SkillError::TooLarge`],
    /// [`SkillError::NoContents`], or [`SkillError::Request`].
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        path: &str,
    ) -> Result<Vec<u8>, SkillError> {
        let entry = &skill.entry;
        let uri = entry.resolve(path).ok_or_else(|| SkillError::OutsideSkill(path.to_owned()))?;
        match &entry.resources {
            SkillResources::Files(_) => {
                let Some(listed) = entry.file(&uri) else {
                    return Err(SkillError::Verification(SkillVerificationError::Unlisted { uri }));
                };
                let bytes = self.read_bytes(&uri).await?;
                listed.verify(&bytes).map_err(SkillError::Verification)?;
                Ok(bytes)
            }
            SkillResources::Dynamic => {
                let root = entry.root().unwrap_or_default();
                if !uri.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')) {
                    return Err(SkillError::OutsideSkill(path.to_owned()));
                }
                let bytes = self.read_bytes(&uri).await?;
                let total = skill.dynamic_bytes.fetch_add(len(&bytes), Ordering::Relaxed);
                if total.saturating_add(len(&bytes)) > MAX_SKILL_BYTES {
                    return Err(SkillError::TooLarge);
                }
                Ok(bytes)
            }
        }
    }

    /// The raw bytes of the resource at `uri`: its text, or its decoded blob.
    async fn read_bytes(&self, uri: &str) -> Result<Vec<u8>, SkillError> {
        let result = self.read_resource(uri).await?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.uri() == uri)
            .or(result.contents.first())
            .ok_or_else(|| SkillError::NoContents(uri.to_owned()))?;
        match contents {
            ResourceContents::Text(text) => Ok(text.text.clone().into_bytes()),
            ResourceContents::Blob(blob) => {
                STANDARD.decode(&blob.blob).map_err(|_| SkillError::NoContents(uri.to_owned()))
            }
        }
    }

    /// Refuses a skills request to a server that did not declare the extension.
    fn check_skills(&self, method: &str) -> mcpl_core::Result<()> {
        match self.server() {
            Some(server) => crate::capability::check(method, &server.capabilities),
            None => Ok(()),
        }
    }
}

fn len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use mcpl_core::types::{SkillFrontmatter, SkillResource};

    use super::*;

    #[test]
    fn errors_have_kinds_and_keep_their_cause() {
        let e =
            SkillError::Verification(SkillVerificationError::DigestMismatch { uri: "u".into() });
        assert_eq!(e.kind(), SkillErrorKind::Verification);
        assert!(e.verification().is_some());
        assert!(std::error::Error::source(&e).is_some());
        let e = SkillError::from(mcpl_core::Error::ConnectionClosed);
        assert_eq!(e.kind(), SkillErrorKind::Request);
        assert!(e.verification().is_none());
    }

    #[test]
    fn loaded_skills_hold_their_entry() {
        let uri = "skill://a/SKILL.md";
        let text = "---\nname: a\ndescription: d\n---\n";
        let entry = Skill::new(
            uri,
            SkillFrontmatter::new("a", "d"),
            SkillResources::Files(vec![SkillResource::of(uri, text.as_bytes())]),
        );
        let loaded = LoadedSkill {
            entry: entry.clone(),
            manifest: text.into(),
            dynamic_bytes: AtomicU64::new(0),
        };
        assert_eq!(loaded.entry(), &entry);
        assert_eq!(loaded.manifest(), text);
    }
}
