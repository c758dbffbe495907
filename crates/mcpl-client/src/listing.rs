//! Typed calls for resources and prompts: `resources/list`, `resources/read`, `prompts/list`.

use std::collections::HashSet;

use mcpl_core::types::{
    ListPrompts, ListResources, Method, Outcome, PaginatedRequestParams, Prompt, ReadResource,
    ReadResourceRequestParams, ReadResourceResult, Resource,
};
use mcpl_core::{Error, Result};

use crate::client::{Client, MAX_PAGES};

impl Client {
    /// Lists every resource, following pagination cursors (stops at a repeated cursor or after
    /// 100 pages). Each page goes through the response cache, if one is set.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, a timeout, the server's error, or (strict) `CapabilityNotSupported`.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.all_pages::<ListResources, _>(|page| (page.resources, page.next_cursor)).await
    }

    /// Lists every prompt, following pagination cursors like
    /// [`list_resources`](Self::list_resources).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.all_pages::<ListPrompts, _>(|page| (page.prompts, page.next_cursor)).await
    }

    /// Reads the resource at `uri`. The result goes through the response cache, if one is set.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources); a `Transport` error if the server answers
    /// with input requests, which this call does not fulfil.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams::new(uri);
        match self.send::<ReadResource>(params, self.options()).await? {
            Outcome::Complete(result) => Ok(result),
            _ => Err(Error::Transport {
                context: "the server answered resources/read with input requests or a task, \
                          which read_resource does not handle"
                    .into(),
                source: None,
            }),
        }
    }

    async fn all_pages<M, T>(
        &self,
        split: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams { cursor: cursor.clone(), ..Default::default() };
            let (page, next) = split(self.send::<M>(params, self.options()).await?);
            items.extend(page);
            match next {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        Ok(items)
    }
}
