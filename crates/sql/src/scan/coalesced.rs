//! A scan's output on its way to its consumer, in batches of about
//! [`BATCH_ROWS`] rows.
//!
//! A scan runs on a thread of its own and sends its batches through a
//! channel (`scan_exec::thread_stream`); each batch sent wakes the
//! consumer's thread, and the consumer pays its per-batch work again. A
//! selective WHERE keeps a few rows of each batch read (a column scan's), and
//! a heap scan's access path hands out 1,024 tuples at a time: sent as they
//! come, TPC-H Q6 on columns made 16,800 context switches in 8 warm runs
//! (1,100 coalesced), a fifth of its warm time. So rows are gathered into
//! batches of about 8,192 (arrow's `BatchCoalescer`); a batch of more than
//! half that passes on as it is, uncopied.

use datafusion::arrow::compute::BatchCoalescer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Result;

/// Rows per batch sent, about: DataFusion's default batch size, and a
/// column scan's batch as decoded.
pub const BATCH_ROWS: usize = strata_columns::read::BATCH_ROWS;

/// The batches on their way out.
pub struct Coalesced {
    coalescer: BatchCoalescer,
}

type Sender = tokio::sync::mpsc::Sender<Result<RecordBatch>>;

impl Coalesced {
    pub fn new(schema: SchemaRef) -> Coalesced {
        Coalesced {
            coalescer: BatchCoalescer::new(schema, BATCH_ROWS)
                .with_biggest_coalesce_batch_size(Some(BATCH_ROWS / 2)),
        }
    }

    /// Takes `batch`, sending what is complete; false once the consumer is
    /// gone.
    pub fn push(&mut self, batch: RecordBatch, tx: &Sender) -> Result<bool> {
        if batch.num_rows() > 0 {
            self.coalescer.push_batch(batch)?;
        }
        self.send(tx)
    }

    /// Sends the rows still held; false once the consumer is gone.
    pub fn finish(&mut self, tx: &Sender) -> Result<bool> {
        self.coalescer.finish_buffered_batch()?;
        self.send(tx)
    }

    fn send(&mut self, tx: &Sender) -> Result<bool> {
        while let Some(b) = self.coalescer.next_completed_batch() {
            if tx.blocking_send(Ok(b)).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
