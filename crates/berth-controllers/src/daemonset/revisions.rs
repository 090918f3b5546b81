//! A DaemonSet's ControllerRevisions (its templates, for `kubectl rollout history ds`), kept by
//! the driver with [`crate::controller_revision::plan`], and the revision label on its pods.

use crate::controller_revision::{plan, REVISION_HASH_LABEL};
use crate::owned_pods::Owner;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Keeps the revisions of `ds` (whose pods are `pods`); returns the hash of its template's
/// revision, or `None` when it could not be recorded yet.
pub(crate) async fn record(
    client: &kube::Client,
    ds: &DaemonSet,
    pods: &[&Pod],
    all: &[Arc<ControllerRevision>],
) -> Option<String> {
    let ns = ds.metadata.namespace.clone().unwrap_or_default();
    let name = ds.metadata.name.clone().unwrap_or_default();
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let spec = ds.spec.as_ref()?;
    let template = serde_json::to_value(&spec.template).ok()?;
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let owned: Vec<&ControllerRevision> = all
        .iter()
        .map(|r| r.as_ref())
        .filter(|r| {
            r.metadata.namespace.as_deref() == Some(ns.as_str())
                && r.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid)
        })
        .collect();
    // Pods carry the hash; revisions are named `<ds>-<hash>`.
    let in_use: BTreeSet<String> = pods
        .iter()
        .filter_map(|p| p.metadata.labels.as_ref()?.get(REVISION_HASH_LABEL))
        .map(|h| format!("{name}-{h}"))
        .collect();
    let owner = Owner {
        api_version: "apps/v1",
        kind: "DaemonSet",
        name: &name,
        uid: &uid,
    };
    let limit = spec.revision_history_limit.unwrap_or(10).into();
    let p = plan(&owner, &ns, &template, &labels, &owned, limit, &in_use);
    crate::statefulset::driver::apply_revisions(client, &ns, &p)
        .await
        .then_some(p.hash)
}

/// Puts the revision label on pods about to be created.
pub(crate) fn label(create: &mut [(String, Value)], hash: &str) {
    for (_, pod) in create {
        if !pod["metadata"]["labels"].is_object() {
            pod["metadata"]["labels"] = json!({});
        }
        pod["metadata"]["labels"][REVISION_HASH_LABEL] = json!(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_daemons_carry_the_revision_hash() {
        let mut create = vec![(
            "n1".to_string(),
            json!({"metadata": {"labels": {"app": "a"}}}),
        )];
        label(&mut create, "abc");
        assert_eq!(
            create[0].1["metadata"]["labels"][REVISION_HASH_LABEL],
            "abc"
        );
        assert_eq!(create[0].1["metadata"]["labels"]["app"], "a");
    }
}
