//! Databases that are not the service's: every command that opens a database refuses another
//! program's, and one a newer version migrated, says what it found, and leaves it exactly as
//! it was; an empty database is still taken as new; the files the service creates are its
//! owner's only.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, RunQueryDsl, SqliteConnection};
use petstore_store::testing::ScratchPostgres;

use crate::binary::petstore;

/// Each command that opens a database, with `database` where it goes; `scratch` is a folder
/// for what a command would write beside it, `ours` a database of this version to copy from.
fn every_command(database: &str, scratch: &Path, ours: &str) -> Vec<Vec<String>> {
    let out = |name: &str| scratch.join(name).display().to_string();
    [
        vec!["serve", "--bind", "127.0.0.1:0"],
        vec!["migrate"],
        vec!["keys", "create", "--role", "staff", "--name", "ops"],
        vec!["keys", "list"],
        vec!["keys", "revoke", "1"],
        vec!["check"],
    ]
    .into_iter()
    .map(|args| {
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        args.extend(["--database".to_owned(), database.to_owned()]);
        args
    })
    .chain([
        vec![
            "backup".to_owned(),
            "--database".to_owned(),
            database.to_owned(),
            out("backup.db"),
        ],
        vec![
            "copy".to_owned(),
            "--from".to_owned(),
            database.to_owned(),
            "--to".to_owned(),
            out("copy.db"),
        ],
        vec![
            "copy".to_owned(),
            "--from".to_owned(),
            ours.to_owned(),
            "--to".to_owned(),
            database.to_owned(),
        ],
    ])
    .collect()
}

/// Runs the binary with `args`, giving up (and failing) after 30 s: a `serve` that was not
/// refused would run on.
fn run(args: &[String]) -> Output {
    let mut child = petstore("unused.db")
        .env_remove("PETSTORE_DATABASE")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?} was not refused: it still ran after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Every command refuses the database: exit code 1, a message with `says`, and `unchanged`
/// still holding afterwards; nothing is written into `scratch`.
fn every_command_refuses(
    database: &str,
    says: &str,
    ours: &str,
    unchanged: &mut dyn FnMut() -> Vec<String>,
) {
    let before = unchanged();
    let scratch = tempfile::tempdir().unwrap();
    for args in every_command(database, scratch.path(), ours) {
        let output = run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} says {says:?}: {stderr}");
        assert!(
            stderr.contains("Nothing was changed"),
            "{args:?} says what it did: {stderr}"
        );
        assert_eq!(unchanged(), before, "{args:?} changed the database");
        let written: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
        assert!(written.is_empty(), "{args:?} wrote {written:?}");
    }
}

/// The length and a hash of the bytes of a SQLite file and of its `-wal`, if it has one.
fn bytes_of(file: &Path) -> Vec<String> {
    use std::hash::{Hash, Hasher};
    let wal = PathBuf::from(format!("{}-wal", file.display()));
    [file.to_path_buf(), wal]
        .iter()
        .map(|path| match std::fs::read(path) {
            Ok(bytes) => {
                let mut hasher = std::hash::DefaultHasher::new();
                bytes.hash(&mut hasher);
                format!("{} bytes, hash {:x}", bytes.len(), hasher.finish())
            }
            Err(_) => "absent".to_owned(),
        })
        .collect()
}

/// A database of this version, with nothing in it, to copy from.
fn ours(dir: &Path) -> String {
    let file = dir.join("ours.db").display().to_string();
    let migrated = petstore(&file).arg("migrate").output().unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    file
}

/// How another program that uses Diesel leaves its database: no migration table, an empty one
/// (it has not migrated yet), or one with versions of its own. What the refusal then says.
const OTHER_PROGRAMS: [(&str, &str); 3] = [
    ("", "it holds invoices, and no migration of this service"),
    (
        "CREATE TABLE __diesel_schema_migrations (version VARCHAR(50) PRIMARY KEY NOT NULL, \
         run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP);",
        "it holds invoices, and no migration of this service",
    ),
    (
        "CREATE TABLE __diesel_schema_migrations (version VARCHAR(50) PRIMARY KEY NOT NULL, \
         run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
         INSERT INTO __diesel_schema_migrations (version) VALUES ('20200101000000');",
        "it holds invoices, and another program's migrations (20200101000000 in \
         __diesel_schema_migrations), none of this service's",
    ),
];

/// Another program's SQLite file: one table, in WAL mode, its last write still in the `-wal`
/// (the connection that wrote it stays open while the commands run); with each kind of
/// migration table of [`OTHER_PROGRAMS`].
#[test]
fn every_command_refuses_another_programs_sqlite_file_and_leaves_its_bytes() {
    for (migration_table, says) in OTHER_PROGRAMS {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db");
        let mut other_program = SqliteConnection::establish(ledger.to_str().unwrap()).unwrap();
        other_program
            .batch_execute(&format!(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; {migration_table} \
                 CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER); \
                 INSERT INTO invoices (amount) VALUES (250)"
            ))
            .unwrap();
        assert!(
            bytes_of(&ledger)[1] != "absent",
            "the write waits in the -wal"
        );
        let ours = ours(dir.path());
        every_command_refuses(
            ledger.to_str().unwrap(),
            &format!("is not a pet store database: {says}"),
            &ours,
            &mut || bytes_of(&ledger),
        );
        drop(other_program);
    }
}

/// A file that is not SQLite at all (a misplaced text file): every command names it.
#[test]
fn every_command_refuses_a_file_that_is_not_sqlite_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "shopping list: cat food, bird seed\n".repeat(200)).unwrap();
    let ours = ours(dir.path());
    every_command_refuses(
        notes.to_str().unwrap(),
        &format!("{} cannot be read as a SQLite database", notes.display()),
        &ours,
        &mut || bytes_of(&notes),
    );
}

/// A mistyped path: the commands that only read say there is no database there, and create
/// nothing.
#[test]
fn the_reading_commands_say_a_missing_file_is_not_there() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("shpo.db").display().to_string();
    let out = dir.path().join("out.db").display().to_string();
    for args in [
        vec!["backup", "--database", &typo, &out],
        vec!["copy", "--from", &typo, "--to", &out],
        vec!["keys", "list", "--database", &typo],
        vec!["check", "--database", &typo],
    ] {
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        let output = run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("there is no database at {typo}")),
            "{args:?}: {stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} created {left:?}");
    }
}

/// The tables of the public schema of a PostgreSQL database, with their row counts.
fn tables_of(url: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Table {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    let mut conn = PgConnection::establish(url).unwrap();
    diesel::sql_query(
        "SELECT table_name::text || ' ' || (xpath('/row/c/text()', \
         query_to_xml('SELECT count(*) AS c FROM ' || quote_ident(table_name), false, true, \
         '')))[1]::text AS name FROM information_schema.tables WHERE table_schema = 'public' \
         ORDER BY 1",
    )
    .load::<Table>(&mut conn)
    .unwrap()
    .into_iter()
    .map(|table| table.name)
    .collect()
}

#[test]
fn every_command_refuses_another_programs_postgres_database_and_leaves_its_tables() {
    for (migration_table, says) in OTHER_PROGRAMS {
        let Some(database) = ScratchPostgres::create() else {
            return;
        };
        PgConnection::establish(database.url())
            .unwrap()
            .batch_execute(&format!(
                "{migration_table} CREATE TABLE invoices (id integer); INSERT INTO invoices VALUES (1)"
            ))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ours = ours(dir.path());
        let before = tables_of(database.url());
        assert!(before.contains(&"invoices 1".to_owned()), "{before:?}");
        every_command_refuses(
            database.url(),
            &format!("is not a pet store database: {says}"),
            &ours,
            &mut || tables_of(database.url()),
        );
    }
}

/// The admin key the tests' services start with.
const ADMIN: &str = "ownership-admin-0123456789abcdef01234567";

/// A migration this binary does not know that finishes a newer version's upgrade (its
/// sequence number is 900000 or more: it may drop what this version uses).
const NEWER: &str = "20991231900099";

/// A newer version's migration that only adds (a new table, a nullable column).
const NEWER_ADDITIVE: &str = "20991231000099";

/// A rolling upgrade: the first new node has added to the schema, and a node of this version
/// (still running, or restarted on it) goes on serving and writing.
#[test]
fn a_database_a_newer_version_only_added_to_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let file = PathBuf::from(ours(dir.path()));
    SqliteConnection::establish(file.to_str().unwrap())
        .unwrap()
        .batch_execute(&format!(
            "CREATE TABLE newer_things (id INTEGER PRIMARY KEY); \
             ALTER TABLE categories ADD COLUMN newer_note TEXT; \
             INSERT INTO __diesel_schema_migrations (version) VALUES ('{NEWER_ADDITIVE}')"
        ))
        .unwrap();
    let check = petstore(&file).arg("check").output().unwrap();
    assert!(check.status.success(), "{check:?}");
    let server = crate::binary::serve(&file, Some(ADMIN));
    server.create_category(ADMIN, "Beside a newer node");
    let listed = server.get("/v1/categories", ADMIN);
    assert!(listed.contains("Beside a newer node"), "{listed}");
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn every_command_refuses_a_sqlite_file_a_newer_version_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let file = PathBuf::from(ours(dir.path()));
    let newer = dir.path().join("newer.db");
    std::fs::copy(&file, &newer).unwrap();
    SqliteConnection::establish(newer.to_str().unwrap())
        .unwrap()
        .batch_execute(&format!(
            "INSERT INTO __diesel_schema_migrations (version) VALUES ('{NEWER}')"
        ))
        .unwrap();
    every_command_refuses(
        newer.to_str().unwrap(),
        &format!(
            "migrated by a newer version of petstore, which finished its upgrade: this binary ({}) \
             does not know migration {NEWER}",
            env!("CARGO_PKG_VERSION")
        ),
        file.to_str().unwrap(),
        &mut || bytes_of(&newer),
    );
}

#[test]
fn every_command_refuses_a_postgres_database_a_newer_version_migrated() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let migrated = petstore(database.url()).arg("migrate").output().unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    PgConnection::establish(database.url())
        .unwrap()
        .batch_execute(&format!(
            "INSERT INTO __diesel_schema_migrations (version) VALUES ('{NEWER}')"
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ours = ours(dir.path());
    every_command_refuses(
        database.url(),
        &format!("does not know migration {NEWER}"),
        &ours,
        &mut || tables_of(database.url()),
    );
}

/// An empty SQLite file (made by `touch`, say) and an empty PostgreSQL database are new: the
/// service migrates them, starts and serves.
#[test]
fn empty_databases_are_taken_as_new() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let mut databases = vec![empty.display().to_string()];
    let scratch = ScratchPostgres::create();
    if let Some(scratch) = &scratch {
        databases.push(scratch.url().to_owned());
    }
    for database in databases {
        let server = crate::binary::serve(&database, Some(ADMIN));
        assert!(
            server.get("/v1/pets", ADMIN).starts_with("HTTP/1.1 200"),
            "{database} serves"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(server.terminate().0, Some(0), "{database}");
        let listed = petstore(&database).args(["keys", "list"]).output().unwrap();
        assert!(listed.status.success(), "{database}: {listed:?}");
    }
}

/// Under the usual umask, a new database, its `-wal` and `-shm`, and a backup are readable
/// by their owner only: they hold key hashes and webhook signing secrets.
#[test]
fn new_database_and_backup_files_are_the_owners_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("private.db");
    let backup = dir.path().join("backup.db");
    let under_umask = |command: &str| {
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("umask 022 && {command}"))
            .env_remove("PETSTORE_BOOTSTRAP_ADMIN_KEY")
            .env("PETSTORE_LOG_FORMAT", "json")
            .status()
            .unwrap();
        assert!(status.success(), "{command}");
    };
    let binary = crate::binary::BINARY;
    under_umask(&format!("{binary} migrate --database {}", file.display()));
    // A connection held open keeps the -wal and -shm there to be looked at.
    let mut conn = SqliteConnection::establish(file.to_str().unwrap()).unwrap();
    diesel::sql_query("INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs')")
        .execute(&mut conn)
        .unwrap();
    under_umask(&format!(
        "{binary} backup --database {} {}",
        file.display(),
        backup.display()
    ));
    for path in [
        file.clone(),
        PathBuf::from(format!("{}-wal", file.display())),
        PathBuf::from(format!("{}-shm", file.display())),
        backup,
    ] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", path.display());
    }
}
