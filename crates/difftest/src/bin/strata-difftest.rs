//! `strata-difftest [--seed N] [--statements N] [--out DIR]`: a long run of
//! the differential SQL tester (issue 53). Prints the report; exits 1 when
//! the run found unexplained mismatches or panics, 2 when it could not run
//! (python3 or DuckDB missing, bad arguments).

use std::path::PathBuf;
use std::process::ExitCode;

use strata_difftest::{Config, run};

fn usage() -> ExitCode {
    eprintln!("usage: strata-difftest [--seed N] [--statements N] [--out DIR] [--quiet]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut cfg = Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let parsed: Result<(), String> = match a.as_str() {
            "--seed" => value("--seed").and_then(|v| {
                v.parse()
                    .map(|n| cfg.seed = n)
                    .map_err(|_| format!("--seed: '{v}' is not a number"))
            }),
            "--statements" => value("--statements").and_then(|v| {
                v.parse()
                    .map(|n| cfg.statements = n)
                    .map_err(|_| format!("--statements: '{v}' is not a number"))
            }),
            "--out" => value("--out").map(|v| cfg.out = Some(PathBuf::from(v))),
            "--quiet" => {
                cfg.quiet = true;
                Ok(())
            }
            "-h" | "--help" => return usage(),
            other => Err(format!("unknown argument '{other}'")),
        };
        if let Err(e) = parsed {
            eprintln!("strata-difftest: {e}");
            return usage();
        }
    }
    match run(&cfg) {
        Ok(report) => {
            println!("{}", report.summary());
            if let Some(dir) = &cfg.out
                && let Err(e) = report.write(dir, &cfg)
            {
                eprintln!(
                    "strata-difftest: writing the report to {}: {e}",
                    dir.display()
                );
                return ExitCode::from(2);
            }
            if report.failed() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("strata-difftest: {e}");
            ExitCode::from(2)
        }
    }
}
