//! RemovePodsHavingTooManyRestarts (v1alpha2): pods whose containers restarted at least
//! `podRestartThreshold` times in all (init containers too with `includingInitContainers`)
//! are evicted, optionally only in some phases or container waiting reasons (`states`).

use crate::engine::Pass;
use crate::policy::TooManyRestarts;
use crate::Strategy;

const S: Strategy = Strategy::RemovePodsHavingTooManyRestarts;

pub(crate) fn run(pass: &mut Pass, args: &TooManyRestarts) {
    for n in 0..pass.nodes.len() {
        for p in pass.candidates(n) {
            if !pass.room_on(n) {
                break;
            }
            let pod = &pass.pods[p];
            if !args.scope.admits(pod) {
                continue;
            }
            let c = &pod.containers;
            let restarts = if args.including_init_containers {
                c.restarts.saturating_add(c.init_restarts)
            } else {
                c.restarts
            };
            if restarts < args.threshold {
                continue;
            }
            let waiting = c.waiting.iter().chain(
                c.init_waiting
                    .iter()
                    .filter(|_| args.including_init_containers),
            );
            let in_state = args.states.is_empty()
                || args.states.iter().any(|s| s == pod.phase())
                || waiting.into_iter().any(|w| args.states.contains(w));
            if !in_state {
                continue;
            }
            let reason = format!(
                "{restarts} container restarts, at or above podRestartThreshold ({})",
                args.threshold
            );
            pass.evict(p, n, S, reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    fn evicts(args: serde_json::Value, pods: Vec<P>) -> Vec<String> {
        let p = v2_plugin("RemovePodsHavingTooManyRestarts", "deschedule", args);
        evicted(vec![node("n1"), node("n2")], pods, &p, 0)
    }

    /// `toomanyrestarts_test.go`: pods with 0..n restarts, threshold 3.
    fn pods() -> Vec<P> {
        (0..6)
            .map(|i| pod(&format!("p{i}")).rs("rs").on("n1").restarts(i, 0))
            .collect()
    }

    #[test]
    fn pods_at_or_above_the_threshold_are_evicted() {
        assert_eq!(
            evicts(json!({"podRestartThreshold": 3}), pods()),
            ["p3", "p4", "p5"]
        );
    }

    #[test]
    fn init_container_restarts_count_only_when_asked() {
        let pods = vec![pod("i").rs("rs").on("n1").restarts(1, 5)];
        assert!(evicts(json!({"podRestartThreshold": 3}), pods).is_empty());
        let pods = vec![pod("i").rs("rs").on("n1").restarts(1, 5)];
        assert_eq!(
            evicts(
                json!({"podRestartThreshold": 3, "includingInitContainers": true}),
                pods
            ),
            ["i"]
        );
    }

    #[test]
    fn states_narrow_to_crash_looping_pods() {
        let pods = vec![
            pod("looping")
                .rs("rs")
                .on("n1")
                .restarts(9, 0)
                .waiting("CrashLoopBackOff")
                .phase("Pending"),
            pod("pending")
                .rs("rs")
                .on("n1")
                .restarts(9, 0)
                .phase("Pending"),
        ];
        assert_eq!(
            evicts(
                json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}),
                pods
            ),
            ["looping"]
        );
    }

    #[test]
    fn the_node_cap_stops_the_node() {
        let p = v2_plugin(
            "RemovePodsHavingTooManyRestarts",
            "deschedule",
            json!({"podRestartThreshold": 1}),
        );
        assert_eq!(
            evicted(vec![node("n1"), node("n2")], pods(), &p, 2),
            ["p1", "p2"]
        );
    }

    #[test]
    fn bad_arguments_are_refused_with_upstreams_words() {
        for (args, field, words) in [
            (
                json!({}),
                "args.podRestartThreshold",
                "invalid PodsHavingTooManyRestarts threshold",
            ),
            (
                json!({"podRestartThreshold": 0}),
                "args.podRestartThreshold",
                "invalid PodsHavingTooManyRestarts threshold",
            ),
            (
                json!({"podRestartThreshold": 1, "states": ["Pending"]}),
                "args.states",
                "states must be one of [CrashLoopBackOff Running]",
            ),
        ] {
            let e = v2_error("RemovePodsHavingTooManyRestarts", "deschedule", args);
            assert_eq!(e.field, field);
            assert_eq!(e.reason, words);
        }
    }
}
