//! ResourceQuota admission (upstream `plugin/pkg/admission/resourcequota`): a new object that
//! a namespace's quotas count must fit in what each quota still allows, or it is refused with
//! upstream's words (`exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3`,
//! `must specify limits.cpu for: c`, `status unknown for quota: q, resources: pods`).
//!
//! What is used is counted from the store at admission (the objects of the namespace the
//! quota counts), not read from the quota's status, which its controller fills afterwards:
//! so a burst of creates is refused at the limit without waiting for the controller, and a
//! namespace without quotas costs one empty store range. Upstream instead charges the quota's
//! status in admission; two creates admitted at the same moment may both pass here.

use super::namespace_objects;
use super::{ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::path;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_core::quantity::{self, Quantity};
use berth_core::quota::{self, Usage};
use berth_store::Store;
use serde_json::Value;

pub const REGISTRATION: Registration = Registration {
    name: "ResourceQuota",
    on_by_default: true,
    build,
};

struct ResourceQuota {
    store: Store,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(ResourceQuota {
        store: handles.store.clone(),
    }))
}

impl Plugin for ResourceQuota {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if !rt.namespaced || !rt.allows("get") {
            // Cluster objects, and create-only kinds (bindings, reviews), are not counted.
            return Ok(());
        }
        let namespace = meta_str(obj, "namespace");
        let quotas = namespace_objects::list(&self.store, "", "resourcequotas", namespace)?;
        if quotas.is_empty() {
            return Ok(());
        }
        // Versions of one resource share their group: the object counts as its resource.
        let group = rt.group;
        let requested = quota::usage(group, rt.plural, obj);
        let forbidden = |detail: String| {
            ApiError::Forbidden(format!(
                "{} \"{}\" is forbidden: {detail}",
                path::qualified_resource(rt),
                meta_str(obj, "name")
            ))
        };
        let mut used: Option<Usage> = None;
        for q in &quotas {
            let hard = list(&q["spec"]["hard"]);
            if !quota::quota_selects(q, rt.plural, obj) {
                continue;
            }
            let name = meta_str(q, "name");
            if group.is_empty() && rt.plural == "pods" {
                let names: Vec<&str> = hard.keys().map(String::as_str).collect();
                if let Some(missing) = quota::missing_container_resources(&names, obj) {
                    return Err(forbidden(format!("failed quota: {name}: {missing}")));
                }
            }
            let limited: Vec<&String> =
                hard.keys().filter(|r| requested.contains_key(*r)).collect();
            if limited.is_empty() {
                continue;
            }
            if q["status"]["hard"].as_object().is_none() {
                let names: Vec<&str> = limited.iter().map(|s| s.as_str()).collect();
                return Err(forbidden(format!(
                    "status unknown for quota: {name}, resources: {}",
                    names.join(",")
                )));
            }
            let in_use = match &used {
                Some(u) => u.clone(),
                None => {
                    let u = self.usage_of(group, rt.plural, namespace)?;
                    used = Some(u.clone());
                    u
                }
            };
            let in_use = self.scoped(q, group, rt.plural, namespace, in_use)?;
            let mut over = (Usage::new(), Usage::new(), Usage::new());
            for r in limited {
                let want = requested[r];
                let now = in_use.get(r).cloned().unwrap_or_default();
                let total = now.checked_add(&want).unwrap_or(now);
                if total > hard[r] {
                    over.0.insert(r.clone(), want);
                    over.1.insert(r.clone(), now);
                    over.2.insert(r.clone(), hard[r]);
                }
            }
            if !over.0.is_empty() {
                return Err(forbidden(format!(
                    "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                    quota::pretty(&over.0),
                    quota::pretty(&over.1),
                    quota::pretty(&over.2)
                )));
            }
        }
        Ok(())
    }
}

impl ResourceQuota {
    /// What the objects of `plural` in `namespace` use now, unscoped.
    fn usage_of(&self, group: &str, plural: &str, namespace: &str) -> ApiResult<Usage> {
        let mut total = Usage::new();
        for o in namespace_objects::list(&self.store, group, plural, namespace)? {
            quota::add_all(&mut total, &quota::usage(group, plural, &o));
        }
        Ok(total)
    }

    /// `unscoped` when the quota has no scopes, else what only the objects it selects use.
    fn scoped(
        &self,
        q: &Value,
        group: &str,
        plural: &str,
        namespace: &str,
        unscoped: Usage,
    ) -> ApiResult<Usage> {
        let has_scopes = q["spec"]["scopes"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
            || q["spec"]["scopeSelector"].is_object();
        if !has_scopes {
            return Ok(unscoped);
        }
        let mut total = Usage::new();
        for o in namespace_objects::list(&self.store, group, plural, namespace)? {
            if quota::quota_selects(q, plural, &o) {
                quota::add_all(&mut total, &quota::usage(group, plural, &o));
            }
        }
        Ok(total)
    }
}

/// A `ResourceList` as quantities (unparseable entries left out: validation refuses them).
fn list(v: &Value) -> std::collections::BTreeMap<String, Quantity> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q)))
        .collect()
}
