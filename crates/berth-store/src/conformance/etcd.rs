//! The conformance fixture for the etcd backend: one real etcd member per test, started on
//! loopback on free ports in a temporary directory and killed when the test ends.
//!
//! Where etcd legitimately differs from the embedded stores, the suite adapts rather than the
//! backend pretending: a fresh etcd is at revision 1, not 0, and the same member serves every
//! store a test opens (each under a prefix of its own), so the checks read revisions relative
//! to the store's revision when opened. A reopen keeps etcd's data, but this fixture gives each
//! open a fresh prefix, so the reopen and `kill -9` checks (the durability of etcd itself) are
//! left to the end-to-end HA test.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use super::{Fixture, Persistence};
use crate::{EtcdConfig, Store};

/// The etcd binary the fixture runs (`ETCD_BIN`, else `etcd` on the PATH).
fn etcd_binary() -> String {
    std::env::var("ETCD_BIN").unwrap_or_else(|_| "etcd".into())
}

fn etcd_installed() -> bool {
    Command::new(etcd_binary())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

/// One etcd member on loopback, killed on drop.
pub struct LocalEtcd {
    child: Child,
    /// The client URL.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl LocalEtcd {
    /// Starts a single-member etcd and waits until it answers.
    pub fn start() -> LocalEtcd {
        let dir = tempfile::tempdir().expect("tempdir");
        let (client, peer) = (free_port(), free_port());
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = Command::new(etcd_binary())
            .args(["--name", "conformance", "--data-dir"])
            .arg(dir.path().join("etcd"))
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("conformance={peer_url}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd");
        let mut server = LocalEtcd {
            child,
            url,
            _dir: dir,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            for _ in 0..200 {
                if let Ok(Some(status)) = self.child.try_wait() {
                    panic!("etcd exited at start: {status}");
                }
                let config = EtcdConfig::new(vec![self.url.clone()]);
                if let Ok(mut client) = config.connect().await {
                    if client.get("health", None).await.is_ok() {
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("etcd at {} did not answer within 10 s", self.url);
        });
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The etcd backend on a member of its own, started at the first open.
#[derive(Default)]
pub struct EtcdFixture {
    server: OnceLock<LocalEtcd>,
    opened: AtomicUsize,
}

impl Fixture for EtcdFixture {
    fn open(&self, _dir: &Path) -> crate::Result<Store> {
        let server = self.server.get_or_init(LocalEtcd::start);
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        let config = EtcdConfig {
            prefix: format!("/conformance/{n}"),
            store_root: String::new(),
            // A compaction round writes a key, which would take revisions the checks count.
            compaction_interval: None,
            ..EtcdConfig::new(vec![server.url.clone()])
        };
        Store::etcd(&config)
    }

    fn persistence(&self) -> Persistence {
        Persistence::Nothing
    }

    fn model_cases(&self) -> (u32, usize) {
        (6, 30)
    }

    fn skip_reason(&self) -> Option<String> {
        if etcd_installed() || std::env::var_os("CI").is_some() {
            return None;
        }
        Some(format!(
            "`{}` is not installed (apt-get install etcd-server); CI runs these",
            etcd_binary()
        ))
    }
}
