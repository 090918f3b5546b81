//! RemoveFailedPods (v1alpha2): pods in phase `Failed` are evicted (deleted through the
//! eviction API) so that their owners' controllers make new ones, optionally only some owner
//! kinds, failure reasons, or pods older than `minPodLifetimeSeconds`.
//!
//! A failed pod's reasons are its containers' `waiting` and `terminated` reasons and the pod's
//! `status.reason` (init containers' with `includingInitContainers`), as upstream reads them.
//! Failed pods without an owner are evictable only with the evictor's `evictFailedBarePods`.

use crate::engine::Pass;
use crate::policy::RemoveFailedPods;
use crate::Strategy;

const S: Strategy = Strategy::RemoveFailedPods;

pub(crate) fn run(pass: &mut Pass, args: &RemoveFailedPods) {
    if args.min_lifetime_seconds.is_some() && pass.now.is_none() {
        return pass.note(Some(S), "no time for this pass; pod ages are unknown");
    }
    for n in 0..pass.nodes.len() {
        let failed: Vec<usize> = pass.failed_on_node[n]
            .iter()
            .copied()
            .filter(|&p| pass.evictable[p])
            .collect();
        for p in failed {
            let pod = &pass.pods[p];
            if !args.scope.admits(pod) {
                continue;
            }
            let owners = &pod.pod.metadata.owner_references;
            if owners
                .iter()
                .any(|o| args.exclude_owner_kinds.contains(&o.kind))
            {
                continue;
            }
            if let (Some(min), Some(now)) = (args.min_lifetime_seconds, pass.now) {
                if pod.created.is_none_or(|c| now.saturating_sub(c) <= min) {
                    continue;
                }
            }
            let c = &pod.containers;
            let mut reasons: Vec<&String> = c.waiting.iter().chain(&c.terminated).collect();
            if !c.pod_reason.is_empty() {
                reasons.push(&c.pod_reason);
            }
            if args.including_init_containers {
                reasons.extend(c.init_waiting.iter().chain(&c.init_terminated));
            }
            if !args.reasons.is_empty() && !reasons.iter().any(|r| args.reasons.contains(r)) {
                continue;
            }
            let reason = match reasons.first() {
                Some(r) => format!("pod failed ({r})"),
                None => "pod failed".to_string(),
            };
            if !pass.room_on(n) {
                break;
            }
            pass.evict(p, n, S, reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    const NOW: i64 = 1_767_226_200;

    fn failed(name: &str) -> P {
        pod(name)
            .rs("rs")
            .on("n1")
            .phase("Failed")
            .created_secs_before(NOW, 3600)
    }

    fn evicts(args: serde_json::Value, pods: Vec<P>) -> Vec<String> {
        let p = v2_plugin("RemoveFailedPods", "deschedule", args);
        names(&run_with_now(vec![node("n1"), node("n2")], pods, &p, NOW))
    }

    #[test]
    fn failed_pods_are_evicted_and_running_ones_are_not() {
        assert_eq!(
            evicts(json!({}), vec![failed("f"), pod("r").rs("rs").on("n1")]),
            ["f"]
        );
    }

    #[test]
    fn reasons_match_container_and_pod_reasons() {
        let pods = vec![
            failed("oom").terminated("OOMKilled"),
            failed("evicted").pod_reason("Evicted"),
            failed("other").terminated("Error"),
            failed("init").init_terminated("OOMKilled"),
        ];
        assert_eq!(
            evicts(json!({"reasons": ["OOMKilled", "Evicted"]}), pods),
            ["evicted", "oom"]
        );
        let pods = vec![failed("init").init_terminated("OOMKilled")];
        assert_eq!(
            evicts(
                json!({"reasons": ["OOMKilled"], "includingInitContainers": true}),
                pods
            ),
            ["init"]
        );
    }

    #[test]
    fn excluded_owner_kinds_and_young_pods_stay() {
        let pods = vec![
            failed("job").owner("Job", "j"),
            failed("rs"),
            failed("young").created_secs_before(NOW, 30),
        ];
        assert_eq!(
            evicts(
                json!({"excludeOwnerKinds": ["Job"], "minPodLifetimeSeconds": 60}),
                pods
            ),
            ["rs"]
        );
    }

    #[test]
    fn bare_failed_pods_need_evict_failed_bare_pods() {
        let bare = || {
            pod("bare")
                .on("n1")
                .phase("Failed")
                .created_secs_before(NOW, 3600)
        };
        assert!(evicts(json!({}), vec![bare()]).is_empty());
        let p = v2_plugin_with_evictor(
            "RemoveFailedPods",
            "deschedule",
            json!({}),
            json!({"evictFailedBarePods": true}),
        );
        let plan = run_with_now(vec![node("n1"), node("n2")], vec![bare()], &p, NOW);
        assert_eq!(names(&plan), ["bare"]);
    }
}
