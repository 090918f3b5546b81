//! What a write to a `/status` subresource may change of an object's metadata, kind by kind,
//! as upstream's status strategies (`PrepareForUpdate`) decide.
//!
//! Upstream's status strategies reset the spec, not the metadata: a status write that adds a
//! label or an annotation keeps it (the namespace conformance spec patches `/status` with an
//! annotation). A few kinds reset part of the metadata: a pod's owner references (old kubelets
//! corrupted them), a Deployment's labels, and all of a flow-control object's metadata but its
//! managed fields. Identity and server-managed members (uid, creationTimestamp, deletion
//! fields, generation) are kept from the stored object by every write, status or not.

use berth_api::registry::ResourceType;
use serde_json::Value;

/// The metadata members a status write of `rt` takes from the stored object instead of the
/// request; `None` for all of them but `managedFields`.
fn reset_members(rt: &ResourceType) -> Option<&'static [&'static str]> {
    match (rt.group, rt.kind) {
        ("", "Pod") => Some(&["ownerReferences"]),
        ("apps", "Deployment") => Some(&["labels"]),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration") => None,
        _ => Some(&[]),
    }
}

/// Puts back into `new`'s metadata what a status write of `rt` may not change of `old`'s.
pub fn keep_reset_metadata(rt: &ResourceType, old: &Value, new: &mut Value) {
    let old_meta = old.get("metadata").and_then(Value::as_object);
    let Some(new_obj) = new.as_object_mut() else {
        return;
    };
    match reset_members(rt) {
        Some([]) => {}
        Some(members) => {
            let meta = new_obj
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            let Some(meta) = meta.as_object_mut() else {
                return;
            };
            for member in members {
                match old_meta.and_then(|m| m.get(*member)) {
                    Some(v) => meta.insert((*member).to_string(), v.clone()),
                    None => meta.remove(*member),
                };
            }
        }
        None => {
            let managed = new_obj
                .get("metadata")
                .and_then(|m| m.get("managedFields"))
                .cloned();
            let mut meta = old_meta.cloned().unwrap_or_default();
            match managed {
                Some(m) => meta.insert("managedFields".into(), m),
                None => meta.remove("managedFields"),
            };
            new_obj.insert("metadata".into(), Value::Object(meta));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(api_version: &str, kind: &str) -> &'static ResourceType {
        berth_api::registry::find_kind(api_version, kind).unwrap()
    }

    #[test]
    fn status_writes_keep_the_metadata_changes_each_kind_allows() {
        let old = json!({"metadata": {"name": "x", "labels": {"a": "1"},
            "ownerReferences": [{"uid": "u1"}], "managedFields": [{"manager": "m0"}]}});
        let new = json!({"metadata": {"name": "x", "labels": {"a": "2"},
            "annotations": {"n": "v"}, "ownerReferences": [{"uid": "u2"}],
            "managedFields": [{"manager": "m1"}]}});
        let cases = [
            (
                "a namespace keeps every metadata change",
                rt("v1", "Namespace"),
                new["metadata"].clone(),
            ),
            (
                "a node keeps every metadata change",
                rt("v1", "Node"),
                new["metadata"].clone(),
            ),
            (
                "a pod keeps its owner references",
                rt("v1", "Pod"),
                json!({"name": "x", "labels": {"a": "2"}, "annotations": {"n": "v"},
                    "ownerReferences": [{"uid": "u1"}], "managedFields": [{"manager": "m1"}]}),
            ),
            (
                "a Deployment keeps its labels",
                rt("apps/v1", "Deployment"),
                json!({"name": "x", "labels": {"a": "1"}, "annotations": {"n": "v"},
                    "ownerReferences": [{"uid": "u2"}], "managedFields": [{"manager": "m1"}]}),
            ),
            (
                "a FlowSchema keeps all its metadata but the managed fields",
                rt("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
                json!({"name": "x", "labels": {"a": "1"}, "ownerReferences": [{"uid": "u1"}],
                    "managedFields": [{"manager": "m1"}]}),
            ),
        ];
        for (name, rt, want) in cases {
            let mut got = new.clone();
            keep_reset_metadata(rt, &old, &mut got);
            assert_eq!(got["metadata"], want, "{name}");
        }
    }
}
