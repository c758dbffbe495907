//! An incremental, bounded parser for `text/event-stream`.
//!
//! Ours, not a crate's: `sse-stream` and `eventsource-stream` (the maintained parsers that
//! take a byte stream such as reqwest's) buffer an unterminated line and an event's `data`
//! without any bound, so a server that streams a `data:` field without ever ending it grows
//! the client until it runs out of memory. Here a line and an event's data are cut at the
//! transport's message size limit (the rest of the line is read and dropped) and the event
//! is reported as oversized, which fails only the request it answers.

use std::time::Duration;

use super::body::ReadError;

/// An incremental parser for `text/event-stream`: yields the `data` of each event that has any.
pub(super) struct SseParser {
    pub(super) max: usize,
    pub(super) line: Vec<u8>,
    pub(super) data: String,
    pub(super) has_data: bool,
    pub(super) oversized: bool,
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<Duration>,
    pub(super) pending_cr: bool,
}

impl SseParser {
    pub(super) fn new(max: usize) -> Self {
        SseParser {
            max,
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            oversized: false,
            last_id: None,
            retry: None,
            pending_cr: false,
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) -> Vec<Result<String, ReadError>> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.pending_cr {
                self.pending_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.pending_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    if self.line.len() <= self.max {
                        self.line.push(b);
                    } else {
                        self.oversized = true;
                    }
                }
            }
        }
        events
    }

    pub(super) fn line_done(&mut self, line: &[u8]) -> Option<Result<String, ReadError>> {
        if line.is_empty() {
            // Dispatch.
            let oversized = std::mem::take(&mut self.oversized);
            let has_data = std::mem::take(&mut self.has_data);
            let data = std::mem::take(&mut self.data);
            if oversized {
                return Some(Err(ReadError::TooLarge));
            }
            if !has_data || data.trim().is_empty() {
                return None;
            }
            return Some(Ok(data));
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                if self.data.len() + value.len() > self.max {
                    self.oversized = true;
                } else {
                    self.data.push_str(value);
                }
            }
            "id" if !value.contains('\0') => {
                self.last_id = Some(value.to_owned()).filter(|v| !v.is_empty());
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn ok(events: Vec<Result<String, ReadError>>) -> Vec<String> {
        events.into_iter().map(|e| e.unwrap_or_else(|_| panic!("too large"))).collect()
    }

    #[test]
    fn sse_multi_line_data_ids_retry_comments_and_priming() {
        let mut p = SseParser::new(1024);
        let text =
            ": comment\r\nid: 1\r\ndata:\r\n\r\nid: 2\nretry: 250\ndata: {\"a\":\ndata: 1}\n\n";
        // Fed byte by byte to exercise split chunks.
        let mut events = Vec::new();
        for b in text.as_bytes() {
            events.extend(p.feed(std::slice::from_ref(b)));
        }
        assert_eq!(ok(events), vec!["{\"a\":\n1}".to_owned()]);
        assert_eq!(p.last_id.as_deref(), Some("2"));
        assert_eq!(p.retry, Some(Duration::from_millis(250)));
    }

    #[test]
    fn sse_oversized_event_is_reported() {
        let mut p = SseParser::new(8);
        let events = p.feed(b"data: 0123456789abcdef\n\ndata: ok\n\n");
        assert!(matches!(events[0], Err(ReadError::TooLarge)));
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[1], Ok(d) if d == "ok"));
    }
}
