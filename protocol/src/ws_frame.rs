//! The WebSocket wire format (RFC 6455 §5), for both ends: the daemon's connections
//! (its `rpc::ws`) and `ctx-client`. No I/O, so a connection loop stays a loop and this part
//! is tested alone.
//!
//! A client masks its frames and a server does not; each end's reader refuses the
//! frames only the other end may send. The reader takes bytes in whatever pieces the socket gives them and hands out whole
//! events: a data message (its fragments joined, unmasked), a ping, a pong, a close.
//! A message over the size bound is skipped as it streams in, never buffered, and
//! reported once as `TooBig`.

/// Opcodes (RFC 6455 §5.2).
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// Close status codes (RFC 6455 §7.4.1).
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_GOING_AWAY: u16 = 1001;
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;

/// A control frame's payload is at most this long (RFC 6455 §5.5).
const MAX_CONTROL_PAYLOAD: u64 = 125;

/// What the peer sent, one whole event at a time.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A text or binary message, its fragments joined.
    Message(Vec<u8>),
    Ping(Vec<u8>),
    Pong,
    /// The peer's close frame: its status code, if it gave one.
    Close(Option<u16>),
    /// A message grew past the bound; its remaining bytes are skipped.
    TooBig,
}

/// A frame the reader cannot go on from: the connection is closed with status 1002.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("a client frame must be masked")]
    Unmasked,
    #[error("a server frame must not be masked")]
    Masked,
    #[error("reserved bits set without an extension that defines them")]
    ReservedBits,
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("a control frame must be final and at most 125 bytes")]
    BadControlFrame,
    #[error("a continuation frame without a message to continue")]
    UnexpectedContinuation,
    #[error("a new message began before the previous one ended")]
    ExpectedContinuation,
    #[error("a frame length with its top bit set")]
    BadLength,
}

/// A frame's header, as read from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    fin: bool,
    opcode: u8,
    mask: [u8; 4],
    len: u64,
}

/// Which end wrote the frames a reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// A client's frames, masked: what the daemon reads.
    Client,
    /// A server's frames, unmasked: what a client reads.
    Server,
}

/// Reads a header from the front of `buf`: `None` until all of it has arrived, else the
/// header and its length in bytes. An unmasked frame gets the zero mask, which changes
/// nothing.
fn parse_header(buf: &[u8], from: Sender) -> Result<Option<(Header, usize)>, ProtocolError> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(ProtocolError::ReservedBits);
    }
    let masked = b1 & 0x80 != 0;
    match (from, masked) {
        (Sender::Client, false) => return Err(ProtocolError::Unmasked),
        (Sender::Server, true) => return Err(ProtocolError::Masked),
        _ => {}
    }
    let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
    let (len, at) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
            Some(b) => (u64::from_be_bytes(b), 10),
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    if len >> 63 != 0 {
        return Err(ProtocolError::BadLength);
    }
    let (mask, header_len) = if masked {
        match buf
            .get(at..at + 4)
            .and_then(|m| <[u8; 4]>::try_from(m).ok())
        {
            Some(mask) => (mask, at + 4),
            None => return Ok(None),
        }
    } else {
        ([0; 4], at)
    };
    match opcode {
        CONTINUATION | TEXT | BINARY => {}
        CLOSE | PING | PONG if fin && len <= MAX_CONTROL_PAYLOAD => {}
        CLOSE | PING | PONG => return Err(ProtocolError::BadControlFrame),
        other => return Err(ProtocolError::UnknownOpcode(other)),
    }
    Ok(Some((
        Header {
            fin,
            opcode,
            mask,
            len,
        },
        header_len,
    )))
}

/// Appends `payload` to `out`, unmasked; `offset` is where `payload` starts within its
/// frame's payload (the mask cycles over the whole frame).
fn unmask_into(payload: &[u8], mask: [u8; 4], offset: u64, out: &mut Vec<u8>) {
    if mask == [0; 4] {
        out.extend_from_slice(payload);
        return;
    }
    // `offset % 4` is below 4, so the cast loses nothing.
    let shift = (offset % 4) as usize;
    let key: [u8; 4] = std::array::from_fn(|i| mask[(shift + i) % 4]);
    let word = u64::from_ne_bytes([
        key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3],
    ]);
    out.reserve(payload.len());
    let mut chunks = payload.chunks_exact(8);
    for chunk in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        out.extend_from_slice(&(u64::from_ne_bytes(b) ^ word).to_ne_bytes());
    }
    out.extend(
        chunks
            .remainder()
            .iter()
            .zip(key.iter().cycle())
            .map(|(b, k)| b ^ k),
    );
}

/// The frame whose payload is being read.
#[derive(Debug, Clone, Copy)]
struct Open {
    header: Header,
    /// Payload bytes already taken.
    done: u64,
    /// Dropped, not kept: its message is over the bound.
    skip: bool,
}

/// Bytes asked of the socket at a time when no frame says how many are coming.
const READ_CHUNK: usize = 16 * 1024;
/// Asked for at most, even for a frame that declares more: a large frame arrives in
/// pieces, and the buffer grows with what really came.
const MAX_READ_AHEAD: usize = 4 * 1024 * 1024;

/// Turns the bytes the peer sends into events.
#[derive(Debug)]
pub struct Reader {
    from: Sender,
    max_message: usize,
    /// Received and not yet taken: `buf[start..end]`. Past `end`, room for the next read.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    open: Option<Open>,
    /// The data message being assembled, from its first frame to its final one.
    message: Option<Vec<u8>>,
    /// The message being assembled went over the bound: its frames are dropped until the
    /// final one.
    skipping: bool,
    /// The payload of the control frame being read.
    control: Vec<u8>,
}

impl Reader {
    /// A reader of `from`'s frames, refusing messages over `max_message` bytes.
    pub fn new(from: Sender, max_message: usize) -> Reader {
        Reader {
            from,
            max_message,
            buf: Vec::new(),
            start: 0,
            end: 0,
            open: None,
            message: None,
            skipping: false,
            control: Vec::new(),
        }
    }

    /// The bound on a message's size.
    pub fn max_message(&self) -> usize {
        self.max_message
    }

    /// Room for the next read: at least a chunk, more while a frame says more is coming.
    /// Write into it, then say how much with `filled`.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
            // Between messages, a buffer grown for a large one goes back to a read's size.
            if self.open.is_none() && self.message.is_none() && self.buf.len() > 4 * READ_CHUNK {
                self.buf = Vec::new();
            }
        } else if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        let coming = match self.open {
            Some(o) if !o.skip => usize::try_from(o.header.len - o.done).unwrap_or(usize::MAX),
            _ => 0,
        };
        let want = coming.clamp(READ_CHUNK, MAX_READ_AHEAD);
        if self.buf.len() - self.end < want {
            self.buf.resize(self.end + want, 0);
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were written at the front of the last `spare`.
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Takes bytes received some other way (what came in behind the upgrade request).
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = self.spare();
            let n = room.len().min(bytes.len());
            room[..n].copy_from_slice(&bytes[..n]);
            self.filled(n);
            bytes = &bytes[n..];
        }
    }

    /// The next whole event; `None` until more bytes arrive.
    pub fn next_event(&mut self) -> Result<Option<Event>, ProtocolError> {
        loop {
            let open = match self.open {
                Some(open) => open,
                None => {
                    let Some((header, at)) =
                        parse_header(&self.buf[self.start..self.end], self.from)?
                    else {
                        return Ok(None);
                    };
                    self.start += at;
                    let (open, newly_too_big) = self.begin(header)?;
                    self.open = Some(open);
                    if newly_too_big {
                        return Ok(Some(Event::TooBig));
                    }
                    open
                }
            };
            let remaining = usize::try_from(open.header.len - open.done).unwrap_or(usize::MAX);
            let take_len = (self.end - self.start).min(remaining);
            if !open.skip {
                let bytes = &self.buf[self.start..self.start + take_len];
                let to = if is_control(open.header.opcode) {
                    &mut self.control
                } else {
                    self.message.get_or_insert_with(Vec::new)
                };
                unmask_into(bytes, open.header.mask, open.done, to);
            }
            self.start += take_len;
            let done = open.done + u64::try_from(take_len).unwrap_or(u64::MAX);
            if done < open.header.len {
                self.open = Some(Open { done, ..open });
                return Ok(None);
            }
            self.open = None;
            if let Some(event) = self.end(open.header) {
                return Ok(Some(event));
            }
        }
    }

    /// A frame's header has been read: where its payload goes, and whether its message
    /// has just gone over the bound.
    fn begin(&mut self, header: Header) -> Result<(Open, bool), ProtocolError> {
        let mut open = Open {
            header,
            done: 0,
            skip: false,
        };
        if is_control(header.opcode) {
            self.control.clear();
            return Ok((open, false));
        }
        match (header.opcode, self.message.is_some() || self.skipping) {
            (CONTINUATION, false) => return Err(ProtocolError::UnexpectedContinuation),
            (TEXT | BINARY, true) => return Err(ProtocolError::ExpectedContinuation),
            _ => {}
        }
        let so_far = self.message.as_ref().map_or(0, Vec::len) as u64;
        let newly_too_big = !self.skipping && so_far + header.len > self.max_message as u64;
        if newly_too_big {
            self.skipping = true;
            self.message = None;
        }
        if !self.skipping && self.message.is_none() {
            // One allocation for a single-frame message, but not trusting a declared
            // length further than a read's worth before the bytes come.
            let expected = usize::try_from(header.len).unwrap_or(MAX_READ_AHEAD);
            self.message = Some(Vec::with_capacity(expected.min(MAX_READ_AHEAD)));
        }
        open.skip = self.skipping;
        Ok((open, newly_too_big))
    }

    /// A frame's payload is complete: the event it finishes, if any.
    fn end(&mut self, header: Header) -> Option<Event> {
        match header.opcode {
            PING => Some(Event::Ping(std::mem::take(&mut self.control))),
            PONG => Some(Event::Pong),
            CLOSE => {
                let code = self
                    .control
                    .get(..2)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]));
                Some(Event::Close(code))
            }
            _ if !header.fin => None,
            _ if self.skipping => {
                self.skipping = false;
                None
            }
            _ => self.message.take().map(Event::Message),
        }
    }
}

fn is_control(opcode: u8) -> bool {
    opcode & 0x8 != 0
}

/// Appends a server frame (final, unmasked) carrying `payload`.
pub fn write_frame(opcode: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(payload.len() + 10);
    out.push(0x80 | opcode);
    push_length(payload.len(), 0, out);
    out.extend_from_slice(payload);
}

/// Appends a client frame (final, masked with `mask`) carrying `payload`.
pub fn write_masked_frame(opcode: u8, payload: &[u8], mask: [u8; 4], out: &mut Vec<u8>) {
    out.reserve(payload.len() + 14);
    out.push(0x80 | opcode);
    push_length(payload.len(), 0x80, out);
    out.extend_from_slice(&mask);
    unmask_into(payload, mask, 0, out);
}

/// A frame's length in its shortest form, with `mask_bit` in the first byte.
fn push_length(len: usize, mask_bit: u8, out: &mut Vec<u8>) {
    if let Ok(short @ 0..=125) = u8::try_from(len) {
        out.push(mask_bit | short);
    } else if let Ok(medium) = u16::try_from(len) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&medium.to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// Appends a close frame with `code`.
pub fn write_close(code: u16, out: &mut Vec<u8>) {
    write_frame(CLOSE, &code.to_be_bytes(), out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A client frame, masked as a client must; final or not.
    fn client_frame(fin: bool, opcode: u8, mask: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_masked_frame(opcode, payload, mask, &mut out);
        if !fin {
            out[0] &= 0x7F;
        }
        out
    }

    fn events(reader: &mut Reader) -> Result<Vec<Event>, ProtocolError> {
        let mut out = Vec::new();
        while let Some(e) = reader.next_event()? {
            out.push(e);
        }
        Ok(out)
    }

    /// Feeds `bytes` in pieces of `piece` bytes (`push` writes each into `spare` and
    /// reports it `filled`, as the socket loops do), collecting every event.
    fn read_in_pieces(
        reader: &mut Reader,
        bytes: &[u8],
        piece: usize,
    ) -> Result<Vec<Event>, ProtocolError> {
        let mut out = Vec::new();
        for chunk in bytes.chunks(piece.max(1)) {
            reader.push(chunk);
            out.extend(events(reader)?);
        }
        Ok(out)
    }

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    #[test]
    fn a_masked_text_frame_is_one_message() {
        let mut r = Reader::new(Sender::Client, 1024);
        r.push(&client_frame(true, TEXT, MASK, b"Hello"));
        assert_eq!(events(&mut r), Ok(vec![Event::Message(b"Hello".to_vec())]));
        // RFC 6455 §5.7's own example of a masked "Hello".
        r.push(&[
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ]);
        assert_eq!(events(&mut r), Ok(vec![Event::Message(b"Hello".to_vec())]));
    }

    #[test]
    fn frames_the_protocol_forbids_are_errors() {
        let cases: [(Vec<u8>, ProtocolError); 6] = [
            (
                vec![0x81, 0x05, b'H', b'e', b'l', b'l', b'o'],
                ProtocolError::Unmasked,
            ),
            (
                client_frame(true, 0x3, MASK, b""),
                ProtocolError::UnknownOpcode(0x3),
            ),
            (
                client_frame(true, PING, MASK, &[0; 126]),
                ProtocolError::BadControlFrame,
            ),
            (
                client_frame(false, PING, MASK, b""),
                ProtocolError::BadControlFrame,
            ),
            (
                client_frame(true, CONTINUATION, MASK, b"x"),
                ProtocolError::UnexpectedContinuation,
            ),
            (
                [0xC1]
                    .into_iter()
                    .chain(client_frame(true, TEXT, MASK, b"")[1..].iter().copied())
                    .collect(),
                ProtocolError::ReservedBits,
            ),
        ];
        for (bytes, want) in cases {
            let mut r = Reader::new(Sender::Client, 1024);
            r.push(&bytes);
            assert_eq!(events(&mut r), Err(want), "{bytes:x?}");
        }
        let mut r = Reader::new(Sender::Client, 1024);
        r.push(&client_frame(false, TEXT, MASK, b"a"));
        r.push(&client_frame(true, TEXT, MASK, b"b"));
        assert_eq!(events(&mut r), Err(ProtocolError::ExpectedContinuation));
        let mut r = Reader::new(Sender::Client, 1024);
        r.push(&[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(events(&mut r), Err(ProtocolError::BadLength));
    }

    /// An oversized frame is reported when its header arrives and never buffered: the
    /// reader's buffer stays a read's size while its bytes stream past.
    #[test]
    fn a_message_over_the_bound_is_skipped_not_kept() {
        let mut r = Reader::new(Sender::Client, 1000);
        let big = client_frame(true, BINARY, MASK, &vec![7u8; 3 * MAX_READ_AHEAD]);
        let mut got = read_in_pieces(&mut r, &big, READ_CHUNK).unwrap();
        assert!(r.buf.len() <= 2 * READ_CHUNK, "{}", r.buf.len());
        r.push(&client_frame(true, TEXT, MASK, b"next"));
        got.extend(events(&mut r).unwrap());
        assert_eq!(got, vec![Event::TooBig, Event::Message(b"next".to_vec())]);
        // Fragments: the bound is on the message, not the frame.
        let mut r = Reader::new(Sender::Client, 10);
        let mut bytes = client_frame(false, TEXT, MASK, b"123456");
        bytes.extend(client_frame(true, PING, MASK, b"p"));
        bytes.extend(client_frame(false, CONTINUATION, MASK, b"789012"));
        bytes.extend(client_frame(true, CONTINUATION, MASK, b"3"));
        bytes.extend(client_frame(true, TEXT, MASK, b"0123456789"));
        assert_eq!(
            read_in_pieces(&mut r, &bytes, 3).unwrap(),
            vec![
                Event::Ping(b"p".to_vec()),
                Event::TooBig,
                Event::Message(b"0123456789".to_vec())
            ]
        );
    }

    /// A client reads the server's frames, unmasked, and refuses a masked one.
    #[test]
    fn a_clients_reader_takes_server_frames() {
        let mut r = Reader::new(Sender::Server, 1024);
        let mut bytes = Vec::new();
        write_frame(TEXT, b"{}", &mut bytes);
        write_frame(PING, b"", &mut bytes);
        r.push(&bytes);
        assert_eq!(
            events(&mut r),
            Ok(vec![
                Event::Message(b"{}".to_vec()),
                Event::Ping(Vec::new())
            ])
        );
        r.push(&client_frame(true, TEXT, MASK, b"{}"));
        assert_eq!(events(&mut r), Err(ProtocolError::Masked));
    }

    #[test]
    fn a_close_frame_gives_its_code() {
        let mut r = Reader::new(Sender::Client, 10);
        r.push(&client_frame(true, CLOSE, MASK, &1001u16.to_be_bytes()));
        r.push(&client_frame(true, CLOSE, MASK, b""));
        r.push(&client_frame(true, PONG, MASK, b"x"));
        assert_eq!(
            events(&mut r),
            Ok(vec![
                Event::Close(Some(1001)),
                Event::Close(None),
                Event::Pong
            ])
        );
    }

    /// What a client library reads back from the server's frames.
    fn read_server_frame(bytes: &[u8]) -> (u8, Vec<u8>, usize) {
        assert_eq!(bytes[0] & 0xF0, 0x80, "final, no reserved bits");
        assert_eq!(bytes[1] & 0x80, 0, "a server frame is not masked");
        let (len, at) = match bytes[1] {
            126 => (u16::from_be_bytes([bytes[2], bytes[3]]) as usize, 4),
            127 => (
                usize::try_from(u64::from_be_bytes(bytes[2..10].try_into().unwrap())).unwrap(),
                10,
            ),
            n => (n as usize, 2),
        };
        (bytes[0] & 0x0F, bytes[at..at + len].to_vec(), at + len)
    }

    #[test]
    fn server_frames_use_the_shortest_length_form() {
        for (len, header) in [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)] {
            let payload: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
            let mut out = Vec::new();
            write_frame(TEXT, &payload, &mut out);
            assert_eq!(out.len(), header + len);
            assert_eq!(read_server_frame(&out), (TEXT, payload, out.len()));
        }
        let mut out = Vec::new();
        write_close(CLOSE_PROTOCOL_ERROR, &mut out);
        assert_eq!(read_server_frame(&out), (CLOSE, vec![0x03, 0xEA], 4));
    }

    #[derive(Debug, Clone)]
    enum Sent {
        Message { payload: Vec<u8>, cuts: Vec<usize> },
        Ping(Vec<u8>),
    }

    fn sent() -> impl Strategy<Value = Sent> {
        prop_oneof![
            3 => (prop::collection::vec(any::<u8>(), 0..300), prop::collection::vec(0usize..300, 0..4))
                .prop_map(|(payload, cuts)| Sent::Message { payload, cuts }),
            1 => prop::collection::vec(any::<u8>(), 0..=125).prop_map(Sent::Ping),
        ]
    }

    /// Feeds `bytes` in pieces of `piece` until the reader refuses them, checking that
    /// no message handed out, nor the one being assembled, is over `max`.
    fn read_until_refused(
        r: &mut Reader,
        bytes: &[u8],
        piece: usize,
        max: usize,
    ) -> Result<(), TestCaseError> {
        for chunk in bytes.chunks(piece) {
            r.push(chunk);
            loop {
                match r.next_event() {
                    Ok(Some(Event::Message(m))) => prop_assert!(m.len() <= max),
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => return Ok(()),
                }
            }
            prop_assert!(r.message.as_ref().map_or(0, Vec::len) <= max);
        }
        Ok(())
    }

    proptest! {
        /// Whatever bytes a peer sends, in whatever pieces, the reader hands out events
        /// or stops at a protocol error: it never panics, and never keeps more of a
        /// message than the bound.
        #[test]
        fn any_bytes_are_read_without_a_panic(
            bytes in prop::collection::vec(any::<u8>(), 0..2000),
            piece in 1usize..300,
            from_client in any::<bool>(),
            max in 0usize..500,
        ) {
            let from = if from_client { Sender::Client } else { Sender::Server };
            read_until_refused(&mut Reader::new(from, max), &bytes, piece, max)?;
        }

        /// The same for a valid stream with bytes changed here and there: lengths, masks,
        /// opcodes and payloads that are almost right.
        #[test]
        fn damaged_frames_are_read_without_a_panic(
            payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..6),
            damage in prop::collection::vec((any::<usize>(), 1u8..=255), 1..4),
            piece in 1usize..300,
            max in 0usize..300,
        ) {
            let mut bytes = Vec::new();
            for (i, p) in payloads.iter().enumerate() {
                let opcode = [TEXT, PING, BINARY][i % 3];
                let p = if opcode == PING { &p[..p.len().min(125)] } else { &p[..] };
                bytes.extend(client_frame(true, opcode, MASK, p));
            }
            for (at, flip) in damage {
                let at = at % bytes.len();
                bytes[at] ^= flip;
            }
            read_until_refused(&mut Reader::new(Sender::Client, max), &bytes, piece, max)?;
        }

        /// Messages cut into fragments at any points, with pings between them, under any
        /// masks, read in pieces of any size: each message comes out whole, or as
        /// `TooBig` when it is over the bound, in the order sent.
        #[test]
        fn messages_come_out_as_sent(
            sent in prop::collection::vec(sent(), 1..12),
            mask in any::<[u8; 4]>(),
            piece in 1usize..400,
            max in 0usize..400,
        ) {
            let mut bytes = Vec::new();
            let mut want = Vec::new();
            for s in &sent {
                match s {
                    Sent::Ping(p) => {
                        bytes.extend(client_frame(true, PING, mask, p));
                        want.push(Event::Ping(p.clone()));
                    }
                    Sent::Message { payload, cuts } => {
                        let mut cuts: Vec<usize> =
                            cuts.iter().map(|c| c % (payload.len() + 1)).collect();
                        cuts.sort_unstable();
                        cuts.push(payload.len());
                        let mut from = 0;
                        for (i, &to) in cuts.iter().enumerate() {
                            let opcode = if i == 0 { TEXT } else { CONTINUATION };
                            let fin = i + 1 == cuts.len();
                            bytes.extend(client_frame(fin, opcode, mask, &payload[from..to]));
                            from = to;
                        }
                        want.push(if payload.len() > max {
                            Event::TooBig
                        } else {
                            Event::Message(payload.clone())
                        });
                    }
                }
            }
            let mut r = Reader::new(Sender::Client, max);
            prop_assert_eq!(read_in_pieces(&mut r, &bytes, piece).unwrap(), want);
        }
    }
}
