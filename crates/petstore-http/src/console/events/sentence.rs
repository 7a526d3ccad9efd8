//! An event as a sentence a shop's staff reads: who did what to which thing, by name
//! ("desk (staff, console) set Rex's stock from 3 to 5").

use std::collections::HashMap;

use petstore_core::{Actor, Event, EventType, PetId};
use serde_json::Value;

/// What the sentences of a page know besides the events: the pets' names, and each pet's
/// stock as the page's earlier events left it.
pub(super) struct Reading<'n> {
    names: &'n HashMap<PetId, String>,
    stock: HashMap<i64, i64>,
}

impl<'n> Reading<'n> {
    pub(super) fn new(names: &'n HashMap<PetId, String>) -> Self {
        Self {
            names,
            stock: HashMap::new(),
        }
    }

    /// `pet 7`'s name, or `pet 7` when it is gone.
    fn pet(&self, id: Option<i64>) -> String {
        let id = id.unwrap_or_default();
        PetId::new(id)
            .ok()
            .and_then(|pet| self.names.get(&pet))
            .cloned()
            .unwrap_or_else(|| format!("pet {id}"))
    }

    /// The sentence of `event`, whose previous event on the page is `before` (an order's
    /// stock change follows the order, in the same change).
    pub(super) fn sentence(&mut self, event: &Event, before: Option<&Event>) -> String {
        // A key's name is as it was given; the operator and the service open a sentence.
        let who = match &event.actor {
            None => "Someone".to_owned(),
            Some(actor @ Actor::Key { .. }) => actor.to_string(),
            Some(actor) => capitalized(&actor.to_string()),
        };
        let data = &event.data;
        let int = |field: &str| data[field].as_i64();
        let text = |field: &str| data[field].as_str().unwrap_or_default().to_owned();
        match event.event_type {
            EventType::PetCreated => format!("{who} added the pet {}", text("name")),
            EventType::PetUpdated => format!("{who} changed the pet {}", text("name")),
            EventType::PetDeleted => format!("{who} deleted {}", self.pet(int("id"))),
            EventType::PetStatusChanged => format!(
                "{}'s status went from {} to {}",
                self.pet(int("petId")),
                text("from"),
                text("to")
            ),
            EventType::CategoryCreated => format!("{who} added the category {}", text("name")),
            EventType::CategoryUpdated => format!("{who} changed the category {}", text("name")),
            EventType::CategoryDeleted => {
                format!("{who} deleted category {}", int("id").unwrap_or_default())
            }
            EventType::InventoryUpdated => {
                let pet = int("petId").unwrap_or_default();
                let now = int("quantity").unwrap_or_default();
                let from = self
                    .stock
                    .insert(pet, now)
                    .map(|was| format!(" from {was}"))
                    .unwrap_or_default();
                let by_order = before.is_some_and(|before| match before.event_type {
                    EventType::OrderPlaced | EventType::OrderCancelled => {
                        before.data["petId"].as_i64() == Some(pet)
                    }
                    EventType::HoldPlaced
                    | EventType::HoldReleased
                    | EventType::HoldExpired
                    | EventType::HoldConsumed => {
                        before.data["lines"].as_array().is_some_and(|lines| {
                            lines.iter().any(|l| l["petId"].as_i64() == Some(pet))
                        })
                    }
                    _ => false,
                });
                let name = self.pet(Some(pet));
                if by_order {
                    format!("{name}'s stock went{from} to {now}")
                } else {
                    format!("{who} set {name}'s stock{from} to {now}")
                }
            }
            EventType::OrderPlaced => {
                // Every line of a checkout; the seed's `petId` and `quantity` are line 1's.
                let lines: Vec<String> = match data["lines"].as_array() {
                    Some(lines) if !lines.is_empty() => lines
                        .iter()
                        .map(|line| {
                            let units = line["quantity"].as_i64().unwrap_or_default();
                            format!("{units} × {}", self.pet(line["petId"].as_i64()))
                        })
                        .collect(),
                    _ => vec![format!(
                        "{} × {}",
                        int("quantity").unwrap_or_default(),
                        self.pet(int("petId"))
                    )],
                };
                let id = int("id").unwrap_or_default();
                format!("{who} placed order {id} for {}", lines.join(", "))
            }
            EventType::OrderUpdated => format!(
                "{who} set order {}'s ship date to {}",
                int("id").unwrap_or_default(),
                ship_date(data)
            ),
            EventType::OrderCompleted => {
                format!("{who} completed order {}", int("id").unwrap_or_default())
            }
            EventType::OrderCancelled => format!(
                "{who} cancelled order {} ({} × {} back in stock)",
                int("id").unwrap_or_default(),
                int("quantity").unwrap_or_default(),
                self.pet(int("petId"))
            ),
            EventType::HoldPlaced => format!(
                "{who} held {} until {}",
                self.hold_lines(data),
                data["expiresAt"].as_str().unwrap_or_default()
            ),
            EventType::HoldReleased => format!(
                "{who} released hold {} ({} back in stock)",
                int("id").unwrap_or_default(),
                self.hold_lines(data)
            ),
            EventType::HoldExpired => format!(
                "Hold {} expired ({} back in stock)",
                int("id").unwrap_or_default(),
                self.hold_lines(data)
            ),
            EventType::HoldConsumed => format!(
                "{who} checked out hold {} as order {}",
                int("id").unwrap_or_default(),
                data["ended"]["orderId"].as_i64().unwrap_or_default()
            ),
        }
    }

    /// A hold's lines as "2 × Rex, 1 × Fido".
    fn hold_lines(&mut self, hold: &Value) -> String {
        let lines = hold["lines"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let each: Vec<String> = lines
            .iter()
            .map(|line| {
                let units = line["quantity"].as_i64().unwrap_or_default();
                format!("{units} × {}", self.pet(line["petId"].as_i64()))
            })
            .collect();
        each.join(", ")
    }
}

/// `text` with its first letter a capital, to open a sentence ("The operator").
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// An order's ship date as a day, or "none".
fn ship_date(order: &Value) -> String {
    order["shipDate"]
        .as_str()
        .map_or_else(|| "none".to_owned(), |date| date.chars().take(10).collect())
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use petstore_core::{Door, EventId, KeyId, Name, Role};
    use serde_json::json;

    use super::*;

    fn event(id: i64, event_type: EventType, data: Value, actor: Option<Actor>) -> Event {
        Event {
            id: EventId::new(id).unwrap(),
            time: Utc::now(),
            event_type,
            subject: String::new(),
            data,
            traceparent: None,
            actor,
        }
    }

    #[test]
    fn events_read_as_who_did_what_to_which_thing() {
        let desk = Actor::Key {
            id: KeyId::new(12).unwrap(),
            name: Name::parse("desk").unwrap(),
            role: Role::Staff,
            door: Door::Console,
        };
        let names = HashMap::from([(PetId::new(4).unwrap(), "Rex".to_owned())]);
        let mut reading = Reading::new(&names);
        let events = [
            event(
                1,
                EventType::InventoryUpdated,
                json!({"petId": 4, "quantity": 3}),
                Some(desk.clone()),
            ),
            event(
                2,
                EventType::InventoryUpdated,
                json!({"petId": 4, "quantity": 5}),
                Some(desk.clone()),
            ),
            event(
                3,
                EventType::OrderPlaced,
                json!({"id": 40, "petId": 4, "quantity": 2}),
                Some(Actor::Operator),
            ),
            event(
                4,
                EventType::InventoryUpdated,
                json!({"petId": 4, "quantity": 3}),
                Some(Actor::Operator),
            ),
            event(
                5,
                EventType::OrderCompleted,
                json!({"id": 40, "petId": 4, "quantity": 2}),
                None,
            ),
        ];
        let sentences: Vec<String> = events
            .iter()
            .enumerate()
            .map(|(at, event)| reading.sentence(event, at.checked_sub(1).map(|b| &events[b])))
            .collect();
        assert_eq!(
            sentences,
            [
                "desk (staff, console) set Rex's stock to 3",
                "desk (staff, console) set Rex's stock from 3 to 5",
                "The operator placed order 40 for 2 × Rex",
                "Rex's stock went from 5 to 3",
                "Someone completed order 40",
            ]
        );
    }
}
