//! A StatefulSet's `volumeClaimTemplates`, as upstream's `stateful_set_utils.go`: each pod
//! `<set>-<ordinal>` gets one PersistentVolumeClaim per template, named
//! `<template>-<set>-<ordinal>`, labelled with the template's labels and the set's
//! `selector.matchLabels`, created before the pod and reused when it already exists; the pod's
//! volume of the template's name refers to it.
//!
//! `persistentVolumeClaimRetentionPolicy` (upstream 1.32) is carried by ownerReferences, which
//! the garbage collector acts on: `whenDeleted: Delete` makes the set an owner of its claims (so
//! deleting the set deletes them); `whenScaled: Delete` makes a scaled-down pod the owner of its
//! claims (so deleting that pod deletes them). `Retain` removes the reference. Pure.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{json, Value};

/// `Retain` or `Delete`, as a retention policy names them.
const DELETE: &str = "Delete";

/// The claim of template `template` for the pod of `ordinal`.
pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

fn templates(set: &StatefulSet) -> Vec<Value> {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref())
        .and_then(|t| serde_json::to_value(t).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

fn template_name(template: &Value) -> &str {
    template["metadata"]["name"].as_str().unwrap_or("")
}

/// The claims the pod of `ordinal` uses, as they are created (without owners: see
/// [`owner_references`]).
pub fn claims_for(set: &StatefulSet, ordinal: i32) -> Vec<Value> {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let ns = set.metadata.namespace.as_deref().unwrap_or("");
    let selector = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    templates(set)
        .into_iter()
        .map(|t| {
            let mut labels = t["metadata"]["labels"].clone();
            if !labels.is_object() {
                labels = json!({});
            }
            for (k, v) in &selector {
                labels[k] = json!(v);
            }
            let mut metadata = json!({
                "name": claim_name(template_name(&t), set_name, ordinal),
                "namespace": ns,
                "labels": labels,
            });
            if let Some(a) = t["metadata"]["annotations"].as_object() {
                metadata["annotations"] = json!(a);
            }
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": metadata, "spec": t["spec"].clone()})
        })
        .collect()
}

/// Points the pod's volumes at its claims: a volume named as a template is replaced by one
/// referring to the claim, the other volumes stay.
pub fn add_volumes(pod: &mut Value, set: &StatefulSet, ordinal: i32) {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let templates = templates(set);
    if templates.is_empty() {
        return;
    }
    let mut volumes: Vec<Value> = templates
        .iter()
        .map(|t| {
            let name = template_name(t);
            json!({"name": name, "persistentVolumeClaim":
                   {"claimName": claim_name(name, set_name, ordinal)}})
        })
        .collect();
    let others = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    volumes.extend(
        others
            .into_iter()
            .filter(|v| !templates.iter().any(|t| template_name(t) == v["name"])),
    );
    pod["spec"]["volumes"] = json!(volumes);
}

/// The set's retention policy: (whenDeleted, whenScaled) each `Delete` or not.
fn policy(set: &StatefulSet) -> (bool, bool) {
    let p = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let delete = |v: Option<&String>| v.map(String::as_str) == Some(DELETE);
    (
        delete(p.and_then(|p| p.when_deleted.as_ref())),
        delete(p.and_then(|p| p.when_scaled.as_ref())),
    )
}

/// A pod a claim may be owned by: its name, uid and whether it is beyond `replicas`.
pub struct ClaimPod<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub scaled_down: bool,
}

/// The claim's ownerReferences under the set's retention policy, or `None` when they are right
/// already. As upstream: with `whenDeleted: Delete` the set owns the claim of a pod in range;
/// with `whenScaled: Delete` a scaled-down pod owns it instead; otherwise neither does. Other
/// owners the claim has are kept.
pub fn owner_references(set: &StatefulSet, pod: &ClaimPod, claim_refs: &Value) -> Option<Value> {
    let (when_deleted, when_scaled) = policy(set);
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let set_ref = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                         "name": set.metadata.name.as_deref().unwrap_or(""), "uid": set_uid});
    let pod_ref = json!({"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid});
    let (by_set, by_pod) = match (when_deleted, when_scaled) {
        (_, true) if pod.scaled_down => (false, true),
        (true, _) => (true, false),
        _ => (false, false),
    };
    let existing = claim_refs.as_array().cloned().unwrap_or_default();
    let mut refs: Vec<Value> = existing
        .iter()
        .filter(|r| r["uid"] != set_uid && r["uid"] != pod.uid)
        .cloned()
        .collect();
    let keep = |wanted: &Value| {
        existing
            .iter()
            .find(|r| r["uid"] == wanted["uid"])
            .cloned()
            .unwrap_or_else(|| wanted.clone())
    };
    if by_set {
        refs.push(keep(&set_ref));
    }
    if by_pod {
        refs.push(keep(&pod_ref));
    }
    let same = refs.len() == existing.len()
        && refs
            .iter()
            .all(|r| existing.iter().any(|e| e["uid"] == r["uid"]));
    (!same).then(|| json!(refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(policy: Value) -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "s"},
            "spec": {
                "serviceName": "web", "replicas": 2,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                "volumeClaimTemplates": [{
                    "metadata": {"name": "www", "labels": {"tier": "data"}},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}}}],
                "persistentVolumeClaimRetentionPolicy": policy,
            }
        }))
        .unwrap()
    }

    fn pod(scaled_down: bool) -> ClaimPod<'static> {
        ClaimPod {
            name: "web-1",
            uid: "p1",
            scaled_down,
        }
    }

    fn uids(refs: &Value) -> Vec<&str> {
        refs.as_array()
            .unwrap()
            .iter()
            .map(|r| r["uid"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn a_claim_is_named_after_template_set_and_ordinal_and_labelled_as_upstream() {
        let claims = claims_for(&set(json!({})), 2);
        assert_eq!(claims.len(), 1);
        let c = &claims[0];
        assert_eq!(c["metadata"]["name"], "www-web-2");
        assert_eq!(c["metadata"]["namespace"], "ns");
        assert_eq!(
            c["metadata"]["labels"],
            json!({"tier": "data", "app": "nginx"})
        );
        assert_eq!(c["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert!(c["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn the_pod_volume_of_the_template_name_refers_to_its_claim() {
        let mut p = json!({"spec": {"volumes": [
            {"name": "www", "emptyDir": {}}, {"name": "config", "configMap": {"name": "c"}}]}});
        add_volumes(&mut p, &set(json!({})), 0);
        assert_eq!(
            p["spec"]["volumes"],
            json!([{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}},
                   {"name": "config", "configMap": {"name": "c"}}])
        );
    }

    #[test]
    fn retain_retain_removes_the_set_and_pod_references() {
        let s = set(json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
        let refs = json!([{"uid": "s"}, {"uid": "p1"}, {"uid": "other"}]);
        assert_eq!(
            uids(&owner_references(&s, &pod(false), &refs).unwrap()),
            ["other"]
        );
        assert_eq!(owner_references(&s, &pod(false), &json!([])), None);
        assert_eq!(
            owner_references(&set(json!({})), &pod(true), &Value::Null),
            None
        );
    }

    #[test]
    fn when_deleted_delete_makes_the_set_the_owner() {
        let s = set(json!({"whenDeleted": "Delete", "whenScaled": "Retain"}));
        let refs = owner_references(&s, &pod(false), &Value::Null).unwrap();
        assert_eq!(refs[0]["kind"], "StatefulSet");
        assert_eq!(refs[0]["name"], "web");
        assert_eq!(uids(&refs), ["s"]);
        assert_eq!(owner_references(&s, &pod(false), &refs), None);
        // Scaled down with whenScaled Retain: still the set's.
        assert_eq!(owner_references(&s, &pod(true), &refs), None);
    }

    #[test]
    fn when_scaled_delete_hands_a_scaled_down_pods_claim_to_the_pod() {
        let s = set(json!({"whenDeleted": "Retain", "whenScaled": "Delete"}));
        assert_eq!(owner_references(&s, &pod(false), &Value::Null), None);
        let refs = owner_references(&s, &pod(true), &Value::Null).unwrap();
        assert_eq!(refs[0]["kind"], "Pod");
        assert_eq!(uids(&refs), ["p1"]);
    }

    #[test]
    fn delete_delete_moves_the_claim_from_the_set_to_a_scaled_down_pod() {
        let s = set(json!({"whenDeleted": "Delete", "whenScaled": "Delete"}));
        let in_range = owner_references(&s, &pod(false), &Value::Null).unwrap();
        assert_eq!(uids(&in_range), ["s"]);
        let condemned = owner_references(&s, &pod(true), &in_range).unwrap();
        assert_eq!(uids(&condemned), ["p1"]);
    }
}
