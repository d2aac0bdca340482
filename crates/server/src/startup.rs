//! A connection's startup: the refusal of a connection over
//! `--max-connections` (SQLSTATE 53300, answered to its startup packet),
//! then either no authentication (the default, on loopback) or
//! SCRAM-SHA-256 against the password file ([`crate::auth`]).
//!
//! Each connection has its own handler, so a SCRAM exchange's state (its
//! nonces, the client's first message) belongs to that connection alone.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::noop::NoopStartupHandler;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::{DefaultServerParameterProvider, StartupHandler};
use pgwire::api::{ClientInfo, ConnectionManager};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::auth::Passwords;
use crate::reply::fatal;

/// One connection's startup handler.
pub struct Startup {
    trusting: Trusting,
    /// The refusal's message, when the connection is over the limit.
    refuse: Option<String>,
    /// SCRAM-SHA-256, when the server has a password file.
    scram: Option<SASLAuthStartupHandler<DefaultServerParameterProvider>>,
}

impl Startup {
    pub(crate) fn new(
        manager: Arc<ConnectionManager>,
        passwords: Option<Arc<Passwords>>,
        refuse: Option<String>,
    ) -> Startup {
        let scram = passwords.map(|p| {
            SASLAuthStartupHandler::new(Arc::new(DefaultServerParameterProvider::default()))
                .with_scram(ScramAuth::new(p))
                .with_connection_manager(manager.clone())
        });
        Startup {
            trusting: Trusting { manager },
            refuse,
            scram,
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let (Some(why), PgWireFrontendMessage::Startup(_)) = (&self.refuse, &message) {
            return Err(fatal("53300", why.clone()));
        }
        match &self.scram {
            // PostgreSQL's message, naming the user of the startup packet
            // (libpq leaves SCRAM's own user name empty).
            Some(scram) => match scram.on_startup(client, message).await {
                Err(PgWireError::InvalidPassword(_)) => {
                    let user = client
                        .metadata()
                        .get(pgwire::api::METADATA_USER)
                        .cloned()
                        .unwrap_or_default();
                    Err(fatal(
                        "28P01",
                        format!("password authentication failed for user \"{user}\""),
                    ))
                }
                other => other,
            },
            None => self.trusting.on_startup(client, message).await,
        }
    }
}

/// No authentication: the default on loopback.
struct Trusting {
    manager: Arc<ConnectionManager>,
}

impl NoopStartupHandler for Trusting {
    fn connection_manager(&self) -> Option<Arc<ConnectionManager>> {
        Some(self.manager.clone())
    }
}
