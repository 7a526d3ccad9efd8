//! The repository traits on one SQLite connection inside one transaction.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use petstore_core::query::fold_case;
use petstore_core::{
    ApiKey, Category, CategoryId, CategoryQuery, DomainError, DomainEvent, Event, EventId,
    InventoryItem, InventoryQuery, KeyId, KeyQuery, Name, NewApiKey, NewCategory, NewOrder, NewPet,
    Order, OrderId, OrderQuery, OwnerId, PageSize, Pet, PetId, PetQuery, RepoResult, Role,
    Snapshot, Stock, StoredKey, Transaction,
};

use petstore_core::IdempotencyRecord;
use petstore_core::webhooks::NewDeliveryAttempt;
use petstore_core::{
    DeliveryAttempt, DeliveryQuery, DeliveryState, NewWebhook, Webhook, WebhookId, WebhookQuery,
    WebhookSecret,
};

use crate::error::{QueryResultExt, StoreError, Violation, violation};
use crate::rows::{
    CategoryRow, CategoryValues, EventRow, IdempotencyRow, KeyRow, NewEventRow, NewIdempotencyRow,
    NewKeyRow, NewOrderRow, OrderRow, PetRow, PetValues, format_time,
};
use crate::schema::{api_keys, categories, events, idempotency_records, orders, pets};

/// One transaction's view of the database. `SqliteStore` opens the transaction around it.
pub(crate) struct SqliteTx<'c> {
    pub(crate) conn: &'c mut SqliteConnection,
}

/// A page query reads one row more than the page holds, to tell whether another page follows.
pub(crate) fn probe(limit: PageSize) -> i64 {
    i64::from(limit.get()) + 1
}

/// A LIKE pattern matching `needle` anywhere, with LIKE's wildcards in it taken literally.
fn contains_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

pub(crate) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> RepoResult<Vec<T>> {
    rows.into_iter()
        .map(|row| T::try_from(row).map_err(DomainError::from))
        .collect()
}

pub(crate) fn convert_one<R, T: TryFrom<R, Error = StoreError>>(
    row: Option<R>,
) -> RepoResult<Option<T>> {
    row.map(T::try_from).transpose().map_err(DomainError::from)
}

/// An UPDATE or DELETE by id touched no row: the use case checked the row exists in this
/// same transaction, so this is a store bug, not a client error.
pub(crate) fn exactly_one(affected: usize, what: &str, id: i64) -> RepoResult<()> {
    if affected == 1 {
        Ok(())
    } else {
        Err(DomainError::Storage(format!(
            "{what} {id}: expected to change 1 row, changed {affected}"
        )))
    }
}

/// Maps a constraint the schema enforces to the domain refusal it stands for; any other
/// failure goes through the store's general mapping.
fn refuse(
    error: diesel::result::Error,
    refusal: impl FnOnce(Violation) -> Option<DomainError>,
) -> DomainError {
    violation(&error)
        .and_then(refusal)
        .unwrap_or_else(|| StoreError::from(error).into())
}

impl SqliteTx<'_> {
    fn pet_rows(&mut self, query: &PetQuery) -> RepoResult<Vec<PetRow>> {
        let mut sql = pets::table
            .select(PetRow::as_select())
            .order(pets::id.asc())
            .limit(probe(query.limit))
            .into_boxed();
        if let Some(after) = query.after {
            sql = sql.filter(pets::id.gt(after.get()));
        }
        if let Some(status) = query.status {
            sql = sql.filter(pets::status.eq(status.as_str()));
        }
        if let Some(category) = query.category_id {
            sql = sql.filter(pets::category_id.eq(category.get()));
        }
        if !query.ids.is_empty() {
            sql = sql.filter(pets::id.eq_any(query.ids.iter().map(|id| id.get())));
        }
        if let Some(needle) = &query.name_contains {
            sql = sql.filter(
                pets::name_key
                    .like(contains_pattern(&fold_case(needle)))
                    .escape('\\'),
            );
        }
        sql.load(self.conn).or_storage()
    }
}

impl Snapshot for SqliteTx<'_> {
    fn category(&mut self, id: CategoryId) -> RepoResult<Option<Category>> {
        let row = categories::table
            .find(id.get())
            .select(CategoryRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn category_named(&mut self, name: &Name) -> RepoResult<Option<Category>> {
        let row = categories::table
            .filter(categories::name_key.eq(fold_case(name.as_str())))
            .select(CategoryRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn categories(&mut self, query: &CategoryQuery) -> RepoResult<Vec<Category>> {
        let after = query.after.map_or(0, CategoryId::get);
        let rows = categories::table
            .filter(categories::id.gt(after))
            .order(categories::id.asc())
            .limit(probe(query.limit))
            .select(CategoryRow::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn category_has_pets(&mut self, id: CategoryId) -> RepoResult<bool> {
        diesel::select(diesel::dsl::exists(
            pets::table.filter(pets::category_id.eq(id.get())),
        ))
        .get_result(self.conn)
        .or_storage()
    }

    fn pet(&mut self, id: PetId) -> RepoResult<Option<Pet>> {
        let row: Option<PetRow> = pets::table
            .find(id.get())
            .select(PetRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        Ok(row.map(|r| r.pet()).transpose()?)
    }

    fn pets(&mut self, query: &PetQuery) -> RepoResult<Vec<Pet>> {
        let rows = self.pet_rows(query)?;
        Ok(rows.iter().map(PetRow::pet).collect::<Result<_, _>>()?)
    }

    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        let row: Option<PetRow> = pets::table
            .find(pet_id.get())
            .select(PetRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        Ok(row.map(|r| r.inventory_item()).transpose()?)
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let rows = self.pet_rows(&PetQuery {
            status: query.status,
            after: query.after,
            limit: query.limit,
            ..PetQuery::default()
        })?;
        Ok(rows
            .iter()
            .map(PetRow::inventory_item)
            .collect::<Result<_, _>>()?)
    }

    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        let row = orders::table
            .find(id.get())
            .select(OrderRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let mut sql = orders::table
            .select(OrderRow::as_select())
            .order(orders::id.asc())
            .limit(probe(query.limit))
            .into_boxed();
        if let Some(after) = query.after {
            sql = sql.filter(orders::id.gt(after.get()));
        }
        if let Some(pet) = query.pet_id {
            sql = sql.filter(orders::pet_id.eq(pet.get()));
        }
        if let Some(complete) = query.complete {
            sql = sql.filter(orders::complete.eq(complete));
        }
        if let Some(owner) = query.owner {
            sql = sql.filter(orders::owner_id.eq(owner.get()));
        }
        convert(sql.load(self.conn).or_storage()?)
    }

    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64> {
        // A counter kept by triggers (see the migration): O(1) however many orders exist.
        let count: Option<i64> = pets::table
            .find(pet_id.get())
            .select(pets::open_orders)
            .first(self.conn)
            .optional()
            .or_storage()?;
        Ok(count.unwrap_or(0).unsigned_abs())
    }

    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        let rows = events::table
            .filter(events::id.gt(after.map_or(0, EventId::get)))
            .order(events::id.asc())
            .limit(i64::from(limit))
            .select(EventRow::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        let last: Option<i64> = events::table
            .select(diesel::dsl::max(events::id))
            .first(self.conn)
            .or_storage()?;
        last.map(EventId::new)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()).into())
    }

    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>> {
        let row = api_keys::table
            .find(id.get())
            .select(KeyRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>> {
        let rows = api_keys::table
            .filter(api_keys::id.gt(query.after.map_or(0, KeyId::get)))
            .order(api_keys::id.asc())
            .limit(probe(query.limit))
            .select(KeyRow::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>> {
        let rows = api_keys::table
            .filter(api_keys::prefix.eq(prefix))
            .select(KeyRow::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        let row = idempotency_records::table
            .find((owner.get(), key))
            .select(IdempotencyRow::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool> {
        let mut active = api_keys::table
            .filter(api_keys::revoked_at.is_null())
            .into_boxed();
        if let Some(role) = role {
            active = active.filter(api_keys::role.eq(role.as_str()));
        }
        diesel::select(diesel::dsl::exists(active))
            .get_result(self.conn)
            .or_storage()
    }

    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>> {
        self.webhook_by_id(id)
    }

    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>> {
        self.webhook_page(query)
    }

    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>> {
        self.webhook_secret_of(id)
    }

    fn webhooks_due(&mut self, now: DateTime<Utc>) -> RepoResult<Vec<Webhook>> {
        self.webhooks_due_at(now)
    }

    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>> {
        self.delivery_page(webhook, query)
    }
}

impl Transaction for SqliteTx<'_> {
    fn insert_category(&mut self, new: &NewCategory) -> RepoResult<Category> {
        let id: i64 = diesel::insert_into(categories::table)
            .values(category_values(&new.name, new.description.as_ref()))
            .returning(categories::id)
            .get_result(self.conn)
            .map_err(|e| refuse(e, |v| name_taken(v, &new.name)))?;
        Ok(Category {
            id: CategoryId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            name: new.name.clone(),
            description: new.description.clone(),
        })
    }

    fn update_category(&mut self, category: &Category) -> RepoResult<()> {
        let affected = diesel::update(categories::table.find(category.id.get()))
            .set(category_values(
                &category.name,
                category.description.as_ref(),
            ))
            .execute(self.conn)
            .map_err(|e| refuse(e, |v| name_taken(v, &category.name)))?;
        exactly_one(affected, "category", category.id.get())
    }

    fn delete_category(&mut self, id: CategoryId) -> RepoResult<()> {
        let affected = diesel::delete(categories::table.find(id.get()))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::ForeignKey).then_some(DomainError::CategoryInUse { id })
                })
            })?;
        exactly_one(affected, "category", id.get())
    }

    fn insert_pet(&mut self, new: &NewPet) -> RepoResult<Pet> {
        let id: i64 = diesel::insert_into(pets::table)
            .values(pet_values(&new.name, new.category_id, new.status))
            .returning(pets::id)
            .get_result(self.conn)
            .map_err(|e| refuse(e, |v| unknown_category(v, new.category_id)))?;
        Ok(Pet {
            id: PetId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            name: new.name.clone(),
            category_id: new.category_id,
            status: new.status,
        })
    }

    fn update_pet(&mut self, pet: &Pet) -> RepoResult<()> {
        let affected = diesel::update(pets::table.find(pet.id.get()))
            .set(pet_values(&pet.name, pet.category_id, pet.status))
            .execute(self.conn)
            .map_err(|e| refuse(e, |v| unknown_category(v, pet.category_id)))?;
        exactly_one(affected, "pet", pet.id.get())
    }

    fn delete_pet(&mut self, id: PetId) -> RepoResult<()> {
        let affected = diesel::delete(pets::table.find(id.get()))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule("pet_has_open_orders"))
                        .then_some(DomainError::PetHasOpenOrders { id })
                })
            })?;
        exactly_one(affected, "pet", id.get())
    }

    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        let affected = diesel::update(pets::table.find(pet_id.get()))
            .set(pets::stock.eq(i64::from(stock.get())))
            .execute(self.conn)
            .or_storage()?;
        exactly_one(affected, "pet", pet_id.get())
    }

    fn insert_order(&mut self, new: &NewOrder, owner: Option<OwnerId>) -> RepoResult<Order> {
        let row = NewOrderRow {
            pet_id: new.pet_id.get(),
            quantity: i64::from(new.quantity.get()),
            ship_date: new.ship_date.map(format_time),
            complete: false,
            owner_id: owner.map(OwnerId::get),
        };
        let id: i64 = diesel::insert_into(orders::table)
            .values(&row)
            .returning(orders::id)
            .get_result(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule("unknown_pet"))
                        .then_some(DomainError::UnknownPet { id: new.pet_id })
                })
            })?;
        Ok(Order {
            id: OrderId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            pet_id: new.pet_id,
            quantity: new.quantity,
            ship_date: new.ship_date,
            complete: false,
            owner,
        })
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        let affected = diesel::update(orders::table.find(order.id.get()))
            .set((
                orders::ship_date.eq(order.ship_date.map(format_time)),
                orders::complete.eq(order.complete),
            ))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule("invalid_transition")).then_some(
                        DomainError::InvalidTransition(
                            "a complete order cannot be made open again".into(),
                        ),
                    )
                })
            })?;
        exactly_one(affected, "order", order.id.get())
    }

    fn delete_order(&mut self, id: OrderId) -> RepoResult<()> {
        let affected = diesel::delete(orders::table.find(id.get()))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule("order_not_cancellable"))
                        .then_some(DomainError::OrderNotCancellable { id })
                })
            })?;
        exactly_one(affected, "order", id.get())
    }

    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey> {
        let row = NewKeyRow {
            name: new.name.as_str(),
            role: new.role.as_str(),
            prefix,
            hash,
            created_at: format_time(created_at),
        };
        let id: i64 = diesel::insert_into(api_keys::table)
            .values(&row)
            .returning(api_keys::id)
            .get_result(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Unique).then(|| {
                        DomainError::InvalidTransition("this secret is already a key".into())
                    })
                })
            })?;
        Ok(ApiKey {
            id: KeyId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            name: new.name.clone(),
            role: new.role,
            prefix: prefix.to_owned(),
            created_at,
            revoked_at: None,
        })
    }

    fn revoke_key(&mut self, id: KeyId, at: DateTime<Utc>) -> RepoResult<()> {
        let affected = diesel::update(api_keys::table.find(id.get()))
            .set(api_keys::revoked_at.eq(Some(format_time(at))))
            .execute(self.conn)
            .or_storage()?;
        exactly_one(affected, "key", id.get())
    }

    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        let headers = serde_json::to_string(&record.response.headers)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let row = NewIdempotencyRow {
            owner_id: owner.get(),
            idempotency_key: key,
            fingerprint: &record.fingerprint,
            status: i32::from(record.response.status),
            headers,
            body: &record.response.body,
            recorded_at: format_time(record.recorded_at),
        };
        diesel::insert_into(idempotency_records::table)
            .values(&row)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        diesel::delete(
            idempotency_records::table
                .filter(idempotency_records::recorded_at.lt(format_time(before))),
        )
        .execute(self.conn)
        .or_storage()?;
        Ok(())
    }

    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook> {
        self.add_webhook(new, secret, created_at, state)
    }

    fn delete_webhook(&mut self, id: WebhookId) -> RepoResult<()> {
        self.remove_webhook(id)
    }

    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()> {
        self.update_delivery_state(id, state)
    }

    fn insert_delivery_attempt(
        &mut self,
        attempt: &NewDeliveryAttempt,
    ) -> RepoResult<DeliveryAttempt> {
        self.add_delivery_attempt(attempt)
    }

    fn prune_delivery_attempts(&mut self, webhook: WebhookId, keep: u32) -> RepoResult<()> {
        self.keep_latest_attempts(webhook, keep)
    }

    fn append_events(&mut self, time: DateTime<Utc>, events: &[DomainEvent]) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let time = format_time(time);
        let rows: Vec<NewEventRow<'_>> = events
            .iter()
            .map(|event| NewEventRow {
                time: &time,
                event_type: event.event_type().as_str(),
                subject: event.subject(),
                data: event.data().to_string(),
            })
            .collect();
        diesel::insert_into(events::table)
            .values(&rows)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }
}

fn category_values<'a>(
    name: &'a Name,
    description: Option<&'a petstore_core::Description>,
) -> CategoryValues<'a> {
    CategoryValues {
        name: name.as_str(),
        name_key: fold_case(name.as_str()),
        description: description.map(petstore_core::Description::as_str),
    }
}

fn pet_values(
    name: &Name,
    category_id: CategoryId,
    status: petstore_core::PetStatus,
) -> PetValues<'_> {
    PetValues {
        name: name.as_str(),
        name_key: fold_case(name.as_str()),
        category_id: category_id.get(),
        status: status.as_str(),
    }
}

fn name_taken(violation: Violation, name: &Name) -> Option<DomainError> {
    (violation == Violation::Unique).then(|| DomainError::CategoryExists {
        name: name.as_str().to_owned(),
    })
}

fn unknown_category(violation: Violation, id: CategoryId) -> Option<DomainError> {
    (violation == Violation::ForeignKey).then_some(DomainError::UnknownCategory { id })
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_wildcards_in_a_search_are_taken_literally() {
        assert_eq!(contains_pattern("rex"), "%rex%");
        assert_eq!(contains_pattern("100%_\\"), "%100\\%\\_\\\\%");
    }
}
