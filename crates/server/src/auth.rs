//! Who may connect: the password file (`--password-file`, checked by
//! SCRAM-SHA-256, as PostgreSQL's default `scram-sha-256` method) and the
//! server's TLS certificate (`--tls-cert`, `--tls-key`).
//!
//! The password file holds one `user:password` per line (`#` starts a
//! comment line). Like `~/.pgpass`, it must be readable by its owner only.
//! At start each password is salted (a random salt per user) and hashed
//! (PBKDF2, 4096 rounds, as SCRAM asks); only the salted hash is kept. A
//! login under a user the file does not name runs the same exchange against
//! a hash nobody knows, so it fails at the same step with the same message
//! ("password authentication failed") and says nothing of which users exist.
//!
//! The SCRAM exchange itself is pgwire's; each connection gets its own
//! handler with its own exchange state ([`crate::startup`]), so concurrent
//! logins never see each other's nonces.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::{SCRAM_ITERATIONS, gen_salted_password};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::PgWireResult;

/// The users of `--password-file`, each with its salt and salted password.
pub struct Passwords {
    users: HashMap<String, Password>,
    /// Stands in for a user the file does not name.
    nobody: Password,
}

impl std::fmt::Debug for Passwords {
    /// Names the users, never their hashes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut users: Vec<&String> = self.users.keys().collect();
        users.sort();
        f.debug_struct("Passwords").field("users", &users).finish()
    }
}

fn salted(password: &str) -> Password {
    let salt: [u8; 16] = rand::random();
    Password::new(
        Some(salt.to_vec()),
        gen_salted_password(password, &salt, SCRAM_ITERATIONS),
    )
}

impl Passwords {
    /// Reads a password file. Refused, with the reason: a file others may
    /// read, a line without `user:`, an empty user or password, a user named
    /// twice, a file naming nobody.
    pub fn load(path: &Path) -> Result<Passwords, String> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 {
                return Err(format!(
                    "{shown}: the password file may be read by others (mode {:o}); \
                     make it its owner's only: chmod 600 {shown}",
                    mode & 0o777
                ));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        Passwords::parse(&text).map_err(|(line, why)| format!("{shown}, line {line}: {why}"))
    }

    /// The users of a password file's text; an error names its line.
    pub fn parse(text: &str) -> Result<Passwords, (usize, String)> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((user, password)) = line.split_once(':') else {
                return Err((n, "expected user:password".into()));
            };
            if user.is_empty() {
                return Err((n, "the user name is empty".into()));
            }
            if password.is_empty() {
                return Err((n, format!("user {user} has an empty password")));
            }
            if users.insert(user.to_owned(), salted(password)).is_some() {
                return Err((n, format!("user {user} is named twice")));
            }
        }
        if users.is_empty() {
            return Err((1, "the file names no user".into()));
        }
        let nobody: [u8; 32] = rand::random();
        let nobody: String = nobody.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Passwords {
            users,
            nobody: salted(&nobody),
        })
    }

    /// How many users the file names.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether the file names nobody (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[async_trait]
impl AuthSource for Passwords {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Ok(login
            .user()
            .and_then(|u| self.users.get(u))
            .unwrap_or(&self.nobody)
            .clone())
    }
}

/// The TLS side of `--tls-cert` and `--tls-key` (PEM files: the
/// certificate chain, then the private key).
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<pgwire::tokio::TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: holds no certificate", cert.display()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| {
            format!(
                "{} and {}: the key does not fit the certificate: {e}",
                cert.display(),
                key.display()
            )
        })?;
    // PostgreSQL 17's direct TLS names the protocol by ALPN.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(pgwire::tokio::TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_file_names_its_users_and_its_bad_lines() {
        let p = Passwords::parse("# who\nalice:s3cret\n\nbob:pa:ss\n").unwrap();
        assert_eq!(p.len(), 2);
        // A colon after the first belongs to the password.
        assert!(p.users.contains_key("bob"));
        assert_eq!(format!("{p:?}"), r#"Passwords { users: ["alice", "bob"] }"#);
        for (text, line, why) in [
            ("alice\n", 1, "expected user:password"),
            ("a:1\n:x\n", 2, "the user name is empty"),
            ("a:1\nb:\n", 2, "user b has an empty password"),
            ("a:1\nb:2\na:3\n", 3, "user a is named twice"),
            ("# nobody\n", 1, "the file names no user"),
        ] {
            let got = Passwords::parse(text).err();
            assert_eq!(got, Some((line, why.to_string())), "{text:?}");
        }
    }

    #[test]
    fn salts_differ_and_unknown_users_get_a_hash_nobody_knows() {
        let p = Passwords::parse("a:same\nb:same\n").unwrap();
        let (a, b) = (&p.users["a"], &p.users["b"]);
        assert_ne!(a.salt(), b.salt());
        assert_ne!(a.password(), b.password());
        assert_eq!(
            a.password(),
            gen_salted_password("same", a.salt().unwrap(), SCRAM_ITERATIONS)
        );
        assert_ne!(p.nobody.password(), a.password());
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "a:b\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Passwords::load(&path).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Passwords::load(&path).unwrap().len(), 1);
        let e = tls_acceptor(&path, &path).err().unwrap();
        assert!(e.contains("holds no certificate"), "{e}");
    }
}
