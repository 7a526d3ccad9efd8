//! What happened: the events every change records, in the same transaction as the change.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::actor::Actor;
use crate::hold::Hold;
use crate::ids::{CategoryId, EventId, PetId};
use crate::model::{Category, InventoryItem, Order, Pet, PetStatus};
use crate::trace::TraceParent;
use crate::validation::ValidationError;

/// The kinds of event, with the contract's dotted names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum EventType {
    /// `pet.created`
    #[serde(rename = "pet.created")]
    PetCreated,
    /// `pet.updated`
    #[serde(rename = "pet.updated")]
    PetUpdated,
    /// `pet.deleted`
    #[serde(rename = "pet.deleted")]
    PetDeleted,
    /// `pet.status_changed`
    #[serde(rename = "pet.status_changed")]
    PetStatusChanged,
    /// `category.created`
    #[serde(rename = "category.created")]
    CategoryCreated,
    /// `category.updated`
    #[serde(rename = "category.updated")]
    CategoryUpdated,
    /// `category.deleted`
    #[serde(rename = "category.deleted")]
    CategoryDeleted,
    /// `inventory.updated`
    #[serde(rename = "inventory.updated")]
    InventoryUpdated,
    /// `order.placed`
    #[serde(rename = "order.placed")]
    OrderPlaced,
    /// `order.updated` (a ship date changed; not in the contract's list, which has no event
    /// for that change although every change must have one)
    #[serde(rename = "order.updated")]
    OrderUpdated,
    /// `order.completed`
    #[serde(rename = "order.completed")]
    OrderCompleted,
    /// `order.cancelled`
    #[serde(rename = "order.cancelled")]
    OrderCancelled,
    /// `hold.placed`
    #[serde(rename = "hold.placed")]
    HoldPlaced,
    /// `hold.released`
    #[serde(rename = "hold.released")]
    HoldReleased,
    /// `hold.expired`
    #[serde(rename = "hold.expired")]
    HoldExpired,
    /// `hold.consumed`
    #[serde(rename = "hold.consumed")]
    HoldConsumed,
}

impl EventType {
    /// Every event type.
    pub const ALL: [EventType; 16] = [
        EventType::PetCreated,
        EventType::PetUpdated,
        EventType::PetDeleted,
        EventType::PetStatusChanged,
        EventType::CategoryCreated,
        EventType::CategoryUpdated,
        EventType::CategoryDeleted,
        EventType::InventoryUpdated,
        EventType::OrderPlaced,
        EventType::OrderUpdated,
        EventType::OrderCompleted,
        EventType::OrderCancelled,
        EventType::HoldPlaced,
        EventType::HoldReleased,
        EventType::HoldExpired,
        EventType::HoldConsumed,
    ];

    /// The dotted name, such as `order.placed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::PetCreated => "pet.created",
            EventType::PetUpdated => "pet.updated",
            EventType::PetDeleted => "pet.deleted",
            EventType::PetStatusChanged => "pet.status_changed",
            EventType::CategoryCreated => "category.created",
            EventType::CategoryUpdated => "category.updated",
            EventType::CategoryDeleted => "category.deleted",
            EventType::InventoryUpdated => "inventory.updated",
            EventType::OrderPlaced => "order.placed",
            EventType::OrderUpdated => "order.updated",
            EventType::OrderCompleted => "order.completed",
            EventType::OrderCancelled => "order.cancelled",
            EventType::HoldPlaced => "hold.placed",
            EventType::HoldReleased => "hold.released",
            EventType::HoldExpired => "hold.expired",
            EventType::HoldConsumed => "hold.consumed",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        EventType::ALL
            .into_iter()
            .find(|t| t.as_str() == text)
            .ok_or_else(|| ValidationError::new("type", "is not a known event type"))
    }
}

/// A change, as the use cases describe it before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DomainEvent {
    /// A pet was created (with its inventory entry at 0).
    PetCreated(Pet),
    /// A pet was replaced.
    PetUpdated(Pet),
    /// A pet was deleted (with its inventory entry).
    PetDeleted(PetId),
    /// A pet's status changed, by a rule or by staff.
    PetStatusChanged {
        /// The pet.
        pet_id: PetId,
        /// The status before.
        from: PetStatus,
        /// The status after.
        to: PetStatus,
    },
    /// A category was created.
    CategoryCreated(Category),
    /// A category was replaced.
    CategoryUpdated(Category),
    /// A category was deleted.
    CategoryDeleted(CategoryId),
    /// A pet's stock level changed.
    InventoryUpdated(InventoryItem),
    /// An order was placed.
    OrderPlaced(Order),
    /// An open order's ship date changed.
    OrderUpdated(Order),
    /// An order was completed.
    OrderCompleted(Order),
    /// An order was cancelled.
    OrderCancelled(Order),
    /// A hold set units aside.
    HoldPlaced(Hold),
    /// A hold was released by its owner or staff.
    HoldReleased(Hold),
    /// A hold ended at its expiry.
    HoldExpired(Hold),
    /// A hold was checked out (its ending names the order).
    HoldConsumed(Hold),
}

impl DomainEvent {
    /// The kind of event.
    pub fn event_type(&self) -> EventType {
        match self {
            DomainEvent::PetCreated(_) => EventType::PetCreated,
            DomainEvent::PetUpdated(_) => EventType::PetUpdated,
            DomainEvent::PetDeleted(_) => EventType::PetDeleted,
            DomainEvent::PetStatusChanged { .. } => EventType::PetStatusChanged,
            DomainEvent::CategoryCreated(_) => EventType::CategoryCreated,
            DomainEvent::CategoryUpdated(_) => EventType::CategoryUpdated,
            DomainEvent::CategoryDeleted(_) => EventType::CategoryDeleted,
            DomainEvent::InventoryUpdated(_) => EventType::InventoryUpdated,
            DomainEvent::OrderPlaced(_) => EventType::OrderPlaced,
            DomainEvent::OrderUpdated(_) => EventType::OrderUpdated,
            DomainEvent::OrderCompleted(_) => EventType::OrderCompleted,
            DomainEvent::OrderCancelled(_) => EventType::OrderCancelled,
            DomainEvent::HoldPlaced(_) => EventType::HoldPlaced,
            DomainEvent::HoldReleased(_) => EventType::HoldReleased,
            DomainEvent::HoldExpired(_) => EventType::HoldExpired,
            DomainEvent::HoldConsumed(_) => EventType::HoldConsumed,
        }
    }

    /// The resource the event is about, as a path relative to `/v1` (`pets/3`).
    pub fn subject(&self) -> String {
        match self {
            DomainEvent::PetCreated(pet) | DomainEvent::PetUpdated(pet) => {
                format!("pets/{}", pet.id)
            }
            DomainEvent::PetDeleted(id) => format!("pets/{id}"),
            DomainEvent::PetStatusChanged { pet_id, .. } => format!("pets/{pet_id}"),
            DomainEvent::CategoryCreated(category) | DomainEvent::CategoryUpdated(category) => {
                format!("categories/{}", category.id)
            }
            DomainEvent::CategoryDeleted(id) => format!("categories/{id}"),
            DomainEvent::InventoryUpdated(item) => format!("inventory/{}", item.pet_id),
            DomainEvent::OrderPlaced(order)
            | DomainEvent::OrderUpdated(order)
            | DomainEvent::OrderCompleted(order)
            | DomainEvent::OrderCancelled(order) => format!("store/orders/{}", order.id),
            DomainEvent::HoldPlaced(hold)
            | DomainEvent::HoldReleased(hold)
            | DomainEvent::HoldExpired(hold)
            | DomainEvent::HoldConsumed(hold) => format!("store/holds/{}", hold.id),
        }
    }

    /// The payload as JSON text: a document equal to [`data`](Self::data)'s, written from the
    /// resource itself. Stores write every event this way: building the `Value` first, then
    /// writing and dropping it, cost a stored event about a third of its instructions.
    pub fn data_json(&self) -> String {
        let written = match self {
            DomainEvent::PetCreated(pet) | DomainEvent::PetUpdated(pet) => {
                serde_json::to_string(pet)
            }
            DomainEvent::CategoryCreated(category) | DomainEvent::CategoryUpdated(category) => {
                serde_json::to_string(category)
            }
            DomainEvent::InventoryUpdated(item) => serde_json::to_string(item),
            DomainEvent::OrderPlaced(order)
            | DomainEvent::OrderUpdated(order)
            | DomainEvent::OrderCompleted(order)
            | DomainEvent::OrderCancelled(order) => serde_json::to_string(order),
            DomainEvent::HoldPlaced(hold)
            | DomainEvent::HoldReleased(hold)
            | DomainEvent::HoldExpired(hold)
            | DomainEvent::HoldConsumed(hold) => serde_json::to_string(hold),
            DomainEvent::PetDeleted(_)
            | DomainEvent::PetStatusChanged { .. }
            | DomainEvent::CategoryDeleted(_) => return self.data().to_string(),
        };
        // A resource always serializes; were one not to, its `Value` is the same document.
        written.unwrap_or_else(|_| self.data().to_string())
    }

    /// The event's payload: the resource after the change, the id of a deleted resource, or
    /// the two statuses of a status change.
    pub fn data(&self) -> Value {
        match self {
            DomainEvent::PetCreated(pet) | DomainEvent::PetUpdated(pet) => json!(pet),
            DomainEvent::PetDeleted(id) => json!({ "id": id }),
            DomainEvent::PetStatusChanged { pet_id, from, to } => {
                json!({ "petId": pet_id, "from": from, "to": to })
            }
            DomainEvent::CategoryCreated(category) | DomainEvent::CategoryUpdated(category) => {
                json!(category)
            }
            DomainEvent::CategoryDeleted(id) => json!({ "id": id }),
            DomainEvent::InventoryUpdated(item) => json!(item),
            DomainEvent::OrderPlaced(order)
            | DomainEvent::OrderUpdated(order)
            | DomainEvent::OrderCompleted(order)
            | DomainEvent::OrderCancelled(order) => json!(order),
            DomainEvent::HoldPlaced(hold)
            | DomainEvent::HoldReleased(hold)
            | DomainEvent::HoldExpired(hold)
            | DomainEvent::HoldConsumed(hold) => json!(hold),
        }
    }
}

/// A recorded event, as a store gives it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Its id; later events have larger ids.
    pub id: EventId,
    /// When the change began: read before its transaction, which then commits.
    pub time: DateTime<Utc>,
    /// The kind of event.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The resource it is about (see [`DomainEvent::subject`]).
    pub subject: String,
    /// The payload (see [`DomainEvent::data`]).
    pub data: Value,
    /// The trace of the request that caused the change, when it came with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<TraceParent>,
    /// Who caused the change; `None` for events recorded before actors were (unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Stock;

    #[test]
    fn names_round_trip() {
        for event_type in EventType::ALL {
            assert_eq!(event_type.as_str().parse::<EventType>(), Ok(event_type));
            assert_eq!(
                serde_json::to_value(event_type).unwrap(),
                json!(event_type.as_str())
            );
        }
        assert!("pet.exploded".parse::<EventType>().is_err());
    }

    #[test]
    fn status_change_carries_both_statuses() {
        let event = DomainEvent::PetStatusChanged {
            pet_id: PetId::new(4).unwrap(),
            from: PetStatus::Available,
            to: PetStatus::Pending,
        };
        assert_eq!(event.event_type(), EventType::PetStatusChanged);
        assert_eq!(event.subject(), "pets/4");
        assert_eq!(
            event.data(),
            json!({"petId": 4, "from": "available", "to": "pending"})
        );
    }

    #[test]
    fn the_payload_as_text_is_the_payload() {
        let pet_id = PetId::new(2).unwrap();
        let new = crate::model::NewOrder::new(pet_id, crate::values::Quantity::new(3).unwrap());
        let order = new.into_order(crate::ids::OrderId::new(9).unwrap(), None, None);
        let events = [
            DomainEvent::OrderPlaced(order),
            DomainEvent::InventoryUpdated(InventoryItem {
                pet_id,
                quantity: Stock::from_level(7),
                status: PetStatus::Available,
                held: Stock::from_level(2),
                committed: Stock::ZERO,
            }),
            DomainEvent::PetDeleted(pet_id),
            DomainEvent::PetStatusChanged {
                pet_id,
                from: PetStatus::Available,
                to: PetStatus::Sold,
            },
        ];
        for event in events {
            let text = event.data_json();
            let read: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(read, event.data(), "{text}");
        }
    }

    #[test]
    fn inventory_event_is_about_the_inventory_entry() {
        let event = DomainEvent::InventoryUpdated(InventoryItem {
            pet_id: PetId::new(2).unwrap(),
            quantity: Stock::from_level(7),
            status: PetStatus::Available,
            held: Stock::from_level(2),
            committed: Stock::ZERO,
        });
        assert_eq!(event.subject(), "inventory/2");
        assert_eq!(
            event.data(),
            json!({"petId": 2, "quantity": 7, "status": "available", "held": 2, "committed": 0})
        );
    }
}
