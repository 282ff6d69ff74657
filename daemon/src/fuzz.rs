//! Fuzzing the parsers that take outside input: JSON-RPC params, record validation, Claude
//! Code import, front matter (rules and skills) and `@include` scanning. Only the stable toolchain exists
//! here, so this is proptest rather than a coverage-guided fuzzer: each target gets
//! arbitrary strings, arbitrary JSON, and random byte-level mutations of the checked-in
//! corpus (`daemon/fuzz/corpus/<target>/`), which is also replayed as is. The property
//! is the hardening one: no panic, no hang, and errors that name something.
//!
//! Short run (CI): the default 256 cases per target. Long run:
//! `CTXD_FUZZ_CASES=200000 cargo test -p ctxd --release --lib fuzz` (docs/development.md, "Fuzzing").
//! A failing case is minimised by proptest and printed; add it to the corpus.

use std::path::{Path, PathBuf};

use ctxd_protocol::*;
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config() -> Config {
    let cases = std::env::var("CTXD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

fn corpus(target: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let seeds: Vec<String> = files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(!seeds.is_empty(), "no corpus in {}", dir.display());
    seeds
}

/// A corpus seed with random edits: bytes replaced, inserted, deleted, spans duplicated.
fn mutated(seeds: Vec<String>) -> impl Strategy<Value = String> {
    let edits = prop::collection::vec((any::<u8>(), any::<prop::sample::Index>(), 0u8..4), 0..12);
    (prop::sample::select(seeds), edits).prop_map(|(seed, edits)| {
        let mut b = seed.into_bytes();
        for (byte, at, op) in edits {
            let i = if b.is_empty() { 0 } else { at.index(b.len()) };
            match op {
                0 if !b.is_empty() => b[i] = byte,
                1 => b.insert(i, byte),
                2 if !b.is_empty() => {
                    b.remove(i);
                }
                _ => {
                    let end = (i + byte as usize).min(b.len());
                    let span = b[i..end].to_vec();
                    b.splice(i..i, span);
                }
            }
        }
        String::from_utf8_lossy(&b).into_owned()
    })
}

/// Arbitrary JSON, biased towards the record and params vocabulary.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let words = prop::sample::select(vec![
        "type",
        "user",
        "assistant",
        "system",
        "attachment",
        "content",
        "text",
        "tool_use",
        "tool_result",
        "id",
        "tool_use_id",
        "input",
        "uuid",
        "parent_uuid",
        "timestamp",
        "message",
        "usage",
        "input_tokens",
        "source",
        "image",
        "session_id",
        "records",
        "cache_control",
        "is_error",
        "subtype",
        "data",
        "meta",
        "model",
        "context_window",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        words.clone().prop_map(|w| Value::String(w.to_string())),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((words.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// Any text: arbitrary, a mutated seed, or JSON.
fn text(target: &str) -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        mutated(corpus(target)),
        json_value().prop_map(|v| v.to_string()),
    ]
}

fn check_params(raw: &str) {
    let params = jsonrpsee::types::Params::new(Some(raw));
    macro_rules! each {
        ($($t:ty),*) => {$(
            if let Err(e) = crate::rpc::parse_params::<$t>(&params) {
                let data = e.data().map(|d| d.get().to_string()).unwrap_or_default();
                assert!(data.contains("\"field\""), "{raw:?}: {e:?}");
            }
        )*};
    }
    each!(
        AppendParams,
        SessionCreateParams,
        SessionUpdateParams,
        CompileParams,
        SessionImportParams,
        ReportErrorParams,
        SnipParams,
        MemoryUpdateParams
    );
    if let Ok(mut p) = crate::rpc::parse_params::<AppendParams>(&params) {
        check_records(&mut p.records);
    }
}

fn check_records(records: &mut [RecordInput]) {
    if let Err(e) = ctxd_engine::validate::validate_batch(records) {
        match e {
            ctxd_engine::Error::Invalid { field, .. } => {
                assert!(field.starts_with("records["), "{field}");
            }
            other => panic!("validation failed with {other:?}"),
        }
    }
}

fn check_record(value: serde_json::Value) {
    if let Ok(r) = serde_json::from_value::<RecordInput>(value) {
        check_records(&mut [r]);
    }
}

fn check_import(jsonl: &str) {
    use ctxd_engine::import::claude_code::{ImportError, parse};
    match parse(jsonl) {
        Ok(imported) => {
            assert_eq!(imported.records.len(), imported.source_lines.len());
            let mut records = imported.records;
            // Whatever the import made either validates or is refused by name.
            check_records(&mut records);
        }
        Err(ImportError::Malformed { line, .. }) => {
            assert!(line >= 1 && line <= jsonl.lines().count().max(1));
        }
        Err(ImportError::Empty) => {}
        Err(e @ (ImportError::TooLong { .. } | ImportError::Read(_) | ImportError::Changed)) => {
            panic!("a text in memory is neither read, bounded nor changed: {e}");
        }
    }
}

fn check_front_matter(raw: &str) {
    let parsed =
        ctxd_engine::discovery::parse_front_matter(raw, Path::new("/repo/.claude/rules/x.md"));
    assert!(parsed.body.len() <= raw.len());
}

fn check_skill(raw: &str) {
    match ctxd_engine::discovery::skills::parse("s", raw) {
        Ok(def) => assert_eq!(def.name, "s"),
        Err(reason) => assert!(!reason.is_empty(), "{raw:?}"),
    }
}

fn check_include(body: &str) {
    let targets = ctxd_engine::discovery::include_targets(
        body,
        Path::new("/repo/docs/CLAUDE.md"),
        Path::new("/home/u"),
    );
    for t in targets {
        assert!(t.is_absolute(), "{t:?} from {body:?}");
    }
}

#[test]
fn corpus_replays_cleanly() {
    corpus("params").iter().for_each(|s| check_params(s));
    for s in corpus("record") {
        check_record(serde_json::from_str(&s).expect("record seeds are JSON"));
    }
    corpus("import").iter().for_each(|s| check_import(s));
    corpus("front_matter")
        .iter()
        .for_each(|s| check_front_matter(s));
    corpus("include").iter().for_each(|s| check_include(s));
    corpus("skill").iter().for_each(|s| check_skill(s));
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_rpc_params(raw in text("params")) {
        check_params(&raw);
    }

    #[test]
    fn fuzz_record_validation(value in json_value(), seed in mutated(corpus("record"))) {
        check_record(value);
        if let Ok(v) = serde_json::from_str(&seed) {
            check_record(v);
        }
    }

    #[test]
    fn fuzz_claude_code_import(lines in prop::collection::vec(text("import"), 1..6)) {
        check_import(&lines.join("\n"));
    }

    #[test]
    fn fuzz_front_matter(raw in text("front_matter")) {
        check_front_matter(&raw);
    }

    #[test]
    fn fuzz_skill_front_matter(raw in text("skill")) {
        check_skill(&raw);
    }

    #[test]
    fn fuzz_include_scanning(body in text("include")) {
        check_include(&body);
    }
}
