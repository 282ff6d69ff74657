//! `cargo bench -p ctxd --bench capabilities`: the capability surface of issue 10.
//!
//! 1. steady-state compile time of a session with 1,000 skills and/or 200 deferred tools
//!    (everything already announced) against the same transcript with neither, and with
//!    5,000 skills — once announced, the listing must not make a compile O(skills); also
//!    the first, announcing compile;
//! 2. what a late MCP connect costs the next request: the bytes it adds and the bytes
//!    after the first byte that differs from the previous request (what the provider
//!    cannot serve from its prefix cache), as a delta attachment against rewriting the
//!    system section.
//!
//! Prints medians. Set `CTXD_BENCH_ITERS` to change the sample count.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Store;
use ctxd_engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::SystemClock;
use ctxd_protocol::*;

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn engine(dir: &Path) -> Arc<Engine> {
    std::fs::create_dir_all(dir).unwrap();
    let store = Store::open(&dir.join("bench.db")).unwrap();
    let e = Arc::new(
        Engine::new(store, dir, Arc::new(SystemClock)).with_discovery(DiscoveryDefaults {
            managed_root: dir.join("no-managed"),
            user_home: dir.join("no-home"),
        }),
    );
    e.start_watching().await.unwrap();
    e
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn tool(name: &str, deferred: bool) -> ToolSpec {
    ToolSpec {
        extra: Default::default(),
        name: name.into(),
        description: Some(format!("{name}: does one particular thing for the agent")),
        input_schema: Some(serde_json::json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "limit": {"type": "integer"}}})),
        server_type: None,
        max_result_size_chars: None,
        mcp_server: None,
        defer_loading: deferred,
    }
}

/// 100 turns, each a prompt, a Read and its result, and an answer.
fn transcript() -> Vec<RecordInput> {
    let mut out = Vec::new();
    for i in 0..100 {
        for v in [
            serde_json::json!({"type": "user", "content": format!("step {i}: {}", "please look at this part ".repeat(10))}),
            serde_json::json!({"type": "assistant", "message_id": format!("m{i}"), "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {"file_path": format!("/nowhere/f{i}.rs")}}]}),
            serde_json::json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "fn main() {}\n".repeat(40)}]}),
            serde_json::json!({"type": "assistant", "content": format!("done with step {i}")}),
        ] {
            out.push(serde_json::from_value(v).unwrap());
        }
    }
    out
}

async fn session(e: &Engine, cwd: &Path, tools: Vec<ToolSpec>) -> String {
    let sid = e
        .create_session(SessionCreateParams {
            cwd: cwd.display().to_string(),
            tools,
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    e.append(AppendParams {
        session_id: sid.clone(),
        agent_id: None,
        records: transcript(),
        expected_last_uuid: None,
    })
    .await
    .unwrap();
    sid
}

fn params(sid: &str) -> CompileParams {
    CompileParams {
        session_id: sid.to_string(),
        ..Default::default()
    }
}

async fn steady(e: &Engine, sid: &str) -> (Duration, usize) {
    let first = e.compile(params(sid)).await.unwrap();
    let mut times = Vec::new();
    for _ in 0..iters() {
        let t = Instant::now();
        let c = e.compile(params(sid)).await.unwrap();
        times.push(t.elapsed());
        assert_eq!(c.body.len(), first.body.len(), "nothing new to announce");
    }
    (median(times), first.body.len())
}

/// A session of `skills` skills (every tenth conditional, left dormant) and `deferred`
/// deferred tools: its steady compile time, request bytes and announcing compile.
async fn configured(
    e: &Engine,
    dir: &Path,
    skills: usize,
    deferred: usize,
) -> (Duration, usize, Duration) {
    let cwd = dir.join(format!("s{skills}-d{deferred}"));
    std::fs::create_dir_all(&cwd).unwrap();
    for i in 0..skills {
        let paths = if i % 10 == 0 {
            "paths: [\"src/**/*.rs\"]\n"
        } else {
            ""
        };
        write(
            &cwd.join(format!(".claude/skills/skill-{i:05}/SKILL.md")),
            &format!(
                "---\ndescription: Skill {i} does one particular thing in its particular way\n{paths}---\nSteps.\n"
            ),
        );
    }
    let mut tools = vec![
        tool("Read", false),
        tool("Bash", false),
        tool("ToolSearch", false),
    ];
    tools.extend((0..deferred).map(|i| tool(&format!("mcp__srv__tool_{i:03}"), true)));
    let sid = session(e, &cwd, tools).await;
    let t = Instant::now();
    e.compile(params(&sid)).await.unwrap();
    let first = t.elapsed();
    let (steady, bytes) = steady(e, &sid).await;
    (steady, bytes, first)
}

/// `CTXD_BENCH_ONLY=SKILLS,DEFERRED` runs that one configuration and nothing else, for
/// instruction counts that do not depend on the machine's load:
/// `valgrind --tool=callgrind` with `CTXD_BENCH_ITERS=1` and `=11`, the difference / 10.
fn only() -> Option<(usize, usize)> {
    let v = std::env::var("CTXD_BENCH_ONLY").ok()?;
    let (a, b) = v.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

async fn bench_compile(dir: &Path) {
    let e = engine(&dir.join("compile")).await;
    if let Some((skills, deferred)) = only() {
        let (t, bytes, _) = configured(&e, dir, skills, deferred).await;
        println!(
            "compile  {skills} skills + {deferred} deferred tools: median {t:?} ({bytes} bytes)"
        );
        return;
    }
    let (base, base_bytes, _) = configured(&e, dir, 0, 0).await;
    println!(
        "compile  100 turns, no skills, no deferred tools: median {base:?} ({base_bytes} bytes)"
    );
    for (skills, deferred) in [(1000, 0), (0, 200), (1000, 200), (5000, 200)] {
        let (t, bytes, first) = configured(&e, dir, skills, deferred).await;
        println!(
            "compile  same + {skills} skills (a tenth conditional, dormant) + {deferred} deferred tools, all announced: median {t:?} ({bytes} bytes, +{} in listings and deltas); ratio {:.2}x; the announcing compile {first:?}",
            bytes - base_bytes,
            t.as_secs_f64() / base.as_secs_f64()
        );
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

async fn bench_mcp_bytes(dir: &Path) {
    let e = engine(&dir.join("mcp")).await;
    let cwd = dir.join("mcp-cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let instructions = "Use `jira__get_issue` to fetch issue details before making updates. \
        Always include the project key when creating issues. "
        .repeat(12);
    let connect = |sid: &str| McpConnectParams {
        session_id: sid.to_string(),
        name: "jira".into(),
        instructions: Some(instructions.clone()),
        tools: vec![],
        resources: vec![],
    };

    // Late: the request before and after the connect.
    let late = session(&e, &cwd, vec![tool("Read", false)]).await;
    let before = e.compile(params(&late)).await.unwrap().body;
    e.mcp_connect(connect(&late)).await.unwrap();
    let delta = e.compile(params(&late)).await.unwrap().body;

    // The same server in the system section (what rewriting system would send).
    let early = e
        .create_session(SessionCreateParams {
            cwd: cwd.display().to_string(),
            tools: vec![tool("Read", false)],
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    e.mcp_connect(connect(&early)).await.unwrap();
    e.append(AppendParams {
        session_id: early.clone(),
        agent_id: None,
        records: transcript(),
        expected_last_uuid: None,
    })
    .await
    .unwrap();
    let rewritten = e.compile(params(&early)).await.unwrap().body;

    for (label, after) in [("delta attachment", &delta), ("system rewrite", &rewritten)] {
        let prefix = common_prefix(&before, after);
        println!(
            "mcp      late connect ({} characters of instructions) as {label}: +{} bytes; {} of {} bytes after the first difference (not served by the prefix cache)",
            instructions.len(),
            after.len().cast_signed() - before.len().cast_signed(),
            after.len() - prefix,
            after.len()
        );
    }
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    bench_compile(dir.path()).await;
    if only().is_none() {
        bench_mcp_bytes(dir.path()).await;
    }
}
