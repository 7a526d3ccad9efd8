//! The node's vacuum of the feed's queue (`feed.rs`, [`queue_vacuum`]).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use super::queue_vacuum;
use crate::postgres::PgStore;
use crate::postgres::tests::{statements, store_with_pets};

#[derive(QueryableByName)]
struct Pages {
    #[diesel(sql_type = BigInt)]
    pages: i64,
}

/// The pages `pending_events` takes on disk, live rows or dead.
fn queue_pages(store: &PgStore) -> i64 {
    let mut conn = store.pool.get().unwrap();
    diesel::sql_query("SELECT pg_relation_size('pending_events') / 8192 AS pages")
        .get_result::<Pages>(&mut conn.conn)
        .unwrap()
        .pages
}

/// `count` events appended to the queue and stamped into the feed, as a busy node's orders
/// leave them: the queue empty of live rows, its dead ones still in the table.
fn append_and_stamp(store: &PgStore, count: u32) {
    let mut conn = store.pool.get().unwrap();
    conn.conn
        .batch_execute(&format!(
            "INSERT INTO pending_events (time, type, subject, data) \
             SELECT now(), 'order.placed', 'orders/' || n, jsonb_build_object('id', n) \
             FROM generate_series(1, {count}) n; \
             SELECT stamp_events();"
        ))
        .unwrap();
}

fn vacuums_sent() -> usize {
    statements::sent()
        .iter()
        .filter(|sql| sql.starts_with("VACUUM"))
        .count()
}

/// The rows a stamp deleted leave the queue's table at the vacuum that follows (the next
/// events take their place instead of growing the table), and the vacuum runs only when the
/// feed has moved since the last one.
#[test]
fn the_queue_is_vacuumed_once_the_feed_has_moved() {
    let Some((_database, store, _pets)) = store_with_pets(1) else {
        return;
    };
    let mut vacuum = queue_vacuum(&store);
    append_and_stamp(&store, 5_000);
    let first = queue_pages(&store);
    assert!(
        first > 20,
        "5,000 stamped events leave their rows: {first} pages"
    );
    append_and_stamp(&store, 5_000);
    let unvacuumed = queue_pages(&store);
    assert!(
        unvacuumed >= 2 * first - 1,
        "without a vacuum the table grows: {unvacuumed}"
    );

    statements::record();
    (vacuum.run)();
    assert_eq!(vacuums_sent(), 1);
    (vacuum.run)();
    assert_eq!(
        vacuums_sent(),
        0,
        "the feed has not moved: nothing to vacuum"
    );

    append_and_stamp(&store, 5_000);
    let vacuumed = queue_pages(&store);
    assert!(
        vacuumed <= unvacuumed + 1,
        "the next events take the dead rows' place: {vacuumed} pages, against {unvacuumed}"
    );
    (vacuum.run)();
    assert_eq!(vacuums_sent(), 1, "the feed moved: vacuumed again");
}
