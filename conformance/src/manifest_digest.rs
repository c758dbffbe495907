//! `mcpl-conformance manifest-digest [FILE|-] [--canonical]`: the MCPL manifest revision of a
//! JSON manifest (the `experimental.mcpl` object), for checking another implementation's
//! digest against ours.

use std::io::Read;
use std::process::ExitCode;

use mcpl_core::mcpl::digest;

/// Manifests larger than this are refused (a manifest is a few kilobytes).
const MAX_BYTES: u64 = 16 * 1024 * 1024;

pub(crate) const USAGE: &str = "usage: mcpl-conformance manifest-digest [FILE|-] [--canonical]";

/// Runs the command: prints the revision (or, with `--canonical`, the RFC 8785 text that is
/// hashed) and exits 0, or prints `error: <code>` and exits 1. Usage and I/O errors are `Err`.
pub(crate) fn run(args: &[String]) -> Result<ExitCode, String> {
    let mut canonical = false;
    let mut source = None;
    for arg in args {
        match arg.as_str() {
            "--canonical" => canonical = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            s if s.starts_with('-') && s != "-" => {
                return Err(format!("unknown option {s}\n{USAGE}"));
            }
            s if source.is_none() => source = Some(s.to_owned()),
            _ => return Err(USAGE.to_owned()),
        }
    }
    let mut bytes = Vec::new();
    let read = match source.as_deref() {
        None | Some("-") => std::io::stdin().take(MAX_BYTES + 1).read_to_end(&mut bytes),
        Some(path) => std::fs::File::open(path)
            .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| std::io::Error::new(e.kind(), format!("{path}: {e}"))),
    };
    read.map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!("manifest larger than {MAX_BYTES} bytes"));
    }
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            println!("error: invalid_json");
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
    };
    let out = if canonical {
        digest::canonicalize(&value)
    } else {
        digest::revision(&value).map(String::from)
    };
    match out {
        Ok(s) => {
            println!("{s}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("error: {}", e.code());
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
    }
}
