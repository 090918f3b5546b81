//! berth's Kubernetes API server.
//!
//! It serves the Kubernetes REST API over the store of `berth-store`: discovery, OpenAPI stubs,
//! CRUD with optimistic concurrency, list with selectors and paging, watch, merge/JSON/strategic
//! patches, server-side Tables, the `binding`/`eviction`/`status`/`scale` subresources, the RBAC
//! API (stored and validated, not enforced: one admin identity may do everything), per-kind
//! strategies (defaults, validation, immutable fields, graceful deletion: `strategy/`) and an
//! admission chain of named plugins (`admission/`: NamespaceLifecycle, Priority,
//! DefaultTolerationSeconds), each enabled, disabled or configured by name
//! ([`ApiServer::with_admission`]). Request bodies are JSON, YAML or Kubernetes protobuf. It is
//! not a scheduler or a controller: those are clients of this API, in process through
//! [`ApiServer::in_process_router`] or over HTTPS.
//!
//! Modules depend downward only: the router (`server`) → handlers (`objects`, `subresources`,
//! `watch`, `rbac` reviews, `node_proxy`) → `deletion` → `strategy` → `admission` →
//! `context`, `response`, `request`, `patch`, `codec`, `path`, `error`.
//!
//! ```no_run
//! # async fn demo() {
//! use berth_apiserver::{ApiServer, Clock};
//! let server = ApiServer::new(berth_store::Store::memory(), Clock::system(), "127.0.0.1:6443".into());
//! server.bootstrap().await.unwrap();
//! let router = server.in_process_router(); // a tower Service: kube::Client::new(router, "default")
//! # }
//! ```

mod admission;
mod codec;
mod context;
mod deletion;
mod error;
mod node_proxy;
mod objects;
mod patch;
mod path;
mod protobuf;
mod rbac;
mod rbac_bootstrap;
mod request;
mod response;
mod selectors;
mod server;
mod strategy;
mod strict;
mod subresources;
#[cfg(test)]
mod testing;
pub mod tls;
mod watch;

pub use admission::{AdmissionConfig, ConfigError as AdmissionConfigError};
pub use berth_core::clock::Clock;
pub use error::ApiError;

use admission::{AdmissionCache, Chain, Handles};
use berth_store::Store;
use context::{Ctx, Inner};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How many revisions of history the store keeps for watches and paged lists.
const HISTORY_REVISIONS: i64 = 200_000;

/// The API server: state shared by its routers.
#[derive(Clone)]
pub struct ApiServer {
    store: Store,
    clock: Clock,
    address: String,
    /// What admission plugins are built with (shared by every chain this server builds).
    handles: Handles,
    admission: Arc<Chain>,
    caches: Arc<Caches>,
}

/// What the handlers keep decoded or encoded between requests: one per server, shared by all
/// of its routers (the stored revisions they are keyed by are this server's store's).
#[derive(Default)]
pub(crate) struct Caches {
    /// Watch events, decoded and encoded once for every watch that sends them.
    pub events: watch::EventCache,
}

impl ApiServer {
    /// A server over `store`, with the default admission chain; `address` is what legacy
    /// discovery advertises.
    pub fn new(store: Store, clock: Clock, address: String) -> ApiServer {
        let handles = Handles {
            store: store.clone(),
            cache: Arc::new(AdmissionCache::default()),
            priority_disabled: Default::default(),
        };
        let admission = Chain::build(&handles, &AdmissionConfig::default())
            .expect("the default admission chain needs no configuration");
        ApiServer {
            store,
            clock,
            address,
            handles,
            admission: Arc::new(admission),
            caches: Default::default(),
        }
    }

    /// The same server with the admission chain `config` asks for (a master config's
    /// `admissionConfig.pluginConfig`). Routers made before keep the chain they had.
    pub fn with_admission(
        mut self,
        config: &AdmissionConfig,
    ) -> Result<ApiServer, AdmissionConfigError> {
        self.admission = Arc::new(Chain::build(&self.handles, config)?);
        Ok(self)
    }

    /// The admission plugins that run, in order.
    pub fn admission_plugins(&self) -> Vec<&'static str> {
        self.admission.names()
    }

    /// Turns pod priority off or on (seed 16.6.6, `disablePreemption` in a master config): while
    /// off, a new pod naming a priority class is rejected; existing pods keep their fields.
    pub fn set_pod_priority_disabled(&self, disabled: bool) {
        self.handles
            .priority_disabled
            .store(disabled, std::sync::atomic::Ordering::Relaxed);
    }

    fn ctx(&self, token: Option<String>) -> Ctx {
        Arc::new(Inner {
            store: self.store.clone(),
            clock: self.clock.clone(),
            address: self.address.clone(),
            token,
            admission: self.admission.clone(),
            caches: self.caches.clone(),
        })
    }

    /// The router for in-process clients (no authentication).
    pub fn in_process_router(&self) -> axum::Router {
        server::router(self.ctx(None))
    }

    /// The router for the network listener: every request needs `Authorization: Bearer <token>`.
    pub fn authenticated_router(&self, token: String) -> axum::Router {
        server::router(self.ctx(Some(token)))
    }

    /// Creates what exists in every cluster: the four namespaces, the two system priority
    /// classes and the bootstrap cluster roles and bindings. Existing objects are left as they
    /// are.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        let ts = self.clock.timestamp();
        let mut objects = Vec::new();
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            objects.push((("", "v1", "namespaces"), None, ns.to_string(), json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ts, "labels": {"kubernetes.io/metadata.name": ns}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})));
        }
        for (name, value) in [
            admission::SYSTEM_NODE_CRITICAL,
            admission::SYSTEM_CLUSTER_CRITICAL,
        ] {
            objects.push((("scheduling.k8s.io", "v1", "priorityclasses"), None, name.to_string(), json!({
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ts, "generation": 1},
                "value": value, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority",
                "description": "Used for system critical pods that must not be moved from their current node."})));
        }
        for (plural, name, obj) in rbac_bootstrap::objects(&ts, || uuid::Uuid::new_v4().to_string())
        {
            objects.push(((rbac::GROUP, "v1", plural), None, name, obj));
        }
        for ((g, v, plural), ns, name, obj) in objects {
            let rt = berth_api::registry::find(g, v, plural).ok_or(ApiError::NoRoute)?;
            let key = path::key(rt, ns, &name);
            match self.store.create(&key, codec::encode(&obj)).await {
                Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => {}
                Err(e) => return Err(ApiError::Internal(e.to_string())),
            }
        }
        Ok(())
    }

    /// Compacts the store's history every minute, keeping the last revisions.
    pub fn spawn_compactor(&self) {
        let store = self.store.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                let target = store.current_revision() - HISTORY_REVISIONS;
                if target > store.compacted_revision() {
                    if let Err(e) = store.compact(target) {
                        tracing::warn!(error = %e, "compaction failed");
                    }
                }
            }
        });
    }
}
