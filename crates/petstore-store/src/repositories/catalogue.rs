//! Categories and pets, in the `categories` and `pets` tables.

use diesel::prelude::*;
use petstore_core::{
    CatalogueReader, CatalogueWriter, Category, CategoryId, CategoryQuery, DomainError, Name,
    NewCategory, NewPet, Pet, PetId, PetQuery, PetStatus, Price, RepoResult, fold_case,
};

use super::{Tx, row_for_no_key_update, row_for_update};
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::records::{CategoryRecord, PetRecord, PetRowRecord, PetRowValues};
use crate::schema::{categories, pets};
use crate::statements::{
    convert, convert_one, exactly_one, name_taken, probe, refuse, unknown_category,
};

impl CatalogueReader for Tx<'_> {
    fn category(&mut self, id: CategoryId) -> RepoResult<Option<Category>> {
        // A change to a category, or a pet naming it, waits for other changes to it.
        let row = row_for_no_key_update!(
            self,
            categories::table
                .find(id.get())
                .select(CategoryRecord::as_select()),
        )
        .or_storage()?;
        convert_one(row)
    }

    fn category_named(&mut self, name: &Name) -> RepoResult<Option<Category>> {
        let row = categories::table
            .filter(categories::name_key.eq(fold_case(name.as_str())))
            .select(CategoryRecord::as_select())
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn categories(&mut self, query: &CategoryQuery) -> RepoResult<Vec<Category>> {
        let rows = self
            .page(
                categories::table
                    .filter(categories::id.gt(query.after.map_or(0, CategoryId::get)))
                    .order(categories::id.asc())
                    .select(CategoryRecord::as_select()),
                probe(query.limit),
            )
            .or_storage()?;
        convert(rows)
    }

    fn category_has_pets(&mut self, id: CategoryId) -> RepoResult<bool> {
        diesel::select(diesel::dsl::exists(
            pets::table.filter(pets::category_id.eq(id.get())),
        ))
        .get_result(self.flushed())
        .or_storage()
    }

    fn pet(&mut self, id: PetId) -> RepoResult<Option<Pet>> {
        if let Some(known) = self.known().pet(id) {
            return Ok(known);
        }
        let row = convert_one::<_, PetRowValues>(
            row_for_update!(
                self,
                pets::table.find(id.get()).select(PetRowRecord::as_select())
            )
            .or_storage()?,
        )?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(self.known().keep_beside(row)))
    }

    fn pets(&mut self, query: &PetQuery) -> RepoResult<Vec<Pet>> {
        let rows = pet_rows!(self, query, PetRecord::as_select())?;
        convert(rows)
    }

    fn pet_count(&mut self, query: &PetQuery) -> RepoResult<u64> {
        let sql = matching_pets!(pets::table.into_boxed(), query);
        let count: i64 = sql
            .select(diesel::dsl::count_star())
            .get_result(self.flushed())
            .or_storage()?;
        Ok(count.unsigned_abs())
    }
}

impl CatalogueWriter for Tx<'_> {
    fn insert_category(&mut self, new: &NewCategory) -> RepoResult<Category> {
        let id: i64 = diesel::insert_into(categories::table)
            .values(category_columns(&new.name, new.description.as_ref()))
            .returning(categories::id)
            .get_result(self.flushed())
            .map_err(|e| refuse(e, |v| name_taken(v, &new.name)))?;
        Ok(Category {
            id: CategoryId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            name: new.name.clone(),
            description: new.description.clone(),
        })
    }

    fn update_category(&mut self, category: &Category) -> RepoResult<()> {
        let affected = diesel::update(categories::table.find(category.id.get()))
            .set(category_columns(
                &category.name,
                category.description.as_ref(),
            ))
            .execute(self.flushed())
            .map_err(|e| refuse(e, |v| name_taken(v, &category.name)))?;
        exactly_one(affected, "category", category.id.get())
    }

    fn delete_category(&mut self, id: CategoryId) -> RepoResult<()> {
        let affected = diesel::delete(categories::table.find(id.get()))
            .execute(self.flushed())
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::ForeignKey).then_some(DomainError::CategoryInUse { id })
                })
            })?;
        exactly_one(affected, "category", id.get())
    }

    fn insert_pet(&mut self, new: &NewPet) -> RepoResult<Pet> {
        let id: i64 = diesel::insert_into(pets::table)
            .values(pet_columns(&new.name, new.category_id, new.status))
            .returning(pets::id)
            .get_result(self.flushed())
            .map_err(|e| refuse(e, |v| unknown_category(v, new.category_id)))?;
        let id = PetId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(new.clone().into_pet(id))
    }

    fn update_pet(&mut self, pet: &Pet) -> RepoResult<()> {
        self.forget_pet_row(Some(pet.id));
        let affected = diesel::update(pets::table.find(pet.id.get()))
            .set(pet_columns(&pet.name, pet.category_id, pet.status))
            .execute(self.flushed())
            .map_err(|e| refuse(e, |v| unknown_category(v, pet.category_id)))?;
        exactly_one(affected, "pet", pet.id.get())
    }

    fn set_pet_price(&mut self, id: PetId, price: Option<Price>) -> RepoResult<()> {
        self.forget_pet_row(Some(id));
        let affected = diesel::update(pets::table.find(id.get()))
            .set((
                pets::price_amount.eq(price.map(|price| price.amount.get())),
                pets::price_currency.eq(price.map(|price| price.currency.code())),
            ))
            .execute(self.flushed())
            .or_storage()?;
        exactly_one(affected, "pet", id.get())
    }

    fn delete_pet(&mut self, id: PetId) -> RepoResult<()> {
        self.forget_pet_row(Some(id));
        let affected = diesel::delete(pets::table.find(id.get()))
            .execute(self.flushed())
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::PetHasOpenOrders))
                        .then_some(DomainError::PetHasOpenOrders { id })
                })
            })?;
        exactly_one(affected, "pet", id.get())
    }
}

/// `sql`, a boxed query of `pets`, narrowed to the pets a `PetQuery`'s filters find after
/// its `after` in its direction (its order and limit are the caller's to add).
macro_rules! matching_pets {
    ($sql:expr, $query:expr) => {{
        let query: &petstore_core::PetQuery = $query;
        let mut sql = $sql;
        if let Some(after) = query.after {
            let id = after.get();
            let key = || petstore_core::fold_case(query.after_name.as_deref().unwrap_or_default());
            // By name, the keyset (name_key, id) as `name_key >= key AND (name_key > key OR
            // id > after)`: its first half is the index's range, where a plain OR of the two
            // would make the database read every row before the page.
            sql = match (query.sort, query.newest_first) {
                (petstore_core::PetSort::Added, false) => sql.filter(pets::id.gt(id)),
                (petstore_core::PetSort::Added, true) => sql.filter(pets::id.lt(id)),
                (petstore_core::PetSort::Name, false) => {
                    let key = key();
                    sql.filter(pets::name_key.ge(key.clone()))
                        .filter(pets::name_key.gt(key).or(pets::id.gt(id)))
                }
                (petstore_core::PetSort::Name, true) => {
                    let key = key();
                    sql.filter(pets::name_key.le(key.clone()))
                        .filter(pets::name_key.lt(key).or(pets::id.lt(id)))
                }
            };
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
        if let Some(most) = query.stock_at_most {
            sql = sql.filter(pets::stock.le(i64::from(most.get())));
        }
        if let Some(needle) = &query.name_contains {
            sql = sql.filter(
                pets::name_key
                    .like($crate::statements::contains_pattern(
                        &petstore_core::fold_case(needle),
                    ))
                    .escape('\\'),
            );
        }
        sql
    }};
}
pub(super) use matching_pets;

/// The rows of the pets a `PetQuery` asks for, as the record `$columns` selects (a pet's, or
/// its inventory entry's). A macro because Diesel gives each column set its own query types:
/// written once, it serves both (its callers import `matching_pets` beside it).
macro_rules! pet_rows {
    ($tx:expr, $query:expr, $columns:expr) => {{
        let query: &petstore_core::PetQuery = $query;
        let usual = query.status.is_none()
            && query.category_id.is_none()
            && query.ids.is_empty()
            && query.name_contains.is_none()
            && query.stock_at_most.is_none()
            && query.sort == petstore_core::PetSort::Added
            && !query.newest_first;
        if usual {
            // The usual page, as a query of fixed shape: building a boxed query's SQL again
            // for every page cost more than reading its rows from SQLite (docs/performance.md).
            // Ids are positive, so the first page starts after 0.
            let after = query.after.map_or(0, petstore_core::PetId::get);
            $tx.page(
                pets::table
                    .select($columns)
                    .filter(pets::id.gt(after))
                    .order(pets::id.asc()),
                $crate::statements::probe(query.limit),
            )
            .or_storage()
        } else {
            let sql = matching_pets!(pets::table.select($columns).into_boxed(), query);
            let sql = match (query.sort, query.newest_first) {
                (petstore_core::PetSort::Added, false) => sql.order(pets::id.asc()),
                (petstore_core::PetSort::Added, true) => sql.order(pets::id.desc()),
                (petstore_core::PetSort::Name, false) => {
                    sql.order((pets::name_key.asc(), pets::id.asc()))
                }
                (petstore_core::PetSort::Name, true) => {
                    sql.order((pets::name_key.desc(), pets::id.desc()))
                }
            };
            $tx.page(sql, $crate::statements::probe(query.limit))
                .or_storage()
        }
    }};
}
pub(super) use pet_rows;

type CategoryColumns<'a> = (
    diesel::dsl::Eq<categories::name, &'a str>,
    diesel::dsl::Eq<categories::name_key, String>,
    diesel::dsl::Eq<categories::description, Option<&'a str>>,
);

fn category_columns<'a>(
    name: &'a Name,
    description: Option<&'a petstore_core::Description>,
) -> CategoryColumns<'a> {
    (
        categories::name.eq(name.as_str()),
        categories::name_key.eq(fold_case(name.as_str())),
        categories::description.eq(description.map(petstore_core::Description::as_str)),
    )
}

type PetColumns<'a> = (
    diesel::dsl::Eq<pets::name, &'a str>,
    diesel::dsl::Eq<pets::name_key, String>,
    diesel::dsl::Eq<pets::category_id, i64>,
    diesel::dsl::Eq<pets::status, &'static str>,
);

fn pet_columns(name: &Name, category_id: CategoryId, status: PetStatus) -> PetColumns<'_> {
    (
        pets::name.eq(name.as_str()),
        pets::name_key.eq(fold_case(name.as_str())),
        pets::category_id.eq(category_id.get()),
        pets::status.eq(status.as_str()),
    )
}
