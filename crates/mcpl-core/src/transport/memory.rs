//! In-memory transports for tests and for embedding a server in the same process.

use tokio::sync::mpsc;

use super::{Transport, TransportReceiver, TransportSender};
use crate::error::{Error, Result};
use crate::jsonrpc::Message;

/// How many messages may wait in each direction before `send` waits.
const CAPACITY: usize = 256;

/// One end of an in-memory transport pair.
#[derive(Debug)]
pub struct MemoryTransport {
    tx: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
}

/// Creates two transports wired to each other: what one sends, the other receives.
///
/// Closing (or dropping) one end's sender ends the other end's receiver cleanly.
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    let (a_tx, b_rx) = mpsc::channel(CAPACITY);
    let (b_tx, a_rx) = mpsc::channel(CAPACITY);
    (MemoryTransport { tx: a_tx, rx: a_rx }, MemoryTransport { tx: b_tx, rx: b_rx })
}

impl Transport for MemoryTransport {
    type Sender = MemorySender;
    type Receiver = MemoryReceiver;

    async fn start(self) -> Result<(MemorySender, MemoryReceiver)> {
        Ok((MemorySender { tx: self.tx }, MemoryReceiver { rx: self.rx }))
    }
}

/// The sending half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemorySender {
    tx: mpsc::Sender<Message>,
}

impl TransportSender for MemorySender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.tx.send(message).await.map_err(|_| Error::ConnectionClosed)
    }

    async fn close(self) -> Result<()> {
        Ok(())
    }
}

/// The receiving half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryReceiver {
    rx: mpsc::Receiver<Message>,
}

impl TransportReceiver for MemoryReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        Ok(self.rx.recv().await)
    }
}
