//! berth's Kubernetes API server.
//!
//! It serves the Kubernetes REST API over the store of `berth-store`: discovery, OpenAPI v2/v3 with schemas,
//! CRUD with optimistic concurrency, list with selectors and paging, watch, merge/JSON/strategic
//! patches, server-side Tables, the `binding`/`eviction`/`status`/`scale` subresources, the RBAC
//! API enforced on the network listener (`authn`: certificates, tokens, anonymous; `authz`: an
//! RBAC index kept current from the store), per-kind
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

mod access_log;
mod admission;
mod apiextensions;
mod apiregistration;
pub mod authn;
pub mod authorizer;
mod authz;
mod codec;
mod compaction;
mod context;
mod crd_lifecycle;
mod deletion;
mod error;
mod event_view;
pub mod flowcontrol;
mod follow;
#[cfg(test)]
mod fuzz;
mod health;
mod hpa_view;
pub mod listener;
mod managed;
mod metrics;
mod metrics_api;
mod node_proxy;
mod objects;
mod oidc;
mod openapi_endpoint;
mod openshift;
pub mod overload;
mod patch;
mod path;
mod protobuf;
mod rbac;
mod rbac_bootstrap;
mod request;
mod response;
mod root_paths;
mod selectors;
mod server;
mod service_allocation;
mod status_write;
mod strategy;
mod strict;
mod subresources;
#[cfg(test)]
mod testing;
pub mod tls;
pub mod user;
mod watch;

pub use admission::{AdmissionConfig, ConfigError as AdmissionConfigError};
pub use berth_core::clock::Clock;
pub use error::ApiError;
pub use metrics::Source as MetricsSource;

use admission::{AdmissionCache, Chain, Handles};
use berth_store::Store;
use context::{Ctx, Inner};
use follow::StoreFollower;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use strategy::service::{IpRange, PortRange, ServiceAllocator};

/// The service ranges of a server built without [`ApiServer::with_service_ranges`].
fn default_service_ranges() -> ServiceAllocator {
    use strategy::service::{DEFAULT_CLUSTER_IP_RANGE, DEFAULT_NODE_PORT_RANGE};
    match (
        IpRange::parse(DEFAULT_CLUSTER_IP_RANGE),
        PortRange::parse(DEFAULT_NODE_PORT_RANGE),
    ) {
        (Ok(ips), Ok(ports)) => ServiceAllocator::new(ips, ports),
        _ => unreachable!("the default service ranges parse"),
    }
}

/// How many revisions of history the store keeps for watches and paged lists. The history is
/// held in memory: under churn, memory grows until it is full, so it is bounded to what fills in
/// well under a minute at berth's write rates (~2,000/s), and memory stays flat after that. A
/// watch resumed from further back gets 410 Gone and relists, as from upstream's watch cache.
/// The store also bounds the history's bytes as it writes ([`berth_store::HISTORY_BYTES`]), so
/// large objects rewritten in a loop cannot fill memory before this count is reached.
const HISTORY_REVISIONS: i64 = 50_000;

/// How often the history is compacted to [`HISTORY_REVISIONS`].
const COMPACTION_INTERVAL: Duration = Duration::from_secs(10);

/// The API server: state shared by its routers.
#[derive(Clone)]
pub struct ApiServer {
    store: Store,
    clock: Clock,
    address: String,
    /// What admission plugins are built with (shared by every chain this server builds).
    handles: Handles,
    admission: Arc<Chain>,
    /// Webhooks and ValidatingAdmissionPolicies, following the store.
    dynamic: Arc<admission::dynamic::Dynamic>,
    caches: Arc<Caches>,
    services: Arc<ServiceAllocator>,
    /// The RBAC authorizer; its index follows the store once the network listener is made.
    rbac: authz::Rbac,
    rbac_following: Arc<std::sync::atomic::AtomicBool>,
    /// The kinds of the stored CustomResourceDefinitions.
    custom: Arc<apiextensions::CustomKinds>,
    /// The stored APIServices (the aggregation layer's routing).
    apiservices: Arc<apiregistration::ApiServices>,
    /// The client CA and the front proxy's CA, published in
    /// `kube-system/extension-apiserver-authentication` (see [`ApiServer::with_front_proxy`]).
    extension_authentication: Option<Arc<(String, String)>>,
    /// `--token-auth-file`: token → user.
    tokens: Arc<std::collections::HashMap<String, user::UserInfo>>,
    /// The ServiceAccount token signing key (`<data-dir>/sa.key`).
    service_account_keys: Option<Arc<authn::service_account::Keys>>,
    /// What `/metrics` serves; shared by every router of this server.
    metrics: Arc<metrics::ApiMetrics>,
    /// `--service-account-extend-token-expiration`: kubelets' hour-long tokens last a year.
    extend_token_expiration: bool,
    /// `--anonymous-auth`: requests without credentials are `system:anonymous` (default), or 401.
    anonymous_auth: bool,
    /// The control loops that are down, which `/readyz` reports (see [`ApiServer::loop_health`]).
    loop_health: berth_core::loop_health::LoopHealth,
    /// The network listener's in-flight seats, shared by its routers.
    inflight: Arc<overload::InflightLimiter>,
    /// `--request-timeout`.
    request_timeout: Option<Duration>,
    /// `--max-requests-inflight` plus `--max-mutating-requests-inflight`: the seats API
    /// Priority and Fairness shares among its priority levels.
    server_concurrency: u32,
    /// `--enable-priority-and-fairness`: the network listener's requests pass API Priority and
    /// Fairness (default), or only the in-flight limits.
    priority_and_fairness: bool,
    /// Network clients' requests being served, which [`ApiServer::drain`] waits for.
    network_requests: Arc<std::sync::atomic::AtomicUsize>,
}

/// How often [`ApiServer::drain`] looks at the requests in flight.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// The seats API Priority and Fairness shares (upstream's server concurrency limit: the sum
/// of the two in-flight limits; 0 in one of them still leaves the other's).
fn server_concurrency(limits: &overload::RequestLimits) -> u32 {
    let sum = limits.max_requests_inflight + limits.max_mutating_requests_inflight;
    u32::try_from(sum.max(1)).unwrap_or(u32::MAX)
}

/// Signs legacy ServiceAccount tokens for the token controller (upstream gives
/// kube-controller-manager the private key; berth's controllers get this handle instead).
#[derive(Clone)]
pub struct LegacyTokenSigner(Arc<authn::service_account::Keys>);

impl LegacyTokenSigner {
    /// A token for ServiceAccount `name` (uid `uid`) of `namespace`, kept in Secret `secret`.
    pub fn sign(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        secret: &str,
    ) -> Result<String, String> {
        let sa = authn::service_account::Ref {
            name: name.into(),
            uid: uid.into(),
        };
        self.0.sign(&authn::service_account::Claims::legacy(
            namespace, &sa, secret,
        ))
    }
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
        let rbac = authz::Rbac::default();
        let handles = Handles {
            store: store.clone(),
            cache: Arc::new(AdmissionCache::default()),
            priority_disabled: Default::default(),
            authorizer: Arc::new(rbac.clone()),
        };
        let admission = Chain::build(&handles, &AdmissionConfig::default())
            .expect("the default admission chain needs no configuration");
        ApiServer {
            store,
            clock,
            address,
            handles,
            admission: Arc::new(admission),
            dynamic: Arc::new(admission::dynamic::Dynamic::new()),
            caches: Default::default(),
            services: Arc::new(default_service_ranges()),
            rbac,
            rbac_following: Default::default(),
            custom: Default::default(),
            apiservices: Default::default(),
            extension_authentication: None,
            tokens: Default::default(),
            service_account_keys: None,
            metrics: Default::default(),
            extend_token_expiration: true,
            anonymous_auth: true,
            loop_health: Default::default(),
            inflight: Arc::new(overload::InflightLimiter::new(
                &overload::RequestLimits::default(),
            )),
            request_timeout: overload::RequestLimits::default().request_timeout,
            server_concurrency: server_concurrency(&overload::RequestLimits::default()),
            priority_and_fairness: true,
            network_requests: Default::default(),
        }
    }

    /// Waits, at most `limit`, until no network client's request is being served (watches and
    /// other long-running requests aside): what a shutdown does before the process exits, so
    /// that a request in flight gets its answer, as kube-apiserver drains on SIGTERM. Returns
    /// how many were still in flight at the limit.
    pub async fn drain(&self, limit: Duration) -> usize {
        use std::sync::atomic::Ordering;
        let deadline = self.clock.instant() + limit;
        loop {
            let in_flight = self.network_requests.load(Ordering::SeqCst);
            if in_flight == 0 || self.clock.instant() >= deadline {
                return in_flight;
            }
            tokio::time::sleep(DRAIN_POLL).await;
        }
    }

    /// The same server treating requests without credentials as `system:anonymous` in
    /// `system:unauthenticated`, whom RBAC then authorizes (default), or refusing them with 401,
    /// as kube-apiserver's `--anonymous-auth`.
    pub fn with_anonymous_auth(mut self, enabled: bool) -> ApiServer {
        self.anonymous_auth = enabled;
        self
    }

    /// The same server with `limits` (`--max-requests-inflight`,
    /// `--max-mutating-requests-inflight`, `--request-timeout`). The in-flight limits apply to
    /// the network listener's routers made after; the timeout to every router made after.
    pub fn with_request_limits(mut self, limits: overload::RequestLimits) -> ApiServer {
        self.inflight = Arc::new(overload::InflightLimiter::new(&limits));
        self.request_timeout = limits.request_timeout;
        self.server_concurrency = server_concurrency(&limits);
        self
    }

    /// The same server with API Priority and Fairness on (default) or off, as kube-apiserver's
    /// `--enable-priority-and-fairness`: on, the network listener's requests are classified by
    /// the FlowSchemas and wait in their priority level's fair queues for one of the
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight` seats; off, only the two
    /// in-flight limits apply.
    pub fn with_priority_and_fairness(mut self, enabled: bool) -> ApiServer {
        self.priority_and_fairness = enabled;
        self
    }

    /// The same server extending (default) or not the pod-bound tokens kubelets ask for with
    /// `expirationSeconds: 3607` to a year, as kube-apiserver's
    /// `--service-account-extend-token-expiration`.
    pub fn with_extend_token_expiration(mut self, extend: bool) -> ApiServer {
        self.extend_token_expiration = extend;
        self
    }

    /// The handle the supervisor of in-process control loops marks a loop down and up on:
    /// while any is down, `/readyz` fails its `poststarthook/berth-control-loops` check.
    pub fn loop_health(&self) -> berth_core::loop_health::LoopHealth {
        self.loop_health.clone()
    }

    /// Adds another in-process component's metrics (Prometheus text) to what `/metrics`
    /// serves, rendered at each scrape; a second source of the same component `name` replaces
    /// the first.
    pub fn add_metrics_source(&self, name: &'static str, source: MetricsSource) {
        self.metrics.add_source(name, source);
    }

    /// The same server issuing and accepting ServiceAccount tokens signed with the RSA key at
    /// `path`, created (owner-only) at the first start and kept, so tokens outlive restarts.
    pub fn with_service_account_key_file(
        mut self,
        path: &std::path::Path,
    ) -> Result<ApiServer, authn::service_account::KeyError> {
        self.service_account_keys = Some(Arc::new(authn::service_account::Keys::load_or_create(
            path,
        )?));
        Ok(self)
    }

    /// The same server with an in-memory ServiceAccount signing key (tests).
    pub fn with_service_account_keys(mut self, keys: authn::service_account::Keys) -> ApiServer {
        self.service_account_keys = Some(Arc::new(keys));
        self
    }

    /// Signs a legacy ServiceAccount token (what the token controller puts in a
    /// `kubernetes.io/service-account-token` Secret), if the server has a signing key.
    pub fn legacy_token_signer(&self) -> Option<LegacyTokenSigner> {
        self.service_account_keys.clone().map(LegacyTokenSigner)
    }

    /// The same server also accepting the bearer tokens of an upstream static token file
    /// (`--token-auth-file`: CSV `token,user,uid,"group1,group2"`).
    pub fn with_token_auth_file(mut self, path: &std::path::Path) -> Result<ApiServer, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("token file {:?}: {e}", path.display().to_string()))?;
        let tokens = authn::token_file::parse(&path.display().to_string(), &text)
            .map_err(|e| e.to_string())?;
        self.tokens = Arc::new(tokens);
        Ok(self)
    }

    /// The same server presenting the front proxy's client certificate to extension API
    /// servers when it forwards a request to them, and publishing, as kube-apiserver does, how
    /// they authenticate berth's requests in ConfigMap `kube-system/extension-apiserver-
    /// authentication`: `client_ca_pem` (the CA of its users' client certificates) and the
    /// front proxy's CA with the `X-Remote-*` header names. Call it before any router is made.
    pub fn with_front_proxy(
        mut self,
        proxy: &tls::FrontProxy,
        client_ca_pem: &str,
    ) -> Result<ApiServer, String> {
        let identity =
            apiregistration::proxy::ClientIdentity::from_pem(&proxy.cert_pem, &proxy.key_pem)?;
        self.apiservices.set_client_identity(identity);
        self.extension_authentication =
            Some(Arc::new((client_ca_pem.to_string(), proxy.ca_pem.clone())));
        Ok(self)
    }

    /// Writes `kube-system/extension-apiserver-authentication` (and the Role that lets an
    /// extension server read it), as kube-apiserver's post-start hook keeps them.
    async fn publish_extension_authentication(&self, ts: &str) -> Result<(), ApiError> {
        let Some(cas) = &self.extension_authentication else {
            return Ok(());
        };
        let (client_ca, front_proxy_ca) = (&cas.0, &cas.1);
        let name = "extension-apiserver-authentication";
        let list = |v: &str| serde_json::to_string(&[v]).unwrap_or_default();
        let data = json!({
            "client-ca-file": client_ca,
            "requestheader-client-ca-file": front_proxy_ca,
            "requestheader-allowed-names": list(tls::FRONT_PROXY_CLIENT),
            "requestheader-username-headers": list("X-Remote-User"),
            "requestheader-uid-headers": list("X-Remote-Uid"),
            "requestheader-group-headers": list("X-Remote-Group"),
            "requestheader-extra-headers-prefix": list("X-Remote-Extra-"),
        });
        let internal = |e: berth_store::Error| ApiError::Internal(e.to_string());
        let rt = berth_api::registry::find("", "v1", "configmaps").ok_or(ApiError::NoRoute)?;
        let key = path::key(rt, Some("kube-system"), name);
        match self.store.get(&key).map_err(internal)? {
            None => {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "kube-system",
                        "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ts},
                    "data": data});
                match self.store.create(&key, codec::encode(&cm)).await {
                    Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => {}
                    Err(e) => return Err(internal(e)),
                }
            }
            Some(kv) => {
                let mut cm: serde_json::Value = serde_json::from_slice(&kv.value).map_err(|e| {
                    ApiError::Internal(format!("stored object {key} is corrupt: {e}"))
                })?;
                if cm["data"] != data {
                    cm["data"] = data;
                    match self
                        .store
                        .update(&key, codec::encode(&cm), Some(kv.mod_revision))
                        .await
                    {
                        Ok(_) | Err(berth_store::Error::Conflict { .. }) => {}
                        Err(e) => return Err(internal(e)),
                    }
                }
            }
        }
        let rt = berth_api::registry::find(rbac::GROUP, "v1", "roles").ok_or(ApiError::NoRoute)?;
        let role_name = "extension-apiserver-authentication-reader";
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": role_name, "namespace": "kube-system",
                "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ts,
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": [name], "verbs": ["get", "list", "watch"]}]});
        let key = path::key(rt, Some("kube-system"), role_name);
        match self.store.create(&key, codec::encode(&role)).await {
            Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(internal(e)),
        }
    }

    /// The same server allocating Service cluster IPs from `cluster_ip_range` (a CIDR,
    /// `--service-cluster-ip-range`) and node ports from `node_port_range` (`min-max`,
    /// `--service-node-port-range`). An error names the flag's value and what is wrong.
    pub fn with_service_ranges(
        mut self,
        cluster_ip_range: &str,
        node_port_range: &str,
    ) -> Result<ApiServer, String> {
        self.services = Arc::new(ServiceAllocator::new(
            IpRange::parse(cluster_ip_range)?,
            PortRange::parse(node_port_range)?,
        ));
        Ok(self)
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

    fn ctx(&self, authn: Option<authn::Authenticator>) -> Ctx {
        self.ctx_with(authn, None)
    }

    fn ctx_with(
        &self,
        authn: Option<authn::Authenticator>,
        flow_control: Option<flowcontrol::FlowControl>,
    ) -> Ctx {
        // berth's own components call the in-process routers: they are never refused. With
        // API Priority and Fairness the in-flight limits are its seats instead.
        let inflight = authn
            .as_ref()
            .filter(|_| flow_control.is_none())
            .map(|_| self.inflight.clone());
        // Nor timed out: a request of theirs is never abandoned (they wait for their own
        // answers), and a task and a timer per request was 4% of `bench e2e`'s CPU.
        let request_timeout = authn.as_ref().and(self.request_timeout);
        let authn_present = authn.is_some();
        // The custom kinds follow the store once there is a runtime to follow it in; until
        // then (and after each CRD write) they are read from the store as CRDs are written.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.custom.follow(&self.store);
            self.dynamic.follow(&self.store);
            self.apiservices.follow(&self.store);
        } else {
            self.custom.reload(&self.store);
            self.dynamic.reload(&self.store);
            self.apiservices.reload(&self.store);
        }
        Arc::new(Inner {
            store: self.store.clone(),
            clock: self.clock.clone(),
            address: self.address.clone(),
            authn: authn.map(Arc::new),
            rbac: self.rbac.clone(),
            custom: self.custom.clone(),
            apiservices: self.apiservices.clone(),
            admission: self.admission.clone(),
            dynamic: self.dynamic.clone(),
            admission_cache: self.handles.cache.clone(),
            caches: self.caches.clone(),
            services: self.services.clone(),
            service_account_keys: self.service_account_keys.clone(),
            api_audiences: vec![authn::service_account::ISSUER.to_string()],
            metrics: self.metrics.clone(),
            extend_token_expiration: self.extend_token_expiration,
            loop_health: self.loop_health.clone(),
            inflight,
            request_timeout,
            network_requests: authn_present.then(|| self.network_requests.clone()),
            flow_control,
        })
    }

    /// The router for in-process clients (no authentication: they act as the admin).
    pub fn in_process_router(&self) -> axum::Router {
        server::router(self.ctx(None))
    }

    /// The router for an in-process component acting as `user` (the scheduler as
    /// `system:kube-scheduler`, a controller as its ServiceAccount): the identity travels with
    /// each request as a verified client certificate's does, and RBAC authorizes it, so a
    /// missing rule in the component's role is a 403. Must run inside the Tokio runtime.
    pub fn in_process_router_as(&self, user: user::UserInfo) -> axum::Router {
        self.follow_rbac();
        server::router(self.ctx(None)).layer(axum::Extension(authn::CertificateUser(user)))
    }

    /// `router` with the User-Agent that upstream's `program` sends (client-go's
    /// `<program>/<version> (<os>/<arch>) kubernetes/<commit>`) on requests that carry none:
    /// the access log and field managers name berth's in-process components as upstream's.
    pub fn as_program(router: axum::Router, program: &str) -> axum::Router {
        let agent = format!(
            "{program}/v{} ({}/{}) berth",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH
        );
        let agent = axum::http::HeaderValue::from_str(&agent)
            .unwrap_or(axum::http::HeaderValue::from_static("berth"));
        router.layer(axum::middleware::map_request(
            move |mut req: axum::extract::Request| {
                let agent = agent.clone();
                async move {
                    req.headers_mut()
                        .entry(axum::http::header::USER_AGENT)
                        .or_insert(agent);
                    req
                }
            },
        ))
    }

    /// Starts the RBAC index following the store, once.
    fn follow_rbac(&self) {
        use std::sync::atomic::Ordering;
        if !self.rbac_following.swap(true, Ordering::SeqCst) {
            if let Err(e) = self.rbac.follow(&self.store) {
                tracing::error!(error = %e, "reading the RBAC objects failed; only system:masters may act");
            }
        }
    }

    /// The router for the network listener: every request is authenticated (a client
    /// certificate, the admin `token`, a token of the token file, or anonymous) and authorized
    /// by RBAC. The first call starts the RBAC index following the store, so it must run
    /// inside the Tokio runtime.
    pub fn authenticated_router(&self, token: String) -> axum::Router {
        self.follow_rbac();
        let flow_control = self.priority_and_fairness.then(|| {
            let fc = flowcontrol::FlowControl::new(self.server_concurrency, self.clock.clone());
            if let Err(e) = fc.follow(&self.store) {
                tracing::error!(error = %e, "reading the FlowSchemas failed; every request is catch-all's");
            }
            let shown = fc.clone();
            self.metrics.add_source(
                "flowcontrol",
                Arc::new(move || {
                    let mut text = String::new();
                    shown.encode(&mut text);
                    text
                }),
            );
            fc
        });
        server::router(self.ctx_with(
            Some(authn::Authenticator {
                admin_token: token,
                anonymous: self.anonymous_auth,
                tokens: (*self.tokens).clone(),
                service_accounts: self.service_account_keys.clone().map(|keys| {
                    Arc::new(
                        authn::service_account::Verifier::new(
                            keys,
                            self.store.clone(),
                            self.clock.clone(),
                            vec![authn::service_account::ISSUER.to_string()],
                        )
                        .counting(self.metrics.clone()),
                    )
                }),
            }),
            flow_control,
        ))
    }

    /// Creates what exists in every cluster: the four namespaces, the two system priority
    /// classes (and OpenShift's `openshift-user-critical`), OpenShift's machine config pools `master`
    /// and `worker`, and the bootstrap cluster roles and bindings. Existing objects are left as they
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
        // OpenShift's class for user workloads that must run (`oc debug node/N` asks for it).
        objects.push((("scheduling.k8s.io", "v1", "priorityclasses"), None, "openshift-user-critical".to_string(), json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "openshift-user-critical", "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ts, "generation": 1},
            "value": 1_000_000_000, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority",
            "description": "Used for critical pods that must run in the cluster, which can be preempted if necessary."})));
        // OpenShift's machine config pools `master` and `worker` and their base configurations.
        for (plural, name, mut obj) in openshift::machine_config::bootstrap_objects() {
            obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
            obj["metadata"]["creationTimestamp"] = json!(ts);
            obj["metadata"]["generation"] = json!(1);
            objects.push((
                ("machineconfiguration.openshift.io", "v1", plural),
                None,
                name,
                obj,
            ));
        }
        objects.push((
            ("", "v1", "services"),
            Some("default"),
            "kubernetes".to_string(),
            self.kubernetes_service(&ts),
        ));
        for ((g, v, plural), ns, name, obj) in objects {
            let rt = berth_api::registry::find(g, v, plural).ok_or(ApiError::NoRoute)?;
            let key = path::key(rt, ns, &name);
            match self.store.create(&key, codec::encode(&obj)).await {
                Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => {}
                Err(e) => return Err(ApiError::Internal(e.to_string())),
            }
        }
        self.reconcile_rbac_bootstrap(&ts).await?;
        self.reconcile_flowcontrol_bootstrap(&ts).await?;
        // The local APIServices, before any client lists them (the CRDs' come with the
        // availability loop, once the CRDs are read).
        apiregistration::local::reconcile(
            &self.store,
            &self.clock,
            &apiregistration::local::desired(&[]),
        )
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
        self.publish_extension_authentication(&ts).await?;
        self.write_kubernetes_endpoints(&ts).await
    }

    /// Creates the bootstrap FlowSchemas and PriorityLevelConfigurations that are missing and
    /// brings back the spec of those still annotated `apf.kubernetes.io/autoupdate-spec:
    /// "true"`, as upstream's APF configuration ensurer; objects annotated otherwise are the
    /// user's.
    async fn reconcile_flowcontrol_bootstrap(&self, ts: &str) -> Result<(), ApiError> {
        use flowcontrol::bootstrap::{self, Outcome};
        let internal = |e: berth_store::Error| ApiError::Internal(e.to_string());
        let group = "flowcontrol.apiserver.k8s.io";
        let kinds = [
            ("prioritylevelconfigurations", bootstrap::priority_levels()),
            ("flowschemas", bootstrap::flow_schemas()),
        ];
        for (plural, objects) in kinds {
            let rt = berth_api::registry::find(group, "v1", plural).ok_or(ApiError::NoRoute)?;
            for mut expected in objects {
                let name = expected["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let key = path::key(rt, None, &name);
                let stored = self.store.get(&key).map_err(internal)?;
                let Some(kv) = stored else {
                    expected["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
                    expected["metadata"]["creationTimestamp"] = json!(ts);
                    expected["metadata"]["generation"] = json!(1);
                    if plural == "flowschemas" {
                        let level = expected["spec"]["priorityLevelConfiguration"]["name"].clone();
                        expected["status"] = json!({"conditions": [{
                            "type": "Dangling", "status": "False", "reason": "Found",
                            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {level} and it exists"),
                            "lastTransitionTime": ts}]});
                    }
                    match self.store.create(&key, codec::encode(&expected)).await {
                        Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => {}
                        Err(e) => return Err(internal(e)),
                    }
                    continue;
                };
                let Ok(existing) = serde_json::from_slice::<serde_json::Value>(&kv.value) else {
                    continue;
                };
                if let Outcome::Update(obj) = bootstrap::reconcile(&existing, &expected) {
                    tracing::info!("reconciled bootstrap {plural}/{name}");
                    // A concurrent writer (another replica) wins; the next start reconciles again.
                    match self
                        .store
                        .update(&key, codec::encode(&obj), Some(kv.mod_revision))
                        .await
                    {
                        Ok(_) | Err(berth_store::Error::Conflict { .. }) => {}
                        Err(e) => return Err(internal(e)),
                    }
                }
            }
        }
        Ok(())
    }

    /// Creates the bootstrap roles and bindings that are missing and reconciles the stored
    /// ones with this version's, as upstream's `rbac/bootstrap-roles` post-start hook: one
    /// list per kind, a write only where something is missing.
    async fn reconcile_rbac_bootstrap(&self, ts: &str) -> Result<(), ApiError> {
        use rbac_bootstrap::reconcile::{self, Outcome};
        let internal = |e: berth_store::Error| ApiError::Internal(e.to_string());
        let mut stored = std::collections::HashMap::new();
        for plural in ["clusterroles", "clusterrolebindings"] {
            let rt =
                berth_api::registry::find(rbac::GROUP, "v1", plural).ok_or(ApiError::NoRoute)?;
            let listed = self
                .store
                .range(&path::type_prefix(rt), None, 0, None)
                .map_err(internal)?;
            stored.extend(listed.kvs.into_iter().map(|kv| (kv.key.clone(), kv)));
        }
        for (plural, name, expected) in
            rbac_bootstrap::objects(ts, || uuid::Uuid::new_v4().to_string())
        {
            let rt =
                berth_api::registry::find(rbac::GROUP, "v1", plural).ok_or(ApiError::NoRoute)?;
            let key = path::key(rt, None, &name);
            let Some(kv) = stored.get(&key) else {
                match self.store.create(&key, codec::encode(&expected)).await {
                    Ok(_) | Err(berth_store::Error::AlreadyExists { .. }) => {}
                    Err(e) => return Err(internal(e)),
                }
                continue;
            };
            let existing: serde_json::Value = serde_json::from_slice(&kv.value)
                .map_err(|e| ApiError::Internal(format!("stored object {key} is corrupt: {e}")))?;
            let outcome = if plural == "clusterroles" {
                reconcile::role(&existing, &expected)
            } else {
                reconcile::binding(&existing, &expected)
            };
            match outcome {
                Outcome::Unchanged => {}
                Outcome::Protected => tracing::warn!(
                    "skipped reconcile-protected {plural}/{name} ({}: \"false\") with missing permissions",
                    reconcile::AUTOUPDATE
                ),
                Outcome::Update(obj) => {
                    tracing::info!("reconciled bootstrap {plural}/{name}");
                    // A concurrent writer (another replica) wins; the next start reconciles again.
                    match self.store.update(&key, codec::encode(&obj), Some(kv.mod_revision)).await {
                        Ok(_) | Err(berth_store::Error::Conflict { .. }) => {}
                        Err(e) => return Err(internal(e)),
                    }
                }
            }
        }
        Ok(())
    }

    /// The `kubernetes` Service in `default`: the first address of the service range, port
    /// 443 (`https`) to this server's port, as kube-apiserver keeps it.
    fn kubernetes_service(&self, ts: &str) -> serde_json::Value {
        let ip = self.services.ips.first().to_string();
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": ts, "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "sessionAffinity": "None",
                "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": self.port()}]},
            "status": {"loadBalancer": {}}})
    }

    /// This server's port, from the address it advertises (443 without one).
    fn port(&self) -> u16 {
        self.address
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(443)
    }

    /// The `kubernetes` Endpoints and EndpointSlice: this server's address and port, written
    /// at every start (the port may have changed), as upstream's endpoint reconciler does.
    async fn write_kubernetes_endpoints(&self, ts: &str) -> Result<(), ApiError> {
        let host = self
            .address
            .rsplit_once(':')
            .map_or(self.address.as_str(), |(h, _)| h)
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
        let port = self.port();
        let uid = || uuid::Uuid::new_v4().to_string();
        let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": uid(), "creationTimestamp": ts,
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]});
        let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": uid(), "creationTimestamp": ts,
                "generation": 1, "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [host], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]});
        for ((g, v, plural), obj) in [
            (("", "v1", "endpoints"), endpoints),
            (("discovery.k8s.io", "v1", "endpointslices"), slice),
        ] {
            let rt = berth_api::registry::find(g, v, plural).ok_or(ApiError::NoRoute)?;
            let key = path::key(rt, Some("default"), "kubernetes");
            let stored = match self.store.get(&key) {
                Ok(Some(kv)) => {
                    let target = path::Target {
                        rt,
                        namespace: Some("default".into()),
                        name: Some("kubernetes".into()),
                        subresource: None,
                    };
                    Some(codec::decode(&kv, &target)?)
                }
                Ok(None) => None,
                Err(e) => return Err(ApiError::Internal(e.to_string())),
            };
            let result = match stored {
                None => self
                    .store
                    .create(&key, codec::encode(&obj))
                    .await
                    .map(|_| ()),
                Some(old) => {
                    let same = ["subsets", "endpoints", "ports"]
                        .iter()
                        .all(|f| old.get(*f) == obj.get(*f));
                    if same {
                        continue;
                    }
                    let mut new = obj;
                    new["metadata"] = old["metadata"].clone();
                    self.store
                        .update(&key, codec::encode(&new), None)
                        .await
                        .map(|_| ())
                }
            };
            result.map_err(|e| ApiError::Internal(e.to_string()))?;
        }
        Ok(())
    }

    /// Starts the aggregation layer's control loop, as kube-apiserver runs kube-aggregator's:
    /// the local APIServices follow the served group versions (CRDs' included) and every
    /// APIService's `Available` condition follows its backend. Must run inside the Tokio
    /// runtime.
    pub fn spawn_aggregator(&self) {
        self.custom.follow(&self.store);
        self.apiservices.follow(&self.store);
        let custom = self.custom.clone();
        apiregistration::availability::spawn(
            self.store.clone(),
            self.clock.clone(),
            self.apiservices.clone(),
            Box::new(move || {
                custom
                    .resource_types()
                    .iter()
                    .map(|rt| (rt.group.to_string(), rt.version.to_string()))
                    .collect()
            }),
        );
    }

    /// Compacts the store's history every [`COMPACTION_INTERVAL`], keeping the last
    /// [`HISTORY_REVISIONS`]; with `history_age`, also forgets what is older than that, as
    /// kube-apiserver's compactor does every `--etcd-compaction-interval` (a paged list's
    /// `continue` token then expires, and the list continues inconsistently).
    pub fn spawn_compactor(&self, history_age: Option<Duration>) {
        let store = self.store.clone();
        tokio::spawn(async move {
            let period = history_age.map_or(COMPACTION_INTERVAL, |a| a.min(COMPACTION_INTERVAL));
            let mut tick = tokio::time::interval(period);
            let mut ages = compaction::Ages::default();
            loop {
                let now = tick.tick().await;
                let current = store.current_revision();
                let mut target = current - HISTORY_REVISIONS;
                if let Some(age) = history_age {
                    target = target.max(ages.older_than(now, age));
                    ages.mark(now, current);
                }
                if target > store.compacted_revision() {
                    if let Err(e) = store.compact(target) {
                        tracing::warn!(error = %e, "compaction failed");
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod drain_tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn server() -> ApiServer {
        ApiServer::new(Store::memory(), Clock::system(), "127.0.0.1:6443".into())
    }

    #[tokio::test(start_paused = true)]
    async fn a_shutdown_waits_for_the_requests_in_flight() {
        let server = server();
        assert_eq!(server.drain(Duration::from_secs(60)).await, 0);
        server.network_requests.fetch_add(2, Ordering::SeqCst);
        let draining = tokio::spawn({
            let server = server.clone();
            async move { server.drain(Duration::from_secs(60)).await }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!draining.is_finished());
        server.network_requests.fetch_sub(2, Ordering::SeqCst);
        assert_eq!(draining.await.unwrap(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shutdown_waits_no_longer_than_its_limit() {
        let server = server();
        server.network_requests.fetch_add(1, Ordering::SeqCst);
        let started = server.clock.instant();
        assert_eq!(server.drain(Duration::from_secs(60)).await, 1);
        assert!(server.clock.instant() - started >= Duration::from_secs(60));
    }
}
