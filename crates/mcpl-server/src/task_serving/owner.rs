//! Task ids bound to their owner: a random half and a keyed tag over it and the principal,
//! so a task id says whose it is without the store recording it.

use mcpl_core::jsonrpc::ErrorObject;

use super::task_not_found;
use crate::context::Context;
use crate::principal::Principal;
use crate::request_state::StateSealer;
use crate::server::Server;

/// A fresh task id bound to `principal`: 128 random bits (unguessable), then a tag of them
/// and the principal under the server's key, all hex. A task id says whose it is without the
/// store recording it, and instances sharing the key ([`ServerBuilder::state_sealer`]) agree.
/// An internal error when the OS random source fails (never a guessable id).
///
/// [`ServerBuilder::state_sealer`]: crate::ServerBuilder::state_sealer
pub(super) fn new_task_id(
    sealer: &StateSealer,
    principal: Option<&Principal>,
) -> Result<String, ErrorObject> {
    let random = crate::ids::random_hex().map_err(|e| {
        tracing::error!(error = %e, "no OS randomness for a task id; task not created");
        ErrorObject::internal("the server cannot create a task id")
    })?;
    let tag = task_tag(sealer, &random, principal);
    Ok(random + &tag)
}

/// What the tag of task id `random` (its first half) made for `principal` covers.
const TASK_TAG: &str = "mcpl-server task id";

/// The tag of task id `random` (its first half) made for `principal`.
fn task_tag(sealer: &StateSealer, random: &str, principal: Option<&Principal>) -> String {
    let key = principal.map(Principal::key);
    let parts: [&[u8]; 2] = [random.as_bytes(), key.as_deref().unwrap_or("\0anonymous").as_bytes()];
    hex_tag(&sealer.tag(TASK_TAG, &parts))
}

fn hex_tag(tag: &[u8; 32]) -> String {
    tag[..TAG_BYTES].iter().map(|b| format!("{b:02x}")).collect()
}

/// How many bytes of the tag a task id carries.
const TAG_BYTES: usize = 16;

/// Whether `task_id` is one made for `principal` (the tag compared in constant time).
pub(super) fn made_for(sealer: &StateSealer, task_id: &str, principal: Option<&Principal>) -> bool {
    if task_id.len() != 64 || !task_id.is_char_boundary(32) {
        return false;
    }
    let (random, tag) = task_id.split_at(32);
    // Under every key that opens (a task created before a key rotation stays its owner's).
    let key = principal.map(Principal::key);
    let parts: [&[u8]; 2] = [random.as_bytes(), key.as_deref().unwrap_or("\0anonymous").as_bytes()];
    sealer.opening_tags(TASK_TAG, &parts).iter().any(|expected| {
        let expected = hex_tag(expected);
        let differences = expected.bytes().zip(tag.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differences == 0
    })
}

/// A task id made for another principal (or not by this server) is unknown: "not found",
/// exactly as for an id that never existed.
pub(super) fn check_owner(
    server: &Server,
    ctx: &Context,
    task_id: &str,
) -> Result<(), ErrorObject> {
    if made_for(server.state_sealer(), task_id, ctx.principal().as_ref()) {
        Ok(())
    } else {
        Err(task_not_found(task_id))
    }
}
