//! Progress bars for long operations, drawn on stderr only when it is a terminal.

use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use strata_storage::Progress;

/// Draws one bar per phase; the previous phase's bar is finished when a new one starts.
pub struct Bars {
    current: Mutex<Option<ProgressBar>>,
}

impl Bars {
    pub fn new() -> Bars {
        Bars {
            current: Mutex::new(None),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = self.current.lock().unwrap().take() {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bars {
    fn phase(&self, name: &str, total: u64) {
        let mut cur = self.current.lock().unwrap();
        if let Some(b) = cur.take() {
            b.finish_and_clear();
        }
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:32} [{bar:30}] {human_pos}/{human_len} {per_sec:>12} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(name.to_string());
        *cur = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Some(b) = self.current.lock().unwrap().as_ref() {
            b.inc(n);
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        self.finish();
    }
}
