//! Who caused a change, and as part of which trace: what a change's events record beside it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::access::{ApiKey, Caller, Role};
use crate::ids::KeyId;
use crate::trace::TraceParent;
use crate::values::Name;

/// Who caused a change, as its events record it. Never a secret: a key is named by its id,
/// its name and its role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Actor {
    /// A client holding an API key, through one of the service's doors.
    Key {
        /// The key.
        id: KeyId,
        /// The name given to the key when it was made.
        name: Name,
        /// The key's role.
        role: Role,
        /// The door the request came through.
        door: Door,
    },
    /// The operator: the `petstore` command line, or a program embedding this crate.
    Operator,
    /// The service itself, doing one of its chores (`webhooks`, `sessions`).
    Service {
        /// The chore.
        chore: String,
    },
}

/// The door a key's request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Door {
    /// The JSON API under `/v1`.
    Api,
    /// The staff console under `/console/`.
    Console,
}

impl Door {
    /// Its name, as events and logs give it: `api`, `console`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Door::Api => "api",
            Door::Console => "console",
        }
    }
}

impl Actor {
    /// The service doing `chore`.
    pub fn chore(chore: &str) -> Self {
        Actor::Service {
            chore: chore.to_owned(),
        }
    }

    /// The key, if a key's holder caused the change.
    pub fn key(&self) -> Option<KeyId> {
        match self {
            Actor::Key { id, .. } => Some(*id),
            Actor::Operator | Actor::Service { .. } => None,
        }
    }
}

/// How a person reads it: `desk (staff, console)`, `the operator`, `the service (webhooks)`.
impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Key {
                name, role, door, ..
            } => write!(f, "{} ({role}, {})", name.as_str(), door.as_str()),
            Actor::Operator => f.write_str("the operator"),
            Actor::Service { chore } => write!(f, "the service ({chore})"),
        }
    }
}

/// Who holds a key that authenticated: the caller it acts as, and the key's name, which the
/// events of its changes record ([`KeyHolder::actor`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHolder {
    /// The caller the key acts as.
    pub caller: Caller,
    /// The name given to the key when it was made.
    pub name: Name,
}

impl KeyHolder {
    /// The holder of `key`.
    pub fn of(key: ApiKey) -> Self {
        Self {
            caller: Caller::key_holder(key.id, key.role),
            name: key.name,
        }
    }

    /// Who its changes through `door` are made by; the operator for a caller with no key.
    pub fn actor(&self, door: Door) -> Actor {
        match self.caller.key() {
            Some(id) => Actor::Key {
                id,
                name: self.name.clone(),
                role: self.caller.role(),
                door,
            },
            None => Actor::Operator,
        }
    }
}

/// What a change's events and stock movements record of where it came from: who caused it,
/// and the trace and id of the request that did, each when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cause {
    /// Who caused the change.
    pub actor: Option<Actor>,
    /// The W3C trace of the request that caused it.
    pub trace: Option<TraceParent>,
    /// The id of the request that caused it, as its answer's `X-Request-Id` gave it.
    pub request_id: Option<RequestId>,
}

/// A request's id (`X-Request-Id`): 1 to 128 characters, each a letter, a digit or one of
/// `-_.:+/=`, so that it is safe in a log line and a stored row.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// The id, if `text` is a valid one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text.as_bytes()).then(|| Self(text.to_owned()))
    }

    /// Whether `text` is a valid id.
    pub fn is_valid(text: &[u8]) -> bool {
        (1..=128).contains(&text.len())
            && text
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:+/=".contains(b))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_actor_is_stored_and_sent_as_tagged_json() {
        let desk = Actor::Key {
            id: KeyId::new(12).unwrap(),
            name: Name::parse("desk").unwrap(),
            role: Role::Staff,
            door: Door::Console,
        };
        let forms = [
            (
                desk.clone(),
                json!({"kind": "key", "id": 12, "name": "desk", "role": "staff", "door": "console"}),
            ),
            (Actor::Operator, json!({"kind": "operator"})),
            (
                Actor::chore("webhooks"),
                json!({"kind": "service", "chore": "webhooks"}),
            ),
        ];
        for (actor, wire) in forms {
            assert_eq!(serde_json::to_value(&actor).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Actor>(wire).unwrap(), actor);
        }
        assert_eq!(desk.to_string(), "desk (staff, console)");
        assert_eq!(desk.key(), KeyId::new(12).ok());
    }

    #[test]
    fn a_request_id_is_short_and_plain() {
        assert_eq!(RequestId::parse("a1-b2:c3").unwrap().as_str(), "a1-b2:c3");
        assert!(RequestId::parse("").is_none());
        assert!(RequestId::parse(&"x".repeat(129)).is_none());
        assert!(RequestId::parse("two words").is_none());
        assert!(RequestId::parse("line\nbreak").is_none());
    }
}
