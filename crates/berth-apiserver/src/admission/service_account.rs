//! ServiceAccount admission (upstream `plugin/pkg/admission/serviceaccount`): a new pod runs as
//! the account it names (`default` when it names none, which the pod's strategy sets), that
//! account must exist, and unless the pod or the account opts out, the pod gets the projected
//! `kube-api-access-*` volume with the account's token, mounted in every container.
//!
//! One departure: a missing `default` account does not refuse the pod. Upstream waits for the
//! ServiceAccount controller to create it (retrying for a while) so the refusal is rare; berth's
//! admission does not wait, so it lets the pod through rather than race the controller.

use super::{ConfigError, Handles, Plugin, Registration};
use crate::codec::{decode, meta_str};
use crate::error::{ApiError, ApiResult};
use crate::path::{self, Target};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::{json, Value};

pub const REGISTRATION: Registration = Registration {
    name: "ServiceAccount",
    on_by_default: true,
    build,
};

/// Where the token volume is mounted in each container.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the token volume's name; upstream adds five random characters.
const VOLUME_PREFIX: &str = "kube-api-access-";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

struct ServiceAccount {
    store: Store,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(ServiceAccount {
        store: handles.store.clone(),
    }))
}

impl Plugin for ServiceAccount {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, pod: &mut Value) -> ApiResult<()> {
        if !(rt.group.is_empty() && rt.kind == "Pod") {
            return Ok(());
        }
        // Static pods mirrored by a kubelet run with no account.
        if pod["metadata"]["annotations"]
            .get(MIRROR_ANNOTATION)
            .is_some()
        {
            return Ok(());
        }
        let ns = meta_str(pod, "namespace").to_string();
        let name = match pod["spec"]["serviceAccountName"].as_str() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => "default".to_string(),
        };
        pod["spec"]["serviceAccountName"] = json!(name);
        pod["spec"]["serviceAccount"] = json!(name);
        let account = self.account(&ns, &name)?;
        if account.is_none() && name != "default" {
            return Err(ApiError::Forbidden(format!(
                "pods \"{}\" is forbidden: error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found",
                meta_str(pod, "name")
            )));
        }
        let opted_out = pod["spec"]["automountServiceAccountToken"] == false
            || (pod["spec"]["automountServiceAccountToken"].is_null()
                && account
                    .as_ref()
                    .is_some_and(|a| a["automountServiceAccountToken"] == false));
        if !opted_out {
            mount_token(pod);
        }
        Ok(())
    }
}

impl ServiceAccount {
    fn account(&self, ns: &str, name: &str) -> ApiResult<Option<Value>> {
        let Some(rt) = berth_api::registry::find("", "v1", "serviceaccounts") else {
            return Ok(None);
        };
        let kv = self
            .store
            .get(&path::key(rt, Some(ns), name))
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let target = Target {
            rt,
            namespace: Some(ns.to_string()),
            name: Some(name.to_string()),
            subresource: None,
        };
        kv.map(|kv| decode(&kv, &target)).transpose()
    }
}

/// Adds the projected token volume and its mount in every container, unless a container
/// already mounts something at the token's path (upstream leaves such pods alone).
fn mount_token(pod: &mut Value) {
    let containers = ["initContainers", "containers"];
    let mounted = containers.iter().any(|list| {
        pod["spec"][*list]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                c["volumeMounts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["mountPath"] == MOUNT_PATH)
            })
    });
    if mounted {
        return;
    }
    let name = format!("{VOLUME_PREFIX}{}", random_suffix());
    let volume = json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}});
    match pod["spec"]["volumes"].as_array_mut() {
        Some(volumes) => volumes.push(volume),
        None => pod["spec"]["volumes"] = json!([volume]),
    }
    let mount = json!({"name": name, "mountPath": MOUNT_PATH, "readOnly": true});
    for list in containers {
        // `get_mut`, not indexing: indexing a missing list would store `initContainers: null`.
        if let Some(cs) = pod["spec"].get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                match c["volumeMounts"].as_array_mut() {
                    Some(mounts) => mounts.push(mount.clone()),
                    None => c["volumeMounts"] = json!([mount.clone()]),
                }
            }
        }
    }
}

fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> &'static ResourceType {
        berth_api::registry::find("", "v1", "pods").unwrap()
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    }

    async fn with_account(store: &Store, name: &str, account: Value) {
        let rt = berth_api::registry::find("", "v1", "serviceaccounts").unwrap();
        let mut account = account;
        account["metadata"] = json!({"name": name, "namespace": "default"});
        store
            .create(
                &path::key(rt, Some("default"), name),
                crate::codec::encode(&account),
            )
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_pod_naming_a_missing_account_is_refused_as_upstream() {
        let plugin = ServiceAccount {
            store: Store::memory(),
        };
        let mut p = pod(json!({"serviceAccountName": "builder", "containers": [{"name": "c"}]}));
        let err = plugin
            .admit_create(&UserInfo::admin(), pods(), &mut p)
            .unwrap_err();
        assert_eq!(err.code(), 403);
        assert_eq!(err.message(), "pods \"p\" is forbidden: error looking up service account default/builder: serviceaccount \"builder\" not found");
    }

    #[tokio::test]
    async fn a_pod_gets_the_default_account_and_its_token_volume() {
        let store = Store::memory();
        with_account(&store, "default", json!({})).await;
        let plugin = ServiceAccount { store };
        let mut p = pod(
            json!({"containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}]}),
        );
        plugin
            .admit_create(&UserInfo::admin(), pods(), &mut p)
            .unwrap();
        assert_eq!(p["spec"]["serviceAccountName"], "default");
        let volume = p["spec"]["volumes"][0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(volume.starts_with(VOLUME_PREFIX) && volume.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(
            p["spec"]["containers"][0]["volumeMounts"][0]["mountPath"],
            MOUNT_PATH
        );
        assert_eq!(
            p["spec"]["containers"][1]["volumeMounts"][1]["name"],
            volume.as_str()
        );
        // A pod without init containers does not gain an `initContainers: null`.
        assert!(p["spec"].get("initContainers").is_none());
    }

    #[tokio::test]
    async fn the_pod_or_its_account_may_opt_out_of_the_token() {
        let store = Store::memory();
        with_account(
            &store,
            "quiet",
            json!({"automountServiceAccountToken": false}),
        )
        .await;
        let plugin = ServiceAccount { store };
        let mut p = pod(json!({"serviceAccountName": "quiet", "containers": [{"name": "a"}]}));
        plugin
            .admit_create(&UserInfo::admin(), pods(), &mut p)
            .unwrap();
        assert!(p["spec"].get("volumes").is_none());
        let mut p =
            pod(json!({"automountServiceAccountToken": false, "containers": [{"name": "a"}]}));
        plugin
            .admit_create(&UserInfo::admin(), pods(), &mut p)
            .unwrap();
        assert!(p["spec"].get("volumes").is_none());
    }
}
