//! The Secrets a PersistentVolume names for its kubelet to mount it (a Ceph key, an iSCSI CHAP
//! secret, a CSI driver's node-publish secret...): upstream's `VisitPVSecretNames` with its
//! `kubeletVisible` references only, the `secret <- pv` edges of the node authorizer's graph.
//! A node reaches such a Secret when one of its pods' claims is bound to the volume. Pure: the
//! watch on the stored volumes in [`super::node`] feeds it.

use serde::Deserialize;
use std::collections::HashMap;

/// (namespace, name) of a Secret.
pub type SecretName = (String, String);

/// Which Secrets each volume names, and the reverse.
#[derive(Debug, Default)]
pub struct VolumeSecrets {
    secrets_of: HashMap<String, Vec<SecretName>>,
    volumes_of: HashMap<SecretName, Vec<String>>,
}

impl VolumeSecrets {
    /// Takes in a stored volume, replacing what it named before.
    pub fn apply_volume(&mut self, volume: &str, refs: &VolumeRefs) {
        let secrets = refs.kubelet_secrets();
        if self.secrets_of.get(volume) == Some(&secrets) {
            return;
        }
        self.remove_volume(volume);
        if secrets.is_empty() {
            return;
        }
        for secret in &secrets {
            self.volumes_of
                .entry(secret.clone())
                .or_default()
                .push(volume.to_string());
        }
        self.secrets_of.insert(volume.to_string(), secrets);
    }

    /// Forgets a deleted volume.
    pub fn remove_volume(&mut self, volume: &str) {
        let Some(secrets) = self.secrets_of.remove(volume) else {
            return;
        };
        for secret in secrets {
            if let Some(volumes) = self.volumes_of.get_mut(&secret) {
                volumes.retain(|v| v != volume);
                if volumes.is_empty() {
                    self.volumes_of.remove(&secret);
                }
            }
        }
    }

    /// The volumes that name the Secret `namespace/name` for their kubelet.
    pub fn volumes_naming(&self, namespace: &str, name: &str) -> &[String] {
        self.volumes_of
            .get(&(namespace.to_string(), name.to_string()))
            .map_or(&[], Vec::as_slice)
    }
}

/// What is read of a stored PersistentVolume.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct VolumeRefs {
    spec: Spec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    claim_ref: Option<ClaimRef>,
    azure_file: Option<AzureFile>,
    #[serde(rename = "cephfs")]
    ceph_fs: Option<WithSecret>,
    cinder: Option<WithSecret>,
    flex_volume: Option<WithSecret>,
    rbd: Option<WithSecret>,
    #[serde(rename = "scaleIO")]
    scale_io: Option<WithSecret>,
    iscsi: Option<WithSecret>,
    #[serde(rename = "storageos")]
    storage_os: Option<WithSecret>,
    csi: Option<Csi>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ClaimRef {
    namespace: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct AzureFile {
    secret_name: String,
    secret_namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WithSecret {
    secret_ref: Option<SecretRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SecretRef {
    name: String,
    namespace: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Csi {
    node_publish_secret_ref: Option<SecretRef>,
    node_stage_secret_ref: Option<SecretRef>,
    node_expand_secret_ref: Option<SecretRef>,
}

impl VolumeRefs {
    /// The Secrets the kubelet reads to mount the volume, as upstream visits them: one volume
    /// source, the claim's namespace for the sources whose reference may omit it; the CSI
    /// controller secrets are not the kubelet's.
    fn kubelet_secrets(&self) -> Vec<SecretName> {
        let s = &self.spec;
        let claim_ns = s.claim_ref.as_ref().map_or("", |c| c.namespace.as_str());
        let defaulted = |r: &SecretRef| {
            let ns = if r.namespace.is_empty() {
                claim_ns
            } else {
                &r.namespace
            };
            (ns.to_string(), r.name.clone())
        };
        let exact = |r: &SecretRef| (r.namespace.clone(), r.name.clone());
        let secret_of = |w: &WithSecret, f: &dyn Fn(&SecretRef) -> SecretName| {
            w.secret_ref.iter().map(f).collect::<Vec<_>>()
        };
        let mut found = if let Some(a) = &s.azure_file {
            let ns = a
                .secret_namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(claim_ns);
            vec![(ns.to_string(), a.secret_name.clone())]
        } else if let Some(w) = &s.ceph_fs {
            secret_of(w, &defaulted)
        } else if let Some(w) = &s.cinder {
            secret_of(w, &exact)
        } else if let Some(w) = &s.flex_volume {
            secret_of(w, &defaulted)
        } else if let Some(w) = &s.rbd {
            secret_of(w, &defaulted)
        } else if let Some(w) = &s.scale_io {
            secret_of(w, &defaulted)
        } else if let Some(w) = &s.iscsi {
            secret_of(w, &defaulted)
        } else if let Some(w) = &s.storage_os {
            secret_of(w, &exact)
        } else if let Some(c) = &s.csi {
            [
                &c.node_publish_secret_ref,
                &c.node_stage_secret_ref,
                &c.node_expand_secret_ref,
            ]
            .into_iter()
            .flatten()
            .map(exact)
            .collect()
        } else {
            Vec::new()
        };
        found.retain(|(_, name)| !name.is_empty());
        found.sort();
        found.dedup();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refs(spec: serde_json::Value) -> VolumeRefs {
        serde_json::from_value(json!({ "spec": spec })).unwrap()
    }

    fn secrets(spec: serde_json::Value) -> Vec<(String, String)> {
        refs(spec).kubelet_secrets()
    }

    fn s(ns: &str, name: &str) -> (String, String) {
        (ns.into(), name.into())
    }

    #[test]
    fn each_source_names_its_secret_in_the_claims_namespace_unless_it_gives_one() {
        let claim = json!({"namespace": "dev", "name": "data"});
        assert_eq!(
            secrets(
                json!({"claimRef": claim, "cephfs": {"monitors": ["m"], "secretRef": {"name": "ceph"}}})
            ),
            vec![s("dev", "ceph")]
        );
        assert_eq!(
            secrets(
                json!({"claimRef": claim, "iscsi": {"secretRef": {"name": "chap", "namespace": "ops"}}})
            ),
            vec![s("ops", "chap")]
        );
        assert_eq!(
            secrets(
                json!({"claimRef": claim, "azureFile": {"secretName": "az", "shareName": "x"}})
            ),
            vec![s("dev", "az")]
        );
        assert_eq!(
            secrets(
                json!({"claimRef": claim, "azureFile": {"secretName": "az", "secretNamespace": "ops"}})
            ),
            vec![s("ops", "az")]
        );
        // Cinder and StorageOS take the reference's namespace as it is.
        assert_eq!(
            secrets(json!({"claimRef": claim, "cinder": {"secretRef": {"name": "c"}}})),
            vec![s("", "c")]
        );
        assert_eq!(
            secrets(json!({"hostPath": {"path": "/x"}, "claimRef": claim})),
            Vec::<(String, String)>::new()
        );
    }

    #[test]
    fn a_csi_volume_names_only_its_node_secrets_for_the_kubelet() {
        let got = secrets(json!({"csi": {
            "driver": "d", "volumeHandle": "h",
            "controllerPublishSecretRef": {"name": "cp", "namespace": "ops"},
            "controllerExpandSecretRef": {"name": "ce", "namespace": "ops"},
            "nodePublishSecretRef": {"name": "np", "namespace": "ops"},
            "nodeStageSecretRef": {"name": "ns", "namespace": "ops"},
            "nodeExpandSecretRef": {"name": "ne", "namespace": "ops"}}}));
        assert_eq!(got, vec![s("ops", "ne"), s("ops", "np"), s("ops", "ns")]);
    }

    #[test]
    fn volumes_are_indexed_by_the_secrets_they_name_and_forgotten() {
        let mut v = VolumeSecrets::default();
        let ceph = |name: &str| {
            refs(json!({"claimRef": {"namespace": "dev"}, "cephfs": {"secretRef": {"name": name}}}))
        };
        v.apply_volume("pv-1", &ceph("key"));
        v.apply_volume("pv-2", &ceph("key"));
        assert_eq!(v.volumes_naming("dev", "key"), ["pv-1", "pv-2"]);
        v.apply_volume("pv-1", &ceph("other"));
        assert_eq!(v.volumes_naming("dev", "key"), ["pv-2"]);
        assert_eq!(v.volumes_naming("dev", "other"), ["pv-1"]);
        v.remove_volume("pv-2");
        assert!(v.volumes_naming("dev", "key").is_empty());
        v.remove_volume("pv-1");
        assert!(v.volumes_naming("dev", "other").is_empty());
    }
}
