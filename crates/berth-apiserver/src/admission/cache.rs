//! What admission reads on every create, kept decoded between the writes that change it.
//!
//! Every create checks its namespace and every pod create resolves its priority class. Both
//! used to decode the stored JSON each time. The cache keeps the decoded form together with the
//! store revision it was decoded from, and still asks the store for the current revision on each
//! use (an in-memory lookup that decodes nothing): an entry is used only while the store holds
//! exactly that revision. So the cache can never be stale, needs no invalidation, and sees a
//! write as soon as the store has acknowledged it (read-your-writes, as without a cache).

use crate::codec::decode;
use crate::error::{ApiError, ApiResult};
use crate::path::{self, Target};
use berth_api::registry;
use berth_store::{Revision, Store};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Decoded namespaces and priority classes, each with the revision it was decoded from.
#[derive(Default)]
pub struct AdmissionCache {
    /// Namespace name → (its mod revision, the namespace as decoded at that revision).
    namespaces: Mutex<HashMap<String, (Revision, Arc<Value>)>>,
    /// Every priority class as of the (key, mod revision) list it was decoded from.
    classes: Mutex<Option<ClassSnapshot>>,
}

struct ClassSnapshot {
    revisions: Vec<(String, Revision)>,
    classes: Arc<Vec<Value>>,
}

/// What a create needs to know about its namespace.
pub enum NamespaceState {
    Missing,
    Active,
    Terminating,
}

impl AdmissionCache {
    /// The current state of namespace `name`.
    pub fn namespace(&self, store: &Store, name: &str) -> ApiResult<NamespaceState> {
        Ok(match self.namespace_object(store, name)? {
            None => NamespaceState::Missing,
            Some(ns) if is_terminating(&ns) => NamespaceState::Terminating,
            Some(_) => NamespaceState::Active,
        })
    }

    /// Namespace `name` as the store holds it now, decoded; `None` when there is none.
    pub fn namespace_object(&self, store: &Store, name: &str) -> ApiResult<Option<Arc<Value>>> {
        let Some(rt) = registry::find("", "v1", "namespaces") else {
            return Ok(None);
        };
        let kv = store
            .get(&path::key(rt, None, name))
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let mut cached = self.namespaces.lock().unwrap_or_else(|e| e.into_inner());
        let Some(kv) = kv else {
            cached.remove(name);
            return Ok(None);
        };
        if let Some((revision, ns)) = cached.get(name) {
            if *revision == kv.mod_revision {
                return Ok(Some(ns.clone()));
            }
        }
        drop(cached);
        let target = Target {
            rt,
            namespace: None,
            name: Some(name.to_string()),
            subresource: None,
        };
        let ns = Arc::new(decode(&kv, &target)?);
        let mut cached = self.namespaces.lock().unwrap_or_else(|e| e.into_inner());
        cached.insert(name.to_string(), (kv.mod_revision, ns.clone()));
        Ok(Some(ns))
    }

    /// Every priority class, decoded, as the store holds them now.
    pub fn priority_classes(&self, store: &Store) -> ApiResult<Arc<Vec<Value>>> {
        let Some(rt) = registry::find("scheduling.k8s.io", "v1", "priorityclasses") else {
            return Ok(Arc::default());
        };
        let r = store
            .range(&path::collection_prefix(rt, None), None, 0, None)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let current = |snapshot: &ClassSnapshot| {
            snapshot.revisions.len() == r.kvs.len()
                && snapshot
                    .revisions
                    .iter()
                    .zip(&r.kvs)
                    .all(|((key, rev), kv)| *rev == kv.mod_revision && *key == kv.key)
        };
        {
            let cached = self.classes.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(snapshot) = cached.as_ref().filter(|s| current(s)) {
                return Ok(snapshot.classes.clone());
            }
        }
        let target = Target {
            rt,
            namespace: None,
            name: None,
            subresource: None,
        };
        let classes: Vec<Value> = r
            .kvs
            .iter()
            .map(|kv| decode(kv, &target))
            .collect::<ApiResult<_>>()?;
        let snapshot = ClassSnapshot {
            revisions: r
                .kvs
                .iter()
                .map(|kv| (kv.key.clone(), kv.mod_revision))
                .collect(),
            classes: Arc::new(classes),
        };
        let classes = snapshot.classes.clone();
        *self.classes.lock().unwrap_or_else(|e| e.into_inner()) = Some(snapshot);
        Ok(classes)
    }
}

/// True when `ns` is a namespace that is being deleted.
fn is_terminating(ns: &Value) -> bool {
    ns["status"]["phase"] == "Terminating"
        || !crate::codec::meta_str(ns, "deletionTimestamp").is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namespace(name: &str, terminating: bool) -> bytes::Bytes {
        let mut ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name}, "status": {"phase": "Active"}});
        if terminating {
            ns["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            ns["status"]["phase"] = "Terminating".into();
        }
        crate::codec::encode(&ns)
    }

    #[tokio::test]
    async fn a_namespace_write_is_seen_by_the_next_lookup() {
        let store = Store::memory();
        let cache = AdmissionCache::default();
        let rt = registry::find("", "v1", "namespaces").unwrap();
        let key = &path::key(rt, None, "ns1");
        assert!(matches!(
            cache.namespace(&store, "ns1").unwrap(),
            NamespaceState::Missing
        ));
        let kv = store.create(key, namespace("ns1", false)).await.unwrap();
        assert!(matches!(
            cache.namespace(&store, "ns1").unwrap(),
            NamespaceState::Active
        ));
        store
            .update(key, namespace("ns1", true), Some(kv.mod_revision))
            .await
            .unwrap();
        assert!(matches!(
            cache.namespace(&store, "ns1").unwrap(),
            NamespaceState::Terminating
        ));
        store.delete(key, None).await.unwrap();
        assert!(matches!(
            cache.namespace(&store, "ns1").unwrap(),
            NamespaceState::Missing
        ));
    }

    #[tokio::test]
    async fn priority_classes_follow_creates_updates_and_deletes() {
        let store = Store::memory();
        let cache = AdmissionCache::default();
        let class = |value: i64| {
            crate::codec::encode(&serde_json::json!({"apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass", "metadata": {"name": "high"}, "value": value}))
        };
        let rt = registry::find("scheduling.k8s.io", "v1", "priorityclasses").unwrap();
        let key = &path::key(rt, None, "high");
        assert!(cache.priority_classes(&store).unwrap().is_empty());
        let kv = store.create(key, class(10)).await.unwrap();
        let first = cache.priority_classes(&store).unwrap();
        assert_eq!(first[0]["value"], 10);
        // Unchanged: the same decoded list is handed out again.
        assert!(Arc::ptr_eq(
            &first,
            &cache.priority_classes(&store).unwrap()
        ));
        store
            .update(key, class(20), Some(kv.mod_revision))
            .await
            .unwrap();
        assert_eq!(cache.priority_classes(&store).unwrap()[0]["value"], 20);
        store.delete(key, None).await.unwrap();
        assert!(cache.priority_classes(&store).unwrap().is_empty());
    }
}
