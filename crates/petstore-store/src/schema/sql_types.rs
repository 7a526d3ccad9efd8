//! The two column types whose storage differs between the backends.
//!
//! A time is PostgreSQL's `timestamptz`; SQLite has no time type, and keeps it as RFC 3339 text
//! in UTC of one width, with six fraction digits (`2026-11-24T20:45:29.123456Z`): text order is
//! then time order, which the statements comparing times rely on, and the precision is
//! PostgreSQL's, so a time reads the same on either backend and survives a copy between them.
//! A JSON document is PostgreSQL's `jsonb`; SQLite keeps its text.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::{Jsonb, SqlType, Timestamptz};
use diesel::sqlite::{Sqlite, SqliteValue};

/// An instant, to the microsecond (see the module's documentation).
#[derive(Debug, Clone, Copy, SqlType, diesel::query_builder::QueryId)]
#[diesel(postgres_type(oid = 1184, array_oid = 1185))]
#[diesel(sqlite_type(name = "Text"))]
pub struct UtcTime;

/// A JSON document (see the module's documentation).
#[derive(Debug, Clone, Copy, SqlType, diesel::query_builder::QueryId)]
#[diesel(postgres_type(oid = 3802, array_oid = 3807))]
#[diesel(sqlite_type(name = "Text"))]
pub struct JsonValue;

/// How SQLite keeps a time: one width, `2026-11-24T20:45:05.123456Z`, so that text order is
/// time order. Written by chrono's RFC 3339 writer, which does not parse a format string each
/// time as `format` does (about 2,000 instructions a time, several times per order).
fn sqlite_time(time: &DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A time bound to a [`UtcTime`] column. Reading gives `DateTime<Utc>` itself; binding needs a
/// type of this crate, since Diesel keeps `AsExpression` for foreign types to itself. It reads
/// too, for rows that are read only to be written again (a copy between databases).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    diesel::expression::AsExpression,
    diesel::deserialize::FromSqlRow,
)]
#[diesel(sql_type = UtcTime)]
pub(crate) struct Time(pub(crate) DateTime<Utc>);

/// A JSON document bound to a [`JsonValue`] column (see [`Time`]).
#[derive(
    Debug, Clone, PartialEq, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow,
)]
#[diesel(sql_type = JsonValue)]
pub(crate) struct Json(pub(crate) serde_json::Value);

impl<DB: Backend> FromSql<UtcTime, DB> for Time
where
    DateTime<Utc>: FromSql<UtcTime, DB>,
{
    fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
        <DateTime<Utc> as FromSql<UtcTime, DB>>::from_sql(value).map(Time)
    }
}

impl<DB: Backend> FromSql<JsonValue, DB> for Json
where
    serde_json::Value: FromSql<JsonValue, DB>,
{
    fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
        <serde_json::Value as FromSql<JsonValue, DB>>::from_sql(value).map(Json)
    }
}

impl ToSql<UtcTime, Pg> for Time {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        <DateTime<Utc> as ToSql<Timestamptz, Pg>>::to_sql(&self.0, out)
    }
}

impl FromSql<UtcTime, Pg> for DateTime<Utc> {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        <Self as FromSql<Timestamptz, Pg>>::from_sql(value)
    }
}

impl ToSql<UtcTime, Sqlite> for Time {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        out.set_value(sqlite_time(&self.0));
        Ok(IsNull::No)
    }
}

impl FromSql<UtcTime, Sqlite> for DateTime<Utc> {
    fn from_sql(mut value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        let text = value.read_text();
        DateTime::parse_from_rfc3339(text)
            .map(|time| time.with_timezone(&Utc))
            .map_err(|e| format!("not a time: {text:?}: {e}").into())
    }
}

/// A JSON document's text bound to a [`JsonValue`] column, written as it is: an event's
/// payload, which the domain writes as text (`DomainEvent::data_json`).
#[derive(Debug, Clone, PartialEq, diesel::expression::AsExpression)]
#[diesel(sql_type = JsonValue)]
pub(crate) struct JsonText(pub(crate) String);

impl ToSql<JsonValue, Pg> for JsonText {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        use std::io::Write;
        // `jsonb`'s binary form: its version (1), then the document's text.
        out.write_all(&[1])?;
        out.write_all(self.0.as_bytes())?;
        Ok(IsNull::No)
    }
}

impl ToSql<JsonValue, Sqlite> for JsonText {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        out.set_value(self.0.as_str());
        Ok(IsNull::No)
    }
}

impl ToSql<JsonValue, Pg> for Json {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        <serde_json::Value as ToSql<Jsonb, Pg>>::to_sql(&self.0, out)
    }
}

impl FromSql<JsonValue, Pg> for serde_json::Value {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        <Self as FromSql<Jsonb, Pg>>::from_sql(value)
    }
}

impl ToSql<JsonValue, Sqlite> for Json {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        <serde_json::Value as ToSql<diesel::sql_types::Json, Sqlite>>::to_sql(&self.0, out)
    }
}

impl FromSql<JsonValue, Sqlite> for serde_json::Value {
    fn from_sql(value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        <Self as FromSql<diesel::sql_types::Json, Sqlite>>::from_sql(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn sqlite_times_are_of_one_width_so_text_order_is_time_order() {
        let base = Utc.with_ymd_and_hms(2026, 11, 24, 20, 45, 5).unwrap();
        let times = [
            base,
            base + chrono::Duration::nanoseconds(123_456_789),
            base + chrono::Duration::milliseconds(500),
            base + chrono::Duration::seconds(1),
        ];
        let texts: Vec<String> = times.iter().map(sqlite_time).collect();
        assert_eq!(texts[0], "2026-11-24T20:45:05.000000Z");
        assert_eq!(
            texts[1], "2026-11-24T20:45:05.123456Z",
            "to the microsecond"
        );
        assert!(texts.iter().all(|t| t.len() == texts[0].len()), "{texts:?}");
        assert!(texts.windows(2).all(|w| w[0] < w[1]), "{texts:?}");
    }

    #[test]
    fn sqlite_times_are_written_as_the_fixed_width_format_always_was() {
        // The width databases hold since the fixed-width migration.
        let written_before = "%Y-%m-%dT%H:%M:%S%.6fZ";
        let mut time = Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap();
        for step in 0..2_000_i64 {
            let text = sqlite_time(&time);
            assert_eq!(text, time.format(written_before).to_string());
            time += chrono::Duration::nanoseconds(step * 7_777_777_777_777 + 999);
        }
    }
}
