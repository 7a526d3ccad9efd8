//! Categories and pets, in the `categories` and `pets` tables.

use diesel::prelude::*;
use petstore_core::{
    CatalogueReader, CatalogueWriter, Category, CategoryId, CategoryQuery, DomainError, Name,
    NewCategory, NewPet, Pet, PetId, PetQuery, PetStatus, RepoResult, fold_case,
};

use super::PgTx;
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::postgres::schema::{categories, pets};
use crate::records::{CategoryRecord, PetRecord};
use crate::statements::{
    contains_pattern, convert, convert_one, exactly_one, name_taken, probe, refuse,
    unknown_category,
};

impl CatalogueReader for PgTx<'_> {
    fn category(&mut self, id: CategoryId) -> RepoResult<Option<Category>> {
        let query = categories::table
            .find(id.get())
            .select(CategoryRecord::as_select());
        // A change to a category, or a pet naming it, waits for other changes to it.
        let row = if self.writing {
            query.for_no_key_update().first(self.conn).optional()
        } else {
            query.first(self.conn).optional()
        };
        convert_one(row.or_storage()?)
    }

    fn category_named(&mut self, name: &Name) -> RepoResult<Option<Category>> {
        let row = categories::table
            .filter(categories::name_key.eq(fold_case(name.as_str())))
            .select(CategoryRecord::as_select())
            .first(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn categories(&mut self, query: &CategoryQuery) -> RepoResult<Vec<Category>> {
        let rows = categories::table
            .filter(categories::id.gt(query.after.map_or(0, CategoryId::get)))
            .order(categories::id.asc())
            .limit(probe(query.limit))
            .select(CategoryRecord::as_select())
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
        let row = self.pet_row(id)?;
        Ok(row.map(PetRecord::into_pet).transpose()?)
    }

    fn pets(&mut self, query: &PetQuery) -> RepoResult<Vec<Pet>> {
        let rows = self.pet_rows(query)?;
        Ok(rows
            .into_iter()
            .map(PetRecord::into_pet)
            .collect::<Result<_, _>>()?)
    }
}

impl CatalogueWriter for PgTx<'_> {
    fn insert_category(&mut self, new: &NewCategory) -> RepoResult<Category> {
        let id: i64 = diesel::insert_into(categories::table)
            .values((
                categories::name.eq(new.name.as_str()),
                categories::name_key.eq(fold_case(new.name.as_str())),
                categories::description.eq(new.description.as_ref().map(|d| d.as_str())),
            ))
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
            .set((
                categories::name.eq(category.name.as_str()),
                categories::name_key.eq(fold_case(category.name.as_str())),
                categories::description.eq(category.description.as_ref().map(|d| d.as_str())),
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
            .values(pet_columns(&new.name, new.category_id, new.status))
            .returning(pets::id)
            .get_result(self.conn)
            .map_err(|e| refuse(e, |v| unknown_category(v, new.category_id)))?;
        let id = PetId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(new.clone().into_pet(id))
    }

    fn update_pet(&mut self, pet: &Pet) -> RepoResult<()> {
        let affected = diesel::update(pets::table.find(pet.id.get()))
            .set(pet_columns(&pet.name, pet.category_id, pet.status))
            .execute(self.conn)
            .map_err(|e| refuse(e, |v| unknown_category(v, pet.category_id)))?;
        exactly_one(affected, "pet", pet.id.get())
    }

    fn delete_pet(&mut self, id: PetId) -> RepoResult<()> {
        let affected = diesel::delete(pets::table.find(id.get()))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::PetHasOpenOrders))
                        .then_some(DomainError::PetHasOpenOrders { id })
                })
            })?;
        exactly_one(affected, "pet", id.get())
    }
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

impl PgTx<'_> {
    /// The pet's row. In a write transaction it is locked until the transaction ends: its
    /// status, stock and open orders are what the stock rules decide on, so two orders for the
    /// same pet take turns, and neither sells a unit the other took.
    pub(super) fn pet_row(&mut self, id: PetId) -> RepoResult<Option<PetRecord>> {
        let query = pets::table.find(id.get()).select(PetRecord::as_select());
        let row = if self.writing {
            query.for_update().first(self.conn).optional()
        } else {
            query.first(self.conn).optional()
        };
        row.or_storage()
    }

    pub(super) fn pet_rows(&mut self, query: &PetQuery) -> RepoResult<Vec<PetRecord>> {
        let mut sql = pets::table
            .select(PetRecord::as_select())
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
