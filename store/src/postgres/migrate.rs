//! PostgreSQL migrations: `migrations/postgres/NN-name/up.sql`, numbered and append-only
//! like the SQLite ones, recorded in `ctxd_migrations`. All pending steps run in one
//! transaction under an advisory lock, so daemons (or `ctxd migrate` runs) starting at
//! once apply each step exactly once, and a failed step leaves the schema as it was.

use postgres::Client;

use crate::MIGRATIONS_DIR;
use crate::error::{Error, Result};

/// The advisory-lock key migrations hold (`ctxd` in ASCII).
const MIGRATION_LOCK: i64 = 0x6374_7864;

/// `(number, name, sql)` of every PostgreSQL migration, in order.
fn steps() -> Result<Vec<(i64, &'static str, &'static str)>> {
    let dir = MIGRATIONS_DIR
        .get_dir("postgres")
        .ok_or_else(|| Error::Storage("migrations: no postgres directory".into()))?;
    let mut out = Vec::new();
    for d in dir.dirs() {
        let name = d
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Storage("migrations: unnamed directory".into()))?;
        let number = name
            .split('-')
            .next()
            .and_then(|n| n.parse::<i64>().ok())
            .ok_or_else(|| Error::Storage(format!("migrations: {name} has no NN- prefix")))?;
        let sql = MIGRATIONS_DIR
            .get_file(d.path().join("up.sql"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| Error::Storage(format!("migrations: {name} has no up.sql")))?;
        out.push((number, name, sql));
    }
    out.sort_by_key(|s| s.0);
    for (i, s) in out.iter().enumerate() {
        if usize::try_from(s.0).ok() != Some(i + 1) {
            return Err(Error::Storage(format!(
                "migrations: {} is out of sequence (expected number {})",
                s.1,
                i + 1
            )));
        }
    }
    Ok(out)
}

/// The newest migration this build knows.
pub(crate) fn latest() -> Result<i64> {
    Ok(last_number(&steps()?))
}

/// The number of the last step: numbered from one without gaps, so also their count.
fn last_number(steps: &[(i64, &str, &str)]) -> i64 {
    steps.last().map_or(0, |s| s.0)
}

/// The newest migration applied to the database (0 for a database ctxd never touched).
pub(crate) fn applied(client: &mut Client) -> Result<i64> {
    let exists: bool = client
        .query_one("SELECT to_regclass('ctxd_migrations') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one("SELECT COALESCE(MAX(version), 0) FROM ctxd_migrations", &[])?
        .get(0))
}

/// Applies every pending migration; `(before, after)` versions.
pub fn migrate(client: &mut Client) -> Result<(i64, i64)> {
    let steps = steps()?;
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS ctxd_migrations (
            version    BIGINT PRIMARY KEY,
            name       TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )?;
    let before: i64 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM ctxd_migrations", &[])?
        .get(0);
    let latest = last_number(&steps);
    if before > latest {
        return Err(newer(before, latest));
    }
    for (number, name, sql) in steps.iter().filter(|s| s.0 > before) {
        tx.batch_execute(sql)
            .map_err(|e| Error::Storage(format!("migration {name}: {}", Error::from(e))))?;
        tx.execute(
            "INSERT INTO ctxd_migrations (version, name) VALUES ($1, $2)",
            &[number, name],
        )?;
    }
    tx.commit()?;
    Ok((before, latest))
}

pub(crate) fn newer(applied: i64, latest: i64) -> Error {
    Error::Storage(format!(
        "the database schema is at migration {applied}, newer than this ctxd knows ({latest}): upgrade ctxd"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_numbered_from_one_without_gaps() {
        let steps = steps().unwrap();
        assert!(!steps.is_empty());
        assert_eq!(latest().unwrap(), i64::try_from(steps.len()).unwrap());
    }
}
