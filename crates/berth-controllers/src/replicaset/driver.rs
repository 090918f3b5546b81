//! The ReplicaSet and ReplicationController loop: on set or pod changes, sync every set; create,
//! adopt, release and delete its pods and write its status. One engine for both kinds: a
//! [`SetObject`] is what the loop reads of either.

use super::failure::{self, Outcome};
use super::{reconcile, Plan, PodView, SetView};
use crate::create_backoff::{self, CreateBackoff};
use crate::events;
use crate::informers::{wait, Informers};
use crate::model::{EventRecord, Involved};
use crate::recorder::Recorder;
use crate::replicaset::workload::{label_of, pod_from_template, pod_view, Owner};
use crate::Clock;
use berth_core::labels::Selector;
use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec, ReplicationController};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// How long the loop waits for the pods it created or deleted to show up in the watch before
/// it stops trusting the count (upstream `ExpectationsTimeout`).
const EXPECTATIONS_TIMEOUT: i64 = 300;

/// A ReplicaSet or a ReplicationController, as the loop reads it.
struct SetObject {
    owner: Owner,
    namespace: String,
    replicas: i32,
    min_ready_seconds: i64,
    generation: i64,
    deleting: bool,
    selector: Selector,
    template: PodTemplateSpec,
    template_labels: BTreeMap<String, String>,
    status: Value,
    resource_version: Option<String>,
}

impl SetObject {
    fn from_replica_set(rs: &ReplicaSet) -> Option<SetObject> {
        let spec = rs.spec.as_ref()?;
        let selector = serde_json::to_value(&spec.selector).ok()?;
        Some(SetObject {
            owner: Owner {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: rs.metadata.name.clone()?,
                uid: rs.metadata.uid.clone()?,
            },
            namespace: rs.metadata.namespace.clone().unwrap_or_default(),
            replicas: spec.replicas.unwrap_or(1),
            min_ready_seconds: i64::from(spec.min_ready_seconds.unwrap_or(0)),
            generation: rs.metadata.generation.unwrap_or(0),
            deleting: rs.metadata.deletion_timestamp.is_some(),
            selector: Selector::from_label_selector(&selector).ok()?,
            template_labels: template_labels(spec.template.as_ref()),
            template: spec.template.clone().unwrap_or_default(),
            status: serde_json::to_value(&rs.status).unwrap_or(Value::Null),
            resource_version: rs.metadata.resource_version.clone(),
        })
    }

    fn from_replication_controller(rc: &ReplicationController) -> Option<SetObject> {
        let spec = rc.spec.as_ref()?;
        let template_labels = template_labels(spec.template.as_ref());
        // An RC without a selector selects its template's labels (the API server defaults it).
        let selector = spec
            .selector
            .clone()
            .unwrap_or_else(|| template_labels.clone());
        let selector = if selector.is_empty() {
            Selector::nothing()
        } else {
            Selector::from_label_selector(&json!({ "matchLabels": selector })).ok()?
        };
        Some(SetObject {
            owner: Owner {
                api_version: "v1".into(),
                kind: "ReplicationController".into(),
                name: rc.metadata.name.clone()?,
                uid: rc.metadata.uid.clone()?,
            },
            namespace: rc.metadata.namespace.clone().unwrap_or_default(),
            replicas: spec.replicas.unwrap_or(1),
            min_ready_seconds: i64::from(spec.min_ready_seconds.unwrap_or(0)),
            generation: rc.metadata.generation.unwrap_or(0),
            deleting: rc.metadata.deletion_timestamp.is_some(),
            selector,
            template_labels,
            template: spec.template.clone().unwrap_or_default(),
            status: serde_json::to_value(&rc.status).unwrap_or(Value::Null),
            resource_version: rc.metadata.resource_version.clone(),
        })
    }

    fn status_path(&self) -> (kube::discovery::ApiResource, &str) {
        let ar = if self.owner.kind == "ReplicaSet" {
            kube::discovery::ApiResource::erase::<ReplicaSet>(&())
        } else {
            kube::discovery::ApiResource::erase::<ReplicationController>(&())
        };
        (ar, &self.owner.name)
    }
}

fn template_labels(t: Option<&PodTemplateSpec>) -> BTreeMap<String, String> {
    t.and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

/// Pods created or deleted but not yet seen so in the watch, per set uid (upstream
/// `ControllerExpectations`): while any are outstanding the set's count is not trusted, so a
/// burst of events does not create or delete twice.
#[derive(Default)]
pub struct Expectations {
    pending: HashMap<String, Pending>,
}

struct Pending {
    creates: BTreeSet<String>,
    deletes: BTreeSet<String>,
    since: DateTime<Utc>,
}

impl Expectations {
    /// Whether the set may be synced: nothing outstanding, or outstanding for too long.
    pub fn satisfied(
        &mut self,
        uid: &str,
        seen: &BTreeMap<&str, bool>,
        now: DateTime<Utc>,
    ) -> bool {
        let Some(p) = self.pending.get_mut(uid) else {
            return true;
        };
        // Created: seen at all. Deleted: gone, or seen being deleted.
        p.creates.retain(|n| !seen.contains_key(n.as_str()));
        p.deletes
            .retain(|n| seen.get(n.as_str()).is_some_and(|deleting| !deleting));
        let done = (p.creates.is_empty() && p.deletes.is_empty())
            || p.since + chrono::Duration::seconds(EXPECTATIONS_TIMEOUT) < now;
        if done {
            self.pending.remove(uid);
        }
        done
    }

    fn entry(&mut self, uid: &str, now: DateTime<Utc>) -> &mut Pending {
        self.pending.entry(uid.to_string()).or_insert(Pending {
            creates: BTreeSet::new(),
            deletes: BTreeSet::new(),
            since: now,
        })
    }

    pub fn created(&mut self, uid: &str, pod: String, now: DateTime<Utc>) {
        self.entry(uid, now).creates.insert(pod);
    }

    pub fn deleted(&mut self, uid: &str, pod: String, now: DateTime<Utc>) {
        self.entry(uid, now).deletes.insert(pod);
    }

    pub fn retain(&mut self, live: &BTreeSet<String>) {
        self.pending.retain(|uid, _| live.contains(uid));
    }
}

/// Keeps ReplicaSets (written as `replica_sets`, the replicaset-controller) and
/// ReplicationControllers (as `replication_controllers`, the replication-controller) at their
/// replica counts.
pub async fn run(
    replica_sets: kube::Client,
    replication_controllers: kube::Client,
    mut informers: Informers,
    clock: Clock,
    metrics: crate::metrics::ControllerMetrics,
) {
    // Upstream's queue names: the ReplicaSet controller's and the replication manager's.
    let queues = [
        metrics.queue("replicaset", &clock),
        metrics.queue("replicationmanager", &clock),
    ];
    let ready = [
        informers.replica_sets.synced().await,
        informers.replication_controllers.synced().await,
        informers.pods.synced().await,
    ];
    if ready.contains(&false) {
        return;
    }
    let mut expectations = Expectations::default();
    let mut backoff = CreateBackoff::default();
    let recorders = [
        Recorder::new(replica_sets.clone(), clock.clone()),
        Recorder::new(replication_controllers.clone(), clock.clone()),
    ];
    loop {
        let mut sets: Vec<SetObject> = informers
            .replica_sets
            .store
            .state()
            .iter()
            .filter_map(|rs| SetObject::from_replica_set(rs))
            .collect();
        sets.extend(
            informers
                .replication_controllers
                .store
                .state()
                .iter()
                .filter_map(|rc| SetObject::from_replication_controller(rc)),
        );
        let live: BTreeSet<String> = sets.iter().map(|s| s.owner.uid.clone()).collect();
        expectations.retain(&live);
        backoff.retain(|uid| live.contains(uid));
        if !sets.is_empty() {
            let pods: Vec<Arc<Pod>> = informers.pods.store.state();
            let by_ns = pods_by_namespace(&pods);
            let empty = Vec::new();
            let rcs = sets
                .iter()
                .filter(|s| s.owner.kind == "ReplicationController")
                .count();
            let mut passes = [queues[0].pass(sets.len() - rcs), queues[1].pass(rcs)];
            for set in &sets {
                let pods = by_ns.get(set.namespace.as_str()).unwrap_or(&empty);
                let (client, recorder, pass) = match set.owner.kind.as_str() {
                    "ReplicationController" => {
                        (&replication_controllers, &recorders[1], &mut passes[1])
                    }
                    _ => (&replica_sets, &recorders[0], &mut passes[0]),
                };
                let work = pass.take();
                let failures = backoff.failures(&set.owner.uid);
                let mut loop_state = LoopState {
                    expectations: &mut expectations,
                    backoff: &mut backoff,
                    recorder,
                    clock: &clock,
                };
                sync(client, set, pods, &mut loop_state).await;
                if backoff.failures(&set.owner.uid) > failures {
                    work.retry();
                }
            }
        }
        let i = &mut informers;
        // Pods become available minReadySeconds after they are ready: look again a second on.
        let waiting = sets.iter().any(|s| {
            s.min_ready_seconds > 0 && s.status["availableReplicas"] != s.status["readyReplicas"]
        });
        let now = clock.now();
        let until = [
            waiting.then(|| now + chrono::Duration::seconds(1)),
            backoff.next_retry(),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|at| clock.instant_at(at));
        wait(
            &mut [
                &mut i.replica_sets.changed,
                &mut i.replication_controllers.changed,
                &mut i.pods.changed,
            ],
            until,
        )
        .await;
    }
}

fn pods_by_namespace(pods: &[Arc<Pod>]) -> HashMap<&str, Vec<(Arc<Pod>, PodView)>> {
    let mut by_ns: HashMap<&str, Vec<(Arc<Pod>, PodView)>> = HashMap::new();
    for p in pods {
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        by_ns.entry(ns).or_default().push((p.clone(), pod_view(p)));
    }
    by_ns
}

/// What the loop keeps between passes, and how it records events.
struct LoopState<'a> {
    expectations: &'a mut Expectations,
    backoff: &'a mut CreateBackoff,
    recorder: &'a Recorder,
    clock: &'a Clock,
}

async fn sync(
    client: &kube::Client,
    set: &SetObject,
    pods: &[(Arc<Pod>, PodView)],
    state: &mut LoopState<'_>,
) {
    let now = state.clock.now();
    let seen: BTreeMap<&str, bool> = pods
        .iter()
        .map(|(_, v)| (v.name.as_str(), v.deleting))
        .collect();
    let trusted = state.expectations.satisfied(&set.owner.uid, &seen, now);
    let mut plan = plan(set, pods, trusted, now);
    let uid = &set.owner.uid;
    let mut tried = trusted;
    if trusted && plan.create_batches.is_empty() {
        // Nothing left to create: any earlier refusal is settled.
        state.backoff.forget(uid);
    } else if !state
        .backoff
        .may_create(uid, set.resource_version.as_deref(), now)
    {
        plan.create_batches.clear();
        tried = false;
    }
    carry_out(client, set, pods, plan, tried, state).await;
}

/// The engine's plan for `set`; without `trusted` expectations, only adoption and status.
fn plan(set: &SetObject, pods: &[(Arc<Pod>, PodView)], trusted: bool, now: DateTime<Utc>) -> Plan {
    let selects = |labels: &BTreeMap<String, String>| set.selector.matches_fn(label_of(labels));
    let view = SetView {
        uid: &set.owner.uid,
        replicas: set.replicas,
        min_ready_seconds: set.min_ready_seconds,
        generation: set.generation,
        deleting: set.deleting,
        selects: &selects,
        template_labels: &set.template_labels,
    };
    let views: Vec<PodView> = pods.iter().map(|(_, v)| v.clone()).collect();
    // Sibling sets' pods only matter for ranking deletions; the set's own pods suffice here.
    let mut plan = reconcile(&view, &views, &[], now);
    if !trusted {
        plan.create_batches.clear();
        plan.delete.clear();
    }
    plan
}

async fn carry_out(
    client: &kube::Client,
    set: &SetObject,
    pods: &[(Arc<Pod>, PodView)],
    plan: Plan,
    tried: bool,
    state: &mut LoopState<'_>,
) {
    let (expectations, clock) = (&mut *state.expectations, state.clock);
    let mut outcome = if tried {
        Outcome::Succeeded
    } else {
        Outcome::NotTried
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), &set.namespace);
    let by_name: HashMap<&str, &Pod> = pods
        .iter()
        .map(|(p, v)| (v.name.as_str(), p.as_ref()))
        .collect();
    let name = &set.owner.name;
    for pod in plan.adopt.iter().filter_map(|n| by_name.get(n.as_str())) {
        let mut refs: Vec<Value> = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect();
        refs.push(set.owner.controller_ref());
        patch_refs(&api, pod, refs).await;
    }
    for pod in plan.release.iter().filter_map(|n| by_name.get(n.as_str())) {
        let refs: Vec<Value> = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.uid != set.owner.uid)
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect();
        patch_refs(&api, pod, refs).await;
    }
    let template = pod_from_template(&set.template, &set.namespace, &set.owner);
    let pod: Option<Pod> = serde_json::from_value(template).ok();
    if let Some(pod) = pod {
        for batch in &plan.create_batches {
            let params = PostParams::default();
            let creates = (0..*batch).map(|_| api.create(&params, &pod));
            let results = futures::future::join_all(creates).await;
            let mut failed = false;
            for r in results {
                match r {
                    Ok(p) => {
                        let created = p.metadata.name.unwrap_or_default();
                        let (owner, component) = involved(set);
                        state
                            .recorder
                            .record(component, &events::created_pod(&owner, &created));
                        expectations.created(&set.owner.uid, created, clock.now());
                    }
                    Err(e) => {
                        if !failed {
                            outcome = Outcome::Failed {
                                reason: failure::FAILED_CREATE,
                                message: create_backoff::api_message(&e),
                            };
                        }
                        failed = true;
                        tracing::warn!(set = %name, error = %e, "creating pod failed");
                        failed_create(state.recorder, set, &e);
                    }
                }
            }
            // Upstream's slow start: a failing batch stops the rest (quota, admission, ...),
            // and the set is retried after its back-off.
            if failed {
                let version = set.resource_version.as_deref();
                state.backoff.failed(&set.owner.uid, version, clock.now());
                break;
            }
            state.backoff.forget(&set.owner.uid);
        }
    }
    let expectations = &mut *state.expectations;
    for pod in plan.delete.iter().filter_map(|n| by_name.get(n.as_str())) {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&pod_name, &params).await {
            Ok(_) => {
                let (owner, component) = involved(set);
                state
                    .recorder
                    .record(component, &events::deleted_pod(&owner, &pod_name));
                expectations.deleted(&set.owner.uid, pod_name, clock.now())
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(set = %name, pod = %pod_name, error = %e, "deleting pod failed");
                let (owner, component) = involved(set);
                let message = create_backoff::api_message(&e);
                state
                    .recorder
                    .record(component, &events::failed_delete(&owner, &message));
                if !matches!(outcome, Outcome::Failed { .. }) {
                    outcome = Outcome::Failed {
                        reason: failure::FAILED_DELETE,
                        message: create_backoff::api_message(&e),
                    };
                }
            }
        }
    }
    let conditions = failure::conditions(&set.status["conditions"], &outcome, clock.now());
    write_status(client, set, &plan.status, conditions).await;
}

/// The set as events name it, and the controller that records them.
fn involved(set: &SetObject) -> (Involved, &'static str) {
    let (api_version, kind, component) = if set.owner.kind == "ReplicaSet" {
        ("apps/v1", "ReplicaSet", "replicaset-controller")
    } else {
        ("v1", "ReplicationController", "replication-controller")
    };
    let involved = Involved::Workload {
        api_version,
        kind,
        namespace: set.namespace.clone(),
        name: set.owner.name.clone(),
        uid: set.owner.uid.clone(),
        resource_version: set.resource_version.clone().unwrap_or_default(),
    };
    (involved, component)
}

/// Records upstream's `FailedCreate` warning on the set.
fn failed_create(recorder: &Recorder, set: &SetObject, error: &kube::Error) {
    let (involved, component) = involved(set);
    let event = EventRecord {
        involved,
        type_: "Warning",
        reason: create_backoff::FAILED_CREATE,
        message: create_backoff::error_creating(error),
    };
    recorder.record(component, &event);
}

async fn patch_refs(api: &Api<Pod>, pod: &Pod, refs: Vec<Value>) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let patch = json!({"metadata": {"ownerReferences": refs,
                                    "resourceVersion": pod.metadata.resource_version}});
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => tracing::warn!(pod = %name, error = %e, "updating owner references failed"),
    }
}

/// Writes `status` (and `conditions`, when they change) when it differs from what the set has.
async fn write_status(
    client: &kube::Client,
    set: &SetObject,
    status: &super::Status,
    conditions: Option<Value>,
) {
    let mut want = json!({
        "replicas": status.replicas,
        "fullyLabeledReplicas": status.fully_labeled_replicas,
        "readyReplicas": status.ready_replicas,
        "availableReplicas": status.available_replicas,
        "observedGeneration": status.observed_generation,
    });
    let count = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(0);
    let same = want
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, _)| count(&want, k) == count(&set.status, k));
    if same && conditions.is_none() {
        return;
    }
    if let Some(conditions) = conditions {
        // An empty list is removed, as upstream's `omitempty` leaves it out.
        let empty = conditions.as_array().is_some_and(Vec::is_empty);
        want["conditions"] = if empty { Value::Null } else { conditions };
    }
    let (ar, name) = set.status_path();
    let api: Api<kube::core::DynamicObject> =
        Api::namespaced_with(client.clone(), &set.namespace, &ar);
    let patch = json!({"metadata": {"resourceVersion": set.resource_version}, "status": want});
    match crate::update::update_status(&api, name, &patch).await {
        Ok(_) => {}
        // A newer set is on its way through the watch; the next pass starts from it.
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
        Err(e) => tracing::warn!(set = %name, error = %e, "updating status failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap()
    }

    #[test]
    fn expectations_hold_until_created_pods_are_seen() {
        let mut e = Expectations::default();
        e.created("rs", "p1".into(), at(0));
        e.created("rs", "p2".into(), at(0));
        let seen = BTreeMap::from([("p1", false)]);
        assert!(!e.satisfied("rs", &seen, at(1)));
        let seen = BTreeMap::from([("p1", false), ("p2", false)]);
        assert!(e.satisfied("rs", &seen, at(1)));
        assert!(e.satisfied("other", &BTreeMap::new(), at(1)));
    }

    #[test]
    fn expectations_hold_until_deleted_pods_are_gone_or_deleting() {
        let mut e = Expectations::default();
        e.deleted("rs", "p1".into(), at(0));
        assert!(!e.satisfied("rs", &BTreeMap::from([("p1", false)]), at(1)));
        assert!(e.satisfied("rs", &BTreeMap::from([("p1", true)]), at(1)));
    }

    #[test]
    fn expectations_expire() {
        let mut e = Expectations::default();
        e.created("rs", "p1".into(), at(0));
        assert!(!e.satisfied("rs", &BTreeMap::new(), at(EXPECTATIONS_TIMEOUT)));
        assert!(e.satisfied("rs", &BTreeMap::new(), at(EXPECTATIONS_TIMEOUT + 1)));
    }
}
