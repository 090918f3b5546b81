//! The node Leases `kube-node-lease/<node>` as the shared kubelets hold them: every write is a
//! compare-and-swap on the resourceVersion (a `replace` naming it), so that two replicas never
//! both believe they took a node.

use super::handover::{self, Holder};
use berth_core::clock::Clock;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;

/// Upstream kubelet's node lease duration.
const NODE_LEASE_SECONDS: i64 = 40;

/// What became of an attempt to take a node's Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// It is ours: start the kubelet.
    Yes,
    /// Another live replica holds it (named), or another writer got there first.
    No(String),
}

/// What became of a renewal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Renewed {
    Yes,
    /// Someone else changed the Lease: it is no longer ours (the holder now).
    Lost(String),
}

/// This replica's node Leases: the resourceVersion of our last write to each.
#[derive(Debug, Default)]
pub struct NodeLeases {
    written: Mutex<HashMap<String, String>>,
}

fn api(client: &kube::Client) -> Api<Lease> {
    Api::namespaced(client.clone(), "kube-node-lease")
}

fn holder_of(lease: &Lease) -> String {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

fn conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl NodeLeases {
    fn remember(&self, node: &str, lease: &Lease) {
        if let Some(rv) = &lease.metadata.resource_version {
            self.lock().insert(node.to_string(), rv.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `node`'s Lease for `me` if no other live replica holds it. The renew time is left
    /// as it was (only the kubelet's renewals move it, so a stopped node stays silent); a Lease
    /// that does not exist yet is created renewed now.
    pub async fn take(
        &self,
        client: &kube::Client,
        node: &str,
        me: &str,
        live: &[String],
        clock: &Clock,
    ) -> Result<Taken, kube::Error> {
        let api = api(client);
        let Some(mut lease) = api.get_opt(node).await? else {
            let lease = lease_object(node, me, &clock.micro_timestamp(), None)?;
            return match api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.remember(node, &created);
                    Ok(Taken::Yes)
                }
                Err(e) if conflict(&e) => Ok(Taken::No("a writer that created it first".into())),
                Err(e) => Err(e),
            };
        };
        let held = holder_of(&lease);
        if handover::holder(&held, me, live) == Holder::Other {
            return Ok(Taken::No(held));
        }
        let spec = lease.spec.get_or_insert_with(Default::default);
        spec.holder_identity = Some(me.to_string());
        spec.lease_duration_seconds
            .get_or_insert(NODE_LEASE_SECONDS as i32);
        match api.replace(node, &PostParams::default(), &lease).await {
            Ok(replaced) => {
                self.remember(node, &replaced);
                Ok(Taken::Yes)
            }
            Err(e) if conflict(&e) => Ok(Taken::No("a writer that changed it first".into())),
            Err(e) => Err(e),
        }
    }

    /// Empties the holder of `node`'s Lease if it is still ours (after its kubelet stopped).
    pub async fn release(
        &self,
        client: &kube::Client,
        node: &str,
        me: &str,
    ) -> Result<bool, kube::Error> {
        self.lock().remove(node);
        let api = api(client);
        let Some(mut lease) = api.get_opt(node).await? else {
            return Ok(false);
        };
        if holder_of(&lease) != me {
            return Ok(false);
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some(String::new());
        }
        match api.replace(node, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(e) if conflict(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Renews `node`'s Lease for `me`: a compare-and-swap on our last write; when that was
    /// overtaken, the Lease is read again and renewed only if we still hold it.
    pub async fn renew(
        &self,
        client: &kube::Client,
        node: &str,
        me: &str,
        renew: &str,
    ) -> Result<Renewed, kube::Error> {
        let api = api(client);
        let last = self.lock().get(node).cloned();
        if let Some(rv) = last {
            let lease = lease_object(node, me, renew, Some(rv))?;
            match api.replace(node, &PostParams::default(), &lease).await {
                Ok(renewed) => {
                    self.remember(node, &renewed);
                    return Ok(Renewed::Yes);
                }
                Err(e) if conflict(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let Some(current) = api.get_opt(node).await? else {
            return Ok(Renewed::Lost("nobody (deleted)".into()));
        };
        let held = holder_of(&current);
        if held != me {
            self.lock().remove(node);
            return Ok(Renewed::Lost(held));
        }
        let lease = lease_object(node, me, renew, current.metadata.resource_version)?;
        match api.replace(node, &PostParams::default(), &lease).await {
            Ok(renewed) => {
                self.remember(node, &renewed);
                Ok(Renewed::Yes)
            }
            // Changed again between our read and write: judged at the next renewal.
            Err(e) if conflict(&e) => Ok(Renewed::Yes),
            Err(e) => Err(e),
        }
    }
}

fn lease_object(
    node: &str,
    holder: &str,
    renew: &str,
    resource_version: Option<String>,
) -> Result<Lease, kube::Error> {
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": node, "namespace": "kube-node-lease", "resourceVersion": resource_version},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": NODE_LEASE_SECONDS, "renewTime": renew},
    }))
    .map_err(kube::Error::SerdeError)
}
