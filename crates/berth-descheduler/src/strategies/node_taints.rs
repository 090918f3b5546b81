//! RemovePodsViolatingNodeTaints (§1.10, upstream v0.10): a pod that does not tolerate every
//! `NoSchedule` taint of its node is evicted (PreferNoSchedule and NoExecute are not its
//! business: the taint manager handles NoExecute). Tolerations match as everywhere in berth
//! ([`berth_core::taints::tolerates`]).

use crate::engine::Pass;
use crate::Strategy;
use berth_core::taints::{tolerates, Operator, Taint, Toleration};

const S: Strategy = Strategy::RemovePodsViolatingNodeTaints;

pub(crate) fn run(pass: &mut Pass) {
    for n in 0..pass.nodes.len() {
        let taints: Vec<Taint<&str, &str>> = pass.nodes[n]
            .node
            .spec
            .taints
            .iter()
            .filter(|t| t.effect == "NoSchedule")
            .map(|t| Taint {
                key: t.key.as_str(),
                value: t.value.as_str(),
                effect: t.effect.as_str(),
            })
            .collect();
        if taints.is_empty() {
            continue;
        }
        for p in pass.candidates(n) {
            if !pass.room_on(n) {
                break;
            }
            let tolerations: Vec<Toleration<&str, &str>> = pass.pods[p]
                .pod
                .spec
                .tolerations
                .iter()
                .map(|t| Toleration {
                    key: (!t.key.is_empty()).then_some(t.key.as_str()),
                    operator: Operator::parse(&t.operator),
                    value: t.value.as_str(),
                    effect: (!t.effect.is_empty()).then_some(t.effect.as_str()),
                })
                .collect();
            let untolerated = taints
                .iter()
                .find(|x| !tolerations.iter().any(|t| tolerates(t, x)));
            if let Some(x) = untolerated {
                let taint = if x.value.is_empty() {
                    format!("{}:{}", x.key, x.effect)
                } else {
                    format!("{}={}:{}", x.key, x.value, x.effect)
                };
                let reason = format!(
                    "it does not tolerate node {}'s taint {taint}",
                    pass.nodes[n].name
                );
                pass.evict(p, n, S, reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::strategies::testutil::*;
    use serde_json::json;

    fn on() -> crate::Policy {
        policy(json!({"RemovePodsViolatingNodeTaints": {"enabled": true}}))
    }

    #[test]
    fn pods_that_do_not_tolerate_a_noschedule_taint_are_evicted() {
        let nodes = vec![
            node("n1").taint("dedicated", "user1", "NoSchedule"),
            node("n2"),
        ];
        let pods = vec![
            pod("plain").rs("r").on("n1"),
            pod("tolerant")
                .rs("r")
                .spec(
                    "tolerations",
                    json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]),
                )
                .on("n1"),
            pod("exists")
                .rs("r")
                .spec("tolerations", json!([{"operator": "Exists"}]))
                .on("n1"),
            pod("wrong")
                .rs("r")
                .spec(
                    "tolerations",
                    json!([{"key": "dedicated", "value": "user2"}]),
                )
                .on("n1"),
            pod("elsewhere").rs("r").on("n2"),
        ];
        let plan = run(nodes, pods, &on(), 0);
        assert_eq!(names(&plan), ["plain", "wrong"]);
        assert_eq!(
            plan.evictions[0].reason,
            "it does not tolerate node n1's taint dedicated=user1:NoSchedule"
        );
    }

    #[test]
    fn prefer_no_schedule_and_no_execute_taints_are_ignored() {
        let nodes = vec![
            node("n1")
                .taint("a", "", "PreferNoSchedule")
                .taint("b", "", "NoExecute"),
            node("n2"),
        ];
        assert!(evicted(nodes, vec![pod("p").rs("r").on("n1")], &on(), 0).is_empty());
    }
}
