//! Failures in transit, in words: what a request to a cold storage device
//! met (connection refused, timed out, reset, …) and the message of giving
//! up on it once the retry budget is spent.
//!
//! Why not the error's own text: an HTTP client's error names the request's
//! URL, and a presigned URL (CreateBucket is one) carries its signature and
//! credential in the query string. Every message made here names the
//! endpoint and object instead, and [`redact`] cuts the query string off any
//! URL that still comes through.

use std::error::Error;
use std::io::ErrorKind;
use std::time::Duration;

/// The environment variable bounding how long a request failing in transit
/// is retried, in seconds (the default is
/// [`RetryPolicy::default`](crate::client::RetryPolicy)'s).
pub const RETRY_ENV: &str = "STRATA_CSD_RETRY_SECS";

/// What an I/O error of kind `k` says about the connection, when it says
/// something.
fn io_reason(k: ErrorKind) -> Option<&'static str> {
    Some(match k {
        ErrorKind::ConnectionRefused => "connection refused",
        ErrorKind::TimedOut => "timed out",
        ErrorKind::ConnectionReset => "connection reset",
        ErrorKind::ConnectionAborted => "connection aborted",
        ErrorKind::NotConnected => "not connected",
        ErrorKind::BrokenPipe => "connection broken",
        ErrorKind::UnexpectedEof => "the connection closed before the answer was complete",
        ErrorKind::AddrNotAvailable => "address not available",
        ErrorKind::HostUnreachable => "host unreachable",
        ErrorKind::NetworkUnreachable => "network unreachable",
        ErrorKind::Interrupted => "interrupted",
        _ => return None,
    })
}

/// What the HTTP layers say about a failure, when they say something
/// (checked after the I/O errors below them, which say more).
fn http_reason(e: &(dyn Error + 'static)) -> Option<&'static str> {
    use object_store::client::{HttpError, HttpErrorKind};
    if let Some(r) = e.downcast_ref::<reqwest::Error>() {
        if r.is_timeout() {
            return Some("timed out");
        }
        if r.is_connect() {
            return Some("cannot connect");
        }
    }
    if let Some(h) = e.downcast_ref::<HttpError>() {
        match h.kind() {
            HttpErrorKind::Timeout => return Some("timed out"),
            HttpErrorKind::Connect => return Some("cannot connect"),
            HttpErrorKind::Interrupted => return Some("the connection was interrupted"),
            _ => {}
        }
    }
    if let Some(h) = e.downcast_ref::<hyper::Error>() {
        if h.is_timeout() {
            return Some("timed out");
        }
        if h.is_incomplete_message() {
            return Some("the connection closed before the answer was complete");
        }
        if h.is_closed() || h.is_canceled() {
            return Some("the connection closed");
        }
    }
    None
}

/// What a request that failed in transit with `e` met, in a few words: the
/// kind of its deepest I/O error that says something about the connection
/// (`connection refused`, `timed out`, …), else what the HTTP layers say,
/// else the innermost cause's own text with any URL's query string cut off.
pub fn reason(e: &(dyn Error + 'static)) -> String {
    let mut http = None;
    let mut root = e;
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && let Some(r) = io_reason(io.kind())
        {
            return r.to_string();
        }
        if http.is_none() {
            http = http_reason(c);
        }
        root = c;
        cause = c.source();
    }
    match http {
        Some(r) => r.to_string(),
        None => redact(&root.to_string()),
    }
}

/// `text` with the query string of every URL in it cut off (a presigned
/// URL's signature and credential are there).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["http://", "https://"]
        .iter()
        .filter_map(|s| rest.find(s))
        .min()
    {
        out.push_str(&rest[..at]);
        let url = &rest[at..];
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ']'))
            .unwrap_or(url.len());
        let (u, after) = url.split_at(end);
        out.push_str(u.split(['?', '#']).next().unwrap_or(u));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The message of a request (`what`: `GET`, `CreateBucket`, …) to the cold
/// storage device at `endpoint` given up after `tries` tries in `elapsed`,
/// the last failing with `reason`, under a retry budget of `budget`.
pub fn gave_up(
    what: &str,
    endpoint: &str,
    reason: &str,
    tries: u64,
    elapsed: Duration,
    budget: Duration,
) -> String {
    format!(
        "{what}: the cold storage device at {endpoint} does not answer ({reason}); \
         gave up after {tries} {} in {:.1} s (retry budget {:.1} s, set by {RETRY_ENV})",
        if tries == 1 { "try" } else { "tries" },
        elapsed.as_secs_f64(),
        budget.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request for url (http://127.0.0.1:9/db?X-Amz-Signature=abc)")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_reason_is_the_connections_and_never_the_url() {
        let refused = Outer(std::io::Error::new(
            ErrorKind::ConnectionRefused,
            "tcp connect error",
        ));
        assert_eq!(reason(&refused), "connection refused");
        let dns = Outer(std::io::Error::other("failed to lookup address"));
        assert_eq!(reason(&dns), "failed to lookup address");
        let plain = std::io::Error::other("see http://h:1/b?X-Amz-Credential=k&s=1 (x)");
        assert_eq!(reason(&plain), "see http://h:1/b (x)");
        assert_eq!(
            redact("a https://h/k?sig=1, b http://h/k#f"),
            "a https://h/k b http://h/k"
        );
        let m = gave_up(
            "GET",
            "http://127.0.0.1:9",
            "connection refused",
            7,
            Duration::from_millis(3100),
            Duration::from_secs(4),
        );
        assert_eq!(
            m,
            "GET: the cold storage device at http://127.0.0.1:9 does not answer \
             (connection refused); gave up after 7 tries in 3.1 s (retry budget 4.0 s, \
             set by STRATA_CSD_RETRY_SECS)"
        );
    }
}
