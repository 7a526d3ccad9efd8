//! Holds' rows: a hold ([`HoldRecord`]) and its lines ([`HoldLineRecord`]).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{Ending, Hold, HoldEnd, HoldId, HoldLine, OrderId, OwnerId, PetId, Quantity};

use super::{corrupt, out_of_range};
use crate::error::StoreError;
use crate::schema::{hold_lines, holds};

/// A row of `holds`.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = holds, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct HoldRecord {
    pub(crate) id: i64,
    pub(crate) owner_id: Option<i64>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) expires_at: DateTime<Utc>,
    pub(crate) ended: Option<String>,
    pub(crate) ended_at: Option<DateTime<Utc>>,
    pub(crate) order_id: Option<i64>,
}

/// A row of `hold_lines`.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = hold_lines, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct HoldLineRecord {
    pub(crate) hold_id: i64,
    pub(crate) line_no: i64,
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
}

impl HoldRecord {
    /// The hold of this row with its `lines` (in order), which must be all it has.
    pub(crate) fn with_lines(self, lines: Vec<HoldLineRecord>) -> Result<Hold, StoreError> {
        let id = self.id;
        let bad = corrupt("holds", id);
        if lines.is_empty() {
            return Err(StoreError::Corrupt(format!("holds row {id}: no lines")));
        }
        let ended = match (self.ended.as_deref(), self.ended_at) {
            (None, None) => None,
            (Some(how), Some(at)) => {
                let how = HoldEnd::parse(how)
                    .ok_or_else(|| StoreError::Corrupt(format!("holds row {id}: ended {how}")))?;
                let order_id = self.order_id.map(OrderId::new).transpose().map_err(&bad)?;
                Some(Ending { how, at, order_id })
            }
            _ => {
                return Err(StoreError::Corrupt(format!(
                    "holds row {id}: an ending without its time, or the reverse"
                )));
            }
        };
        let lines = lines
            .into_iter()
            .map(|line| {
                let line_no = u16::try_from(line.line_no)
                    .map_err(|_| out_of_range("hold_lines", id, "line_no"))?;
                Ok(HoldLine {
                    line_no,
                    pet_id: PetId::new(line.pet_id).map_err(&bad)?,
                    quantity: Quantity::new(line.quantity).map_err(&bad)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Hold {
            id: HoldId::new(id).map_err(&bad)?,
            lines,
            created_at: self.created_at,
            expires_at: self.expires_at,
            ended,
            owner: self.owner_id.map(OwnerId::new).transpose().map_err(&bad)?,
        })
    }
}
