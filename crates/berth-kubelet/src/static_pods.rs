//! Static pods: the pod manifests of a pool's `staticPods` (what a kubelet reads from its
//! `staticPodPath`). The kubelet runs them without the API's say, and makes a mirror pod for
//! each so that the API shows them: named `<pod>-<node>`, bound to the node, annotated
//! `kubernetes.io/config.mirror` (and upstream's `config.hash`, `config.source`,
//! `config.seen`), owned by the Node (a controller reference, as 1.35's NodeRestriction
//! demands), and created with the node's own credentials. Pure: the driver creates them.

use serde_json::{json, Value};

/// The annotation that marks a mirror pod (its value: the static pod's hash).
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Why a static pod manifest cannot run, if it cannot.
pub fn check(manifest: &Value) -> Result<(), String> {
    if !manifest.is_object() {
        return Err("must be a pod manifest (a map)".into());
    }
    if let Some(kind) = manifest.get("kind").and_then(Value::as_str) {
        if kind != "Pod" {
            return Err(format!("kind {kind:?} is not a Pod"));
        }
    }
    let name = manifest["metadata"]["name"].as_str().unwrap_or("");
    if name.is_empty() {
        return Err("metadata.name: Required value".into());
    }
    let containers = manifest["spec"]["containers"].as_array();
    if containers.is_none_or(|c| c.is_empty()) {
        return Err("spec.containers: Required value".into());
    }
    if manifest["spec"]
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(
            "spec.serviceAccountName: static pods may not reference a service account".into(),
        );
    }
    Ok(())
}

/// A stable hash of the manifest (upstream hashes the pod with its source; a hex of FNV-1a here).
pub(crate) fn hash(manifest: &Value, node: &str) -> String {
    let text = format!("{node}/{manifest}");
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

/// The mirror pod of `manifest` on `node` (whose uid is `node_uid`), seen at `seen`.
pub fn mirror_pod(manifest: &Value, node: &str, node_uid: &str, seen: &str) -> Value {
    let mut pod = manifest.clone();
    let name = manifest["metadata"]["name"].as_str().unwrap_or("");
    let h = hash(manifest, node);
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    let meta = &mut pod["metadata"];
    meta["name"] = json!(format!("{name}-{node}"));
    if meta["namespace"].as_str().is_none_or(str::is_empty) {
        meta["namespace"] = json!("default");
    }
    if !meta["annotations"].is_object() {
        meta["annotations"] = json!({});
    }
    let annotations = &mut meta["annotations"];
    annotations[MIRROR_ANNOTATION] = json!(h);
    annotations["kubernetes.io/config.hash"] = json!(h);
    annotations["kubernetes.io/config.source"] = json!("file");
    annotations["kubernetes.io/config.seen"] = json!(seen);
    meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": node,
                                      "uid": node_uid, "controller": true}]);
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        if let Some(m) = meta.as_object_mut() {
            m.remove(field);
        }
    }
    pod["spec"]["nodeName"] = json!(node);
    if let Some(spec) = pod["spec"].as_object_mut() {
        // The kubelet runs static pods itself: no account, no token.
        spec.insert("automountServiceAccountToken".into(), json!(false));
    }
    if let Some(p) = pod.as_object_mut() {
        p.remove("status");
    }
    pod
}

/// Whether the pod `namespace/name` is the mirror of one of `manifests` on `node`: when it is
/// deleted, the kubelet makes it again, as upstream's does on its next sync (a static pod runs
/// whatever the API says; the mirror only shows it).
pub fn is_mirror_of(manifests: &[Value], node: &str, namespace: &str, name: &str) -> bool {
    manifests.iter().any(|m| {
        let ns = m["metadata"]["namespace"]
            .as_str()
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default");
        let own = m["metadata"]["name"].as_str().unwrap_or("");
        ns == namespace && name.strip_suffix(node).and_then(|n| n.strip_suffix('-')) == Some(own)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_is_known_by_its_name_and_namespace() {
        let manifests = [
            json!({"metadata": {"name": "web", "namespace": "default"}}),
            json!({"metadata": {"name": "etcd", "namespace": "kube-system"}}),
            json!({"metadata": {"name": "bare"}}),
        ];
        assert!(is_mirror_of(
            &manifests,
            "master-1",
            "default",
            "web-master-1"
        ));
        assert!(is_mirror_of(
            &manifests,
            "master-1",
            "kube-system",
            "etcd-master-1"
        ));
        assert!(is_mirror_of(
            &manifests,
            "master-1",
            "default",
            "bare-master-1"
        ));
        assert!(!is_mirror_of(
            &manifests,
            "master-1",
            "kube-system",
            "web-master-1"
        ));
        assert!(!is_mirror_of(
            &manifests,
            "master-1",
            "default",
            "web-master-2"
        ));
        assert!(!is_mirror_of(
            &manifests,
            "master-1",
            "default",
            "webmaster-1"
        ));
        assert!(!is_mirror_of(
            &manifests,
            "master-1",
            "default",
            "other-master-1"
        ));
    }

    #[test]
    fn a_mirror_pod_names_its_node_and_is_owned_by_it() {
        let manifest = json!({"metadata": {"name": "etcd", "namespace": "kube-system"},
                              "spec": {"containers": [{"name": "etcd", "image": "etcd"}]}});
        let m = mirror_pod(&manifest, "master-1", "uid-1", "t");
        assert_eq!(m["metadata"]["name"], "etcd-master-1");
        assert_eq!(m["metadata"]["namespace"], "kube-system");
        assert_eq!(m["spec"]["nodeName"], "master-1");
        let a = &m["metadata"]["annotations"];
        assert_eq!(a[MIRROR_ANNOTATION], a["kubernetes.io/config.hash"]);
        assert_eq!(a["kubernetes.io/config.source"], "file");
        assert_eq!(
            m["metadata"]["ownerReferences"][0],
            json!({"apiVersion": "v1", "kind": "Node", "name": "master-1", "uid": "uid-1", "controller": true})
        );
        // Stable per node and manifest.
        assert_eq!(
            mirror_pod(&manifest, "master-1", "uid-1", "t2")["metadata"]["annotations"]
                [MIRROR_ANNOTATION],
            a[MIRROR_ANNOTATION]
        );
        let no_ns = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        assert_eq!(
            mirror_pod(&no_ns, "n", "u", "t")["metadata"]["namespace"],
            "default"
        );
    }

    #[test]
    fn bad_manifests_say_why() {
        let cases = [
            (json!("x"), "must be a pod manifest (a map)"),
            (
                json!({"kind": "Deployment", "metadata": {"name": "d"}}),
                "kind \"Deployment\" is not a Pod",
            ),
            (
                json!({"spec": {"containers": [{"name": "c"}]}}),
                "metadata.name: Required value",
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {}}),
                "spec.containers: Required value",
            ),
        ];
        for (m, want) in cases {
            assert_eq!(check(&m), Err(want.to_string()));
        }
    }
}
