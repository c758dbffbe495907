#![allow(clippy::unwrap_used)]
//! An alert's text, chosen by a server, cannot forge a line in the host's log.
//!
//! The only test in its binary: a `tracing` callsite caches whether it is enabled when it is
//! first hit, and a test on another thread hitting the same callsite with no subscriber while
//! this one installs its own could cache it as disabled here.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcpl_host::alerts::{Alerts, OpsAlert, kinds};

/// Collects what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn alert_text_cannot_forge_a_log_line() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber =
        tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    tracing::subscriber::with_default(subscriber, || {
        // A tool name chosen by a server, in the duplicate-listing alert.
        let name = "x\nERROR mcpl_host: forged\r\u{1b}[2K";
        Alerts::new().raise(
            &OpsAlert::new(kinds::DUPLICATE_TOOLS, "evil\nERROR", format!("lists {name} twice"))
                .with("tools", vec![name]),
        );
    });
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(r"x\u{a}ERROR mcpl_host: forged\u{d}\u{1b}[2K"), "{text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
}
