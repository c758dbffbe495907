//! Pagination of the list requests with opaque cursors.
//!
//! A cursor names the list it belongs to, the list's revision when the cursor was handed out,
//! and the offset of the next page, base64url-encoded. A cursor from another list, one that does
//! not decode, or one from an older revision of the list (the list changed since; the client
//! should list again from the start) is refused with `-32602`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// One page of a list and the cursor of the next, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page<T> {
    pub(crate) items: Vec<T>,
    pub(crate) next_cursor: Option<String>,
}

/// Cuts one page out of `items` (the whole list at `revision`, taken: the page's items are
/// moved out of it, not copied), starting where `cursor` says.
///
/// `page_size` `None` returns everything in one page.
pub(crate) fn paginate<T>(
    list: &str,
    revision: u64,
    mut items: Vec<T>,
    cursor: Option<&str>,
    page_size: Option<usize>,
) -> Result<Page<T>, ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode(list, revision, cursor).ok_or_else(|| {
            ErrorObject::invalid_params(format_args!(
                "invalid cursor {cursor:?} for {list}; list again without a cursor"
            ))
        })?,
    };
    if start > items.len() {
        return Err(ErrorObject::invalid_params(format_args!("invalid cursor for {list}")));
    }
    let end = page_size.map_or(items.len(), |size| start.saturating_add(size.max(1)));
    let end = end.min(items.len());
    let next_cursor = (end < items.len()).then(|| encode(list, revision, end));
    items.truncate(end);
    items.drain(..start);
    Ok(Page { items, next_cursor })
}

/// A list page as it is encoded: the members of a list result (`ListToolsResult`,
/// `ListPromptsResult`, ...) a page sets, under the list's `key` (`tools`, `prompts`, ...),
/// each definition copied as encoded at registration ([`listed`]) rather than cloned as a
/// tree and serialized again.
pub(crate) struct ListedPage {
    pub(crate) key: &'static str,
    pub(crate) page: Page<RawJson>,
}

impl Serialize for ListedPage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let cursor = self.page.next_cursor.as_ref();
        let mut map = serializer.serialize_map(Some(1 + usize::from(cursor.is_some())))?;
        map.serialize_entry(self.key, &self.page.items)?;
        if let Some(cursor) = cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// A definition (a tool, resource, template or prompt) as a list page carries it, encoded
/// once when it is registered.
///
/// These are plain data (strings, numbers, and maps with string keys), which serialize
/// without error; should one not, it is listed as `null` and the failure logged.
pub(crate) fn listed<T: Serialize>(definition: &T) -> RawJson {
    RawJson::encode(definition).unwrap_or_else(|error| {
        tracing::error!(%error, "a definition does not serialize; it is listed as null");
        RawJson::null()
    })
}

fn encode(list: &str, revision: u64, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{list}:{revision}:{offset}"))
}

fn decode(list: &str, revision: u64, cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.rsplitn(3, ':');
    let offset = parts.next()?.parse().ok()?;
    let rev: u64 = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    (name == list && rev == revision).then_some(offset)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use mcpl_core::types::{
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolAnnotations, ToolSchema,
    };
    use serde_json::{Value, json};

    use super::*;

    /// The page of `definitions` with `next_cursor`, as [`ListedPage`] encodes it.
    fn listed_page<T: Serialize>(
        key: &'static str,
        definitions: &[T],
        next_cursor: Option<String>,
    ) -> Value {
        let items = definitions.iter().map(listed).collect();
        serde_json::to_value(ListedPage { key, page: Page { items, next_cursor } }).unwrap()
    }

    #[test]
    fn a_listed_page_encodes_as_its_result_type_would() {
        let tools = vec![
            Tool::new("a", ToolSchema::object()),
            Tool::new("b \"quoted\"", ToolSchema::object().with_property("x", json!({})))
                .with_annotations(ToolAnnotations::default().with_read_only_hint(true)),
        ];
        let resources = vec![
            Resource::new("file:///a", "a"),
            Resource::new("file:///b", "b").with_mime_type("text/plain").with_size(3_u64),
        ];
        let templates = vec![ResourceTemplate::new("file:///{name}", "files")];
        let mut prompt = Prompt::new("greet");
        prompt.arguments = Some(vec![PromptArgument::new("name")]);
        let prompts = vec![prompt, Prompt::new("plain")];
        for next_cursor in [None, Some("c2".to_owned())] {
            let cursor = || next_cursor.clone();
            let mut typed = ListToolsResult::default().with_tools(tools.clone());
            typed.next_cursor = cursor();
            assert_eq!(
                listed_page("tools", &tools, cursor()),
                serde_json::to_value(typed).unwrap()
            );
            let mut typed = ListResourcesResult::default().with_resources(resources.clone());
            typed.next_cursor = cursor();
            let page = listed_page("resources", &resources, cursor());
            assert_eq!(page, serde_json::to_value(typed).unwrap());
            let mut typed =
                ListResourceTemplatesResult::default().with_resource_templates(templates.clone());
            typed.next_cursor = cursor();
            let page = listed_page("resourceTemplates", &templates, cursor());
            assert_eq!(page, serde_json::to_value(typed).unwrap());
            let mut typed = ListPromptsResult::default().with_prompts(prompts.clone());
            typed.next_cursor = cursor();
            assert_eq!(
                listed_page("prompts", &prompts, cursor()),
                serde_json::to_value(typed).unwrap()
            );
        }
    }

    #[test]
    fn pages_cover_the_list_once() {
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = paginate("tools", 3, items.clone(), cursor.as_deref(), Some(3)).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
        let all = paginate("tools", 3, items.clone(), None, None).unwrap();
        assert_eq!((all.items.len(), all.next_cursor), (7, None));
    }

    #[test]
    fn foreign_stale_and_garbage_cursors_are_refused() {
        let items: Vec<u32> = (0..7).collect();
        let next = paginate("tools", 3, items.clone(), None, Some(2)).unwrap().next_cursor.unwrap();
        assert!(paginate("prompts", 3, items.clone(), Some(&next), Some(2)).is_err());
        assert!(paginate("tools", 4, items.clone(), Some(&next), Some(2)).is_err());
        assert!(paginate("tools", 3, items.clone(), Some("!!"), Some(2)).is_err());
        let far = encode("tools", 3, 99);
        assert!(paginate("tools", 3, items.clone(), Some(&far), Some(2)).is_err());
        assert_eq!(
            paginate("tools", 3, items.clone(), Some(&next), Some(2)).unwrap().items,
            [2, 3]
        );
    }
}
