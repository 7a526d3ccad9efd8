//! The holds' use cases. Any caller may hold units; a customer sees, releases and checks out
//! only its own holds (another's hold does not exist for it), staff any.
//!
//! Every change of a hold locks its pets in ascending id first, then reads the hold again
//! under its own lock (the one lock order of every write: pets, then holds, then orders and
//! keys), so two nodes ending one hold at once (a release, the sweeper, a checkout) end it
//! once: the second finds it ended.

use chrono::{DateTime, TimeDelta, Utc};

use super::Service;
use super::orders::Terms;
use super::stock::{LockedPets, judge_lines, judge_priced_lines, lock_pets};
use crate::access::Caller;
use crate::checkout::NewLine;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::hold::{Ending, HeldTotals, Hold, HoldEnd, HoldLine, NewHold, PlacedHold};
use crate::idempotency::{Idempotent, Outcome};
use crate::ids::HoldId;
use crate::ledger::{Entry, MovementKind};
use crate::model::Order;
use crate::money::Total;
use crate::permission::Permission;
use crate::query::OrderScope;
use crate::repository::{Snapshot, Store, Transaction};
use crate::validation::ValidationError;

/// The use cases of holds; see [`Service::holds`].
#[derive(Debug)]
pub struct HoldUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

/// What a hold's checkout says besides the hold: as a checkout's, without lines.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HoldCheckout {
    /// When it is to ship, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_date: Option<DateTime<Utc>>,
    /// The total the client showed its buyer, in minor units: refused (`total_mismatch`) when
    /// the hold's lines come to another at the pets' prices now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_total: Option<Total>,
}

impl<S: Store, C: Clock> HoldUseCases<'_, S, C> {
    /// Sets the units of `new`'s lines aside for the caller, all or nothing, for the life it
    /// asks (within the operator's [`HoldLives`](crate::HoldLives)): they leave `available`
    /// at once, each line judged as a checkout's is (every refused line named). With `once`,
    /// a client retrying after a lost answer cannot hold twice. Holds wait for the stock
    /// ledger to have begun (`UpgradeUnfinished`): a node of the older version would not
    /// count held units.
    pub fn place(
        &self,
        caller: Caller,
        new: NewHold,
        once: Option<Idempotent<'_, Hold>>,
    ) -> Result<Outcome<Hold>, DomainError> {
        caller.require(Permission::Shop)?;
        let lives = self.shop.settings.hold_lives;
        let life = lives
            .life_of(new.ttl_seconds)
            .ok_or_else(|| DomainError::HoldTooLong {
                asked: new.ttl_seconds.unwrap_or_default(),
                longest: u32::try_from(lives.longest.as_secs()).unwrap_or(u32::MAX),
            })?;
        let life = TimeDelta::from_std(life)
            .map_err(|_| ValidationError::new("ttlSeconds", "is too long"))?;
        self.shop.create(caller, once, |tx| {
            let lines = new.lines.lines();
            if let Some((line_no, pet_id)) = new.lines.repeated() {
                return Err(DomainError::PetRepeated { pet_id, line_no });
            }
            if !tx.holds_open()? {
                return Err(DomainError::UpgradeUnfinished);
            }
            let mut pets = lock_pets(tx, lines.iter().map(|line| line.pet_id))?;
            let judged = judge_lines(&mut pets, lines, |_, stock, quantity| stock.hold(quantity))?;
            let now = self.shop.clock.now();
            let hold = tx.insert_hold(&PlacedHold {
                lines: numbered(lines),
                created_at: now,
                expires_at: now + life,
                owner: caller.owner(),
            })?;
            let changes = judged
                .iter()
                .map(|(_, pet, transition)| (pet, transition, Entry::hold(hold.id)));
            self.shop.apply_all(tx, changes)?;
            let mut events = vec![DomainEvent::HoldPlaced(hold.clone())];
            for (_, _, transition) in &judged {
                events.extend(transition.events.iter().cloned());
            }
            Ok((hold, events))
        })
    }

    /// The hold with this id, active or ended, if the caller may see it.
    pub fn get(&self, caller: Caller, id: HoldId) -> Result<Hold, DomainError> {
        caller.require(Permission::Shop)?;
        let scope = caller.order_scope();
        self.shop
            .store
            .read_one(|snapshot| visible_hold(snapshot, id, scope))
    }

    /// Releases an active hold the caller may see: its units go back at once. A hold that has
    /// ended, or whose expiry has passed, is refused (`HoldEnded`): its units are back or
    /// ordered already, or the sweeper is giving them back.
    pub fn release(&self, caller: Caller, id: HoldId) -> Result<Hold, DomainError> {
        caller.require(Permission::Shop)?;
        let scope = caller.order_scope();
        self.shop.change(|tx| {
            let mut pets = lock_hold_pets(tx, id)?;
            let hold = usable_hold(tx, id, scope, self.shop.clock.now())?;
            let events = self.end(tx, &mut pets, hold.clone(), HoldEnd::Released)?;
            Ok((hold, events))
        })
    }

    /// Ends, as expired, up to `limit` active holds whose expiry has come, the longest due
    /// first, in one transaction, and gives how many it ended. Each is read again under its
    /// pets' locks and ended only if still active, so nodes sweeping at once end each hold
    /// once. Changes are recorded as the use cases' actor: the service's sweeper acts as
    /// [`Actor::chore`](crate::Actor::chore)`("holds")`.
    pub fn expire_due(&self, limit: u32) -> Result<usize, DomainError> {
        let now = self.shop.clock.now();
        // One statement: all an idle shop's sweep costs.
        let due = self
            .shop
            .store
            .read_one(|snapshot| snapshot.due_holds(now, limit))?;
        if due.is_empty() {
            return Ok(0);
        }
        #[cfg(feature = "plant-sweep-without-reread")]
        let seen = super::plant::holds_before(self.shop, &due)?;
        self.shop.change(|tx| {
            let mut pet_ids = Vec::new();
            for &id in &due {
                pet_ids.extend(tx.hold_pets(id)?);
            }
            let mut pets = lock_pets(tx, pet_ids)?;
            let mut events = Vec::new();
            let mut ended = 0;
            for &id in &due {
                #[cfg(not(feature = "plant-sweep-without-reread"))]
                let hold = tx.hold(id)?.filter(|hold| hold.due_at(now));
                #[cfg(feature = "plant-sweep-without-reread")]
                let hold = seen.iter().find(|hold| hold.id == id).cloned();
                let Some(hold) = hold else {
                    continue;
                };
                events.extend(self.end(tx, &mut pets, hold, HoldEnd::Expired)?);
                ended += 1;
            }
            Ok((ended, events))
        })
    }

    /// Checks out an active hold the caller may see: one order of the hold's lines, numbered
    /// as the hold's, each at its pet's price now (read under the pet's lock), whose units
    /// are the hold's. Refused, recording nothing, when the hold has ended or its expiry has
    /// passed (`HoldEnded`), when a pet has no price, or when the total is not the one
    /// expected. A hold becomes at most one order, whatever the idempotency keys: the
    /// second checkout finds it consumed.
    pub fn check_out(
        &self,
        caller: Caller,
        id: HoldId,
        terms: HoldCheckout,
        once: Option<Idempotent<'_, Order>>,
    ) -> Result<Outcome<Order>, DomainError> {
        caller.require(Permission::Shop)?;
        let scope = caller.order_scope();
        self.shop.create(caller, once, |tx| {
            let mut pets = lock_hold_pets(tx, id)?;
            let hold = usable_hold(tx, id, scope, self.shop.clock.now())?;
            // The hold's lines, in order, numbered from 1 as a checkout's are.
            let lines: Vec<NewLine> = hold
                .lines
                .iter()
                .map(|line| NewLine {
                    pet_id: line.pet_id,
                    quantity: line.quantity,
                })
                .collect();
            let placed = judge_priced_lines(&mut pets, &lines, |stock, quantity| {
                Ok(stock.commit_hold(quantity))
            })?;
            let terms = Terms {
                ship_date: terms.ship_date,
                expected_total: terms.expected_total,
                owner: caller.owner(),
                hold: Some(hold.id),
            };
            let (order, mut events) = self.shop.place_lines(tx, &placed, terms)?;
            let ending = Ending {
                how: HoldEnd::Consumed,
                at: self.shop.clock.now(),
                order_id: Some(order.id),
            };
            tx.end_hold(hold.id, &ending)?;
            let consumed = Hold {
                ended: Some(ending),
                ..hold
            };
            events.insert(1, DomainEvent::HoldConsumed(consumed));
            Ok((order, events))
        })
    }

    /// The active holds whose expiry comes within `within` from now, those already due
    /// included, the soonest first, up to `limit`: the units about to go back on sale, for
    /// staff (a hold is its placer's basket, as an order is its owner's).
    pub fn expiring(
        &self,
        caller: Caller,
        within: TimeDelta,
        limit: u32,
    ) -> Result<Vec<Hold>, DomainError> {
        caller.require(Permission::ManageStore)?;
        let until = self.shop.clock.now() + within;
        self.shop.store.read(|snapshot| {
            // Read in one snapshot: a hold the list names is there to read.
            let ids = snapshot.due_holds(until, limit)?;
            ids.into_iter()
                .filter_map(|id| snapshot.hold(id).transpose())
                .collect()
        })
    }

    /// How many holds are active, the units they hold, and the earliest expiry not yet acted
    /// on, for the operator's metrics.
    pub fn totals(&self) -> Result<HeldTotals, DomainError> {
        let now = self.shop.clock.now();
        self.shop.store.read(|snapshot| snapshot.held_totals(now))
    }

    /// Ends the active `hold` as `how` (released or expired) in `tx`, its pets locked in
    /// `pets`: its units go back, a movement per line, and its events.
    fn end(
        &self,
        tx: &mut dyn Transaction,
        pets: &mut LockedPets,
        hold: Hold,
        how: HoldEnd,
    ) -> Result<Vec<DomainEvent>, DomainError> {
        let (kind, event): (_, fn(Hold) -> DomainEvent) = match how {
            HoldEnd::Released => (MovementKind::HoldReleased, DomainEvent::HoldReleased),
            HoldEnd::Expired => (MovementKind::HoldExpired, DomainEvent::HoldExpired),
            HoldEnd::Consumed => {
                return Err(DomainError::storage("a hold is consumed by its checkout"));
            }
        };
        let ending = Ending {
            how,
            at: self.shop.clock.now(),
            order_id: None,
        };
        tx.end_hold(hold.id, &ending)?;
        let mut events = Vec::new();
        for line in &hold.lines {
            let (pet, stock) = locked(pets, &hold, line)?;
            let transition = stock.end_hold(line.quantity, kind);
            let pet = pet.clone();
            self.shop
                .apply(tx, &pet, &transition, Entry::hold(hold.id))?;
            if let Some((_, stock)) = pets.get_mut(&line.pet_id) {
                *stock = transition.after;
            }
            events.extend(transition.events);
        }
        let ended = Hold {
            ended: Some(ending),
            ..hold
        };
        events.insert(0, event(ended));
        Ok(events)
    }
}

/// The lines of a hold, numbered from 1 in the order given.
fn numbered(lines: &[NewLine]) -> Vec<HoldLine> {
    lines
        .iter()
        .zip(1u16..)
        .map(|(line, line_no)| HoldLine {
            line_no,
            pet_id: line.pet_id,
            quantity: line.quantity,
        })
        .collect()
}

/// The locked pet of a hold's line. An active hold keeps its pets from being deleted, so a
/// missing one means the stored data is inconsistent.
fn locked<'p>(
    pets: &'p LockedPets,
    hold: &Hold,
    line: &HoldLine,
) -> Result<(&'p crate::model::Pet, crate::rules::PetStock), DomainError> {
    pets.get(&line.pet_id)
        .map(|(pet, stock)| (pet, *stock))
        .ok_or_else(|| {
            DomainError::storage(format!(
                "hold {} is active but its pet {} is gone",
                hold.id, line.pet_id
            ))
        })
}

/// The hold, if it exists and the scope allows seeing it: another's hold is "not found", as
/// another's order is.
fn visible_hold(
    snapshot: &mut dyn Snapshot,
    id: HoldId,
    scope: OrderScope,
) -> Result<Hold, DomainError> {
    snapshot
        .hold(id)?
        .filter(|hold| scope.allows(hold.owner))
        .ok_or_else(|| DomainError::not_found(Resource::Hold, id))
}

/// The pets of hold `id`, locked (the first step of the one lock order); a hold that does not
/// exist is "not found".
fn lock_hold_pets(tx: &mut dyn Transaction, id: HoldId) -> Result<LockedPets, DomainError> {
    let pets = tx.hold_pets(id)?;
    if pets.is_empty() {
        return Err(DomainError::not_found(Resource::Hold, id));
    }
    lock_pets(tx, pets)
}

/// The hold read again under its lock, if the caller may see it, it is still active and its
/// expiry has not come.
fn usable_hold(
    tx: &mut dyn Transaction,
    id: HoldId,
    scope: OrderScope,
    now: DateTime<Utc>,
) -> Result<Hold, DomainError> {
    let hold = visible_hold(tx, id, scope)?;
    match hold.ended {
        #[cfg(feature = "plant-hold-ended-twice")]
        Some(ending) if ending.how == HoldEnd::Expired => Ok(hold),
        Some(ending) => Err(DomainError::HoldEnded {
            id,
            how: ending.how,
        }),
        None if !hold.usable_at(now) && !cfg!(feature = "plant-expired-hold-accepted") => {
            Err(DomainError::HoldEnded {
                id,
                how: HoldEnd::Expired,
            })
        }
        None => Ok(hold),
    }
}
