//! Event tags (spec §16): the syntax, the reserved `chat:*` vocabulary, the core closure every
//! host applies, and the producer ontology a feature set may declare.
//!
//! Tags are a set of **untrusted claims**: they never widen a grant or authorize a channel.
//!
//! ```
//! use mcpl_core::mcpl::tags::{self, chat};
//! let closed = tags::core_closure([chat::DM, chat::AMBIENT]);
//! assert!(closed.contains(chat::ADDRESSED) && closed.contains(chat::PRIVATE));
//! assert!(!closed.contains(chat::AMBIENT)); // addressed wins over ambient
//! ```

use derive_setters::Setters;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::open_enum::open_enum;

/// The reserved `chat:*` vocabulary.
pub mod chat {
    /// Addressing umbrella: the message is addressed to the agent.
    pub const ADDRESSED: &str = "chat:addressed";
    /// The agent was mentioned.
    pub const MENTION: &str = "chat:mention";
    /// A reply to the agent.
    pub const REPLY: &str = "chat:reply";
    /// A direct message.
    pub const DM: &str = "chat:dm";
    /// Ambient traffic, not addressed.
    pub const AMBIENT: &str = "chat:ambient";
    /// Addressed to everyone.
    pub const BROADCAST: &str = "chat:broadcast";
    /// Addressed to the agent itself.
    pub const TO_SELF: &str = "chat:to-self";
    /// From a human.
    pub const FROM_HUMAN: &str = "chat:from-human";
    /// From a bot.
    pub const FROM_BOT: &str = "chat:from-bot";
    /// From the agent itself.
    pub const FROM_SELF: &str = "chat:from-self";
    /// From another agent.
    pub const FROM_AGENT: &str = "chat:from-agent";
    /// An edit of an earlier message.
    pub const EDITED: &str = "chat:edited";
    /// A deletion.
    pub const DELETED: &str = "chat:deleted";
    /// A reaction.
    pub const REACTION: &str = "chat:reaction";
    /// A reaction removed (distinct from a reaction: it must not fire reaction rules).
    pub const REACTION_REMOVE: &str = "chat:reaction-remove";
    /// Carries an image.
    pub const HAS_IMAGE: &str = "chat:has-image";
    /// Carries audio.
    pub const HAS_AUDIO: &str = "chat:has-audio";
    /// Carries a file.
    pub const HAS_FILE: &str = "chat:has-file";
    /// Carries a link.
    pub const HAS_LINK: &str = "chat:has-link";
    /// A command.
    pub const COMMAND: &str = "chat:command";
    /// In a private place.
    pub const PRIVATE: &str = "chat:private";
    /// In a group.
    pub const GROUP: &str = "chat:group";
    /// In a thread.
    pub const THREAD: &str = "chat:thread";

    /// Every reserved `chat:*` tag, grouped by facet: addressing, sender, lifecycle, content,
    /// locus.
    pub const ALL: [&str; 23] = [
        ADDRESSED,
        MENTION,
        REPLY,
        DM,
        AMBIENT,
        BROADCAST,
        TO_SELF,
        FROM_HUMAN,
        FROM_BOT,
        FROM_SELF,
        FROM_AGENT,
        EDITED,
        DELETED,
        REACTION,
        REACTION_REMOVE,
        HAS_IMAGE,
        HAS_AUDIO,
        HAS_FILE,
        HAS_LINK,
        COMMAND,
        PRIVATE,
        GROUP,
        THREAD,
    ];
}

/// The reserved namespaces.
pub const RESERVED_NAMESPACES: [&str; 2] = ["chat", "mcpl"];

/// The core implication edges: `chat:mention ⇒ chat:addressed`, `chat:reply ⇒ chat:addressed`,
/// `chat:dm ⇒ chat:addressed, chat:private`.
pub const CORE_IMPLICATIONS: [(&str, &[&str]); 3] = [
    (chat::MENTION, &[chat::ADDRESSED]),
    (chat::REPLY, &[chat::ADDRESSED]),
    (chat::DM, &[chat::ADDRESSED, chat::PRIVATE]),
];

/// A tag split into its parts: `namespace:value` or the faceted `namespace:key=value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag<'a> {
    /// The namespace (`chat`, or the producer's name).
    pub namespace: &'a str,
    /// The facet key of a faceted tag.
    pub key: Option<&'a str>,
    /// The value.
    pub value: &'a str,
}

impl<'a> Tag<'a> {
    /// Parses a tag; `None` for an un-namespaced tag (`"mention"`), which must not be emitted
    /// (hosts drop it with a diagnostic), or an empty namespace or value.
    pub fn parse(tag: &'a str) -> Option<Self> {
        let (namespace, rest) = tag.split_once(':')?;
        if namespace.is_empty() || rest.is_empty() {
            return None;
        }
        Some(match rest.split_once('=') {
            Some((key, value)) if !key.is_empty() => Tag { namespace, key: Some(key), value },
            _ => Tag { namespace, key: None, value: rest },
        })
    }

    /// Whether the namespace is reserved (`chat`, `mcpl`).
    pub fn is_reserved(&self) -> bool {
        RESERVED_NAMESPACES.contains(&self.namespace)
    }
}

/// Applies the core closure (spec §16.3) to a set of tags, without consulting any producer
/// ontology: the core implications, transitively and additively, then, if both
/// `chat:addressed` and `chat:ambient` are present, `chat:ambient` is dropped.
pub fn core_closure<I, S>(tags: I) -> BTreeSet<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut set: BTreeSet<String> = tags.into_iter().map(Into::into).collect();
    loop {
        let before = set.len();
        for (from, to) in CORE_IMPLICATIONS {
            if set.contains(from) {
                set.extend(to.iter().map(|t| (*t).to_owned()));
            }
        }
        if set.len() == before {
            break;
        }
    }
    if set.contains(chat::ADDRESSED) {
        set.remove(chat::AMBIENT);
    }
    set
}

open_enum! {
    /// How stable a described tag is.
    Stability {
        /// Stable.
        Stable = "stable",
        /// Experimental.
        Experimental = "experimental",
        /// Deprecated.
        Deprecated = "deprecated",
    }
}

/// A producer's tag ontology (`featureSets.<name>.tagOntology`). Its `implies` edges and
/// treatments are hints: a host applies them only after explicit operator acceptance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TagOntology {
    /// Core (`chat:*`) tags the producer emits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_tags: Option<Vec<String>>,
    /// Descriptions of the producer's tags, keyed by tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, TagDescription>>,
    /// Keyed (faceted) tags, keyed by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyed: Option<BTreeMap<String, KeyedTag>>,
    /// Suggested treatment rules (first match wins). `defaultTreatment` is read as a
    /// deprecated alias.
    #[serde(default, alias = "defaultTreatment", skip_serializing_if = "Option::is_none")]
    pub suggested_treatment: Option<Vec<TreatmentRule>>,
    /// Whether the producer may emit tags it did not describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One described tag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TagDescription {
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// The facet (`addressing`, `sender`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facet: Option<String>,
    /// Tags this one implies (a hint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implies: Option<Vec<String>>,
    /// A suggested behaviour (a hint; shape producer-defined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_treatment: Option<Value>,
    /// How stable the tag is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<Stability>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A keyed tag family (`namespace:key=value`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct KeyedTag {
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// The values (a list: order is meaningful when `ordered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// Whether the values are ordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One treatment rule: matchers over the closure-expanded tag set, and a behaviour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TreatmentRule {
    /// Matches if any of these globs matches a tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_any: Option<Vec<String>>,
    /// Matches if all of these globs match tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_all: Option<Vec<String>>,
    /// Matches if none of these globs matches a tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_none: Option<Vec<String>>,
    /// The behaviour (`"immediate"`, `"mute"`, `{"debounce": ms}`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<Value>,
    /// Members this SDK does not know (`source`, `channel`, ...), preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn closure() {
        let c = core_closure([chat::MENTION]);
        assert_eq!(c, [chat::ADDRESSED, chat::MENTION].iter().map(|s| (*s).to_owned()).collect());
        let c = core_closure([chat::REPLY, chat::AMBIENT, "demo:x"]);
        assert!(c.contains(chat::ADDRESSED) && !c.contains(chat::AMBIENT) && c.contains("demo:x"));
        let c = core_closure([chat::AMBIENT, chat::FROM_BOT]);
        assert!(c.contains(chat::AMBIENT) && !c.contains(chat::ADDRESSED));
        // Explicit addressed also drops ambient.
        assert!(!core_closure([chat::ADDRESSED, chat::AMBIENT]).contains(chat::AMBIENT));
        // Reaction removal is not a reaction.
        assert!(!core_closure([chat::REACTION_REMOVE]).contains(chat::REACTION));
        assert_eq!(core_closure(Vec::<String>::new()).len(), 0);
    }

    #[test]
    fn vocabulary_is_reserved_and_distinct() {
        let set: BTreeSet<_> = chat::ALL.iter().collect();
        assert_eq!(set.len(), 23);
        for t in chat::ALL {
            let tag = Tag::parse(t).unwrap();
            assert!(tag.is_reserved() && tag.namespace == "chat", "{t}");
        }
    }

    #[test]
    fn parsing() {
        assert_eq!(Tag::parse("mention"), None);
        assert_eq!(Tag::parse(":x"), None);
        assert_eq!(Tag::parse("a:"), None);
        assert_eq!(
            Tag::parse("discord:urgency=high"),
            Some(Tag { namespace: "discord", key: Some("urgency"), value: "high" })
        );
        let t = Tag::parse("robotics:arm").unwrap();
        assert!(!t.is_reserved());
        assert_eq!(t.value, "arm");
    }

    #[test]
    fn ontology_round_trip() {
        let v = json!({
            "coreTags": ["chat:mention"],
            "tags": {"demo:voice": {"desc": "v", "facet": "lifecycle", "implies": ["chat:ambient"],
                "stability": "beta", "suggestedTreatment": "throttle"}},
            "keyed": {"urgency": {"values": ["low", "high"], "ordered": true}},
            "suggestedTreatment": [{"tagsAny": ["chat:mention"], "behavior": {"debounce": 500}, "channel": "ui"}],
            "open": true, "future": 1
        });
        let o: TagOntology = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            o.tags.as_ref().unwrap()["demo:voice"].stability,
            Some(Stability::Other("beta".into()))
        );
        assert_eq!(o.suggested_treatment.as_ref().unwrap()[0].extra["channel"], json!("ui"));
        assert_eq!(serde_json::to_value(&o).unwrap(), v);
        let legacy: TagOntology =
            serde_json::from_value(json!({"defaultTreatment": [{"tagsAny": ["a:b"]}]})).unwrap();
        assert_eq!(legacy.suggested_treatment.unwrap().len(), 1);
    }
}
