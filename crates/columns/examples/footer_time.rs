use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
use std::sync::Arc;
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let len = bytes.len() as u64;
    let tail = 643072usize.min(bytes.len());
    let b = bytes::Bytes::copy_from_slice(&bytes[bytes.len() - tail..]);
    for policy in [
        PageIndexPolicy::Skip,
        PageIndexPolicy::Optional,
        PageIndexPolicy::Optional,
    ] {
        let t = Instant::now();
        let mut r = ParquetMetaDataReader::new().with_page_index_policy(policy);
        r.try_parse_sized(&b, len).unwrap();
        let t1 = t.elapsed();
        let m = r.finish().unwrap();
        let t2 = t.elapsed();
        let a = ArrowReaderMetadata::try_new(
            Arc::new(m),
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional),
        )
        .unwrap();
        let t3 = t.elapsed();
        let pages: usize = a
            .metadata()
            .offset_index()
            .map(|o| o.iter().flatten().map(|c| c.page_locations().len()).sum())
            .unwrap_or(0);
        let t = Instant::now();
        drop(a);
        println!(
            "{policy:?}: parse {:?} finish {:?} arrow {:?} pages {pages} drop {:?}",
            t1,
            t2,
            t3,
            t.elapsed()
        );
    }
}
