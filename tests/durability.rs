//! Nothing acknowledged is lost: `kill -9` during a stream of appends from several
//! clients, then a restart.

use crate::common;

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

/// `daemon.backup` while appends run: the copy passes `PRAGMA integrity_check`, and a
/// daemon started on it (as `ctxd.db` of a fresh home) serves every record acknowledged
/// before the backup was asked for, as a gap-free prefix of the session.
#[test]
fn a_backup_taken_during_appends_serves_every_acknowledged_record() {
    let d = Daemon::start();
    let copy = d.dir.path().join("backup.db");
    if d.store_url().is_some() {
        let e = d
            .try_call("daemon.backup", json!({"path": copy.display().to_string()}))
            .unwrap_err();
        assert!(e.to_string().contains("pg_dump"), "{e}");
        return;
    }
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let (socket, sid2) = (d.socket.clone(), sid.clone());
    let (acks, acknowledged) = mpsc::channel::<String>();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let appender = std::thread::spawn(move || {
        for n in 0.. {
            if stopped.load(Ordering::SeqCst) {
                break;
            }
            let req = json!({"jsonrpc": "2.0", "id": 1, "method": "transcript.append", "params": {
                "session_id": sid2,
                "records": [{"type": "user", "content": format!("message {n} {}", "x".repeat(2000))}]
            }});
            let (_, body) = common::raw_http(&socket, &req.to_string());
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let uuid = v["result"]["appended"][0]["uuid"]
                .as_str()
                .unwrap()
                .to_owned();
            if acks.send(uuid).is_err() {
                break;
            }
        }
    });
    let mut before = Vec::new();
    while before.len() < 200 {
        before.push(acknowledged.recv_timeout(Duration::from_secs(30)).unwrap());
    }
    before.extend(acknowledged.try_iter());
    let r = d.call("daemon.backup", json!({"path": copy.display().to_string()}));
    let during: Vec<String> = acknowledged.try_iter().collect();
    assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
    stop.store(true, Ordering::SeqCst);
    // Every acknowledgement, the last ones included, in the order the appends were made.
    let mut all = before.clone();
    all.extend(during.iter().cloned());
    all.extend(std::iter::from_fn(|| acknowledged.recv().ok()));
    appender.join().unwrap();
    // Appends ran while the copy was taken, or the test proves nothing.
    assert!(!during.is_empty(), "no append ran during the backup");
    let again = d.try_call("daemon.backup", json!({"path": copy.display().to_string()}));
    assert!(again.unwrap_err().to_string().contains("already exists"));
    let relative = d.try_call("daemon.backup", json!({"path": "backup.db"}));
    assert!(relative.unwrap_err().to_string().contains("absolute"));

    let conn = rusqlite::Connection::open(&copy).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(&copy, home.join("ctxd.db")).unwrap();
    let mut restored = Daemon {
        socket: dir.path().join("run").join("ctxd.sock"),
        home,
        dir,
        child: None,
        args: Vec::new(),
        env: Vec::new(),
        store: None,
        db: None,
    };
    restored.spawn();
    let page = restored.call("transcript.read", json!({"session_id": sid, "limit": 5000}));
    let served: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uuid"].as_str().unwrap())
        .collect();
    assert!(served.len() >= before.len());
    // Acknowledged order is the session's order (one client): the copy holds a prefix.
    assert!(served.len() <= all.len());
    assert_eq!(served[..], all[..served.len()]);
}
