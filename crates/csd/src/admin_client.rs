//! `strata csd metrics`: reads (and optionally resets) a running server's
//! `/_csd/metrics` over plain HTTP/1.1 with hyper's client connection — the
//! admin routes are unsigned JSON, so no S3 client is needed.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use strata_storage::exit;
use tokio::net::TcpStream;

/// What went wrong talking to a server, naming the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("endpoint {0:?}: expected http://HOST:PORT")]
    BadEndpoint(String),
    #[error("{endpoint}: {message}")]
    Request { endpoint: String, message: String },
    #[error("{endpoint}{path}: HTTP {status}: {body}")]
    Status {
        endpoint: String,
        path: String,
        status: StatusCode,
        body: String,
    },
}

impl AdminError {
    /// This error's exit code (`strata_storage::exit`): an endpoint that is
    /// not one is bad usage; a server that cannot be reached or refuses is
    /// an operational failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            AdminError::BadEndpoint(_) => exit::USAGE,
            AdminError::Request { .. } | AdminError::Status { .. } => exit::FAILURE,
        }
    }

    /// An [`exit::Classifier`] for this type.
    pub fn classify(e: &(dyn std::error::Error + 'static)) -> Option<u8> {
        e.downcast_ref::<AdminError>().map(AdminError::exit_code)
    }
}

fn authority(endpoint: &str) -> Result<&str, AdminError> {
    let rest = endpoint
        .strip_prefix("http://")
        .ok_or_else(|| AdminError::BadEndpoint(endpoint.into()))?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        return Err(AdminError::BadEndpoint(endpoint.into()));
    }
    Ok(authority)
}

async fn call(endpoint: &str, method: Method, path: &str) -> Result<String, AdminError> {
    let host = authority(endpoint)?;
    let fail = |message: String| AdminError::Request {
        endpoint: endpoint.to_string(),
        message,
    };
    let stream = TcpStream::connect(host)
        .await
        .map_err(|e| fail(format!("cannot connect: {e}")))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
            .await
            .map_err(|e| fail(format!("HTTP handshake: {e}")))?;
    let driver = tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, host)
        .body(Empty::new())
        .map_err(|e| fail(e.to_string()))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| fail(format!("{path}: {e}")))?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| fail(format!("{path}: reading the body: {e}")))?;
    driver.abort();
    let body = String::from_utf8_lossy(&body.to_bytes()).into_owned();
    if !status.is_success() {
        return Err(AdminError::Status {
            endpoint: endpoint.into(),
            path: path.into(),
            status,
            body,
        });
    }
    Ok(body)
}

/// The server's metrics JSON; with `reset`, zeroes them first and returns
/// the metrics as they were just before.
pub fn metrics(endpoint: &str, reset: bool) -> Result<String, AdminError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AdminError::Request {
            endpoint: endpoint.into(),
            message: format!("cannot start a runtime: {e}"),
        })?;
    runtime.block_on(async {
        let before = call(endpoint, Method::GET, "/_csd/metrics").await?;
        if reset {
            call(endpoint, Method::POST, "/_csd/reset").await?;
        }
        Ok(before)
    })
}
