//! Relevant memories: the scorer on a small corpus, the caps, the budget, no repeats.

use ctxd_protocol::{Record, RecordKind};

use super::*;

fn c<'a>(path: &'a str, name: &'a str, description: &'a str, body: &'a str) -> Candidate<'a> {
    Candidate {
        path,
        name,
        description,
        body,
    }
}

#[test]
fn the_scorer_picks_the_right_file_on_a_small_corpus() {
    let corpus = [
        c(
            "/m/testing.md",
            "testing",
            "How to run the test suite",
            "Run cargo test --workspace; the black-box tests start a daemon on a temp socket.",
        ),
        c(
            "/m/deploy.md",
            "deploy",
            "Release and deployment steps",
            "Tag the release, push the tag, CI publishes the crate.",
        ),
        c(
            "/m/db.md",
            "database-migrations",
            "SQLite schema changes",
            "Migrations are append-only: never edit a shipped migration, add a new directory.",
        ),
        c(
            "/m/style.md",
            "code-style",
            "Formatting and naming",
            "rustfmt defaults; names explain themselves; comments say why.",
        ),
        c(
            "/m/user.md",
            "user-preferences",
            "The user prefers short answers",
            "Answer briefly and lead with the result.",
        ),
    ];
    assert_eq!(
        score(
            "how do I add a new migration to the sqlite schema?",
            &corpus,
            5
        )[0],
        2
    );
    assert_eq!(
        score(
            "the deployment failed after tagging the release",
            &corpus,
            5
        )[0],
        1
    );
    assert_eq!(score("run the tests", &corpus, 5)[0], 0);
    // Nothing in common: nothing relevant.
    assert!(score("zebra xylophone", &corpus, 5).is_empty());
    assert!(score("", &corpus, 5).is_empty());
    // The cap holds and the order is deterministic.
    let many: Vec<Candidate<'_>> = (0..12)
        .map(|_| c("/m/x.md", "notes", "parser notes", "parser"))
        .collect();
    let got = score("parser", &many, 5);
    assert_eq!(got.len(), 5);
    assert_eq!(got, score("parser", &many, 5));
}

#[test]
fn files_are_cut_at_200_lines_or_4_kb_with_a_note() {
    let long: String = (0..300).map(|i| format!("line {i}\n")).collect();
    let cut_lines = cut(&long, "/m/a.md");
    assert!(cut_lines.contains(
        "line 199\n\n> This memory file was cut (first 200 lines shown). Read /m/a.md for the rest."
    ));
    assert!(!cut_lines.contains("line 200"));
    let wide = "x".repeat(100) + "\n";
    let big: String = wide.repeat(100);
    let cut_bytes = cut(&big, "/m/b.md");
    let (text, note) = cut_bytes.split_once("\n\n> ").unwrap();
    assert!(text.len() <= MAX_BYTES && text.ends_with('x'));
    assert!(note.starts_with("This memory file was cut (first 4 KB shown)"));
    assert_eq!(cut("short\n", "/m/c.md"), "short");
}

fn chosen(path: &str, bytes: usize) -> Chosen {
    Chosen {
        path: path.into(),
        content: "y".repeat(bytes),
        mtime_ms: 0,
        header: header(path, 0),
    }
}

fn as_record(v: serde_json::Value) -> Record {
    Record {
        seq: 1,
        is_meta: true,
        attachment: Some(v),
        ..Record::new(RecordKind::Attachment, "a", "t", vec![])
    }
}

#[test]
fn five_files_at_most_never_twice_within_the_budget() {
    let picks: Vec<Chosen> = (0..7)
        .map(|i| chosen(&format!("/m/{i}.md"), 1000))
        .collect();
    let v = attachment(picks, &Surfaced::default()).unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), MAX_FILES);
    // What the view shows is counted: paths and bytes.
    let seen = surfaced(&[as_record(v)]);
    assert_eq!(seen.bytes, 5000);
    assert!(seen.paths.contains("/m/0.md"));
    let again = attachment(vec![chosen("/m/0.md", 10), chosen("/m/9.md", 10)], &seen).unwrap();
    assert_eq!(again["memories"].as_array().unwrap().len(), 1);
    assert_eq!(again["memories"][0]["path"], "/m/9.md");
    // Named twice in one pick (a model selector may): shown once.
    let twice = vec![chosen("/m/a.md", 10), chosen("/m/a.md", 10)];
    let v = attachment(twice, &Surfaced::default()).unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), 1);
    // The session budget: 60 KB over the view.
    let nearly = Surfaced {
        paths: Default::default(),
        bytes: SESSION_BUDGET - 1500,
    };
    let v = attachment(
        vec![chosen("/m/a.md", 1000), chosen("/m/b.md", 1000)],
        &nearly,
    )
    .unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), 1);
    let full = Surfaced {
        paths: Default::default(),
        bytes: SESSION_BUDGET,
    };
    assert!(attachment(vec![chosen("/m/a.md", 1)], &full).is_none());
}

#[test]
fn headers_age_and_render() {
    assert_eq!(header("/m/a.md", 0), "Memory /m/a.md:");
    assert!(header("/m/a.md", 3).contains("saved 3 days ago"));
    let v = attachment(vec![chosen("/m/a.md", 3)], &Surfaced::default()).unwrap();
    assert_eq!(
        render(v.as_object().unwrap()).unwrap(),
        "Memory /m/a.md:\n\nyyy"
    );
}
