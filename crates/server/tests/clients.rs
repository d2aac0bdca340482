//! strata serve driven by PostgreSQL 15's own programs, psql and pgbench
//! (Debian's postgresql-client-15, on every machine of this kind). A machine
//! without them skips, and says so in the test summary.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use strata_server::{ServeOptions, Server};
use strata_storage::util::note_skip;
use strata_storage::{Database, DbOptions};

pub fn serve(dir: &Path) -> SocketAddr {
    let db = Arc::new(Database::create(&dir.join("db"), DbOptions::default()).unwrap());
    let opts = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections: 64,
        socket_dir: Some(dir.to_path_buf()),
        ..ServeOptions::default()
    };
    let server = Server::bind(db, &opts).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

/// Whether `program` runs here.
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs psql with `script` on stdin; its stdout, or a panic with stderr.
fn psql(addr: SocketAddr, script: &str) -> String {
    let mut child = Command::new("psql")
        .args([
            "-X",
            "-h",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
        ])
        .args([
            "-U",
            "strata",
            "-d",
            "strata",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "psql failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn psql_runs_ddl_dml_copy_timing_a_transaction_and_describes() {
    if !have("psql") {
        note_skip(
            "psql_runs_ddl_dml_copy_timing_a_transaction_and_describes",
            "psql is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    let csv = dir.path().join("in.csv");
    std::fs::write(&csv, "k,name\n10,ten\n11,\"el,even\"\n").unwrap();
    let copied = dir.path().join("out.csv");
    let out = psql(
        addr,
        &format!(
            "CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR(20));\n\
             INSERT INTO t VALUES (1, 'one'), (2, NULL);\n\
             \\timing on\n\
             BEGIN;\n\
             UPDATE t SET name = 'two' WHERE k = 2;\n\
             COMMIT;\n\
             \\timing off\n\
             \\copy t FROM '{}' WITH (FORMAT csv, HEADER)\n\
             \\copy (SELECT k, name FROM t ORDER BY k) TO '{}' WITH (FORMAT csv)\n\
             SELECT k, name FROM t ORDER BY k;\n\
             CREATE INDEX t_name ON t (name);\n\
             CREATE VIEW v AS SELECT k FROM t;\n\
             \\pset format unaligned\n\
             \\dt\n\
             \\di\n\
             \\dv\n\
             \\d t\n\
             \\d t_name\n",
            csv.display(),
            copied.display()
        ),
    );
    for want in [
        "CREATE TABLE",
        "INSERT 0 2",
        "BEGIN",
        "UPDATE 1",
        "COMMIT",
        "Time: ",
        "COPY 2",
        "(4 rows)",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    assert!(out.contains(" 11 | el,even"), "{out}");
    // psql's describe commands, over strata's pg_catalog.
    for want in [
        "List of relations\nSchema|Name|Type|Owner\npublic|t|table|strata\n(1 row)",
        "Schema|Name|Type|Owner|Table\npublic|t_name|index|strata|t\npublic|t_pkey|index|strata|t\n(2 rows)",
        "Schema|Name|Type|Owner\npublic|v|view|strata\n(1 row)",
        "Table \"public.t\"\nColumn|Type|Collation|Nullable|Default\n\
         k|integer||not null|\nname|character varying(20)|||\nIndexes:\n    \
         \"t_name\" btree (name)\n    \"t_pkey\" UNIQUE, btree (k)",
        "Index \"public.t_name\"\nColumn|Type|Key?|Definition\n\
         name|character varying(20)|yes|name\nbtree, for table \"public.t\"",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    assert_eq!(
        std::fs::read_to_string(&copied).unwrap(),
        "1,one\n2,two\n10,ten\n11,\"el,even\"\n"
    );
}

/// pgbench's tables at scale 1, created by strata's own script: `pgbench -i`
/// needs what strata lacks (`fillfactor`, `VACUUM`, `ALTER TABLE … ADD
/// PRIMARY KEY`, several tables in one `TRUNCATE`/`DROP`).
pub const PGBENCH_INIT: &str = include_str!("../../../scripts/pgbench_init.sql");

#[test]
fn pgbench_runs_tpcb_and_select_only_and_its_invariant_holds() {
    if !have("pgbench") || !have("psql") {
        note_skip(
            "pgbench_runs_tpcb_and_select_only_and_its_invariant_holds",
            "pgbench or psql is not installed",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    psql(addr, &PGBENCH_INIT.replace(":scale", "1"));
    // pgbench through the Unix socket, as to a local PostgreSQL.
    let socket_dir = dir.path().display().to_string();
    let pgbench = |args: &[&str]| {
        let out = Command::new("pgbench")
            .args([
                "-h",
                &socket_dir,
                "-p",
                &addr.port().to_string(),
                "-U",
                "strata",
                "-n",
            ])
            .args(args)
            .arg("strata")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "pgbench {args:?}:\n{text}");
        text
    };
    let tpcb = pgbench(&["-c", "4", "-j", "2", "-t", "25"]);
    assert!(
        tpcb.contains("number of transactions actually processed: 100/100"),
        "{tpcb}"
    );
    assert!(tpcb.contains("number of failed transactions: 0"), "{tpcb}");
    let select = pgbench(&["-S", "-c", "4", "-j", "2", "-t", "50", "-M", "prepared"]);
    assert!(select.contains("processed: 200/200"), "{select}");
    // Every teller, branch and account change of a transaction committed
    // together, and each is in the history.
    let sums = psql(
        addr,
        "\\pset format unaligned\n\\pset tuples_only on\n\
         SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
         (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM pgbench_history), \
         (SELECT count(*) FROM pgbench_history);\n",
    );
    let last = sums.trim().lines().last().unwrap_or("");
    let v: Vec<&str> = last.split('|').collect();
    assert_eq!(v.len(), 5, "{sums}");
    assert!(v[..4].iter().all(|x| *x == v[0]), "sums differ: {sums}");
    assert_eq!(v[4], "100", "{sums}");
}
