//! A live 2025 session as the endpoint's table holds it: a set of sessions found by the id
//! each holds (a `&str` lookup), not a map with a copy of the id beside each. A slot is one
//! pointer instead of three words, which an idle session pays for in every table it is in.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::session::HttpSession;

/// A live session in the endpoint's table, equal to another and hashed as its id.
#[derive(Clone, Debug)]
pub(crate) struct Listed(pub(crate) Arc<HttpSession>);

impl Borrow<str> for Listed {
    fn borrow(&self) -> &str {
        &self.0.id
    }
}

impl Hash for Listed {
    // As `str` hashes, which `Borrow<str>` requires.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl PartialEq for Listed {
    fn eq(&self, other: &Listed) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for Listed {}
