//! Tools that act on whole tables, above the engine (`db/`): where a table's
//! bytes go ([`waste`], No Bits Left Behind §2 and §4), hot/cold clustering
//! ([`cluster`], §3.1), compaction into narrower encodings ([`compact`],
//! §4.1), vertical partitioning ([`split`], §3.2) and `strata check`
//! ([`check`]).

pub mod check;
pub mod cluster;
pub mod compact;
pub mod split;
pub mod waste;
