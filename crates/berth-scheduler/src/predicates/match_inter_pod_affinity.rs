//! MatchInterPodAffinity: existing pods' required anti-affinity (symmetry), then the pod's own
//! required affinity (with the first-pod exception), then its own required anti-affinity.
//!
//! `prepare` turns the cache's incremental term and label indexes into per-node flags once per
//! decision; `check` reads them.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::cache::{ClusterCache, TermKind};
pub(crate) use crate::ctx::AffinityState as State;
use crate::ctx::{PodCtx, Scratch};
use crate::intern::EMPTY;
use crate::pod_info::PodInfo;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "MatchInterPodAffinity",
    aliases: &[],
    order: 21,
    argument: None,
    reasons: &[
        &AFFINITY_NOT_MATCH,
        &AFFINITY_RULES_NOT_MATCH,
        &ANTI_AFFINITY_RULES_NOT_MATCH,
        &EXISTING_ANTI_AFFINITY_NOT_MATCH,
    ],
    fast: FastClass::InterPodAffinity,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) didn't match pod affinity/anti-affinity`.
pub(crate) static AFFINITY_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't match pod affinity/anti-affinity",
    resolvable: true,
};

/// `node(s) didn't match pod affinity rules` (preemption cannot resolve it).
pub(crate) static AFFINITY_RULES_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't match pod affinity rules",
    resolvable: false,
};

/// `node(s) didn't match pod anti-affinity rules`.
pub(crate) static ANTI_AFFINITY_RULES_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't match pod anti-affinity rules",
    resolvable: true,
};

/// `node(s) didn't satisfy existing pods anti-affinity rules`.
pub(crate) static EXISTING_ANTI_AFFINITY_NOT_MATCH: ReasonDef = ReasonDef {
    text: "node(s) didn't satisfy existing pods anti-affinity rules",
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

const EXISTING_ANTI: u8 = 1;
const OWN_ANTI: u8 = 2;

const EMPTY_KEY: &str =
    "empty topologyKey is not allowed except for PreferredDuringScheduling pod anti-affinity";

/// Fills `scratch.aff_flags` / `scratch.aff_sat`; returns (all-terms mask, first-pod exception).
pub(crate) fn prepare(
    cache: &ClusterCache,
    pod: &PodInfo,
    s: &mut Scratch,
) -> Result<(u64, bool), String> {
    let flags = &mut s.aff_flags;
    let flagged = &mut s.flagged;
    let mut seen = crate::intern::FxSet::default();
    let mut mark = |m: u32, bit: u8| {
        if flags[m as usize] == 0 {
            flagged.push(m);
        }
        flags[m as usize] |= bit;
    };
    let mut err = None;
    cache.for_each_existing_term_matching(pod, &[TermKind::RequiredAnti], |id| {
        let t = &cache.terms[id as usize];
        if t.term.topology_key == EMPTY {
            err = Some(EMPTY_KEY.to_string());
            return;
        }
        cache.for_each_in_domains_of(
            t.nodes.keys().copied(),
            t.term.topology_key,
            &mut seen,
            |m| mark(m, EXISTING_ANTI),
        );
    });
    if let Some(e) = err {
        return Err(e);
    }
    for t in pod.anti_affinity.iter().chain(&pod.affinity) {
        if t.topology_key == EMPTY {
            return Err(EMPTY_KEY.to_string());
        }
    }
    let mut srcs = Vec::new();
    for t in &pod.anti_affinity {
        srcs.clear();
        cache.for_each_term_match(t, |src, _| srcs.push(src));
        cache.for_each_in_domains_of(srcs.iter().copied(), t.topology_key, &mut seen, |m| {
            mark(m, OWN_ANTI)
        });
    }
    let mut all = 0u64;
    let mut any_match = false;
    for (j, t) in pod.affinity.iter().enumerate().take(64) {
        let bit = 1u64 << j;
        all |= bit;
        let sat = &mut s.aff_sat;
        srcs.clear();
        cache.for_each_term_match(t, |src, _| srcs.push(src));
        any_match |= !srcs.is_empty();
        cache.for_each_in_domains_of(srcs.iter().copied(), t.topology_key, &mut seen, |m| {
            sat[m as usize] |= bit
        });
    }
    let first_pod = !pod.affinity.is_empty()
        && !any_match
        && pod
            .affinity
            .iter()
            .all(|t| t.matches(pod.ns, &pod.labels, &cache.interner));
    Ok((all, first_pod))
}

/// Checks the node.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    let st = &c.affinity;
    let ix = n.ix as usize;
    let flags = st.flags.get(ix).copied().unwrap_or(0);
    let pod = c.pod;
    let labels = &n.info.labels;
    let existing_fail = flags & EXISTING_ANTI != 0
        || n.added.iter().any(|p| {
            p.anti_affinity
                .iter()
                .any(|t| labels.has(t.topology_key) && t.matches(pod.ns, &pod.labels, c.i))
        });
    if existing_fail {
        out.push(AFFINITY_NOT_MATCH.reason());
        out.push(EXISTING_ANTI_AFFINITY_NOT_MATCH.reason());
        return false;
    }
    if pod.affinity.is_empty() && pod.anti_affinity.is_empty() {
        return true;
    }
    if st.all_terms != 0 && !st.first_pod {
        let mut sat = st.sat.get(ix).copied().unwrap_or(0);
        for (j, t) in pod.affinity.iter().enumerate().take(64) {
            if labels.has(t.topology_key) && n.added.iter().any(|p| t.matches(p.ns, &p.labels, c.i))
            {
                sat |= 1 << j;
            }
        }
        if sat & st.all_terms != st.all_terms {
            out.push(AFFINITY_NOT_MATCH.reason());
            out.push(AFFINITY_RULES_NOT_MATCH.reason());
            return false;
        }
    }
    let own_anti = flags & OWN_ANTI != 0
        || pod.anti_affinity.iter().any(|t| {
            labels.has(t.topology_key) && n.added.iter().any(|p| t.matches(p.ns, &p.labels, c.i))
        });
    if own_anti {
        out.push(AFFINITY_NOT_MATCH.reason());
        out.push(ANTI_AFFINITY_RULES_NOT_MATCH.reason());
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    const H: &str = "kubernetes.io/hostname";

    fn term(k: &str, v: &str, key: &str) -> serde_json::Value {
        json!({"labelSelector": {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}]}, "topologyKey": key})
    }

    fn n(name: &str, zone: &str) -> crate::model::Node {
        node_json(json!({"metadata": {"name": name, "labels": {H: name, "zone": zone}}}))
    }

    fn bound(
        name: &str,
        node: &str,
        labels: serde_json::Value,
        aff: serde_json::Value,
    ) -> crate::model::Pod {
        pod(
            json!({"metadata": {"name": name, "labels": labels}, "spec": {"nodeName": node, "affinity": aff}}),
        )
    }

    const FAIL_AFF: [&str; 2] = [
        "node(s) didn't match pod affinity/anti-affinity",
        "node(s) didn't match pod affinity rules",
    ];
    const FAIL_ANTI: [&str; 2] = [
        "node(s) didn't match pod affinity/anti-affinity",
        "node(s) didn't match pod anti-affinity rules",
    ];
    const FAIL_EXIST: [&str; 2] = [
        "node(s) didn't match pod affinity/anti-affinity",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn vectors() {
        let p = builtin(P::MatchInterPodAffinity);
        // IPA-1/2
        let anti = pod(
            json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("app", "web", H)]}}}}),
        );
        let got = reasons_of(
            p.clone(),
            vec![n("n1", "a"), n("n2", "a")],
            vec![bound("w", "n1", json!({"app": "web"}), json!(null))],
            anti,
        );
        assert_eq!(got, vec![s(&FAIL_ANTI), vec![]]);
        // IPA-3
        let aff = pod(
            json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("app", "db", "zone")]}}}}),
        );
        let got = reasons_of(
            p.clone(),
            vec![n("n1", "a"), n("n2", "a"), n("n3", "b")],
            vec![bound("db", "n1", json!({"app": "db"}), json!(null))],
            aff,
        );
        assert_eq!(got, vec![vec![], vec![], s(&FAIL_AFF)]);
        // IPA-4 first pod exception
        let own = pod(
            json!({"metadata": {"labels": {"app": "x"}}, "spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("app", "x", "zone")]}}}}),
        );
        let got = reasons_of(p.clone(), vec![n("n1", "a"), n("n2", "b")], vec![], own);
        assert_eq!(got, vec![Vec::<String>::new(), vec![]]);
        // IPA-5 existing pods' anti-affinity
        let e = bound(
            "e",
            "n1",
            json!({}),
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("app", "x", "zone")]}}),
        );
        let incoming = pod(json!({"metadata": {"labels": {"app": "x"}}}));
        let got = reasons_of(
            p,
            vec![n("n1", "a"), n("n2", "a"), n("n3", "b")],
            vec![e],
            incoming,
        );
        assert_eq!(got, vec![s(&FAIL_EXIST), s(&FAIL_EXIST), vec![]]);
    }

    #[test]
    fn seed_examples() {
        let p = builtin(P::MatchInterPodAffinity);
        // 16.9.3.1: team4a lands with team4
        let team4 = bound("team4", "n1", json!({"team": "4"}), json!(null));
        let team4a = pod(
            json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("team", "4", H)]}}}}),
        );
        assert_eq!(
            reasons_of(
                p.clone(),
                vec![n("n1", "a"), n("n2", "a")],
                vec![team4],
                team4a
            ),
            vec![vec![], s(&FAIL_AFF)]
        );
        // 16.9.3.2: pod-s2 avoids pod-s1
        let s1 = bound("pod-s1", "n1", json!({"security": "s1"}), json!(null));
        let s2 = pod(
            json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("security", "s1", H)]}}}}),
        );
        assert_eq!(
            reasons_of(
                p.clone(),
                vec![n("n1", "a"), n("n2", "a")],
                vec![s1.clone()],
                s2
            ),
            vec![s(&FAIL_ANTI), vec![]]
        );
        // 16.9.3.3: no pod with security=s2 anywhere -> pending
        let s2 = pod(
            json!({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("security", "s2", H)]}}}}),
        );
        assert_eq!(
            reasons_of(p, vec![n("n1", "a"), n("n2", "a")], vec![s1], s2),
            vec![s(&FAIL_AFF), s(&FAIL_AFF)]
        );
    }

    #[test]
    fn empty_topology_key_is_error() {
        let p = pod(
            json!({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("a", "b", "")]}}}}),
        );
        let mut cache = crate::ClusterCache::new();
        cache.upsert_node(&n("n1", "a"));
        let r = results_in(builtin(P::MatchInterPodAffinity), &mut cache, p);
        assert!(
            matches!(&r[0], crate::PredicateResult::Error(e) if e.starts_with("empty topologyKey"))
        );
    }
}
