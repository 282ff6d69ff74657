//! A PostgreSQL transaction behind the neutral [`Db`] face: `?N` parameters rewritten
//! to `$N`, statements prepared once per connection, rows decoded by column type.

use std::collections::HashMap;
use std::error::Error as StdError;

use bytes::BytesMut;
use postgres::Statement;
use postgres::error::SqlState;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::db::{Db, Dialect, Param, Row, Value};
use crate::error::{Error, Result};

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match *self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => int_to_sql(v, ty, out),
            Param::Uint(v) => int_to_sql(crate::db::signed(v)?, ty, out),
            Param::Text(s) => s.to_sql(ty, out),
            Param::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Checked per value in `to_sql`, whose errors name the mismatch.
        true
    }

    to_sql_checked!();
}

fn int_to_sql(
    v: i64,
    ty: &Type,
    out: &mut BytesMut,
) -> std::result::Result<IsNull, Box<dyn StdError + Sync + Send>> {
    match *ty {
        Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
        Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
        _ => v.to_sql(ty, out),
    }
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => {
                Error::Storage(format!("postgres: {} ({})", db.message(), db.code().code()))
            }
            None if e.is_closed() => {
                Error::Storage("postgres: the connection to the database was lost".into())
            }
            None => Error::Storage(format!("postgres: {e}")),
        }
    }
}

/// `?1` → `$1`. Statements never hold `?` inside string literals.
pub(crate) fn dollar_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn value(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    let v = match *ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        }
        Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob),
        Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
        _ => return Err(Error::Storage(format!("column {i}: unexpected type {ty}"))),
    };
    Ok(v.unwrap_or(Value::Null))
}

/// Prepared statements of one connection, by their `?N` text.
pub(crate) type Statements = HashMap<String, Statement>;

/// Sessions whose appends a write transaction announces at commit.
#[derive(Default)]
pub(crate) struct Appended(pub Vec<(String, u64, u64)>);

pub(crate) struct PgDb<'a, 't> {
    pub(crate) tx: &'a mut postgres::Transaction<'t>,
    pub(crate) statements: &'a mut Statements,
    pub(crate) appended: &'a mut Appended,
}

impl PgDb<'_, '_> {
    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.tx.prepare(&dollar_params(sql))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn refs<'p>(params: &'p [Param<'_>]) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Db for PgDb<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let st = self.statement(sql)?;
        Ok(self.tx.execute(&st, &refs(params))?)
    }

    fn try_insert(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<u64>> {
        let st = self.statement(sql)?;
        match self.tx.execute(&st, &refs(params)) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn query_each(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let st = self.statement(sql)?;
        for r in self.tx.query(&st, &refs(params))? {
            let cols = (0..r.len())
                .map(|i| value(&r, i))
                .collect::<Result<Vec<_>>>()?;
            each(Row(cols))?;
        }
        Ok(())
    }

    fn appended(&mut self, session: &str, first_seq: u64, last_seq: u64) {
        self.appended
            .0
            .push((session.to_string(), first_seq, last_seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollars() {
        assert_eq!(
            dollar_params("SELECT a FROM t WHERE x = ?1 AND y = ?12 OR z = '?'"),
            "SELECT a FROM t WHERE x = $1 AND y = $12 OR z = '?'"
        );
    }
}
