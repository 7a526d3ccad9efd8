//! The statements written out by hand (`prepared.rs`), as the server plans them.

use diesel::prelude::*;

use super::ChangePets;
use crate::postgres::tests::store_with_pets;

/// The statement that changes a burst's pets finds them by primary key, on a shop small
/// enough that the planner preferred reading the whole table: its plan is prepared once
/// (`plan_cache_mode` forces the plan the server keeps after five runs), for any number of
/// pets.
#[test]
fn the_pets_a_burst_changes_are_found_by_their_key() {
    let Some((_database, store, _)) = store_with_pets(1) else {
        return;
    };
    let mut conn = store.pool.get().unwrap();
    let pet_ids: Vec<i64> = (1..=17).collect();
    let change = ChangePets {
        stocks: vec![None; pet_ids.len()],
        orders: vec![1; pet_ids.len()],
        units: vec![1; pet_ids.len()],
        pet_ids,
    };
    let rendered = diesel::debug_query::<diesel::pg::Pg, _>(&change).to_string();
    let (sql, _) = rendered.split_once(" -- binds:").unwrap();
    let parameters = sql.matches('$').count();
    let types = vec!["bigint[]"; parameters].join(", ");
    let arrays =
        vec!["'{1,2,3,5,8,13,21,34,55,89,144,233,377,610,987,4,6}'"; parameters].join(", ");
    let conn = &mut conn.conn;
    diesel::connection::SimpleConnection::batch_execute(
        conn,
        &format!(
            "INSERT INTO pets (name, name_key, category_id, status) \
             SELECT 'Pet ' || n, 'pet ' || n, category_id, status \
             FROM pets, generate_series(2, 1000) AS n; \
             ANALYZE pets; \
             SET plan_cache_mode = force_generic_plan; \
             PREPARE change ({types}) AS {sql}"
        ),
    )
    .unwrap();
    let lines = diesel::sql_query(format!("EXPLAIN EXECUTE change ({arrays})"))
        .load::<PlanLine>(conn)
        .unwrap();
    let plan: Vec<String> = lines.into_iter().map(|line| line.plan).collect();
    assert!(
        plan.iter().any(|line| line.contains("pets_pkey")),
        "{plan:#?}"
    );
    assert!(
        !plan.iter().any(|line| line.contains("Seq Scan on pets")),
        "{plan:#?}"
    );
}

#[derive(QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = diesel::sql_types::Text, column_name = "QUERY PLAN")]
    plan: String,
}
