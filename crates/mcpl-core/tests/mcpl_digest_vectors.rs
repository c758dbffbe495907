#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every vector of the MCPL manifest-digest conformance data (loaded at test time, never
//! transcribed: an editor could NFC-normalize the Unicode vector).

use std::collections::HashMap;

use mcpl_core::mcpl::digest::{canonicalize, normalize_set, revision, revision_of_canonical};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn vectors() -> Value {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcpl-manifest-digest-vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn every_positive_and_negative_vector() {
    let data = vectors();
    let list = data["vectors"].as_array().unwrap();
    assert_eq!(list.len(), 25);
    let mut digests: HashMap<String, String> = HashMap::new();
    let (mut positive, mut negative) = (0, 0);
    for v in list {
        let name = s(v, "name");
        let input = &v["input"];
        if let Some(code) = v.get("expectError").and_then(Value::as_str) {
            let err = revision(input).expect_err(name);
            assert_eq!(err.code(), code, "{name}: {err}");
            assert!(canonicalize(input).is_err(), "{name}");
            negative += 1;
            continue;
        }
        // 1. canonical form, 2. hash encoding, 3. revision.
        let canonical = canonicalize(input).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(canonical, s(v, "canonicalJson"), "{name}: canonical JSON");
        let hex: String =
            Sha256::digest(canonical.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, s(v, "sha256Hex"), "{name}: sha256");
        let r = revision(input).unwrap();
        assert_eq!(r.as_str(), s(v, "digest"), "{name}: digest");
        assert_eq!(revision_of_canonical(&canonical), r);
        assert!(r.is_well_formed(), "{name}");
        digests.insert(name.to_owned(), r.to_string());
        positive += 1;
    }
    assert_eq!((positive, negative), (20, 5));
    // 4. Cross-vector assertions.
    let mut cross = 0;
    for v in list {
        let name = s(v, "name");
        if let Some(other) = v.get("sameDigestAs").and_then(Value::as_str) {
            assert_eq!(digests[name], digests[other], "{name} sameDigestAs {other}");
            cross += 1;
        }
        if let Some(other) = v.get("differentDigestFrom").and_then(Value::as_str) {
            assert_ne!(digests[name], digests[other], "{name} differentDigestFrom {other}");
            cross += 1;
        }
    }
    assert!(cross >= 4, "only {cross} cross-vector assertions");
}

#[test]
fn every_sort_vector() {
    let data = vectors();
    let list = data["sortVectors"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    for v in list {
        let mut input: Vec<String> = serde_json::from_value(v["input"].clone()).unwrap();
        let sorted: Vec<String> = serde_json::from_value(v["sorted"].clone()).unwrap();
        normalize_set(&mut input);
        assert_eq!(input, sorted, "{}", s(v, "name"));
    }
}

#[test]
fn the_error_codes_of_the_data_are_ours() {
    let data = vectors();
    let codes = data["errorCodes"].as_object().unwrap();
    assert!(codes.contains_key("identifier_charset"));
    assert!(codes.contains_key("manifest_not_object"));
    assert_eq!(revision(&Value::Null).unwrap_err().code(), "manifest_not_object");
}
