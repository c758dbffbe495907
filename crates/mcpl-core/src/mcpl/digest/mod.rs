//! The manifest revision digest (MCPL spec §17.2, RFC-003 §3.1).
//!
//! ```text
//! revision = "sha256:" + base64url_nopad(SHA-256(UTF-8(JCS(normalize(strip(manifest))))))
//! ```
//!
//! 1. **strip** the `revision` member of the root object (nothing else);
//! 2. **normalize** the three set-valued arrays (`featureSets.<*>.uses`,
//!    `featureSets.<*>.tagOntology.coreTags`, `featureSets.<*>.tagOntology.tags.<*>.implies`) when
//!    they hold only strings: deduplicate, sort by UTF-8 bytes;
//! 3. **check identifiers** (non-empty, `[A-Za-z0-9._:*-]` only), refusing with
//!    `identifier_charset`;
//! 4. **JCS** ([`canonical_json`]), SHA-256, unpadded base64url.
//!
//! The digest is total: any JSON object gets a revision unless an identifier breaks the charset.
//! Wrong-typed members are hashed verbatim, and boolean shorthand is never expanded.
//!
//! ```
//! use mcpl_core::mcpl::digest::revision;
//! let r = revision(&serde_json::json!({})).unwrap();
//! assert_eq!(r.as_str(), "sha256:RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o");
//! ```

mod finite;
mod jcs;

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

pub use self::jcs::{canonical_json, es_number_checked};

/// The member of the manifest root that the digest strips.
const REVISION: &str = "revision";
/// Root members that are not capabilities.
const NON_CAPABILITY_ROOT: [&str; 3] = ["version", "revision", "featureSets"];
/// The prefix of every revision.
pub const REVISION_PREFIX: &str = "sha256:";

/// What went wrong computing a digest, as a small stable value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DigestErrorKind {
    /// The manifest is not a JSON object (`manifest_not_object`).
    ManifestNotObject,
    /// An identifier is empty or has a character outside `[A-Za-z0-9._:*-]`
    /// (`identifier_charset`).
    IdentifierCharset,
    /// An in-memory manifest holds NaN or an infinity (`non_finite_number`).
    NonFiniteNumber,
    /// An in-memory manifest does not serialize to JSON at all (`manifest_not_json`).
    NotJson,
}

impl DigestErrorKind {
    /// The stable error code (`identifier_charset`, `non_finite_number`, ...), as printed by
    /// `mcpl-conformance manifest-digest`.
    pub fn code(self) -> &'static str {
        match self {
            DigestErrorKind::ManifestNotObject => "manifest_not_object",
            DigestErrorKind::IdentifierCharset => "identifier_charset",
            DigestErrorKind::NonFiniteNumber => "non_finite_number",
            DigestErrorKind::NotJson => "manifest_not_json",
        }
    }
}

impl fmt::Display for DigestErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Why a manifest has no revision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// The manifest is not a JSON object.
    #[error("manifest is not a JSON object")]
    ManifestNotObject,
    /// An identifier is empty or has a character outside `[A-Za-z0-9._:*-]`.
    #[error("identifier {value:?} at {path} is empty or has a character outside [A-Za-z0-9._:*-]")]
    IdentifierCharset {
        /// Where, as a dotted path (`featureSets.demo.uses[]`).
        path: String,
        /// The offending identifier.
        value: String,
    },
    /// An in-memory manifest holds NaN or an infinity.
    #[error("non-finite number at {path}")]
    NonFiniteNumber {
        /// Where, as a dotted path.
        path: String,
    },
    /// An in-memory manifest does not serialize to JSON (e.g. a map with non-string keys).
    #[error("manifest does not serialize to JSON: {reason}")]
    NotJson {
        /// The serializer's message.
        reason: String,
    },
}

impl DigestError {
    /// What went wrong.
    pub fn kind(&self) -> DigestErrorKind {
        match self {
            DigestError::ManifestNotObject => DigestErrorKind::ManifestNotObject,
            DigestError::IdentifierCharset { .. } => DigestErrorKind::IdentifierCharset,
            DigestError::NonFiniteNumber { .. } => DigestErrorKind::NonFiniteNumber,
            DigestError::NotJson { .. } => DigestErrorKind::NotJson,
        }
    }

    /// The stable error code: see [`DigestErrorKind::code`].
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }
}

/// A manifest revision: `sha256:` and 43 base64url characters.
///
/// A revision read from a peer is an untrusted label: compare revisions for equality only and
/// never take an unchanged revision as proof that nothing changed (the diff is authoritative).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Revision(String);

impl Revision {
    /// Wraps a revision string as received (not validated; see [`Revision::is_well_formed`]).
    pub fn new(s: impl Into<String>) -> Self {
        Revision(s.into())
    }

    /// The revision text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it has the shape of a digest: `sha256:` and 43 base64url characters.
    pub fn is_well_formed(&self) -> bool {
        self.0.strip_prefix(REVISION_PREFIX).is_some_and(|b64| {
            b64.len() == 43
                && b64.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Revision> for String {
    fn from(r: Revision) -> String {
        r.0
    }
}

/// The revision of a manifest (the `experimental.mcpl` object as JSON).
pub fn revision(manifest: &Value) -> Result<Revision, DigestError> {
    let canonical = canonicalize(manifest)?;
    Ok(revision_of_canonical(&canonical))
}

/// The revision of any serializable manifest, refusing NaN and infinities (which JSON cannot
/// carry and `serde_json` would turn into `null`) with `non_finite_number`.
pub fn revision_of<T: Serialize + ?Sized>(manifest: &T) -> Result<Revision, DigestError> {
    if let Some(path) = finite::find_non_finite(manifest) {
        return Err(DigestError::NonFiniteNumber { path });
    }
    let value = serde_json::to_value(manifest)
        .map_err(|e| DigestError::NotJson { reason: e.to_string() })?;
    revision(&value)
}

/// The canonical text whose hash is the revision: stripped, normalized, checked, JCS.
pub fn canonicalize(manifest: &Value) -> Result<String, DigestError> {
    let Value::Object(root) = manifest else {
        return Err(DigestError::ManifestNotObject);
    };
    let mut root = root.clone();
    root.remove(REVISION);
    normalize_sets(&mut root);
    check_identifiers(&root)?;
    Ok(canonical_json(&Value::Object(root)))
}

/// `sha256:` + unpadded base64url of the SHA-256 of `canonical`'s UTF-8 bytes.
pub fn revision_of_canonical(canonical: &str) -> Revision {
    let hash = Sha256::digest(canonical.as_bytes());
    Revision(format!("{REVISION_PREFIX}{}", URL_SAFE_NO_PAD.encode(hash)))
}

/// Normalizes a set of strings as the digest does: deduplicated, sorted by UTF-8 bytes.
pub fn normalize_set(items: &mut Vec<String>) {
    items.sort_unstable();
    items.dedup();
}

/// Normalizes a set-valued JSON array in place, if (and only if) it holds only strings.
fn normalize_set_value(value: &mut Value) {
    let Value::Array(items) = value else { return };
    let Some(mut strings) = all_strings(items) else { return };
    normalize_set(&mut strings);
    *items = strings.into_iter().map(Value::String).collect();
}

fn all_strings(items: &[Value]) -> Option<Vec<String>> {
    items.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

/// The object members of `value`, if it is an object (`<*>` matches member names only, so
/// nothing inside an array-form `featureSets` is normalized).
fn members_mut(value: &mut Value) -> impl Iterator<Item = &mut Value> {
    value.as_object_mut().into_iter().flat_map(|m| m.values_mut())
}

fn normalize_sets(root: &mut Map<String, Value>) {
    let Some(sets) = root.get_mut("featureSets") else { return };
    for set in members_mut(sets) {
        let Some(set) = set.as_object_mut() else { continue };
        if let Some(uses) = set.get_mut("uses") {
            normalize_set_value(uses);
        }
        let Some(ontology) = set.get_mut("tagOntology").and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(core) = ontology.get_mut("coreTags") {
            normalize_set_value(core);
        }
        if let Some(tags) = ontology.get_mut("tags") {
            for tag in members_mut(tags) {
                if let Some(implies) = tag.as_object_mut().and_then(|t| t.get_mut("implies")) {
                    normalize_set_value(implies);
                }
            }
        }
    }
}

/// Whether `s` is a legal identifier: non-empty, only `[A-Za-z0-9._:*-]`.
pub fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'*' | b'-'))
}

fn check(path: impl FnOnce() -> String, value: &str) -> Result<(), DigestError> {
    if is_identifier(value) {
        Ok(())
    } else {
        Err(DigestError::IdentifierCharset { path: path(), value: value.to_owned() })
    }
}

/// Checks the elements of an all-strings array (any other array is not an identifier list).
fn check_string_array(path: &str, value: Option<&Value>) -> Result<(), DigestError> {
    let Some(Value::Array(items)) = value else { return Ok(()) };
    if items.iter().all(Value::is_string) {
        for s in items.iter().filter_map(Value::as_str) {
            check(|| format!("{path}[]"), s)?;
        }
    }
    Ok(())
}

/// Checks every identifier position of a (stripped) manifest.
fn check_identifiers(root: &Map<String, Value>) -> Result<(), DigestError> {
    for (name, value) in root {
        if NON_CAPABILITY_ROOT.contains(&name.as_str()) {
            continue;
        }
        check(|| name.clone(), name)?;
        check_capability_keys(name, value)?;
    }
    if let Some(Value::Object(sets)) = root.get("featureSets") {
        for (name, set) in sets {
            let at = format!("featureSets.{name}");
            check(|| at.clone(), name)?;
            if let Value::Object(set) = set {
                check_feature_set(&at, set)?;
            }
        }
    }
    Ok(())
}

/// Every member name beneath a capability member, at any depth. Objects inside arrays are
/// walked too (the stricter of the two readings of the spec; see `docs/mcpl.md`).
fn check_capability_keys(path: &str, value: &Value) -> Result<(), DigestError> {
    match value {
        Value::Object(map) => {
            for (name, inner) in map {
                let at = format!("{path}.{name}");
                check(|| at.clone(), name)?;
                check_capability_keys(&at, inner)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            items.iter().try_for_each(|item| check_capability_keys(&format!("{path}[]"), item))
        }
        _ => Ok(()),
    }
}

fn check_feature_set(at: &str, set: &Map<String, Value>) -> Result<(), DigestError> {
    check_string_array(&format!("{at}.uses"), set.get("uses"))?;
    let Some(Value::Object(ontology)) = set.get("tagOntology") else { return Ok(()) };
    let at = format!("{at}.tagOntology");
    check_string_array(&format!("{at}.coreTags"), ontology.get("coreTags"))?;
    if let Some(Value::Object(tags)) = ontology.get("tags") {
        for (tag, description) in tags {
            let tag_at = format!("{at}.tags.{tag}");
            check(|| tag_at.clone(), tag)?;
            let Value::Object(description) = description else { continue };
            check_string_array(&format!("{tag_at}.implies"), description.get("implies"))?;
            if let Some(Value::String(facet)) = description.get("facet") {
                check(|| format!("{tag_at}.facet"), facet)?;
            }
        }
    }
    if let Some(Value::Object(keyed)) = ontology.get("keyed") {
        for (key, entry) in keyed {
            let key_at = format!("{at}.keyed.{key}");
            check(|| key_at.clone(), key)?;
            if let Value::Object(entry) = entry {
                check_string_array(&format!("{key_at}.values"), entry.get("values"))?;
            }
        }
    }
    check_treatment_matchers(
        &format!("{at}.suggestedTreatment"),
        ontology.get("suggestedTreatment"),
    )
}

/// The `tagsAny`/`tagsAll`/`tagsNone` matchers of `suggestedTreatment` rules.
///
/// The spec lists them as identifier positions; the upstream reference generator never reaches
/// them because its `*` skips array indices. We follow the stricter reading and check them
/// whether the rules sit in an array (the documented shape) or in an object.
fn check_treatment_matchers(at: &str, rules: Option<&Value>) -> Result<(), DigestError> {
    let rules: Vec<&Value> = match rules {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Object(map)) => map.values().collect(),
        _ => return Ok(()),
    };
    for rule in rules {
        let Value::Object(rule) = rule else { continue };
        for matcher in ["tagsAny", "tagsAll", "tagsNone"] {
            check_string_array(&format!("{at}[].{matcher}"), rule.get(matcher))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code(v: Value) -> &'static str {
        revision(&v).unwrap_err().code()
    }

    #[test]
    fn spec_examples() {
        let m = json!({"version":"0.5","pushEvents":true,"contextHooks":{"beforeInference":true},
            "inferenceLifecycle":true,"channels":{"register":true,"publish":true,"incoming":true},
            "featureSets":{"demo.messaging":{"description":"Demo","uses":["channels.publish",
            "channels.incoming","pushEvents","tools"]}}});
        let r = revision(&m).unwrap();
        assert_eq!(r.as_str(), "sha256:_YZTS0h1tqTAMZI6eElCszSQE2WNx3xhAhmgUvNI9H4");
        assert!(r.is_well_formed());
        assert!(!Revision::new("sha256:abc").is_well_formed());
        assert!(!Revision::new("1.2.3").is_well_formed());
    }

    #[test]
    fn non_objects_and_charset_are_refused() {
        assert_eq!(code(json!([])), "manifest_not_object");
        assert_eq!(code(json!("x")), "manifest_not_object");
        assert_eq!(code(json!({"vendor ext": true})), "identifier_charset");
        assert_eq!(code(json!({"x": [{"bad key": 1}]})), "identifier_charset");
        assert_eq!(
            code(json!({"featureSets": {"f": {"tagOntology": {"suggestedTreatment": [
                {"tagsAny": ["ok:tag", "bad tag"]}]}}}})),
            "identifier_charset"
        );
        assert_eq!(
            code(
                json!({"featureSets": {"f": {"tagOntology": {"keyed": {"k": {"values": ["é"]}}}}}})
            ),
            "identifier_charset"
        );
        assert_eq!(
            code(json!({"featureSets": {"f": {"tagOntology": {"tags": {"a:b": {"facet": ""}}}}}})),
            "identifier_charset"
        );
        // Free text and non-identifier values are not checked.
        assert!(
            revision(&json!({"featureSets": {"f": {"description": "any text é"}},
            "x": {"y": "free value"}, "version": "0 .5"}))
            .is_ok()
        );
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        #[derive(Serialize)]
        struct M {
            version: &'static str,
            limit: f64,
        }
        let e = revision_of(&M { version: "0.5", limit: f64::NAN }).unwrap_err();
        assert_eq!(e.kind(), DigestErrorKind::NonFiniteNumber);
        assert_eq!(e.code(), "non_finite_number");
        assert_eq!(e, DigestError::NonFiniteNumber { path: "limit".to_owned() });
        let ok = revision_of(&M { version: "0.5", limit: 2.5 }).unwrap();
        assert_eq!(ok, revision(&json!({"version": "0.5", "limit": 2.5})).unwrap());
    }

    #[test]
    fn sets_are_normalized_only_at_their_paths() {
        let c = canonicalize(&json!({"revision": 1, "x": {"revision": 2, "uses": ["b", "a"]},
            "featureSets": {"f": {"uses": ["b", "a", "b"], "other": ["b", "a"],
            "tagOntology": {"coreTags": ["z:z", "a:a"], "tags": {"t:t": {"implies": ["y:y", "x:x"]}},
            "keyed": {"k": {"values": ["b", "a"]}}}}}}))
        .unwrap();
        assert_eq!(
            c,
            r#"{"featureSets":{"f":{"other":["b","a"],"tagOntology":{"coreTags":["a:a","z:z"],"keyed":{"k":{"values":["b","a"]}},"tags":{"t:t":{"implies":["x:x","y:y"]}}},"uses":["a","b"]}},"x":{"revision":2,"uses":["b","a"]}}"#
        );
    }

    #[test]
    fn identifier_charset() {
        for ok in ["a", "chat:from-bot", "a.b_c:*-Z9"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", " a", "a/b", "naïve", "a b", "a\u{0}"] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }
}
