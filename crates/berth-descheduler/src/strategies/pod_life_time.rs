//! PodLifeTime (v1alpha2): pods older than `maxPodLifeTimeSeconds` are evicted, oldest first,
//! optionally only in some phases or container waiting reasons (`states`).
//!
//! Age is the time of the pass less `metadata.creationTimestamp`, in whole seconds, and must be
//! strictly above the maximum (upstream's `podAgeSeconds > maxPodLifeTimeSeconds`). A pass
//! without a time evicts nothing and says so.

use crate::engine::Pass;
use crate::policy::PodLifeTime;
use crate::Strategy;

const S: Strategy = Strategy::PodLifeTime;

pub(crate) fn run(pass: &mut Pass, args: &PodLifeTime) {
    let Some(now) = pass.now else {
        return pass.note(Some(S), "no time for this pass; pod ages are unknown");
    };
    // (age, pod, node) of every pod past its lifetime.
    let mut old: Vec<(i64, usize, usize)> = Vec::new();
    for n in 0..pass.nodes.len() {
        for p in pass.candidates(n) {
            let pod = &pass.pods[p];
            if !args.scope.admits(pod) {
                continue;
            }
            let Some(age) = pod.created.map(|c| now.saturating_sub(c)) else {
                continue;
            };
            if age <= args.max_seconds {
                continue;
            }
            let in_state = args.states.is_empty()
                || args
                    .states
                    .iter()
                    .any(|s| s == pod.phase() || pod.containers.waiting.iter().any(|w| w == s));
            if in_state {
                old.push((age, p, n));
            }
        }
    }
    // The oldest first, so that caps and budgets keep the youngest.
    old.sort_by(|a, b| {
        b.0.cmp(&a.0).then_with(|| {
            let (x, y) = (&pass.pods[a.1], &pass.pods[b.1]);
            (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name))
        })
    });
    for (age, p, n) in old {
        let reason = format!(
            "pod is {age}s old, past maxPodLifeTimeSeconds ({})",
            args.max_seconds
        );
        pass.evict(p, n, S, reason);
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    /// `pod_lifetime_test.go`: the pass runs at 2026-01-01T00:10:00Z; `age` minutes old pods.
    const NOW: i64 = 1_767_226_200;

    fn aged(name: &str, minutes: i64) -> P {
        pod(name)
            .rs("rs")
            .on("n1")
            .created_secs_before(NOW, minutes * 60)
    }

    fn lifetime(args: serde_json::Value) -> crate::Policy {
        v2_plugin("PodLifeTime", "deschedule", args)
    }

    fn run_at(pods: Vec<P>, policy: &crate::Policy) -> Vec<String> {
        names(&run_with_now(
            vec![node("n1"), node("n2")],
            pods,
            policy,
            NOW,
        ))
    }

    #[test]
    fn pods_older_than_the_maximum_are_evicted_and_younger_ones_stay() {
        let p = lifetime(json!({"maxPodLifeTimeSeconds": 600}));
        assert_eq!(
            run_at(
                vec![aged("young", 5), aged("old", 11), aged("exact", 10)],
                &p
            ),
            ["old"]
        );
    }

    #[test]
    fn the_oldest_leave_first_when_the_node_cap_stops_the_rest() {
        let p = lifetime(json!({"maxPodLifeTimeSeconds": 60}));
        let plan = run_with_now_cap(
            vec![node("n1"), node("n2")],
            vec![aged("p1", 5), aged("p2", 20), aged("p3", 10)],
            &p,
            NOW,
            2,
        );
        assert_eq!(names(&plan), ["p2", "p3"]);
    }

    #[test]
    fn states_select_phases_and_waiting_reasons() {
        let p = lifetime(
            json!({"maxPodLifeTimeSeconds": 60, "states": ["Pending", "ContainerCreating"]}),
        );
        let pods = vec![
            aged("running", 5),
            aged("pending", 5).phase("Pending"),
            aged("creating", 5).waiting("ContainerCreating"),
        ];
        assert_eq!(run_at(pods, &p), ["creating", "pending"]);
    }

    #[test]
    fn namespaces_and_labels_narrow_the_pods() {
        let p = lifetime(json!({"maxPodLifeTimeSeconds": 60,
            "namespaces": {"exclude": ["kube-system"]},
            "labelSelector": {"matchLabels": {"app": "web"}}}));
        let pods = vec![
            aged("web", 5).label("app", "web"),
            aged("db", 5).label("app", "db"),
            aged("sys", 5).label("app", "web").namespace("kube-system"),
        ];
        assert_eq!(run_at(pods, &p), ["web"]);
    }

    #[test]
    fn bad_arguments_are_refused_with_upstreams_words() {
        for (args, field, words) in [
            (
                json!({}),
                "args.maxPodLifeTimeSeconds",
                "MaxPodLifeTimeSeconds not set",
            ),
            (
                json!({"maxPodLifeTimeSeconds": 1, "states": ["Failed"]}),
                "args.states",
                "states must be one of [ContainerCreating Pending PodInitializing Running]",
            ),
            (
                json!({"maxPodLifeTimeSeconds": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}}),
                "args.namespaces",
                "only one of Include/Exclude namespaces can be set",
            ),
        ] {
            let e = v2_error("PodLifeTime", "deschedule", args);
            assert_eq!(
                (e.strategy.as_str(), e.field.as_str()),
                ("PodLifeTime", field)
            );
            assert_eq!(e.reason, words);
        }
    }
}
