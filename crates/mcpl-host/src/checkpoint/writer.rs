//! The checkpoint writer: one thread that saves changed trees to the store, so file I/O (and
//! its fsyncs) never runs on the caller's thread, an async runtime's worker included.
//!
//! A change marks its tree's key dirty; the writer saves the tree as it is when the writer gets
//! to it (several changes in a row cost one save) or removes it from the store when it is gone.
//! Saves of one key are therefore in the order of the changes, and the last one always holds the
//! latest tree.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::{CheckpointStore, CheckpointTree, TreeKey};

/// One tree, locked on its own: changes to one (server, feature set) never wait for another.
pub(crate) type Slot = Arc<Mutex<CheckpointTree>>;

/// The trees, by key. Held only to find or add a slot, never while a tree is worked on.
pub(crate) type Slots = Mutex<BTreeMap<TreeKey, Slot>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct Queue {
    order: VecDeque<TreeKey>,
    queued: BTreeSet<TreeKey>,
    busy: bool,
    closing: bool,
}

#[derive(Debug)]
struct Shared {
    slots: Arc<Slots>,
    store: Arc<dyn CheckpointStore>,
    queue: Mutex<Queue>,
    /// Signalled when a key is queued or the writer should stop.
    work: Condvar,
    /// Signalled when the queue is drained and nothing is being written.
    idle: Condvar,
}

/// The writer thread (or, where no thread can be started, writes in the caller's thread).
#[derive(Debug)]
pub(crate) struct Writer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub(crate) fn start(slots: Arc<Slots>, store: Arc<dyn CheckpointStore>) -> Writer {
        let shared = Arc::new(Shared {
            slots,
            store,
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            idle: Condvar::new(),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mcpl-checkpoint-writer".into())
            .spawn(move || worker.run())
            .map_err(|e| {
                tracing::warn!(error = %e, "no checkpoint writer thread; saving inline");
            })
            .ok();
        Writer { shared, thread }
    }

    /// Marks `key` changed: its tree is saved (or, if gone, removed from the store) soon.
    pub(crate) fn dirty(&self, key: &TreeKey) {
        if self.thread.is_none() {
            self.shared.write(key);
            return;
        }
        let mut q = lock(&self.shared.queue);
        if q.queued.insert(key.clone()) {
            q.order.push_back(key.clone());
        }
        self.shared.work.notify_one();
    }

    /// Blocks until every change marked so far is in the store.
    pub(crate) fn flush(&self) {
        let mut q = lock(&self.shared.queue);
        while !q.order.is_empty() || q.busy {
            q = self.shared.idle.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        lock(&self.shared.queue).closing = true;
        self.shared.work.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn run(&self) {
        loop {
            let key = {
                let mut q = lock(&self.queue);
                loop {
                    if let Some(key) = q.order.pop_front() {
                        q.queued.remove(&key);
                        q.busy = true;
                        break key;
                    }
                    if q.closing {
                        return;
                    }
                    q = self.work.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            self.write(&key);
            let mut q = lock(&self.queue);
            q.busy = false;
            if q.order.is_empty() {
                self.idle.notify_all();
            }
        }
    }

    fn write(&self, key: &TreeKey) {
        let slot = lock(&self.slots).get(key).cloned();
        let outcome = match slot {
            // A copy, so the tree is not locked while the store writes and syncs.
            Some(slot) => {
                let tree = lock(&slot).clone();
                self.store.save(key, &tree)
            }
            None => self.store.remove(key),
        };
        if let Err(e) = outcome {
            tracing::error!(tree = ?key.to_string(), error = %e, "checkpoint tree not persisted");
        }
    }
}
