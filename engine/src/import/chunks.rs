//! Work cut into pieces that run on separate threads: a JSONL text cut at line ends
//! (parsing each line is independent of the others; what joins them, relinking and
//! de-duplication, runs after, in order), and the records an import checks and
//! serialises. Together they are most of an import's time on this side of the store.

use std::sync::OnceLock;

/// Below this many bytes a text is one piece: a thread costs more than it saves. (With
/// the pieces' threads kept, the 0.24 MB fixture's import went from 16–21 % to 21–24 % of
/// the parse rate when this fell from 128 KB, which left it one piece, to 32 KB.)
pub(crate) const MIN_PIECE_BYTES: usize = 32 * 1024;

/// A piece of the text: whole lines, `first_line` being the 1-based number of its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece<'a> {
    pub(crate) text: &'a str,
    pub(crate) first_line: usize,
}

/// Cuts `text` into at most `parts` pieces of about equal size, each cut right after a
/// `\n` (so no line is split and `str::lines` of the pieces, in order, yields the lines
/// of `text`), none shorter than `min_bytes` except the last.
pub(crate) fn split(text: &str, parts: usize, min_bytes: usize) -> Vec<Piece<'_>> {
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
        first_line += memchr::memchr_iter(b'\n', piece.as_bytes()).count();
        start = end;
    }
    pieces.push(Piece {
        text: &text[start..],
        first_line,
    });
    pieces
}

/// Runs `f` on every piece, the first on this thread and the others on the pieces'
/// threads, and returns the results in the pieces' order. A piece is anything a thread
/// can take: a [`Piece`] of text, a slice of records.
pub(crate) fn map<P, T, F>(pieces: impl IntoIterator<Item = P>, f: F) -> Vec<T>
where
    P: Send,
    T: Send,
    F: Fn(P) -> T + Sync,
{
    let mut pieces = pieces.into_iter();
    let Some(first) = pieces.next() else {
        return Vec::new();
    };
    let rest: Vec<P> = pieces.collect();
    let pool = match pool() {
        Some(pool) if !rest.is_empty() => pool,
        _ => return std::iter::once(first).chain(rest).map(f).collect(),
    };
    let f = &f;
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(rest.len()).collect();
    let head = pool.in_place_scope(|s| {
        for (piece, slot) in rest.into_iter().zip(slots.iter_mut()) {
            s.spawn(move |_| *slot = Some(f(piece)));
        }
        f(first)
    });
    // The scope returns once every spawned piece has run (a panic in one is re-raised
    // here), so every slot is filled.
    std::iter::once(Some(head)).chain(slots).flatten().collect()
}

/// The threads that run pieces, started with the first import and kept: a fresh thread
/// per piece cost its spawn and a fresh allocator heap, whose memory the kernel zeroes
/// on first touch (in the import bench, `perf` put those faults at 3 % of all samples;
/// with the kept threads they are gone). `None` if the threads cannot be started: the
/// pieces then run one after another on the caller's thread.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(parts())
            .thread_name(|i| format!("ctxd-pieces-{i}"))
            .build()
            .map_err(|e| tracing::warn!("no threads for pieces of imports: {e}"))
            .ok()
    })
    .as_ref()
}

/// The length of the slices that cut `len` items into [`parts`] pieces of at least
/// `min_len` items each (the last may be shorter), for `chunks`/`chunks_mut`.
pub(crate) fn slice_len(len: usize, min_len: usize) -> usize {
    len.div_ceil(parts()).max(min_len).max(1)
}

/// How many pieces to cut a text into on this machine. Asked once: the standard
/// library reads the cgroup's CPU quota from files at every call (in the import bench
/// it was a twentieth of a small import's time on the caller's thread).
pub(crate) fn parts() -> usize {
    static PARTS: OnceLock<usize> = OnceLock::new();
    *PARTS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
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
