//! A connection's message loop: pgwire's own (`process_socket`), with one
//! difference — a message pgwire cannot decode is answered, not panicked on.
//!
//! pgwire 0.41's decoders trust the counts and lengths inside a message's
//! body: a Parse, Bind, Execute, Describe, Close or CopyData whose body ends
//! before its fields do makes `bytes` panic ("advance out of bounds") in the
//! connection's task (found by the structured protocol fuzzing in
//! `tests/fuzz.rs`). The task died, the client saw its connection drop with
//! no reason and the server's stderr got a panic report per message. Here
//! the decoding (the poll of the framed socket, which runs nothing but
//! reading and decoding) is contained: a panic in it becomes a FATAL
//! ErrorResponse with SQLSTATE 08P01 (protocol violation) naming the
//! decoder's complaint, then the connection closes, as PostgreSQL does with
//! a malformed message; the other connections never notice. Such panics are
//! not reported on stderr (the hook installed here stays quiet while a
//! decode runs and hands every other panic to the hook before it).

use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{
    MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_util::codec::Framed;

use crate::connection::{Handlers, Prepared};

/// How long a connection may take to finish its startup (pgwire's own).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

thread_local! {
    /// Set while this thread decodes a message, so the panic hook is quiet.
    static DECODING: Cell<bool> = const { Cell::new(false) };
}

/// Serves a TCP connection (TLS negotiated first when offered).
pub async fn serve_tcp(
    socket: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: Handlers,
) -> std::io::Result<()> {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    let framed = tokio::select! {
        _ = &mut startup => return Ok(()),
        framed = negotiate_tls::<Prepared>(socket, tls) => framed?,
    };
    // None: a direct TLS handshake without a certificate to answer it.
    let Some(mut framed) = framed else {
        return Ok(());
    };
    serve(&mut framed, startup, handlers).await
}

/// Serves a connection on the Unix socket.
pub async fn serve_unix(socket: UnixStream, handlers: Handlers) -> std::io::Result<()> {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    // No peer address on a Unix socket: PostgreSQL's convention, as pgwire's.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let client = DefaultClient::<Prepared>::new(addr, false);
    let mut framed = Framed::new(
        MaybeTls::Unix(socket),
        PgWireMessageServerCodec::new(client),
    );
    framed.set_state(PgWireConnectionState::AwaitingStartup);
    serve(&mut framed, startup, handlers).await
}

/// The message loop: each message decoded (contained), then handled by
/// pgwire's `process_message` with the connection's handlers, its errors
/// answered by `process_error`, until the client terminates or goes.
/// (The handlers are named by their types, not through
/// `PgWireServerHandlers`, whose opaque return types would hide the
/// statement type the codec must share with them; strata keeps pgwire's
/// default error handler, which changes nothing.)
async fn serve<S>(
    socket: &mut Framed<S, PgWireMessageServerCodec<Prepared>>,
    mut startup: Pin<&mut tokio::time::Sleep>,
    handlers: Handlers,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    quiet_decoder_panics();
    let session = handlers.connection.clone();
    let startup_handler = handlers.startup.clone();
    let cancel = handlers.shared.cancel.clone();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = Contained(socket.next());
        let decoded = if starting {
            tokio::select! {
                _ = &mut startup => return Ok(()),
                decoded = next => decoded,
            }
        } else {
            next.await
        };
        let msg = match decoded {
            Ok(Some(Ok(msg))) => msg,
            // The client went, or sent what pgwire refuses to frame.
            Ok(Some(Err(_)) | None) => return Ok(()),
            Err(complaint) => {
                let info = ErrorInfo::new(
                    "FATAL".to_string(),
                    "08P01".to_string(),
                    format!("invalid frontend message: {complaint}"),
                );
                let _ = socket
                    .send(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await;
                return socket.close().await;
            }
        };
        // Terminate: the client is going and waits for the socket to close.
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let extended_message = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        if let Err(e) = process_message(
            msg,
            socket,
            startup_handler.clone(),
            session.clone(),
            session.clone(),
            session.clone(),
            cancel.clone(),
        )
        .await
        {
            process_error(socket, e, extended_message).await?;
        }
    }
}

/// A future whose polls (reading and decoding a message) may panic: the
/// panic's message is its error.
struct Contained<F>(F);

impl<F: Future + Unpin> Future for Contained<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        DECODING.with(|d| d.set(true));
        let polled = catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx)));
        DECODING.with(|d| d.set(false));
        match polled {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "undecodable".to_string()))),
        }
    }
}

/// Installs (once per process) a panic hook that says nothing about a panic
/// while a message is decoded (it is answered to its client) and passes
/// every other panic to the hook that was there before.
fn quiet_decoder_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !DECODING.with(Cell::get) {
                before(info);
            }
        }));
    });
}
