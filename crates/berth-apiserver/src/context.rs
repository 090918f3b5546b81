//! What every handler shares: the store, the clock, the admission chain, and reading the object
//! a request addresses.

use crate::admission::Chain;
use crate::codec::decode;
use crate::error::{from_store, ApiResult};
use crate::request::ApiRequest;
use berth_core::clock::Clock;
use berth_store::Store;
use serde_json::Value;
use std::sync::Arc;

/// Shared state of every handler.
pub struct Inner {
    pub store: Store,
    pub clock: Clock,
    /// Address written into legacy discovery's `serverAddressByClientCIDRs`.
    pub address: String,
    /// Who may ask on the network listener; `None` for the in-process router (whose clients
    /// are berth's own components, acting as the admin).
    pub authn: Option<Arc<crate::authn::Authenticator>>,
    /// Whether a user may do what they ask (RBAC).
    pub rbac: crate::authz::Rbac,
    /// The kinds CustomResourceDefinitions define, looked up when the registry misses.
    pub custom: Arc<crate::apiextensions::CustomKinds>,
    /// The stored APIServices: which group versions are proxied to another server.
    pub apiservices: Arc<crate::apiregistration::ApiServices>,
    /// The admission plugins every create and update passes, built once at start.
    pub admission: Arc<Chain>,
    /// The webhooks and ValidatingAdmissionPolicies configured in the cluster.
    pub dynamic: Arc<crate::admission::dynamic::Dynamic>,
    /// Decoded namespaces, shared with the admission chain.
    pub admission_cache: Arc<crate::admission::AdmissionCache>,
    /// Encoded events shared between requests (see [`crate::Caches`]).
    pub caches: Arc<crate::Caches>,
    /// Service cluster IPs and node ports (`--service-cluster-ip-range`, `--service-node-port-range`).
    pub services: Arc<crate::service_allocation::ServiceAllocator>,
    /// The key ServiceAccount tokens are signed with; `None` serves no TokenRequest.
    pub service_account_keys: Option<Arc<crate::authn::service_account::Keys>>,
    /// The audiences of a token requested without any (upstream's `--api-audiences`).
    pub api_audiences: Vec<String>,
    /// Request counts and latencies, served at `/metrics`.
    pub metrics: Arc<crate::metrics::ApiMetrics>,
    /// Whether a kubelet's hour-long pod token is signed for a year (upstream's
    /// `--service-account-extend-token-expiration`, on by default).
    pub extend_token_expiration: bool,
    /// The in-process control loops that are down, for `/readyz`.
    pub loop_health: berth_core::loop_health::LoopHealth,
    /// The in-flight seats (`--max-requests-inflight`, ...); `None` for the in-process
    /// routers, whose clients are berth's own components and are never refused.
    pub inflight: Option<Arc<crate::overload::InflightLimiter>>,
    /// `--request-timeout` for requests that are not long-running; `None`: none.
    pub request_timeout: Option<std::time::Duration>,
    /// API Priority and Fairness, which then takes the place of `inflight`; `None` for the
    /// in-process routers and with `--enable-priority-and-fairness=false`.
    pub flow_control: Option<crate::flowcontrol::FlowControl>,
    /// Network clients' requests being served (not long-running ones), which a shutdown
    /// waits for; `None` for the in-process routers.
    pub network_requests: Option<Arc<std::sync::atomic::AtomicUsize>>,
}

pub type Ctx = Arc<Inner>;

impl Inner {
    /// What dynamic admission reads from the cluster.
    pub fn lookup(&self) -> crate::admission::dynamic::StoreLookup<'_> {
        crate::admission::dynamic::StoreLookup {
            store: &self.store,
            cache: &self.admission_cache,
            rbac: &self.rbac,
        }
    }
}

/// Reads the current stored object addressed by `req`.
pub fn read(ctx: &Ctx, req: &ApiRequest) -> ApiResult<(Value, i64)> {
    let started = berth_core::clock::Stopwatch::now();
    let found = ctx.store.get(&req.key());
    ctx.metrics
        .storage_request("get", req.target.rt, started.elapsed());
    let kv = found
        .map_err(|e| from_store(e, &req.resource(), req.name()))?
        .ok_or_else(|| req.not_found())?;
    Ok((decode(&kv, &req.target)?, kv.mod_revision))
}
