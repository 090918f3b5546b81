//! ResourceQuota admission (upstream `plugin/pkg/admission/resourcequota`): a new object that
//! a namespace's quotas count must fit in what each quota still allows, or it is refused with
//! upstream's words (`exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3`,
//! `must specify limits.cpu for: c`, `status unknown for quota: q, resources: pods`).
//!
//! Admission charges the quota, as upstream's quota evaluator does: the object's use is added
//! to the quota's `status.used` by a write conditioned on the quota's resourceVersion, before
//! the object is stored. A write that finds the quota changed reads the quotas again and
//! decides again ([`RETRIES`] times, then the create fails with the conflict), so of creates
//! racing for the last unit exactly one wins, across API servers sharing one store too.
//! Within one server the creates of a namespace take their turn ([`NamespaceTurns`]), as
//! upstream's evaluator works one namespace at a time, so they do not race at all.
//!
//! What is used is the larger of the quota's charged status and what its objects in the
//! store use ([`evaluate::in_use`]): a burst is refused at the limit even where the quota
//! controller has not yet recounted after objects were created before the quota.
//!
//! A charged create whose own store write then fails (a name taken, a store error) leaves the
//! quota over-charged, as upstream does, until the quota controller recounts (on its next
//! pass: any change to quotas or pods, at most `RESYNC` later). The other way round, a recount
//! that runs between an object's charge and its store write does not see the object, and
//! lowers `status.used` until its write shows; that window (a few milliseconds, against the
//! controller's 20 ms gathering) is upstream's too.
//!
//! The check runs last, after validation and the validating webhooks (upstream's place for
//! ResourceQuota), so an object that would be refused anyway charges nothing. A dry run is
//! checked but charges nothing. A namespace without quotas costs one store range that finds
//! nothing, as before charging existed.

mod evaluate;

use super::namespace_objects;
use super::{Charging, ConfigError, Handles, Plugin, Registration};
use crate::codec::{self, meta_str};
use crate::error::{from_store, ApiError, ApiResult};
use crate::path;
use berth_api::registry::{self, ResourceType};
use berth_core::quota::{self, Usage};
use berth_store::Store;
use serde_json::Value;
use std::collections::BTreeSet;

pub const REGISTRATION: Registration = Registration {
    name: "ResourceQuota",
    on_by_default: true,
    build,
};

/// How many times a charge that found its quota changed is decided again (upstream's 3).
pub const RETRIES: usize = 3;

struct ResourceQuota {
    store: Store,
    turns: NamespaceTurns,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(ResourceQuota {
        store: handles.store.clone(),
        turns: NamespaceTurns::default(),
    }))
}

impl Plugin for ResourceQuota {
    fn charge_create<'a>(
        &'a self,
        rt: &'a ResourceType,
        obj: &'a Value,
        dry_run: bool,
    ) -> Option<Charging<'a>> {
        if !rt.namespaced || !rt.allows("get") {
            // Cluster objects, and create-only kinds (bindings, reviews), are not counted.
            return None;
        }
        // The common case, a namespace without quotas, stops here: one empty range, nothing
        // allocated.
        let namespace = meta_str(obj, "namespace");
        match namespace_objects::any(&self.store, "", "resourcequotas", namespace) {
            Ok(false) => None,
            Ok(true) => Some(Box::pin(self.charge(rt, obj, dry_run))),
            Err(e) => Some(Box::pin(async move { Err::<(), ApiError>(e) })),
        }
    }
}

/// One quota's charge, ready to write.
struct Charge {
    name: String,
    revision: i64,
    quota: Value,
}

impl ResourceQuota {
    /// Checks `obj` against its namespace's quotas and charges each quota that counts it.
    async fn charge(&self, rt: &ResourceType, obj: &Value, dry_run: bool) -> ApiResult<()> {
        let namespace = meta_str(obj, "namespace");
        let _turn = self.turns.take(namespace).await;
        let Some(quotas_rt) = registry::find("", "v1", "resourcequotas") else {
            return Ok(());
        };
        // Quotas already charged in an earlier attempt: not charged twice.
        let mut charged: BTreeSet<String> = BTreeSet::new();
        let mut conflict = None;
        for _attempt in 0..=RETRIES {
            let quotas = namespace_objects::list(&self.store, "", "resourcequotas", namespace)?;
            let quotas: Vec<Value> = quotas
                .into_iter()
                .filter(|q| !charged.contains(meta_str(q, "name")))
                .collect();
            let charges = self.decide(rt, obj, &quotas)?;
            if charges.is_empty() || dry_run {
                return Ok(());
            }
            conflict = None;
            for c in charges {
                let key = path::key(quotas_rt, Some(namespace), &c.name);
                let bytes = codec::encode_for(&c.quota, quotas_rt);
                match self.store.update(&key, bytes, Some(c.revision)).await {
                    Ok(_) => {
                        charged.insert(c.name);
                    }
                    // Deleted since it was read: it counts nothing any more.
                    Err(berth_store::Error::NotFound { .. }) => {
                        charged.insert(c.name);
                    }
                    Err(e @ berth_store::Error::Conflict { .. }) => conflict = Some((e, c.name)),
                    Err(e) => return Err(ApiError::Internal(e.to_string())),
                }
            }
            if conflict.is_none() {
                return Ok(());
            }
        }
        match conflict {
            Some((e, name)) => Err(from_store(e, "resourcequotas", &name)),
            None => Ok(()),
        }
    }

    /// The charge of every quota of `quotas` that counts `obj`, or the first refusal.
    fn decide(&self, rt: &ResourceType, obj: &Value, quotas: &[Value]) -> ApiResult<Vec<Charge>> {
        let (group, plural, namespace) = (rt.group, rt.plural, meta_str(obj, "namespace"));
        let requested = quota::usage(group, plural, obj);
        let forbidden = |detail: String| {
            ApiError::Forbidden(format!(
                "{} \"{}\" is forbidden: {detail}",
                path::qualified_resource(rt),
                meta_str(obj, "name")
            ))
        };
        let mut counting = Vec::new();
        for q in quotas {
            if let Some(limited) =
                evaluate::limited(q, group, plural, obj, &requested).map_err(forbidden)?
            {
                counting.push((q, limited));
            }
        }
        let mut unscoped: Option<Usage> = None;
        let mut charges = Vec::new();
        for (q, limited) in counting {
            let counted = if has_scopes(q) {
                self.counted(group, plural, namespace, Some(q))?
            } else {
                if unscoped.is_none() {
                    unscoped = Some(self.counted(group, plural, namespace, None)?);
                }
                unscoped.clone().unwrap_or_default()
            };
            let used = evaluate::in_use(q, &counted);
            let status_used = evaluate::charge(q, &limited, &used).map_err(forbidden)?;
            let mut quota = q.clone();
            quota["status"]["used"] = status_used;
            charges.push(Charge {
                name: meta_str(q, "name").to_string(),
                revision: meta_str(q, "resourceVersion").parse().unwrap_or(0),
                quota,
            });
        }
        Ok(charges)
    }

    /// What the stored objects of `plural` in `namespace` use: all of them, or those `quota`
    /// selects.
    fn counted(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        quota: Option<&Value>,
    ) -> ApiResult<Usage> {
        let mut total = Usage::new();
        for o in namespace_objects::list(&self.store, group, plural, namespace)? {
            if quota.is_none_or(|q| quota::quota_selects(q, plural, &o)) {
                quota::add_all(&mut total, &quota::usage(group, plural, &o));
            }
        }
        Ok(total)
    }
}

fn has_scopes(q: &Value) -> bool {
    q["spec"]["scopes"]
        .as_array()
        .is_some_and(|s| !s.is_empty())
        || q["spec"]["scopeSelector"].is_object()
}

/// How many locks the namespaces share.
const TURN_LOCKS: usize = 64;

/// Turns for the charging creates of each namespace: a fixed set of locks, a namespace
/// always taking the same one, so memory stays bounded whatever the number of namespaces
/// (two namespaces sharing a lock only wait for each other).
struct NamespaceTurns {
    locks: Box<[tokio::sync::Mutex<()>]>,
}

impl Default for NamespaceTurns {
    fn default() -> NamespaceTurns {
        NamespaceTurns {
            locks: (0..TURN_LOCKS)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        }
    }
}

impl NamespaceTurns {
    async fn take(&self, namespace: &str) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        namespace.hash(&mut h);
        let i = (h.finish() % self.locks.len() as u64) as usize;
        self.locks[i].lock().await
    }
}

#[cfg(test)]
mod tests;
