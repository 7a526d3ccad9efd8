//! A bad day for the disk, on the real binary: the disk fills up, the database file is
//! read-only. Writes answer 503 with `Retry-After` and `/readyz` turns 503 while the database
//! cannot take writes; both recover once the operator has acted (for a read-only file, and a
//! restart), and nothing acknowledged is lost. Nor is anything acknowledged lost when the
//! process is killed in the middle of writes.
//!
//! The disk tests need root (to mount a small disk, and to run the service as another user so
//! that file permissions apply); without it they say they were skipped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use binary::{Server, petstore_as_nobody, send_to, serve_command, serve_with};
use serde_json::Value;

const KEY: &str = "storage-admin-0123456789abcdef0123456789";

fn status(reply: &str) -> u16 {
    reply
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

fn is_root() -> bool {
    let uid = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        return true;
    }
    eprintln!("skipped: needs root (to mount a small disk and to change users)");
    false
}

/// A tmpfs of a few MiB, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes to `path` until the disk refuses.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0xA5_u8; 64 * 1024];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
}

fn ready(server: &Server) -> u16 {
    status(&server.get("/readyz", KEY))
}

/// Polls `/readyz` until it answers `want` (it probes with a write, so the first answer after
/// the operator's fix is already the new one; the loop only absorbs scheduling).
fn await_ready(server: &Server, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ready(server) != want {
        if Instant::now() > deadline {
            let logs: Vec<String> = server.stderr.try_iter().collect();
            panic!("/readyz never answered {want}: {logs:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_unavailable(reply: &str) {
    assert_eq!(status(reply), 503, "{reply}");
    assert!(reply.contains(r#""code":"unavailable""#), "{reply}");
    assert!(
        reply.to_ascii_lowercase().contains("retry-after:"),
        "{reply}"
    );
}

fn category_count(server: &Server) -> usize {
    let reply = server.get("/v1/categories?limit=100", KEY);
    assert_eq!(status(&reply), 200, "{reply}");
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str::<serde_json::Value>(body)
        .unwrap()
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn a_full_disk_refuses_writes_with_503_until_space_returns() {
    if !is_root() {
        return;
    }
    let Some(disk) = SmallDisk::mount("4m") else {
        return;
    };
    let server = serve_with(disk.path().join("petstore.db"), Some(KEY), &[]);
    server.create_category(KEY, "Before");
    assert_eq!(ready(&server), 200);

    let filler = disk.path().join("filler");
    fill(&filler);
    assert_eq!(ready(&server), 503, "not ready on a full disk");
    let mut acknowledged = 1;
    let refused = (0..2000)
        .map(|i| {
            server.post(
                "/v1/categories",
                KEY,
                &format!(
                    r#"{{"name": "Full {i}", "description": "{}"}}"#,
                    "x".repeat(400)
                ),
            )
        })
        .find(|reply| {
            let created = status(reply) == 201;
            acknowledged += usize::from(created);
            !created
        })
        .expect("a write fails once the disk is full");
    assert_unavailable(&refused);
    if ready(&server) != 503 {
        let logs: Vec<String> = server.stderr.try_iter().collect();
        panic!("not ready while writes fail: {logs:#?}");
    }
    assert_eq!(category_count(&server), acknowledged, "reads still answer");

    std::fs::remove_file(&filler).unwrap();
    await_ready(&server, 200);
    server.create_category(KEY, "After");
    assert_eq!(category_count(&server), acknowledged + 1);
}

#[test]
fn a_read_only_database_file_refuses_writes_with_503_until_it_is_writable() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    let database = dir.path().join("petstore.db");
    let server = serve_command(petstore_as_nobody(&database), Some(KEY), &[]);
    server.create_category(KEY, "Before");
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0), "{logs:?}");

    set_mode(&database, 0o444);
    let server = serve_command(petstore_as_nobody(&database), Some(KEY), &[]);
    assert_eq!(ready(&server), 503, "not ready on a file it cannot write");
    assert_unavailable(&server.post("/v1/categories", KEY, r#"{"name": "During"}"#));
    assert_eq!(category_count(&server), 1, "reads still answer");

    // As an operator would: the write-ahead log and its index were made with the file's mode.
    for file in std::fs::read_dir(dir.path()).unwrap() {
        set_mode(&file.unwrap().path(), 0o644);
    }
    // SQLite shares one read-only view of the log index among a process's connections:
    // the fix takes a restart (docs/operations.md).
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0), "{logs:?}");
    let server = serve_command(petstore_as_nobody(&database), Some(KEY), &[]);
    assert_eq!(ready(&server), 200);
    server.create_category(KEY, "After");
    assert_eq!(category_count(&server), 2);
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Kills in [`killing_the_service_under_write_load_loses_no_acknowledged_write`].
const ROUNDS: u32 = 10;
/// Clients writing at once, so that the kill lands in the middle of shared commits.
const CLIENTS: usize = 8;
/// Each ordered pet's stock before its first order.
const UNITS: i64 = 1_000_000;
/// The load is the point here, not the per-key rate limit (tests/http/auth.rs tests that).
const UNLIMITED: &[&str] = &["--rate-limit", "1000000"];

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A request that must be answered: its status and JSON body.
fn call(address: &str, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let (status, body) =
        send_to(address, method, path, KEY, &[], body).expect("the service answers");
    let value = if body.is_empty() {
        Value::Null
    } else {
        json(&body)
    };
    (status, value)
}

/// Every item of a list, page after page.
fn all_items(address: &str, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = call(address, "GET", &format!("{path}?limit=100{cursor}"), None);
        assert_eq!(status, 200, "{page}");
        let page = page.as_array().unwrap();
        items.extend(page.iter().cloned());
        match page.last() {
            Some(last) if page.len() == 100 => {
                cursor = format!("&cursor=k{:x}", last["id"].as_i64().unwrap());
            }
            _ => return items,
        }
    }
}

fn stock_of(address: &str, pet: i64) -> i64 {
    let (status, item) = call(address, "GET", &format!("/v1/inventory/{pet}"), None);
    assert_eq!(status, 200, "{item}");
    item["quantity"].as_i64().unwrap()
}

/// A pseudo-random while, different each round, without a random-number crate.
fn jitter(round: u32) -> Duration {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Duration::from_millis(u64::from((nanos / 7 + round * 97) % 500 + 300))
}

/// One write of the load.
enum Change {
    Order { pet: i64, quantity: i64 },
    Pet { name: String },
    Stock { quantity: i64 },
}

/// What one client was told in one round, and what it sent without being told.
#[derive(Default)]
struct Told {
    /// Id, pet, quantity.
    orders: Vec<(i64, i64, i64)>,
    /// Id, name.
    pets: Vec<(i64, String)>,
    /// The stock its own pet was last acknowledged to have.
    stock: Option<i64>,
    stock_acknowledged: usize,
    /// The stocks it sent after that one without an acknowledgement.
    stock_unknown: Vec<i64>,
    orders_unknown: usize,
    pets_unknown: usize,
    /// Writes answered 503: the service may shed load, and says so; not acknowledged.
    shed: usize,
}

impl Told {
    fn acknowledged(&self) -> usize {
        self.orders.len() + self.pets.len() + self.stock_acknowledged
    }
}

/// One client of the load: writes one at a time until `writing` is cleared, mostly orders
/// (as a shop's writes are) with a new pet and a stock change for its own pet among every
/// eight.
fn write_until_stopped(
    address: &str,
    client: usize,
    round: u32,
    ledger: &Ledger,
    writing: &AtomicBool,
) -> Told {
    let mut told = Told::default();
    let stock_pet = ledger.stock_pets[client].id;
    for n in 0_usize.. {
        if !writing.load(Ordering::Relaxed) {
            break;
        }
        let write = match n % 8 {
            3 => Change::Pet {
                name: format!("Load {round}-{client}-{n}"),
            },
            // Never the same stock twice for a pet, so that the stock after a restart tells
            // which write it came from.
            6 => Change::Stock {
                quantity: i64::from(round) * 50_000 + i64::try_from(n).unwrap() + 1,
            },
            _ => Change::Order {
                pet: ledger.order_pets[(client + n) % ledger.order_pets.len()],
                quantity: 1 + i64::try_from(n % 3).unwrap(),
            },
        };
        let (method, path, body) = match &write {
            Change::Order { pet, quantity } => (
                "POST",
                "/v1/store/orders".to_owned(),
                format!(r#"{{"petId": {pet}, "quantity": {quantity}}}"#),
            ),
            Change::Pet { name } => (
                "POST",
                "/v1/pets".to_owned(),
                format!(r#"{{"name": "{name}", "categoryId": {}}}"#, ledger.category),
            ),
            Change::Stock { quantity } => (
                "PATCH",
                format!("/v1/inventory/{stock_pet}"),
                format!(r#"{{"quantity": {quantity}}}"#),
            ),
        };
        // Acknowledged means a whole 2xx answer: a body cut short by the kill does not parse.
        let answer = match send_to(address, method, &path, KEY, &[], Some(&body)) {
            Some((200..=299, body)) => serde_json::from_str::<Value>(&body).ok(),
            Some((503, _)) => {
                told.shed += 1;
                None
            }
            Some((status, answer)) => panic!("{method} {path} {body}: {status} {answer}"),
            None => {
                // The process is gone; the next connection is refused at once.
                std::thread::sleep(Duration::from_millis(10));
                None
            }
        };
        match (write, answer) {
            (Change::Order { pet, quantity }, Some(order)) => {
                assert_eq!(order["petId"], pet, "{order}");
                assert_eq!(order["quantity"], quantity, "{order}");
                told.orders
                    .push((order["id"].as_i64().unwrap(), pet, quantity));
            }
            (Change::Order { .. }, None) => told.orders_unknown += 1,
            (Change::Pet { name }, Some(pet)) => {
                assert_eq!(pet["name"], name.as_str(), "{pet}");
                told.pets.push((pet["id"].as_i64().unwrap(), name));
            }
            (Change::Pet { .. }, None) => told.pets_unknown += 1,
            (Change::Stock { quantity }, Some(item)) => {
                assert_eq!(item["quantity"], quantity, "{item}");
                told.stock = Some(quantity);
                told.stock_acknowledged += 1;
                told.stock_unknown.clear();
            }
            (Change::Stock { quantity }, None) => told.stock_unknown.push(quantity),
        }
    }
    told
}

/// A pet whose stock only one client sets.
struct StockPet {
    id: i64,
    /// What it must be, unless one of `unknown` committed.
    stock: i64,
    /// Stocks sent after `stock` without an acknowledgement: each may have committed.
    unknown: Vec<i64>,
}

/// What the service must have after a restart.
struct Ledger {
    category: i64,
    /// The pets orders are for, each stocked with [`UNITS`] once.
    order_pets: Vec<i64>,
    /// One per client.
    stock_pets: Vec<StockPet>,
    /// Every order acknowledged, or found after a restart (a kill cannot undo a commit): its
    /// pet and quantity, by id.
    orders: BTreeMap<i64, (i64, i64)>,
    /// Every pet acknowledged or found, likewise: its name, by id.
    pets: BTreeMap<i64, String>,
    /// Orders and pets sent since the last restart without an acknowledgement: each may or
    /// may not be there.
    orders_unknown: usize,
    pets_unknown: usize,
}

impl Ledger {
    fn set_up(address: &str) -> Self {
        let (status, category) = call(
            address,
            "POST",
            "/v1/categories",
            Some(r#"{"name": "Load"}"#),
        );
        assert_eq!(status, 201, "{category}");
        let mut ledger = Self {
            category: category["id"].as_i64().unwrap(),
            order_pets: Vec::new(),
            stock_pets: Vec::new(),
            orders: BTreeMap::new(),
            pets: BTreeMap::new(),
            orders_unknown: 0,
            pets_unknown: 0,
        };
        for n in 0..4 {
            let pet = ledger.new_pet(address, &format!("Ordered {n}"), UNITS);
            ledger.order_pets.push(pet);
        }
        for n in 0..CLIENTS {
            let id = ledger.new_pet(address, &format!("Restocked {n}"), 0);
            ledger.stock_pets.push(StockPet {
                id,
                stock: 0,
                unknown: Vec::new(),
            });
        }
        ledger
    }

    fn new_pet(&mut self, address: &str, name: &str, stock: i64) -> i64 {
        let (status, pet) = call(
            address,
            "POST",
            "/v1/pets",
            Some(&format!(
                r#"{{"name": "{name}", "categoryId": {}}}"#,
                self.category
            )),
        );
        assert_eq!(status, 201, "{pet}");
        let id = pet["id"].as_i64().unwrap();
        self.pets.insert(id, name.to_owned());
        let (status, item) = call(
            address,
            "PATCH",
            &format!("/v1/inventory/{id}"),
            Some(&format!(r#"{{"quantity": {stock}}}"#)),
        );
        assert_eq!(status, 200, "{item}");
        id
    }

    fn record(&mut self, client: usize, told: Told) {
        for (id, pet, quantity) in told.orders {
            let earlier = self.orders.insert(id, (pet, quantity));
            assert_eq!(earlier, None, "order id {id} given twice");
        }
        for (id, name) in told.pets {
            let earlier = self.pets.insert(id, name);
            assert_eq!(earlier, None, "pet id {id} given twice");
        }
        let pet = &mut self.stock_pets[client];
        if let Some(stock) = told.stock {
            pet.stock = stock;
        }
        pet.unknown = told.stock_unknown;
        self.orders_unknown += told.orders_unknown;
        self.pets_unknown += told.pets_unknown;
    }

    /// Checks the restarted service against the ledger, then adds what it found committed
    /// without an acknowledgement, which is there for good.
    fn check(&mut self, server: &Server, kill: u32) {
        let address = server.address.as_str();
        // `/readyz` probes the database with a write.
        let (status, ready) = call(address, "GET", "/readyz", None);
        assert_eq!(status, 200, "after kill {kill}: {ready}");
        // A clean start: no warning, no error, no line that is not a log event (a panic).
        let complaints: Vec<String> = server
            .stderr
            .try_iter()
            .filter(|line| !serde_json::from_str::<Value>(line).is_ok_and(|e| e["level"] == "INFO"))
            .collect();
        assert!(complaints.is_empty(), "after kill {kill}: {complaints:#?}");

        let mut found = BTreeMap::new();
        for order in all_items(address, "/v1/store/orders") {
            let id = order["id"].as_i64().unwrap();
            let pet = order["petId"].as_i64().unwrap();
            found.insert(id, (pet, order["quantity"].as_i64().unwrap()));
        }
        for (id, order) in &self.orders {
            assert_eq!(found.get(id), Some(order), "after kill {kill}: order {id}");
        }
        let unacknowledged = found.len() - self.orders.len();
        assert!(
            unacknowledged <= self.orders_unknown,
            "after kill {kill}: {unacknowledged} orders more than acknowledged, from {} sent unanswered",
            self.orders_unknown
        );
        self.orders = found;
        // One by one too, as a client reads its order back; from a few threads, as there are
        // thousands.
        let orders: Vec<_> = self.orders.iter().collect();
        std::thread::scope(|scope| {
            for chunk in orders.chunks(orders.len().div_ceil(4).max(1)) {
                scope.spawn(move || {
                    for (id, (pet, quantity)) in chunk {
                        let path = format!("/v1/store/orders/{id}");
                        let (status, order) = call(address, "GET", &path, None);
                        assert_eq!(status, 200, "after kill {kill}: order {id}: {order}");
                        assert_eq!(order["petId"], *pet, "after kill {kill}: {order}");
                        assert_eq!(order["quantity"], *quantity, "after kill {kill}: {order}");
                    }
                });
            }
        });
        // Every unit is in stock or in an order that is there: neither half of an order was
        // lost without the other.
        for &pet in &self.order_pets {
            let ordered: i64 = self
                .orders
                .values()
                .filter(|(of, _)| *of == pet)
                .map(|(_, quantity)| quantity)
                .sum();
            let stock = stock_of(address, pet);
            assert_eq!(stock + ordered, UNITS, "after kill {kill}: pet {pet}");
        }

        let mut found = BTreeMap::new();
        for pet in all_items(address, "/v1/pets") {
            let name = pet["name"].as_str().unwrap().to_owned();
            found.insert(pet["id"].as_i64().unwrap(), name);
        }
        for (id, name) in &self.pets {
            assert_eq!(found.get(id), Some(name), "after kill {kill}: pet {id}");
        }
        let unacknowledged = found.len() - self.pets.len();
        assert!(
            unacknowledged <= self.pets_unknown,
            "after kill {kill}: {unacknowledged} pets more than acknowledged, from {} sent unanswered",
            self.pets_unknown
        );
        self.pets = found;

        for pet in &mut self.stock_pets {
            let stock = stock_of(address, pet.id);
            assert!(
                stock == pet.stock || pet.unknown.contains(&stock),
                "after kill {kill}: pet {} has {stock} in stock; acknowledged {}, then sent {:?} unanswered",
                pet.id,
                pet.stock,
                pet.unknown
            );
            pet.stock = stock;
            pet.unknown.clear();
        }
        self.orders_unknown = 0;
        self.pets_unknown = 0;
    }
}

#[test]
fn killing_the_service_under_write_load_loses_no_acknowledged_write() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("petstore.db");
    let mut server = serve_with(&database, Some(KEY), UNLIMITED);
    let mut ledger = Ledger::set_up(&server.address);
    let mut acknowledged = Vec::new();
    let mut shed = 0;
    for round in 1..=ROUNDS {
        let address = server.address.clone();
        let writing = AtomicBool::new(true);
        let told: Vec<Told> = std::thread::scope(|scope| {
            let clients: Vec<_> = (0..CLIENTS)
                .map(|client| {
                    let (address, ledger, writing) = (&address, &ledger, &writing);
                    scope
                        .spawn(move || write_until_stopped(address, client, round, ledger, writing))
                })
                .collect();
            std::thread::sleep(jitter(round));
            // SIGKILL: no drain, no rollback, the writes in flight cut wherever they are.
            server.kill();
            writing.store(false, Ordering::Relaxed);
            clients.into_iter().map(|c| c.join().unwrap()).collect()
        });
        acknowledged.push(told.iter().map(Told::acknowledged).sum::<usize>());
        shed += told.iter().map(|t| t.shed).sum::<usize>();
        for (client, told) in told.into_iter().enumerate() {
            ledger.record(client, told);
        }
        server = serve_with(&database, Some(KEY), UNLIMITED);
        ledger.check(&server, round);
    }
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0), "{logs:#?}");

    // Every round had writes acknowledged before its kill, and enough of them in all that
    // "none lost" means something.
    assert!(
        acknowledged.iter().all(|n| *n > 0),
        "acknowledged per round: {acknowledged:?}"
    );
    let total: usize = acknowledged.iter().sum();
    assert!(total > 100, "acknowledged per round: {acknowledged:?}");
    eprintln!(
        "{ROUNDS} kills, {total} writes acknowledged ({acknowledged:?} per round), none lost; \
         {} orders, {} pets at the end, {shed} writes shed; {:?}",
        ledger.orders.len(),
        ledger.pets.len(),
        started.elapsed()
    );
}

/// Builds `fixtures/fail_sync.c` into `dir`: a library that fails `fsync` on demand.
fn fail_sync_library(dir: &Path) -> std::path::PathBuf {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fail_sync.c");
    let library = dir.join("fail_sync.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(source)
        .arg("-ldl")
        .status()
        .expect("a C compiler (`cc`), as the bundled SQLite needs");
    assert!(built.success(), "cc failed on {source}");
    library
}

/// The body of an answer, and its `code` if it is an error.
fn code_of(body: &Value) -> &str {
    body["code"].as_str().unwrap_or_default()
}

/// A commit whose `fsync` fails may still take effect: SQLite has written its frames to the
/// log file, and the next process to open the file replays them. The service must not answer
/// such a write as failed (a client would place the order again): it answers
/// `outcome_unknown`, takes no write until it restarts (a later commit of the same process
/// would write over those frames, deciding the outcome behind the client's back), and is not
/// ready meanwhile. After the restart, a retry with the same `Idempotency-Key` answers as the
/// write turned out: the order exists once.
#[test]
fn a_commit_the_disk_failed_to_sync_is_answered_unknown_and_stops_writes_until_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let library = fail_sync_library(dir.path());
    let failing = dir.path().join("fail-syncs-now");
    let database = dir.path().join("sync.db");
    let mut command = binary::petstore(&database);
    command
        .env("LD_PRELOAD", &library)
        .env("PETSTORE_FAIL_SYNC_WHILE", &failing);
    let server = serve_command(command, Some(KEY), &[]);
    let mut ledger = Ledger::set_up(&server.address);
    let pet = ledger.new_pet(&server.address, "Rex", 10);
    let order = format!(r#"{{"petId": {pet}, "quantity": 1}}"#);
    let place = |address: &str, key: Option<&str>| {
        let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
        let (status, body) = send_to(
            address,
            "POST",
            "/v1/store/orders",
            KEY,
            &headers,
            Some(&order),
        )
        .expect("the service answers");
        (status, json(&body))
    };
    assert_eq!(ready(&server), 200);

    std::fs::write(&failing, b"").unwrap();
    let (status, body) = place(&server.address, Some("order-in-doubt"));
    assert_eq!(status, 503, "{body}");
    assert_eq!(code_of(&body), "outcome_unknown", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("Idempotency-Key"), "{message}");
    std::fs::remove_file(&failing).unwrap();

    // The disk works again, but the process does not know what its file holds: no write.
    let (status, refused) = place(&server.address, None);
    assert_eq!(status, 503, "{refused}");
    assert_eq!(code_of(&refused), "unavailable", "not in doubt: {refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("storage"),
        "{refused}"
    );
    let (status, category) = call(
        &server.address,
        "POST",
        "/v1/categories",
        Some(r#"{"name": "After"}"#),
    );
    assert_eq!(code_of(&category), "unavailable", "{status} {category}");
    assert_eq!(ready(&server), 503, "not ready until restarted");
    let (status, _) = call(
        &server.address,
        "GET",
        &format!("/v1/inventory/{pet}"),
        None,
    );
    assert_eq!(status, 200, "reads go on");
    let logs: Vec<String> = server.stderr.try_iter().collect();
    assert!(
        logs.iter()
            .any(|line| line.contains("write outcome unknown") && line.contains("disk I/O error")),
        "the operator is told why: {logs:#?}"
    );
    server.kill();

    let server = serve_with(&database, None, &[]);
    assert_eq!(ready(&server), 200);
    let (status, retried) = place(&server.address, Some("order-in-doubt"));
    assert_eq!(status, 201, "{retried}");
    let orders: Vec<Value> = all_items(&server.address, "/v1/store/orders")
        .into_iter()
        .filter(|order| order["petId"] == pet)
        .collect();
    assert_eq!(orders.len(), 1, "made once: {orders:?}");
    assert_eq!(orders[0]["id"], retried["id"]);
    assert_eq!(stock_of(&server.address, pet), 9);
    let categories = all_items(&server.address, "/v1/categories");
    assert!(
        categories.iter().all(|c| c["name"] != "After"),
        "a write refused after the stop never happened: {categories:?}"
    );
}
