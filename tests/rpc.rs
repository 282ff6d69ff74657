//! Black-box tests of the RPC surface: a real `ctxd` on a temp socket and home.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::Daemon;
use serde_json::{Value, json};

#[test]
fn http_call_over_the_unix_socket() {
    let d = Daemon::start();
    let (status, body) = d.raw_http(r#"{"jsonrpc":"2.0","id":7,"method":"daemon.status"}"#);
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(
        v["result"]["protocol_version"],
        ctxd_protocol::PROTOCOL_VERSION
    );
    assert_eq!(v["result"]["home"], d.home.display().to_string());
}

#[test]
fn socket_and_its_directory_are_private() {
    let d = Daemon::start();
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(d.socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
}

fn error_code(body: &str) -> i64 {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error in {body}"))
}

#[test]
fn json_rpc_error_cases() {
    let d = Daemon::start();
    // Parse error.
    let (_, body) = d.raw_http(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping""#);
    assert_eq!(error_code(&body), -32700);
    // Invalid request: not a request object.
    let (_, body) = d.raw_http(r#"{"jsonrpc":"2.0","id":1,"method":5}"#);
    assert_eq!(error_code(&body), -32600);
    // Unknown method.
    let (_, body) = d.raw_http(r#"{"jsonrpc":"2.0","id":1,"method":"nope.nothing"}"#);
    assert_eq!(error_code(&body), -32601);
    // Invalid params, naming the field.
    let (_, body) = d.raw_http(
        r#"{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"cwd":"/tmp","model":{"context_window":"big"}}}"#,
    );
    assert_eq!(error_code(&body), -32602);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["data"]["field"], "model.context_window");
    // Batch: one answer per call, in a JSON array.
    let (_, body) = d.raw_http(
        r#"[{"jsonrpc":"2.0","id":1,"method":"daemon.ping"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#,
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    let arr = v.as_array().expect("batch answer is an array");
    assert_eq!(arr.len(), 2);
    let ping = arr.iter().find(|r| r["id"] == 1).unwrap();
    assert_eq!(ping["result"]["pong"], true);
    let nope = arr.iter().find(|r| r["id"] == 2).unwrap();
    assert_eq!(nope["error"]["code"], -32601);
    // Empty batch is an invalid request.
    let (_, body) = d.raw_http("[]");
    assert_eq!(error_code(&body), -32600);
    // The daemon is still healthy.
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

#[test]
fn a_malformed_record_names_its_field_and_writes_nothing() {
    let d = Daemon::start();
    let s = d.call("session.create", json!({"cwd": "/tmp"}));
    let sid = s["session"]["session_id"].as_str().unwrap().to_string();
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": "fine"},
                {"type": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": "not an object"}]}
            ]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    assert_eq!(err["data"]["field"], "records[1].content[0].input");
    // A type error in the shape is caught while decoding, with its path.
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": [{"type": "text"}]}]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    assert!(
        err["data"]["field"]
            .as_str()
            .unwrap()
            .starts_with("records[0].content"),
        "{err}"
    );
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(read["records"].as_array().unwrap().len(), 0);
}

#[test]
fn optimistic_concurrency_and_paging() {
    let d = Daemon::start();
    let sid = d.call("session.create", json!({"cwd": "/tmp"}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "expected_last_uuid": null, "records": [{"type": "user", "content": "a"}, {"type": "user", "content": "b"}]}),
    );
    let last = r["last_uuid"].as_str().unwrap().to_string();
    assert_eq!(r["appended"][1]["seq"], 2);
    // Stale expectation: refused, nothing written.
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "expected_last_uuid": null, "records": [{"type": "user", "content": "c"}]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::CONFLICT);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "expected_last_uuid": last, "records": [{"type": "user", "content": "c"}]}),
    );
    let page = d.call("transcript.read", json!({"session_id": sid, "limit": 2}));
    assert_eq!(page["records"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_after_seq"], 2);
    let page = d.call(
        "transcript.read",
        json!({"session_id": sid, "after_seq": 2}),
    );
    assert_eq!(page["records"][0]["content"][0]["text"], "c");
    assert_eq!(page["records"][0]["parent_uuid"], last);
    assert!(page.get("next_after_seq").is_none());
    // Unknown session.
    let err = d
        .try_call("transcript.read", json!({"session_id": "nope"}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::SESSION_NOT_FOUND);
}

#[test]
fn sessions_fork_and_delete() {
    let d = Daemon::start();
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "title": "t"}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "a"}, {"type": "user", "content": "b"}, {"type": "user", "content": "c"}]}),
    );
    let second = r["appended"][1]["uuid"].as_str().unwrap().to_string();
    let fork = d.call(
        "session.fork",
        json!({"session_id": sid, "up_to_uuid": second}),
    );
    let fid = fork["session"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(fork["session"]["record_count"], 2);
    assert_eq!(fork["session"]["parent_session_id"], sid);
    let list = d.call("session.list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(
        d.call("session.delete", json!({"session_id": sid}))["deleted"],
        true
    );
    let err = d
        .try_call("session.get", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::SESSION_NOT_FOUND);
    assert_eq!(
        d.call("session.get", json!({"session_id": fid}))["session"]["record_count"],
        2
    );
    let err = d
        .try_call(
            "session.fork",
            json!({"session_id": fid, "up_to_uuid": "missing"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::RECORD_NOT_FOUND);
}

#[test]
fn openrpc_document_is_served() {
    let d = Daemon::start();
    let doc = d.call("rpc.discover", json!({}));
    assert_eq!(doc, ctxd_protocol::openrpc::document());
    assert!(
        doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "context.compile")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_subscription_sees_another_clients_append() {
    let d = Daemon::start();
    let watcher = d.client().await;
    let writer = d.client().await;
    let sid = writer
        .session_create(ctxd_protocol::SessionCreateParams {
            cwd: "/tmp".into(),
            no_git: true,
            ..Default::default()
        })
        .await
        .map(|r| r.session)
        .unwrap()
        .session_id;
    let mut sub = watcher.subscribe(&sid).await.unwrap();
    let r = writer
        .append_values(&sid, vec![json!({"type": "user", "content": "hi"})], None)
        .await
        .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("decodes");
    match ev {
        ctxd_protocol::SessionEvent::RecordsAppended {
            session_id,
            records,
            ..
        } => {
            assert_eq!(session_id, sid);
            assert_eq!(records, r.appended);
        }
        other => panic!("unexpected event {other:?}"),
    }
    // Subscribing to a session that does not exist is refused.
    assert!(watcher.subscribe("nope").await.is_err());
}

#[test]
fn a_second_daemon_on_the_same_socket_is_refused() {
    let d = Daemon::start();
    let out = d.command().output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already"), "{err}");
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

#[test]
fn a_stale_socket_is_replaced() {
    let mut d = Daemon::start();
    d.kill9();
    // kill -9 leaves the socket file behind, with nobody listening.
    assert!(d.socket.exists());
    d.spawn();
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

#[test]
fn sigterm_and_shutdown_stop_cleanly() {
    let mut d = Daemon::start();
    let status = d.terminate();
    assert!(status.success(), "{status:?}");
    assert!(!d.socket.exists(), "socket removed on clean stop");
    d.spawn();
    assert_eq!(d.call("daemon.shutdown", json!({}))["stopping"], true);
    let mut child = d.child.take().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success());
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "daemon.shutdown did not stop ctxd"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `daemon.gc` by age: with `now` one day past a time between two sessions' last
/// updates, `idle_days: 1` deletes the older (its thread-free transcript gone) and keeps
/// the newer; a dry run before it deleted nothing. By quota: the least recently updated
/// goes first until the rest fit. Bad input names its field.
#[test]
fn gc_deletes_idle_sessions_then_the_oldest_over_the_quota() {
    let d = Daemon::start();
    let create = |text: &str| common::session_with_prompt(&d, text);
    let (old, old_at) = create("old");
    // The next update after the first one's, whatever the clock's resolution.
    let (new, new_at) = loop {
        let (sid, at) = create(&"new ".repeat(500));
        if at > old_at {
            break (sid, at);
        }
        d.call("session.delete", json!({"session_id": sid}));
    };
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    let between = t(&old_at) + (t(&new_at) - t(&old_at)) / 2;
    let now = (between + chrono::Duration::days(1)).to_rfc3339();
    let exists = |sid: &str| {
        d.try_call("session.get", json!({"session_id": sid}))
            .is_ok()
    };

    let dry = d.call(
        "daemon.gc",
        json!({"idle_days": 1, "now": now, "dry_run": true}),
    );
    assert_eq!(dry["deleted"].as_array().unwrap().len(), 1, "{dry}");
    assert_eq!(dry["deleted"][0]["session_id"], old.as_str());
    assert!(exists(&old));
    let done = d.call("daemon.gc", json!({"idle_days": 1, "now": now}));
    assert_eq!(done["deleted"][0]["reason"], "idle", "{done}");
    assert!(!exists(&old) && exists(&new));

    // By quota: the older of two goes when only the newer fits.
    let (newest, _) = loop {
        let (sid, at) = create("newest");
        if at > new_at {
            break (sid, at);
        }
        d.call("session.delete", json!({"session_id": sid}));
    };
    let all = d.call("daemon.gc", json!({"max_store_bytes": 0, "dry_run": true}));
    let sizes = all["deleted"].as_array().unwrap();
    assert_eq!(sizes.len(), 2, "{all}");
    assert_eq!(sizes[0]["session_id"], new.as_str(), "oldest first: {all}");
    let newest_bytes = sizes[1]["bytes"].as_u64().unwrap();
    let quota = d.call("daemon.gc", json!({"max_store_bytes": newest_bytes}));
    assert_eq!(quota["deleted"].as_array().unwrap().len(), 1, "{quota}");
    assert_eq!(quota["deleted"][0]["reason"], "quota");
    assert_eq!(quota["kept_bytes"], newest_bytes);
    assert!(!exists(&new) && exists(&newest));

    for (params, field) in [
        (json!({}), "idle_days"),
        (json!({"idle_days": 0}), "idle_days"),
        (json!({"idle_days": 1, "now": "yesterday"}), "now"),
    ] {
        let e = d.try_call("daemon.gc", params).unwrap_err();
        assert_eq!(e["data"]["field"], field, "{e}");
    }
    assert!(exists(&newest));
}
