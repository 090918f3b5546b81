//! Pod topology spread (upstream's PodTopologySpread plugin, 1.35): the constraints a pod is
//! spread by, compiled once per pod, the plugin's arguments, and the counting both the filter
//! (`predicates/pod_topology_spread.rs`) and the score
//! (`priorities/pod_topology_spread_priority.rs`) share.
//!
//! A constraint counts the pods of the incoming pod's namespace that its selector matches
//! (terminating pods excluded) per domain, a domain being one value of the constraint's node
//! label among the nodes it includes: nodes carrying every topology key of the pod's constraints
//! (of that kind), further limited by the pod's node affinity (`nodeAffinityPolicy: Honor`, the
//! default) and by untolerated `NoSchedule`/`NoExecute` taints (`nodeTaintsPolicy: Honor`).
//!
//! A pod without constraints of its own takes the cluster's default constraints (the
//! [`TopologySpreadArgs`]), with the selector of the services, replication controllers, replica
//! sets and stateful sets that select it; a pod no such workload selects gets none. Under a
//! legacy Policy file there are no defaults: only constraints written on pods apply.

use crate::compiled::{Labels, Op, Req, Selector};
use crate::intern::{Interner, Sym, EMPTY};
use crate::model::TopologySpreadConstraint;

/// The well-known hostname label: a constraint over it has one domain per node, counted per node
/// when scoring.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// The well-known zone label the system default constraints spread over.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The symbol of a topology key no node carries (a default constraint's key the cache never
/// interned): every node misses it.
const UNKNOWN_KEY: Sym = Sym::MAX;

/// How a pod without constraints of its own gets default ones (`defaultingType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DefaultingType {
    /// Upstream's built-in defaults: spread over hostnames (maxSkew 3) and zones (maxSkew 5),
    /// both `ScheduleAnyway`. `defaultConstraints` must then be empty.
    #[default]
    System,
    /// The configured `defaultConstraints` (none when the list is empty).
    List,
}

/// The PodTopologySpread plugin's arguments (`PodTopologySpreadArgs`), as a configuration
/// loader fills them. The default is upstream's: `System` defaulting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopologySpreadArgs {
    /// `defaultConstraints` (used with `List`); their `labelSelector` is ignored, the workload
    /// selector takes its place.
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// `defaultingType`.
    pub defaulting_type: DefaultingType,
}

impl TopologySpreadArgs {
    /// No default constraints: what applies under a legacy Policy file, where only the
    /// constraints written on pods are honoured.
    pub fn none() -> TopologySpreadArgs {
        TopologySpreadArgs {
            default_constraints: Vec::new(),
            defaulting_type: DefaultingType::List,
        }
    }

    /// The default constraints in effect.
    pub fn defaults(&self) -> Vec<TopologySpreadConstraint> {
        match self.defaulting_type {
            DefaultingType::List => self.default_constraints.clone(),
            DefaultingType::System => vec![
                system_default(HOSTNAME_LABEL, 3),
                system_default(ZONE_LABEL, 5),
            ],
        }
    }

    /// True if some pods may get default constraints.
    pub(crate) fn has_defaults(&self) -> bool {
        self.defaulting_type == DefaultingType::System || !self.default_constraints.is_empty()
    }

    /// True if some pods may get default `DoNotSchedule` constraints.
    pub(crate) fn has_hard_defaults(&self) -> bool {
        self.defaulting_type == DefaultingType::List
            && self
                .default_constraints
                .iter()
                .any(|c| c.when_unsatisfiable == DO_NOT_SCHEDULE)
    }
}

fn system_default(key: &str, max_skew: i32) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: SCHEDULE_ANYWAY.into(),
        ..Default::default()
    }
}

/// `whenUnsatisfiable: DoNotSchedule`: the constraint filters.
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
/// `whenUnsatisfiable: ScheduleAnyway`: the constraint scores.
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

/// One compiled constraint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpreadConstraint {
    /// `maxSkew`.
    pub max_skew: i64,
    /// The topology key.
    pub key: Sym,
    /// The key is the hostname label.
    pub hostname: bool,
    /// The pods counted (`labelSelector` with `matchLabelKeys` merged in).
    pub selector: Selector,
    /// `minDomains` (1 when unset).
    pub min_domains: i64,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub honor_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default `Ignore`).
    pub honor_taints: bool,
    /// `DoNotSchedule` (a filter) rather than `ScheduleAnyway` (a score).
    pub hard: bool,
}

impl SpreadConstraint {
    /// Compiles one of a pod's constraints; `labels` are the pod's own (for `matchLabelKeys`).
    pub(crate) fn compile(
        c: &TopologySpreadConstraint,
        labels: &Labels,
        i: &mut Interner,
    ) -> SpreadConstraint {
        let mut selector = Selector::compile(c.label_selector.as_ref(), i);
        let merged: Vec<Req> = c
            .match_label_keys
            .iter()
            .filter_map(|k| {
                let key = i.intern(k);
                labels.get(key).map(|v| Req {
                    op: Op::In,
                    key,
                    values: vec![v],
                    bound: 0,
                })
            })
            .collect();
        if !merged.is_empty() {
            // upstream merges into the parsed selector; a nil selector has no requirements
            if selector.nothing {
                selector = Selector::default();
            }
            selector.reqs.extend(merged);
            selector.reqs.sort();
            selector.reqs.dedup();
        }
        SpreadConstraint {
            max_skew: i64::from(c.max_skew),
            key: i.intern(&c.topology_key),
            hostname: c.topology_key == HOSTNAME_LABEL,
            selector,
            min_domains: c.min_domains.map_or(1, i64::from),
            honor_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            hard: c.when_unsatisfiable == DO_NOT_SCHEDULE,
        }
    }

    /// A default constraint with the workload selector, against an immutable interner.
    pub(crate) fn default_with(
        c: &TopologySpreadConstraint,
        selector: &Selector,
        i: &Interner,
    ) -> SpreadConstraint {
        SpreadConstraint {
            max_skew: i64::from(c.max_skew),
            key: i.get(&c.topology_key).unwrap_or(UNKNOWN_KEY),
            hostname: c.topology_key == HOSTNAME_LABEL,
            selector: selector.clone(),
            min_domains: c.min_domains.map_or(1, i64::from),
            honor_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            hard: c.when_unsatisfiable == DO_NOT_SCHEDULE,
        }
    }
}

/// Upstream's two critical paths: the domain with the fewest matching pods is `0`; `1` holds at
/// least as many (not necessarily the second fewest). Enough for the global minimum while
/// pods are added or removed on one node at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CriticalPaths(pub [(Sym, i64); 2]);

/// The initial count of an empty critical path (upstream's `math.MaxInt32`).
const NO_PATH: i64 = i32::MAX as i64;

impl Default for CriticalPaths {
    fn default() -> Self {
        CriticalPaths([(EMPTY, NO_PATH), (EMPTY, NO_PATH)])
    }
}

impl CriticalPaths {
    /// Records that domain `value` now has `num` matching pods.
    pub(crate) fn update(&mut self, value: Sym, num: i64) {
        let p = &mut self.0;
        let at = if p[0].1 != NO_PATH && p[0].0 == value {
            Some(0)
        } else if p[1].1 != NO_PATH && p[1].0 == value {
            Some(1)
        } else {
            None
        };
        match at {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None if num < p[0].1 => {
                p[1] = p[0];
                p[0] = (value, num);
            }
            None if num < p[1].1 => p[1] = (value, num),
            None => {}
        }
    }

    /// The global minimum.
    pub(crate) fn min(&self) -> i64 {
        self.0[0].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_paths_keep_the_minimum_as_domains_change() {
        // upstream TestPreFilterState critical-path cases, as (domain, count) updates
        // (name, (domain, count) updates in order, the minimum after them)
        type Case = (&'static str, &'static [(Sym, i64)], i64);
        let cases: &[Case] = &[
            ("one domain", &[(1, 3)], 3),
            ("the smaller of two", &[(1, 3), (2, 1)], 1),
            ("three domains, smallest last", &[(1, 3), (2, 2), (3, 0)], 0),
            (
                "a domain rising above another",
                &[(1, 0), (2, 2), (1, 5)],
                2,
            ),
            ("a domain falling below", &[(1, 2), (2, 3), (2, 1)], 1),
        ];
        for (name, updates, want) in cases {
            let mut p = CriticalPaths::default();
            for &(v, n) in *updates {
                p.update(v, n);
            }
            assert_eq!(p.min(), *want, "{name}");
        }
    }

    #[test]
    fn system_defaults_are_upstreams() {
        let d = TopologySpreadArgs::default().defaults();
        let got: Vec<(&str, i32, &str)> = d
            .iter()
            .map(|c| {
                (
                    c.topology_key.as_str(),
                    c.max_skew,
                    c.when_unsatisfiable.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (HOSTNAME_LABEL, 3, SCHEDULE_ANYWAY),
                (ZONE_LABEL, 5, SCHEDULE_ANYWAY)
            ]
        );
        assert!(TopologySpreadArgs::none().defaults().is_empty());
    }
}
