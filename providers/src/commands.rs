//! The commands a shell command line runs, for the summary's "Commands run": program
//! names (with the subcommand of tools that have them, `git commit`), never words of a
//! heredoc body, of quoted text or of a command substitution.
//!
//! The line is cut into simple commands at unquoted `;`, `&&`, `||`, `|`, `&` and line
//! ends, heredoc bodies are dropped first, and each simple command is split into words
//! by `shlex` (POSIX quoting rules). Deterministic: same text, same list.

/// Wrappers that run the command after them.
const WRAPPERS: [&str; 7] = ["sudo", "time", "env", "exec", "nohup", "command", "builtin"];
/// Shell keywords that open or close a compound command; the command after an opening
/// one is the program.
const KEYWORDS: [&str; 8] = ["if", "then", "else", "elif", "do", "while", "until", "!"];
/// Keywords whose simple command runs nothing worth naming.
const SKIPPED: [&str; 6] = ["cd", "for", "done", "fi", "esac", "case"];
/// Programs whose first argument names what they do.
const WITH_SUBCOMMANDS: [&str; 24] = [
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "docker",
    "kubectl",
    "go",
    "mix",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "gh",
    "brew",
    "apt",
    "apt-get",
    "rustup",
    "dotnet",
    "bundle",
    "terraform",
    "helm",
];
/// At most this many commands per command line.
const MAX_PER_LINE: usize = 15;

/// The commands `cmd` runs, in order, each once.
pub(crate) fn programs(cmd: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for segment in simple_commands(cmd) {
        if let Some(name) = command_name(&segment)
            && !out.contains(&name)
        {
            out.push(name);
        }
        if out.len() >= MAX_PER_LINE {
            break;
        }
    }
    out
}

/// Where the scanner is: in commands (the top level or a `$(…)`), or inside quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Command,
    Single,
    Double,
    Backquote,
}

/// The simple commands of a command line: cut at `;`, `&&`, `||`, `|`, `&` and line ends
/// of the top level. Quoted text, `$(…)` and backquotes stay inside their word (quotes
/// nest inside a substitution as the shell nests them), and heredoc bodies (the lines
/// after `<<WORD` up to the line `WORD`) are dropped.
fn simple_commands(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut stack = vec![Ctx::Command];
    // Heredoc delimiters still to be read, in the order their operators appeared.
    let mut pending: std::collections::VecDeque<(String, bool)> = Default::default();
    for line in cmd.split_inclusive('\n') {
        if let Some((delimiter, strip_tabs)) = pending.front() {
            let bare = line.trim_end_matches(['\n', '\r']);
            let bare = if *strip_tabs {
                bare.trim_start_matches('\t')
            } else {
                bare
            };
            if bare == delimiter {
                pending.pop_front();
            }
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            let top = stack.last().copied().unwrap_or(Ctx::Command);
            let mut cut = false;
            match (top, c) {
                (Ctx::Single, '\'') => {
                    stack.pop();
                }
                (Ctx::Single, _) => {}
                (_, '\\') => {
                    // An escaped character is the character.
                    current.push(c);
                    if let Some(n) = next {
                        current.push(n);
                    }
                    i += 2;
                    continue;
                }
                (Ctx::Double, '"') | (Ctx::Backquote, '`') => {
                    stack.pop();
                }
                (Ctx::Command | Ctx::Double, '$') if next == Some('(') => {
                    stack.push(Ctx::Command);
                    current.push_str("$(");
                    i += 2;
                    continue;
                }
                (Ctx::Command | Ctx::Double, '`') => stack.push(Ctx::Backquote),
                (Ctx::Double | Ctx::Backquote, _) => {}
                (Ctx::Command, '\'') => stack.push(Ctx::Single),
                (Ctx::Command, '"') => stack.push(Ctx::Double),
                (Ctx::Command, ')') if stack.len() > 1 => {
                    stack.pop();
                }
                (Ctx::Command, '<') if next == Some('<') => {
                    if chars.get(i + 2) == Some(&'<') {
                        // A here-string, not a heredoc.
                        current.push_str("<<<");
                        i += 3;
                        continue;
                    }
                    let (delimiter, used) = heredoc_delimiter(&chars[i + 2..]);
                    if let Some(d) = delimiter {
                        pending.push_back(d);
                    }
                    current.extend(&chars[i..i + 2 + used]);
                    i += 2 + used;
                    continue;
                }
                (Ctx::Command, ';' | '|' | '\n') => cut = stack.len() == 1,
                // `2>&1`, `&>file` and `>&2` redirect; a lone `&` ends a command.
                (Ctx::Command, '&') => {
                    let prev = i.checked_sub(1).map(|p| chars[p]);
                    cut = stack.len() == 1 && !matches!(prev, Some('>' | '<')) && next != Some('>');
                }
                (Ctx::Command, _) => {}
            }
            if cut {
                out.push(std::mem::take(&mut current));
            } else {
                current.push(c);
            }
            i += 1;
        }
    }
    out.push(current);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Reads the word after `<<` (with `-`, blanks and quotes): `((delimiter, strips leading
/// tabs), characters used)`.
fn heredoc_delimiter(rest: &[char]) -> (Option<(String, bool)>, usize) {
    let mut j = 0;
    let strip_tabs = rest.first() == Some(&'-');
    if strip_tabs {
        j += 1;
    }
    while rest.get(j).is_some_and(|c| *c == ' ' || *c == '\t') {
        j += 1;
    }
    let start = j;
    while rest
        .get(j)
        .is_some_and(|c| !c.is_whitespace() && !";|&<>()".contains(*c))
    {
        j += 1;
    }
    let delimiter: String = rest[start..j]
        .iter()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let found = (!delimiter.is_empty()).then_some((delimiter, strip_tabs));
    (found, j)
}

/// The name of the program one simple command runs, with its subcommand when it has one.
fn command_name(segment: &str) -> Option<String> {
    let words: Vec<String> = shlex::Shlex::new(segment).collect();
    let mut words = words
        .iter()
        .map(|w| w.trim_start_matches(['(', '{']))
        .filter(|w| !w.is_empty())
        .skip_while(|w| {
            KEYWORDS.contains(w) || WRAPPERS.contains(w) || is_assignment(w) || w.starts_with('-')
        });
    let first = words.next()?;
    if SKIPPED.contains(&first) || first.contains(['>', '<']) {
        return None;
    }
    let program = first.rsplit('/').next().unwrap_or(first);
    let valid = program.len() <= 40
        && program.starts_with(|c: char| c.is_ascii_alphabetic())
        && program
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c));
    if !valid {
        return None;
    }
    let subcommand = words.next().filter(|w| {
        WITH_SUBCOMMANDS.contains(&program)
            && w.len() <= 30
            && w.starts_with(|c: char| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_:.".contains(c))
    });
    Some(match subcommand {
        Some(sub) => format!("{program} {sub}"),
        None => program.to_string(),
    })
}

/// `NAME=value` before a command sets its environment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_with_a_heredoc_message_is_one_command() {
        let cmd = "git add -A && git commit -m \"$(cat <<'EOF'\nfeat: Add Key with rotation and\nmore; words | here & there\n\nCo-Authored-By: Someone <a@b>\nEOF\n)\"";
        assert_eq!(programs(cmd), vec!["git add", "git commit"]);
    }

    #[test]
    fn a_quote_in_a_heredoc_body_does_not_leak() {
        let cmd = "git commit -m \"$(cat <<'EOF'\nDon\"t split; this | body\nEOF\n)\"\ngit push";
        assert_eq!(programs(cmd), vec!["git commit", "git push"]);
    }

    #[test]
    fn heredoc_bodies_are_not_commands() {
        let cmd = "cat > /tmp/x.py <<EOF\nimport os\nprint(1)\nEOF\npython3 /tmp/x.py\ncat <<-END\n\tnot; a | command\n\tEND\necho done";
        assert_eq!(programs(cmd), vec!["cat", "python3", "echo"]);
        // A here-string is not a heredoc: the next line is a command.
        assert_eq!(programs("grep x <<< \"$v\"\nls"), vec!["grep", "ls"]);
    }

    #[test]
    fn pipelines_lists_and_wrappers() {
        assert_eq!(
            programs("cd /repo && RUST_LOG=debug cargo test 2>&1 | tail -20"),
            vec!["cargo test", "tail"]
        );
        assert_eq!(
            programs("sudo -E apt-get install -y jq; time make -j4 & wait"),
            vec!["apt-get install", "make", "wait"]
        );
        assert_eq!(
            programs("if [ -f a ]; then ./build.sh; fi"),
            vec!["build.sh"]
        );
        assert_eq!(
            programs("npm run build &>/dev/null || echo failed"),
            vec!["npm run", "echo"]
        );
    }

    #[test]
    fn quoted_text_is_not_split() {
        assert_eq!(
            programs("echo \"a; b && c | d\" && printf '%s; x\\n' y"),
            vec!["echo", "printf"]
        );
        assert_eq!(programs("git log --format='%H | %s' -n 3"), vec!["git log"]);
        // Unbalanced quotes do not panic and still give the program.
        assert_eq!(programs("echo \"unterminated"), vec!["echo"]);
        // Quotes nest inside a substitution inside quotes.
        assert_eq!(
            programs("echo \"$(printf \"%s\" \"a;b\")\"; ls"),
            vec!["echo", "ls"]
        );
        assert_eq!(programs(""), Vec::<String>::new());
    }

    #[test]
    fn subcommands_only_for_tools_that_have_them() {
        assert_eq!(programs("rm -rf build"), vec!["rm"]);
        assert_eq!(programs("git -C /x status"), vec!["git"]);
        assert_eq!(programs("mix test --failed"), vec!["mix test"]);
        assert_eq!(programs("docker compose up -d"), vec!["docker compose"]);
    }
}
