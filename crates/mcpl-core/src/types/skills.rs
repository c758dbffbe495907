//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): servers publish Agent
//! Skills, directories of files led by a `SKILL.md`, as resources, and describe each with a
//! [`Skill`] entry (`skills/list`, `skills/get`); `resources/directory/read` lists a directory.
//!
//! A skill's files are read with `resources/read` under URIs of the form
//! `skill://<skill-path>/<file-path>`, where the last segment of `<skill-path>` is the skill's
//! name. An entry carries the `SKILL.md` frontmatter as JSON and the digest and size of every
//! file, so a host can check what it reads ([`SkillResource::verify`],
//! [`SkillFrontmatter::verify_document`]).
//!
//! ```
//! use mcpl_core::types::{ContentDigest, Skill, SkillFrontmatter, SkillResource, SkillResources};
//!
//! let text = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\n# PDF\n";
//! let frontmatter = SkillFrontmatter::parse_document(text).unwrap();
//! assert_eq!(frontmatter.name, "pdf-processing");
//!
//! let uri = "skill://pdf-processing/SKILL.md";
//! let skill = Skill::new(uri, frontmatter, SkillResources::Files(vec![SkillResource::of(uri, text.as_bytes())]));
//! assert_eq!(skill.root(), Some("skill://pdf-processing"));
//! assert_eq!(skill.resolve("references/FORMS.md").as_deref(), Some("skill://pdf-processing/references/FORMS.md"));
//! assert!(skill.file(uri).unwrap().verify(text.as_bytes()).is_ok());
//! assert_eq!(ContentDigest::of(b"").to_string().len(), "sha256:".len() + 64);
//! ```

use derive_setters::Setters;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::meta::Meta;
use super::resources::Resource;
use super::result::{CacheScope, ResultType, impl_result_type};

/// The identifier of the skills extension, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The file name of the manifest at the root of every skill.
pub const SKILL_MANIFEST: &str = "SKILL.md";

/// The URI scheme servers should use for skill files.
pub const SKILL_SCHEME: &str = "skill";

/// The MIME type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The MIME type of a `SKILL.md` resource.
pub const SKILL_MANIFEST_MIME_TYPE: &str = "text/markdown";

/// Every conforming host accepts skills with up to this many files (`SKILL.md` included);
/// servers should not serve larger ones.
pub const MAX_SKILL_FILES: usize = 512;

/// Every conforming host accepts skills whose files add up to this many bytes (16 MiB);
/// servers should not serve larger ones.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The longest frontmatter block [`SkillFrontmatter::parse_document`] reads (64 KiB): a longer
/// one is refused before any YAML is parsed.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// The longest `description` the Agent Skills specification allows, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The settings a server declares under `capabilities.extensions["io.modelcontextprotocol/skills"]`.
///
/// An empty object declares the extension with no optional feature.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::SkillsSettings;
///
/// let settings: SkillsSettings = serde_json::from_value(serde_json::json!({"directoryRead": true})).unwrap();
/// assert!(settings.directory_read());
/// assert!(!SkillsSettings::default().directory_read());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SkillsSettings {
    /// Whether the server implements `resources/directory/read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_read: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SkillsSettings {
    /// Whether `directoryRead` is `true`.
    pub fn directory_read(&self) -> bool {
        self.directory_read == Some(true)
    }
}

/// A SHA-256 digest of a file's raw bytes, written `sha256:<64 lowercase hex digits>`.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::ContentDigest;
///
/// let digest = ContentDigest::of(b"hello");
/// let text = digest.to_string();
/// assert!(text.starts_with("sha256:2cf24dba"));
/// assert_eq!(text.parse::<ContentDigest>().unwrap(), digest);
/// assert!("sha256:2CF2".parse::<ContentDigest>().is_err());
/// assert!("md5:abc".parse::<ContentDigest>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentDigest([u8; 32]);

impl ContentDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentDigest(Sha256::digest(bytes).into())
    }

    /// The 32 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A digest that is not `sha256:` followed by 64 lowercase hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a digest is `sha256:` followed by 64 lowercase hexadecimal digits")]
pub struct ContentDigestError;

impl FromStr for ContentDigest {
    type Err = ContentDigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.strip_prefix("sha256:").ok_or(ContentDigestError)?.as_bytes();
        if hex.len() != 64 {
            return Err(ContentDigestError);
        }
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(ContentDigestError),
        };
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
        }
        Ok(ContentDigest(bytes))
    }
}

impl Serialize for ContentDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentDigest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::types::serde_util::read_str(deserializer, str::parse)
    }
}

/// Why content read for a skill does not match its entry: the host must not use it.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{SkillResource, SkillVerificationError, SkillVerificationErrorKind};
///
/// let file = SkillResource::of("skill://a/SKILL.md", b"original");
/// let err = file.verify(b"tampered").unwrap_err();
/// assert_eq!(err.kind(), SkillVerificationErrorKind::DigestMismatch);
/// let err = file.verify(b"longer than before").unwrap_err();
/// assert!(matches!(err, SkillVerificationError::SizeMismatch { expected: 8, actual: 18, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillVerificationError {
    /// The content's length differs from the entry's `size`.
    #[error("{uri}: {actual} bytes read, the entry says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's `size`.
        expected: u64,
        /// The length read.
        actual: u64,
    },
    /// The content's SHA-256 digest differs from the entry's `digest`.
    #[error("{uri}: the content does not match the entry's digest")]
    DigestMismatch {
        /// The file.
        uri: String,
    },
    /// The `SKILL.md` read has no valid frontmatter.
    #[error("the SKILL.md read has no valid frontmatter")]
    Frontmatter(#[source] FrontmatterError),
    /// The frontmatter of the `SKILL.md` read differs from the entry's `frontmatter`.
    #[error("the SKILL.md frontmatter differs from the entry's in {field:?}")]
    FrontmatterMismatch {
        /// The first field that differs.
        field: String,
    },
    /// The file is not listed in the entry's `resources` (or the entry is `dynamic`, which
    /// lists none).
    #[error("{uri} is not a file of the skill's entry")]
    Unlisted {
        /// The file.
        uri: String,
    },
}

/// What kind of [`SkillVerificationError`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillVerificationErrorKind {
    /// [`SkillVerificationError::SizeMismatch`].
    SizeMismatch,
    /// [`SkillVerificationError::DigestMismatch`].
    DigestMismatch,
    /// [`SkillVerificationError::Frontmatter`].
    Frontmatter,
    /// [`SkillVerificationError::FrontmatterMismatch`].
    FrontmatterMismatch,
    /// [`SkillVerificationError::Unlisted`].
    Unlisted,
}

impl SkillVerificationError {
    /// What kind of failure this is.
    pub fn kind(&self) -> SkillVerificationErrorKind {
        match self {
            SkillVerificationError::SizeMismatch { .. } => SkillVerificationErrorKind::SizeMismatch,
            SkillVerificationError::DigestMismatch { .. } => {
                SkillVerificationErrorKind::DigestMismatch
            }
            SkillVerificationError::Frontmatter(_) => SkillVerificationErrorKind::Frontmatter,
            SkillVerificationError::FrontmatterMismatch { .. } => {
                SkillVerificationErrorKind::FrontmatterMismatch
            }
            SkillVerificationError::Unlisted { .. } => SkillVerificationErrorKind::Unlisted,
        }
    }
}

/// One file of a skill: its URI, and the digest and size of its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// The SHA-256 digest of the raw bytes.
    pub digest: ContentDigest,
    /// The length of the raw bytes.
    pub size: u64,
}

impl SkillResource {
    /// A `SkillResource` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(uri: impl Into<String>, digest: ContentDigest, size: u64) -> Self {
        Self { uri: uri.into(), digest, size }
    }
}

impl SkillResource {
    /// The entry describing `bytes` served at `uri`.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> Self {
        SkillResource {
            uri: uri.into(),
            digest: ContentDigest::of(bytes),
            size: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        }
    }

    /// Checks that `bytes` are what this entry describes: the size first, then the digest.
    ///
    /// # Errors
    ///
    /// [`SkillVerificationError::SizeMismatch`] or [`SkillVerificationError::DigestMismatch`].
    pub fn verify(&self, bytes: &[u8]) -> Result<(), SkillVerificationError> {
        let actual = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if actual != self.size {
            return Err(SkillVerificationError::SizeMismatch {
                uri: self.uri.clone(),
                expected: self.size,
                actual,
            });
        }
        if ContentDigest::of(bytes) != self.digest {
            return Err(SkillVerificationError::DigestMismatch { uri: self.uri.clone() });
        }
        Ok(())
    }
}

/// A skill's files: every file, `SKILL.md` included, or `"dynamic"` for a skill generated such
/// that no stable digests exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// The complete list of the skill's files.
    Files(Vec<SkillResource>),
    /// The skill's content is generated; it publishes no file list.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillResource>),
            Word(String),
        }
        match Wire::deserialize(deserializer)? {
            Wire::Files(files) => Ok(SkillResources::Files(files)),
            Wire::Word(word) if word == "dynamic" => Ok(SkillResources::Dynamic),
            Wire::Word(word) => Err(serde::de::Error::custom(format_args!(
                "resources is an array or \"dynamic\", not {word:?}"
            ))),
        }
    }
}

/// Why a `SKILL.md` frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The document does not start with a `---` line, or the block is not closed by one.
    #[error("SKILL.md does not start with a `---` delimited frontmatter block")]
    Missing,
    /// The block is longer than [`MAX_FRONTMATTER_BYTES`].
    #[error("the frontmatter is longer than {MAX_FRONTMATTER_BYTES} bytes")]
    TooLarge,
    /// The block is not YAML, or not a mapping with string keys.
    #[error("the frontmatter is not a YAML mapping: {0}")]
    Yaml(String),
    /// `name` is missing, not a string, or breaks the naming rules (see [`is_valid_skill_name`]).
    #[error(
        "the frontmatter name is missing or invalid (1-64 lowercase letters, digits and single inner hyphens)"
    )]
    InvalidName,
    /// `description` is missing, empty, not a string, or longer than
    /// [`MAX_DESCRIPTION_CHARS`].
    #[error(
        "the frontmatter description is missing, empty or longer than {MAX_DESCRIPTION_CHARS} characters"
    )]
    InvalidDescription,
}

/// What kind of [`FrontmatterError`] happened, stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrontmatterErrorKind {
    /// [`FrontmatterError::Missing`].
    Missing,
    /// [`FrontmatterError::TooLarge`].
    TooLarge,
    /// [`FrontmatterError::Yaml`].
    Yaml,
    /// [`FrontmatterError::InvalidName`].
    InvalidName,
    /// [`FrontmatterError::InvalidDescription`].
    InvalidDescription,
}

impl FrontmatterError {
    /// What kind of failure this is.
    pub fn kind(&self) -> FrontmatterErrorKind {
        match self {
            FrontmatterError::Missing => FrontmatterErrorKind::Missing,
            FrontmatterError::TooLarge => FrontmatterErrorKind::TooLarge,
            FrontmatterError::Yaml(_) => FrontmatterErrorKind::Yaml,
            FrontmatterError::InvalidName => FrontmatterErrorKind::InvalidName,
            FrontmatterError::InvalidDescription => FrontmatterErrorKind::InvalidDescription,
        }
    }
}

/// A skill's `SKILL.md` YAML frontmatter as a JSON object: `name` and `description`, and every
/// other field the author wrote, unchanged.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{FrontmatterErrorKind, SkillFrontmatter};
///
/// let doc = "---\nname: refunds\ndescription: Process refunds\nlicense: MIT\nmetadata:\n  version: \"2\"\n---\nBody\n";
/// let fm = SkillFrontmatter::parse_document(doc).unwrap();
/// assert_eq!((fm.name.as_str(), fm.description.as_str()), ("refunds", "Process refunds"));
/// assert_eq!(fm.other["license"], "MIT");
/// assert_eq!(fm.other["metadata"]["version"], "2");
///
/// let bad = SkillFrontmatter::parse_document("---\nname: Not_Valid\ndescription: x\n---\n").unwrap_err();
/// assert_eq!(bad.kind(), FrontmatterErrorKind::InvalidName);
/// assert_eq!(SkillFrontmatter::parse_document("# no frontmatter").unwrap_err().kind(), FrontmatterErrorKind::Missing);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SkillFrontmatter {
    /// The skill's name.
    pub name: String,
    /// What the skill does and when to use it.
    pub description: String,
    /// Every other field, unchanged (`license`, `metadata`, `allowed-tools`...).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl SkillFrontmatter {
    /// A frontmatter with only `name` and `description`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        SkillFrontmatter { name: name.into(), description: description.into(), other: Map::new() }
    }

    /// Reads the frontmatter block at the start of a `SKILL.md` (a `---` line, YAML, a `---`
    /// line; a leading byte order mark is skipped) and checks `name` and `description`.
    ///
    /// # Errors
    ///
    /// A [`FrontmatterError`]; YAML aliases and nesting are bounded by the parser, and the
    /// block by [`MAX_FRONTMATTER_BYTES`].
    pub fn parse_document(document: &str) -> Result<Self, FrontmatterError> {
        let map = frontmatter_object(document)?;
        Self::from_object(map)
    }

    /// A frontmatter from its JSON object, checking `name` and `description`.
    ///
    /// # Errors
    ///
    /// [`FrontmatterError::InvalidName`] or [`FrontmatterError::InvalidDescription`].
    pub fn from_object(mut object: Map<String, Value>) -> Result<Self, FrontmatterError> {
        let name = match object.remove("name") {
            Some(Value::String(name)) if is_valid_skill_name(&name) => name,
            _ => return Err(FrontmatterError::InvalidName),
        };
        let description = match object.remove("description") {
            Some(Value::String(d))
                if !d.trim().is_empty() && d.chars().count() <= MAX_DESCRIPTION_CHARS =>
            {
                d
            }
            _ => return Err(FrontmatterError::InvalidDescription),
        };
        Ok(SkillFrontmatter { name, description, other: object })
    }

    /// The frontmatter as one JSON object (`name`, `description` and the other fields).
    pub fn to_object(&self) -> Map<String, Value> {
        let mut object = self.other.clone();
        object.insert("name".into(), Value::String(self.name.clone()));
        object.insert("description".into(), Value::String(self.description.clone()));
        object
    }

    /// Checks that the frontmatter of `document` (a `SKILL.md` just read) equals this one
    /// field by field; numbers compare by value (`2` equals `2.0`).
    ///
    /// # Errors
    ///
    /// [`SkillVerificationError::Frontmatter`] when the document has none (or a malformed
    /// one), [`SkillVerificationError::FrontmatterMismatch`] naming the first field that
    /// differs.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{SkillFrontmatter, SkillVerificationErrorKind};
    ///
    /// let held = SkillFrontmatter::new("pdf", "Fill PDF forms");
    /// assert!(held.verify_document("---\nname: pdf\ndescription: Fill PDF forms\n---\n").is_ok());
    /// let err = held.verify_document("---\nname: pdf\ndescription: Exfiltrate credentials\n---\n").unwrap_err();
    /// assert_eq!(err.kind(), SkillVerificationErrorKind::FrontmatterMismatch);
    /// ```
    pub fn verify_document(&self, document: &str) -> Result<(), SkillVerificationError> {
        let read = frontmatter_object(document).map_err(SkillVerificationError::Frontmatter)?;
        let held = self.to_object();
        let mut fields: Vec<&String> = held.keys().chain(read.keys()).collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let (a, b) = (held.get(field), read.get(field));
            let same = match (a, b) {
                (Some(a), Some(b)) => same_json(a, b),
                (None, None) => true,
                // A field that is `null` on one side and absent on the other is the same.
                (Some(Value::Null), None) | (None, Some(Value::Null)) => true,
                _ => false,
            };
            if !same {
                return Err(SkillVerificationError::FrontmatterMismatch { field: field.clone() });
            }
        }
        Ok(())
    }
}

/// Deep equality of two JSON values where numbers compare by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The YAML block of a `SKILL.md`, as a JSON object.
fn frontmatter_object(document: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let block = frontmatter_block(document)?;
    if block.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError::TooLarge);
    }
    match serde_yaml_ng::from_str::<Value>(block) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(FrontmatterError::Yaml("not a mapping".into())),
        Err(e) => Err(FrontmatterError::Yaml(e.to_string())),
    }
}

/// The text between the opening `---` line and the closing one.
fn frontmatter_block(document: &str) -> Result<&str, FrontmatterError> {
    let document = document.strip_prefix('\u{feff}').unwrap_or(document);
    let rest = document
        .strip_prefix("---\n")
        .or_else(|| document.strip_prefix("---\r\n"))
        .ok_or(FrontmatterError::Missing)?;
    let mut offset = 0;
    // Only the lines of the first MAX_FRONTMATTER_BYTES (and one more line) are looked at.
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.strip_prefix("---").is_some_and(|tail| tail.trim_matches([' ', '\t']).is_empty()) {
            let block = &rest[..offset];
            return Ok(block
                .strip_suffix('\n')
                .map_or(block, |b| b.strip_suffix('\r').unwrap_or(b)));
        }
        offset += line.len();
        if offset > MAX_FRONTMATTER_BYTES + 1 {
            return Err(FrontmatterError::TooLarge);
        }
    }
    Err(FrontmatterError::Missing)
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase ASCII
/// letters, digits and hyphens, not starting or ending with a hyphen, no two hyphens in a row.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::is_valid_skill_name;
///
/// assert!(is_valid_skill_name("pdf-processing"));
/// assert!(is_valid_skill_name("a"));
/// for bad in ["", "-a", "a-", "a--b", "PDF", "a_b", "a.b", &"a".repeat(65)] {
///     assert!(!is_valid_skill_name(bad), "{bad}");
/// }
/// ```
pub fn is_valid_skill_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=64).contains(&bytes.len())
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
        && !name.contains("--")
}

/// The skill name a `SKILL.md` URI ends with (`skill://acme/refunds/SKILL.md` → `refunds`);
/// `None` for a URI that does not end in `/<name>/SKILL.md` after its scheme.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::skill_name_of;
///
/// assert_eq!(skill_name_of("skill://acme/billing/refunds/SKILL.md"), Some("refunds"));
/// assert_eq!(skill_name_of("skill://SKILL.md"), None);
/// assert_eq!(skill_name_of("skill://a/README.md"), None);
/// ```
pub fn skill_name_of(uri: &str) -> Option<&str> {
    let (_, path) = uri.split_once("://")?;
    let dir = path.strip_suffix(SKILL_MANIFEST)?.strip_suffix('/')?;
    let name = dir.rsplit('/').next()?;
    (!name.is_empty()).then_some(name)
}

/// The entry for one skill, as `skills/list` and `skills/get` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Skill {
    /// The resource URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter.
    pub frontmatter: SkillFrontmatter,
    /// Every file of the skill, or `"dynamic"`.
    pub resources: SkillResources,
}

impl Skill {
    /// An entry.
    pub fn new(
        uri: impl Into<String>,
        frontmatter: SkillFrontmatter,
        resources: SkillResources,
    ) -> Self {
        Skill { uri: uri.into(), frontmatter, resources }
    }

    /// The skill's name (`frontmatter.name`).
    pub fn name(&self) -> &str {
        &self.frontmatter.name
    }

    /// The skill's root directory: the URI without `/SKILL.md`; `None` when the URI does not
    /// end so.
    pub fn root(&self) -> Option<&str> {
        self.uri.strip_suffix(SKILL_MANIFEST)?.strip_suffix('/')
    }

    /// The listed file at `uri`, if the entry lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The URI of a file given relative to the skill's root (`references/FORMS.md`), as a
    /// filesystem path would resolve (`.` and `..` segments are resolved, and may not climb out
    /// of the root); an absolute URI (one with `://`) is returned as it is. `None` for a path
    /// that leaves the root, or a skill without a root.
    pub fn resolve(&self, path: &str) -> Option<String> {
        if path.contains("://") {
            return Some(path.to_owned());
        }
        let root = self.root()?;
        let mut segments: Vec<&str> = Vec::new();
        for segment in path.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    segments.pop()?;
                }
                s => segments.push(s),
            }
        }
        if segments.is_empty() {
            return None;
        }
        Some(format!("{root}/{}", segments.join("/")))
    }

    /// Checks the entry itself: its URI ends in `/<name>/SKILL.md` with the frontmatter's
    /// name, and a file list names `SKILL.md`, names every file once, keeps within the skill's
    /// directory, and stays within [`MAX_SKILL_FILES`] and [`MAX_SKILL_BYTES`].
    ///
    /// # Errors
    ///
    /// A description of the first problem.
    pub fn check(&self) -> Result<(), String> {
        if skill_name_of(&self.uri) != Some(self.name()) {
            return Err(format!("{}: the URI does not end in /{}/SKILL.md", self.uri, self.name()));
        }
        let SkillResources::Files(files) = &self.resources else { return Ok(()) };
        let root = self.root().unwrap_or_default();
        if !files.iter().any(|f| f.uri == self.uri) {
            return Err(format!("{}: the file list does not name SKILL.md", self.uri));
        }
        let mut seen = std::collections::HashSet::new();
        let mut total: u64 = 0;
        for file in files {
            if !seen.insert(file.uri.as_str()) {
                return Err(format!("{}: {} is listed twice", self.uri, file.uri));
            }
            if !file.uri.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')) {
                return Err(format!("{}: {} is outside the skill", self.uri, file.uri));
            }
            total = total.saturating_add(file.size);
        }
        if files.len() > MAX_SKILL_FILES {
            return Err(format!("{}: {} files (at most {MAX_SKILL_FILES})", self.uri, files.len()));
        }
        if total > MAX_SKILL_BYTES {
            return Err(format!("{}: {total} bytes (at most {MAX_SKILL_BYTES})", self.uri));
        }
        Ok(())
    }
}

/// The answer to `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListSkillsResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The entries of this page.
    pub skills: Vec<Skill>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct GetSkillRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GetSkillRequestParams {
    /// Params asking for the skill whose `SKILL.md` is at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        GetSkillRequestParams { meta: None, uri: uri.into(), extra: Map::new() }
    }
}

/// The answer to `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct GetSkillResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The skill's entry.
    pub skill: Skill,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GetSkillResult {
    /// The result carrying `skill`.
    pub fn new(skill: Skill) -> Self {
        GetSkillResult {
            meta: None,
            result_type: None,
            skill,
            ttl_ms: None,
            cache_scope: None,
            extra: Map::new(),
        }
    }
}

/// Params of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ReadDirectoryRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The directory's URI (no trailing slash).
    pub uri: String,
    /// Where to continue listing; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReadDirectoryRequestParams {
    /// Params listing the directory at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadDirectoryRequestParams { meta: None, uri: uri.into(), cursor: None, extra: Map::new() }
    }
}

/// The answer to `resources/directory/read`: the directory's direct children (subdirectories
/// with the MIME type [`DIRECTORY_MIME_TYPE`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ReadDirectoryResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The children of this page.
    pub resources: Vec<Resource>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(ListSkillsResult, GetSkillResult, ReadDirectoryResult);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const DOC: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF\n";

    fn entry() -> Skill {
        let uri = "skill://pdf-processing/SKILL.md";
        Skill::new(
            uri,
            SkillFrontmatter::parse_document(DOC).unwrap(),
            SkillResources::Files(vec![
                SkillResource::of(uri, DOC.as_bytes()),
                SkillResource::of("skill://pdf-processing/references/FORMS.md", b"forms"),
            ]),
        )
    }

    #[test]
    fn entries_round_trip_in_the_wire_shape() {
        let skill = entry();
        let wire = serde_json::to_value(&skill).unwrap();
        assert_eq!(wire["frontmatter"]["name"], "pdf-processing");
        assert!(wire["resources"][0]["digest"].as_str().unwrap().starts_with("sha256:"));
        assert_eq!(wire["resources"][1]["size"], 5);
        assert_eq!(serde_json::from_value::<Skill>(wire).unwrap(), skill);
        let dynamic: Skill = serde_json::from_value(json!({
            "uri": "skill://daily/SKILL.md",
            "frontmatter": {"name": "daily", "description": "d"},
            "resources": "dynamic"
        }))
        .unwrap();
        assert_eq!(dynamic.resources, SkillResources::Dynamic);
        assert_eq!(serde_json::to_value(&dynamic).unwrap()["resources"], "dynamic");
        for bad in [json!("static"), json!(null), json!({})] {
            let value = json!({"uri": "u", "frontmatter": {"name": "a", "description": "d"}, "resources": bad});
            assert!(serde_json::from_value::<Skill>(value).is_err());
        }
        let missing = json!({"uri": "u", "frontmatter": {"name": "a", "description": "d"}});
        assert!(serde_json::from_value::<Skill>(missing).is_err());
    }

    #[test]
    fn entries_check_their_own_rules() {
        entry().check().unwrap();
        let mut wrong_name = entry();
        wrong_name.frontmatter.name = "other".into();
        assert!(wrong_name.check().is_err());
        let mut outside = entry();
        if let SkillResources::Files(files) = &mut outside.resources {
            files.push(SkillResource::of("skill://pdf-processing-evil/x", b""));
        }
        assert!(outside.check().unwrap_err().contains("outside"));
        let mut twice = entry();
        if let SkillResources::Files(files) = &mut twice.resources {
            files.push(files[1].clone());
        }
        assert!(twice.check().unwrap_err().contains("twice"));
        let mut no_manifest = entry();
        if let SkillResources::Files(files) = &mut no_manifest.resources {
            files.remove(0);
        }
        assert!(no_manifest.check().is_err());
    }

    #[test]
    fn relative_paths_resolve_within_the_root() {
        let skill = entry();
        assert_eq!(
            skill.resolve("./references/../references/FORMS.md").as_deref(),
            Some("skill://pdf-processing/references/FORMS.md")
        );
        assert_eq!(skill.resolve("../other/SKILL.md"), None);
        assert_eq!(skill.resolve(""), None);
        assert_eq!(skill.resolve("skill://x/y").as_deref(), Some("skill://x/y"));
    }

    #[test]
    fn frontmatter_blocks_are_found_and_bounded() {
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: d\r\n---  \r\nbody";
        assert_eq!(SkillFrontmatter::parse_document(crlf).unwrap().name, "a");
        for missing in ["", "name: a\n", "---\nname: a\n", " ---\nname: a\n---\n"] {
            let e = SkillFrontmatter::parse_document(missing).unwrap_err();
            assert_eq!(e.kind(), FrontmatterErrorKind::Missing, "{missing:?}");
        }
        let long = format!("---\nname: a\ndescription: d\nx: {}\n---\n", "y".repeat(70_000));
        assert_eq!(
            SkillFrontmatter::parse_document(&long).unwrap_err().kind(),
            FrontmatterErrorKind::TooLarge
        );
        let list = "---\n- a\n- b\n---\n";
        assert_eq!(
            SkillFrontmatter::parse_document(list).unwrap_err().kind(),
            FrontmatterErrorKind::Yaml
        );
        let no_description = "---\nname: a\n---\n";
        assert_eq!(
            SkillFrontmatter::parse_document(no_description).unwrap_err().kind(),
            FrontmatterErrorKind::InvalidDescription
        );
    }

    #[test]
    fn alias_bombs_are_refused_not_expanded() {
        let mut doc =
            String::from("---\nname: a\ndescription: d\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            doc.push_str(&format!(
                "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        doc.push_str("---\n");
        let e = SkillFrontmatter::parse_document(&doc).unwrap_err();
        assert_eq!(e.kind(), FrontmatterErrorKind::Yaml);
    }

    #[test]
    fn frontmatter_verification_compares_every_field() {
        let held = SkillFrontmatter::parse_document(
            "---\nname: a\ndescription: d\nversion: 2\nmetadata: {k: [1, 2.5]}\n---\n",
        )
        .unwrap();
        assert!(
            held.verify_document(
                "---\ndescription: d\nname: a\nversion: 2.0\nmetadata: {k: [1, 2.5]}\n---\n"
            )
            .is_ok()
        );
        let added = held.verify_document(
            "---\nname: a\ndescription: d\nversion: 2\nmetadata: {k: [1, 2.5]}\nallowed-tools: Bash\n---\n",
        );
        assert!(
            matches!(added, Err(SkillVerificationError::FrontmatterMismatch { field }) if field == "allowed-tools")
        );
        let changed = held.verify_document(
            "---\nname: a\ndescription: d\nversion: 2\nmetadata: {k: [1, 3]}\n---\n",
        );
        assert!(
            matches!(changed, Err(SkillVerificationError::FrontmatterMismatch { field }) if field == "metadata")
        );
        let none = held.verify_document("just text").unwrap_err();
        assert_eq!(none.kind(), SkillVerificationErrorKind::Frontmatter);
    }

    #[test]
    fn skill_names_come_from_the_uri() {
        assert_eq!(skill_name_of("github://owner/repo/skills/refunds/SKILL.md"), Some("refunds"));
        assert_eq!(skill_name_of("skill://a/SKILL.md.bak"), None);
        assert_eq!(skill_name_of("no-scheme/a/SKILL.md"), None);
        assert_eq!(skill_name_of("skill:///SKILL.md"), None);
    }

    proptest! {
        #[test]
        fn digests_round_trip_through_text(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let digest = ContentDigest::of(&bytes);
            let text = digest.to_string();
            prop_assert_eq!(text.parse::<ContentDigest>().unwrap(), digest);
            prop_assert!(text[7..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }

        #[test]
        fn digest_parsing_never_panics(text in "\\PC{0,80}") {
            let _ = text.parse::<ContentDigest>();
        }

        #[test]
        fn frontmatter_parsing_never_panics(text in "(---\n)?[ -~\n]{0,200}(\n---\n)?") {
            let _ = SkillFrontmatter::parse_document(&text);
        }

        #[test]
        fn valid_names_are_exactly_the_rule(name in "[a-z0-9-]{0,70}") {
            let rule = !name.is_empty() && name.len() <= 64 && !name.starts_with('-')
                && !name.ends_with('-') && !name.contains("--");
            prop_assert_eq!(is_valid_skill_name(&name), rule);
        }
    }
}
