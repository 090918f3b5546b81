//! Dynamic admission: what the cluster's own objects ask for, as opposed to the built-in
//! plugins of [`crate::admission::Chain`]. Upstream's MutatingAdmissionWebhook,
//! ValidatingAdmissionPolicy and ValidatingAdmissionWebhook plugins, in that order:
//!
//! 1. after the built-in chain, the mutating webhooks ([`webhook::mutate`]);
//! 2. then the kind's validation (the strategy's);
//! 3. then the ValidatingAdmissionPolicies ([`policy::validate`]) and the validating
//!    webhooks ([`webhook::validate`]).
//!
//! The configurations are read from the store once and followed by a watch into an immutable
//! [`Snapshot`], swapped whole on each change. A request takes the current snapshot (one
//! `Arc` clone under a read lock, never held across an await) and, when nothing is configured,
//! returns at once: a cluster without webhooks or policies pays nothing else.

pub mod audit;
pub mod cel;
pub mod cel_authorizer;
pub mod client;
pub mod matching;
pub mod policy;
pub mod review;
pub mod webhook;

use crate::admission::AdmissionCache;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::{EventKind, KeyValue, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
pub use webhook::Refusal;

/// Where the admission configuration is stored (all four kinds).
pub const PREFIX: &str = "/registry/admissionregistration.k8s.io/";

/// What is being done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// What webhooks and policies are told about a request (upstream's `admission.Attributes`).
pub struct Attributes<'a> {
    pub operation: Operation,
    pub rt: &'static ResourceType,
    pub subresource: &'a str,
    /// The object's namespace; for a namespace, its own name.
    pub namespace: &'a str,
    pub name: &'a str,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The request's CreateOptions, UpdateOptions or DeleteOptions.
    pub options: Value,
}

/// What admission reads from the cluster while deciding: namespaces, a Service's address,
/// parameter objects. A trait so the deciding code is tested without a store.
pub trait Lookup: Send + Sync {
    /// Namespace `name` as stored.
    fn namespace(&self, name: &str) -> Option<Arc<Value>>;
    /// `host:port` of a ready endpoint behind port `port` of Service `namespace/name`.
    fn service_address(&self, namespace: &str, name: &str, port: u16) -> Result<String, String>;
    /// A policy's parameters: the object `name` of `api_version`/`kind` (in `namespace` when
    /// namespaced), or those `selector` picks.
    fn params(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        selector: Option<&berth_core::labels::Selector>,
    ) -> Result<Vec<Value>, String>;
    /// The server's authorizer, which policies' `authorizer` variable asks.
    fn authorizer(&self) -> Option<Arc<dyn crate::authorizer::Authorizer>>;
}

/// The labels a `namespaceSelector` is matched against: the namespace's, or a namespace's
/// own when the request is about one.
pub fn namespace_labels(
    a: &Attributes,
    lookup: &dyn Lookup,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Option<Value> {
    let is_namespace = a.rt.group.is_empty() && a.rt.plural == "namespaces";
    if is_namespace {
        return object
            .or(old)
            .and_then(|o| o.pointer("/metadata/labels"))
            .cloned();
    }
    lookup
        .namespace(a.namespace)
        .and_then(|ns| ns.pointer("/metadata/labels").cloned())
}

/// The admission configuration in force, compiled.
#[derive(Default)]
pub struct Snapshot {
    /// In calling order: by configuration name, then order in the configuration.
    mutating: Vec<Arc<webhook::Webhook>>,
    validating: Vec<Arc<webhook::Webhook>>,
    /// Every (policy, binding) pair, by policy name then binding name.
    policies: Vec<policy::Bound>,
}

impl Snapshot {
    /// Compiles the stored configuration objects.
    pub fn build(objects: &BTreeMap<String, Value>) -> Snapshot {
        let of = |plural: &str| {
            let prefix = format!("{PREFIX}{plural}/");
            objects
                .iter()
                .filter(move |(k, _)| k.starts_with(&prefix))
                .map(|(_, v)| v)
        };
        let hooks = |plural: &str, mutating: bool| -> Vec<Arc<webhook::Webhook>> {
            // Keys sort as names do, so configurations come in name order.
            of(plural)
                .flat_map(|c| {
                    let name = c["metadata"]["name"].as_str().unwrap_or("").to_string();
                    c["webhooks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(move |w| Arc::new(webhook::Webhook::compile(&name, w, mutating)))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let policies: BTreeMap<String, Arc<policy::Policy>> = of("validatingadmissionpolicies")
            .map(policy::Policy::compile)
            .map(|p| (p.name.clone(), Arc::new(p)))
            .collect();
        let mut bound: Vec<policy::Bound> = of("validatingadmissionpolicybindings")
            .map(policy::Binding::compile)
            .filter_map(|b| {
                policies.get(&b.policy_name).map(|p| policy::Bound {
                    policy: p.clone(),
                    binding: Arc::new(b),
                })
            })
            .collect();
        bound.sort_by(|a, b| {
            (&a.policy.name, &a.binding.name).cmp(&(&b.policy.name, &b.binding.name))
        });
        Snapshot {
            mutating: hooks("mutatingwebhookconfigurations", true),
            validating: hooks("validatingwebhookconfigurations", false),
            policies: bound,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty() && self.policies.is_empty()
    }
}

/// The dynamic admission of one server: the configuration followed from the store.
#[derive(Default)]
pub struct Dynamic {
    current: RwLock<Arc<Snapshot>>,
    /// Stored configuration objects by key, from which the snapshot is rebuilt.
    objects: Mutex<BTreeMap<String, Value>>,
    /// Cheap test for the common case: nothing configured.
    empty: AtomicBool,
    following: AtomicBool,
}

impl Dynamic {
    pub fn new() -> Dynamic {
        Dynamic {
            empty: AtomicBool::new(true),
            ..Dynamic::default()
        }
    }

    /// The configuration in force; `None` when nothing is configured.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        if self.empty.load(Ordering::Acquire) {
            return None;
        }
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }

    fn rebuild(&self, objects: &BTreeMap<String, Value>) {
        let snapshot = Snapshot::build(objects);
        let empty = snapshot.is_empty();
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(snapshot);
        self.empty.store(empty, Ordering::Release);
    }
}

impl crate::follow::StoreFollower for Dynamic {
    const PREFIX: &'static str = PREFIX;
    const WHAT: &'static str = "the admission configuration";

    fn load(&self, kvs: &[KeyValue]) {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        objects.clear();
        for kv in kvs {
            if let Ok(v) = serde_json::from_slice::<Value>(&kv.value) {
                objects.insert(kv.key.clone(), v);
            }
        }
        self.rebuild(&objects);
    }

    fn event(&self, kind: EventKind, kv: &KeyValue) {
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        match kind {
            EventKind::Delete => {
                objects.remove(&kv.key);
            }
            _ => {
                if let Ok(v) = serde_json::from_slice::<Value>(&kv.value) {
                    objects.insert(kv.key.clone(), v);
                }
            }
        }
        self.rebuild(&objects);
    }

    fn following(&self) -> &AtomicBool {
        &self.following
    }
}

/// Runs the mutating webhooks of `snapshot` on `object`.
pub async fn mutate(
    snapshot: &Snapshot,
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    object: &mut Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    if matching::exempt(a) || !snapshot.mutating.iter().any(|h| h.covers(a)) {
        return Ok(());
    }
    webhook::mutate(&snapshot.mutating, a, lookup, object, old, warnings).await
}

/// Runs the mutating webhooks of `snapshot` on the deletion of `old` (they are told, and
/// may refuse, but cannot change anything).
pub async fn mutate_deletion(
    snapshot: &Snapshot,
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    old: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    if matching::exempt(a) || !snapshot.mutating.iter().any(|h| h.covers(a)) {
        return Ok(());
    }
    webhook::mutate_deletion(&snapshot.mutating, a, lookup, old, warnings).await
}

/// Runs the policies, then the validating webhooks, of `snapshot` on `object` (`None` for a
/// deletion, whose object is `old`).
pub async fn validate(
    snapshot: &Snapshot,
    a: &Attributes<'_>,
    lookup: &dyn Lookup,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    if matching::exempt(a) {
        return Ok(());
    }
    let mut annotations = audit::AuditAnnotations::default();
    let decided = policy::validate(
        &snapshot.policies,
        a,
        lookup,
        object,
        old,
        warnings,
        &mut annotations,
    );
    annotations.record(a);
    decided?;
    if !snapshot.validating.iter().any(|h| h.covers(a)) {
        return Ok(());
    }
    webhook::validate(&snapshot.validating, a, lookup, object, old, warnings).await
}

/// [`Lookup`] on the store: what an API server's admission reads.
pub struct StoreLookup<'a> {
    pub store: &'a Store,
    pub cache: &'a AdmissionCache,
    pub rbac: &'a crate::authz::Rbac,
}

impl StoreLookup<'_> {
    /// Namespace `name` as stored (decoded once per revision).
    pub fn namespace_object(&self, name: &str) -> Option<Arc<Value>> {
        self.cache.namespace_object(self.store, name).ok().flatten()
    }

    fn get(&self, rt: &ResourceType, namespace: Option<&str>, name: &str) -> Option<Value> {
        let kv = self
            .store
            .get(&crate::path::key(rt, namespace, name))
            .ok()??;
        serde_json::from_slice(&kv.value).ok()
    }
}

impl Lookup for StoreLookup<'_> {
    fn authorizer(&self) -> Option<Arc<dyn crate::authorizer::Authorizer>> {
        Some(Arc::new(self.rbac.clone()))
    }

    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.cache.namespace_object(self.store, name).ok().flatten()
    }

    fn service_address(&self, namespace: &str, name: &str, port: u16) -> Result<String, String> {
        let services = berth_api::registry::find("", "v1", "services").ok_or("no services")?;
        let service = self
            .get(services, Some(namespace), name)
            .ok_or_else(|| format!("service \"{name}\" not found"))?;
        let ports = service["spec"]["ports"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let service_port = ports
            .iter()
            .find(|p| p["port"].as_u64() == Some(u64::from(port)))
            .ok_or_else(|| format!("service \"{name}\" has no port {port}"))?;
        let port_name = service_port["name"].as_str().unwrap_or("");
        let no_endpoints = || format!("no endpoints available for service \"{name}\"");
        let slices = berth_api::registry::find("discovery.k8s.io", "v1", "endpointslices")
            .ok_or("no endpointslices")?;
        let listed = self
            .store
            .range(
                &crate::path::collection_prefix(slices, Some(namespace)),
                None,
                0,
                None,
            )
            .map_err(|e| e.to_string())?;
        for kv in &listed.kvs {
            let Ok(slice) = serde_json::from_slice::<Value>(&kv.value) else {
                continue;
            };
            if slice
                .pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                != Some(name)
            {
                continue;
            }
            let Some(target) = slice["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str().unwrap_or("") == port_name)
                .and_then(|p| p["port"].as_u64())
            else {
                continue;
            };
            let ready = slice["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false));
            if let Some(address) = ready
                .and_then(|e| e["addresses"].as_array())
                .and_then(|a| a.first())
                .and_then(Value::as_str)
            {
                return Ok(join_host_port(address, target));
            }
        }
        // The core Endpoints object, for clusters that write it alone.
        let endpoints = berth_api::registry::find("", "v1", "endpoints").ok_or("no endpoints")?;
        let e = self
            .get(endpoints, Some(namespace), name)
            .ok_or_else(no_endpoints)?;
        for subset in e["subsets"].as_array().into_iter().flatten() {
            let target = subset["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str().unwrap_or("") == port_name)
                .and_then(|p| p["port"].as_u64());
            let address = subset["addresses"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a["ip"].as_str());
            if let (Some(t), Some(ip)) = (target, address) {
                return Ok(join_host_port(ip, t));
            }
        }
        Err(no_endpoints())
    }

    fn params(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        selector: Option<&berth_core::labels::Selector>,
    ) -> Result<Vec<Value>, String> {
        let rt = berth_api::registry::find_kind(api_version, kind).ok_or_else(|| {
            format!("failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'")
        })?;
        let namespace = rt.namespaced.then_some(namespace);
        if !name.is_empty() {
            return Ok(self.get(rt, namespace, name).into_iter().collect());
        }
        let Some(selector) = selector else {
            return Ok(Vec::new());
        };
        let listed = self
            .store
            .range(
                &crate::path::collection_prefix(rt, namespace),
                None,
                0,
                None,
            )
            .map_err(|e| e.to_string())?;
        let empty = serde_json::Map::new();
        Ok(listed
            .kvs
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter(|o| {
                selector.matches(
                    o.pointer("/metadata/labels")
                        .and_then(Value::as_object)
                        .unwrap_or(&empty),
                )
            })
            .collect())
    }
}

fn join_host_port(host: &str, port: u64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
pub mod testing {
    use super::*;

    /// A cluster with nothing in it.
    pub struct NoLookup;

    impl Lookup for NoLookup {
        fn namespace(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn service_address(&self, _: &str, name: &str, _: u16) -> Result<String, String> {
            Err(format!("service \"{name}\" not found"))
        }
        fn params(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: &str,
            _: Option<&berth_core::labels::Selector>,
        ) -> Result<Vec<Value>, String> {
            Ok(Vec::new())
        }
        fn authorizer(&self) -> Option<Arc<dyn crate::authorizer::Authorizer>> {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::follow::StoreFollower;
    use serde_json::json;

    #[test]
    fn the_snapshot_orders_webhooks_by_configuration_name_and_binds_policies() {
        let mut objects = BTreeMap::new();
        let hook = |name: &str| {
            json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:1/"}, "rules": []})
        };
        objects.insert(
            format!("{PREFIX}mutatingwebhookconfigurations/b"),
            json!({"metadata": {"name": "b"}, "webhooks": [hook("b1.example.com")]}),
        );
        objects.insert(
            format!("{PREFIX}mutatingwebhookconfigurations/a"),
            json!({"metadata": {"name": "a"}, "webhooks": [hook("a1.example.com"), hook("a2.example.com")]}),
        );
        objects.insert(
            format!("{PREFIX}validatingadmissionpolicybindings/orphan"),
            json!({"metadata": {"name": "orphan"}, "spec": {"policyName": "missing"}}),
        );
        let s = Snapshot::build(&objects);
        let names: Vec<&str> = s.mutating.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            ["a1.example.com", "a2.example.com", "b1.example.com"]
        );
        assert!(
            s.policies.is_empty(),
            "a binding without its policy binds nothing"
        );
        assert!(Snapshot::build(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn nothing_configured_is_told_without_a_lock() {
        let d = Dynamic::new();
        assert!(d.snapshot().is_none());
        d.load(&[]);
        assert!(d.snapshot().is_none());
    }
}
