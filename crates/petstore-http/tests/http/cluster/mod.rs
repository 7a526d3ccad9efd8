//! A PostgreSQL cluster of a test's own, for what the shared server cannot show (TLS, a
//! standby, a crash): made by `initdb` in a temporary folder, on a free port, run as the
//! `postgres` user when the tests run as root (`initdb` and `postgres` refuse root), and
//! stopped when dropped.

#![allow(dead_code, reason = "each test file uses its own part of this module")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Cluster {
    dir: tempfile::TempDir,
    pub port: u16,
    as_root: bool,
}

/// Makes the `postgres` user the owner of `path`; false where there is no such user.
fn give_to_postgres(path: &Path) -> bool {
    Command::new("chown")
        .arg("postgres:postgres")
        .arg(path)
        .status()
        .is_ok_and(|status| status.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

impl Cluster {
    /// A new cluster, not started; `None` (the caller says it skipped) where `initdb` is not
    /// on the machine.
    pub(crate) fn init() -> Option<Self> {
        let as_root = is_root();
        let dir = tempfile::tempdir().unwrap();
        let cluster = Cluster {
            dir,
            port: free_port(),
            as_root,
        };
        if as_root && !give_to_postgres(cluster.dir.path()) {
            eprintln!("skipped: no postgres user to run a cluster as");
            return None;
        }
        let made = cluster
            .command("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(cluster.data())
            .output();
        match made {
            Ok(out) if out.status.success() => {}
            Ok(out) => panic!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)),
            Err(_) => {
                eprintln!("skipped: initdb is not installed");
                return None;
            }
        }
        cluster.configure(&format!(
            "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n",
            cluster.port,
            cluster.dir.path().display()
        ));
        Some(cluster)
    }

    /// A streaming standby of `primary` (which must be running), made by `pg_basebackup -R`
    /// into a folder of its own, on a free port; not started.
    pub(crate) fn standby_of(primary: &Cluster) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let standby = Cluster {
            dir,
            port: free_port(),
            as_root: primary.as_root,
        };
        if standby.as_root {
            assert!(give_to_postgres(standby.dir.path()));
        }
        succeed(
            standby
                .command("pg_basebackup")
                .args([
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "postgres",
                    "-R",
                    "-X",
                    "stream",
                    "--no-sync",
                ])
                .args(["-p", &primary.port.to_string(), "-D"])
                .arg(standby.data()),
            "pg_basebackup",
        );
        // The copied settings are the primary's; later lines win.
        standby.configure(&format!(
            "port = {}\nunix_socket_directories = '{}'\n",
            standby.port,
            standby.dir.path().display()
        ));
        standby
    }

    /// Its URL for the `postgres` database, in the clear.
    pub(crate) fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// Reloads the settings of the running server.
    pub(crate) fn reload(&self) {
        succeed(
            self.command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .arg("reload"),
            "pg_ctl reload",
        );
    }

    /// Promotes a standby to primary, waiting until it is.
    pub(crate) fn promote(&self) {
        succeed(
            self.command("pg_ctl")
                .args(["-w", "-D"])
                .arg(self.data())
                .arg("promote"),
            "pg_ctl promote",
        );
    }

    /// `kill -9` of the server's main process: a crash, with no shutdown at all.
    pub(crate) fn kill(&self) {
        let pid = std::fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        assert!(
            Command::new("kill")
                .args(["-9", &pid])
                .status()
                .unwrap()
                .success()
        );
    }

    /// A PostgreSQL program (`pg_ctl`, `initdb`, …), run as the cluster's owner.
    pub(crate) fn command(&self, program: &str) -> Command {
        if self.as_root {
            let mut command = Command::new("setpriv");
            command.args([
                "--reuid=postgres",
                "--regid=postgres",
                "--clear-groups",
                "--",
                program,
            ]);
            command
        } else {
            Command::new(program)
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Appends settings to `postgresql.conf`.
    pub(crate) fn configure(&self, settings: &str) {
        use std::io::Write;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .unwrap();
        conf.write_all(settings.as_bytes()).unwrap();
    }

    /// Replaces `pg_hba.conf`.
    pub(crate) fn hba(&self, rules: &str) {
        std::fs::write(self.data().join("pg_hba.conf"), rules).unwrap();
    }

    /// Writes a file into the cluster's folder, owned by its owner, readable only by it (as
    /// a server's private key must be).
    pub(crate) fn private_file(&self, name: &str, contents: &[u8]) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        if self.as_root {
            assert!(give_to_postgres(&path));
        }
        path
    }

    pub(crate) fn start(&self) {
        let out = self
            .command("pg_ctl")
            .args(["-w", "-t", "30", "-D"])
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .arg("start")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
    }

    /// What the server has written to its log so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Stops the server at once, as a crash would.
    pub(crate) fn stop(&self) {
        let _ = self
            .command("pg_ctl")
            .args(["-w", "-m", "immediate", "-D"])
            .arg(self.data())
            .arg("stop")
            .output();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `command`, which must succeed; its error output says why when it does not.
fn succeed(command: &mut Command, what: &str) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A certificate authority and what it signs, made with the `openssl` command in `dir`.
pub(crate) struct Authority {
    dir: PathBuf,
    pub name: String,
}

impl Authority {
    /// A new CA, `<name>.pem` (and its key) in `dir`.
    pub(crate) fn new(dir: &Path, name: &str) -> Self {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-subj",
                &format!("/CN={name}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        Authority {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
        }
    }

    pub(crate) fn certificate(&self) -> PathBuf {
        self.dir.join(format!("{}.pem", self.name))
    }

    /// A server certificate for `localhost` and 127.0.0.1: (certificate PEM, key PEM).
    pub(crate) fn sign_server(&self) -> (Vec<u8>, Vec<u8>) {
        self.sign(
            "server",
            "localhost",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
    }

    /// A client certificate for the database user `user` (its common name, which the
    /// server's `cert` authentication matches): (certificate PEM, key PEM).
    pub(crate) fn sign_client(&self, user: &str) -> (Vec<u8>, Vec<u8>) {
        self.sign(
            "client",
            user,
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=clientAuth\n",
        )
    }

    /// A key and a certificate for `common_name` with the extensions `ext`, signed by this
    /// CA, as `<file>.pem` and `<file>.key` in its folder.
    fn sign(&self, file: &str, common_name: &str, ext: &str) -> (Vec<u8>, Vec<u8>) {
        let (certificate, key) = (format!("{file}.pem"), format!("{file}.key"));
        let (request, extensions) = (format!("{file}.csr"), format!("{file}.ext"));
        std::fs::write(self.dir.join(&extensions), ext).unwrap();
        openssl(
            &self.dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &request,
                "-subj",
                &format!("/CN={common_name}"),
            ],
        );
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &request,
                "-CA",
                &format!("{}.pem", self.name),
                "-CAkey",
                &format!("{}.key", self.name),
                "-CAcreateserial",
                "-out",
                &certificate,
                "-days",
                "2",
                "-extfile",
                &extensions,
            ],
        );
        (
            std::fs::read(self.dir.join(&certificate)).unwrap(),
            std::fs::read(self.dir.join(&key)).unwrap(),
        )
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    succeed(
        Command::new("openssl").args(args).current_dir(dir),
        &format!("openssl {args:?}"),
    );
}
