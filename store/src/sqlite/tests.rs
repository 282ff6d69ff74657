use std::time::{Duration, Instant};

use super::super::Store;
use super::super::db::params;
use super::*;

fn count(db: &mut dyn Db) -> Result<i64> {
    db.query_opt("SELECT COUNT(*) FROM scratch", &[])?
        .ok_or_else(|| Error::Internal("no row".into()))?
        .int(0)
}

/// A read sees one snapshot however many statements it runs, and leaves none open
/// behind it on the pooled connection, failed or not.
#[test]
fn a_read_is_one_snapshot_and_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = Sqlite::open(&path).unwrap();
    // Another connection commits while the read is between its two statements.
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TABLE scratch (x INTEGER); INSERT INTO scratch VALUES (1);")
        .unwrap();
    let mut seen = Vec::new();
    store
        .read(&mut |db| {
            seen.push(count(db)?);
            other.execute("INSERT INTO scratch VALUES (2)", []).unwrap();
            seen.push(count(db)?);
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, [1, 1]);
    // A failing body: its snapshot ends too, so the next read on the same pooled
    // connection sees the newest commit.
    let failed = store.read(&mut |db| {
        count(db)?;
        Err(Error::Internal("the body gives up".into()))
    });
    assert!(failed.is_err());
    other.execute("INSERT INTO scratch VALUES (3)", []).unwrap();
    let mut after = 0;
    store
        .read(&mut |db| {
            after = count(db)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(after, 3);
    assert_eq!(lock(&store.readers).len(), 1, "one pooled reader, reused");
}

/// A database as the first `version` migrations leave it, with foreign keys on and a
/// bare session for each of `sessions`.
fn database_at(dir: &std::path::Path, version: usize, sessions: &[&str]) -> Connection {
    let mut conn = Connection::open(dir.join("old.db")).unwrap();
    conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    migrations()
        .unwrap()
        .to_version(&mut conn, version)
        .unwrap();
    for id in sessions {
        conn.execute(
            "INSERT INTO sessions (id, cwd, original_cwd, model_profile, settings, start_date, created_at, updated_at)
             VALUES (?1, '/', '/', '{}', '{}', '2026-01-01', 't', 't')",
            [id],
        )
        .unwrap();
    }
    conn
}

/// A database from before the content of seen files moved to its own table keeps
/// every stamp and every content across the migration.
#[test]
fn read_content_moves_to_its_own_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = database_at(dir.path(), 9, &["s"]);
    conn.execute_batch(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256, content)
             VALUES ('s', '/a', 3, 1, 'h1', 'abc'), ('s', '/big', 9, 2, 'h2', NULL);",
    )
    .unwrap();
    migrate(&mut conn).unwrap();
    let stamps: Vec<(String, i64, String)> = conn
        .prepare("SELECT path, size, sha256 FROM file_read_state ORDER BY path")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        stamps,
        [
            ("/a".into(), 3, "h1".into()),
            ("/big".into(), 9, "h2".into())
        ]
    );
    let contents: Vec<(String, String)> = conn
        .prepare("SELECT path, content FROM file_read_content")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(contents, [("/a".to_string(), "abc".to_string())]);
}

/// Records keep every column and their order across the move to a table with rowids,
/// and the table keeps its keys: a repeated uuid or seq in a session is refused, and
/// deleting a session deletes its records.
#[test]
fn records_move_to_a_table_with_rowids() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = database_at(dir.path(), 10, &["s", "r"]);
    let sql = "SELECT session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body FROM records ORDER BY session_id, seq";
    let rows = |conn: &Connection| -> Vec<Vec<Option<String>>> {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |r| {
                (0..8)
                    .map(|i| match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Integer(n) => Ok(Some(n.to_string())),
                        rusqlite::types::ValueRef::Null => Ok(None),
                        _ => r.get(i),
                    })
                    .collect()
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let big = "x".repeat(20_000);
    conn.execute_batch(&format!(
        "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES
             ('s', 2, 'u2', 'u1', 'assistant', 't2', 'm', '{big}'),
             ('s', 1, 'u1', NULL, 'user', 't1', NULL, '{{}}'),
             ('r', 1, 'u1', NULL, 'user', 't1', NULL, '{{\"a\":1}}');"
    ))
    .unwrap();
    let before = rows(&conn);
    assert_eq!(before.len(), 3);
    migrate(&mut conn).unwrap();
    assert_eq!(rows(&conn), before);
    let rowids: i64 = conn
        .query_row("SELECT count(rowid) FROM records", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rowids, 3, "a table with rowids");
    for dup in [
        "INSERT INTO records VALUES ('s', 3, 'u1', NULL, 'user', 't', NULL, '{}')",
        "INSERT INTO records VALUES ('s', 2, 'u3', NULL, 'user', 't', NULL, '{}')",
    ] {
        assert!(conn.execute(dup, []).is_err(), "{dup}");
    }
    conn.execute("DELETE FROM sessions WHERE id = 's'", [])
        .unwrap();
    assert_eq!(rows(&conn).len(), 1);
}

/// The newest compile's units move to their own row per session; an older row's units
/// (left by a log written before units were cleared on each compile) are not carried.
#[test]
fn compile_units_move_to_their_own_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = database_at(dir.path(), 11, &["s", "n"]);
    conn.execute_batch(
        "INSERT INTO compile_log (session_id, id, boundary_uuid, fingerprint, units, tool_names) VALUES
             ('s', 1, 'b', '{}', x'01', '[\"Old\"]'),
             ('s', 2, 'b', '{}', x'0203', '[\"Read\"]'),
             ('n', 1, 'b', '{}', NULL, NULL);",
    )
    .unwrap();
    migrate(&mut conn).unwrap();
    let units: Vec<(String, i64, Vec<u8>, String)> = conn
        .prepare("SELECT session_id, id, units, tool_names FROM compile_units")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(units, [("s".into(), 2, vec![2, 3], r#"["Read"]"#.into())]);
    let log: i64 = conn
        .query_row("SELECT count(*) FROM compile_log", [], |r| r.get(0))
        .unwrap();
    assert_eq!(log, 3);
    assert!(
        conn.prepare("SELECT units FROM compile_log").is_err(),
        "the log has no units column left"
    );
}

/// A store over a fresh database with these checkpoint thresholds, and its checkpoint
/// log.
fn store_with(path: &std::path::Path, checkpoints: Checkpoints) -> (Store, Arc<CheckpointLog>) {
    let backend = Sqlite::open_with(path, checkpoints).unwrap();
    let log = backend.checkpoints.clone();
    (Store::over(Arc::new(backend)), log)
}

/// Runs one statement in a queued write.
async fn exec(store: &Store, sql: &'static str) {
    store
        .write("s", move |db| {
            db.execute(sql, params![])?;
            Ok(())
        })
        .await
        .unwrap();
}

fn file_len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// A commit that grows the WAL past the threshold is checkpointed by the checkpointer
/// thread, with no further write: the pages reach the database file while the writer
/// goes on (here, it holds a transaction open the whole time).
#[tokio::test]
async fn the_checkpointer_copies_the_wal_beside_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ctxd.db");
    let (store, log) = store_with(&path, CHECKPOINTS);
    // The migrations' pages are still in the WAL.
    let before = file_len(&path);
    // About 1,000 WAL frames in one commit (8 KB pages).
    store
        .write("s", |db| {
            db.execute("CREATE TABLE bulk (b BLOB)", params![])?;
            let blob = vec![7u8; 1 << 20];
            for _ in 0..8 {
                db.execute("INSERT INTO bulk VALUES (?1)", params![blob.as_slice()])?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let grown = {
        let path = path.clone();
        store.write("s", move |db| {
            db.execute("INSERT INTO bulk VALUES (x'00')", params![])?;
            // The first checkpoint is asked for after that commit, and only then.
            let ran = log.wait_ran(1, Duration::from_secs(10));
            Ok((ran, file_len(&path)))
        })
    };
    let (ran, len) = grown.await.unwrap();
    assert!(
        ran,
        "no checkpoint ran while the writer was busy: none beside it"
    );
    // Usually all 8 MB arrive. A passive checkpoint stops at the oldest frame a reader
    // may still need, and the writer's transaction, begun while the checkpointer was
    // moving the WAL's read marks, can hold an older mark than its snapshot (seen once
    // in about twenty runs under load): then only part of the pages arrive.
    assert!(
        len > before,
        "the checkpoint left the database file at {len} bytes, as before it"
    );
}

/// A commit past the forced bound while the checkpointer holds the checkpoint lock
/// is still reported as the success it is: the refused checkpoint is the hook's
/// business, never the write's (it once surfaced as the append's error, although the
/// records were stored). Low thresholds make the two meet within a few commits.
#[tokio::test]
async fn a_refused_forced_checkpoint_never_fails_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (store, log) = store_with(
        &dir.path().join("ctxd.db"),
        // The checkpointer is asked after every commit, and every few commits the
        // writer forces one of its own, often while the checkpointer's runs.
        Checkpoints {
            asked: 1,
            forced: 3,
        },
    );
    exec(&store, "CREATE TABLE bulk (b BLOB)").await;
    let blob = vec![7u8; 1 << 10];
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut commits = 0u32;
    while log.refused() == 0 {
        assert!(
            Instant::now() < deadline,
            "no forced checkpoint met the checkpointer's in {commits} commits"
        );
        let blob = blob.clone();
        store
            .write("s", move |db| {
                db.execute("INSERT INTO bulk VALUES (?1)", params![blob.as_slice()])?;
                Ok(())
            })
            .await
            .unwrap_or_else(|e| panic!("commit {commits} reported {e}"));
        commits += 1;
    }
    let n = store
        .read(|c| c.query_one("SELECT COUNT(*) FROM bulk", params![])?.int(0))
        .await
        .unwrap();
    assert_eq!(n, i64::from(commits));
}

/// A short write finds the writer idle and runs on its caller's thread; committed
/// like any other.
#[tokio::test(flavor = "current_thread")]
async fn a_short_write_runs_on_the_callers_thread_when_the_writer_is_idle() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("ctxd.db")).unwrap();
    let ran_on = store
        .write_short("s", |db| {
            db.execute("CREATE TABLE t (x INTEGER)", params![])?;
            db.execute("INSERT INTO t VALUES (1)", params![])?;
            Ok(std::thread::current().id())
        })
        .await
        .unwrap();
    assert_eq!(ran_on, std::thread::current().id());
    let n = store
        .read(|c| c.query_one("SELECT COUNT(*) FROM t", params![])?.int(0))
        .await
        .unwrap();
    assert_eq!(n, 1);
}

/// A short write goes to the writer thread when its commit could reach the forced
/// checkpoint bound: that checkpoint must not run on the caller's (async) thread.
#[tokio::test(flavor = "current_thread")]
async fn a_short_write_near_the_forced_bound_runs_on_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_with(
        &dir.path().join("ctxd.db"),
        // Any WAL is within `asked` frames of the forced bound.
        Checkpoints {
            asked: 999,
            forced: 1_000,
        },
    );
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let ran_on = store
        .write_short("s", |db| {
            db.execute("INSERT INTO t VALUES (1)", params![])?;
            Ok(std::thread::current().name().map(str::to_string))
        })
        .await
        .unwrap();
    assert_eq!(ran_on.as_deref(), Some("ctxd-sqlite-writer"));
}

/// A short write issued while another waits in the queue goes behind it, to the
/// writer thread: it never overtakes a write queued before it.
#[tokio::test(flavor = "current_thread")]
async fn a_short_write_never_overtakes_a_queued_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("ctxd.db")).unwrap();
    exec(&store, "CREATE TABLE t (x INTEGER)").await;
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    // The writer thread holds the connection until told to go on...
    let first = store.write("s", move |db| {
        let _ = started_tx.send(());
        let _ = go_rx.recv();
        db.execute("INSERT INTO t VALUES (1)", params![])?;
        Ok(())
    });
    started_rx.recv().unwrap();
    // ... while a second write waits in the queue behind it.
    let second = store.write("s", |db| {
        db.execute("INSERT INTO t VALUES (2)", params![])?;
        Ok(())
    });
    let short = store.write_short("s", |db| {
        db.execute("INSERT INTO t VALUES (3)", params![])?;
        Ok(std::thread::current().name().map(str::to_string))
    });
    go_tx.send(()).unwrap();
    first.await.unwrap();
    second.await.unwrap();
    let ran_on = short.await.unwrap();
    assert_eq!(ran_on.as_deref(), Some("ctxd-sqlite-writer"));
    let order = store
        .read(|c| c.query_map("SELECT x FROM t ORDER BY rowid", params![], |r| r.int(0)))
        .await
        .unwrap();
    assert_eq!(order, [1, 2, 3]);
}

/// The context generation moves on exactly with the committed writes that noted a
/// change of what a collection reads, and before the write is reported done.
#[tokio::test]
async fn the_context_generation_moves_with_noted_commits_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("ctxd.db")).unwrap();
    let at = |store: &Store| store.context_generation().unwrap();
    let start = at(&store);
    exec(&store, "CREATE TABLE other (x INTEGER)").await;
    assert_eq!(at(&store), start, "a write of other tables");
    let refused = store
        .write("s", |db| {
            db.context_changed();
            Err::<(), _>(Error::invalid("x", "refused"))
        })
        .await;
    assert!(refused.is_err());
    assert_eq!(at(&store), start, "a rolled-back write");
    store
        .write("s", |db| {
            db.context_changed();
            db.execute("INSERT INTO other VALUES (1)", params![])?;
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(
        at(&store),
        start + 1,
        "a noted commit, seen once it is done"
    );
    store
        .write("s", |db| {
            crate::context_state::add_loaded(db, "s", &[])?;
            crate::context_state::add_touched(db, "s", &[])
        })
        .await
        .unwrap();
    assert_eq!(at(&store), start + 1, "nothing added, nothing noted");
}

fn page_size(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap()
}

/// A database ctxd creates, by opening its store or by `ctxd migrate`, has the store's
/// page size; one created with another keeps it, and works as before.
#[tokio::test]
async fn a_new_database_takes_the_page_size_and_an_old_one_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let opened = dir.path().join("opened.db");
    drop(Sqlite::open(&opened).unwrap());
    assert_eq!(page_size(&opened), i64::from(PAGE_SIZE));
    let migrated = dir.path().join("migrated.db");
    crate::StoreConfig::Sqlite.migrate(&migrated).unwrap();
    assert_eq!(page_size(&migrated), i64::from(PAGE_SIZE));

    let old = dir.path().join("old.db");
    let conn = Connection::open(&old).unwrap();
    conn.pragma_update(None, "page_size", 4096).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch("CREATE TABLE scratch (x INTEGER)")
        .unwrap();
    drop(conn);
    let (store, _) = store_with(&old, CHECKPOINTS);
    exec(&store, "INSERT INTO scratch VALUES (1)").await;
    let n = store.read(|db| count(db)).await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(page_size(&old), 4096);
}

/// Writes queued together share one transaction: a job whose body fails leaves no trace
/// and is told its own error, the others commit and are told only once the commit is
/// visible; a group whose transaction cannot begin stores nothing and tells every job.
#[test]
fn writes_queued_together_commit_together_and_fail_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let mut conn = Connection::open(&path).unwrap();
    conn.busy_timeout(Duration::ZERO).unwrap();
    conn.execute_batch("CREATE TABLE scratch (x INTEGER)")
        .unwrap();
    let rows = |c: &Connection| -> Vec<i64> {
        let mut s = c.prepare("SELECT x FROM scratch ORDER BY x").unwrap();
        s.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    type Told = Arc<Mutex<Vec<(i64, std::result::Result<(), String>, Vec<i64>)>>>;
    let told: Told = Arc::default();
    let job = |x: i64, fails: bool| {
        let (told, path) = (told.clone(), path.clone());
        WriteJob {
            session: "s".into(),
            current_at: None,
            body: Box::new(move |db| {
                db.execute("INSERT INTO scratch VALUES (?1)", params![x])?;
                if fails {
                    return Err(Error::Internal("the body gives up".into()));
                }
                Ok(())
            }),
            done: Box::new(move |r| {
                // What another connection sees when the job is told.
                let seen = rows(&Connection::open(&path).unwrap());
                lock(&told).push((x, r.map_err(|e| e.to_string()), seen));
            }),
        }
    };
    let generation = AtomicU64::new(0);
    run_group(
        &mut conn,
        vec![job(1, false), job(2, true), job(3, false)],
        &generation,
    );
    let ok = Ok(());
    assert_eq!(
        *lock(&told),
        [
            (1, ok.clone(), vec![1, 3]),
            (
                2,
                Err("internal: the body gives up".to_string()),
                vec![1, 3]
            ),
            (3, ok, vec![1, 3]),
        ]
    );
    assert_eq!(rows(&conn), [1, 3]);

    lock(&told).clear();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    run_group(&mut conn, vec![job(4, false), job(5, false)], &generation);
    holder.execute_batch("ROLLBACK").unwrap();
    let told = lock(&told).clone();
    assert_eq!(told.len(), 2);
    for (_, r, seen) in told {
        let why = r.unwrap_err();
        assert!(why.contains("nothing of it was stored"), "{why}");
        assert_eq!(seen, [1, 3]);
    }
    assert_eq!(rows(&conn), [1, 3]);
}

/// The writer looks longer for the next write while writes come close together, and
/// only briefly once they are far apart.
#[test]
fn the_writer_looks_longer_while_writes_come_close_together() {
    let us = Duration::from_micros;
    assert_eq!(spin_window(us(0)), WRITER_SPIN_MAX);
    assert_eq!(spin_window(us(300)), WRITER_SPIN_MAX);
    assert_eq!(spin_window(WRITER_SPIN_MAX), WRITER_SPIN_MAX);
    assert_eq!(spin_window(WRITER_SPIN_MAX + us(1)), WRITER_SPIN);
    assert_eq!(spin_window(Duration::from_secs(2)), WRITER_SPIN);
}
