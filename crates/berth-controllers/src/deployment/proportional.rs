//! Scaling a Deployment whose rollout is in progress or paused, as upstream's `scale` and
//! `GetProportion`: the change is spread over the active ReplicaSets in proportion to their
//! sizes, measured against the `deployment.kubernetes.io/max-replicas` each was last scaled
//! for, so that a rollout resumes from the same mix of old and new pods. Pure.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// A ReplicaSet as scaling reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleSet {
    pub name: String,
    pub replicas: i32,
    pub available: i32,
    pub created: Option<DateTime<Utc>>,
    /// Its `deployment.kubernetes.io/desired-replicas`, when readable.
    pub desired: Option<i32>,
    /// Its `deployment.kubernetes.io/max-replicas`, when readable.
    pub max: Option<i32>,
    pub is_new: bool,
}

/// The Deployment as scaling reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleTarget {
    pub replicas: i32,
    pub max_surge: i32,
    /// `status.replicas`, the fallback when a set has no `max-replicas`.
    pub status_replicas: i32,
    pub rolling: bool,
}

/// Whether the Deployment was scaled since its active sets were last sized: one of them
/// carries a `desired-replicas` other than `spec.replicas` (upstream `isScalingEvent`).
pub fn is_scaling_event(replicas: i32, sets: &[ScaleSet]) -> bool {
    sets.iter()
        .filter(|s| s.replicas > 0)
        .any(|s| s.desired.is_some_and(|d| d != replicas))
}

/// The new sizes of the sets scaling changes (upstream `scale`): the only active set (or the
/// newest set when none is active) takes `replicas`; a saturated new set leaves the old ones at
/// zero; otherwise, under RollingUpdate, `replicas + maxSurge` minus what the sets hold is
/// spread over them by [`proportion`], largest first, the leftover going to the largest.
pub fn scale(d: &ScaleTarget, sets: &[ScaleSet]) -> BTreeMap<String, i32> {
    let mut out = BTreeMap::new();
    let active: Vec<&ScaleSet> = sets.iter().filter(|s| s.replicas > 0).collect();
    let latest = || {
        sets.iter()
            .find(|s| s.is_new)
            .or_else(|| sets.iter().max_by(|a, b| a.created.cmp(&b.created)))
    };
    let only = match active.len() {
        0 => latest(),
        1 => Some(active[0]),
        _ => None,
    };
    if let Some(s) = only {
        if s.replicas != d.replicas {
            out.insert(s.name.clone(), d.replicas);
        }
        return out;
    }
    let saturated = sets.iter().find(|s| s.is_new).is_some_and(|n| {
        n.desired == Some(d.replicas) && n.replicas == d.replicas && n.available == d.replicas
    });
    if saturated {
        for s in active.iter().filter(|s| !s.is_new) {
            out.insert(s.name.clone(), 0);
        }
        return out;
    }
    if !d.rolling {
        return out;
    }
    let held: i32 = active.iter().map(|s| s.replicas).sum();
    let allowed = if d.replicas > 0 {
        d.replicas + d.max_surge
    } else {
        0
    };
    let to_add = allowed - held;
    let mut order = active.clone();
    // Largest first; among equals newer first when growing, older first when shrinking.
    order.sort_by(|a, b| {
        b.replicas.cmp(&a.replicas).then(if to_add > 0 {
            b.created.cmp(&a.created)
        } else {
            a.created.cmp(&b.created)
        })
    });
    let mut added = 0;
    let mut sizes: Vec<(String, i32)> = Vec::new();
    for s in &order {
        let p = proportion(s, d, to_add, added);
        sizes.push((s.name.clone(), s.replicas + p));
        added += p;
    }
    if let Some(first) = sizes.first_mut() {
        first.1 = (first.1 + to_add - added).max(0);
    }
    for ((name, size), s) in sizes.into_iter().zip(&order) {
        if size != s.replicas {
            out.insert(name, size);
        }
    }
    out
}

/// How many replicas `set` gains (or, negative, loses) of the `to_add` still to place, of which
/// `added` are placed already (upstream `GetProportion`).
pub fn proportion(set: &ScaleSet, d: &ScaleTarget, to_add: i32, added: i32) -> i32 {
    if set.replicas == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(set, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// The set's share of the new size, minus its size (upstream `getReplicaSetFraction`).
fn fraction(set: &ScaleSet, d: &ScaleTarget) -> i32 {
    if d.replicas == 0 {
        return -set.replicas;
    }
    let max_now = d.replicas + d.max_surge;
    let before = match set.max {
        Some(m) if m != 0 => m,
        _ => d.status_replicas,
    };
    if before == 0 {
        return 0;
    }
    let size = f64::from(set.replicas) * f64::from(max_now) / f64::from(before);
    // Go's math.Round: halves away from zero, as f64::round.
    size.round() as i32 - set.replicas
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0)
    }

    fn rs(name: &str, replicas: i32, max: i32, created: i64) -> ScaleSet {
        ScaleSet {
            name: name.into(),
            replicas,
            available: replicas,
            created: at(created),
            desired: Some(max - 3),
            max: Some(max),
            is_new: false,
        }
    }

    fn target(replicas: i32, surge: i32, status: i32) -> ScaleTarget {
        ScaleTarget {
            replicas,
            max_surge: surge,
            status_replicas: status,
            rolling: true,
        }
    }

    fn sizes(out: &BTreeMap<String, i32>) -> Vec<(&str, i32)> {
        out.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    // Upstream's TestScale cases ("proportional scaling: ...").
    #[test]
    fn scaling_up_from_ten_to_twenty_doubles_both_sets() {
        // 10 → 20 with maxSurge 3: the 13 pods (10 + 3) become 23, each set keeping its share.
        let new = ScaleSet {
            is_new: true,
            ..rs("new", 5, 13, 1)
        };
        let old = rs("old", 8, 13, 0);
        let out = scale(&target(20, 3, 13), &[new, old]);
        // 23 allowed, 13 held: +10 spread 5/13 and 8/13 of 23.
        assert_eq!(sizes(&out), [("new", 9), ("old", 14)]);
    }

    #[test]
    fn upstream_proportional_scaling_5_to_10_with_two_sets() {
        // Upstream: "proportional scaling: 5 -> 10", new 2, old 3 (max 5+0) → 4 and 6.
        let mut new = rs("new", 2, 5, 1);
        new.is_new = true;
        let old = rs("old", 3, 5, 0);
        let out = scale(&target(10, 0, 5), &[new, old]);
        assert_eq!(sizes(&out), [("new", 4), ("old", 6)]);
    }

    #[test]
    fn upstream_proportional_scaling_5_to_3() {
        // Upstream: "proportional scaling: 5 -> 3", new 2, old 3 → 1 and 2.
        let mut new = rs("new", 2, 5, 1);
        new.is_new = true;
        let old = rs("old", 3, 5, 0);
        let out = scale(&target(3, 0, 5), &[new, old]);
        assert_eq!(sizes(&out), [("new", 1), ("old", 2)]);
    }

    #[test]
    fn upstream_proportional_scaling_9_to_4_with_three_sets() {
        // Upstream: "proportional scaling: 9 -> 4", new 8, olds 1 and 0 → 4 and 0.
        let mut new = rs("new", 8, 9, 2);
        new.is_new = true;
        let out = scale(
            &target(4, 0, 9),
            &[new, rs("old", 1, 9, 1), rs("older", 0, 9, 0)],
        );
        assert_eq!(sizes(&out), [("new", 4), ("old", 0)]);
    }

    #[test]
    fn upstream_proportional_scaling_7_to_13_with_three_sets() {
        // Upstream: "proportional scaling: 7 -> 13", new 2, olds 3 and 2 → 4, 6 and 3.
        let mut new = rs("new", 2, 7, 2);
        new.is_new = true;
        let out = scale(
            &target(13, 0, 7),
            &[new, rs("old", 3, 7, 1), rs("older", 2, 7, 0)],
        );
        assert_eq!(sizes(&out), [("new", 4), ("old", 6), ("older", 3)]);
        assert_eq!(out.values().sum::<i32>(), 13);
    }

    #[test]
    fn upstream_change_rolling_update_with_surge_3_to_2() {
        // 4 → 2 with maxSurge 2: new 2, old 4 (max 6) → new 1, old 3, the 4 allowed.
        let mut new = rs("new", 2, 6, 1);
        new.is_new = true;
        let out = scale(&target(2, 2, 6), &[new, rs("old", 4, 6, 0)]);
        assert_eq!(out.values().sum::<i32>(), 4);
        assert_eq!(sizes(&out), [("new", 1), ("old", 3)]);
    }

    #[test]
    fn one_active_set_takes_all_and_a_saturated_new_set_empties_the_old() {
        let mut new = rs("new", 10, 13, 1);
        new.is_new = true;
        let idle = rs("old", 0, 13, 0);
        assert_eq!(
            sizes(&scale(&target(20, 3, 10), &[new.clone(), idle])),
            [("new", 20)]
        );
        new.desired = Some(10);
        let out = scale(&target(10, 3, 12), &[new, rs("old", 2, 13, 0)]);
        assert_eq!(sizes(&out), [("old", 0)]);
    }

    #[test]
    fn a_scaling_event_is_a_desired_replicas_annotation_other_than_the_spec() {
        let sets = [rs("a", 3, 13, 0), rs("b", 0, 99, 1)];
        assert!(!is_scaling_event(10, &sets));
        assert!(is_scaling_event(20, &sets));
        assert!(!is_scaling_event(20, &sets[1..]));
    }

    #[test]
    fn scaling_to_zero_empties_every_set() {
        let mut new = rs("new", 2, 5, 1);
        new.is_new = true;
        let out = scale(&target(0, 1, 5), &[new, rs("old", 3, 5, 0)]);
        assert_eq!(sizes(&out), [("new", 0), ("old", 0)]);
    }
}
