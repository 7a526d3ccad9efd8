//! A bad day for the disk, on the real binary: the disk fills up, the database file is
//! read-only. Writes answer 503 with `Retry-After` and `/readyz` turns 503 while the database
//! cannot take writes; both recover once the operator has acted (for a read-only file, and a
//! restart), and nothing acknowledged is lost.
//!
//! Both need root (to mount a small disk, and to run the service as another user so that file
//! permissions apply); without it they say they were skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod binary;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use binary::{Server, petstore_as_nobody, serve_command, serve_with};

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
