//! A private, throwaway PostgreSQL server for a test or bench that must stop and start
//! its database (the suite's shared `CTXD_TEST_PG` server must not be restarted under the
//! other tests). `initdb` + `pg_ctl` in a temp directory, on a Unix socket only, stopped
//! on drop. The binaries come from `CTXD_TEST_PG_BIN`, else PATH, else Debian's
//! `/usr/lib/postgresql/*/bin`; as root they run as the `postgres` user (initdb refuses
//! root).
#![allow(dead_code)] // each test or bench that includes it uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
    /// `fsync` as a production server has it (on), for measurements; tests run without.
    durable: bool,
}

fn find_bin() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("CTXD_TEST_PG_BIN") {
        return Some(PathBuf::from(d));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|p| p.join("initdb").is_file() && p.join("pg_ctl").is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

impl PgCluster {
    /// A running server, or `None` (with the reason on stderr) where PostgreSQL is not
    /// installed.
    pub fn start() -> Option<PgCluster> {
        PgCluster::start_with(false)
    }

    /// A server that syncs its WAL on commit (PostgreSQL's default), for measurements.
    pub fn start_durable() -> Option<PgCluster> {
        PgCluster::start_with(true)
    }

    fn start_with(durable: bool) -> Option<PgCluster> {
        let Some(bin) = find_bin() else {
            eprintln!("skipped: no PostgreSQL server binaries (initdb, pg_ctl)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .arg("postgres")
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the cluster directory to postgres");
        }
        let c = PgCluster {
            dir,
            bin,
            as_postgres,
            durable,
        };
        let data = c.data();
        let out = c
            .tool("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "ctxd",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ])
            .output()
            .expect("initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        c.ctl("start");
        Some(c)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Its server processes: the postmaster and its children.
    fn processes(&self) -> Vec<String> {
        let pid = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string))
            .expect("postmaster.pid");
        let children = Command::new("pgrep")
            .args(["-P", &pid])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default();
        std::iter::once(pid)
            .chain(children.lines().map(str::to_string))
            .collect()
    }

    /// Stops every server process (SIGSTOP): the server accepts nothing and answers
    /// nothing, its sockets stay open, as a hung server's do.
    pub fn pause(&self) {
        for p in self.processes() {
            let _ = Command::new("kill").args(["-STOP", &p]).status();
        }
    }

    pub fn resume(&self) {
        for p in self.processes() {
            let _ = Command::new("kill").args(["-CONT", &p]).status();
        }
    }

    /// The directory of its Unix socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    fn tool(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        c.stdin(Stdio::null());
        c
    }

    fn ctl(&self, action: &str) {
        let mut c = self.tool("pg_ctl");
        c.arg("-D").arg(self.data()).args(["-w", "-m", "fast"]);
        if action != "stop" {
            let opts = format!(
                "-k {} -c listen_addresses='' -c fsync={} -c max_connections=200",
                self.socket_dir().display(),
                if self.durable { "on" } else { "off" }
            );
            c.arg("-o")
                .arg(opts)
                .arg("-l")
                .arg(self.dir.path().join("log"));
        }
        let out = c.arg(action).output().expect("pg_ctl");
        assert!(
            out.status.success(),
            "pg_ctl {action}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn stop(&self) {
        self.ctl("stop");
    }

    pub fn start_again(&self) {
        self.ctl("start");
    }

    /// The URL of database `name` (created by [`PgCluster::create_db`]).
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgresql:///{name}?host={}&user=ctxd",
            self.socket_dir().display()
        )
    }

    pub fn create_db(&self, name: &str) -> String {
        crate::common::admin_sql(&self.url("postgres"), &[format!("CREATE DATABASE {name}")])
            .expect("create a database on the test cluster");
        self.url(name)
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-m", "immediate", "stop"])
            .output();
    }
}
