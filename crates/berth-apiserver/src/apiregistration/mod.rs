//! `apiregistration.k8s.io`: APIServices and the aggregation layer, as upstream's
//! kube-aggregator serves them inside kube-apiserver.
//!
//! - `strategy/apiregistration.rs`: the APIService kind's validation, with upstream's
//!   messages (with the other kinds' strategies);
//! - [`local`]: the local APIServices of every group version this server serves itself
//!   (upstream's autoregister controller: `v1.`, `v1.apps`, ..., `v1beta1.metrics.k8s.io`);
//! - [`availability`]: the `Available` condition of every APIService, from its Service, its
//!   endpoints and a discovery request to its backend (upstream's status controllers);
//! - [`proxy`]: requests under `/apis/<group>/<version>` of a remote APIService, forwarded
//!   over TLS to one of its Service's endpoints with the caller's identity in headers;
//! - [`discovery`]: remote group versions merged into `/apis` and aggregated discovery;
//! - this file: [`ApiServices`], the snapshot of stored APIServices requests are routed by.
//!
//! Ordinary requests pay one read of the snapshot's `Arc` and, when no remote APIService
//! exists, nothing else.

pub mod availability;
pub mod discovery;
pub mod local;
pub mod proxy;

use berth_store::{EventKind, KeyValue};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Where APIServices are stored.
pub const PREFIX: &str = "/registry/apiregistration.k8s.io/apiservices/";

/// The Service an APIService's requests go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

/// One stored APIService, as routing and discovery need it.
#[derive(Debug)]
pub struct Registered {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// `None`: served by this server (a local APIService).
    pub service: Option<ServiceRef>,
    /// How the backend's serving certificate is verified (`caBundle` or
    /// `insecureSkipTLSVerify`); an error when the `caBundle` cannot be read.
    pub tls: Result<Arc<rustls::ClientConfig>, String>,
    /// Whether its `Available` condition is True.
    pub available: bool,
}

impl Registered {
    fn of(obj: &Value, identity: Option<&proxy::ClientIdentity>) -> Option<Registered> {
        let spec = &obj["spec"];
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        let service = spec
            .get("service")
            .filter(|s| s.is_object())
            .map(|svc| ServiceRef {
                namespace: s(&svc["namespace"]),
                name: s(&svc["name"]),
                port: svc["port"]
                    .as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        let available = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        let tls = match &service {
            None => Err(String::new()),
            Some(_) => proxy::tls_config(
                spec["caBundle"].as_str().unwrap_or(""),
                spec["insecureSkipTLSVerify"].as_bool().unwrap_or(false),
                identity,
            ),
        };
        Some(Registered {
            name: obj["metadata"]["name"].as_str()?.to_string(),
            group: s(&spec["group"]),
            version: s(&spec["version"]),
            group_priority: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
            version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
            service,
            tls,
            available,
        })
    }
}

/// The stored APIServices at one moment.
#[derive(Default)]
pub struct Snapshot {
    pub by_name: BTreeMap<String, Arc<Registered>>,
    /// `(group, version)` → the remote APIService that serves it.
    remote: BTreeMap<(String, String), Arc<Registered>>,
}

impl Snapshot {
    fn build(by_name: BTreeMap<String, Arc<Registered>>) -> Snapshot {
        let remote = by_name
            .values()
            .filter(|r| r.service.is_some())
            .map(|r| ((r.group.clone(), r.version.clone()), r.clone()))
            .collect();
        Snapshot { by_name, remote }
    }

    /// The remote APIService serving `group`/`version`, if any.
    pub fn remote(&self, group: &str, version: &str) -> Option<&Arc<Registered>> {
        if self.remote.is_empty() {
            return None;
        }
        self.remote.get(&(group.to_string(), version.to_string()))
    }

    /// Every remote APIService.
    pub fn remotes(&self) -> impl Iterator<Item = &Arc<Registered>> {
        self.remote.values()
    }
}

/// The stored APIServices, kept current from the store, and the discovery documents the
/// availability checks fetched from their backends.
#[derive(Default)]
pub struct ApiServices {
    snapshot: RwLock<Arc<Snapshot>>,
    /// APIService name → the backend's `APIResourceList` at its group version.
    discovered: RwLock<BTreeMap<String, Arc<Value>>>,
    following: AtomicBool,
    /// Whether any remote APIService exists: when none does, routing reads nothing else.
    any_remote: AtomicBool,
    /// The client certificate presented to backends, if berth has one.
    identity: std::sync::OnceLock<proxy::ClientIdentity>,
    /// The TLS settings of the availability checks (unverified, with `identity`).
    check_tls: std::sync::OnceLock<Arc<rustls::ClientConfig>>,
    /// Woken when an APIService changes, so the availability checks run at once.
    pub changed: tokio::sync::Notify,
}

impl ApiServices {
    /// The current snapshot (one `Arc` clone; no lock is held after it returns).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Presents `identity` to every backend from now on (set before the APIServices are read).
    pub fn set_client_identity(&self, identity: proxy::ClientIdentity) {
        let _ = self.identity.set(identity);
    }

    /// The TLS settings of availability checks: unverified, as upstream's (a check only
    /// reads whether the backend answers), with berth's client certificate.
    pub fn check_tls(&self) -> Arc<rustls::ClientConfig> {
        self.check_tls
            .get_or_init(|| {
                proxy::tls_config("", true, self.identity.get())
                    .or_else(|_| proxy::tls_config("", true, None))
                    .unwrap_or_else(|e| unreachable!("an unverified TLS client config builds: {e}"))
            })
            .clone()
    }

    /// The remote APIService a request path addresses (`/apis/<group>/<version>[/...]`).
    pub fn route(&self, path: &str) -> Option<Arc<Registered>> {
        if !self.any_remote.load(Ordering::Relaxed) {
            return None;
        }
        let (group, version) = group_version_of(path)?;
        self.snapshot().remote(group, version).cloned()
    }

    /// The backend's discovery document of APIService `name`, if a check fetched it.
    pub fn discovered(&self, name: &str) -> Option<Arc<Value>> {
        self.discovered
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Records (or forgets, with `None`) what APIService `name`'s backend serves.
    pub fn set_discovered(&self, name: &str, list: Option<Value>) {
        let mut d = self.discovered.write().unwrap_or_else(|e| e.into_inner());
        match list {
            Some(l) => d.insert(name.to_string(), Arc::new(l)),
            None => d.remove(name),
        };
    }

    fn publish(&self, by_name: BTreeMap<String, Arc<Registered>>) {
        let snapshot = Arc::new(Snapshot::build(by_name));
        self.any_remote
            .store(!snapshot.remote.is_empty(), Ordering::Relaxed);
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = snapshot;
        self.changed.notify_one();
    }
}

impl crate::follow::StoreFollower for ApiServices {
    const PREFIX: &'static str = PREFIX;
    const WHAT: &'static str = "the APIServices";

    fn load(&self, kvs: &[KeyValue]) {
        let by_name = kvs
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter_map(|obj| Registered::of(&obj, self.identity.get()))
            .map(|r| (r.name.clone(), Arc::new(r)))
            .collect();
        self.publish(by_name);
    }

    fn event(&self, kind: EventKind, kv: &KeyValue) {
        let mut by_name = self.snapshot().by_name.clone();
        match kind {
            EventKind::Delete => {
                let name = kv.key.strip_prefix(PREFIX).unwrap_or("");
                by_name.remove(name);
                self.set_discovered(name, None);
            }
            _ => {
                let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) else {
                    return;
                };
                if let Some(r) = Registered::of(&obj, self.identity.get()) {
                    by_name.insert(r.name.clone(), Arc::new(r));
                }
            }
        }
        self.publish(by_name);
    }

    fn following(&self) -> &AtomicBool {
        &self.following
    }
}

/// The group and version of a path under `/apis/<group>/<version>`.
pub fn group_version_of(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// What a request to an aggregated API asks, as upstream's RequestInfo reads any
/// `/apis/<group>/<version>/...` path: for authorizing it before it is forwarded.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct RequestInfo<'a> {
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl<'a> RequestInfo<'a> {
    /// The resource request a path names; `None` for the group version's discovery document.
    pub fn of(path: &'a str) -> Option<RequestInfo<'a>> {
        let rest = path.strip_prefix("/apis/")?;
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        let mut parts = parts.get(2..)?;
        let mut info = RequestInfo::default();
        if parts.first() == Some(&"namespaces") && parts.len() >= 2 {
            info.namespace = parts[1];
            if parts.len() == 2 {
                // `namespaces/NS` itself names the namespace.
                info.resource = "namespaces";
                info.name = parts[1];
                return Some(info);
            }
            parts = &parts[2..];
        }
        info.resource = parts.first()?;
        info.name = parts.get(1).copied().unwrap_or("");
        info.subresource = parts.get(2).copied().unwrap_or("");
        Some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::follow::StoreFollower;
    use serde_json::json;

    #[test]
    fn group_versions_of_paths() {
        assert_eq!(
            group_version_of("/apis/wardle.example.com/v1alpha1/flunders"),
            Some(("wardle.example.com", "v1alpha1"))
        );
        assert_eq!(
            group_version_of("/apis/wardle.example.com/v1alpha1"),
            Some(("wardle.example.com", "v1alpha1"))
        );
        assert_eq!(group_version_of("/apis/wardle.example.com"), None);
        assert_eq!(group_version_of("/apis/wardle.example.com/"), None);
        assert_eq!(group_version_of("/api/v1/pods"), None);
    }

    #[test]
    fn request_info_of_aggregated_paths() {
        let p = "/apis/g/v1/namespaces/ns/flunders/f1/status";
        assert_eq!(
            RequestInfo::of(p),
            Some(RequestInfo {
                resource: "flunders",
                subresource: "status",
                namespace: "ns",
                name: "f1"
            })
        );
        assert_eq!(
            RequestInfo::of("/apis/g/v1/fischers"),
            Some(RequestInfo {
                resource: "fischers",
                ..Default::default()
            })
        );
        assert_eq!(RequestInfo::of("/apis/g/v1"), None);
        assert_eq!(
            RequestInfo::of("/apis/g/v1/namespaces/ns").unwrap().name,
            "ns"
        );
    }

    fn stored(name: &str, group: &str, version: &str, service: Value) -> KeyValue {
        let obj = json!({"metadata": {"name": name}, "spec": {"group": group, "version": version,
            "groupPriorityMinimum": 100, "versionPriority": 10, "service": service,
            "insecureSkipTLSVerify": true}});
        KeyValue {
            key: format!("{PREFIX}{name}"),
            value: bytes::Bytes::from(serde_json::to_vec(&obj).unwrap()),
            create_revision: 1,
            mod_revision: 1,
        }
    }

    #[test]
    fn routes_only_remote_group_versions_and_follows_deletes() {
        let services = ApiServices::default();
        services.load(&[
            stored("v1.apps", "apps", "v1", Value::Null),
            stored(
                "v1.wardle.example.com",
                "wardle.example.com",
                "v1",
                json!({"namespace": "s", "name": "api"}),
            ),
        ]);
        assert!(services.route("/apis/apps/v1/deployments").is_none());
        let r = services
            .route("/apis/wardle.example.com/v1/flunders")
            .unwrap();
        assert_eq!(
            r.service,
            Some(ServiceRef {
                namespace: "s".into(),
                name: "api".into(),
                port: 443
            })
        );
        assert!(r.tls.is_ok());
        services.event(
            EventKind::Delete,
            &stored("v1.wardle.example.com", "", "", Value::Null),
        );
        assert!(services
            .route("/apis/wardle.example.com/v1/flunders")
            .is_none());
    }
}
