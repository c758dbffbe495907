//! Protocol revisions and the two eras they fall into.
//!
//! This is the one place that knows which revision belongs to which era. Everything else asks a
//! [`ProtocolVersion`] for its [`Era`] once, at negotiation, and carries the era from there.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a protocol revision establishes what each side supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Revisions up to 2025-11-25: an `initialize` handshake fixes the version and capabilities
    /// for the life of a connection (or HTTP session).
    Stateful,
    /// Revisions from 2026-07-28: no handshake; every request carries the protocol version, the
    /// client's capabilities and info in its `_meta`, and `server/discover` describes the server.
    Stateless,
}

impl Era {
    /// The era's name: `stateful` or `stateless` (what traces record, see [`crate::trace`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::Era;
    ///
    /// assert_eq!(mcpl_core::ProtocolVersion::LATEST.era().as_str(), "stateless");
    /// assert_eq!(Era::Stateful.as_str(), "stateful");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Era::Stateful => "stateful",
            Era::Stateless => "stateless",
        }
    }
}

/// A dated MCP protocol revision this SDK knows.
///
/// # Examples
///
/// ```
/// use mcpl_core::{Era, ProtocolVersion};
///
/// let v: ProtocolVersion = "2025-11-25".parse().unwrap();
/// assert_eq!(v.era(), Era::Stateful);
/// assert_eq!(ProtocolVersion::LATEST.era(), Era::Stateless);
/// assert!("1999-01-01".parse::<ProtocolVersion>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2024-11-05, the first dated revision.
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, batching, tool annotations.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation; batching removed.
    V2025_06_18,
    /// 2025-11-25: tasks, URL elicitation, icons; the last stateful revision.
    V2025_11_25,
    /// 2026-07-28: the stateless revision.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every known revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The newest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The newest revision of the stateful era.
    pub const LATEST_STATEFUL: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The wire form, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Stateless,
            _ => Era::Stateful,
        }
    }

    /// Whether JSON-RPC batches are allowed in this revision (only 2025-03-26).
    pub const fn allows_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// Parses the wire form, returning `None` for an unknown revision.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown protocol revision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownProtocolVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownProtocolVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnknownProtocolVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::types::serde_util::read_str(deserializer, str::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_round_trips_and_is_ordered() {
        for w in ProtocolVersion::ALL.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].as_str() < w[1].as_str());
        }
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>().unwrap(), v);
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<ProtocolVersion>(&json).unwrap(), v);
        }
    }

    #[test]
    fn eras() {
        assert_eq!(ProtocolVersion::V2024_11_05.era(), Era::Stateful);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Stateful);
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Stateless);
        assert!(ProtocolVersion::V2025_03_26.allows_batches());
        assert!(!ProtocolVersion::V2025_06_18.allows_batches());
    }

    #[test]
    fn unknown_version_is_an_error() {
        assert!(serde_json::from_str::<ProtocolVersion>("\"2099-01-01\"").is_err());
    }
}
