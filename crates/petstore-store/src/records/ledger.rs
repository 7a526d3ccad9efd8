//! The stock ledger's rows: a movement as it is read ([`MovementRecord`]) and as it is written
//! ([`MovementColumns`]).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    Actor, Cause, HoldId, Movement, MovementId, MovementKind, NewMovement, OrderId, PetId, Reason,
    RequestId, Stock,
};

use super::{actor_column, corrupt, out_of_range};
use crate::error::StoreError;
use crate::schema::stock_movements;

/// A row of `stock_movements`.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = stock_movements, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct MovementRecord {
    pub(crate) id: i64,
    pub(crate) pet_id: i64,
    pub(crate) kind: String,
    pub(crate) quantity: i64,
    pub(crate) available_change: i64,
    pub(crate) committed_change: i64,
    pub(crate) available_after: i64,
    pub(crate) committed_after: i64,
    pub(crate) order_id: Option<i64>,
    pub(crate) line_no: Option<i64>,
    pub(crate) reason: Option<String>,
    pub(crate) actor: Option<String>,
    pub(crate) request_id: Option<String>,
    pub(crate) time: DateTime<Utc>,
    pub(crate) held_change: i64,
    pub(crate) held_after: i64,
    pub(crate) hold_id: Option<i64>,
}

impl TryFrom<MovementRecord> for Movement {
    type Error = StoreError;

    fn try_from(row: MovementRecord) -> Result<Self, StoreError> {
        let id = row.id;
        let bad = corrupt("stock_movements", id);
        let range = |column| move |_| out_of_range("stock_movements", id, column);
        let units = |value: i64, column| {
            u32::try_from(value)
                .map(Stock::from_level)
                .map_err(range(column))
        };
        let movement = Movement {
            id: MovementId::new(id).map_err(&bad)?,
            pet_id: PetId::new(row.pet_id).map_err(&bad)?,
            kind: row.kind.parse().map_err(&bad)?,
            quantity: u32::try_from(row.quantity).map_err(range("quantity"))?,
            available_change: row.available_change,
            held_change: row.held_change,
            committed_change: row.committed_change,
            available_after: units(row.available_after, "available_after")?,
            held_after: units(row.held_after, "held_after")?,
            committed_after: units(row.committed_after, "committed_after")?,
            order_id: row.order_id.map(OrderId::new).transpose().map_err(&bad)?,
            hold_id: row.hold_id.map(HoldId::new).transpose().map_err(&bad)?,
            line_no: row
                .line_no
                .map(u32::try_from)
                .transpose()
                .map_err(range("line_no"))?,
            reason: row
                .reason
                .as_deref()
                .map(Reason::parse)
                .transpose()
                .map_err(&bad)?,
            actor: row
                .actor
                .as_deref()
                .map(serde_json::from_str::<Actor>)
                .transpose()
                .map_err(|e| {
                    StoreError::Corrupt(format!("stock_movements row {id}: actor: {e}"))
                })?,
            request_id: row
                .request_id
                .map(|text| {
                    RequestId::parse(&text).ok_or_else(|| {
                        StoreError::Corrupt(format!("stock_movements row {id}: request_id"))
                    })
                })
                .transpose()?,
            time: row.time,
        };
        if !movement.fits_its_kind() {
            return Err(StoreError::Corrupt(format!(
                "stock_movements row {id}: its changes do not fit its kind"
            )));
        }
        Ok(movement)
    }
}

/// A movement's columns as both backends write them.
#[derive(Debug, Clone)]
pub(crate) struct MovementColumns {
    pub(crate) pet_id: i64,
    pub(crate) kind: &'static str,
    pub(crate) quantity: i64,
    pub(crate) available_change: i64,
    pub(crate) committed_change: i64,
    pub(crate) available_after: i64,
    pub(crate) committed_after: i64,
    pub(crate) order_id: Option<i64>,
    pub(crate) line_no: Option<i64>,
    pub(crate) reason: Option<String>,
    pub(crate) actor: Option<String>,
    pub(crate) request_id: Option<String>,
    pub(crate) held_change: i64,
    pub(crate) held_after: i64,
    pub(crate) hold_id: Option<i64>,
}

impl MovementColumns {
    /// The columns of each of `movements`, recorded with `cause`.
    pub(crate) fn of(cause: &Cause, movements: &[NewMovement]) -> Result<Vec<Self>, StoreError> {
        let actor = actor_column(cause)?;
        let request_id = cause.request_id.as_ref().map(|id| id.as_str().to_owned());
        Ok(movements
            .iter()
            .map(|movement| {
                let NewMovement {
                    pet_id,
                    change,
                    after,
                    entry,
                } = movement;
                Self {
                    pet_id: pet_id.get(),
                    kind: MovementKind::as_str(change.kind),
                    quantity: i64::from(change.quantity),
                    available_change: change.available,
                    committed_change: change.committed,
                    available_after: i64::from(after.available.get()),
                    committed_after: i64::from(after.committed.get()),
                    order_id: entry.order_line.map(|(order, _)| order.get()),
                    line_no: entry.order_line.map(|(_, line)| i64::from(line)),
                    reason: entry.reason.as_ref().map(|r| r.as_str().to_owned()),
                    actor: actor.clone(),
                    request_id: request_id.clone(),
                    held_change: change.held,
                    held_after: i64::from(after.held.get()),
                    hold_id: entry.hold.map(|hold| hold.get()),
                }
            })
            .collect())
    }
}
