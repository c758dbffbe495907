//! Where checkpoint trees persist: the [`CheckpointStore`] trait, an in-memory store and a
//! crash-safe file store.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{CheckpointTree, TreeKey};

/// The version of the persisted format.
pub const FORMAT_VERSION: u32 = 1;

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing failed.
    #[error("checkpoint store I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A stored tree could not be decoded.
    #[error("checkpoint store: {path} is not a valid tree file: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl StoreError {
    /// A stable name of the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "io",
            StoreError::Corrupt { .. } => "corrupt",
        }
    }
}

/// Persists checkpoint trees, one entry per (server, feature set).
///
/// `save` is called after every mutation with the whole tree of that key; implementations
/// must make it atomic (a crash leaves the previous or the new tree, never a mix).
pub trait CheckpointStore: Send + Sync + Debug + 'static {
    /// Every stored tree.
    fn load(&self) -> Result<BTreeMap<TreeKey, CheckpointTree>, StoreError>;
    /// Stores `tree` under `key`.
    fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError>;
    /// Deletes the tree under `key` (absent is fine).
    fn remove(&self, key: &TreeKey) -> Result<(), StoreError>;
}

/// Keeps trees in memory (tests, or hosts that need no durability).
#[derive(Debug, Default)]
pub struct MemoryStore {
    trees: Mutex<BTreeMap<TreeKey, CheckpointTree>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<TreeKey, CheckpointTree>> {
        self.trees.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CheckpointStore for MemoryStore {
    fn load(&self) -> Result<BTreeMap<TreeKey, CheckpointTree>, StoreError> {
        Ok(self.lock().clone())
    }

    fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError> {
        self.lock().insert(key.clone(), tree.clone());
        Ok(())
    }

    fn remove(&self, key: &TreeKey) -> Result<(), StoreError> {
        self.lock().remove(key);
        Ok(())
    }
}

/// One file per tree in a directory, written atomically: a temporary file is written and
/// synced, then renamed over the old one, then the directory is synced.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TreeFile {
    version: u32,
    server: String,
    feature_set: String,
    tree: CheckpointTree,
}

impl FileStore {
    /// A store in `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| StoreError::Io { path: dir.clone(), source })?;
        Ok(FileStore { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`: the key hex-encoded, so any server id and feature-set name is safe.
    fn path(&self, key: &TreeKey) -> PathBuf {
        let raw = format!("{}:{}", key.server, key.feature_set);
        let hex: String = raw.bytes().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("tree-{hex}.json"))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

impl CheckpointStore for FileStore {
    fn load(&self) -> Result<BTreeMap<TreeKey, CheckpointTree>, StoreError> {
        let mut out = BTreeMap::new();
        for entry in fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let path = entry.map_err(io(&self.dir))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if !(name.starts_with("tree-") && name.ends_with(".json")) {
                continue; // temporary files of an interrupted write, or foreign files
            }
            let bytes = fs::read(&path).map_err(io(&path))?;
            let file: TreeFile = serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::Corrupt { path: path.clone(), detail: e.to_string() })?;
            if file.version != FORMAT_VERSION {
                return Err(StoreError::Corrupt {
                    path,
                    detail: format!(
                        "format version {} (this host reads {FORMAT_VERSION})",
                        file.version
                    ),
                });
            }
            out.insert(TreeKey::new(file.server, file.feature_set), file.tree);
        }
        Ok(out)
    }

    fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError> {
        let path = self.path(key);
        let tmp = path.with_extension("json.tmp");
        let file = TreeFile {
            version: FORMAT_VERSION,
            server: key.server.clone(),
            feature_set: key.feature_set.clone(),
            tree: tree.clone(),
        };
        let bytes = serde_json::to_vec(&file)
            .map_err(|e| StoreError::Corrupt { path: path.clone(), detail: e.to_string() })?;
        {
            let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&bytes).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io(&path))?;
        sync_dir(&self.dir)
    }

    fn remove(&self, key: &TreeKey) -> Result<(), StoreError> {
        let path = self.path(key);
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::Io { path, source: e }),
        }
    }
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    // Makes the rename durable. Directories cannot be opened for syncing on every platform;
    // where they cannot, the rename is still atomic.
    match fs::File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::checkpoint::{Incoming, StateMode};
    use serde_json::json;

    #[test]
    fn file_store_round_trips_and_ignores_temporaries() {
        let dir = std::env::temp_dir().join(format!("mcpl-host-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = FileStore::new(&dir).unwrap();
        let key = TreeKey::new("srv/1", "memory:notes");
        let mut tree = CheckpointTree::new(StateMode::HostManaged, true);
        let d = json!({"a": 1});
        tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&d), patch: None }, 5)
            .unwrap();
        store.save(&key, &tree).unwrap();
        fs::write(dir.join("tree-00.json.tmp"), b"{half").unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.len(), 1);
        let mut t = loaded[&key].clone();
        t.materialize().unwrap();
        assert_eq!(t.current_state(), Some(&json!({"a": 1})));
        store.remove(&key).unwrap();
        store.remove(&key).unwrap();
        assert!(store.load().unwrap().is_empty());
        // A file of another format version is refused, not misread.
        let bad = dir.join("tree-aa.json");
        fs::write(&bad, br#"{"version": 9, "server": "s", "featureSet": "f", "tree": {}}"#)
            .unwrap();
        assert_eq!(store.load().unwrap_err().kind(), "corrupt");
        fs::remove_dir_all(&dir).unwrap();
    }
}
