//! Messages over the size bound, dropped on their way in so that the connection goes on.
//!
//! tungstenite refuses a message over its bound with an error after which the stream
//! cannot be read on (the rest of the frame is still in the socket), so a client that
//! sent one request too big would lose its connection, and its subscriptions with it.
//! The bytes from the client therefore pass through `Oversize` first. It reads just
//! enough of each frame's header (RFC 6455 §5.2) to know a data message's size: a
//! message within the bound reaches tungstenite unchanged; one over it is read and
//! dropped as it comes, never held, and a pong carrying the connection's marker takes
//! its place, so the connection answers -32007 for it where it stood among the client's
//! messages (after a ping sent before its last fragment, before the next call). A
//! fragmented message is held until its last frame shows it fits, at most the bound;
//! control frames between its fragments pass at once.
//!
//! Owning this much framing has a reason a user feels (one oversized call does not cost
//! the connection), and it stays small: the moment a header is one this reader does not
//! accept, every byte from there on goes to tungstenite as it came, and tungstenite's
//! rules decide the close code.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What is read from the socket at a time.
const READ_CHUNK: usize = 16 * 1024;
/// Capacity kept by the output buffer between reads; a released fragmented message may
/// have grown it to the bound.
const KEPT_CAPACITY: usize = 64 * 1024;
/// The payload of the pong that stands for a dropped message: random per connection, so
/// a pong the client sends itself is not taken for one.
pub(crate) type Marker = [u8; 16];

/// A client's pong frame carrying `marker` (masked, as a client's frames are; the key is
/// zero, so the payload reads as written).
fn marker_pong(marker: &Marker) -> Vec<u8> {
    let mut frame = vec![0x8A, 0x80 | 16, 0, 0, 0, 0];
    frame.extend_from_slice(marker);
    frame
}

/// A client's byte stream with messages over `max` bytes dropped, each replaced by a
/// pong carrying the connection's marker.
pub(crate) struct Oversize<S> {
    inner: S,
    filter: Filter,
    scratch: Box<[u8]>,
    out: Vec<u8>,
    taken: usize,
}

impl<S> Oversize<S> {
    /// Wraps `inner`; `early` is what was read from it before, filtered at once (its
    /// result is for tungstenite to read first). Returns the marker the pongs of dropped
    /// messages carry.
    pub(crate) fn new(inner: S, max: usize, early: &[u8]) -> (Self, Vec<u8>, Marker) {
        let marker = uuid::Uuid::new_v4().into_bytes();
        let mut filter = Filter::new(u64::try_from(max).unwrap_or(u64::MAX), &marker);
        let mut first = Vec::with_capacity(early.len());
        filter.feed(early, &mut first);
        let this = Oversize {
            inner,
            filter,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            out: Vec::new(),
            taken: 0,
        };
        (this, first, marker)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Oversize<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.taken < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.taken);
                buf.put_slice(&this.out[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.out.len() {
                    this.out.clear();
                    this.out.shrink_to(KEPT_CAPACITY);
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut chunk))?;
            let got = chunk.filled().len();
            if got == 0 {
                return Poll::Ready(Ok(()));
            }
            this.filter.feed(&this.scratch[..got], &mut this.out);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Oversize<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where a frame's payload goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Keep {
    Pass,
    Hold,
    Drop,
}

#[derive(Debug)]
enum State {
    /// Reading a frame's header, kept in `Filter::header` until it is whole.
    Header,
    Payload {
        left: u64,
        keep: Keep,
        fin: bool,
    },
    /// A header this reader does not accept was seen: everything passes as it came.
    Through,
}

/// A fragmented data message under way.
#[derive(Debug)]
struct Fragmented {
    size: u64,
    dropping: bool,
}

/// The frame reader, apart from the socket so that it can be fed any split of the bytes.
#[derive(Debug)]
struct Filter {
    max: u64,
    /// What takes a dropped message's place.
    pong: Vec<u8>,
    state: State,
    header: Vec<u8>,
    message: Option<Fragmented>,
    held: Vec<u8>,
}

impl Filter {
    fn new(max: u64, marker: &Marker) -> Self {
        Filter {
            max,
            pong: marker_pong(marker),
            state: State::Header,
            header: Vec::with_capacity(14),
            message: None,
            held: Vec::new(),
        }
    }

    /// Feeds what came from the client; what tungstenite is to read goes to `out`.
    /// Returns how many messages were dropped (each with its pong in `out`).
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> usize {
        let mut dropped = 0;
        loop {
            match self.state {
                State::Through => {
                    out.extend_from_slice(input);
                    return dropped;
                }
                State::Header => {
                    if input.is_empty() {
                        return dropped;
                    }
                    let need = header_len(&self.header);
                    let n = (need - self.header.len()).min(input.len());
                    self.header.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if self.header.len() == header_len(&self.header) {
                        self.start_frame(out);
                    }
                }
                State::Payload { left, keep, fin } => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                    match keep {
                        Keep::Pass => out.extend_from_slice(&input[..n]),
                        Keep::Hold => self.held.extend_from_slice(&input[..n]),
                        Keep::Drop => {}
                    }
                    input = &input[n..];
                    let left = left - n as u64;
                    if left > 0 {
                        self.state = State::Payload { left, keep, fin };
                        return dropped;
                    }
                    self.state = State::Header;
                    if keep != Keep::Pass && fin {
                        dropped += self.end_message(out);
                    }
                }
            }
        }
    }

    /// Decides where a frame whose header is whole goes.
    fn start_frame(&mut self, out: &mut Vec<u8>) {
        let h = &self.header;
        let fin = h[0] & 0x80 != 0;
        let reserved = h[0] & 0x70 != 0;
        let opcode = h[0] & 0x0F;
        let masked = h[1] & 0x80 != 0;
        let len = match h[1] & 0x7F {
            126 => u64::from(u16::from_be_bytes([h[2], h[3]])),
            127 => u64::from_be_bytes([h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9]]),
            n => u64::from(n),
        };
        let keep = match opcode {
            _ if reserved || !masked || len >> 63 != 0 => None,
            0x8..=0xA if fin && len <= 125 => Some(Keep::Pass),
            0x1 | 0x2 if self.message.is_none() => {
                if len > self.max {
                    self.message = Some(Fragmented {
                        size: len,
                        dropping: true,
                    });
                    Some(Keep::Drop)
                } else if fin {
                    Some(Keep::Pass)
                } else {
                    self.message = Some(Fragmented {
                        size: len,
                        dropping: false,
                    });
                    Some(Keep::Hold)
                }
            }
            0x0 => match &mut self.message {
                Some(m) => {
                    m.size = m.size.saturating_add(len);
                    if !m.dropping && m.size > self.max {
                        m.dropping = true;
                        self.held = Vec::new();
                    }
                    Some(if m.dropping { Keep::Drop } else { Keep::Hold })
                }
                None => None,
            },
            _ => None,
        };
        match keep {
            None => {
                out.append(&mut self.held);
                out.append(&mut self.header);
                self.state = State::Through;
            }
            Some(keep) => {
                match keep {
                    Keep::Pass => out.extend_from_slice(&self.header),
                    Keep::Hold => self.held.extend_from_slice(&self.header),
                    Keep::Drop => {}
                }
                self.header.clear();
                self.state = State::Payload {
                    left: len,
                    keep,
                    fin,
                };
            }
        }
    }

    /// The last frame of a held or dropped message was read: it goes on, or its pong
    /// does. Returns the messages dropped.
    fn end_message(&mut self, out: &mut Vec<u8>) -> usize {
        let dropping = self.message.take().is_some_and(|m| m.dropping);
        if dropping {
            out.extend_from_slice(&self.pong);
            1
        } else {
            out.append(&mut self.held);
            self.held.shrink_to(KEPT_CAPACITY);
            0
        }
    }
}

/// The length of the header that starts with `h` (2 until its second byte is known).
fn header_len(h: &[u8]) -> usize {
    let Some(&second) = h.get(1) else {
        return 2;
    };
    let extended = match second & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    2 + extended + mask
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASK: [u8; 4] = [1, 2, 3, 4];
    const MARKER: Marker = [9; 16];

    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => f.push(0x80 | u8::try_from(n).unwrap()),
            n if n <= usize::from(u16::MAX) => {
                f.push(0x80 | 126);
                f.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
            }
            n => {
                f.push(0x80 | 127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(&MASK);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
        f
    }

    /// Feeds `input` split at every position (and whole), checking each split gives the
    /// same as feeding it byte by byte.
    fn filtered(max: u64, input: &[u8]) -> (Vec<u8>, usize) {
        let mut whole = Filter::new(max, &MARKER);
        let mut expected = Vec::new();
        let dropped = whole.feed(input, &mut expected);
        for at in 0..=input.len() {
            let mut f = Filter::new(max, &MARKER);
            let mut out = Vec::new();
            let mut n = f.feed(&input[..at], &mut out);
            n += f.feed(&input[at..], &mut out);
            assert_eq!((&out, n), (&expected, dropped), "split at {at}");
        }
        let mut f = Filter::new(max, &MARKER);
        let mut out = Vec::new();
        let n: usize = input.iter().map(|b| f.feed(&[*b], &mut out)).sum();
        assert_eq!((&out, n), (&expected, dropped), "byte by byte");
        (expected, dropped)
    }

    #[test]
    fn messages_within_the_bound_pass_unchanged() {
        let mut input = frame(true, 0x1, b"{\"a\":1}");
        input.extend(frame(true, 0x9, b"ping"));
        input.extend(frame(true, 0x2, &[7; 300]));
        input.extend(frame(true, 0x1, &[b'x'; 1000]));
        assert_eq!(filtered(1000, &input), (input, 0));
    }

    #[test]
    fn a_message_over_the_bound_becomes_a_pong_and_the_next_passes() {
        let mut input = frame(true, 0x1, &[b'x'; 1001]);
        let next = frame(true, 0x1, b"{}");
        input.extend(&next);
        let mut expected = marker_pong(&MARKER);
        expected.extend(&next);
        assert_eq!(filtered(1000, &input), (expected, 1));
    }

    #[test]
    fn fragments_are_held_until_they_fit_and_pings_between_them_pass_first() {
        let first = frame(false, 0x1, &[b'x'; 400]);
        let ping = frame(true, 0x9, b"p");
        let last = frame(true, 0x0, &[b'y'; 400]);
        let input = [first.clone(), ping.clone(), last.clone()].concat();
        assert_eq!(filtered(1000, &input), ([ping, first, last].concat(), 0));
    }

    #[test]
    fn fragments_over_the_bound_are_dropped_whole() {
        let ping = frame(true, 0x9, b"p");
        let input = [
            frame(false, 0x1, &[b'x'; 600]),
            ping.clone(),
            frame(false, 0x0, &[b'y'; 600]),
            frame(true, 0x0, &[b'z'; 10]),
            frame(true, 0x1, b"{}"),
        ]
        .concat();
        let expected = [ping, marker_pong(&MARKER), frame(true, 0x1, b"{}")].concat();
        assert_eq!(filtered(1000, &input), (expected, 1));
    }

    #[test]
    fn a_header_it_does_not_accept_passes_everything_as_it_came() {
        // Unmasked; a 64-bit length with its top bit set; a continuation with nothing
        // begun; reserved bits: each is tungstenite's to refuse.
        let unmasked = [0x81, 0x02, b'{', b'}'];
        let mut impossible = vec![0x81, 0x80 | 127];
        impossible.extend_from_slice(&(1u64 << 63).to_be_bytes());
        impossible.extend_from_slice(&MASK);
        let stray = frame(true, 0x0, b"x");
        let mut reserved = frame(true, 0x1, b"x");
        reserved[0] |= 0x40;
        for broken in [unmasked.to_vec(), impossible, stray, reserved] {
            let small = frame(true, 0x1, b"{}");
            let input = [small.clone(), broken.clone(), frame(true, 0x1, &[0; 2000])].concat();
            assert_eq!(filtered(1000, &input), (input, 0), "{broken:?}");
        }
    }

    #[test]
    fn a_fragmented_message_held_when_a_broken_frame_comes_goes_on_first() {
        let first = frame(false, 0x1, b"ab");
        let broken = [0x82, 0x01, b'x'];
        let input = [first.clone(), broken.to_vec()].concat();
        assert_eq!(filtered(1000, &input), (input, 0));
    }
}
