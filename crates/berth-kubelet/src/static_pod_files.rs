//! The kubelet's file source (upstream's `pkg/kubelet/config/file.go`): the pod manifests in
//! the directory a KubeletConfiguration's `staticPodPath` names run as static pods, each
//! mirrored in the API as [`crate::static_pods`] describes. The directory is read again on
//! every sync of the kubelet (its housekeeping interval, 10 s by default; upstream re-lists
//! every 20 s, `fileCheckFrequency`, and also watches the directory): a file added starts its
//! pod, a file changed replaces the pod (its mirror is made again with the new manifest), a
//! file removed stops it (its mirror is deleted). As upstream, files whose names start with
//! `.` and subdirectories are skipped, and a file that is not one valid pod manifest (YAML or
//! JSON) is reported and skipped; a directory that does not exist holds no pods.
//!
//! A mirror is deleted when no static pod of the node makes it any more, whatever the kubelet
//! saw before (upstream's `deleteOrphanedMirrorPods` on each sync): so a file removed while the
//! kubelet was down loses its mirror at the first pass after the restart.
//!
//! The decisions ([`parse`], [`orphaned`], [`mirror_action`]) are pure; [`run`] is the driver.

use crate::static_pods;
use berth_core::clock::Clock;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::ResourceExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Whether a directory entry named `name` is read as a manifest (upstream globs `[^.]*`).
pub fn visible(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.')
}

/// The pod manifest in the file `name` (YAML or JSON), or why it cannot run.
pub fn parse(name: &str, text: &str) -> Result<Value, String> {
    let pod: Value = serde_saphyr::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    static_pods::check(&pod).map_err(|reason| format!("{name}: {reason}"))?;
    Ok(pod)
}

/// A static pod's mirror: its namespace and name on `node`.
pub fn mirror_key(manifest: &Value, node: &str) -> (String, String) {
    let ns = manifest["metadata"]["namespace"]
        .as_str()
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default");
    let name = manifest["metadata"]["name"].as_str().unwrap_or("");
    (ns.to_string(), format!("{name}-{node}"))
}

/// The node's `mirrors` that no static pod makes any more: neither a manifest of the
/// directory (`current`) nor one of the node's other static pods (`kept`, from its pool's
/// cluster file). Their files were removed (or renamed the pod), now or while the kubelet
/// was down, so their pods stop.
pub fn orphaned<'a>(
    mirrors: impl IntoIterator<Item = &'a (String, String)>,
    current: &[Value],
    kept: &[Value],
    node: &str,
) -> Vec<(String, String)> {
    let made: BTreeSet<_> = current
        .iter()
        .chain(kept)
        .map(|m| mirror_key(m, node))
        .collect();
    let mut gone: Vec<_> = mirrors
        .into_iter()
        .filter(|k| !made.contains(*k))
        .cloned()
        .collect();
    gone.sort();
    gone.dedup();
    gone
}

/// What a pass does about one static pod's mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorAction {
    /// The mirror shows this manifest.
    Keep,
    /// There is no mirror: make it.
    Create,
    /// The mirror shows another version of the manifest (its file changed): delete it, make
    /// the new one.
    Replace,
}

/// What to do given the mirror's `kubernetes.io/config.mirror` hash, if a mirror exists.
pub fn mirror_action(existing_hash: Option<&str>, manifest: &Value, node: &str) -> MirrorAction {
    match existing_hash {
        None => MirrorAction::Create,
        Some(h) if h == static_pods::hash(manifest, node) => MirrorAction::Keep,
        Some(_) => MirrorAction::Replace,
    }
}

/// The manifests in `dir`, in file name order, and the files that could not be read; an
/// error when the directory itself could not be read (its pods are then left as they are).
async fn read_dir(dir: &str) -> Result<(Vec<Value>, Vec<String>), String> {
    let (mut pods, mut errors) = (Vec::new(), Vec::new());
    let mut entries = match tokio::fs::read_dir(dir).await {
        Ok(e) => e,
        // No directory, no static pods (upstream logs it and goes on).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((pods, errors)),
        Err(e) => return Err(format!("{dir}: {e}")),
    };
    let mut files = Vec::new();
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().await.is_ok_and(|t| t.is_file());
        if visible(&name) && is_file {
            files.push((name, entry.path()));
        }
    }
    files.sort();
    for (name, path) in files {
        let parsed = match tokio::fs::read_to_string(&path).await {
            Ok(text) => parse(&name, &text),
            Err(e) => Err(format!("{name}: {e}")),
        };
        match parsed {
            Ok(pod) => pods.push(pod),
            Err(e) => errors.push(e),
        }
    }
    Ok((pods, errors))
}

/// The file source of `node`: reads `dir` every `every` and keeps the mirror pods of its
/// manifests as the files say, through the node's own `client`; `kept` are the node's other
/// static pods, whose mirrors are not this source's to delete. Runs until the process ends.
pub async fn run(
    client: kube::Client,
    node: String,
    dir: String,
    kept: Vec<Value>,
    clock: Clock,
    every: Duration,
) {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let mut reported: Vec<String> = Vec::new();
    let mut ticks = clock.interval(every);
    loop {
        ticks.tick().await;
        let node_uid = match nodes.get(&node).await {
            Ok(n) => n.metadata.uid.unwrap_or_default(),
            Err(e) => {
                tracing::debug!(node = %node, error = %e, "reading the node for its static pods failed");
                continue;
            }
        };
        let (current, errors) = match read_dir(&dir).await {
            Ok(read) => read,
            Err(e) => {
                if reported != [e.clone()] {
                    tracing::warn!(node = %node, path = %dir, error = %e, "could not read the static pod directory");
                    reported = vec![e];
                }
                continue;
            }
        };
        // Reported when they change, not on every pass.
        if errors != reported {
            for e in &errors {
                tracing::warn!(node = %node, path = %dir, error = %e, "could not process manifest file");
            }
            reported = errors;
        }
        // The node's mirrors as the API has them (a node may list the pods bound to it).
        let on_node = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let mirrors: BTreeMap<(String, String), Pod> = match pods.list(&on_node).await {
            Ok(list) => list
                .items
                .into_iter()
                .filter(|p| mirror_hash(p).is_some())
                .map(|p| ((p.namespace().unwrap_or_default(), p.name_any()), p))
                .collect(),
            Err(e) => {
                tracing::debug!(node = %node, error = %e, "listing the node's pods failed");
                continue;
            }
        };
        for key in orphaned(mirrors.keys(), &current, &kept, &node) {
            if let Some(gone) = mirrors.get(&key) {
                delete_mirror(&client, gone).await;
            }
        }
        for manifest in &current {
            let existing = mirrors.get(&mirror_key(manifest, &node));
            let action = mirror_action(existing.and_then(mirror_hash), manifest, &node);
            if action == MirrorAction::Replace {
                if let Some(old) = existing {
                    if !delete_mirror(&client, old).await {
                        continue;
                    }
                }
            }
            if action != MirrorAction::Keep {
                create_mirror(&client, manifest, &node, &node_uid, &clock).await;
            }
        }
    }
}

/// A mirror pod's `kubernetes.io/config.mirror` hash; none for a pod that is no mirror.
fn mirror_hash(pod: &Pod) -> Option<&str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(static_pods::MIRROR_ANNOTATION)
        .map(String::as_str)
}

/// Creates `manifest`'s mirror on `node` with the node's identity.
async fn create_mirror(
    client: &kube::Client,
    manifest: &Value,
    node: &str,
    node_uid: &str,
    clock: &Clock,
) {
    let (ns, name) = mirror_key(manifest, node);
    let mirror = static_pods::mirror_pod(manifest, node, node_uid, &clock.timestamp());
    let pod: Pod = match serde_json::from_value(mirror) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(node = %node, pod = %name, error = %e, "a static pod manifest is not a pod");
            return;
        }
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    match api.create(&PostParams::default(), &pod).await {
        Ok(_) => tracing::info!(node = %node, pod = %name, "mirror pod created"),
        // Still going away, or made meanwhile: the next pass looks again.
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => {
            tracing::warn!(node = %node, pod = %name, error = %e, "creating a mirror pod failed")
        }
    }
}

/// Deletes a mirror at once, if it is still the one listed (its static pod stops with it);
/// whether it is gone.
async fn delete_mirror(client: &kube::Client, mirror: &Pod) -> bool {
    let name = mirror.name_any();
    let ns = mirror.namespace().unwrap_or_default();
    // The kubelet's line (its mirror client's).
    tracing::info!(
        v = 2,
        pod = %format!("{ns}/{name}"),
        podUID = %mirror.uid().unwrap_or_default(),
        "Deleting a mirror pod"
    );
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: mirror.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => true,
        Err(e) => {
            tracing::warn!(pod = %name, error = %e, "deleting a mirror pod failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hidden_files_are_not_manifests() {
        assert!(visible("web.yaml"));
        assert!(visible("web"));
        assert!(!visible(".web.yaml.swp"));
        assert!(!visible(""));
    }

    #[test]
    fn a_file_holds_one_pod_in_yaml_or_json() {
        let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
        assert_eq!(parse("web.yaml", yaml).unwrap()["metadata"]["name"], "web");
        let js = r#"{"kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}"#;
        assert_eq!(parse("j.json", js).unwrap()["metadata"]["name"], "j");
    }

    #[test]
    fn a_file_that_is_no_pod_is_reported_by_name() {
        let e = parse("svc.yaml", "kind: Service\nmetadata:\n  name: s\n").unwrap_err();
        assert!(e.starts_with("svc.yaml: "), "{e}");
        let e = parse("bad.yaml", "kind: Pod\nmetadata:\n  name: b\n").unwrap_err();
        assert_eq!(e, "bad.yaml: spec.containers: Required value");
        assert!(parse("broken.yaml", "{{{").is_err());
    }

    fn pod(name: &str, image: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": image}]}})
    }

    #[test]
    fn a_mirror_no_static_pod_makes_is_orphaned_and_the_others_stay() {
        let key = |name: &str| ("default".to_string(), format!("{name}-n1"));
        // The node's mirrors as the API lists them (after a restart: whatever the kubelet
        // saw before it stopped does not matter).
        let mirrors = [key("a"), key("b"), key("pooled")];
        let current = [pod("b", "y")];
        let kept = [pod("pooled", "x")];
        assert_eq!(orphaned(&mirrors, &current, &kept, "n1"), [key("a")]);
        // Without the pool's static pods, its mirror would go too.
        assert_eq!(
            orphaned(&mirrors, &current, &[], "n1"),
            [key("a"), key("pooled")]
        );
        assert!(orphaned(&[key("b")], &current, &kept, "n1").is_empty());
    }

    #[test]
    fn a_changed_file_replaces_the_mirror_and_an_unchanged_one_keeps_it() {
        let old = pod("a", "x");
        let new = pod("a", "y");
        let h = static_pods::hash(&old, "n1");
        assert_eq!(mirror_action(None, &old, "n1"), MirrorAction::Create);
        assert_eq!(mirror_action(Some(&h), &old, "n1"), MirrorAction::Keep);
        assert_eq!(mirror_action(Some(&h), &new, "n1"), MirrorAction::Replace);
    }

    #[test]
    fn the_mirror_is_named_after_the_pod_and_the_node() {
        let mut m = pod("etcd", "x");
        m["metadata"]["namespace"] = json!("kube-system");
        assert_eq!(
            mirror_key(&m, "master-1"),
            ("kube-system".to_string(), "etcd-master-1".to_string())
        );
    }

    #[tokio::test]
    async fn the_directory_is_read_in_name_order_skipping_hidden_files_and_subdirectories() {
        let dir = std::env::temp_dir().join(format!("berth-static-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let manifest = |n: &str| {
            format!("metadata:\n  name: {n}\nspec:\n  containers:\n  - name: c\n    image: x\n")
        };
        std::fs::write(dir.join("b.yaml"), manifest("b")).unwrap();
        std::fs::write(dir.join("a.yaml"), manifest("a")).unwrap();
        std::fs::write(dir.join(".hidden.yaml"), manifest("h")).unwrap();
        std::fs::write(dir.join("sub/c.yaml"), manifest("c")).unwrap();
        std::fs::write(dir.join("z.yaml"), "kind: Pod\n").unwrap();
        let (pods, errors) = read_dir(dir.to_str().unwrap()).await.unwrap();
        let names: Vec<_> = pods.iter().map(|p| p["metadata"]["name"].clone()).collect();
        assert_eq!(names, [json!("a"), json!("b")]);
        assert_eq!(errors, ["z.yaml: metadata.name: Required value"]);
        let (pods, errors) = read_dir(dir.join("missing").to_str().unwrap())
            .await
            .unwrap();
        assert!(pods.is_empty() && errors.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
