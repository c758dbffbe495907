//! Newline-delimited JSON over any byte stream.
//!
//! Each message is one line of compact JSON terminated by `\n` (a preceding `\r` is tolerated).
//! Blank lines are skipped. A line longer than the configured limit is discarded without
//! buffering it, and reported as [`Error::MessageTooLarge`]; reading then goes on with the next
//! line.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::{DEFAULT_MAX_MESSAGE_SIZE, Transport, TransportReceiver, TransportSender, WriteNow};
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, RequestId};

/// A transport that frames messages as lines of JSON over a reader and a writer.
///
/// # Examples
///
/// ```
/// use mcpl_core::transport::lines::LineTransport;
///
/// let (client_io, server_io) = tokio::io::duplex(64 * 1024);
/// let (r, w) = tokio::io::split(client_io);
/// let transport = LineTransport::new(r, w).max_message_size(1024 * 1024);
/// # drop((transport, server_io));
/// ```
#[derive(Debug)]
pub struct LineTransport<R, W> {
    reader: R,
    writer: W,
    max_message_size: usize,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Creates a line transport reading from `reader` and writing to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport { reader, writer, max_message_size: DEFAULT_MAX_MESSAGE_SIZE }
    }

    /// Sets the longest line accepted, in bytes (not counting the newline).
    ///
    /// Default: 4 MiB. A limit of 0 is raised to 1.
    #[must_use]
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }
}

impl<R, W> Transport for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Sender = LineSender<W>;
    type Receiver = LineReceiver<BufReader<R>>;

    async fn start(self) -> Result<(Self::Sender, Self::Receiver)> {
        Ok((
            LineSender::new(self.writer),
            LineReceiver::new(BufReader::new(self.reader), self.max_message_size),
        ))
    }
}

/// The sending half of a [`LineTransport`].
#[derive(Debug)]
pub struct LineSender<W> {
    writer: W,
    buf: Vec<u8>,
    /// What [`TransportSender::write_now`] left of the line in `buf`.
    rest: Option<Rest>,
}

/// The part of a line [`TransportSender::write_now`] did not write.
#[derive(Debug)]
enum Rest {
    /// `buf` from this offset, then a flush.
    From(usize),
    /// The write failed after part of the line went out.
    Failed(std::io::Error),
}

impl<W: AsyncWrite + Unpin + Send + 'static> LineSender<W> {
    /// Creates a sender writing one line of JSON per message to `writer`.
    pub fn new(writer: W) -> Self {
        LineSender { writer, buf: Vec::with_capacity(1024), rest: None }
    }

    /// What `write_now` does when a write fails after `at` bytes of the line.
    fn stopped(&mut self, at: usize, error: std::io::Error) -> WriteNow {
        if at == 0 {
            // Nothing went out: the regular send writes the line again and reports it.
            return WriteNow::NotWritten;
        }
        self.rest = Some(Rest::Failed(error));
        WriteNow::Started
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> TransportSender for LineSender<W> {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.finish().await?;
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &message)
            .map_err(|source| Error::Serialization { what: "outgoing message".into(), source })?;
        self.buf.push(b'\n');
        self.writer.write_all(&self.buf).await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Writes the line as far as the writer takes it without waiting: polled once per write
    /// with a waker that does nothing (whoever sends next polls with its own).
    fn write_now(&mut self, message: &Message, _related: Option<&RequestId>) -> WriteNow {
        if self.rest.is_some() {
            return WriteNow::NotWritten;
        }
        self.buf.clear();
        if serde_json::to_writer(&mut self.buf, message).is_err() {
            return WriteNow::NotWritten;
        }
        self.buf.push(b'\n');
        let mut cx = Context::from_waker(Waker::noop());
        let mut at = 0;
        while at < self.buf.len() {
            match Pin::new(&mut self.writer).poll_write(&mut cx, &self.buf[at..]) {
                Poll::Ready(Ok(0)) => {
                    return self.stopped(at, std::io::ErrorKind::WriteZero.into());
                }
                Poll::Ready(Ok(n)) => at += n,
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return self.stopped(at, e),
                Poll::Pending if at == 0 => return WriteNow::NotWritten,
                Poll::Pending => {
                    self.rest = Some(Rest::From(at));
                    return WriteNow::Started;
                }
            }
        }
        match Pin::new(&mut self.writer).poll_flush(&mut cx) {
            Poll::Ready(Ok(())) => WriteNow::Written,
            Poll::Ready(Err(e)) => {
                self.rest = Some(Rest::Failed(e));
                WriteNow::Started
            }
            // All of it written, the flush still to come.
            Poll::Pending => {
                self.rest = Some(Rest::From(at));
                WriteNow::Started
            }
        }
    }

    async fn finish(&mut self) -> Result<()> {
        loop {
            match self.rest.take() {
                None => return Ok(()),
                Some(Rest::Failed(e)) => return Err(e.into()),
                Some(Rest::From(at)) if at < self.buf.len() => {
                    // Kept up to date as it goes: dropped halfway, the rest is still known.
                    self.rest = Some(Rest::From(at));
                    let n = self.writer.write(&self.buf[at..]).await?;
                    if n == 0 {
                        return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
                    }
                    self.rest = Some(Rest::From(at + n));
                }
                Some(Rest::From(at)) => {
                    self.rest = Some(Rest::From(at));
                    self.writer.flush().await?;
                    self.rest = None;
                }
            }
        }
    }

    async fn close(mut self) -> Result<()> {
        self.finish().await?;
        self.writer.flush().await?;
        self.writer.shutdown().await?;
        Ok(())
    }
}

/// The receiving half of a [`LineTransport`]; works over any buffered reader.
#[derive(Debug)]
pub struct LineReceiver<R> {
    reader: R,
    line: Vec<u8>,
    max: usize,
}

impl<R: AsyncBufRead + Unpin + Send + 'static> LineReceiver<R> {
    /// Creates a receiver reading lines of at most `max` bytes from `reader`.
    pub fn new(reader: R, max: usize) -> Self {
        LineReceiver { reader, line: Vec::new(), max: max.max(1) }
    }

    /// Reads one line into `self.line`, without its terminator. Returns `Ok(false)` at a clean
    /// end of input and `Err(MessageTooLarge)` for a line over the limit (which is skipped).
    async fn read_line(&mut self) -> Result<bool> {
        self.line.clear();
        let mut oversized = false;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // End of input. A final unterminated line still counts as a line, under the
                // same limit as the others.
                if self.line.is_empty() && !oversized {
                    return Ok(false);
                }
                return self.line_read(oversized);
            }
            let (chunk, found, used) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], true, i + 1),
                None => (available, false, available.len()),
            };
            if !oversized {
                if self.line.len() + chunk.len() > self.max + 1 {
                    // +1 leaves room for a `\r` before the newline.
                    oversized = true;
                    self.line.clear();
                    self.line.shrink_to(64 * 1024);
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if found {
                return self.line_read(oversized);
            }
        }
    }

    /// A whole line was read into `self.line` (its `\n`, if any, taken off): it is one
    /// message, or too large.
    fn line_read(&mut self, oversized: bool) -> Result<bool> {
        if oversized {
            return Err(Error::MessageTooLarge { limit: self.max });
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > self.max {
            return Err(Error::MessageTooLarge { limit: self.max });
        }
        Ok(true)
    }
}

impl<R: AsyncBufRead + Unpin + Send + 'static> TransportReceiver for LineReceiver<R> {
    async fn recv(&mut self) -> Result<Option<Message>> {
        loop {
            if !self.read_line().await? {
                return Ok(None);
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Message::decode(&self.line)
                .map(Some)
                .map_err(|e| Error::InvalidMessage(Box::new(e)));
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::ErrorKind;

    async fn receiver_for(
        input: &[u8],
        max: usize,
    ) -> LineReceiver<BufReader<std::io::Cursor<Vec<u8>>>> {
        LineReceiver::new(BufReader::with_capacity(8, std::io::Cursor::new(input.to_vec())), max)
    }

    #[tokio::test]
    async fn reads_lines_skipping_blanks_and_crlf() {
        let input = b"\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n  \n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
        let mut rx = receiver_for(input, 1024).await;
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("a"));
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("b"));
        assert!(rx.recv().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_line_is_a_typed_error_and_reading_continues() {
        let big = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{}\"}}\n", "x".repeat(500));
        let input = format!("{big}{{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}}\n{big}");
        let mut rx = receiver_for(input.as_bytes(), 100).await;
        let e = rx.recv().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MessageTooLarge);
        assert!(rx.line.capacity() <= 64 * 1024);
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("ok"));
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::MessageTooLarge);
        assert!(rx.recv().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn exactly_the_limit_is_accepted() {
        let msg = r#"{"jsonrpc":"2.0","method":"m"}"#;
        let input = format!("{msg}\r\n{msg}\n");
        let mut rx = receiver_for(input.as_bytes(), msg.len()).await;
        assert!(rx.recv().await.unwrap().is_some());
        assert!(rx.recv().await.unwrap().is_some());
        let mut rx = receiver_for(input.as_bytes(), msg.len() - 1).await;
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::MessageTooLarge);
    }

    #[tokio::test]
    async fn invalid_json_is_per_message() {
        let mut rx = receiver_for(b"{oops\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n", 1024).await;
        let e = rx.recv().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidMessage);
        assert!(rx.recv().await.unwrap().is_some());
    }

    proptest::proptest! {
        /// Whatever the lines (their lengths against the limit, `\n` or `\r\n`, blank lines
        /// between them, a last line with no end) and however the reader's buffer cuts them,
        /// each line is one message, or one `MessageTooLarge`, in order.
        #[test]
        fn each_line_is_one_message_however_the_input_is_cut(
            lines in proptest::collection::vec((0usize..40, proptest::bool::ANY, 0usize..3), 0..12),
            capacity in 1usize..24,
            last_ended in proptest::bool::ANY,
        ) {
            const MAX: usize = 48;
            let mut input = Vec::new();
            let mut expected = Vec::new();
            for (i, &(len, crlf, blanks)) in lines.iter().enumerate() {
                input.extend(std::iter::repeat_n(b'\n', blanks));
                let method = "m".repeat(len);
                let line = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
                expected.push((line.len() <= MAX).then_some(method));
                input.extend_from_slice(line.as_bytes());
                if i + 1 < lines.len() || last_ended {
                    input.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                }
            }
            let reader = BufReader::with_capacity(capacity, std::io::Cursor::new(input));
            let mut rx = LineReceiver::new(reader, MAX);
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(async {
                let mut got = Vec::new();
                loop {
                    match rx.recv().await {
                        Ok(Some(message)) => got.push(message.method().map(str::to_owned)),
                        Ok(None) => return got,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::MessageTooLarge);
                            got.push(None);
                        }
                    }
                }
            });
            proptest::prop_assert_eq!(got, expected);
        }
    }

    #[tokio::test]
    async fn sender_writes_one_line_per_message() {
        let (a, mut b) = tokio::io::duplex(1024);
        let (_r, w) = tokio::io::split(a);
        let mut tx = LineSender::new(w);
        tx.send(crate::jsonrpc::Notification::new("x", None).into()).await.unwrap();
        tx.close().await.unwrap();
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut b, &mut out).await.unwrap();
        assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
        b.shutdown().await.unwrap();
    }

    fn note(method: &str) -> Message {
        crate::jsonrpc::Notification::new(method, None).into()
    }

    fn line_of(method: &str) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\"}}\n")
    }

    /// Everything `b` receives until the other end closes.
    async fn all_of(mut b: tokio::io::DuplexStream) -> String {
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut b, &mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn write_now_writes_a_line_the_stream_has_room_for() {
        let (a, b) = tokio::io::duplex(1024);
        let (_r, w) = tokio::io::split(a);
        let mut tx = LineSender::new(w);
        assert_eq!(tx.write_now(&note("x"), None), WriteNow::Written);
        tx.close().await.unwrap();
        assert_eq!(all_of(b).await, line_of("x"));
    }

    #[tokio::test]
    async fn write_now_leaves_what_the_stream_cannot_take_to_finish() {
        // The pipe takes 8 bytes: the line goes out in part; the next message is not written
        // until the rest of it is.
        let (a, b) = tokio::io::duplex(8);
        let (_r, w) = tokio::io::split(a);
        let mut tx = LineSender::new(w);
        let reader = tokio::spawn(all_of(b));
        assert_eq!(tx.write_now(&note("first"), None), WriteNow::Started);
        assert_eq!(tx.write_now(&note("second"), None), WriteNow::NotWritten);
        tx.finish().await.unwrap();
        tx.send(note("second")).await.unwrap();
        tx.close().await.unwrap();
        assert_eq!(reader.await.unwrap(), format!("{}{}", line_of("first"), line_of("second")));
    }

    #[tokio::test]
    async fn write_now_writes_nothing_into_a_full_stream() {
        let (a, b) = tokio::io::duplex(8);
        let (_r, mut w) = tokio::io::split(a);
        w.write_all(b"12345678").await.unwrap();
        let mut tx = LineSender::new(w);
        assert_eq!(tx.write_now(&note("x"), None), WriteNow::NotWritten);
        // Sent the regular way once the reader makes room.
        let reader = tokio::spawn(all_of(b));
        tx.send(note("x")).await.unwrap();
        tx.close().await.unwrap();
        assert_eq!(reader.await.unwrap(), format!("12345678{}", line_of("x")));
    }

    /// A writer that takes `room` bytes, then fails.
    struct Breaking {
        room: usize,
    }

    impl AsyncWrite for Breaking {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            if self.room == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_write_that_fails_after_part_of_a_line_fails_its_finish() {
        let mut tx = LineSender::new(Breaking { room: 5 });
        assert_eq!(tx.write_now(&note("x"), None), WriteNow::Started);
        let err = tx.finish().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Transport);
        // Failing before any of it went out, it is left to the regular send (which fails too).
        let mut tx = LineSender::new(Breaking { room: 0 });
        assert_eq!(tx.write_now(&note("x"), None), WriteNow::NotWritten);
        assert!(tx.send(note("x")).await.is_err());
    }
}
