//! Nothing acknowledged is lost: `kill -9` during a stream of appends from several
//! clients, then a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use common::Daemon;
use serde_json::json;

#[test]
fn kill_9_during_appends_loses_no_acknowledged_record() {
    let mut d = Daemon::start();
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let socket = d.socket.clone();
    let acked: Arc<Mutex<Vec<(usize, String, u64)>>> = Arc::default();
    // Every acknowledged append is announced here; the kill waits for 150 of them.
    let (acks, acknowledged) = mpsc::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for client in 0..4usize {
        let (socket, sid, acked, acks, stop) = (
            socket.clone(),
            sid.clone(),
            acked.clone(),
            acks.clone(),
            stop.clone(),
        );
        threads.push(std::thread::spawn(move || {
            for n in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let req = json!({"jsonrpc": "2.0", "id": 1, "method": "transcript.append", "params": {
                    "session_id": sid,
                    "records": [
                        {"type": "user", "content": format!("client {client} message {n}")},
                        {"type": "assistant", "content": format!("reply {client}/{n}")}
                    ]
                }});
                let result = std::panic::catch_unwind(|| common::raw_http(&socket, &req.to_string()));
                let Ok((_, body)) = result else { break };
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else { break };
                let Some(appended) = v["result"]["appended"].as_array() else { break };
                let mut a = acked.lock().unwrap();
                for rec in appended {
                    a.push((
                        client,
                        rec["uuid"].as_str().unwrap().to_string(),
                        rec["seq"].as_u64().unwrap(),
                    ));
                }
                drop(a);
                let _ = acks.send(());
            }
        }));
    }
    drop(acks);
    for i in 0..150 {
        acknowledged
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("only {i} appends were acknowledged: {e}"));
    }
    d.kill9();
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    d.spawn();

    let mut stored = Vec::new();
    let mut after = 0;
    loop {
        let page = d.call(
            "transcript.read",
            json!({"session_id": sid, "after_seq": after, "limit": 5000}),
        );
        stored.extend(page["records"].as_array().unwrap().iter().cloned());
        match page["next_after_seq"].as_u64() {
            Some(n) => after = n,
            None => break,
        }
    }
    let by_uuid: std::collections::HashMap<String, u64> = stored
        .iter()
        .map(|r| {
            (
                r["uuid"].as_str().unwrap().to_string(),
                r["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 300);
    for (_, uuid, seq) in acked.iter() {
        assert_eq!(
            by_uuid.get(uuid),
            Some(seq),
            "acknowledged record {uuid} lost or moved"
        );
    }
    // Sequence numbers are gap-free, and each client's acknowledged records keep their order.
    for (i, r) in stored.iter().enumerate() {
        assert_eq!(r["seq"].as_u64().unwrap(), i as u64 + 1);
    }
    for client in 0..4 {
        let seqs: Vec<u64> = acked
            .iter()
            .filter(|a| a.0 == client)
            .map(|a| a.2)
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    }
    // Records of one batch stay together: a batch never interleaves with another.
    for pair in stored.chunks(2) {
        assert_eq!(pair[0]["type"], "user");
        assert_eq!(pair[1]["type"], "assistant");
    }
    if d.store_url().is_none() {
        let conn = rusqlite::Connection::open(d.home.join("ctxd.db")).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
}
