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
        Involved::Pod(p, rv) => object_ref(("v1", "Pod"), &p.namespace, &p.name, &p.uid, rv),
        Involved::Node {
            name,
            uid,
            resource_version,
        } => object_ref(("v1", "Node"), "", name, uid, resource_version),
        Involved::PodDisruptionBudget {
            namespace,
            name,
            uid,
            resource_version,
        } => object_ref(
            ("policy/v1", "PodDisruptionBudget"),
            namespace,
            name,
            uid,
            resource_version,
        ),
        Involved::DaemonSet {
            namespace,
            name,
            uid,
            resource_version,
        } => object_ref(
            ("apps/v1", "DaemonSet"),
            namespace,
            name,
            uid,
            resource_version,
        ),
        Involved::Workload {
            api_version,
            kind,
            namespace,
            name,
            uid,
            resource_version,
        } => object_ref((api_version, kind), namespace, name, uid, resource_version),
    }
}

/// Upstream's `ObjectReference` of an object: its type, name, uid and resourceVersion.
fn object_ref(
    (api_version, kind): (&str, &str),
    namespace: &str,
    name: &str,
    uid: &str,
    resource_version: &str,
) -> ObjectReference {
    let set = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: set(namespace),
        uid: set(uid),
        resource_version: set(resource_version),
        ..Default::default()
    }
}
