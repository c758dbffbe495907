//! Matching a URI against a parsed template in one pass, in time linear in the URI's length: the
//! matcher used once backtracking (see `backtrack`) spent its budget.
//!
//! A template is a sequence of literals and expressions. An expression's value is a run of the
//! characters it allows; it is valid when it reads back into values: percent escapes complete
//! and decoding to UTF-8, for a query keys that are the expression's variables, at most as many
//! comma-separated values as variables, and a simple value not empty. Of all the ways a URI
//! splits into such values, the one taken is the one a backtracking matcher finds that tries
//! each expression's longest value first, left to right.
//!
//! The matcher runs every way at once instead (a Pike VM, as RE2 does): each way is a thread,
//! kept in priority order, and a thread that reaches a state an earlier thread already holds
//! at the same position is dropped (both would continue alike; the earlier one is preferred).
//! A state is a part of the template and how far into it the URI was read (an offset into a
//! literal, or what the value read so far needs to be valid), so states are few and fixed by
//! the template: the work per character of the URI is bounded by the template's size, never by
//! the URI's.

use std::collections::HashSet;

use super::{Op, Part};

/// Where a thread is in the template (kept small: threads are compared and copied for every
/// character of the URI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum State {
    /// Inside literal `part`, its first `offset` bytes read.
    Literal { part: u32, offset: u32 },
    /// At the prefix character of expression `part` (known to be the next character).
    Prefix { part: u32 },
    /// Inside the value of expression `part`.
    Value { part: u32, value: Value },
    /// After the last part.
    End,
}

/// What the value read so far needs to be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Value {
    /// Nothing read yet.
    empty: bool,
    /// The current piece (the whole value, one of several, or a query key or value).
    text: Decoding,
    /// Commas read so far (an expression of several variables).
    commas: u32,
    /// In a query: the key read so far, as `(name, len)`, the first `len` bytes of the first
    /// variable name that starts with them; `None` past its `=`.
    key: Option<(u32, u32)>,
}

impl Value {
    const NEW: Value = Value { empty: true, text: Decoding::NEW, commas: 0, key: Some((0, 0)) };
}

/// Percent-decoding of a piece, and whether the bytes decoded so far are UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Decoding {
    escape: Escape,
    utf8: Utf8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Escape {
    /// Not in an escape.
    None,
    /// After `%`.
    Percent,
    /// After `%` and one hex digit, whose value it holds.
    Half(u8),
}

/// A UTF-8 validator: how many continuation bytes the current character still needs, and the
/// range the next one must be in (narrower after some lead bytes, as `str::from_utf8` checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Utf8 {
    need: u8,
    low: u8,
    high: u8,
}

impl Utf8 {
    const NEW: Utf8 = Utf8 { need: 0, low: 0x80, high: 0xBF };

    fn push(self, byte: u8) -> Option<Utf8> {
        let lead = |need, low, high| Some(Utf8 { need, low, high });
        if self.need > 0 {
            return (self.low..=self.high)
                .contains(&byte)
                .then_some(Utf8 { need: self.need - 1, ..Utf8::NEW });
        }
        match byte {
            0x00..=0x7F => Some(self),
            0xC2..=0xDF => lead(1, 0x80, 0xBF),
            0xE0 => lead(2, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => lead(2, 0x80, 0xBF),
            0xED => lead(2, 0x80, 0x9F),
            0xF0 => lead(3, 0x90, 0xBF),
            0xF1..=0xF3 => lead(3, 0x80, 0xBF),
            0xF4 => lead(3, 0x80, 0x8F),
            _ => None,
        }
    }
}

/// What one character adds to the decoded text.
enum Decoded {
    Nothing,
    Byte(u8),
    Char(char),
}

impl Decoding {
    const NEW: Decoding = Decoding { escape: Escape::None, utf8: Utf8::NEW };

    /// The decoding after `c`; `None` once the piece can no longer be valid.
    fn push(self, c: char) -> Option<(Decoding, Decoded)> {
        match self.escape {
            Escape::Percent => {
                let high = hex(c)?;
                Some((Decoding { escape: Escape::Half(high), ..self }, Decoded::Nothing))
            }
            Escape::Half(high) => {
                let byte = high << 4 | hex(c)?;
                let utf8 = self.utf8.push(byte)?;
                Some((Decoding { escape: Escape::None, utf8 }, Decoded::Byte(byte)))
            }
            Escape::None if c == '%' => {
                Some((Decoding { escape: Escape::Percent, ..self }, Decoded::Nothing))
            }
            Escape::None => {
                let mut utf8 = self.utf8;
                for &byte in c.encode_utf8(&mut [0; 4]).as_bytes() {
                    utf8 = utf8.push(byte)?;
                }
                Some((Decoding { utf8, ..self }, Decoded::Char(c)))
            }
        }
    }

    /// Whether the piece decodes as it is.
    fn complete(self) -> bool {
        self.escape == Escape::None && self.utf8.need == 0
    }
}

fn hex(c: char) -> Option<u8> {
    c.to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// One expression of the template, as the matcher reads it.
struct Expr<'a> {
    op: Op,
    names: &'a [String],
    /// A later expression reads a query (values stop at `?`), or a fragment (they stop at `#`).
    stop_query: bool,
    stop_fragment: bool,
}

impl Expr<'_> {
    /// Whether `c` ends the value (it may not appear in it).
    fn stops_at(&self, c: char) -> bool {
        !self.op.allows(c) || (self.stop_query && c == '?') || (self.stop_fragment && c == '#')
    }

    fn is_query(&self) -> bool {
        matches!(self.op, Op::Query | Op::QueryCont)
    }

    /// The first `len` bytes of variable `name`: a query key read so far.
    fn key(&self, (name, len): (u32, u32)) -> &[u8] {
        let name = self.names.get(name as usize).map_or(&[][..], |n| n.as_bytes());
        name.get(..len as usize).unwrap_or_default()
    }

    /// Whether the key `(name, len)` is a whole variable name.
    fn key_complete(&self, key: (u32, u32)) -> bool {
        let key = self.key(key);
        self.names.iter().any(|n| n.as_bytes() == key)
    }

    /// The key `(name, len)` followed by `byte`, if a variable name starts with that.
    fn key_push(&self, (name, len): (u32, u32), byte: u8) -> Option<(u32, u32)> {
        let key = self.key((name, len));
        let at = key.len();
        let next = self.names.iter().position(|n| {
            let n = n.as_bytes();
            n.len() > at && &n[..at] == key && n[at] == byte
        })?;
        Some((u32::try_from(next).ok()?, len + 1))
    }

    /// Whether the value read so far is a valid value of the expression.
    fn accepts(&self, value: Value) -> bool {
        if value.empty {
            return self.op != Op::Simple;
        }
        match value.key {
            Some(key) if self.is_query() => self.key_complete(key) && value.text.complete(),
            _ => value.text.complete(),
        }
    }

    /// The value after `c` (not a stop character); `None` once it can no longer be valid.
    fn push(&self, value: Value, c: char) -> Option<Value> {
        let mut next = Value { empty: false, ..value };
        if self.is_query() {
            match (value.key, c) {
                (Some(key), '=') => {
                    if !self.key_complete(key) || !value.text.complete() {
                        return None;
                    }
                    (next.key, next.text) = (None, Decoding::NEW);
                }
                (key, '&') => {
                    if !value.text.complete() || key.is_some_and(|k| !self.key_complete(k)) {
                        return None;
                    }
                    (next.key, next.text) = (Some((0, 0)), Decoding::NEW);
                }
                (Some(key), c) => {
                    let (text, decoded) = value.text.push(c)?;
                    next.text = text;
                    next.key = match decoded {
                        Decoded::Nothing => Some(key),
                        Decoded::Byte(byte) => Some(self.key_push(key, byte)?),
                        Decoded::Char(c) if c.is_ascii() => {
                            Some(self.key_push(key, u8::try_from(c).ok()?)?)
                        }
                        // No variable name has it.
                        Decoded::Char(_) => return None,
                    };
                }
                (None, c) => next.text = value.text.push(c)?.0,
            }
        } else if c == ',' && self.names.len() > 1 {
            if !value.text.complete() || value.commas as usize + 1 >= self.names.len() {
                return None;
            }
            (next.commas, next.text) = (value.commas + 1, Decoding::NEW);
        } else {
            next.text = value.text.push(c)?.0;
        }
        Some(next)
    }
}

/// The threads at one position, in priority order, with their captures: for each part, where
/// its value starts and ends (`NONE` for an expression left out).
struct Threads {
    states: Vec<State>,
    captures: Vec<u32>,
    /// The states held, once there are too many to search the list for one.
    seen: HashSet<State>,
    width: usize,
}

/// Up to this many threads, a state is looked for in the list itself (faster than hashing).
const SEARCHED: usize = 16;

const NONE: u32 = u32::MAX;

impl Threads {
    fn new(parts: usize) -> Threads {
        Threads { states: Vec::new(), captures: Vec::new(), seen: HashSet::new(), width: 2 * parts }
    }

    fn clear(&mut self) {
        self.states.clear();
        self.captures.clear();
        if !self.seen.is_empty() {
            self.seen.clear();
        }
    }

    /// Adds a thread unless one holds `state` already; whether it was added.
    fn push(&mut self, state: State, captures: &[u32]) -> bool {
        if self.states.len() < SEARCHED {
            if self.states.contains(&state) {
                return false;
            }
        } else {
            if self.seen.is_empty() {
                self.seen.extend(self.states.iter().copied());
            }
            if !self.seen.insert(state) {
                return false;
            }
        }
        self.states.push(state);
        for &capture in captures {
            self.captures.push(capture);
        }
        true
    }

    fn captures(&self, thread: usize) -> &[u32] {
        &self.captures[thread * self.width..(thread + 1) * self.width]
    }
}

struct Machine<'a> {
    parts: &'a [Part],
    /// For each part, its expression (`None` for a literal).
    exprs: Vec<Option<Expr<'a>>>,
    uri: &'a str,
}

impl<'a> Machine<'a> {
    fn new(parts: &'a [Part], uri: &'a str) -> Self {
        let later = |part: usize, ops: &[Op]| {
            parts[part + 1..].iter().any(|p| matches!(p, Part::Expr { op, .. } if ops.contains(op)))
        };
        let exprs = parts
            .iter()
            .enumerate()
            .map(|(i, part)| match part {
                Part::Literal(_) => None,
                Part::Expr { op, vars } => Some(Expr {
                    op: *op,
                    names: vars,
                    stop_query: later(i, &[Op::Query, Op::QueryCont]),
                    stop_fragment: later(i, &[Op::Fragment]),
                }),
            })
            .collect();
        Machine { parts, exprs, uri }
    }

    /// Adds the threads that start part `part` at `pos` (and, where a part may be empty or left
    /// out, the parts after it), in priority order.
    fn enter(&self, list: &mut Threads, part: u32, pos: u32, captures: &mut [u32]) {
        let index = part as usize;
        let Some(current) = self.parts.get(index) else {
            list.push(State::End, captures);
            return;
        };
        match (current, &self.exprs[index]) {
            (Part::Literal(literal), _) if literal.is_empty() => {
                self.enter(list, part + 1, pos, captures);
            }
            (Part::Literal(_), _) => {
                list.push(State::Literal { part, offset: 0 }, captures);
            }
            (Part::Expr { .. }, Some(expr)) => match expr.op.prefix() {
                Some(prefix) if self.uri[pos as usize..].starts_with(prefix) => {
                    list.push(State::Prefix { part }, captures);
                }
                // Undefined variables expand to nothing, prefix included.
                Some(_) => {
                    (captures[2 * index], captures[2 * index + 1]) = (NONE, NONE);
                    self.enter(list, part + 1, pos, captures);
                }
                None => {
                    captures[2 * index] = pos;
                    self.value(list, part, Value::NEW, pos, captures);
                }
            },
            (Part::Expr { .. }, None) => {}
        }
    }

    /// Adds the thread inside the value of `part` at `pos` then, if the value may end there,
    /// the threads after it: reading more is preferred to ending (the longest value first).
    fn value(&self, list: &mut Threads, part: u32, value: Value, pos: u32, captures: &mut [u32]) {
        if !list.push(State::Value { part, value }, captures) {
            return;
        }
        let index = part as usize;
        if self.exprs[index].as_ref().is_some_and(|e| e.accepts(value)) {
            captures[2 * index + 1] = pos;
            self.enter(list, part + 1, pos, captures);
        }
    }

    /// The thread `state` reading `c` (which ends at `next`).
    fn step(&self, list: &mut Threads, state: State, c: char, next: u32, captures: &mut [u32]) {
        match state {
            State::Literal { part, offset } => {
                let Some(Part::Literal(literal)) = self.parts.get(part as usize) else { return };
                if literal[offset as usize..].starts_with(c) {
                    // A character's length fits.
                    let offset = offset + c.len_utf8() as u32;
                    if offset as usize == literal.len() {
                        self.enter(list, part + 1, next, captures);
                    } else {
                        list.push(State::Literal { part, offset }, captures);
                    }
                }
            }
            State::Prefix { part } => {
                let index = part as usize;
                if self.exprs[index].as_ref().and_then(|e| e.op.prefix()) == Some(c) {
                    captures[2 * index] = next;
                    self.value(list, part, Value::NEW, next, captures);
                }
            }
            State::Value { part, value } => {
                let Some(expr) = &self.exprs[part as usize] else { return };
                if expr.stops_at(c) {
                    return;
                }
                if let Some(value) = expr.push(value, c) {
                    self.value(list, part, value, next, captures);
                }
            }
            State::End => {}
        }
    }

    /// Where each part's value starts and ends in the URI, for the way the URI matches.
    fn run(&self) -> Option<Vec<u32>> {
        // Positions are `u32`: a longer URI (or template) is not matched.
        u32::try_from(self.uri.len()).ok().filter(|&n| n < NONE)?;
        u32::try_from(self.parts.len()).ok()?;
        let width = 2 * self.parts.len();
        let mut scratch = vec![NONE; width];
        let (mut current, mut next) =
            (Threads::new(self.parts.len()), Threads::new(self.parts.len()));
        self.enter(&mut current, 0, 0, &mut scratch);
        for (pos, c) in self.uri.char_indices() {
            next.clear();
            // Within `u32`, checked above.
            let after = (pos + c.len_utf8()) as u32;
            for thread in 0..current.states.len() {
                scratch.copy_from_slice(current.captures(thread));
                self.step(&mut next, current.states[thread], c, after, &mut scratch);
            }
            std::mem::swap(&mut current, &mut next);
            if current.states.is_empty() {
                return None;
            }
        }
        let winner = current.states.iter().position(|s| *s == State::End)?;
        Some(current.captures(winner).to_vec())
    }
}

/// The text of each expression's value in `uri` (`None` for one left out), in the order of
/// the template's parts, or `None` if `uri` does not match.
pub(super) fn spans<'u>(parts: &[Part], uri: &'u str) -> Option<Vec<Option<&'u str>>> {
    let captures = Machine::new(parts, uri).run()?;
    let spans = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Part::Expr { .. }))
        .map(|(i, _)| match (captures[2 * i], captures[2 * i + 1]) {
            (NONE, _) | (_, NONE) => None,
            (start, end) => uri.get(start as usize..end as usize),
        })
        .collect();
    Some(spans)
}
