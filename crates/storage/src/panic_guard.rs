//! Third-party decoders that panic on corrupt input, contained.
//!
//! strata's own code returns errors for bad input; a maintained crate may
//! instead assert or index out of bounds on a damaged file (the Parquet
//! reader does, on flipped bytes: `strata-load`'s fuzz test finds such files
//! in seconds). [`catch`] runs such a call so that its panic becomes an error
//! carrying the panic's message, and the panic is not printed: to the user it
//! is the error of a bad file, which is what it is. Only calls into other
//! crates' decoders go through here; a panic in strata is a bug to fix.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`catch`] (its panics are not printed).
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The message of the last panic caught on this thread.
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once per process) a panic hook that records instead of printing
/// while the panicking thread is inside [`catch`], and otherwise does what
/// the previous hook did.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let what = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                let at = info
                    .location()
                    .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                    .unwrap_or_default();
                MESSAGE.with(|m| *m.borrow_mut() = Some(format!("{what}{at}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`; a panic inside it becomes `Err` with the panic's message.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let was = QUIET.with(|q| q.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    r.map_err(|_| {
        MESSAGE
            .with(|m| m.borrow_mut().take())
            .unwrap_or_else(|| "unknown panic".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_values_pass_through() {
        assert_eq!(catch(|| 7), Ok(7));
        let v: Vec<u8> = vec![];
        let e = catch(|| v[3]).unwrap_err();
        assert!(
            e.contains("index out of bounds") && e.contains("panic_guard.rs"),
            "{e}"
        );
        let e = catch(|| -> u8 { panic!("bad {}", 5) }).unwrap_err();
        assert!(e.starts_with("bad 5"), "{e}");
        // Nested: the inner catch restores the outer one's quiet state.
        let e = catch(|| {
            assert!(catch(|| panic!("inner")).is_err());
            panic!("outer")
        })
        .unwrap_err();
        assert!(e.starts_with("outer"), "{e}");
    }
}
