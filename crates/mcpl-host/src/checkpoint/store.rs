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
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{
///     CheckpointStore, CheckpointTree, FORMAT_VERSION, FileStore, StateMode, TreeKey,
/// };
///
/// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-format-{}", std::process::id()));
/// let store = FileStore::new(&dir).unwrap();
/// let tree = CheckpointTree::new(StateMode::HostManaged, false);
/// store.save(&TreeKey::new("notes", "notes.store"), &tree).unwrap();
/// let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
/// let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
/// assert_eq!(stored["version"], FORMAT_VERSION);
/// assert_eq!(stored["featureSet"], "notes.store");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub const FORMAT_VERSION: u32 = 1;

/// A store failure.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointStore, FileStore, StoreError};
///
/// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-corrupt-{}", std::process::id()));
/// let store = FileStore::new(&dir).unwrap();
/// // A tree file someone truncated.
/// std::fs::write(dir.join("tree-6e6f7465733a6e6f7465732e73746f7265.json"), "{\"version\": 1, ")
///     .unwrap();
/// match store.load() {
///     Err(StoreError::Corrupt { path, .. }) => assert!(path.starts_with(&dir)),
///     other => panic!("expected a corrupt store, got {other:?}"),
/// }
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::FileStore;
    ///
    /// // A store cannot live under a regular file.
    /// let file = std::env::temp_dir().join(format!("mcpl-host-doc-kind-{}", std::process::id()));
    /// std::fs::write(&file, b"not a directory").unwrap();
    /// let err = FileStore::new(file.join("state")).unwrap_err();
    /// assert_eq!(err.kind(), "io");
    /// std::fs::remove_file(&file).unwrap();
    /// ```
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
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use mcpl_host::checkpoint::{
///     CheckpointManager, CheckpointStore, CheckpointTree, MemoryStore, StateMode, StoreError,
///     TreeKey,
/// };
/// use serde_json::json;
///
/// /// Counts saves, keeping the trees in memory (a real one would write to a database).
/// #[derive(Debug, Default)]
/// struct CountingStore {
///     trees: MemoryStore,
///     saves: Arc<AtomicUsize>,
/// }
///
/// impl CheckpointStore for CountingStore {
///     fn load(&self) -> Result<BTreeMap<TreeKey, CheckpointTree>, StoreError> {
///         self.trees.load()
///     }
///     fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError> {
///         self.saves.fetch_add(1, Ordering::SeqCst);
///         self.trees.save(key, tree)
///     }
///     fn remove(&self, key: &TreeKey) -> Result<(), StoreError> {
///         self.trees.remove(key)
///     }
/// }
///
/// let store = CountingStore::default();
/// let saves = store.saves.clone();
/// let trees = CheckpointManager::open(store, 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {}}));
/// assert_eq!(saves.load(Ordering::SeqCst), 2); // registration, then the checkpoint
/// ```
pub trait CheckpointStore: Send + Sync + Debug + 'static {
    /// Every stored tree.
    fn load(&self) -> Result<BTreeMap<TreeKey, CheckpointTree>, StoreError>;
    /// Stores `tree` under `key`.
    fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError>;
    /// Deletes the tree under `key` (absent is fine).
    fn remove(&self, key: &TreeKey) -> Result<(), StoreError>;
}

/// Keeps trees in memory (tests, or hosts that need no durability).
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryStore, StateMode};
///
/// // Trees live as long as the manager: right for tests and hosts that need no durability.
/// let trees = CheckpointManager::open(MemoryStore::new(), 1000).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// assert_eq!(trees.keys().len(), 1);
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    trees: Mutex<BTreeMap<TreeKey, CheckpointTree>>,
}

impl MemoryStore {
    /// An empty store.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{
    ///     CheckpointStore, CheckpointTree, MemoryStore, StateMode, TreeKey,
    /// };
    ///
    /// let store = MemoryStore::new();
    /// let key = TreeKey::new("notes", "notes.store");
    /// store.save(&key, &CheckpointTree::new(StateMode::HostManaged, false)).unwrap();
    /// assert!(store.load().unwrap().contains_key(&key));
    /// store.remove(&key).unwrap();
    /// assert!(store.load().unwrap().is_empty());
    /// ```
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
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointStore, CheckpointTree, FileStore, StateMode, TreeKey};
///
/// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-filestore-{}", std::process::id()));
/// let store = FileStore::new(&dir).unwrap();
/// // Any server id or feature-set name is safe: file names are hex-encoded keys.
/// let key = TreeKey::new("../notes", "notes/store");
/// store.save(&key, &CheckpointTree::new(StateMode::HostManaged, true)).unwrap();
/// let loaded = FileStore::new(&dir).unwrap().load().unwrap();
/// assert!(loaded[&key].rollback);
/// store.remove(&key).unwrap();
/// assert!(store.load().unwrap().is_empty());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::FileStore;
    ///
    /// let dir = std::env::temp_dir()
    ///     .join(format!("mcpl-host-doc-filestore-new-{}", std::process::id()))
    ///     .join("nested/state");
    /// let store = FileStore::new(&dir).unwrap(); // created if missing
    /// assert!(store.dir().is_dir());
    /// std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap()).unwrap();
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| StoreError::Io { path: dir.clone(), source })?;
        Ok(FileStore { dir })
    }

    /// The directory.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::FileStore;
    ///
    /// let dir = std::env::temp_dir()
    ///     .join(format!("mcpl-host-doc-filestore-dir-{}", std::process::id()));
    /// let store = FileStore::new(&dir).unwrap();
    /// assert_eq!(store.dir(), dir.as_path());
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
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
