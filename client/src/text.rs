//! Reading text files for the CLI, with errors that say where the text went wrong.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error("reading {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// `line` and `column` (byte offset within the line) are 1-based.
    #[error("{path}: line {line}, byte {column}: not valid UTF-8")]
    NotUtf8 {
        path: String,
        line: usize,
        column: usize,
    },
}

/// The file (or standard input for `-`) as UTF-8 text, or the line of its first invalid
/// byte sequence.
pub fn read_utf8(path: &Path) -> Result<String, TextError> {
    let name = path.display().to_string();
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b).map(|_| b)
    } else {
        std::fs::read(path)
    }
    .map_err(|source| TextError::Io {
        path: name.clone(),
        source,
    })?;
    utf8(bytes, &name)
}

/// `bytes` as a string, or where the first invalid sequence is.
pub fn utf8(bytes: Vec<u8>, name: &str) -> Result<String, TextError> {
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..bad];
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        TextError::NotUtf8 {
            path: name.to_string(),
            line: before.iter().filter(|b| **b == b'\n').count() + 1,
            column: bad - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_line_of_the_first_bad_byte() {
        let mut bytes = b"{\"a\":1}\n{\"b\":2}\n{\"c\":\"".to_vec();
        bytes.extend_from_slice(&[0xff, b'"', b'}', b'\n']);
        match utf8(bytes, "t.jsonl") {
            Err(TextError::NotUtf8 { line, column, .. }) => assert_eq!((line, column), (3, 7)),
            other => panic!("{other:?}"),
        }
        assert_eq!(utf8(b"ok\n".to_vec(), "t").unwrap(), "ok\n");
    }
}
