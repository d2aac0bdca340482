//! What every connection of a server shares: the database, the connection
//! count and its limit, the cancel keys of running connections, and the
//! password file.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pgwire::api::ConnectionManager;
use pgwire::api::cancel::DefaultCancelHandler;
use strata_storage::Database;

/// What every connection of a server shares.
pub struct Shared {
    pub db: Arc<Database>,
    pub max_connections: usize,
    /// Connections open now.
    pub open: AtomicUsize,
    /// Connections by cancel key, for CancelRequest.
    pub manager: Arc<ConnectionManager>,
    pub cancel: Arc<DefaultCancelHandler>,
    /// `--password-file`: logins by SCRAM-SHA-256; none without one.
    pub passwords: Option<Arc<crate::auth::Passwords>>,
}

/// One open connection, counted while it lives.
pub struct Slot {
    shared: Arc<Shared>,
    /// Whether this connection is over the limit (it is refused at startup).
    pub over: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Slot {
    /// Counts a new connection; over the limit, it is refused at startup.
    pub fn take(shared: &Arc<Shared>) -> Slot {
        let open = shared.open.fetch_add(1, Ordering::AcqRel) + 1;
        Slot {
            shared: shared.clone(),
            over: open > shared.max_connections,
        }
    }
}
