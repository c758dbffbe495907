//! Loading skills from a directory tree, as a hostile input: see [`load_dir`].

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use mcpl_core::types::{MAX_SKILL_BYTES, MAX_SKILL_FILES, SKILL_MANIFEST};

use super::bundle::{SkillBundle, SkillError, is_valid_segment};

/// Default [`LoadOptions::max_file_bytes`]: 4 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Default [`LoadOptions::max_total_bytes`]: 128 MiB.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 128 * 1024 * 1024;
/// Default [`LoadOptions::max_depth`]: 16 directory levels below the root.
pub const DEFAULT_MAX_DEPTH: usize = 16;
/// Default [`LoadOptions::max_entries`]: 100,000 directory entries.
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;
/// Default [`LoadOptions::max_skills`]: 10,000 skills.
pub const DEFAULT_MAX_SKILLS: usize = 10_000;

/// The limits of [`load_dir`], and the URI prefix of the skills it loads.
///
/// # Examples
///
/// ```
/// use mcpl_server::skills::LoadOptions;
///
/// let options = LoadOptions::default().max_file_bytes(64 * 1024).max_depth(4).prefix("acme");
/// assert_eq!(options.file_limit(), 64 * 1024);
/// ```
#[derive(Debug, Clone)]
pub struct LoadOptions {
    max_file_bytes: u64,
    max_skill_files: usize,
    max_skill_bytes: u64,
    max_total_bytes: u64,
    max_depth: usize,
    max_entries: usize,
    max_skills: usize,
    prefix: Option<String>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_skill_files: MAX_SKILL_FILES,
            max_skill_bytes: MAX_SKILL_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_skills: DEFAULT_MAX_SKILLS,
            prefix: None,
        }
    }
}

impl LoadOptions {
    /// The largest file read, `SKILL.md` included (default [`DEFAULT_MAX_FILE_BYTES`]).
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The most files one skill may have, `SKILL.md` included (default and upper bound
    /// [`MAX_SKILL_FILES`], the extension's limit).
    pub fn max_skill_files(mut self, files: usize) -> Self {
        self.max_skill_files = files.min(MAX_SKILL_FILES);
        self
    }

    /// The most bytes one skill's files may add up to (default and upper bound
    /// [`MAX_SKILL_BYTES`], the extension's limit).
    pub fn max_skill_bytes(mut self, bytes: u64) -> Self {
        self.max_skill_bytes = bytes.min(MAX_SKILL_BYTES);
        self
    }

    /// The most bytes read in all (default [`DEFAULT_MAX_TOTAL_BYTES`]).
    pub fn max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = bytes;
        self
    }

    /// How many directory levels below the root are entered (default [`DEFAULT_MAX_DEPTH`]).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// How many directory entries are looked at in all (default [`DEFAULT_MAX_ENTRIES`]).
    pub fn max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }

    /// How many skills are loaded at most (default [`DEFAULT_MAX_SKILLS`]).
    pub fn max_skills(mut self, skills: usize) -> Self {
        self.max_skills = skills;
        self
    }

    /// Puts every skill under `prefix` (`/`-separated segments): `<root>/refunds/SKILL.md`
    /// becomes `skill://<prefix>/refunds/SKILL.md`. A `SKILL.md` at the root itself is then the
    /// skill `<prefix>` (whose last segment must be its name).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The largest file read.
    pub fn file_limit(&self) -> u64 {
        self.max_file_bytes
    }
}

/// Why [`load_dir`] could not load anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The root directory could not be opened.
    #[error("cannot open the skills directory {path:?}")]
    Root {
        /// The root.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The prefix breaks the naming rules of skill paths.
    #[error("invalid skill prefix {0:?}")]
    Prefix(String),
}

/// What kind of [`LoadError`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// [`LoadError::Root`].
    Root,
    /// [`LoadError::Prefix`].
    Prefix,
}

impl LoadError {
    /// What kind of error this is.
    pub fn kind(&self) -> LoadErrorKind {
        match self {
            LoadError::Root { .. } => LoadErrorKind::Root,
            LoadError::Prefix(_) => LoadErrorKind::Prefix,
        }
    }
}

/// Why an entry of the tree, or a skill, was left out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillProblem {
    /// A symbolic link (never followed).
    #[error("a symbolic link (links are not followed)")]
    Symlink,
    /// Not a regular file or directory (a FIFO, a socket, a device).
    #[error("not a regular file or directory")]
    NotRegular,
    /// A name that is not 1-255 characters of `A-Z a-z 0-9 . _ ~ -`.
    #[error("the name is not 1-255 characters of A-Z a-z 0-9 . _ ~ -")]
    InvalidName,
    /// A file larger than [`LoadOptions::max_file_bytes`].
    #[error("larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// Deeper than [`LoadOptions::max_depth`].
    #[error("deeper than {limit} directory levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// A limit of the whole load was reached (entries visited, bytes read, skills): what
    /// follows is not loaded.
    #[error("the load's limit of {limit} {what} was reached")]
    LoadLimit {
        /// What is counted.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The skill has more files or bytes than its limits allow.
    #[error("the skill has more than {files} files or {bytes} bytes")]
    SkillTooLarge {
        /// The file limit.
        files: usize,
        /// The byte limit.
        bytes: u64,
    },
    /// The `SKILL.md` is not UTF-8.
    #[error("SKILL.md is not UTF-8")]
    NotUtf8,
    /// The skill is invalid (its manifest, name or path).
    #[error("invalid skill")]
    Invalid(#[source] SkillError),
    /// A file or directory of the skill was refused (see its own diagnostic).
    #[error("a file of the skill was refused: {0}")]
    RefusedFile(String),
    /// A file or directory could not be opened or read.
    #[error("cannot read")]
    Io(#[source] io::Error),
}

/// What kind of [`SkillProblem`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillProblemKind {
    /// [`SkillProblem::Symlink`].
    Symlink,
    /// [`SkillProblem::NotRegular`].
    NotRegular,
    /// [`SkillProblem::InvalidName`].
    InvalidName,
    /// [`SkillProblem::TooLarge`].
    TooLarge,
    /// [`SkillProblem::TooDeep`].
    TooDeep,
    /// [`SkillProblem::LoadLimit`].
    LoadLimit,
    /// [`SkillProblem::SkillTooLarge`].
    SkillTooLarge,
    /// [`SkillProblem::NotUtf8`].
    NotUtf8,
    /// [`SkillProblem::Invalid`].
    Invalid,
    /// [`SkillProblem::RefusedFile`].
    RefusedFile,
    /// [`SkillProblem::Io`].
    Io,
}

impl SkillProblem {
    /// What kind of problem this is.
    pub fn kind(&self) -> SkillProblemKind {
        match self {
            SkillProblem::Symlink => SkillProblemKind::Symlink,
            SkillProblem::NotRegular => SkillProblemKind::NotRegular,
            SkillProblem::InvalidName => SkillProblemKind::InvalidName,
            SkillProblem::TooLarge { .. } => SkillProblemKind::TooLarge,
            SkillProblem::TooDeep { .. } => SkillProblemKind::TooDeep,
            SkillProblem::LoadLimit { .. } => SkillProblemKind::LoadLimit,
            SkillProblem::SkillTooLarge { .. } => SkillProblemKind::SkillTooLarge,
            SkillProblem::NotUtf8 => SkillProblemKind::NotUtf8,
            SkillProblem::Invalid(_) => SkillProblemKind::Invalid,
            SkillProblem::RefusedFile(_) => SkillProblemKind::RefusedFile,
            SkillProblem::Io(_) => SkillProblemKind::Io,
        }
    }
}

/// An entry of the tree, or a skill, that [`load_dir`] left out, and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct SkillDiagnostic {
    /// The entry's path relative to the root (`/`-separated as read; a name that is not UTF-8
    /// is shown lossily). For a skill, its directory.
    pub path: String,
    /// Why.
    pub problem: SkillProblem,
}

impl fmt::Display for SkillDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "." } else { &self.path };
        write!(f, "{path}: {}", self.problem)?;
        let mut cause = std::error::Error::source(&self.problem);
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

/// What [`load_dir`] found: the skills that loaded, and what it left out.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LoadedSkills {
    /// The skills, in path order.
    pub skills: Vec<SkillBundle>,
    /// What was left out, and why.
    pub diagnostics: Vec<SkillDiagnostic>,
}

/// Loads the skills of the tree at `root`, as a hostile input. The I/O is blocking: from async
/// code, call it in `tokio::task::spawn_blocking`.
///
/// Every directory below the root that holds a `SKILL.md` is a skill; its path below the root
/// is the skill path (`<root>/acme/refunds/SKILL.md` is `skill://acme/refunds/SKILL.md`), and
/// every file below it is a file of the skill (nested skills included). The tree is read once,
/// into memory.
///
/// The rules:
///
/// - **Nothing outside the root is read.** The walk opens each directory and file relative to
///   the handle of its parent, one name at a time, never following a symbolic link (`O_NOFOLLOW`
///   semantics through `cap-std`): a symlink met while listing is refused, and one swapped in
///   between the listing and the open fails the open. No path is ever joined or resolved, so
///   `..` and absolute paths cannot occur. What was opened is checked again on the handle: a
///   file must be a regular file (FIFOs, sockets and devices are refused; on Unix files are
///   opened non-blocking, so a FIFO swapped in cannot stall the load).
/// - **Bounded.** Each file's size ([`LoadOptions::max_file_bytes`], checked on the handle and
///   again while reading, so a growing file cannot overrun it), each skill's files and bytes
///   ([`LoadOptions::max_skill_files`], [`LoadOptions::max_skill_bytes`]), the bytes of the
///   whole load, the directory depth, the directory entries visited and the number of skills
///   all have limits.
/// - **Names validated.** Directory and file names are 1-255 characters of
///   `A-Z a-z 0-9 . _ ~ -` (so URIs need no escaping); names starting with a dot are skipped
///   silently (`.git`, `.DS_Store`). A skill's directory name must be its frontmatter `name`,
///   which must follow the Agent Skills naming rules.
/// - **A bad skill is skipped, with a diagnostic, never a panic.** Any problem inside a skill
///   (an invalid manifest, a refused or unreadable file, a limit) leaves out that skill (and
///   the skills enclosing it, whose file lists would be incomplete); the others load. Each
///   problem is returned as a [`SkillDiagnostic`] and logged once at `info`.
///
/// Hard links are regular files: keep the root writable only by whoever may publish what it
/// holds.
///
/// # Examples
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::skills::{LoadOptions, load_dir};
///
/// let root = std::env::temp_dir().join(format!("skills-doc-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("pdf-processing/references"))?;
/// std::fs::write(
///     root.join("pdf-processing/SKILL.md"),
///     "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\nSee references/FORMS.md\n",
/// )?;
/// std::fs::write(root.join("pdf-processing/references/FORMS.md"), "# Forms\n")?;
/// std::fs::create_dir_all(root.join("Bad_Name"))?;
/// std::fs::write(root.join("Bad_Name/SKILL.md"), "---\nname: Bad_Name\ndescription: x\n---\n")?;
///
/// let loaded = load_dir(&root, &LoadOptions::default())?;
/// assert_eq!(loaded.skills.len(), 1);
/// assert_eq!(loaded.skills[0].uri(), "skill://pdf-processing/SKILL.md");
/// assert_eq!(loaded.diagnostics.len(), 1, "the bad skill is reported, not served");
///
/// let server = Server::builder("docs", "1.0.0").skills(loaded.skills).build();
/// assert_eq!(server.skills().len(), 1);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`LoadError`] when the root cannot be opened or the prefix is invalid; everything else is a
/// diagnostic.
pub fn load_dir(root: impl AsRef<Path>, options: &LoadOptions) -> Result<LoadedSkills, LoadError> {
    let root = root.as_ref();
    let prefix = match &options.prefix {
        Some(p) if p.split('/').all(is_valid_segment) => p.split('/').map(str::to_owned).collect(),
        Some(p) => return Err(LoadError::Prefix(p.clone())),
        None => Vec::new(),
    };
    let dir = Dir::open_ambient_dir(root, ambient_authority())
        .map_err(|source| LoadError::Root { path: root.to_owned(), source })?;
    let mut walk = Walk {
        options,
        files: BTreeMap::new(),
        refused: Vec::new(),
        skill_dirs: Vec::new(),
        diagnostics: Vec::new(),
        entries: 0,
        bytes: 0,
        stopped: false,
    };
    walk.dir(&dir, &mut Vec::new(), false);
    let mut loaded = walk.finish(&prefix);
    for d in &loaded.diagnostics {
        tracing::info!(root = %root.display(), diagnostic = %d, "skill left out");
    }
    loaded.skills.sort_by(|a, b| a.uri().cmp(b.uri()));
    Ok(loaded)
}

/// The state of one walk.
struct Walk<'a> {
    options: &'a LoadOptions,
    /// Every file read below a skill directory, by its segments.
    files: BTreeMap<Vec<String>, Vec<u8>>,
    /// Paths (segments) of refused entries below a skill directory.
    refused: Vec<Vec<String>>,
    /// Directories (segments) holding a `SKILL.md`.
    skill_dirs: Vec<Vec<String>>,
    diagnostics: Vec<SkillDiagnostic>,
    entries: usize,
    bytes: u64,
    /// A limit of the whole load was reached.
    stopped: bool,
}

fn show(path: &[String], name: &str) -> String {
    let mut s = path.join("/");
    if !name.is_empty() {
        if !s.is_empty() {
            s.push('/');
        }
        s.push_str(name);
    }
    s
}

impl Walk<'_> {
    /// Records a refused entry at `path`/`name`; below a skill it also leaves the skill out.
    fn refuse(&mut self, path: &[String], name: &str, inside: bool, problem: SkillProblem) {
        if inside {
            let mut refused = path.to_vec();
            refused.push(name.to_owned());
            self.refused.push(refused);
        }
        self.diagnostics.push(SkillDiagnostic { path: show(path, name), problem });
    }

    /// Walks the directory `dir` at `path`; `inside`: an ancestor holds a `SKILL.md`.
    fn dir(&mut self, dir: &Dir, path: &mut Vec<String>, inside: bool) {
        let mut listing: Vec<(String, cap_std::fs::FileType)> = Vec::new();
        let entries = match dir.entries() {
            Ok(entries) => entries,
            Err(e) => return self.refuse(path, "", inside, SkillProblem::Io(e)),
        };
        for entry in entries {
            if self.entries >= self.options.max_entries {
                let limit = u64::try_from(self.options.max_entries).unwrap_or(u64::MAX);
                self.stop(path, "directory entries", limit, inside);
                break;
            }
            self.entries += 1;
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.refuse(path, "", inside, SkillProblem::Io(e));
                    continue;
                }
            };
            let raw = entry.file_name();
            let Some(name) = raw.to_str().map(str::to_owned) else {
                self.refuse(path, &raw.to_string_lossy(), inside, SkillProblem::InvalidName);
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            match entry.file_type() {
                Ok(kind) => listing.push((name, kind)),
                Err(e) => self.refuse(path, &name, inside, SkillProblem::Io(e)),
            }
        }
        if self.stopped {
            // A partial listing: nothing here is loaded.
            return;
        }
        listing.sort_by(|a, b| a.0.cmp(&b.0));
        let is_skill = listing.iter().any(|(n, t)| n == SKILL_MANIFEST && t.is_file());
        if is_skill {
            self.skill_dirs.push(path.clone());
        }
        let inside = inside || is_skill;
        for (name, kind) in listing {
            if self.stopped {
                return;
            }
            if !is_valid_segment(&name) {
                self.refuse(path, &name, inside, SkillProblem::InvalidName);
            } else if kind.is_symlink() {
                self.refuse(path, &name, inside, SkillProblem::Symlink);
            } else if kind.is_dir() {
                self.subdir(dir, path, &name, inside);
            } else if !kind.is_file() {
                self.refuse(path, &name, inside, SkillProblem::NotRegular);
            } else if inside {
                self.file(dir, path, &name);
            }
        }
    }

    fn subdir(&mut self, dir: &Dir, path: &mut Vec<String>, name: &str, inside: bool) {
        if path.len() >= self.options.max_depth {
            let limit = self.options.max_depth;
            return self.refuse(path, name, inside, SkillProblem::TooDeep { limit });
        }
        // Relative to the parent's handle, never through a symlink (one swapped in since the
        // listing fails here).
        match dir.open_dir_nofollow(name) {
            Ok(child) => {
                path.push(name.to_owned());
                self.dir(&child, path, inside);
                path.pop();
            }
            Err(e) => self.refuse(path, name, inside, open_problem(e)),
        }
    }

    fn file(&mut self, dir: &Dir, path: &[String], name: &str) {
        let remaining = self.options.max_total_bytes.saturating_sub(self.bytes);
        match read_file(dir, name, self.options.max_file_bytes, remaining) {
            Ok(bytes) => {
                self.bytes =
                    self.bytes.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
                let mut key = path.to_vec();
                key.push(name.to_owned());
                self.files.insert(key, bytes);
            }
            Err(Refusal::Budget) => {
                let limit = self.options.max_total_bytes;
                self.stop(path, "bytes", limit, true);
            }
            Err(Refusal::Problem(problem)) => self.refuse(path, name, true, problem),
        }
    }

    /// Stops the walk at a limit of the whole load.
    fn stop(&mut self, path: &[String], what: &'static str, limit: u64, inside: bool) {
        self.stopped = true;
        self.refuse(path, "", inside, SkillProblem::LoadLimit { what, limit });
    }

    /// The skills of the walk: each skill directory whose files were all read.
    fn finish(mut self, prefix: &[String]) -> LoadedSkills {
        let mut skills = Vec::new();
        let skill_dirs = std::mem::take(&mut self.skill_dirs);
        for dir in skill_dirs {
            let shown = dir.join("/");
            if let Some(refused) = self.refused.iter().find(|r| r.starts_with(&dir)) {
                let problem = SkillProblem::RefusedFile(refused.join("/"));
                self.diagnostics.push(SkillDiagnostic { path: shown, problem });
                continue;
            }
            if skills.len() >= self.options.max_skills {
                let limit = u64::try_from(self.options.max_skills).unwrap_or(u64::MAX);
                let problem = SkillProblem::LoadLimit { what: "skills", limit };
                self.diagnostics.push(SkillDiagnostic { path: shown, problem });
                continue;
            }
            match self.skill(&dir, prefix) {
                Ok(skill) => skills.push(skill),
                Err(problem) => self.diagnostics.push(SkillDiagnostic { path: shown, problem }),
            }
        }
        LoadedSkills { skills, diagnostics: self.diagnostics }
    }

    fn skill(&self, dir: &[String], prefix: &[String]) -> Result<SkillBundle, SkillProblem> {
        let below: Vec<(&Vec<String>, &Vec<u8>)> =
            self.files.range(dir.to_vec()..).take_while(|(k, _)| k.starts_with(dir)).collect();
        let total =
            below.iter().map(|(_, b)| super::bundle::len(b)).fold(0u64, u64::saturating_add);
        let (files, bytes) = (self.options.max_skill_files, self.options.max_skill_bytes);
        if below.len() > files || total > bytes {
            return Err(SkillProblem::SkillTooLarge { files, bytes });
        }
        let mut manifest_key = dir.to_vec();
        manifest_key.push(SKILL_MANIFEST.to_owned());
        let manifest = self
            .files
            .get(&manifest_key)
            .ok_or(SkillProblem::RefusedFile(manifest_key.join("/")))?;
        let manifest = std::str::from_utf8(manifest).map_err(|_| SkillProblem::NotUtf8)?;
        let path: Vec<&str> = prefix.iter().chain(dir).map(String::as_str).collect();
        if path.is_empty() {
            // A SKILL.md at the root, without a prefix, has no skill path.
            return Err(SkillProblem::Invalid(SkillError::InvalidPath(String::new())));
        }
        let mut skill =
            SkillBundle::new(&path.join("/"), manifest).map_err(SkillProblem::Invalid)?;
        for (key, bytes) in below {
            let relative = key[dir.len()..].join("/");
            if relative == SKILL_MANIFEST {
                continue;
            }
            skill = skill.file(&relative, bytes.clone()).map_err(SkillProblem::Invalid)?;
        }
        Ok(skill)
    }
}

/// Why a file was not read.
enum Refusal {
    /// The load's byte budget is spent.
    Budget,
    /// The file itself was refused.
    Problem(SkillProblem),
}

fn open_problem(e: io::Error) -> SkillProblem {
    // O_NOFOLLOW on a symlink fails with ELOOP (or ENOTDIR for a directory open on some
    // systems): report it as the symlink it is.
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error()
        && code == rustix::io::Errno::LOOP.raw_os_error()
    {
        return SkillProblem::Symlink;
    }
    SkillProblem::Io(e)
}

/// Reads the regular file `name` of `dir`: at most `limit` bytes (and at most `remaining`,
/// the load's budget), never through a symlink, never blocking on a FIFO.
fn read_file(dir: &Dir, name: &str, limit: u64, remaining: u64) -> Result<Vec<u8>, Refusal> {
    let mut options = OpenOptions::new();
    options.read(true);
    options.follow(FollowSymlinks::No);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        let nonblock = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap_or(0);
        options.custom_flags(nonblock);
    }
    let problem = |p| Refusal::Problem(p);
    let file = dir.open_with(name, &options).map_err(|e| problem(open_problem(e)))?;
    // What was opened, checked on the handle itself.
    let metadata = file.metadata().map_err(|e| problem(SkillProblem::Io(e)))?;
    if !metadata.is_file() {
        return Err(problem(SkillProblem::NotRegular));
    }
    if metadata.len() > limit {
        return Err(problem(SkillProblem::TooLarge { limit }));
    }
    if metadata.len() > remaining {
        return Err(Refusal::Budget);
    }
    let cap = limit.min(remaining);
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| problem(SkillProblem::Io(e)))?;
    // The file grew since it was measured.
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > cap {
        return Err(if cap < limit {
            Refusal::Budget
        } else {
            problem(SkillProblem::TooLarge { limit })
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::fs;

    use super::*;

    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let n = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let root =
                std::env::temp_dir().join(format!("mcpl-skills-{tag}-{}-{n}", std::process::id()));
            fs::create_dir_all(&root).unwrap();
            Tree(root)
        }

        fn skill(&self, path: &str, name: &str) -> &Tree {
            let manifest = match path {
                "" => "SKILL.md".to_owned(),
                path => format!("{path}/SKILL.md"),
            };
            self.write(
                &manifest,
                &format!("---\nname: {name}\ndescription: The {name} skill\n---\nBody\n"),
            )
        }

        fn write(&self, path: &str, text: &str) -> &Tree {
            assert!(!path.starts_with('/'), "relative to the tree");
            let full = self.0.join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, text).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn kinds(loaded: &LoadedSkills) -> Vec<(String, SkillProblemKind)> {
        loaded.diagnostics.iter().map(|d| (d.path.clone(), d.problem.kind())).collect()
    }

    #[test]
    fn skills_and_their_files_load_in_path_order() {
        let tree = Tree::new("order");
        tree.skill("b", "b")
            .skill("acme/a", "a")
            .write("acme/a/ref/x.md", "x")
            .write("loose.txt", "not a skill");
        tree.write(".git/config", "hidden").write("acme/a/.DS_Store", "hidden");
        let loaded = load_dir(&tree.0, &LoadOptions::default()).unwrap();
        let uris: Vec<&str> = loaded.skills.iter().map(SkillBundle::uri).collect();
        assert_eq!(uris, ["skill://acme/a/SKILL.md", "skill://b/SKILL.md"]);
        assert!(loaded.diagnostics.is_empty(), "{:?}", kinds(&loaded));
        let a = loaded.skills[0].entry();
        assert!(a.file("skill://acme/a/ref/x.md").is_some());
        a.check().unwrap();
    }

    #[test]
    fn nested_skills_are_files_of_the_enclosing_one() {
        let tree = Tree::new("nested");
        tree.skill("outer", "outer").skill("outer/inner", "inner");
        let loaded = load_dir(&tree.0, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.skills.len(), 2);
        assert!(loaded.skills[0].entry().file("skill://outer/inner/SKILL.md").is_some());
    }

    #[test]
    fn bad_skills_are_left_out_with_a_diagnostic() {
        let tree = Tree::new("bad");
        tree.skill("good", "good")
            .skill("mismatch", "other-name")
            .write("nofm/SKILL.md", "no frontmatter")
            .skill("Upper", "upper")
            .skill("spaced", "spaced")
            .write("spaced/has space.md", "x");
        let loaded = load_dir(&tree.0, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.skills.len(), 1);
        let kinds = kinds(&loaded);
        assert!(kinds.contains(&("mismatch".into(), SkillProblemKind::Invalid)), "{kinds:?}");
        assert!(kinds.contains(&("nofm".into(), SkillProblemKind::Invalid)), "{kinds:?}");
        assert!(kinds.contains(&("Upper".into(), SkillProblemKind::Invalid)), "{kinds:?}");
        assert!(kinds.contains(&("spaced/has space.md".into(), SkillProblemKind::InvalidName)));
        assert!(kinds.contains(&("spaced".into(), SkillProblemKind::RefusedFile)));
    }

    #[test]
    fn limits_are_enforced() {
        let tree = Tree::new("limits");
        tree.skill("big", "big").write("big/blob.txt", &"x".repeat(2000));
        tree.skill("deep", "deep").write("deep/1/2/3/4/f", "x");
        tree.skill("many", "many").write("many/a", "1").write("many/b", "2");
        let options = LoadOptions::default().max_file_bytes(1000).max_depth(3).max_skill_files(2);
        let loaded = load_dir(&tree.0, &options).unwrap();
        let kinds = kinds(&loaded);
        assert!(loaded.skills.is_empty(), "{kinds:?}");
        assert!(kinds.contains(&("big/blob.txt".into(), SkillProblemKind::TooLarge)), "{kinds:?}");
        assert!(kinds.contains(&("deep/1/2/3".into(), SkillProblemKind::TooDeep)), "{kinds:?}");
        assert!(kinds.contains(&("many".into(), SkillProblemKind::SkillTooLarge)), "{kinds:?}");

        let budget = LoadOptions::default().max_total_bytes(10);
        let loaded = load_dir(&tree.0, &budget).unwrap();
        assert!(loaded.diagnostics.iter().any(|d| d.problem.kind() == SkillProblemKind::LoadLimit));
        let entries = LoadOptions::default().max_entries(2);
        let loaded = load_dir(&tree.0, &entries).unwrap();
        assert!(loaded.skills.is_empty());
        assert!(loaded.diagnostics.iter().any(|d| d.problem.kind() == SkillProblemKind::LoadLimit));
    }

    #[test]
    fn prefixes_and_root_skills() {
        let tree = Tree::new("prefix");
        tree.skill("", "team").skill("sub", "sub");
        let loaded = load_dir(&tree.0, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.skills.len(), 1, "a root SKILL.md needs a prefix");
        let loaded = load_dir(&tree.0, &LoadOptions::default().prefix("acme/team")).unwrap();
        let uris: Vec<&str> = loaded.skills.iter().map(SkillBundle::uri).collect();
        assert_eq!(uris, ["skill://acme/team/SKILL.md", "skill://acme/team/sub/SKILL.md"]);
        let e = load_dir(&tree.0, &LoadOptions::default().prefix("../x")).unwrap_err();
        assert_eq!(e.kind(), LoadErrorKind::Prefix);
        let e = load_dir(tree.0.join("missing"), &LoadOptions::default()).unwrap_err();
        assert_eq!(e.kind(), LoadErrorKind::Root);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_and_special_files_are_refused() {
        use std::os::unix::fs::symlink;
        let tree = Tree::new("links");
        let outside = Tree::new("outside");
        outside.write("secret.txt", "top secret").skill("evil", "evil");
        tree.skill("good", "good").skill("linked", "linked");
        symlink(outside.0.join("secret.txt"), tree.0.join("linked/secret.txt")).unwrap();
        symlink(outside.0.join("evil"), tree.0.join("evil")).unwrap();
        symlink(outside.0.join("secret.txt"), tree.0.join("good-link.md")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            tree.0.join("good/pipe"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let loaded = load_dir(&tree.0, &LoadOptions::default()).unwrap();
        let kinds = kinds(&loaded);
        assert!(loaded.skills.is_empty(), "{kinds:?}");
        assert!(kinds.contains(&("linked/secret.txt".into(), SkillProblemKind::Symlink)));
        assert!(kinds.contains(&("evil".into(), SkillProblemKind::Symlink)));
        assert!(kinds.contains(&("good-link.md".into(), SkillProblemKind::Symlink)));
        assert!(kinds.contains(&("good/pipe".into(), SkillProblemKind::NotRegular)), "{kinds:?}");
    }

    #[cfg(unix)]
    #[test]
    fn files_swapped_for_symlinks_or_fifos_after_the_listing_are_refused_at_open() {
        use std::os::unix::fs::symlink;
        let tree = Tree::new("swap");
        let outside = Tree::new("swap-outside");
        outside.write("secret.txt", "top secret");
        tree.skill("s", "s");
        let dir = Dir::open_ambient_dir(&tree.0, ambient_authority()).unwrap();
        // As if swapped between the listing and the open.
        symlink(outside.0.join("secret.txt"), tree.0.join("s/swapped")).unwrap();
        let sub = dir.open_dir_nofollow("s").unwrap();
        assert!(matches!(
            read_file(&sub, "swapped", 1000, 1000),
            Err(Refusal::Problem(SkillProblem::Symlink))
        ));
        symlink(&outside.0, tree.0.join("s/dir-link")).unwrap();
        assert!(sub.open_dir_nofollow("dir-link").is_err());
        rustix::fs::mknodat(
            rustix::fs::CWD,
            tree.0.join("s/fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        // Non-blocking: refused at once rather than waiting for a writer.
        assert!(matches!(
            read_file(&sub, "fifo", 1000, 1000),
            Err(Refusal::Problem(SkillProblem::NotRegular))
        ));
    }
}
