//! PodFitsResources: pod count, cpu, memory, ephemeral-storage and scalar resources against
//! allocatable (scheduler.md §4.1.1).

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason, ResourceName};
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "PodFitsResources",
    aliases: &[],
    order: 6,
    argument: None,
    reasons: &[&INSUFFICIENT],
    fast: FastClass::Resources,
    victims: VictimsClass::Resources,
};

/// `Insufficient <resource>`.
pub(crate) static INSUFFICIENT: ReasonDef = ReasonDef {
    text: "Insufficient <resource>",
    resolvable: true,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, out))
}

/// Collects every insufficient resource.
#[inline]
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let info = n.info;
    let before = out.len();
    if info.pod_count + 1 > info.alloc_pods {
        out.push(Reason::Insufficient(ResourceName::Pods));
    }
    let req = &c.pod.request;
    if req.cpu == 0 && req.memory == 0 && req.ephemeral == 0 && req.scalars.is_empty() {
        return out.len() == before;
    }
    let (a, u) = (&info.alloc, &info.requested);
    // Saturating sums: an overflowing request must not wrap into one that fits.
    if a.cpu < req.cpu.saturating_add(u.cpu) {
        out.push(Reason::Insufficient(ResourceName::Cpu));
    }
    if a.memory < req.memory.saturating_add(u.memory) {
        out.push(Reason::Insufficient(ResourceName::Memory));
    }
    if a.ephemeral < req.ephemeral.saturating_add(u.ephemeral) {
        out.push(Reason::Insufficient(ResourceName::EphemeralStorage));
    }
    for &(name, v) in &req.scalars {
        if a.scalar(name) < v.saturating_add(u.scalar(name)) {
            out.push(Reason::Insufficient(ResourceName::Scalar(name)));
        }
    }
    out.len() == before
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn c(cpu: i64, mem: i64) -> serde_json::Value {
        json!({"name": "c", "resources": {"requests": {"cpu": format!("{cpu}m"), "memory": mem.to_string()}}})
    }

    #[test]
    fn upstream_vectors() {
        // node alloc cpu=10m, memory=20, pods=32; "used" is one existing pod with that request.
        // (containers, init containers, used (cpu, memory), reasons)
        type Case<'a> = (
            Vec<serde_json::Value>,
            Vec<serde_json::Value>,
            (i64, i64),
            Vec<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (vec![], vec![], (10, 20), vec![]),
            (
                vec![c(1, 1)],
                vec![],
                (10, 20),
                vec!["Insufficient cpu", "Insufficient memory"],
            ),
            (
                vec![c(1, 1)],
                vec![c(3, 1)],
                (8, 19),
                vec!["Insufficient cpu"],
            ),
            (vec![c(1, 1)], vec![c(1, 1), c(1, 1)], (9, 19), vec![]),
            (vec![c(5, 1)], vec![], (5, 19), vec![]),
            (vec![c(2, 1)], vec![], (9, 5), vec!["Insufficient cpu"]),
        ];
        for (containers, init, used, want) in cases {
            let n = node_json(
                json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "10m", "memory": "20", "pods": "32"}}}),
            );
            let existing = pod(
                json!({"metadata": {"name": "e"}, "spec": {"nodeName": "n1", "containers": [c(used.0, used.1)]}}),
            );
            let p = pod(json!({"spec": {"containers": containers, "initContainers": init}}));
            let got = reasons_of(builtin(P::PodFitsResources), vec![n], vec![existing], p);
            assert_eq!(
                got,
                vec![want.iter().map(|s| s.to_string()).collect::<Vec<_>>()]
            );
        }
    }

    #[test]
    fn pods_and_extended() {
        let n = node_json(
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "1", "example.com/gpu": "1"}}}),
        );
        let e = pod(json!({"metadata": {"name": "e"}, "spec": {"nodeName": "n1"}}));
        let p = pod(
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "2", "ephemeral-storage": "1Gi"}}}]}}),
        );
        let got = reasons_of(builtin(P::PodFitsResources), vec![n], vec![e], p);
        assert_eq!(
            got,
            vec![vec![
                "Insufficient pods".to_string(),
                "Insufficient ephemeral-storage".into(),
                "Insufficient example.com/gpu".into()
            ]]
        );
    }

    #[test]
    fn requests_at_the_i64_bound_never_wrap_into_fitting() {
        let n = node_json(
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}}),
        );
        let e = pod(
            json!({"metadata": {"name": "e"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}),
        );
        for (cpu, memory) in [
            ("10000000000000000", "1"),
            ("9223372036854775807", "1"),
            ("1", "9999999999999999999999999999Ei"),
        ] {
            let p = pod(
                json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}),
            );
            let got = reasons_of(
                builtin(P::PodFitsResources),
                vec![n.clone()],
                vec![e.clone()],
                p,
            );
            assert_eq!(got.len(), 1);
            assert!(
                !got[0].is_empty(),
                "cpu {cpu} memory {memory} fitted a 4-cpu node"
            );
        }
    }
}
