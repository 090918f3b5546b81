//! The event path equals the full pass: random histories of node and pod changes, fed one at a
//! time as watch events to one manager and as whole-cluster passes to the reference (the
//! earlier full-pass manager, kept here verbatim), decide the same actions and wake-ups.

use super::*;
use serde_json::json;

/// The full-pass taint manager this module was before it became incremental.
#[derive(Default)]
struct Reference {
    observed: BTreeMap<(String, TaintId), DateTime<Utc>>,
    scheduled: BTreeMap<PodRef, DateTime<Utc>>,
    fired: BTreeMap<String, DateTime<Utc>>,
}

impl Reference {
    fn pass(&mut self, nodes: &[&Node], pods: &[&Pod], now: DateTime<Utc>) -> TaintPass {
        let mut since: BTreeMap<&str, Vec<Counted>> = BTreeMap::new();
        let mut live = BTreeSet::new();
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or("");
            for t in node_taints(node).iter().filter(|t| t.effect == "NoExecute") {
                let key = (name.to_string(), taint_id(t));
                let first = *self.observed.entry(key.clone()).or_insert(now);
                let start = t
                    .time_added
                    .as_ref()
                    .map(to_chrono)
                    .map_or(first, |a| a.min(first));
                since.entry(name).or_default().push(Counted {
                    taint: t.clone(),
                    observed: first,
                    start,
                });
                live.insert(key);
            }
        }
        self.observed.retain(|k, _| live.contains(k));

        let mut out = TaintPass::default();
        let mut present = BTreeSet::new();
        for pod in pods {
            let r = PodRef::of(pod);
            present.insert(r.uid.clone());
            let Some(node) = pod_node(pod) else { continue };
            if pod.metadata.deletion_timestamp.is_some() {
                self.scheduled.remove(&r);
                continue;
            }
            let deadline = since
                .get(node)
                .and_then(|taints| deadline(tolerations(pod), taints));
            match deadline {
                None => {
                    if self.scheduled.remove(&r).is_some() {
                        let msg = format!("Cancelling deletion of Pod {}/{}", r.namespace, r.name);
                        out.actions
                            .push(event(&r, &crate::model::version_of(&pod.metadata), msg));
                    }
                }
                Some(at) if at <= now => {
                    self.scheduled.remove(&r);
                    let recent = self
                        .fired
                        .get(&r.uid)
                        .is_some_and(|f| now - *f < Duration::seconds(REFIRE_AFTER));
                    if !recent {
                        self.fired.insert(r.uid.clone(), now);
                        let msg = format!("Marking for deletion Pod {}/{}", r.namespace, r.name);
                        out.actions
                            .push(event(&r, &crate::model::version_of(&pod.metadata), msg));
                        out.actions.push(TaintAction::Delete(r));
                    }
                }
                Some(at) => {
                    self.scheduled.insert(r, at);
                    out.next_wakeup = Some(out.next_wakeup.map_or(at, |w| w.min(at)));
                }
            }
        }
        self.scheduled.retain(|r, _| present.contains(&r.uid));
        self.fired.retain(|uid, _| present.contains(uid));
        out
    }
}

/// xorshift64*: a small deterministic generator, enough to vary histories.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .to_utc()
}

const NODES: usize = 3;
const PODS: usize = 6;

fn taint_choices() -> Vec<serde_json::Value> {
    vec![
        json!([]),
        json!([]),
        json!([{"key": "A", "effect": "NoExecute"}]),
        json!([{"key": "A", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:05Z"}]),
        json!([{"key": "B", "value": "x", "effect": "NoExecute"}]),
        json!([{"key": "A", "effect": "NoExecute"}, {"key": "B", "value": "x", "effect": "NoExecute"}]),
        json!([{"key": "C", "effect": "NoSchedule"}]),
        json!([{"key": "C", "effect": "NoSchedule"}, {"key": "A", "effect": "NoExecute"}]),
    ]
}

fn toleration_choices() -> Vec<serde_json::Value> {
    let tol = |key: &str, seconds: Option<i64>| json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds});
    vec![
        json!([]),
        json!([tol("A", Some(10))]),
        json!([tol("A", None)]),
        json!([tol("A", Some(20)), tol("B", Some(5))]),
        json!([tol("B", None), tol("A", Some(0))]),
        json!([{"operator": "Exists"}]),
        json!([tol("A", Some(30)), tol("B", Some(30))]),
        json!([tol("A", Some(60)), tol("B", Some(40))]),
        json!([tol("A", Some(45)), tol("B", None)]),
    ]
}

fn node(i: usize, taints: &serde_json::Value) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": format!("n{i}")}, "spec": {"taints": taints}}),
    )
    .unwrap()
}

fn pod(uid: usize, on: Option<usize>, tolerations: &serde_json::Value, deleting: bool) -> Pod {
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("p{uid}"), "namespace": "ns", "uid": format!("u{uid}")},
        "spec": {"nodeName": on.map(|n| format!("n{n}")), "tolerations": tolerations, "containers": []},
    }))
    .unwrap();
    if deleting {
        p.metadata.deletion_timestamp = Some(crate::model::to_time(t0()));
    }
    p
}

fn sorted(actions: &[TaintAction]) -> Vec<String> {
    let mut v: Vec<String> = actions.iter().map(|a| format!("{a:?}")).collect();
    v.sort();
    v
}

/// What a history exercised: deletions, cancellations, deletions fired by a timer.
#[derive(Default)]
struct Exercised {
    deletions: usize,
    cancellations: usize,
    timer_deletions: usize,
}

/// One history: each step lets time pass, then changes at most one object.
fn run_history(seed: u64, steps: usize, seen: &mut Exercised) {
    let taints = taint_choices();
    let tolerations = toleration_choices();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut nodes: Vec<Option<Node>> = (0..NODES).map(|i| Some(node(i, &taints[0]))).collect();
    let mut pods: Vec<Option<Pod>> = vec![None; PODS];
    let mut reference = Reference::default();
    let mut manager = TaintManager::new();
    let mut now = t0();
    let mut next_uid = PODS;
    for n in nodes.iter().flatten() {
        assert!(manager.node_changed(n, now).is_empty());
    }
    for step in 0..steps {
        // Time passes: sometimes exactly to the next deadline, as the driver wakes.
        now = match (rng.below(3), manager.next_wakeup()) {
            (0, Some(at)) if at > now => at,
            _ => now + Duration::seconds(rng.below(8) as i64),
        };
        let mut events: Vec<TaintAction> = Vec::new();
        let i = rng.below(PODS.max(NODES));
        match rng.below(6) {
            0 | 1 => {
                let i = i % NODES;
                if rng.below(8) == 0 {
                    nodes[i] = None;
                    events.extend(manager.node_deleted(&format!("n{i}"), now));
                } else {
                    let n = node(i, &taints[rng.below(taints.len())]);
                    events.extend(manager.node_changed(&n, now));
                    nodes[i] = Some(n);
                }
            }
            2 => {
                // A new pod (a fresh uid), maybe bound already.
                let i = i % PODS;
                if let Some(old) = pods[i].take() {
                    manager.pod_deleted(&old);
                }
                let on = (rng.below(3) > 0).then(|| rng.below(NODES));
                let p = pod(
                    next_uid,
                    on,
                    &tolerations[rng.below(tolerations.len())],
                    false,
                );
                next_uid += 1;
                events.extend(manager.pod_changed(&p, now));
                pods[i] = Some(p);
            }
            3 => {
                // Bound, or its tolerations changed (the API allows adding some).
                let i = i % PODS;
                if let Some(old) = &pods[i] {
                    let uid: usize = old.metadata.uid.as_deref().unwrap()[1..].parse().unwrap();
                    let on = pod_node(old)
                        .map(|n| n[1..].parse().unwrap())
                        .or(Some(rng.below(NODES)));
                    let deleting = old.metadata.deletion_timestamp.is_some();
                    let p = pod(
                        uid,
                        on,
                        &tolerations[rng.below(tolerations.len())],
                        deleting,
                    );
                    events.extend(manager.pod_changed(&p, now));
                    pods[i] = Some(p);
                }
            }
            4 => {
                // Being deleted, or gone.
                let i = i % PODS;
                if let Some(old) = pods[i].clone() {
                    if rng.below(2) == 0 {
                        let mut p = old;
                        p.metadata.deletion_timestamp = Some(crate::model::to_time(now));
                        events.extend(manager.pod_changed(&p, now));
                        pods[i] = Some(p);
                    } else {
                        manager.pod_deleted(&old);
                        pods[i] = None;
                    }
                }
            }
            _ => {} // only time passes
        }
        let mut due = manager.due(now);
        seen.timer_deletions += due
            .actions
            .iter()
            .filter(|a| matches!(a, TaintAction::Delete(_)))
            .count();
        events.append(&mut due.actions);
        for a in &events {
            match a {
                TaintAction::Delete(_) => seen.deletions += 1,
                TaintAction::Event(e) if e.message.starts_with("Cancelling") => {
                    seen.cancellations += 1
                }
                TaintAction::Event(_) => {}
            }
        }

        let node_refs: Vec<&Node> = nodes.iter().flatten().collect();
        let pod_refs: Vec<&Pod> = pods.iter().flatten().collect();
        let expected = reference.pass(&node_refs, &pod_refs, now);
        assert_eq!(
            sorted(&events),
            sorted(&expected.actions),
            "seed {seed} step {step} at {now}"
        );
        assert_eq!(
            due.next_wakeup, expected.next_wakeup,
            "seed {seed} step {step} at {now}"
        );

        // The pods deleted go away before anything else happens (as the API server does).
        for action in &events {
            if let TaintAction::Delete(r) = action {
                for slot in pods.iter_mut() {
                    if slot.as_ref().and_then(|p| p.metadata.uid.as_deref()) == Some(&r.uid) {
                        manager.pod_deleted(slot.as_ref().unwrap());
                        *slot = None;
                    }
                }
            }
        }
    }
}

#[test]
fn events_decide_what_full_passes_decide() {
    let mut seen = Exercised::default();
    for seed in 0..300 {
        run_history(seed, 120, &mut seen);
    }
    // The histories reach every decision, not just the quiet ones.
    assert!(seen.deletions > 1000, "{} deletions", seen.deletions);
    assert!(
        seen.cancellations > 100,
        "{} cancellations",
        seen.cancellations
    );
    assert!(
        seen.timer_deletions > 100,
        "{} timer deletions",
        seen.timer_deletions
    );
}

#[test]
fn a_pass_after_events_changes_nothing() {
    // A resync (the driver lost events) over the state events built decides nothing new.
    let taint: serde_json::Value = json!([{"key": "A", "effect": "NoExecute"}]);
    let mut m = TaintManager::new();
    let n = node(0, &taint);
    let waiting = pod(
        1,
        Some(0),
        &json!([{"key": "A", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]),
        false,
    );
    let forever = pod(2, Some(0), &json!([{"operator": "Exists"}]), false);
    assert!(m.node_changed(&n, t0()).is_empty());
    assert!(m.pod_changed(&waiting, t0()).is_empty());
    assert!(m.pod_changed(&forever, t0()).is_empty());
    let later = t0() + Duration::seconds(10);
    let pass = m.pass(&[&n], &[&waiting, &forever], later);
    assert_eq!(
        pass,
        TaintPass {
            actions: vec![],
            next_wakeup: Some(t0() + Duration::seconds(60)),
        }
    );
}

#[test]
fn only_the_changed_node_is_evaluated() {
    // A node change that leaves its NoExecute taints alone decides nothing; a pod on another
    // node is not touched by a change of this one.
    let mut m = TaintManager::new();
    let tainted = node(0, &json!([{"key": "A", "effect": "NoExecute"}]));
    let p = pod(
        1,
        Some(0),
        &json!([{"key": "A", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]),
        false,
    );
    let elsewhere = pod(2, Some(1), &json!([]), false);
    assert!(m.node_changed(&tainted, t0()).is_empty());
    assert!(m.pod_changed(&p, t0()).is_empty());
    assert!(m.pod_changed(&elsewhere, t0()).is_empty());
    let mut relabelled = tainted.clone();
    relabelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    relabelled
        .spec
        .as_mut()
        .unwrap()
        .taints
        .as_mut()
        .unwrap()
        .push(Taint {
            key: "C".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        });
    let later = t0() + Duration::seconds(2);
    assert!(m.node_changed(&relabelled, later).is_empty());
    assert_eq!(m.next_wakeup(), Some(t0() + Duration::seconds(5)));
    let fired = m.due(t0() + Duration::seconds(5));
    assert_eq!(fired.actions.len(), 2);
    assert_eq!(fired.next_wakeup, None);
}
