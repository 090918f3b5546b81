//! MatchNodeSelector: `spec.nodeSelector` AND required node affinity (terms ORed).

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::compiled::Labels;
use crate::ctx::PodCtx;
use crate::intern::{Interner, Sym};
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "MatchNodeSelector",
    aliases: &[],
    order: 5,
    argument: None,
    reasons: &[&NOT_MATCH_SELECTOR, &NOT_MATCH_ENFORCED],
    fast: FastClass::NodeSelector,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) didn't match node selector` (preemption cannot resolve it).
pub(crate) static NOT_MATCH_SELECTOR: ReasonDef = ReasonDef {
    text: "node(s) didn't match node selector",
    resolvable: false,
};

/// `node(s) didn't match scheduler-enforced node affinity`: the profile's NodeAffinity
/// `addedAffinity` (upstream's `errReasonEnforced`; only a KubeSchedulerConfiguration sets it).
pub(crate) static NOT_MATCH_ENFORCED: ReasonDef = ReasonDef {
    text: "node(s) didn't match scheduler-enforced node affinity",
    resolvable: false,
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

/// True if the node satisfies the pod's nodeSelector and required node affinity.
#[inline]
pub(crate) fn matches(pod: &PodInfo, labels: &Labels, name: Sym, i: &Interner) -> bool {
    if !pod
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(*k) == Some(*v))
    {
        return false;
    }
    match &pod.required_node_terms {
        None => true,
        Some(terms) => terms.iter().any(|t| t.matches(labels, name, i)),
    }
}

/// Checks the node: the profile's enforced affinity first, then the pod's own (upstream's
/// NodeAffinity filter order, one reason).
#[inline]
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if let Some(terms) = &c.pod.enforced_node_terms {
        if !terms
            .iter()
            .any(|t| t.matches(&n.info.labels, n.info.name_sym, c.i))
        {
            out.push(NOT_MATCH_ENFORCED.reason());
            return false;
        }
    }
    if matches(c.pod, &n.info.labels, n.info.name_sym, c.i) {
        return true;
    }
    out.push(NOT_MATCH_SELECTOR.reason());
    false
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn term(exprs: serde_json::Value) -> serde_json::Value {
        json!({"matchExpressions": exprs})
    }

    #[test]
    fn vectors() {
        let aff = |terms: serde_json::Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        let cases = vec![
            (
                json!({"nodeSelector": {"foo": "bar"}}),
                json!({"foo": "bar", "baz": "blah"}),
                true,
            ),
            (json!({"nodeSelector": {"foo": "bar"}}), json!({}), false),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "kernel-version", "operator": "Gt", "values": ["0204"]}]))]))}),
                json!({"kernel-version": "0206"}),
                true,
            ),
            (
                json!({"affinity": aff(json!([]))}),
                json!({"a": "b"}),
                false,
            ),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "foo", "operator": "In", "values": ["bar"]}])), term(json!([{"key": "diffkey", "operator": "In", "values": ["v"]}]))]))}),
                json!({"diffkey": "v"}),
                true,
            ),
            (
                json!({"nodeSelector": {"foo": "bar"}, "affinity": aff(json!([term(json!([{"key": "zone", "operator": "In", "values": ["z1"]}]))]))}),
                json!({"foo": "bar", "zone": "z2"}),
                false,
            ),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "foo", "operator": "NotIn", "values": ["x"]}]))]))}),
                json!({}),
                true,
            ),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "foo", "operator": "DoesNotExist"}]))]))}),
                json!({"foo": "1"}),
                false,
            ),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "n", "operator": "Lt", "values": ["5"]}]))]))}),
                json!({"n": "x"}),
                false,
            ),
            (
                json!({"affinity": aff(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]))}),
                json!({}),
                true,
            ),
            (
                json!({"affinity": aff(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]))}),
                json!({}),
                false,
            ),
            (
                json!({"affinity": aff(json!([term(json!([{"key": "foo", "operator": "Bogus", "values": ["x"]}]))]))}),
                json!({"foo": "x"}),
                false,
            ),
        ];
        for (spec, labels, fit) in cases {
            let n = node_json(json!({"metadata": {"name": "n1", "labels": labels}}));
            let got = reasons_of(
                builtin(P::MatchNodeSelector),
                vec![n],
                vec![],
                pod(json!({"spec": spec})),
            );
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) didn't match node selector".into()]
            };
            assert_eq!(got, vec![w], "{spec} {labels}");
        }
    }
}
