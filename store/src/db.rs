//! The backend-neutral face of a connection: what every store function is written
//! against, so each statement exists once and runs unchanged on SQLite and PostgreSQL.
//!
//! Statements use SQLite's numbered parameters (`?1`, `?2`, ...), which the PostgreSQL
//! backend rewrites to `$1`, `$2`; their text sticks to what both engines accept (`ON
//! CONFLICT`, `COALESCE`, `CAST`, `EXISTS`), and the few places where the engines differ
//! ask [`Db::dialect`]. Integers are always 64-bit (`BIGINT` on PostgreSQL).

use crate::error::{Error, Result};

/// The most rows one statement of `insert_many` inserts (a power of two).
pub(crate) const INSERT_CHUNK: usize = 64;

/// Which engine a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A bound parameter: borrowed, so binding copies nothing.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Null,
    Int(i64),
    /// A count, seq or size: stored as a signed 64-bit integer, so binding one past
    /// `i64::MAX` fails with an error instead of wrapping to a negative number.
    Uint(u64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<u64> for Param<'_> {
    fn from(v: u64) -> Self {
        Param::Uint(v)
    }
}

impl From<usize> for Param<'_> {
    fn from(v: usize) -> Self {
        Param::Uint(ctxd_pipeline::saturate::u64_of(v))
    }
}

/// A [`Param::Uint`] as the signed integer both engines store.
pub(crate) fn signed(v: u64) -> std::result::Result<i64, String> {
    i64::try_from(v).map_err(|_| {
        format!(
            "the value {v} is past the largest integer the store holds ({})",
            i64::MAX
        )
    })
}

impl From<u32> for Param<'_> {
    fn from(v: u32) -> Self {
        Param::Int(i64::from(v))
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(v: &'a [u8]) -> Self {
        Param::Blob(v)
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

/// `params![a, b, ...]`: a slice of [`Param`]s.
macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$($crate::db::Param::from($p)),*] as &[$crate::db::Param<'_>]
    };
}
pub(crate) use params;

/// One column value of a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
    Bool(bool),
}

/// One result row, its columns in `SELECT` order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

fn column_error(i: usize, want: &str, got: &Value) -> Error {
    Error::Storage(format!("column {i}: expected {want}, found {got:?}"))
}

impl Row {
    fn at(&self, i: usize) -> Result<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| Error::Storage(format!("column {i} missing from the row")))
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64> {
        match self.at(i)? {
            Value::Int(v) => Ok(*v),
            other => Err(column_error(i, "an integer", other)),
        }
    }

    pub(crate) fn u64(&self, i: usize) -> Result<u64> {
        let v = self.int(i)?;
        u64::try_from(v).map_err(|_| Error::Storage(format!("column {i}: {v} is negative")))
    }

    pub(crate) fn opt_u64(&self, i: usize) -> Result<Option<u64>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            _ => self.u64(i).map(Some),
        }
    }

    pub(crate) fn u32(&self, i: usize) -> Result<u32> {
        let v = self.int(i)?;
        u32::try_from(v).map_err(|_| Error::Storage(format!("column {i}: {v} out of range")))
    }

    pub(crate) fn text(&self, i: usize) -> Result<String> {
        self.opt_text(i)?
            .ok_or_else(|| column_error(i, "text", &Value::Null))
    }

    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            other => Err(column_error(i, "text", other)),
        }
    }

    /// Moves a text column out (large bodies are not copied).
    pub(crate) fn take_text(&mut self, i: usize) -> Result<String> {
        match self.0.get_mut(i).map(|v| std::mem::replace(v, Value::Null)) {
            Some(Value::Text(s)) => Ok(s),
            Some(other) => Err(column_error(i, "text", &other)),
            None => Err(Error::Storage(format!("column {i} missing from the row"))),
        }
    }

    pub(crate) fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>> {
        match self.at(i)? {
            Value::Null => Ok(None),
            Value::Blob(b) => Ok(Some(b.clone())),
            other => Err(column_error(i, "a blob", other)),
        }
    }

    /// SQLite answers truth values as integers, PostgreSQL as booleans.
    pub(crate) fn bool(&self, i: usize) -> Result<bool> {
        match self.at(i)? {
            Value::Bool(b) => Ok(*b),
            Value::Int(v) => Ok(*v != 0),
            other => Err(column_error(i, "a truth value", other)),
        }
    }

    /// A JSON text column, decoded.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, i: usize) -> Result<T> {
        Ok(serde_json::from_str(&self.text(i)?)?)
    }
}

/// `params` as rows of `width` parameters; an error unless it holds whole rows.
pub(crate) fn rows_of<'p, 'a>(
    width: usize,
    params: &'p [Param<'a>],
) -> Result<std::slice::ChunksExact<'p, Param<'a>>> {
    if width == 0 || !params.len().is_multiple_of(width) {
        return Err(Error::Internal(format!(
            "{} parameters are not rows of {width}",
            params.len()
        )));
    }
    Ok(params.chunks_exact(width))
}

/// An open connection or transaction of either backend. Object-safe: engine closures
/// receive `&mut dyn Db` and compose store functions in one transaction.
pub trait Db {
    fn dialect(&self) -> Dialect;

    /// Runs one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64>;

    /// [`Db::execute`] for an insert a uniqueness constraint may refuse: `None` then.
    /// The transaction cannot go on after a refusal (PostgreSQL aborts it): return the
    /// error it means.
    fn try_insert(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<u64>>;

    /// [`Db::try_insert`] of one statement for each row of `width` parameters in
    /// `params`, in order: `Some(i)` when a uniqueness constraint refused row `i` (rows
    /// before it are inserted; the transaction cannot go on), `None` when all were.
    fn try_insert_each(
        &mut self,
        sql: &str,
        width: usize,
        params: &[Param<'_>],
    ) -> Result<Option<usize>> {
        for (i, row) in rows_of(width, params)?.enumerate() {
            if self.try_insert(sql, row)?.is_none() {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Runs a query, handing each row to `each` in order.
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()>;

    /// Notes that records `first_seq..=last_seq` of `session` were inserted: a shared
    /// backend announces them to the other daemons when the transaction commits.
    fn appended(&mut self, _session: &str, _first_seq: u64, _last_seq: u64) {}

    /// Notes that what a compile's collection reads (seen files, touched paths, loaded
    /// instruction files, queued input) changed: a backend that keeps a generation of it
    /// (`Backend::context_generation`) moves it on when the transaction
    /// commits, before the write is reported done.
    fn context_changed(&mut self) {}
}

impl dyn Db + '_ {
    /// Every row of a query.
    pub(crate) fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.query_each(sql, params, &mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row, if any.
    pub(crate) fn query_opt(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>> {
        let mut first = None;
        self.query_each(sql, params, &mut |r| {
            if first.is_none() {
                first = Some(r);
            }
            Ok(())
        })?;
        Ok(first)
    }

    /// The first row of a query that always answers one (an aggregate).
    pub(crate) fn query_one(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| Error::Storage("the query answered no row".into()))
    }

    /// `INSERT … VALUES (…), (…), … tail` for rows of `width` parameters each (`params`
    /// holds them row after row): a few statements of a power-of-two number of rows (at
    /// most [`INSERT_CHUNK`]), so a long batch costs a few round trips on PostgreSQL and
    /// only a handful of statement texts are ever prepared. The number of rows changed.
    pub(crate) fn insert_many(
        &mut self,
        head: &str,
        tail: &str,
        width: usize,
        params: &[Param<'_>],
    ) -> Result<u64> {
        // Only the check: the rows are cut below, a power of two of them at a time.
        let _whole_rows = rows_of(width, params)?;
        let mut rest = params;
        let mut changed = 0;
        while !rest.is_empty() {
            let rows = rest.len() / width;
            let take = 1usize << rows.min(INSERT_CHUNK).ilog2();
            let (chunk, after) = rest.split_at(take * width);
            let values: Vec<String> = (0..take)
                .map(|r| {
                    let cols: Vec<String> =
                        (1..=width).map(|c| format!("?{}", r * width + c)).collect();
                    format!("({})", cols.join(", "))
                })
                .collect();
            changed += self.execute(
                &format!("{head} VALUES {} {tail}", values.join(", ")),
                chunk,
            )?;
            rest = after;
        }
        Ok(changed)
    }

    /// Rows mapped by `f`.
    pub(crate) fn query_map<T>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        mut f: impl FnMut(Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.query_each(sql, params, &mut |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }
}
