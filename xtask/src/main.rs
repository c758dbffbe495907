//! Repository tasks: `cargo xtask changeset-check` and `cargo xtask release VERSION [--dry-run]`.
//!
//! A changeset (`.changeset/<name>.md`) is a front matter block naming crates and bump kinds,
//! then a summary for users (see `.changeset/README.md`). `changeset-check` refuses any entry
//! that names a crate outside the workspace, a bump other than `major`/`minor`/`patch`, or has
//! no summary. `release` prepends a section for VERSION to each named crate's `CHANGELOG.md`,
//! entries grouped by bump kind (the most significant first), and deletes the entries it used.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{fmt, fs};

/// The published workspace members and where they live, relative to the repository root.
const CRATES: &[(&str, &str)] = &[
    ("mcpl-core", "crates/mcpl-core"),
    ("mcpl-server", "crates/mcpl-server"),
    ("mcpl-client", "crates/mcpl-client"),
    ("mcpl-host", "crates/mcpl-host"),
    ("mcpl-redis", "crates/mcpl-redis"),
    ("mcpl-conformance", "conformance"),
    ("mcpl-examples", "examples"),
];

const USAGE: &str = "usage: cargo xtask changeset-check | cargo xtask release VERSION [--dry-run]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["changeset-check"] => load(&root).map(|sets| println!("{} changesets ok", sets.len())),
        ["release", version] => release(&root, version, false),
        ["release", version, "--dry-run"] => release(&root, version, true),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How much a change moves a crate's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Bump {
    Patch,
    Minor,
    Major,
}

impl Bump {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "patch" => Some(Self::Patch),
            "minor" => Some(Self::Minor),
            "major" => Some(Self::Major),
            _ => None,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Self::Major => "Major changes",
            Self::Minor => "Minor changes",
            Self::Patch => "Patch changes",
        }
    }
}

/// One parsed `.changeset/*.md` entry.
#[derive(Debug, PartialEq)]
struct Changeset {
    file: PathBuf,
    bumps: Vec<(String, Bump)>,
    summary: String,
}

/// Why a changeset or the release could not be processed.
#[derive(Debug)]
struct TaskError(String);

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(file: &Path, what: impl fmt::Display) -> TaskError {
    TaskError(format!("{}: {what}", file.display()))
}

/// Parses one entry's text.
fn parse(file: &Path, text: &str) -> Result<Changeset, TaskError> {
    let rest = text
        .strip_prefix("---\n")
        .ok_or_else(|| err(file, "does not start with a `---` front matter line"))?;
    let (front, summary) = match rest.strip_prefix("---\n") {
        Some(summary) => ("", summary),
        None => rest
            .split_once("\n---\n")
            .ok_or_else(|| err(file, "front matter is not closed by a `---` line"))?,
    };
    let mut bumps = Vec::new();
    for line in front.lines().filter(|l| !l.trim().is_empty()) {
        let (name, bump) = line
            .split_once(':')
            .ok_or_else(|| err(file, format!("`{line}` is not `crate: bump`")))?;
        let name = name.trim().trim_matches('"');
        if !CRATES.iter().any(|(c, _)| *c == name) {
            return Err(err(file, format!("`{name}` is not a crate of this workspace")));
        }
        let bump = Bump::parse(bump.trim())
            .ok_or_else(|| err(file, format!("`{}` is not major, minor or patch", bump.trim())))?;
        if bumps.iter().any(|(n, _)| n == name) {
            return Err(err(file, format!("`{name}` is named twice")));
        }
        bumps.push((name.to_owned(), bump));
    }
    if bumps.is_empty() {
        return Err(err(file, "names no crate"));
    }
    let summary = summary.trim().to_owned();
    if summary.is_empty() {
        return Err(err(file, "has no summary"));
    }
    Ok(Changeset { file: file.to_owned(), bumps, summary })
}

/// Every changeset of the repository, sorted by file name.
fn load(root: &Path) -> Result<Vec<Changeset>, TaskError> {
    let dir = root.join(".changeset");
    let entries = fs::read_dir(&dir).map_err(|e| err(&dir, e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| fs::read_to_string(f).map_err(|e| err(f, e)).and_then(|t| parse(f, &t)))
        .collect()
}

/// The section one crate's changelog gains for `version`: its entries, grouped by bump kind.
fn section(krate: &str, version: &str, date: &str, sets: &[Changeset]) -> Option<String> {
    let mut groups: BTreeMap<std::cmp::Reverse<Bump>, Vec<&str>> = BTreeMap::new();
    for set in sets {
        if let Some((_, bump)) = set.bumps.iter().find(|(n, _)| n == krate) {
            groups.entry(std::cmp::Reverse(*bump)).or_default().push(&set.summary);
        }
    }
    if groups.is_empty() {
        return None;
    }
    let mut out = format!("## {version} ({date})\n");
    for (bump, summaries) in groups {
        let _ = write!(out, "\n### {}\n\n", bump.0.heading());
        for summary in summaries {
            let mut lines = summary.lines();
            if let Some(first) = lines.next() {
                let _ = writeln!(out, "- {first}");
            }
            for line in lines {
                let _ = writeln!(out, "{}{line}", if line.is_empty() { "" } else { "  " });
            }
        }
    }
    Some(out)
}

/// Inserts `section` above the newest section of an existing changelog (or starts one).
fn prepend(krate: &str, existing: Option<&str>, section: &str) -> String {
    let header = format!("# Changelog of {krate}\n\nEvery release, newest first.\n\n");
    match existing {
        Some(text) => match text.find("\n## ") {
            Some(at) => format!("{}\n{section}\n{}", &text[..at], &text[at + 1..]),
            None => format!("{}\n\n{section}", text.trim_end()),
        },
        None => format!("{header}{section}"),
    }
}

fn release(root: &Path, version: &str, dry_run: bool) -> Result<(), TaskError> {
    let sets = load(root)?;
    if sets.is_empty() {
        return Err(TaskError("no changesets to release".into()));
    }
    let today = time::OffsetDateTime::now_utc().date();
    let date = format!("{:04}-{:02}-{:02}", today.year(), u8::from(today.month()), today.day());
    for (krate, dir) in CRATES {
        let Some(section) = section(krate, version, &date, &sets) else { continue };
        let path = root.join(dir).join("CHANGELOG.md");
        let existing = fs::read_to_string(&path).ok();
        let text = prepend(krate, existing.as_deref(), &section);
        if dry_run {
            println!("--- {}\n{section}", path.display());
        } else {
            fs::write(&path, text).map_err(|e| err(&path, e))?;
            println!("wrote {}", path.display());
        }
    }
    if !dry_run {
        for set in &sets {
            fs::remove_file(&set.file).map_err(|e| err(&set.file, e))?;
        }
        println!("folded and removed {} changesets", sets.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> Result<Changeset, TaskError> {
        parse(Path::new("x.md"), text)
    }

    #[test]
    fn parses_front_matter_and_summary() {
        let s = set("---\nmcpl-core: minor\n\"mcpl-server\": patch\n---\n\nNew thing.\nMore.\n")
            .unwrap();
        assert_eq!(
            s.bumps,
            [("mcpl-core".to_owned(), Bump::Minor), ("mcpl-server".to_owned(), Bump::Patch)]
        );
        assert_eq!(s.summary, "New thing.\nMore.");
    }

    #[test]
    fn refuses_bad_entries() {
        for (text, why) in [
            ("mcpl-core: minor\n---\nx\n", "does not start"),
            ("---\nmcpl-core: minor\nx\n", "not closed"),
            ("---\nserde: minor\n---\nx\n", "not a crate"),
            ("---\nmcpl-core: huge\n---\nx\n", "not major"),
            ("---\nmcpl-core: minor\nmcpl-core: patch\n---\nx\n", "named twice"),
            ("---\n---\nx\n", "names no crate"),
            ("---\nmcpl-core: minor\n---\n\n", "no summary"),
        ] {
            let e = set(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn sections_group_by_bump_most_significant_first() {
        let sets = [
            set("---\nmcpl-core: patch\n---\nA fix.\n").unwrap(),
            set("---\nmcpl-core: minor\nmcpl-host: patch\n---\nA feature,\n\nwith detail.\n")
                .unwrap(),
        ];
        let s = section("mcpl-core", "0.2.0", "2026-12-01", &sets).unwrap();
        assert_eq!(
            s,
            "## 0.2.0 (2026-12-01)\n\n### Minor changes\n\n- A feature,\n\n  with detail.\n\n\
             ### Patch changes\n\n- A fix.\n"
        );
        assert!(section("mcpl-client", "0.2.0", "2026-12-01", &sets).is_none());
    }

    #[test]
    fn new_sections_go_above_older_ones() {
        let first = prepend("mcpl-core", None, "## 0.1.0 (d)\n\n- a\n");
        assert!(first.starts_with("# Changelog of mcpl-core\n"));
        let second = prepend("mcpl-core", Some(&first), "## 0.2.0 (d)\n\n- b\n");
        let (new, old) = (second.find("## 0.2.0").unwrap(), second.find("## 0.1.0").unwrap());
        assert!(new < old, "{second}");
    }

    #[test]
    fn every_changeset_of_the_repository_is_valid() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        load(&root).unwrap();
    }
}
