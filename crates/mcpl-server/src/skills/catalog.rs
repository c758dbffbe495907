//! The served skills and the index of their files, as the server's [`Registry`](crate::features::Registry) holds them.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_core::types::{
    BlobResourceContents, DIRECTORY_MIME_TYPE, Resource, ResourceContents, SKILLS_EXTENSION, Skill,
    TextResourceContents,
};
use serde_json::{Value, json};

use super::bundle::{BundleFile, SkillBundle};
use crate::handler::registration::RegistrationError;

/// The served skills and the index of their files.
#[derive(Default)]
pub(crate) struct SkillCatalog {
    pub(super) items: Vec<SkillBundle>,
    /// Every file of every skill, by URI (nested skills share files).
    files: BTreeMap<String, BundleFile>,
    pub(crate) revision: u64,
    /// Whether a skill was ever registered: the extension, once declared, stays.
    pub(crate) ever: bool,
}

impl SkillCatalog {
    pub(super) fn get(&self, uri: &str) -> Option<&SkillBundle> {
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
    pub(super) fn set(
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
    pub(super) fn children(&self, uri: &str) -> Option<Vec<Resource>> {
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
