//! How to reach etcd: endpoints, TLS files and the key prefix, as kube-apiserver's
//! `--etcd-servers`, `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile` and `--etcd-prefix`.

use std::path::PathBuf;
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};

use crate::{Error, Result};

/// Where the etcd backend keeps its data.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs of the etcd members (`http://127.0.0.1:2379`, or `https://` with TLS).
    pub endpoints: Vec<String>,
    /// CA bundle that signed the members' certificates.
    pub ca_file: Option<PathBuf>,
    /// Client certificate (with `key_file`) for members that require client authentication.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key.
    pub key_file: Option<PathBuf>,
    /// The etcd key prefix standing for the store root (`--etcd-prefix`, default `/registry`).
    pub prefix: String,
    /// The root every store key starts with (`/registry` for the API server's keys; empty
    /// stores any key starting with `/`).
    pub store_root: String,
    /// How often etcd's history is compacted (`--etcd-compaction-interval`; upstream: 5m).
    /// None leaves etcd's history alone.
    pub compaction_interval: Option<Duration>,
}

impl EtcdConfig {
    /// The API server's layout on `endpoints`: store keys `/registry/...` under etcd's
    /// `/registry/...`, no TLS.
    pub fn new(endpoints: Vec<String>) -> EtcdConfig {
        EtcdConfig {
            endpoints,
            ca_file: None,
            cert_file: None,
            key_file: None,
            prefix: "/registry".into(),
            store_root: "/registry".into(),
            compaction_interval: Some(Duration::from_secs(300)),
        }
    }

    fn tls(&self) -> Result<Option<TlsOptions>> {
        if self.ca_file.is_none() && self.cert_file.is_none() && self.key_file.is_none() {
            return Ok(None);
        }
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|e| Error::Io(format!("reading {}: {e}", path.display())))
        };
        let mut tls = TlsOptions::new();
        if let Some(ca) = &self.ca_file {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            }
            (None, None) => {}
            _ => {
                return Err(Error::Io(
                    "--etcd-certfile and --etcd-keyfile go together".into(),
                ))
            }
        }
        Ok(Some(tls))
    }

    /// Connects to the members (requests are balanced over them; a dead member's requests
    /// fail over to the others).
    pub(crate) async fn connect(&self) -> Result<Client> {
        if self.endpoints.is_empty() {
            return Err(Error::Io("no etcd endpoints given".into()));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        if let Some(tls) = self.tls()? {
            options = options.with_tls(tls);
        }
        Client::connect(&self.endpoints, Some(options))
            .await
            .map_err(|e| etcd_error("connecting to etcd", e))
    }
}

/// An etcd client error as the store reports it.
pub(crate) fn etcd_error(context: &str, err: etcd_client::Error) -> Error {
    Error::Io(format!("{context}: {err}"))
}
