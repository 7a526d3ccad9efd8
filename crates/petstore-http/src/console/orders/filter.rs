//! The orders list's filter, order and position: what its form and links send, and what
//! it asks the store.

use petstore_core::{OrderId, OrderQuery, PageSize, PetId};
use serde::{Deserialize, Serialize};

use crate::console::reply::{parsed, parsed_if_given};
use crate::error::ApiError;

/// The orders list's filter, order and position, as its form and links send them.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub(in crate::console) struct OrderFilter {
    /// `open`, `complete`, or empty for every order.
    #[serde(default)]
    pub(super) status: String,
    /// A pet's id, or text its name contains.
    #[serde(default)]
    pub(super) pet: String,
    /// `oldest` for oldest first; newest first otherwise.
    #[serde(default)]
    sort: String,
    #[serde(default)]
    after: String,
    #[serde(default)]
    before: String,
}

/// Which pet's orders a list is of.
#[derive(Debug, Clone)]
pub(super) enum PetSearch {
    /// Every pet's.
    Any,
    /// The pet with this id.
    Id(PetId),
    /// The one pet whose name contains this text (when several do, staff choose).
    Named(String),
}

/// What the orders list asks the store.
#[derive(Debug, Clone)]
pub(super) struct Asked {
    pub(super) query: OrderQuery,
    pub(super) pet: PetSearch,
    pub(super) before: Option<OrderId>,
}

impl OrderFilter {
    pub(super) fn asked(&self) -> Result<Asked, ApiError> {
        let complete = match self.status.as_str() {
            "" => None,
            "open" => Some(false),
            "complete" => Some(true),
            _ => {
                return Err(ApiError::invalid_parameter(
                    "status: must be open, complete or empty",
                ));
            }
        };
        let pet = match self.pet.trim() {
            "" => PetSearch::Any,
            text if text.bytes().all(|b| b.is_ascii_digit()) => PetSearch::Id(parsed(text)?),
            text => PetSearch::Named(text.to_owned()),
        };
        Ok(Asked {
            query: OrderQuery {
                complete,
                newest_first: !self.oldest_first(),
                after: parsed_if_given(&self.after)?,
                limit: PageSize::MAX_PAGE,
                ..OrderQuery::default()
            },
            pet,
            before: parsed_if_given(&self.before)?,
        })
    }

    pub(super) fn oldest_first(&self) -> bool {
        self.sort == "oldest"
    }

    /// The list's address with this filter, from `after` or up to `before`.
    pub(super) fn at(&self, after: Option<OrderId>, before: Option<OrderId>) -> String {
        let at = Self {
            after: after.map(|id| id.to_string()).unwrap_or_default(),
            before: before.map(|id| id.to_string()).unwrap_or_default(),
            ..self.clone()
        };
        format!(
            "/console/orders?{}",
            serde_html_form::to_string(&at).unwrap_or_default()
        )
    }

    /// The list's first page, of pet `pet`'s orders.
    pub(super) fn of_pet(&self, pet: PetId) -> String {
        Self {
            pet: pet.to_string(),
            ..self.clone()
        }
        .at(None, None)
    }

    /// The list's first page the other way round.
    pub(super) fn turned(&self) -> String {
        let sort = if self.oldest_first() { "" } else { "oldest" };
        Self {
            sort: sort.to_owned(),
            ..self.clone()
        }
        .at(None, None)
    }
}
