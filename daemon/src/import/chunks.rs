//! Work cut into pieces that run on separate threads: a JSONL text cut at line ends
//! (parsing each line is independent of the others; what joins them, relinking and
//! de-duplication, runs after, in order), and the records an import checks and
//! serialises. Together they are most of an import's time on this side of the store.

/// Below this many bytes a text is one piece: a thread costs more than it saves.
pub const MIN_PIECE_BYTES: usize = 128 * 1024;

/// A piece of the text: whole lines, `first_line` being the 1-based number of its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    pub text: &'a str,
    pub first_line: usize,
}

/// Cuts `text` into at most `parts` pieces of about equal size, each cut right after a
/// `\n` (so no line is split and `str::lines` of the pieces, in order, yields the lines
/// of `text`), none shorter than `min_bytes` except the last.
pub fn split(text: &str, parts: usize, min_bytes: usize) -> Vec<Piece<'_>> {
    let parts = parts.clamp(1, (text.len() / min_bytes.max(1)).max(1));
    let target = text.len().div_ceil(parts);
    let mut pieces = Vec::with_capacity(parts);
    let (mut start, mut first_line) = (0, 1);
    while pieces.len() + 1 < parts {
        let want = (start + target).min(text.len());
        let Some(nl) = text.as_bytes()[want..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let end = want + nl + 1;
        if end >= text.len() {
            break;
        }
        let piece = &text[start..end];
        pieces.push(Piece {
            text: piece,
            first_line,
        });
        first_line += piece.bytes().filter(|&b| b == b'\n').count();
        start = end;
    }
    pieces.push(Piece {
        text: &text[start..],
        first_line,
    });
    pieces
}

/// Runs `f` on every piece, the first on this thread and each other on a thread of its
/// own, and returns the results in the pieces' order. A piece is anything a thread can
/// take: a [`Piece`] of text, a slice of records.
pub fn map<P, T, F>(pieces: impl IntoIterator<Item = P>, f: F) -> Vec<T>
where
    P: Send,
    T: Send,
    F: Fn(P) -> T + Sync,
{
    let mut pieces = pieces.into_iter();
    let Some(first) = pieces.next() else {
        return Vec::new();
    };
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = pieces.map(|p| s.spawn(move || f(p))).collect();
        let mut out = Vec::with_capacity(handles.len() + 1);
        out.push(f(first));
        for h in handles {
            match h.join() {
                Ok(v) => out.push(v),
                // A panic in a piece is a bug; let it surface as it would have inline.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        out
    })
}

/// The length of the slices that cut `len` items into [`parts`] pieces of at least
/// `min_len` items each (the last may be shorter), for `chunks`/`chunks_mut`.
pub fn slice_len(len: usize, min_len: usize) -> usize {
    len.div_ceil(parts()).max(min_len).max(1)
}

/// How many pieces to cut a text into on this machine.
pub fn parts() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn numbered(pieces: &[Piece<'_>]) -> Vec<(usize, String)> {
        pieces
            .iter()
            .flat_map(|p| {
                p.text
                    .lines()
                    .enumerate()
                    .map(move |(i, l)| (p.first_line + i, l.to_string()))
            })
            .collect()
    }

    proptest! {
        /// The pieces hold the text's lines, in order, with their numbers, whatever the
        /// line ends (`\n`, `\r\n`, blank lines, none at the end).
        #[test]
        fn pieces_keep_every_line_and_its_number(
            lines in proptest::collection::vec("[a-z{}\"\r]{0,12}", 0..60),
            parts in 1usize..6,
            min in 1usize..40,
            trailing in any::<bool>(),
        ) {
            let mut text = lines.join("\n");
            if trailing {
                text.push('\n');
            }
            let pieces = split(&text, parts, min);
            prop_assert!(pieces.len() <= parts);
            prop_assert_eq!(pieces.iter().map(|p| p.text).collect::<String>(), text.clone());
            for p in &pieces[..pieces.len() - 1] {
                prop_assert!(p.text.ends_with('\n') && p.text.len() >= min);
            }
            let whole: Vec<(usize, String)> = text
                .lines()
                .enumerate()
                .map(|(i, l)| (i + 1, l.to_string()))
                .collect();
            prop_assert_eq!(numbered(&pieces), whole);
        }
    }

    #[test]
    fn a_long_text_is_cut_and_mapped_in_order() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let pieces = split(&text, 4, 1024);
        assert_eq!(pieces.len(), 4);
        let firsts = map(pieces.iter().copied(), |p| {
            p.text.lines().next().map(str::to_string)
        });
        let expected: Vec<Option<String>> = pieces
            .iter()
            .map(|p| Some(format!("line {}", p.first_line - 1)))
            .collect();
        assert_eq!(firsts, expected);
        // A short text stays whole.
        assert_eq!(split("a\nb\n", 4, 1024).len(), 1);
    }
}
