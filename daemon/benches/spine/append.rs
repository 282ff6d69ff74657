//! Part 5: batched appends vs raw rusqlite inserts, batch by batch in turn.

use super::*;

fn record_json(i: usize) -> RecordInput {
    serde_json::from_value(serde_json::json!({
        "type": if i.is_multiple_of(2) { "user" } else { "assistant" },
        "content": format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
    }))
    .unwrap()
}

/// Median time of one batch of `BATCH` appends to a fresh session with `settings`. With
/// `floors`, each batch is followed by the same batch through both raw floors, so the
/// three are measured in turn and the machine's load moves them alike.
async fn engine_batches(
    dir: &Path,
    settings: Option<SessionSettings>,
    batches: usize,
    mut floors: Option<&mut Floors>,
) -> Duration {
    let e = engine(dir).await;
    let sid = e
        .create_session(SessionCreateParams {
            cwd: "/tmp".into(),
            no_git: true,
            settings,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    if let Some(f) = floors.as_deref_mut() {
        f.attach(&dir.join("bench.db"));
    }
    let mut times = Vec::new();
    for b in 0..batches {
        let records: Vec<RecordInput> = (0..BATCH).map(|i| record_json(b * BATCH + i)).collect();
        let t = Instant::now();
        e.append(AppendParams {
            session_id: sid.clone(),
            agent_id: None,
            records,
            expected_last_uuid: None,
        })
        .await
        .unwrap();
        times.push(t.elapsed());
        if let Some(f) = floors.as_deref_mut() {
            f.batch(b);
        }
    }
    median(times)
}

const BATCH: usize = 100;

/// Batched appends vs raw rusqlite inserts. The engine twice: with the session's
/// defaults, whose post-sampling hook starts a session-memory extraction in the
/// background every 5,000 new tokens (about every batch here, as these records carry no
/// usage), and with that extractor off, which is the append path alone. Two floors, run
/// in turn with the second: the minimal table, and the very rows the engine stored
/// replayed into its own table.
pub(super) async fn bench_append(dir: &Path) {
    let batches = (iters() / 4).max(10);
    let defaults = engine_batches(&dir.join("append"), None, batches, None).await;
    let mut quiet = SessionSettings::default();
    quiet.memory.extractor = MemoryExtractor::Off;
    let mut floors = Floors::new(dir);
    let alone = engine_batches(
        &dir.join("append-alone"),
        Some(quiet),
        batches,
        Some(&mut floors),
    )
    .await;
    let (minimal, same_rows) = (median(floors.minimal), median(floors.same_rows));
    let per_sec = |d: Duration| BATCH as f64 / d.as_secs_f64();
    let pct = |engine: Duration, raw: Duration| raw.as_secs_f64() / engine.as_secs_f64() * 100.0;
    println!(
        "append   batches of {BATCH}: engine {:.0} records/s (median batch {alone:?}) with the session-memory extractor off, {:.0} records/s ({defaults:?}) with the defaults; \
         raw rusqlite into a minimal table {:.0} records/s ({minimal:?}): engine at {:.0}% / {:.0}%; raw rusqlite storing the engine's own rows in its records table {:.0} records/s ({same_rows:?}): engine at {:.0}% / {:.0}%",
        per_sec(alone),
        per_sec(defaults),
        per_sec(minimal),
        pct(alone, minimal),
        pct(defaults, minimal),
        per_sec(same_rows),
        pct(alone, same_rows),
        pct(defaults, same_rows),
    );
}

/// A fresh database with the store's settings (its page size, WAL, `synchronous=NORMAL`).
fn raw_connection(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "page_size", ctxd_store::PAGE_SIZE)
        .unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn
}

/// Time of one batch of raw inserts (`rows` prepared beforehand) in one transaction.
fn raw_batch<P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    rows: Vec<P>,
) -> Duration {
    let t = Instant::now();
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut st = tx.prepare_cached(sql).unwrap();
        for row in rows {
            st.execute(row).unwrap();
        }
    }
    tx.commit().unwrap();
    t.elapsed()
}

/// A row of ctxd's `records` table, as read back from the engine's database.
type RecordRow = (
    String,
    i64,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    String,
);

/// The floors of the append bench, fed one batch at a time:
/// - `minimal`: the records' input serialised beforehand, a fresh uuid each, into a
///   four-column table (the floor of earlier runs);
/// - `same_rows`: what SQLite alone costs for what the engine stored: the batch's rows
///   read back from the engine's database and inserted into a fresh copy of ctxd's
///   `records` table as its migrations leave it (its keys and foreign key included).
struct Floors {
    minimal_db: rusqlite::Connection,
    same_db: rusqlite::Connection,
    engine_db: Option<rusqlite::Connection>,
    session: String,
    minimal: Vec<Duration>,
    same_rows: Vec<Duration>,
}

impl Floors {
    fn new(dir: &Path) -> Floors {
        let minimal_db = raw_connection(&dir.join("raw.db"));
        minimal_db
            .execute_batch("CREATE TABLE r (s TEXT, seq INTEGER, uuid TEXT, body TEXT, PRIMARY KEY (s, seq)) WITHOUT ROWID")
            .unwrap();
        let same_db = raw_connection(&dir.join("raw-records.db"));
        same_db.pragma_update(None, "foreign_keys", "ON").unwrap();
        Floors {
            minimal_db,
            same_db,
            engine_db: None,
            session: String::new(),
            minimal: Vec::new(),
            same_rows: Vec::new(),
        }
    }

    /// Copies the engine's tables and sessions, once its session exists.
    fn attach(&mut self, engine_db: &Path) {
        let src = rusqlite::Connection::open(engine_db).unwrap();
        let schema: Vec<String> = src
            .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('sessions', 'records') ORDER BY name = 'records'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(schema.len(), 2);
        for table in &schema {
            self.same_db.execute_batch(table).unwrap();
        }
        let sessions: Vec<(String, String)> = src
            .prepare("SELECT id, created_at FROM sessions")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            sessions.len(),
            1,
            "the engine's database holds the bench's session"
        );
        self.session.clone_from(&sessions[0].0);
        for (id, at) in &sessions {
            self.same_db.execute(
                "INSERT INTO sessions (id, cwd, original_cwd, model_profile, settings, start_date, created_at, updated_at) VALUES (?1, '/tmp', '/tmp', '{}', '{}', '2026-01-01', ?2, ?2)",
                rusqlite::params![id, at],
            )
            .unwrap();
        }
        self.engine_db = Some(src);
    }

    /// Batch `b` through both floors, right after the engine stored it.
    fn batch(&mut self, b: usize) {
        let first = i64::try_from(b * BATCH).unwrap();
        let minimal: Vec<_> = (0..BATCH)
            .map(|i| {
                let body = serde_json::to_string(&record_json(b * BATCH + i)).unwrap();
                (
                    "s",
                    first + i64::try_from(i).unwrap() + 1,
                    uuid::Uuid::now_v7().to_string(),
                    body,
                )
            })
            .collect();
        self.minimal.push(raw_batch(
            &self.minimal_db,
            "INSERT INTO r VALUES (?1, ?2, ?3, ?4)",
            minimal,
        ));
        let src = self
            .engine_db
            .as_ref()
            .expect("attached before the first batch");
        let rows: Vec<RecordRow> = src
            .prepare_cached("SELECT session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body FROM records WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq")
            .unwrap()
            .query_map(rusqlite::params![self.session, first, first + i64::try_from(BATCH).unwrap()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), BATCH);
        self.same_rows.push(raw_batch(
            &self.same_db,
            "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rows,
        ));
    }
}
