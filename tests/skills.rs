//! Skills through a real daemon: discovered from the project's `.claude/skills`, listed
//! once, conditional skills activated by a touched path exactly once, the listing's
//! budget with a thousand skills, malformed files skipped with a warning event, and
//! added/changed/removed skill files reflected by the next listing.

use crate::common;
use crate::support::capabilities as support;

use std::path::Path;
use std::time::Duration;

use common::Daemon;
use serde_json::{Value, json};
use support::{T0, added, compile, session, write};

fn skill(root: &Path, name: &str, front: &str) {
    write(
        &root.join(format!(".claude/skills/{name}/SKILL.md")),
        &format!("---\n{front}\n---\n# {name}\nSteps of {name}.\n"),
    );
}

/// The skill listings a compile appended.
fn listings(d: &Daemon, sid: &str, c: &Value) -> Vec<Value> {
    added(d, sid, c)
        .into_iter()
        .filter(|a| a["type"] == "skill_listing")
        .collect()
}

/// Every text the model reads in the request's messages.
fn texts(req: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in req["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if let Some(t) = b["text"].as_str() {
                out.push(t.to_string());
            }
            if let Some(inner) = b["content"].as_array() {
                out.extend(
                    inner
                        .iter()
                        .filter_map(|x| x["text"].as_str())
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

fn count(req: &Value, needle: &str) -> usize {
    texts(req).iter().map(|t| t.matches(needle).count()).sum()
}

fn read_turn(d: &Daemon, sid: &str, i: usize, path: &Path) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "message_id": format!("m{i}"), "timestamp": T0,
             "content": [{"type": "tool_use", "id": format!("r{i}"), "name": "Read", "input": {"file_path": path}}]},
            {"type": "user", "timestamp": T0,
             "content": [{"type": "tool_result", "tool_use_id": format!("r{i}"), "content": "1\tcontent"}]}
        ]}),
    );
}

fn state_of(d: &Daemon, sid: &str, name: &str) -> String {
    d.call("capabilities.skills", json!({"session_id": sid}))["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["state"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn a_projects_skills_are_listed_in_the_first_compile_and_never_again() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    skill(
        &cwd,
        "review",
        "description: Review a change for bugs and style",
    );
    let sid = session(&d, &cwd, json!({}));
    let c1 = compile(&d, &sid);
    let line = "- review: Review a change for bugs and style";
    let reminder = texts(&c1["request"])
        .into_iter()
        .find(|t| t.contains(line))
        .expect("listed in the first compile");
    assert!(reminder.starts_with(
        "<system-reminder>\nThe following skills are available for use with the Skill tool:"
    ));
    assert_eq!(listings(&d, &sid, &c1).len(), 1);
    assert_eq!(state_of(&d, &sid, "review"), "listed");

    for i in 0..3 {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": format!("q{i}"), "timestamp": T0},
                {"type": "assistant", "content": format!("a{i}"), "timestamp": T0}]}),
        );
        let c = compile(&d, &sid);
        assert!(listings(&d, &sid, &c).is_empty());
        assert_eq!(
            count(&c["request"], line),
            1,
            "only where it was first shown"
        );
    }
}

#[test]
fn a_conditional_skill_is_listed_once_after_a_matching_read() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    skill(&cwd, "always", "description: Always there");
    skill(
        &cwd,
        "rusty",
        "description: Rust conventions\npaths: [\"src/**/*.rs\"]",
    );
    let sid = session(&d, &cwd, json!({}));
    let c1 = compile(&d, &sid);
    let l1 = listings(&d, &sid, &c1);
    assert_eq!(l1[0]["names"], json!(["always"]));
    assert_eq!(count(&c1["request"], "rusty"), 0);
    assert_eq!(state_of(&d, &sid, "rusty"), "dormant");

    read_turn(&d, &sid, 1, &cwd.join("docs/guide.md"));
    let c2 = compile(&d, &sid);
    assert!(listings(&d, &sid, &c2).is_empty(), "no match");

    read_turn(&d, &sid, 2, &cwd.join("src/deep/lib.rs"));
    let c3 = compile(&d, &sid);
    let l3 = listings(&d, &sid, &c3);
    assert_eq!(l3.len(), 1);
    assert_eq!(l3[0]["names"], json!(["rusty"]));
    assert_eq!(l3[0]["initial"], false);
    assert_eq!(count(&c3["request"], "- rusty: Rust conventions"), 1);

    read_turn(&d, &sid, 3, &cwd.join("src/main.rs"));
    let c4 = compile(&d, &sid);
    assert!(listings(&d, &sid, &c4).is_empty(), "exactly once");
    assert_eq!(count(&c4["request"], "- rusty: Rust conventions"), 1);
    assert_eq!(state_of(&d, &sid, "rusty"), "listed");
}

#[test]
fn a_thousand_skills_stay_within_the_listing_budget() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    let desc = "Does one particular thing in a particular way, with many words to say so";
    for i in 0..1000 {
        skill(
            &cwd,
            &format!("skill-{i:04}"),
            &format!("description: {desc} ({i})"),
        );
    }
    let sid = session(
        &d,
        &cwd,
        json!({"context_window": 100000, "max_output_tokens": 8000}),
    );
    let c1 = compile(&d, &sid);
    let l1 = listings(&d, &sid, &c1);
    assert_eq!(l1.len(), 1);
    let budget = 100_000 * 4 / 100;
    let content = l1[0]["content"].as_str().unwrap();
    assert!(content.chars().count() <= budget, "{} chars", content.len());
    let listed = l1[0]["names"].as_array().unwrap().len();
    let omitted = l1[0]["omitted"].as_array().map_or(0, Vec::len);
    assert_eq!(listed + omitted, 1000);
    assert!(listed >= 250, "names fill the budget: {listed}");
    let skills = d.call("capabilities.skills", json!({"session_id": sid}));
    assert_eq!(skills["listing_budget_chars"], budget);
    let states: Vec<&str> = skills["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(states.iter().filter(|s| **s == "listed").count(), listed);
    assert_eq!(states.iter().filter(|s| **s == "omitted").count(), omitted);
    let c2 = compile(&d, &sid);
    assert!(
        listings(&d, &sid, &c2).is_empty(),
        "announced once, never paged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_skill_is_skipped_with_a_warning_event() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    skill(&cwd, "good", "description: Works");
    skill(&cwd, "bad", "description: [never closed");
    let sid = session(&d, &cwd, json!({}));
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let c = compile(&d, &sid);
    assert_eq!(listings(&d, &sid, &c)[0]["names"], json!(["good"]));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("warning in time")
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::Warning {
            source,
            path,
            message,
            ..
        } = ev
        {
            assert_eq!(source, "skills");
            assert!(path.unwrap().ends_with("bad/SKILL.md"));
            assert!(message.contains("not valid YAML"), "{message}");
            break;
        }
    }
    let skills = d.call("capabilities.skills", json!({"session_id": sid}));
    assert_eq!(skills["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(skills["skills"].as_array().unwrap().len(), 1);
}

/// Waits for the daemon to say the skills changed on disk.
async fn skills_changed<S, E>(sub: &mut S)
where
    S: futures::Stream<Item = Result<ctxd_protocol::SessionEvent, E>> + Unpin,
    E: std::fmt::Debug,
{
    use futures::StreamExt;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("capabilities_changed in time")
            .unwrap()
            .unwrap();
        if matches!(ev, ctxd_protocol::SessionEvent::CapabilitiesChanged { ref what, .. } if what == "skills")
        {
            return;
        }
    }
}

/// Writes a skill directory elsewhere and renames it into place: one event.
fn add_skill_atomically(d: &Daemon, cwd: &Path, name: &str, front: &str) {
    let staging = d.dir.path().join("staging");
    skill(&staging, name, front);
    std::fs::rename(
        staging.join(format!(".claude/skills/{name}")),
        cwd.join(format!(".claude/skills/{name}")),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_changed_and_removed_skills_show_in_the_next_listing_without_touching_system() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    skill(&cwd, "first", "description: The first one");
    let sid = session(&d, &cwd, json!({}));
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let c1 = compile(&d, &sid);
    let system = c1["request"]["system"].clone();
    assert_eq!(listings(&d, &sid, &c1)[0]["names"], json!(["first"]));

    add_skill_atomically(&d, &cwd, "second", "description: Added later");
    skills_changed(&mut sub).await;
    let c2 = compile(&d, &sid);
    let l2 = listings(&d, &sid, &c2);
    assert_eq!(l2[0]["names"], json!(["second"]));
    assert_eq!(c2["request"]["system"], system);

    let file = cwd.join(".claude/skills/first/SKILL.md");
    let tmp = cwd.join(".claude/skills/first/.SKILL.md.tmp");
    write(
        &tmp,
        "---\ndescription: The first one, improved\n---\nBody\n",
    );
    std::fs::rename(&tmp, &file).unwrap();
    skills_changed(&mut sub).await;
    let c3 = compile(&d, &sid);
    let l3 = listings(&d, &sid, &c3);
    assert_eq!(l3[0]["names"], json!(["first"]));
    assert!(
        l3[0]["content"]
            .as_str()
            .unwrap()
            .contains("The first one, improved")
    );

    std::fs::remove_dir_all(cwd.join(".claude/skills/second")).unwrap();
    skills_changed(&mut sub).await;
    let c4 = compile(&d, &sid);
    let l4 = listings(&d, &sid, &c4);
    assert_eq!(l4[0]["removed"], json!(["second"]));
    assert!(
        texts(&c4["request"])
            .iter()
            .any(|t| t.contains("no longer available; do not invoke them:\n- second"))
    );
    assert_eq!(c4["request"]["system"], system);
    assert!(listings(&d, &sid, &compile(&d, &sid)).is_empty());
}

#[test]
fn skills_are_invoked_by_the_skill_tool_or_by_rpc() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    skill(&cwd, "review", "description: Review");
    skill(&cwd, "commit", "description: Commit");
    let sid = session(&d, &cwd, json!({}));
    compile(&d, &sid);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "message_id": "m1", "timestamp": T0,
             "content": [{"type": "tool_use", "id": "s1", "name": "Skill", "input": {"skill": "review"}}]},
            {"type": "user", "timestamp": T0, "content": [{"type": "tool_result", "tool_use_id": "s1", "content": "ok"}]}]}),
    );
    d.call(
        "capabilities.invoke_skill",
        json!({"session_id": sid, "name": "/commit"}),
    );
    let skills = d.call("capabilities.skills", json!({"session_id": sid}));
    assert!(
        skills["skills"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["invoked"] == true)
    );
    let e = d
        .try_call(
            "capabilities.invoke_skill",
            json!({"session_id": sid, "name": "nope"}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "name");
    d.call("context.compact", json!({"session_id": sid}));
    let recs = d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
        .as_array()
        .unwrap()
        .clone();
    let restored = recs
        .iter()
        .find(|r| r["attachment"]["type"] == "invoked_skills")
        .expect("restored");
    let names: Vec<&str> = restored["attachment"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["commit", "review"], "newest first");
}
