//! The local APIServices: one for every group version this server serves itself, as
//! upstream's autoregister controller keeps them (`v1.` for the core group, `v1.apps`, ...,
//! `v1beta1.metrics.k8s.io`, and those of CustomResourceDefinitions), with no
//! `spec.service` and `Available=True` (`Local`). Built-in ones are labelled
//! `kube-aggregator.kubernetes.io/automanaged: onstart`, those of CRDs `true`; an automanaged
//! APIService whose group version is no longer served is deleted, and the user's own
//! APIServices are never touched.

use crate::codec::encode;
use berth_core::clock::Clock;
use berth_store::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The label that marks an APIService as kept by this server.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The condition every local APIService has.
pub const LOCAL_REASON: &str = "Local";
pub const LOCAL_MESSAGE: &str = "Local APIServices are always available";

/// One group version served locally, with its priorities and how it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// `onstart` (built in) or `true` (a CRD's).
    pub managed: &'static str,
}

impl Local {
    /// `<version>.<group>`.
    pub fn name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }

    /// The object this server keeps for it.
    pub fn object(&self, ts: &str) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": self.name(), "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": ts, "labels": {AUTOMANAGED: self.managed}},
            "spec": {"group": self.group, "version": self.version,
                "groupPriorityMinimum": self.group_priority, "versionPriority": self.version_priority},
            "status": {"conditions": [local_condition(ts)]}})
    }
}

/// `Available=True`, reason `Local`.
pub fn local_condition(ts: &str) -> Value {
    json!({"type": "Available", "status": "True", "lastTransitionTime": ts,
        "reason": LOCAL_REASON, "message": LOCAL_MESSAGE})
}

/// upstream's priorities of the built-in group versions (`apiVersionPriorities`); other
/// groups get [`default_priorities`].
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("resource.k8s.io", "v1", 15900, 15),
];

/// Priorities of a group version upstream's table does not name: the group's priority from
/// the table (any version), else what its usual server registers it with (metrics-server's
/// 100, OpenShift's 9900), else 1000; versions GA 15, beta 9, alpha 1.
fn default_priorities(group: &str, version: &str) -> (i64, i64) {
    let group_priority = PRIORITIES
        .iter()
        .find(|(g, ..)| *g == group)
        .map(|(_, _, gp, _)| *gp)
        .unwrap_or(if group == "metrics.k8s.io" {
            100
        } else if group.ends_with(".openshift.io") {
            9900
        } else {
            1000
        });
    let version_priority = if group == "metrics.k8s.io" {
        100
    } else if version.contains("alpha") {
        1
    } else if version.contains("beta") {
        9
    } else {
        15
    };
    (group_priority, version_priority)
}

/// The local APIServices of the registry's group versions and of `custom` ones (the CRDs'
/// `(group, version)`s).
pub fn desired(custom: &[(String, String)]) -> BTreeMap<String, Local> {
    let mut out = BTreeMap::new();
    for group in berth_api::registry::groups() {
        for version in berth_api::registry::versions(group) {
            let (group_priority, version_priority) = PRIORITIES
                .iter()
                .find(|(g, v, ..)| *g == group && *v == version)
                .map(|(_, _, gp, vp)| (*gp, *vp))
                .unwrap_or_else(|| default_priorities(group, version));
            let local = Local {
                group: group.to_string(),
                version: version.to_string(),
                group_priority,
                version_priority,
                managed: "onstart",
            };
            out.insert(local.name(), local);
        }
    }
    for (group, version) in custom {
        let local = Local {
            group: group.clone(),
            version: version.clone(),
            group_priority: 1000,
            version_priority: 100,
            managed: "true",
        };
        out.entry(local.name()).or_insert(local);
    }
    out
}

/// What to do about one stored or wanted APIService.
#[derive(Debug, PartialEq)]
pub enum Action {
    Create(Value),
    Update { name: String, object: Value },
    Delete(String),
}

/// The writes that bring the stored APIServices to `desired`: missing ones created, ours
/// whose spec differs put back, ours no longer served deleted. A stored APIService that is
/// not ours keeps its group version (the user registered it there).
pub fn plan(stored: &[Value], desired: &BTreeMap<String, Local>, ts: &str) -> Vec<Action> {
    let mut actions = Vec::new();
    let by_name: BTreeMap<&str, &Value> = stored
        .iter()
        .filter_map(|o| Some((o["metadata"]["name"].as_str()?, o)))
        .collect();
    for (name, local) in desired {
        let Some(existing) = by_name.get(name.as_str()) else {
            actions.push(Action::Create(local.object(ts)));
            continue;
        };
        let ours = existing["metadata"]["labels"][AUTOMANAGED].is_string();
        if !ours {
            continue;
        }
        let want = &local.object(ts)["spec"];
        if existing["spec"] != *want {
            let mut object = (*existing).clone();
            object["spec"] = want.clone();
            actions.push(Action::Update {
                name: name.clone(),
                object,
            });
        }
    }
    for (name, existing) in by_name {
        let ours = existing["metadata"]["labels"][AUTOMANAGED].is_string();
        if ours && !desired.contains_key(name) {
            actions.push(Action::Delete(name.to_string()));
        }
    }
    actions
}

/// Carries out [`plan`] on the store; conflicts (another replica's write) are left to the
/// next pass.
pub async fn reconcile(
    store: &Store,
    clock: &Clock,
    desired: &BTreeMap<String, Local>,
) -> Result<(), berth_store::Error> {
    let listed = store.range(super::PREFIX, None, 0, None)?;
    let stored: Vec<Value> = listed
        .kvs
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect();
    let revisions: BTreeMap<String, i64> = listed
        .kvs
        .iter()
        .map(|kv| {
            (
                kv.key.strip_prefix(super::PREFIX).unwrap_or("").to_string(),
                kv.mod_revision,
            )
        })
        .collect();
    let key = |name: &str| format!("{}{name}", super::PREFIX);
    for action in plan(&stored, desired, &clock.timestamp()) {
        let result = match &action {
            Action::Create(object) => {
                let name = object["metadata"]["name"].as_str().unwrap_or("");
                store.create(&key(name), encode(object)).await.map(|_| ())
            }
            Action::Update { name, object } => store
                .update(&key(name), encode(object), revisions.get(name).copied())
                .await
                .map(|_| ()),
            Action::Delete(name) => store
                .delete(&key(name), revisions.get(name).copied())
                .await
                .map(|_| ()),
        };
        match result {
            Ok(())
            | Err(berth_store::Error::AlreadyExists { .. })
            | Err(berth_store::Error::Conflict { .. })
            | Err(berth_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_group_version_has_a_local_api_service() {
        let want = desired(&[("stable.example.com".into(), "v1".into())]);
        let core = &want["v1."];
        assert_eq!(
            (
                core.group.as_str(),
                core.group_priority,
                core.version_priority
            ),
            ("", 18000, 1)
        );
        assert_eq!(want["v1.apps"].group_priority, 17800);
        assert!(want.contains_key("v1beta1.metrics.k8s.io"));
        assert!(want.contains_key("v1.apiregistration.k8s.io"));
        assert_eq!(want["v1.stable.example.com"].managed, "true");
        assert_eq!(want["v1.stable.example.com"].group_priority, 1000);
        let object = core.object("2026-01-01T00:00:00Z");
        assert!(object["spec"].get("service").is_none());
        assert!(crate::strategy::apiregistration::validate(&object).is_empty());
        for local in want.values() {
            let errs = crate::strategy::apiregistration::validate(&local.object("t"));
            assert!(errs.is_empty(), "{}: {errs:?}", local.name());
        }
    }

    #[test]
    fn the_plan_creates_restores_and_deletes_only_its_own() {
        let want = desired(&[]);
        let apps = want["v1.apps"].object("t");
        let mut changed = apps.clone();
        changed["spec"]["versionPriority"] = json!(1);
        let gone = Local {
            group: "gone.example.com".into(),
            version: "v1".into(),
            group_priority: 1000,
            version_priority: 100,
            managed: "true",
        }
        .object("t");
        let users = json!({"metadata": {"name": "v1.batch"},
            "spec": {"group": "batch", "version": "v1", "service": {"namespace": "x", "name": "y"}}});
        let actions = plan(&[changed, gone, users], &want, "t");
        assert!(actions.contains(&Action::Update {
            name: "v1.apps".into(),
            object: apps
        }));
        assert!(actions.contains(&Action::Delete("v1.gone.example.com".into())));
        assert!(!actions
            .iter()
            .any(|a| matches!(a, Action::Update { name, .. } if name == "v1.batch")));
        let creates = actions
            .iter()
            .filter(|a| matches!(a, Action::Create(_)))
            .count();
        assert_eq!(creates, want.len() - 2);
    }
}
