//! The handshake, resumable subscriptions and the connection limit, against a real
//! daemon.

use crate::common;

use std::time::Duration;

use common::{Daemon, NewSession};
use ctxd_protocol::{SessionEvent, SessionNotification};
use serde_json::{Value, json};

fn session(d: &Daemon) -> String {
    NewSession::at(d.dir.path()).create(d)
}

#[test]
fn the_handshake_negotiates_and_refuses_another_major() {
    let d = Daemon::start();
    let own = ctxd_protocol::PROTOCOL_VERSION;
    let major: u32 = own.split('.').next().unwrap().parse().unwrap();
    let r = d.call(
        "daemon.initialize",
        json!({"client_info": {"name": "test", "version": "0"}, "protocol_version": format!("{major}.0")}),
    );
    assert_eq!(r["protocol_version"], format!("{major}.0"));
    assert_eq!(r["server_protocol_version"], own);
    assert_eq!(r["server_info"]["name"], "ctxd");
    assert!(
        r["capabilities"]["methods"]
            .as_array()
            .unwrap()
            .contains(&json!("session.subscribe"))
    );
    assert!(r["limits"]["max_connections"].as_u64().unwrap() >= 1024);
    assert_eq!(r["limits"]["max_append_records"], 10_000);
    assert_eq!(r["limits"]["max_record_bytes"], 32 * 1024 * 1024);
    assert_eq!(r["limits"]["max_loaded_sessions"], 256);
    // A newer minor is answered with ours.
    let r = d.call(
        "daemon.initialize",
        json!({"client_info": {"name": "test", "version": "0"}, "protocol_version": format!("{major}.99")}),
    );
    assert_eq!(r["protocol_version"], own);

    let err = d
        .try_call(
            "daemon.initialize",
            json!({"client_info": {"name": "test", "version": "0"}, "protocol_version": format!("{}.0", major + 1)}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::UNSUPPORTED_PROTOCOL_VERSION);
    assert!(
        err["message"].as_str().unwrap().contains("not supported"),
        "{err}"
    );
    assert_eq!(err["data"]["requested"], format!("{}.0", major + 1));
    // Unknown params stay refused within a version.
    let err = d
        .try_call(
            "daemon.initialize",
            json!({"client_info": {"name": "t", "version": "0"}, "protocol_version": own, "colour": 1}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602);
}

#[test]
fn subscribing_over_http_says_a_websocket_is_needed() {
    let d = Daemon::start();
    let sid = session(&d);
    for (method, params) in [
        ("session.subscribe", json!({"session_id": sid})),
        ("session.unsubscribe", json!({"subscription": 1})),
    ] {
        let err = d.try_call(method, params).unwrap_err();
        assert_eq!(err["code"], ctxd_protocol::WEBSOCKET_REQUIRED, "{err}");
        assert!(
            err["message"].as_str().unwrap().contains("WebSocket"),
            "{err}"
        );
    }
    // Inside a batch too, without disturbing the other calls.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "daemon.ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "session.subscribe", "params": {"session_id": sid}},
    ]);
    let (_, body) = d.raw_http(&batch.to_string());
    let answers: Vec<Value> = serde_json::from_str(&body).unwrap();
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap();
    assert_eq!(by_id(1)["result"]["pong"], true);
    assert_eq!(by_id(2)["error"]["code"], ctxd_protocol::WEBSOCKET_REQUIRED);
}

async fn next(sub: &mut ctx_client::Subscription<SessionNotification>) -> SessionNotification {
    tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("an event in time")
        .expect("stream open")
        .expect("decodes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_after_a_thousand_missed_appends_delivers_exactly_those_in_order() {
    let d = Daemon::start();
    let sid = session(&d);
    let client = d.client().await;
    for i in 0..5 {
        client
            .append_values(
                &sid,
                vec![json!({"type": "user", "content": format!("before {i}")})],
                None,
            )
            .await
            .unwrap();
    }
    // The subscriber saw up to seq 5, then was away for 1,000 appends.
    let mut missed = Vec::new();
    for i in 0..1000 {
        let r = client
            .append_values(
                &sid,
                vec![json!({"type": "user", "content": format!("missed {i}")})],
                None,
            )
            .await
            .unwrap();
        missed.push(r.appended[0].clone());
    }
    let mut sub = client
        .session_subscribe(ctxd_protocol::SubscribeParams {
            session_id: sid.clone(),
            after_seq: Some(5),
            include_records: true,
        })
        .await
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 1000 {
        let n = next(&mut sub).await;
        let SessionEvent::RecordsAppended {
            records,
            full_records,
            ..
        } = n.event
        else {
            panic!("unexpected {:?}", n.event);
        };
        let full = full_records.expect("include_records");
        assert_eq!(full.len(), records.len());
        assert_eq!(
            n.seq,
            records.last().unwrap().seq,
            "the event carries the session's seq"
        );
        got.extend(records);
    }
    assert_eq!(got, missed);
    // Then it streams live, with no repeat of what the replay delivered.
    let live = client
        .append_values(&sid, vec![json!({"type": "user", "content": "live"})], None)
        .await
        .unwrap();
    let n = next(&mut sub).await;
    match n.event {
        SessionEvent::RecordsAppended { records, .. } => assert_eq!(records, live.appended),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(n.seq, 1006);
    assert!(n.own, "the append was made on this connection");

    // An after_seq beyond the transcript is refused, naming the field.
    let err = client
        .session_subscribe(ctxd_protocol::SubscribeParams {
            session_id: sid.clone(),
            after_seq: Some(5000),
            include_records: false,
        })
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("after_seq"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_anothers_compile_are_not_marked_own() {
    let d = Daemon::start();
    let sid = session(&d);
    let watcher = d.client().await;
    let mut sub = watcher
        .session_subscribe(ctxd_protocol::SubscribeParams::from_now(&sid))
        .await
        .unwrap();
    // Another client's compile: a `compiled` event, not own.
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    d.call("context.compile", json!({"session_id": sid}));
    let mut seen = Vec::new();
    loop {
        let n = next(&mut sub).await;
        let done = matches!(n.event, SessionEvent::Compiled { .. });
        seen.push(n);
        if done {
            break;
        }
    }
    assert!(seen.iter().all(|n| !n.own), "{seen:?}");
    let SessionEvent::Compiled { percent_left, .. } = &seen.last().unwrap().event else {
        unreachable!()
    };
    assert!(*percent_left <= 100);
    // The watcher's own compile is marked.
    let _: Value = watcher
        .call("context.compile", json!({"session_id": sid}))
        .await
        .unwrap();
    loop {
        let n = next(&mut sub).await;
        if let SessionEvent::Compiled { .. } = n.event {
            assert!(n.own, "{n:?}");
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_connections_are_served() {
    let d = Daemon::start();
    // Open all 500 first, then call on each: every one is held open at once.
    let mut clients = Vec::new();
    for _ in 0..500 {
        clients.push(d.client().await);
    }
    let calls = clients
        .iter()
        .map(|c| c.daemon_ping(ctxd_protocol::NoParams {}));
    let answers = futures::future::join_all(calls).await;
    let ok = answers
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|p| p.pong))
        .count();
    assert_eq!(ok, 500, "{:?}", answers.iter().find(|r| r.is_err()));
}
