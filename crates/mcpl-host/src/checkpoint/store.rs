//! Where checkpoint trees persist: the [`CheckpointStore`] trait, an in-memory store and a
//! crash-safe file store.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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
/// // A tree file someone truncated: reported, set aside, the other trees load.
/// std::fs::write(dir.join("tree-6e6f7465733a6e6f7465732e73746f7265.json"), "{\"version\": 1, ")
///     .unwrap();
/// let loaded = store.load().unwrap();
/// assert!(loaded.trees.is_empty());
/// match &loaded.unreadable[0].error {
///     StoreError::Corrupt { path, .. } => assert!(path.starts_with(&dir)),
///     other => panic!("expected a corrupt tree, got {other:?}"),
/// }
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing failed.
    #[error("checkpoint store I/O on {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A stored tree could not be decoded.
    #[error("checkpoint store: {path} is not a valid tree file ({detail})")]
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

/// What a store holds: the trees it could read, and the entries it could not.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointStore, CheckpointTree, MemoryCheckpointStore, StateMode, TreeKey};
///
/// let store = MemoryCheckpointStore::new();
/// store.save(&TreeKey::new("notes", "notes.store"), &CheckpointTree::new(StateMode::HostManaged, false)).unwrap();
/// let loaded = store.load().unwrap();
/// assert_eq!(loaded.trees.len(), 1);
/// assert!(loaded.unreadable.is_empty());
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The trees.
    pub trees: BTreeMap<TreeKey, CheckpointTree>,
    /// The entries that could not be read; each affects only its own tree.
    pub unreadable: Vec<Unreadable>,
}

/// A stored entry that could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub struct Unreadable {
    /// Its (server, feature set), when the store can tell.
    pub key: Option<TreeKey>,
    /// Why.
    pub error: StoreError,
}

/// Persists checkpoint trees, one entry per (server, feature set).
///
/// `save` is called after changes with the whole tree of that key, from the checkpoint
/// writer's thread (never an async runtime's); implementations must make it atomic (a crash
/// leaves the previous or the new tree, never a mix). `load` reports an entry it cannot read
/// in [`Loaded::unreadable`] rather than failing: one bad entry must not stop the others.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use mcpl_host::checkpoint::{
///     CheckpointManager, CheckpointStore, CheckpointTree, Loaded, MemoryCheckpointStore, StateMode,
///     StoreError, TreeKey,
/// };
/// use serde_json::json;
///
/// /// Counts saves, keeping the trees in memory (a real one would write to a database).
/// #[derive(Debug, Default)]
/// struct CountingStore {
///     trees: MemoryCheckpointStore,
///     saves: Arc<AtomicUsize>,
/// }
///
/// impl CheckpointStore for CountingStore {
///     fn load(&self) -> Result<Loaded, StoreError> {
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
/// trees.flush();
/// // The registration and the checkpoint: one or two saves (changes in a row may share one).
/// assert!((1..=2).contains(&saves.load(Ordering::SeqCst)));
/// ```
pub trait CheckpointStore: Send + Sync + Debug + 'static {
    /// Every stored tree, and the entries that could not be read.
    fn load(&self) -> Result<Loaded, StoreError>;
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
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
///
/// // Trees live as long as the manager: right for tests and hosts that need no durability.
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 1000).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// assert_eq!(trees.keys().len(), 1);
/// ```
#[derive(Debug, Default)]
pub struct MemoryCheckpointStore {
    trees: Mutex<BTreeMap<TreeKey, CheckpointTree>>,
}

impl MemoryCheckpointStore {
    /// An empty store.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{
    ///     CheckpointStore, CheckpointTree, MemoryCheckpointStore, StateMode, TreeKey,
    /// };
    ///
    /// let store = MemoryCheckpointStore::new();
    /// let key = TreeKey::new("notes", "notes.store");
    /// store.save(&key, &CheckpointTree::new(StateMode::HostManaged, false)).unwrap();
    /// assert!(store.load().unwrap().trees.contains_key(&key));
    /// store.remove(&key).unwrap();
    /// assert!(store.load().unwrap().trees.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<TreeKey, CheckpointTree>> {
        self.trees.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The former name of [`MemoryCheckpointStore`] (`MemoryStore` also named the client's
/// credential store and response cache store).
#[deprecated(note = "renamed MemoryCheckpointStore")]
pub type MemoryStore = MemoryCheckpointStore;

impl CheckpointStore for MemoryCheckpointStore {
    fn load(&self) -> Result<Loaded, StoreError> {
        Ok(Loaded { trees: self.lock().clone(), unreadable: Vec::new() })
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

/// One file per tree in a directory, written atomically: a temporary file of a unique name
/// is written and synced, then renamed over the old one, then the directory is synced. Files
/// are created readable and writable by their owner only (0600 on Unix; the directory, when
/// this store creates it, 0700): states can hold a user's data.
///
/// A file that cannot be read on load is renamed aside (`.unreadable` appended) and reported,
/// and the other trees load.
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
/// let loaded = FileStore::new(&dir).unwrap().load().unwrap().trees;
/// assert!(loaded[&key].rollback);
/// store.remove(&key).unwrap();
/// assert!(store.load().unwrap().trees.is_empty());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TreeFile {
    version: u32,
    server: String,
    feature_set: String,
    tree: CheckpointTree,
}

/// What `save` writes: a [`TreeFile`] borrowing the tree (no copy).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TreeFileRef<'a> {
    version: u32,
    server: &'a str,
    feature_set: &'a str,
    tree: &'a CheckpointTree,
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
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|source| StoreError::Io { path: dir.clone(), source })?;
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

/// The key a tree file's name encodes (`tree-<hex of "server:featureSet">.json`).
fn key_of(name: &str) -> Option<TreeKey> {
    let hex = name.strip_prefix("tree-")?.strip_suffix(".json")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect();
    let raw = String::from_utf8(bytes?).ok()?;
    // Server ids hold no ':' (they are `[A-Za-z0-9_-]+`); feature sets may.
    let (server, feature_set) = raw.split_once(':')?;
    Some(TreeKey::new(server, feature_set))
}

/// Creates `path` for writing, new, readable by its owner only.
fn create_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// A temporary name no other writer (thread or process) uses at the same time.
fn temporary(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{}.{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

impl CheckpointStore for FileStore {
    fn load(&self) -> Result<Loaded, StoreError> {
        let mut out = Loaded::default();
        for entry in fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let path = entry.map_err(io(&self.dir))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            if !(name.starts_with("tree-") && name.ends_with(".json")) {
                continue; // temporary files of an interrupted write, or foreign files
            }
            match read_tree(&path) {
                Ok((key, tree)) => {
                    out.trees.insert(key, tree);
                }
                Err(error) => {
                    let key = key_of(&name);
                    let aside = path.with_file_name(format!("{name}.unreadable"));
                    tracing::warn!(path = %path.display(), error = ?error.to_string(), "checkpoint tree file unreadable; set aside");
                    if let Err(e) = fs::rename(&path, &aside) {
                        tracing::warn!(path = %path.display(), error = %e, "unreadable tree file not set aside");
                    }
                    out.unreadable.push(Unreadable { key, error });
                }
            }
        }
        Ok(out)
    }

    fn save(&self, key: &TreeKey, tree: &CheckpointTree) -> Result<(), StoreError> {
        let path = self.path(key);
        let file = TreeFileRef {
            version: FORMAT_VERSION,
            server: &key.server,
            feature_set: &key.feature_set,
            tree,
        };
        let bytes = serde_json::to_vec(&file)
            .map_err(|e| StoreError::Corrupt { path: path.clone(), detail: e.to_string() })?;
        let tmp = temporary(&path);
        let written = create_private(&tmp).and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| fs::rename(&tmp, &path)) {
            let _ = fs::remove_file(&tmp);
            return Err(StoreError::Io { path, source: e });
        }
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

fn read_tree(path: &Path) -> Result<(TreeKey, CheckpointTree), StoreError> {
    let bytes = fs::read(path).map_err(io(path))?;
    let file: TreeFile = serde_json::from_slice(&bytes)
        .map_err(|e| StoreError::Corrupt { path: path.to_owned(), detail: e.to_string() })?;
    if file.version != FORMAT_VERSION {
        return Err(StoreError::Corrupt {
            path: path.to_owned(),
            detail: format!("format version {} (this host reads {FORMAT_VERSION})", file.version),
        });
    }
    Ok((TreeKey::new(file.server, file.feature_set), file.tree))
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
    fn errors_name_their_cause_once() {
        use std::error::Error as _;
        let source = std::io::Error::other("the disk is full");
        let error = StoreError::Io { path: "/var/lib/trees".into(), source };
        assert!(!error.to_string().contains("the disk is full"), "{error}");
        assert_eq!(error.source().unwrap().to_string(), "the disk is full");
    }

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
        let loaded = store.load().unwrap().trees;
        assert_eq!(loaded.len(), 1);
        let mut t = loaded[&key].clone();
        t.materialize().unwrap();
        assert_eq!(t.current_state(), Some(&json!({"a": 1})));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = store.path(&key);
            assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        store.remove(&key).unwrap();
        store.remove(&key).unwrap();
        assert!(store.load().unwrap().trees.is_empty());
        // A file of another format version is refused, not misread; it is set aside, and the
        // key its name encodes is reported.
        let other = TreeKey::new("s", "f:g");
        let bad = store.path(&other);
        fs::write(&bad, br#"{"version": 9, "server": "s", "featureSet": "f:g", "tree": {}}"#)
            .unwrap();
        store.save(&key, &tree).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.trees.len(), 1, "the good tree still loads");
        assert_eq!(loaded.unreadable.len(), 1);
        assert_eq!(loaded.unreadable[0].key, Some(other));
        assert_eq!(loaded.unreadable[0].error.kind(), "corrupt");
        assert!(!bad.exists());
        assert!(store.load().unwrap().unreadable.is_empty(), "reported once");
        fs::remove_dir_all(&dir).unwrap();
    }
}
