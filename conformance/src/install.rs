//! Finding Node >= 22 and installing the pinned conformance suite into a cache directory.
//!
//! Node: `$CONFORMANCE_NODE` if set, else the system `node` if its major version is >= 22,
//! else the npm package `node-linux-<x64|arm64>@22` (which ships a Node binary) installed
//! with `npm install --prefix <cache>/node22`. The suite:
//! `npm install --prefix <cache>/conformance-<version> @modelcontextprotocol/conformance@<version>`,
//! its CLI entry taken from the package's `package.json` `bin`. npm itself may run on an older
//! system Node (it warns `EBADENGINE`, harmlessly); the CLI always runs on the Node found here.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::process::Command;

use crate::{CONFORMANCE_VERSION, log};

/// The Node major version the suite needs (it imports `fs.globSync`).
pub const NODE_MAJOR_MIN: u32 = 22;

/// The npm package name of the suite.
pub const PACKAGE: &str = "@modelcontextprotocol/conformance";

/// Why Node or the suite could not be made available.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A file-system operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `npm install` could not be started or exited unsuccessfully.
    #[error("npm install {package} into {dir} failed: {detail}")]
    Npm {
        /// The package spec being installed.
        package: String,
        /// The `--prefix` directory.
        dir: PathBuf,
        /// Exit status or spawn error.
        detail: String,
    },
    /// No Node binary could be used even after installing.
    #[error("no usable node >= {NODE_MAJOR_MIN} (tried {0})")]
    NoNode(PathBuf),
    /// There is no `node-linux-*` package for this machine.
    #[error("unsupported architecture {0} (need x86_64 or aarch64)")]
    UnsupportedArch(String),
    /// The suite's `package.json` has no usable `bin` entry.
    #[error("cannot find the conformance CLI entry in {0}")]
    NoCli(PathBuf),
    /// The CLI does not answer `--version`.
    #[error("the conformance CLI {cli} does not start with {node}: {detail}")]
    CliDoesNotStart {
        /// The Node binary used.
        node: PathBuf,
        /// The CLI entry script.
        cli: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

/// Where and what to install.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// Cache directory (`$CONFORMANCE_CACHE`, default `/tmp/mcp-conformance-cache`).
    pub cache: PathBuf,
    /// The suite version (`$CONFORMANCE_VERSION`, default [`CONFORMANCE_VERSION`]).
    pub version: String,
    /// A Node binary to use as is (`$CONFORMANCE_NODE`).
    pub node: Option<PathBuf>,
    /// The version spec of the `node-linux-<arch>` package (`$NODE_PKG_VERSION`, default `22`).
    pub node_package_version: String,
}

impl InstallOptions {
    /// Options from the environment variables named on the fields, with their defaults.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        InstallOptions {
            cache: var("CONFORMANCE_CACHE")
                .map_or_else(|| PathBuf::from("/tmp/mcp-conformance-cache"), PathBuf::from),
            version: var("CONFORMANCE_VERSION").unwrap_or_else(|| CONFORMANCE_VERSION.to_owned()),
            node: var("CONFORMANCE_NODE").map(PathBuf::from),
            node_package_version: var("NODE_PKG_VERSION").unwrap_or_else(|| "22".to_owned()),
        }
    }
}

/// A ready-to-run suite.
#[derive(Debug, Clone)]
pub struct Installation {
    /// The Node >= 22 binary.
    pub node: PathBuf,
    /// The suite's CLI entry script.
    pub cli: PathBuf,
    /// What the CLI reports for `--version`.
    pub version: String,
}

impl Installation {
    /// A command running the suite CLI (`node <cli>`); append the CLI arguments.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.node);
        c.arg(&self.cli).kill_on_drop(true);
        c
    }

    /// Runs the CLI with `args` and returns its stdout (stderr goes to ours); fails on a
    /// nonzero exit.
    pub async fn output(&self, args: &[&str]) -> Result<String, InstallError> {
        let out = self.command().args(args).stderr(stderr_stdio()?).output().await;
        match out {
            Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
            Ok(o) => Err(self.cli_error(format!("`{}` exited with {}", args.join(" "), o.status))),
            Err(e) => Err(self.cli_error(e.to_string())),
        }
    }

    fn cli_error(&self, detail: String) -> InstallError {
        InstallError::CliDoesNotStart { node: self.node.clone(), cli: self.cli.clone(), detail }
    }
}

/// Makes Node >= 22 and the pinned suite available, installing what is missing.
pub async fn install(opts: &InstallOptions) -> Result<Installation, InstallError> {
    let node = ensure_node(opts).await?;
    ensure_suite(opts, node).await
}

/// Finds or installs Node >= 22 (see the module docs for the order).
pub async fn ensure_node(opts: &InstallOptions) -> Result<PathBuf, InstallError> {
    if let Some(node) = &opts.node {
        return Ok(node.clone());
    }
    if let Some(node) = find_in_path("node")
        && node_major(&node).await >= NODE_MAJOR_MIN
    {
        return Ok(node);
    }
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => return Err(InstallError::UnsupportedArch(other.to_owned())),
    };
    let dir = opts.cache.join(format!("node{}", opts.node_package_version));
    let node = dir.join("node_modules").join(format!("node-linux-{arch}")).join("bin").join("node");
    if !node.is_file() || node_major(&node).await < NODE_MAJOR_MIN {
        log(format_args!(
            "system node is older than {NODE_MAJOR_MIN}; installing node-linux-{arch}@{} into {}",
            opts.node_package_version,
            dir.display()
        ));
        npm_install(&dir, &format!("node-linux-{arch}@{}", opts.node_package_version)).await?;
    }
    if node.is_file() && node_major(&node).await >= NODE_MAJOR_MIN {
        Ok(node)
    } else {
        Err(InstallError::NoNode(node))
    }
}

/// Installs the suite (if not yet in the cache) and checks that its CLI starts with `node`.
pub async fn ensure_suite(
    opts: &InstallOptions,
    node: PathBuf,
) -> Result<Installation, InstallError> {
    let dir = opts.cache.join(format!("conformance-{}", opts.version));
    let pkg_dir = PACKAGE.split('/').fold(dir.join("node_modules"), |p, seg| p.join(seg));
    let cli = match cli_entry(&pkg_dir) {
        Some(cli) if cli.is_file() => cli,
        _ => {
            log(format_args!("installing {PACKAGE}@{} into {}", opts.version, dir.display()));
            npm_install(&dir, &format!("{PACKAGE}@{}", opts.version)).await?;
            cli_entry(&pkg_dir)
                .filter(|c| c.is_file())
                .ok_or_else(|| InstallError::NoCli(pkg_dir.join("package.json")))?
        }
    };
    let mut inst = Installation { node, cli, version: String::new() };
    inst.version = inst.output(&["--version"]).await?.trim().to_owned();
    if inst.version != opts.version {
        log(format_args!("warning: CLI reports {}, expected {}", inst.version, opts.version));
    }
    Ok(inst)
}

/// The CLI script named by `bin` in `<pkg_dir>/package.json` (a string, or the entry named
/// `conformance`, or the first entry).
pub fn cli_entry(pkg_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read(pkg_dir.join("package.json")).ok()?;
    let pkg: Value = serde_json::from_slice(&text).ok()?;
    let rel = match pkg.get("bin")? {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            m.get("conformance").or_else(|| m.values().next())?.as_str()?.to_owned()
        }
        _ => return None,
    };
    Some(pkg_dir.join(rel.trim_start_matches("./")))
}

/// The major version of the Node binary `node`, or 0 if it does not run.
pub async fn node_major(node: &Path) -> u32 {
    let out = Command::new(node)
        .args(["-p", "process.versions.node.split('.')[0]"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => {
            String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0)
        }
        _ => 0,
    }
}

async fn npm_install(dir: &Path, package: &str) -> Result<(), InstallError> {
    let err = |detail: String| InstallError::Npm {
        package: package.to_owned(),
        dir: dir.to_path_buf(),
        detail,
    };
    std::fs::create_dir_all(dir)
        .map_err(|source| InstallError::Io { what: format!("create {}", dir.display()), source })?;
    // npm's chatter goes to our stderr; stdout stays machine-readable.
    let status = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(dir)
        .args(["--no-audit", "--no-fund", package])
        .stdin(Stdio::null())
        .stdout(stderr_stdio()?)
        .status()
        .await
        .map_err(|e| err(e.to_string()))?;
    if status.success() { Ok(()) } else { Err(err(status.to_string())) }
}

/// A [`Stdio`] writing to this process's stderr.
pub(crate) fn stderr_stdio() -> Result<Stdio, InstallError> {
    let fd = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|source| InstallError::Io { what: "duplicate stderr".to_owned(), source })?;
    Ok(Stdio::from(fd))
}

/// The first executable file called `name` on `$PATH`.
pub(crate) fn find_in_path(name: impl AsRef<OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name.as_ref())).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_entry_forms() {
        let dir = std::env::temp_dir().join(format!("mcpl-conf-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("package.json"), r#"{"bin":{"conformance":"./dist/index.js"}}"#)
            .unwrap();
        assert_eq!(cli_entry(&dir), Some(dir.join("dist/index.js")));
        std::fs::write(dir.join("package.json"), r#"{"bin":"cli.js"}"#).unwrap();
        assert_eq!(cli_entry(&dir), Some(dir.join("cli.js")));
        std::fs::write(dir.join("package.json"), r#"{"name":"x"}"#).unwrap();
        assert_eq!(cli_entry(&dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
