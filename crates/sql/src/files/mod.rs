//! Files in SQL: `read_csv`/`read_parquet` and a file named as a table
//! (`read`), and `COPY … TO` a Parquet or CSV file (`copy`).

pub mod copy;
pub mod read;
