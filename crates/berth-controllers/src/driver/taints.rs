//! The NoExecute taint manager loop: on node or pod changes, and at the next deadline.

use super::informers::{wait, Informers};
use super::recorder::Recorder;
use crate::taint_manager::{TaintAction, TaintManager};
use crate::Clock;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Preconditions};
use std::sync::Arc;
use std::time::Duration;

const COMPONENT: &str = "taint-eviction-controller";

pub async fn run(client: kube::Client, mut informers: Informers, recorder: Recorder, clock: Clock) {
    if !informers.nodes.synced().await || !informers.pods.synced().await {
        return;
    }
    let mut manager = TaintManager::new();
    loop {
        let nodes: Vec<Arc<Node>> = informers.nodes.store.state();
        let pods: Vec<Arc<Pod>> = informers.pods.store.state();
        let node_refs: Vec<&Node> = nodes.iter().map(|n| n.as_ref()).collect();
        let pod_refs: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
        let pass = manager.pass(&node_refs, &pod_refs, clock.now());
        for action in pass.actions {
            match action {
                TaintAction::Event(e) => recorder.record(COMPONENT, &e).await,
                TaintAction::Delete(pod) => {
                    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: Some(pod.uid.clone()),
                            resource_version: None,
                        }),
                        ..DeleteParams::default()
                    };
                    // Up to 5 tries, 10 ms apart (upstream).
                    for attempt in 1..=5 {
                        match api.delete(&pod.name, &params).await {
                            Ok(_) => break,
                            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => break,
                            Err(e) => {
                                tracing::warn!(pod = %pod.name, attempt, error = %e, "taint manager deletion failed");
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                    }
                }
            }
        }
        let until = pass.next_wakeup.map(|at| clock.instant_at(at));
        wait(
            &mut [&mut informers.nodes.changed, &mut informers.pods.changed],
            until,
        )
        .await;
    }
}
