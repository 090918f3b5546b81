//! RemovePodsViolatingTopologySpreadConstraint (v1alpha2): per namespace and per distinct
//! topology spread constraint of its pods, the pods matching the constraint are counted per
//! domain (every value of the topology key among the nodes, empty ones too); when two domains
//! differ by more than `maxSkew`, pods move from the domains above the ideal average to those
//! below it, as upstream's `balanceDomains` moves them.
//!
//! The domains are sorted by size; from the smallest (`i`) and the largest (`j`), the move is
//! the least of: half the skew beyond `maxSkew` (rounded up), what `j` has above the average,
//! and what `i` lacks below it (both rounded up). A domain's pods leave from the back of its
//! list, which holds, in order: pods the evictor would not evict, pods with a node selector or
//! node affinity, then the rest by descending priority (pods without one last), so that
//! movable, low-priority pods go first. With `topologyBalanceNodeFit` a pod is chosen only when
//! a node of a domain below the average would take it. Only constraints whose
//! `whenUnsatisfiable` is in `constraints` are balanced.

use crate::engine::Pass;
use crate::model::SpreadConstraint;
use crate::policy::TopologySpread;
use crate::Strategy;
use std::collections::{BTreeMap, BTreeSet};

const S: Strategy = Strategy::RemovePodsViolatingTopologySpreadConstraint;

pub(crate) fn run(pass: &mut Pass, args: &TopologySpread) {
    // Every live pod on a considered node, by namespace.
    let mut by_namespace: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for n in 0..pass.nodes.len() {
        for p in pass.live(n) {
            by_namespace
                .entry(pass.pods[p].namespace.as_str())
                .or_default()
                .push(p);
        }
    }
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    let mut why: BTreeMap<usize, String> = BTreeMap::new();
    for (ns, pods) in &by_namespace {
        let scope = &args.scope;
        if (!scope.include.is_empty() && !scope.include.iter().any(|i| i == ns))
            || scope.exclude.iter().any(|e| e == ns)
        {
            continue;
        }
        let mut constraints: Vec<&SpreadConstraint> = Vec::new();
        for &p in pods {
            for c in &pass.pods[p].spread {
                if args.constraints.contains(&c.when_unsatisfiable)
                    && !constraints.iter().any(|k| k.raw == c.raw)
                {
                    constraints.push(c);
                }
            }
        }
        for c in constraints {
            balance(pass, args, c, pods, &mut chosen, &mut why);
        }
    }
    // Evict in a stable order: by namespace and name.
    let mut order: Vec<usize> = chosen.into_iter().collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&pass.pods[a], &pass.pods[b]);
        (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name))
    });
    for p in order {
        let pod = &pass.pods[p];
        if !pass.evictable[p] || !args.scope.admits(pod) {
            continue;
        }
        let Some(n) = pass.nodes.iter().position(|x| x.name == pod.node) else {
            continue;
        };
        let reason = why.remove(&p).unwrap_or_default();
        pass.evict(p, n, S, reason);
    }
}

/// One domain: its key value and the pods counted in it.
struct Domain {
    value: String,
    pods: Vec<usize>,
}

fn balance(
    pass: &Pass,
    args: &TopologySpread,
    c: &SpreadConstraint,
    namespace_pods: &[usize],
    chosen: &mut BTreeSet<usize>,
    why: &mut BTreeMap<usize, String>,
) {
    let key = c.topology_key.as_str();
    let mut domains: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for node in &pass.nodes {
        if let Some(v) = node.labels().get(key) {
            domains.entry(v.as_str()).or_default();
        }
    }
    let Some(selector) = &c.selector else {
        return;
    };
    let node_of: BTreeMap<&str, &crate::model::NodeState> =
        pass.nodes.iter().map(|n| (n.name.as_str(), *n)).collect();
    let mut total = 0usize;
    for &p in namespace_pods {
        let pod = &pass.pods[p];
        if pod.pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let labels = pod.labels();
        if !selector.matches_fn(|k| labels.get(k).map(String::as_str)) {
            continue;
        }
        let Some(value) = node_of
            .get(pod.node.as_str())
            .and_then(|n| n.labels().get(key))
        else {
            continue;
        };
        domains.entry(value.as_str()).or_default().push(p);
        total += 1;
    }
    if domains.is_empty() {
        return;
    }
    let (min, max) = domains.values().fold((usize::MAX, 0), |(lo, hi), d| {
        (lo.min(d.len()), hi.max(d.len()))
    });
    if (max - min) as i64 <= c.max_skew {
        return;
    }
    let ideal = total as f64 / domains.len() as f64;
    let mut sorted: Vec<Domain> = domains
        .into_iter()
        .map(|(value, mut pods)| {
            pods.sort_by(|&a, &b| leave_order(pass, a, b));
            Domain {
                value: value.to_string(),
                pods,
            }
        })
        .collect();
    // Stable: equal sizes keep the key values' order.
    sorted.sort_by_key(|d| d.pods.len());
    // The nodes of the domains below the average: where a moved pod may go.
    let below: Vec<usize> = (0..pass.nodes.len())
        .filter(|&m| {
            pass.nodes[m].labels().get(key).is_some_and(|v| {
                sorted
                    .iter()
                    .any(|d| &d.value == v && (d.pods.len() as f64) < ideal)
            })
        })
        .collect();
    let (mut i, mut j) = (0usize, sorted.len() - 1);
    while i < j {
        if sorted[j].pods.len() as f64 <= ideal {
            j -= 1;
            // Upstream moves on without re-checking `i < j`; with j == i the skew is 0 and
            // `i` advances, which ends the loop the same way.
        }
        let skew = sorted[j].pods.len() as i64 - sorted[i].pods.len() as i64;
        if skew <= c.max_skew {
            i += 1;
            continue;
        }
        let above_avg = (sorted[j].pods.len() as f64 - ideal).ceil();
        let below_avg = (ideal - sorted[i].pods.len() as f64).ceil();
        let half_skew = ((skew - c.max_skew) as f64 / 2.0).ceil();
        let moves = above_avg.min(below_avg).min(half_skew) as i64;
        if moves <= 0 {
            i += 1;
            continue;
        }
        let keep = sorted[j].pods.len() - moves as usize;
        let leaving: Vec<usize> = sorted[j].pods.split_off(keep);
        for &p in &leaving {
            let n = pass
                .nodes
                .iter()
                .position(|n| n.name == pass.pods[p].node)
                .unwrap_or(usize::MAX);
            if args.node_fit && pass.fits_elsewhere(p, n, &below).is_none() {
                continue;
            }
            chosen.insert(p);
            why.entry(p).or_insert_with(|| {
                format!(
                    "{key}={} has {} matching pods, {}={} has {}; maxSkew {}",
                    sorted[j].value,
                    keep + leaving.len(),
                    key,
                    sorted[i].value,
                    sorted[i].pods.len(),
                    c.max_skew
                )
            });
        }
        sorted[i].pods.extend(leaving);
    }
}

/// The order of a domain's list; pods leave from its back (see the module doc).
fn leave_order(pass: &Pass, a: usize, b: usize) -> std::cmp::Ordering {
    let rank = |p: usize| {
        let pod = &pass.pods[p];
        let spec = &pod.pod.spec;
        let pinned = !spec.node_selector.is_empty()
            || spec
                .affinity
                .as_ref()
                .is_some_and(|a| a.node_affinity.is_some());
        // Front to back: not evictable, pinned, then by descending priority (none last).
        let class = match (pass.evictable[p], pinned) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        };
        (
            class,
            std::cmp::Reverse(spec.priority.map_or(i64::MIN, i64::from)),
        )
    };
    rank(a).cmp(&rank(b)).then_with(|| {
        let (x, y) = (&pass.pods[a], &pass.pods[b]);
        y.name.cmp(&x.name)
    })
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::{json, Value};

    fn spread(max_skew: i64, when: &str) -> Value {
        json!([{"maxSkew": max_skew, "topologyKey": "zone", "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"foo": "bar"}}}])
    }

    fn pods_on(node: &str, count: usize, prefix: &str, when: &str) -> Vec<P> {
        (0..count)
            .map(|i| {
                pod(&format!("{prefix}{i}"))
                    .rs("rs")
                    .on(node)
                    .label("foo", "bar")
                    .spec("topologySpreadConstraints", spread(1, when))
            })
            .collect()
    }

    fn zones() -> Vec<N> {
        vec![
            node("n1").label("zone", "zoneA"),
            node("n2").label("zone", "zoneB"),
        ]
    }

    fn tsc(args: Value) -> crate::Policy {
        v2_plugin(
            "RemovePodsViolatingTopologySpreadConstraint",
            "balance",
            args,
        )
    }

    /// `topologyspreadconstraint_test.go` "2 domains, sizes [3,1], maxSkew=1, move 1 pod".
    #[test]
    fn three_and_one_moves_one_pod() {
        let mut pods = pods_on("n1", 3, "a", "DoNotSchedule");
        pods.extend(pods_on("n2", 1, "b", "DoNotSchedule"));
        assert_eq!(evicted(zones(), pods, &tsc(json!({})), 0).len(), 1);
    }

    /// "2 domains, sizes [2,1], maxSkew=1, should not move any pod".
    #[test]
    fn two_and_one_is_within_the_skew() {
        let mut pods = pods_on("n1", 2, "a", "DoNotSchedule");
        pods.extend(pods_on("n2", 1, "b", "DoNotSchedule"));
        assert!(evicted(zones(), pods, &tsc(json!({})), 0).is_empty());
    }

    /// "2 domains, sizes [4,0], maxSkew=1, move 2 pods": the empty zone counts.
    #[test]
    fn four_and_zero_moves_two() {
        let pods = pods_on("n1", 4, "a", "DoNotSchedule");
        assert_eq!(evicted(zones(), pods, &tsc(json!({})), 0).len(), 2);
    }

    /// "soft constraints are ignored unless asked for".
    #[test]
    fn schedule_anyway_constraints_need_the_constraints_argument() {
        let pods = || pods_on("n1", 4, "a", "ScheduleAnyway");
        assert!(evicted(zones(), pods(), &tsc(json!({})), 0).is_empty());
        let both = tsc(json!({"constraints": ["DoNotSchedule", "ScheduleAnyway"]}));
        assert_eq!(evicted(zones(), pods(), &both, 0).len(), 2);
    }

    /// "pods with a node selector stay when others can go"; lower priority goes first.
    #[test]
    fn pinned_and_high_priority_pods_leave_last() {
        let mut pods = pods_on("n1", 4, "a", "DoNotSchedule");
        pods[0] = std::mem::replace(&mut pods[0], pod("x")).priority(100);
        pods[1] = std::mem::replace(&mut pods[1], pod("x")).priority(10);
        pods[2] = std::mem::replace(&mut pods[2], pod("x"))
            .spec("nodeSelector", json!({"zone": "zoneA"}));
        pods[3] = std::mem::replace(&mut pods[3], pod("x")).priority(1);
        let got = evicted(
            zones(),
            pods,
            &tsc(json!({"topologyBalanceNodeFit": false})),
            0,
        );
        assert_eq!(got, ["a1", "a3"]);
    }

    /// "node fit": a pod that no node of the smaller domain takes stays.
    #[test]
    fn with_node_fit_a_pod_that_fits_nowhere_below_stays() {
        let nodes = vec![
            node("n1").label("zone", "zoneA"),
            node("n2")
                .label("zone", "zoneB")
                .taint("k", "v", "NoSchedule"),
        ];
        let pods = pods_on("n1", 4, "a", "DoNotSchedule");
        assert!(evicted(nodes, pods, &tsc(json!({})), 0).is_empty());
    }

    #[test]
    fn bad_arguments_are_refused() {
        let e = v2_error(
            "RemovePodsViolatingTopologySpreadConstraint",
            "balance",
            json!({"constraints": ["Sometimes"]}),
        );
        assert_eq!(e.field, "args.constraints[0]");
    }
}
