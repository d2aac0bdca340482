use std::sync::Arc;
use std::time::Instant;
use strata_sql::SqlSession;
use strata_storage::types::Value;
use strata_storage::{Database, DbOptions};

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let db = Arc::new(
        Database::open(std::path::Path::new("/tmp/bw/q.db"), DbOptions::default()).unwrap(),
    );
    let s = SqlSession::new(db.clone()).unwrap();
    let n = 200;
    let mut t = vec![];
    for _ in 0..n {
        let a = Instant::now();
        s.execute("SELECT 1").unwrap();
        t.push(a.elapsed().as_secs_f64() * 1e6);
    }
    println!("SELECT 1 {:.0} us", med(t));
    let mut t = vec![];
    for i in 0..n {
        let a = Instant::now();
        s.execute(&format!("SELECT v FROM acct WHERE k = {}", i * 7))
            .unwrap();
        t.push(a.elapsed().as_secs_f64() * 1e6);
    }
    println!("point select {:.0} us", med(t));
    let mut t = vec![];
    for i in 0..n {
        let a = Instant::now();
        s.execute(&format!(
            "EXPLAIN UPDATE acct SET v = v + 1 WHERE k = {}",
            i * 7
        ))
        .unwrap();
        t.push(a.elapsed().as_secs_f64() * 1e6);
    }
    println!("explain update {:.0} us", med(t));
    let r = s
        .execute("EXPLAIN UPDATE acct SET v = v + 1 WHERE k = 5")
        .unwrap();
    println!(
        "{}",
        strata_sql::format::render(strata_sql::Format::Table, &r.schema, &r.batches)
            .unwrap_or_default()
    );
    let mut t = vec![];
    for i in 0..n {
        let a = Instant::now();
        s.execute(&format!("UPDATE acct SET v = v + 1 WHERE k = {}", i * 7))
            .unwrap();
        t.push(a.elapsed().as_secs_f64() * 1e6);
    }
    println!("update {:.0} us", med(t));
    let table = db.table("acct").unwrap();
    let index = table.index("acct_k").unwrap();
    let (mut tb, mut tu, mut tc) = (vec![], vec![], vec![]);
    for i in 0..n {
        let a = Instant::now();
        let txn = db.begin_write().unwrap();
        let b = Instant::now();
        let key = index.key_of_row(&[
            Value::Int64(i as i64 * 7),
            Value::Int64(0),
            Value::Str(String::new()),
        ]);
        let tid = index.btree.lookup(&key).unwrap()[0];
        let mut row = table.get_row(tid).unwrap().unwrap();
        if let Value::Int64(v) = row[1] {
            row[1] = Value::Int64(v - 1);
        }
        table.update_row(tid, &row).unwrap();
        let c = Instant::now();
        txn.commit().unwrap();
        let d = Instant::now();
        tb.push((b - a).as_secs_f64() * 1e6);
        tu.push((c - b).as_secs_f64() * 1e6);
        tc.push((d - c).as_secs_f64() * 1e6);
    }
    println!(
        "storage: begin {:.0} us, update {:.0} us, commit {:.0} us",
        med(tb),
        med(tu),
        med(tc)
    );
}
