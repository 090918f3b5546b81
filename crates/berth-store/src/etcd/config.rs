//! How to reach etcd: endpoints, TLS files and the key prefix, as kube-apiserver's
//! `--etcd-servers`, `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile` and `--etcd-prefix`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, KvClient, TlsOptions};

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

    /// A client of each member (connected lazily), used one at a time: a member that cannot
    /// be reached is left for the next (see [`Members`]).
    pub(crate) async fn members(&self) -> Result<Members> {
        let mut clients = Vec::with_capacity(self.endpoints.len());
        for endpoint in &self.endpoints {
            clients.push(self.connect_to(std::slice::from_ref(endpoint)).await?);
        }
        if clients.is_empty() {
            return Err(Error::Io("no etcd endpoints given".into()));
        }
        Ok(Members {
            kv: clients.iter().map(Client::kv_client).collect(),
            clients,
            current: AtomicUsize::new(0),
        })
    }

    /// Connects to the members as one balanced client (the test fixture's readiness probe).
    #[cfg(any(test, feature = "conformance"))]
    pub(crate) async fn connect(&self) -> Result<Client> {
        self.connect_to(&self.endpoints).await
    }

    async fn connect_to(&self, endpoints: &[String]) -> Result<Client> {
        if endpoints.is_empty() {
            return Err(Error::Io("no etcd endpoints given".into()));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        if let Some(tls) = self.tls()? {
            options = options.with_tls(tls);
        }
        Client::connect(endpoints, Some(options))
            .await
            .map_err(|e| etcd_error("connecting to etcd", e))
    }
}

/// An etcd client error as the store reports it.
pub(crate) fn etcd_error(context: &str, err: etcd_client::Error) -> Error {
    Error::Io(format!("{context}: {err}"))
}

/// One client per etcd member, the current one used for everything. Like etcd's own Go client,
/// a request that could not reach its member moves on to the next: tonic's balancer would keep
/// sending to a dead member until its connection attempts give up.
pub(crate) struct Members {
    clients: Vec<Client>,
    /// Each member's KV client, made once: a write clones only this, not the whole `Client`
    /// (eight gRPC clients, each a channel to clone and drop again), which showed in profiles.
    kv: Vec<KvClient>,
    current: AtomicUsize,
}

impl Members {
    /// The member in use, and its position (for [`Members::failed`]).
    pub(crate) fn current(&self) -> (usize, Client) {
        let at = self.current.load(Ordering::Acquire) % self.clients.len();
        (at, self.clients[at].clone())
    }

    /// The KV client of the member in use, and its position (for [`Members::failed`]).
    pub(crate) fn current_kv(&self) -> (usize, KvClient) {
        let at = self.current.load(Ordering::Acquire) % self.kv.len();
        (at, self.kv[at].clone())
    }

    /// Moves on from the member at `at`, unless another request already has.
    pub(crate) fn failed(&self, at: usize) {
        let next = (at + 1) % self.clients.len();
        let _ = self
            .current
            .compare_exchange(at, next, Ordering::AcqRel, Ordering::Acquire);
    }

    /// How many members there are.
    pub(crate) fn len(&self) -> usize {
        self.clients.len()
    }
}

/// Whether an error says the member is unreachable or without a leader (try another member).
pub(crate) fn unavailable(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(status) => status.code() == tonic::Code::Unavailable,
        _ => false,
    }
}

/// Whether a failed request certainly never reached etcd (safe to send again elsewhere).
pub(crate) fn unsent(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(status) => {
            status.code() == tonic::Code::Unavailable
                && (status.message().contains("connect") || status.message().contains("no leader"))
        }
        _ => false,
    }
}
