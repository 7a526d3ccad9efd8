//! An order's statements, as the service sends them, from one client process over
//! `CONNECTIONS` connections for `SECONDS`, four ways:
//!
//! - `threads`: Diesel's `PgConnection` (libpq), a thread per connection, six round trips an
//!   order: what `PgStore` does today;
//! - `wrapped-threads`: the same six round trips through `diesel-async`'s
//!   `AsyncConnectionWrapper` (`tokio-postgres` under Diesel's synchronous `Connection`, each
//!   statement waited for on the connection's own runtime): what changing only the client
//!   under the synchronous store would do;
//! - `pipelined-threads`: `diesel-async`'s `AsyncPgConnection`, still a thread per connection
//!   (each waits on its own runtime), the statements whose answers are not waited for sent
//!   with the next: three round trips;
//! - `tasks`: the same three round trips, every connection a task on one thread, as store
//!   traits that are `async` would run on the service's workers.
//!
//! Prints one line: the mode, orders per second and this process's CPU time per order.
//! Orders go to pets drawn at random from 1..=PETS of a database the service seeded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text};
use diesel::{Connection, PgConnection, QueryResult};
use diesel_async::{AsyncConnection, AsyncPgConnection};

/// A statement of fixed text between its binds, prepared once per connection (a static query
/// id): `parts` surround the fields' binds in order.
macro_rules! statement {
    ($name:ident { $($field:ident: $ty:ty => $sql_type:ty),* } $parts:expr $(, returns $out:ty)?) => {
        #[derive(QueryId)]
        struct $name { $($field: $ty),* }

        impl QueryFragment<Pg> for $name {
            fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
                let mut parts = $parts.iter();
                out.push_sql(parts.next().copied().unwrap_or_default());
                $(
                    out.push_bind_param::<$sql_type, _>(&self.$field)?;
                    out.push_sql(parts.next().copied().unwrap_or_default());
                )*
                Ok(())
            }
        }

        impl<C> diesel::RunQueryDsl<C> for $name {}
        $(impl Query for $name { type SqlType = $out; })?
    };
}

statement!(Begin {}["BEGIN ISOLATION LEVEL READ COMMITTED"]);
statement!(Commit {}["COMMIT"]);
statement!(
    LockPet { pet: i64 => BigInt }
    [
        r#"SELECT "pets"."id", "pets"."name", "pets"."category_id", "pets"."status", "pets"."stock", "pets"."open_orders" FROM "pets" WHERE ("pets"."id" = "#,
        ") FOR UPDATE",
    ],
    returns (BigInt, Text, BigInt, Text, BigInt, BigInt)
);
statement!(
    InsertOrder { pet: i64 => BigInt, quantity: i64 => BigInt, owner: i64 => BigInt }
    [
        r#"INSERT INTO "orders" ("pet_id", "quantity", "ship_date", "complete", "owner_id") VALUES ("#,
        ", ",
        ", NULL, false, ",
        r#") RETURNING "orders"."id""#,
    ],
    returns BigInt
);
statement!(
    SetStock { stock: i64 => BigInt, pet: i64 => BigInt }
    ["UPDATE pets SET stock = ", " WHERE id = ", ""]
);
statement!(
    AppendEvents {
        traceparent: Option<String> => Nullable<Text>,
        types: Vec<String> => Array<Text>,
        subjects: Vec<String> => Array<Text>,
        data: Vec<serde_json::Value> => Array<Jsonb>
    }
    [
        "INSERT INTO pending_events (time, type, subject, data, traceparent) SELECT now(), e.type, e.subject, e.data, ",
        " FROM unnest(",
        ", ",
        ", ",
        ") WITH ORDINALITY AS e(type, subject, data, place) ORDER BY e.place \
         RETURNING pg_current_xact_id()::text::bigint",
    ],
    returns BigInt
);

type PetRow = (i64, String, i64, String, i64, i64);

/// The two events an order records, as the service words them.
fn events(order: i64, pet: i64, stock: i64) -> AppendEvents {
    AppendEvents {
        traceparent: None,
        types: vec!["order.placed".into(), "inventory.updated".into()],
        subjects: vec![format!("store/orders/{order}"), format!("inventory/{pet}")],
        data: vec![
            serde_json::json!({"id": order, "petId": pet, "complete": false, "quantity": 1}),
            serde_json::json!({"petId": pet, "status": "available", "quantity": stock}),
        ],
    }
}

/// `diesel-async`'s connection behind Diesel's synchronous `Connection`.
type Wrapped = diesel_async::async_connection_wrapper::AsyncConnectionWrapper<AsyncPgConnection>;

/// Six round trips, each waited for.
fn order_one_by_one<C: diesel::connection::LoadConnection<Backend = Pg>>(
    conn: &mut C,
    pet: i64,
) -> QueryResult<()> {
    use diesel::RunQueryDsl;
    Begin {}.execute(conn)?;
    let row: PetRow = LockPet { pet }.get_result(conn)?;
    let order: i64 = InsertOrder {
        pet,
        quantity: 1,
        owner: 1,
    }
    .get_result(conn)?;
    let left = row.4 - 1;
    SetStock { stock: left, pet }.execute(conn)?;
    let _xid: Vec<i64> = events(order, pet, left).get_results(conn)?;
    Commit {}.execute(conn)?;
    Ok(())
}

/// Three round trips: `BEGIN` with the pet's row, the order, then the stock, the events and
/// `COMMIT` (issued together, `tokio-postgres` sends them together).
async fn order_pipelined(conn: &AsyncPgConnection, pet: i64) -> QueryResult<()> {
    use diesel_async::RunQueryDsl;
    let (_, row): (usize, PetRow) = futures_util::try_join!(
        Begin {}.execute(&mut &*conn),
        LockPet { pet }.get_result(&mut &*conn),
    )?;
    let order: i64 = InsertOrder {
        pet,
        quantity: 1,
        owner: 1,
    }
    .get_result(&mut &*conn)
    .await?;
    let left = row.4 - 1;
    futures_util::try_join!(
        SetStock { stock: left, pet }.execute(&mut &*conn),
        events(order, pet, left).get_results::<i64>(&mut &*conn),
        Commit {}.execute(&mut &*conn),
    )?;
    Ok(())
}

/// A pet drawn at random (xorshift; each connection its own sequence).
struct Pets {
    state: u64,
    count: u64,
}

impl Pets {
    fn next(&mut self) -> i64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        i64::try_from(self.state % self.count + 1).unwrap_or(1)
    }
}

/// What every connection shares: when to stop, and the tally.
struct Run {
    stop: AtomicBool,
    orders: AtomicU64,
    failed: AtomicU64,
    pets: u64,
}

impl Run {
    fn pets(&self, n: usize) -> Pets {
        Pets {
            state: 0x9e37_79b9_7f4a_7c15 ^ ((n as u64 + 1) * 0x0123_4567),
            count: self.pets,
        }
    }

    fn tally(&self, placed: QueryResult<()>) -> bool {
        match placed {
            Ok(()) => self.orders.fetch_add(1, Ordering::Relaxed),
            Err(error) => {
                eprintln!("an order failed: {error}");
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
        !self.stop.load(Ordering::Relaxed)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// This process's CPU time so far (user and system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .expect("a stat line")
        .1
        .split(' ')
        .collect();
    let ticks = |i: usize| fields[i].parse::<f64>().expect("a number of ticks");
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, url, connections, seconds, pets] = &args[..] else {
        eprintln!(
            "usage: pg-client-bench threads|wrapped-threads|pipelined-threads|tasks URL CONNECTIONS SECONDS PETS"
        );
        std::process::exit(2);
    };
    let connections: usize = connections.parse().expect("CONNECTIONS");
    let seconds: u64 = seconds.parse().expect("SECONDS");
    let run = Arc::new(Run {
        stop: AtomicBool::new(false),
        orders: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        pets: pets.parse().expect("PETS"),
    });
    let threads = if mode == "tasks" { 1 } else { connections };
    // Every connection is open before the clock starts.
    let ready = Arc::new(Barrier::new(threads + 1));
    let mut handles = Vec::new();
    for n in 0..threads {
        let (mode, url, run, ready) = (
            mode.clone(),
            url.clone(),
            Arc::clone(&run),
            Arc::clone(&ready),
        );
        handles.push(std::thread::spawn(move || match mode.as_str() {
            "threads" => {
                let mut conn = PgConnection::establish(&url).expect("a connection");
                let mut pets = run.pets(n);
                ready.wait();
                while run.tally(order_one_by_one(&mut conn, pets.next())) {}
            }
            "wrapped-threads" => {
                let mut conn = <Wrapped as Connection>::establish(&url).expect("a connection");
                let mut pets = run.pets(n);
                ready.wait();
                while run.tally(order_one_by_one(&mut conn, pets.next())) {}
            }
            "pipelined-threads" => runtime().block_on(async {
                let conn = AsyncPgConnection::establish(&url)
                    .await
                    .expect("a connection");
                let mut pets = run.pets(n);
                ready.wait();
                while run.tally(order_pipelined(&conn, pets.next()).await) {}
            }),
            "tasks" => runtime().block_on(async {
                let mut tasks = Vec::new();
                for n in 0..connections {
                    let conn = AsyncPgConnection::establish(&url)
                        .await
                        .expect("a connection");
                    let run = Arc::clone(&run);
                    tasks.push(async move {
                        let mut pets = run.pets(n);
                        while run.tally(order_pipelined(&conn, pets.next()).await) {}
                    });
                }
                ready.wait();
                futures_util::future::join_all(tasks).await;
            }),
            other => panic!("unknown mode {other}"),
        }));
    }
    ready.wait();
    let (cpu_before, started) = (cpu_seconds(), Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    let orders = run.orders.load(Ordering::Relaxed);
    let (cpu_after, elapsed) = (cpu_seconds(), started.elapsed().as_secs_f64());
    run.stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.join().expect("a client thread");
    }
    println!(
        "RESULT {mode} {:.1} {:.1} {}",
        orders as f64 / elapsed,
        (cpu_after - cpu_before) * 1e6 / orders.max(1) as f64,
        run.failed.load(Ordering::Relaxed)
    );
}
