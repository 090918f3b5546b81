//! Writing the events the engines decide on, through the shared recorder of `berth-events`
//! (upstream's correlator: counts, combined similar events, spam filter; a bounded queue
//! written off the controllers' paths). One recorder per component, made on first use, as each
//! of upstream's controllers has its own broadcaster.

use crate::model::{EventRecord, Involved};
use crate::Clock;
use berth_events::EventType;
use k8s_openapi::api::core::v1::ObjectReference;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Records events in the involved object's namespace (`default` for nodes, as upstream).
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    clock: Clock,
    by_component: Arc<Mutex<BTreeMap<String, berth_events::Recorder>>>,
}

impl Recorder {
    pub fn new(client: kube::Client, clock: Clock) -> Recorder {
        Recorder {
            client,
            clock,
            by_component: Arc::default(),
        }
    }

    /// Records `event` as written by `component`; never waits (a full queue drops it).
    pub fn record(&self, component: &str, event: &EventRecord) {
        let Ok(mut by_component) = self.by_component.lock() else {
            return;
        };
        let recorder = by_component
            .entry(component.to_string())
            .or_insert_with(|| {
                berth_events::Recorder::start(
                    self.client.clone(),
                    component,
                    "",
                    self.clock.clone(),
                )
            });
        recorder.event(
            reference(&event.involved),
            EventType::parse(event.type_),
            event.reason,
            event.message.clone(),
        );
    }
}

/// The involved object as upstream's references name it.
pub fn reference(involved: &Involved) -> ObjectReference {
    match involved {
        Involved::Pod(p) => object_ref("v1", "Pod", &p.namespace, &p.name, &p.uid),
        Involved::Node { name, uid } => object_ref("v1", "Node", "", name, uid),
        Involved::PodDisruptionBudget {
            namespace,
            name,
            uid,
        } => object_ref("policy/v1", "PodDisruptionBudget", namespace, name, uid),
        Involved::DaemonSet {
            namespace,
            name,
            uid,
        } => object_ref("apps/v1", "DaemonSet", namespace, name, uid),
        Involved::Workload {
            api_version,
            kind,
            namespace,
            name,
            uid,
        } => object_ref(api_version, kind, namespace, name, uid),
    }
}

fn object_ref(
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    uid: &str,
) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..Default::default()
    }
}
