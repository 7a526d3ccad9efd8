//! The writes of a PostgreSQL write transaction (a burst's, or a lone write's) that are held
//! back and sent together just before its `COMMIT`: the stock its jobs set, the orders they
//! place with their lines, the idempotency records their creates make (kept with everything
//! else the transaction knows of its keys, `key_records.rs`), the stock movements they record
//! and the events they append, in two statements for the whole burst where each job would send five
//! of its own (`docs/storage.md`, "Grouping on PostgreSQL").
//!
//! Held back, a write cannot be seen by a statement, so any other statement on the
//! transaction's connection sends what is held first ([`PgTx::flushed`](super::tx::PgTx::flushed)):
//! every statement sees the writes made before it, as if each had been sent at once. An order
//! learns its id before it is held back: the statement that locks a burst's pets takes an id
//! from the orders' sequence for each pet it locks, and an order with no id left takes one of
//! its own (`PgTx::place_order_row`).
//!
//! A held-back write can fail only when it is sent, where no single job can be blamed: a
//! failed send makes the burst give up, and its jobs run again, each alone (`burst.rs`).

use chrono::{DateTime, Utc};
use diesel::RunQueryDsl;
use diesel::pg::PgConnection;
use diesel::result::DatabaseErrorKind;
use petstore_core::{
    DomainError, DomainEvent, NewOrder, OwnerId, PetId, Price, PricedLine, Quantity, TraceParent,
};

use super::prepared::{ChangePets, SendHeldBack};
use crate::error::StoreError;
use crate::key_records::{HeldRecord, KeyRecords};
use crate::records::{EventColumns, MovementColumns};

/// The statement a write transaction begins with, after its `BEGIN`, to say that its
/// held-back orders count themselves into their pets ([`HeldBack::place_order`]), so that the
/// trigger on orders leaves them (migration `orders_counted_by_writer`). A macro, so that
/// each `BEGIN` text stays one literal sent in one round trip.
macro_rules! orders_counted_by_writer {
    () => {
        "SET LOCAL petstore.orders_counted_by_writer = 'on'"
    };
}
pub(crate) use orders_counted_by_writer;

/// What a write burst holds back, and the order ids it has in hand.
#[derive(Debug, Default)]
pub(crate) struct HeldBack {
    /// Ids taken from the orders' sequence and not yet given to an order, the lowest last
    /// (orders get them in the order they are placed). Kept through a rollback: the sequence
    /// gives no id twice.
    order_ids: Vec<i64>,
    /// What the transaction changed in each pet's row, in the order first changed.
    pets: Vec<PetChange>,
    /// The idempotency keys the transaction met: what the burst looked up, what was found,
    /// and the records held back.
    keys: KeyRecords,
    /// The orders and events held back, as the statement binds them.
    rows: SendHeldBack,
    /// A send failed: the transaction lacks writes its jobs were told were made.
    failed: Option<StoreError>,
}

impl HeldBack {
    /// Gives `ids`, fresh from the orders' sequence, to the burst's orders.
    pub(crate) fn add_order_ids(&mut self, ids: impl IntoIterator<Item = i64>) {
        self.order_ids.extend(ids);
        self.order_ids.sort_unstable_by(|a, b| b.cmp(a));
    }

    /// Holds back an order of `line_count` lines (its first in the row), counted into its
    /// pet's open orders and committed units, if an id is in hand for it: its id, or `None`
    /// (then its caller takes one).
    pub(crate) fn place_order(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
        line_count: i64,
    ) -> Option<i64> {
        let id = self.order_ids.pop()?;
        // Destructured: a field added to orders is a compile error here until it is sent.
        let NewOrder {
            pet_id,
            quantity,
            ship_date,
        } = *new;
        // Its first line is counted here, not by the trigger (migration
        // `orders_counted_by_writer`): the transaction began saying so.
        self.count_line(pet_id, quantity);
        let rows = &mut self.rows;
        rows.order_ids.push(id);
        rows.pet_ids.push(pet_id.get());
        rows.quantities.push(i64::from(quantity.get()));
        rows.ship_dates.push(ship_date);
        rows.owner_ids.push(owner.map(OwnerId::get));
        rows.unit_amounts
            .push(price.map(|price| price.amount.get()));
        rows.currencies
            .push(price.map(|price| price.currency.code()));
        rows.line_counts.push(line_count);
        Some(id)
    }

    /// Holds back lines 2 and on (`lines`) of order `order_id`, held back before them, each
    /// counted into its pet's open orders and committed units.
    pub(crate) fn add_lines(&mut self, order_id: i64, lines: &[PricedLine]) {
        self.rows.lines.extend(order_id, lines);
        for line in lines {
            self.count_line(line.pet_id, line.quantity);
        }
    }

    /// Counts one open line of `quantity` units into `pet_id`'s open orders and committed
    /// units, sent with its stock ([`ChangePets`]).
    fn count_line(&mut self, pet_id: PetId, quantity: Quantity) {
        let pet = self.pet(pet_id.get());
        pet.orders += 1;
        pet.units += i64::from(quantity.get());
    }

    /// Holds back setting `pet_id`'s stock to `stock`, in place of any level held back for
    /// it before.
    pub(crate) fn set_stock(&mut self, pet_id: i64, stock: i64) {
        self.pet(pet_id).stock = Some(stock);
    }

    /// What is held back for `pet_id`'s row, made empty if nothing was.
    fn pet(&mut self, pet_id: i64) -> &mut PetChange {
        let at = match self.pets.iter().position(|pet| pet.pet_id == pet_id) {
            Some(at) => at,
            None => {
                self.pets.push(PetChange {
                    pet_id,
                    ..PetChange::default()
                });
                self.pets.len() - 1
            }
        };
        &mut self.pets[at]
    }

    /// The idempotency keys the transaction met, and the records it holds back.
    pub(crate) fn keys(&mut self) -> &mut KeyRecords {
        &mut self.keys
    }

    /// Takes what the burst's lookup found of its jobs' keys.
    pub(crate) fn looked_up(&mut self, keys: KeyRecords) {
        self.keys = keys;
    }

    /// Holds back appending `events`, after those held back before.
    pub(crate) fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: Option<&TraceParent>,
        actor: Option<&str>,
        events: &[DomainEvent],
    ) {
        let rows = &mut self.rows;
        for event in events {
            let EventColumns {
                event_type,
                subject,
                data,
            } = EventColumns::of(event);
            rows.times.push(time);
            rows.traceparents
                .push(cause.map(|trace| trace.as_str().to_owned()));
            rows.actors.push(actor.map(str::to_owned));
            rows.types.push(event_type.to_owned());
            rows.subjects.push(subject);
            rows.data.push(data);
        }
    }

    /// Holds back recording stock movements at `time`, after those held back before.
    pub(crate) fn record_movements(&mut self, time: DateTime<Utc>, rows: Vec<MovementColumns>) {
        self.rows.movements.extend(time, rows);
    }

    /// Whether a send failed since the burst began: it must not commit.
    pub(crate) fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Why the last send failed, if one did, forgetting it.
    pub(crate) fn take_failure(&mut self) -> Option<StoreError> {
        self.failed.take()
    }

    /// Forgets what is held back (the transaction it was for rolled back), and any failure
    /// to send it. The ids in hand stay usable.
    pub(crate) fn discard(&mut self) {
        let order_ids = std::mem::take(&mut self.order_ids);
        *self = Self {
            order_ids,
            ..Self::default()
        };
    }

    /// Sends what is held back on `conn`, inside the burst's transaction: the transaction's
    /// id, when the statement appending events returned it. A failure is remembered
    /// ([`failed`](Self::failed)), and what was held back is dropped with the transaction.
    pub(crate) fn send(&mut self, conn: &mut PgConnection) -> Option<i64> {
        for held in self.keys.take_held() {
            let HeldRecord {
                owner,
                key,
                record,
                replacing,
            } = held;
            let columns = if replacing {
                &mut self.rows.replacing
            } else {
                &mut self.rows.records
            };
            columns.push(owner, key, record);
        }
        if self.pets.is_empty() && self.rows.is_empty() {
            return None;
        }
        let pets = std::mem::take(&mut self.pets);
        let rows = std::mem::take(&mut self.rows);
        match send(conn, pets, rows) {
            Ok(xid) => xid,
            Err(failed) => {
                self.failed = Some(failed);
                None
            }
        }
    }
}

/// A change held back for one pet's row.
#[derive(Debug, Default)]
struct PetChange {
    pet_id: i64,
    /// Its stock as last set, if set.
    stock: Option<i64>,
    /// The open orders and units its orders' lines add.
    orders: i64,
    units: i64,
}

fn send(
    conn: &mut PgConnection,
    pets: Vec<PetChange>,
    rows: SendHeldBack,
) -> Result<Option<i64>, StoreError> {
    if !pets.is_empty() {
        let changed = pets.len();
        let mut change = ChangePets {
            pet_ids: Vec::with_capacity(changed),
            stocks: Vec::with_capacity(changed),
            orders: Vec::with_capacity(changed),
            units: Vec::with_capacity(changed),
        };
        for pet in pets {
            change.pet_ids.push(pet.pet_id);
            change.stocks.push(pet.stock);
            change.orders.push(pet.orders);
            change.units.push(pet.units);
        }
        let set = change.execute(conn)?;
        // Each pet was read, and locked, by the job that changed it: one missing now is an
        // error that job would have met alone.
        if set != changed {
            return Err(DomainError::storage("a pet whose row was changed is gone").into());
        }
    }
    if rows.is_empty() {
        return Ok(None);
    }
    let records = rows.records();
    let (xid, recorded): (i64, i64) = rows.get_result(conn).map_err(key_recorded)?;
    if usize::try_from(recorded).ok() != Some(records) {
        return Err(StoreError::KeyRecorded);
    }
    Ok(Some(xid))
}

/// A key recorded by another transaction after this one found none: the record's primary key
/// refused the insert (known by the error's kind and table, not its words).
fn key_recorded(error: diesel::result::Error) -> StoreError {
    match &error {
        diesel::result::Error::DatabaseError(DatabaseErrorKind::UniqueViolation, info)
            if info.table_name() == Some("idempotency_records") =>
        {
            StoreError::KeyRecorded
        }
        _ => error.into(),
    }
}

#[cfg(test)]
mod tests;
