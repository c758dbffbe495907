//! Which feature set a tool call's state belongs to: explicit signals only, never a guess.

use std::collections::BTreeMap;

use super::StateMode;

/// Where a result's state goes (or the state a call gets).
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use mcpl_host::checkpoint::{Attribution, DropReason, StateMode, attribute_result};
///
/// let sets = BTreeMap::from([("notes.store".to_owned(), StateMode::HostManaged)]);
/// // An explicit `featureSet` on the result wins, if the set keeps state.
/// let to = attribute_result(&sets, Some("notes.store"), Some("notes.search"), true);
/// assert_eq!(to, Attribution::To("notes.store".into()));
/// let dropped = attribute_result(&sets, Some("notes.search"), None, true);
/// assert_eq!(dropped, Attribution::Drop(DropReason::ExplicitNotStateful("notes.search".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribution {
    /// This feature set.
    To(String),
    /// Nowhere; why (log it).
    Drop(DropReason),
}

/// Why state was not attributed.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use mcpl_host::checkpoint::{Attribution, DropReason, StateMode, attribute_result};
///
/// let sets = BTreeMap::from([
///     ("x.post".to_owned(), StateMode::ServerManaged),
///     ("x.dm".to_owned(), StateMode::ServerManaged),
/// ]);
/// // An untagged tool, no payload: both server-managed sets qualify, so nothing is recorded.
/// assert_eq!(
///     attribute_result(&sets, None, None, false),
///     Attribution::Drop(DropReason::Ambiguous(vec!["x.dm".into(), "x.post".into()])),
/// );
/// assert_eq!(
///     attribute_result(&BTreeMap::new(), None, None, false),
///     Attribution::Drop(DropReason::NoStatefulSet),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// `result.state.featureSet` names a set that is not a registered stateful set.
    ExplicitNotStateful(String),
    /// The tool is tagged with a set that is not a registered stateful set.
    ToolSetNotStateful(String),
    /// An untagged tool on a server with several stateful sets (the candidates after narrowing).
    Ambiguous(Vec<String>),
    /// The server has no stateful set.
    NoStatefulSet,
}

impl DropReason {
    /// A stable name, for structured logs.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::DropReason;
    ///
    /// // Stable names for structured logs and metrics.
    /// assert_eq!(DropReason::Ambiguous(vec![]).kind(), "ambiguous");
    /// assert_eq!(
    ///     DropReason::ToolSetNotStateful("x.search".into()).kind(),
    ///     "tool_set_not_stateful"
    /// );
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            DropReason::ExplicitNotStateful(_) => "explicit_set_not_stateful",
            DropReason::ToolSetNotStateful(_) => "tool_set_not_stateful",
            DropReason::Ambiguous(_) => "ambiguous",
            DropReason::NoStatefulSet => "no_stateful_set",
        }
    }
}

/// Attributes a result's `state`: (1) an explicit `featureSet` on it wins, if it is a stateful
/// set of the server, else the state is dropped; (2) else the called tool's feature set, same
/// rule; (3) else the server's only stateful set, narrowed by the payload (`data`/`patch` means
/// host-managed, neither means server-managed); (4) else dropped.
///
/// `sets` are the server's registered stateful sets.
///
/// ```
/// use std::collections::BTreeMap;
/// use mcpl_host::checkpoint::{Attribution, StateMode, attribute_result};
///
/// let sets = BTreeMap::from([
///     ("x.post".to_owned(), StateMode::ServerManaged),
///     ("x.feed".to_owned(), StateMode::HostManaged),
/// ]);
/// // An untagged tool whose result carries data: only x.feed is host-managed.
/// assert_eq!(attribute_result(&sets, None, None, true), Attribution::To("x.feed".into()));
/// // Tagged with an unknown set: dropped, never recorded elsewhere.
/// assert!(matches!(attribute_result(&sets, None, Some("x.dm"), true), Attribution::Drop(_)));
/// ```
pub fn attribute_result(
    sets: &BTreeMap<String, StateMode>,
    explicit: Option<&str>,
    tool_set: Option<&str>,
    has_payload: bool,
) -> Attribution {
    if let Some(fs) = explicit {
        return if sets.contains_key(fs) {
            Attribution::To(fs.to_owned())
        } else {
            Attribution::Drop(DropReason::ExplicitNotStateful(fs.to_owned()))
        };
    }
    if let Some(fs) = tool_set {
        return if sets.contains_key(fs) {
            Attribution::To(fs.to_owned())
        } else {
            Attribution::Drop(DropReason::ToolSetNotStateful(fs.to_owned()))
        };
    }
    match sets.len() {
        0 => Attribution::Drop(DropReason::NoStatefulSet),
        1 => sets
            .keys()
            .next()
            .map_or(Attribution::Drop(DropReason::NoStatefulSet), |k| Attribution::To(k.clone())),
        _ => {
            let wanted =
                if has_payload { StateMode::HostManaged } else { StateMode::ServerManaged };
            let candidates: Vec<String> =
                sets.iter().filter(|(_, m)| **m == wanted).map(|(k, _)| k.clone()).collect();
            match candidates.as_slice() {
                [one] => Attribution::To(one.clone()),
                _ => Attribution::Drop(DropReason::Ambiguous(candidates)),
            }
        }
    }
}

/// The set whose state a call to a tool gets: the tool's set if it is stateful (else nothing),
/// else the server's only stateful set, else nothing.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use mcpl_host::checkpoint::{Attribution, StateMode, attribute_injection};
///
/// let one = BTreeMap::from([("notes.store".to_owned(), StateMode::HostManaged)]);
/// // An untagged tool on a server with one stateful set gets that set's state.
/// assert_eq!(attribute_injection(&one, None), Attribution::To("notes.store".into()));
///
/// let two = BTreeMap::from([
///     ("x.feed".to_owned(), StateMode::HostManaged),
///     ("x.post".to_owned(), StateMode::ServerManaged),
/// ]);
/// assert_eq!(attribute_injection(&two, Some("x.post")), Attribution::To("x.post".into()));
/// assert!(matches!(attribute_injection(&two, None), Attribution::Drop(_))); // never a guess
/// ```
pub fn attribute_injection(
    sets: &BTreeMap<String, StateMode>,
    tool_set: Option<&str>,
) -> Attribution {
    match tool_set {
        Some(fs) if sets.contains_key(fs) => Attribution::To(fs.to_owned()),
        Some(fs) => Attribution::Drop(DropReason::ToolSetNotStateful(fs.to_owned())),
        None => match sets.len() {
            0 => Attribution::Drop(DropReason::NoStatefulSet),
            1 => sets.keys().next().map_or(Attribution::Drop(DropReason::NoStatefulSet), |k| {
                Attribution::To(k.clone())
            }),
            _ => Attribution::Drop(DropReason::Ambiguous(sets.keys().cloned().collect())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn social() -> BTreeMap<String, StateMode> {
        // The real incident: four stateful sets on one server.
        BTreeMap::from([
            ("x.post".to_owned(), StateMode::ServerManaged),
            ("x.notifications".to_owned(), StateMode::HostManaged),
            ("x.dm".to_owned(), StateMode::ServerManaged),
            ("x.feed".to_owned(), StateMode::HostManaged),
        ])
    }

    #[test]
    fn explicit_wins_and_never_falls_back() {
        let s = social();
        assert_eq!(
            attribute_result(&s, Some("x.feed"), Some("x.post"), true),
            Attribution::To("x.feed".into())
        );
        assert_eq!(
            attribute_result(&s, Some("x.unknown"), Some("x.post"), true),
            Attribution::Drop(DropReason::ExplicitNotStateful("x.unknown".into()))
        );
    }

    #[test]
    fn tool_tag_then_unique_set() {
        let s = social();
        assert_eq!(attribute_result(&s, None, Some("x.dm"), false), Attribution::To("x.dm".into()));
        assert_eq!(
            attribute_result(&s, None, Some("x.nope"), false).clone(),
            Attribution::Drop(DropReason::ToolSetNotStateful("x.nope".into()))
        );
        // Untagged on a server with two host-managed and two server-managed sets: ambiguous.
        assert!(
            matches!(attribute_result(&s, None, None, true), Attribution::Drop(DropReason::Ambiguous(c)) if c.len() == 2)
        );
        assert!(
            matches!(attribute_result(&s, None, None, false), Attribution::Drop(DropReason::Ambiguous(c)) if c.len() == 2)
        );
        let one = BTreeMap::from([("only".to_owned(), StateMode::ServerManaged)]);
        assert_eq!(attribute_result(&one, None, None, true), Attribution::To("only".into()));
        assert_eq!(
            attribute_result(&BTreeMap::new(), None, None, true),
            Attribution::Drop(DropReason::NoStatefulSet)
        );
    }

    #[test]
    fn injection() {
        let s = social();
        assert_eq!(attribute_injection(&s, Some("x.feed")), Attribution::To("x.feed".into()));
        assert!(matches!(
            attribute_injection(&s, None),
            Attribution::Drop(DropReason::Ambiguous(_))
        ));
        assert!(matches!(
            attribute_injection(&s, Some("x.zzz")),
            Attribution::Drop(DropReason::ToolSetNotStateful(_))
        ));
        let one = BTreeMap::from([("only".to_owned(), StateMode::HostManaged)]);
        assert_eq!(attribute_injection(&one, None), Attribution::To("only".into()));
    }
}
