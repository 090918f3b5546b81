//! RollingUpdate arithmetic (upstream `deployment/util` and `rolling.go`).
//!
//! `maxSurge` and `maxUnavailable` are a count or a percentage of `replicas`: the surge rounds
//! up, the unavailability rounds down, and when both come to zero one pod may be unavailable so
//! that the rollout can progress. The new ReplicaSet grows until `replicas + maxSurge` pods exist;
//! the old ones shrink, oldest first, first by their unhealthy pods and then by available ones,
//! as long as `replicas - maxUnavailable` pods stay available.

use thiserror::Error;

/// `maxSurge` / `maxUnavailable`: an absolute count or a percentage of the desired replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i32),
    Percent(i32),
}

/// A malformed `maxSurge` or `maxUnavailable`.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid value for IntOrString: invalid value {0:?}: must be an integer or a percentage (e.g. '5%')")]
pub struct BadIntOrPercent(pub String);

impl IntOrPercent {
    /// Reads an integer or a string ending in `%`, as upstream accepts them.
    pub fn parse(v: &serde_json::Value) -> Result<IntOrPercent, BadIntOrPercent> {
        match v {
            serde_json::Value::Number(n) => n
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .map(IntOrPercent::Int)
                .ok_or_else(|| BadIntOrPercent(n.to_string())),
            serde_json::Value::String(s) => s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i32>().ok())
                .map(IntOrPercent::Percent)
                .ok_or_else(|| BadIntOrPercent(s.clone())),
            other => Err(BadIntOrPercent(other.to_string())),
        }
    }

    /// The count this value stands for out of `total` (upstream
    /// `GetScaledValueFromIntOrPercent`).
    pub fn scaled(&self, total: i32, round_up: bool) -> i32 {
        match *self {
            IntOrPercent::Int(i) => i,
            IntOrPercent::Percent(p) => {
                let product = i64::from(p) * i64::from(total);
                let value = if round_up {
                    product.div_euclid(100) + i64::from(product.rem_euclid(100) != 0)
                } else {
                    product.div_euclid(100)
                };
                value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            }
        }
    }
}

/// Upstream's defaults: 25% each.
pub fn default_max_surge() -> IntOrPercent {
    IntOrPercent::Percent(25)
}

/// See [`default_max_surge`].
pub fn default_max_unavailable() -> IntOrPercent {
    IntOrPercent::Percent(25)
}

/// `(maxSurge, maxUnavailable)` as counts for `replicas` (upstream `ResolveFenceposts`).
pub fn resolve_fenceposts(
    max_surge: &IntOrPercent,
    max_unavailable: &IntOrPercent,
    replicas: i32,
) -> (i32, i32) {
    let surge = max_surge.scaled(replicas, true);
    let unavailable = max_unavailable.scaled(replicas, false);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// How many pods may be unavailable during the rollout, never more than `replicas`
/// (upstream `MaxUnavailable`).
pub fn max_unavailable(max_surge: &IntOrPercent, max_unavail: &IntOrPercent, replicas: i32) -> i32 {
    if replicas <= 0 {
        return 0;
    }
    resolve_fenceposts(max_surge, max_unavail, replicas)
        .1
        .min(replicas)
}

/// A ReplicaSet of the Deployment as the arithmetic sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetCounts {
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.availableReplicas`.
    pub available: i32,
}

/// The new ReplicaSet's `replicas` for this step of a rolling update (upstream
/// `NewRSNewReplicas`): grow towards `replicas` while all sets together stay within
/// `replicas + maxSurge`.
pub fn new_replicas(replicas: i32, surge: i32, all: &[SetCounts], new: &SetCounts) -> i32 {
    let current: i64 = all.iter().map(|s| i64::from(s.replicas)).sum();
    let max_total = i64::from(replicas) + i64::from(surge);
    if current >= max_total {
        return new.replicas;
    }
    let scale_up = (max_total - current).min(i64::from(replicas) - i64::from(new.replicas));
    (i64::from(new.replicas) + scale_up.max(0)) as i32
}

/// The old ReplicaSets' new `replicas` for this step (upstream `reconcileOldReplicaSets`), as
/// `(name, replicas)` for each set that changes. `old` must be oldest first.
pub fn scale_down_old(
    replicas: i32,
    max_unavailable: i32,
    old: &[SetCounts],
    new: Option<&SetCounts>,
) -> Vec<(String, i32)> {
    let old_pods: i64 = old.iter().map(|s| i64::from(s.replicas)).sum();
    if old_pods == 0 {
        return Vec::new();
    }
    let new_replicas = new.map_or(0, |n| i64::from(n.replicas));
    let new_available = new.map_or(0, |n| i64::from(n.available));
    let all_pods = old_pods + new_replicas;
    let min_available = i64::from(replicas) - i64::from(max_unavailable);
    let new_unavailable = new_replicas - new_available;
    let budget = all_pods - min_available - new_unavailable;
    if budget <= 0 {
        return Vec::new();
    }

    let mut sets: Vec<SetCounts> = old.to_vec();
    // First the old sets' unhealthy pods: they are not available anyway.
    let mut cleaned = 0i64;
    for set in sets.iter_mut() {
        if cleaned >= budget {
            break;
        }
        let unhealthy = i64::from(set.replicas) - i64::from(set.available);
        if set.replicas == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (budget - cleaned).min(unhealthy);
        set.replicas -= down as i32;
        cleaned += down;
    }

    // Then available pods, as far as the minimum availability allows.
    let available: i64 = sets.iter().map(|s| i64::from(s.available)).sum::<i64>() + new_available;
    let mut allowed = (available - min_available).max(0);
    for set in sets.iter_mut() {
        if allowed == 0 {
            break;
        }
        if set.replicas == 0 {
            continue;
        }
        let down = allowed.min(i64::from(set.replicas));
        set.replicas -= down as i32;
        allowed -= down;
    }

    sets.into_iter()
        .zip(old)
        .filter(|(after, before)| after.replicas != before.replicas)
        .map(|(after, _)| (after.name, after.replicas))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, replicas: i32, available: i32) -> SetCounts {
        SetCounts {
            name: name.into(),
            replicas,
            available,
        }
    }

    #[test]
    fn percentages_round_surge_up_and_unavailability_down() {
        let quarter = IntOrPercent::Percent(25);
        assert_eq!(resolve_fenceposts(&quarter, &quarter, 10), (3, 2));
        assert_eq!(resolve_fenceposts(&quarter, &quarter, 1), (1, 0));
        assert_eq!(
            resolve_fenceposts(&IntOrPercent::Int(2), &IntOrPercent::Percent(50), 5),
            (2, 2)
        );
    }

    #[test]
    fn zero_surge_and_zero_unavailability_let_one_pod_go() {
        let zero = IntOrPercent::Int(0);
        assert_eq!(resolve_fenceposts(&zero, &zero, 3), (0, 1));
        assert_eq!(
            resolve_fenceposts(&IntOrPercent::Percent(10), &zero, 3),
            (1, 0)
        );
        assert_eq!(max_unavailable(&zero, &zero, 0), 0);
        assert_eq!(max_unavailable(&zero, &IntOrPercent::Int(9), 3), 3);
    }

    #[test]
    fn int_or_percent_reads_upstreams_shapes() {
        assert_eq!(
            IntOrPercent::parse(&serde_json::json!(1)),
            Ok(IntOrPercent::Int(1))
        );
        assert_eq!(
            IntOrPercent::parse(&serde_json::json!("30%")),
            Ok(IntOrPercent::Percent(30))
        );
        assert!(IntOrPercent::parse(&serde_json::json!("30")).is_err());
        assert!(IntOrPercent::parse(&serde_json::json!(true)).is_err());
    }

    #[test]
    fn the_new_set_grows_within_the_surge() {
        // 3 replicas, maxSurge 1: old set at 3, new at 0 -> the new set may have 1.
        let old = set("old", 3, 3);
        let new = set("new", 0, 0);
        assert_eq!(new_replicas(3, 1, &[old.clone(), new.clone()], &new), 1);
        // Already at 4 pods in all: no growth.
        let new1 = set("new", 1, 0);
        assert_eq!(new_replicas(3, 1, &[old, new1.clone()], &new1), 1);
        // Never past replicas.
        let alone = set("new", 2, 2);
        assert_eq!(new_replicas(3, 5, std::slice::from_ref(&alone), &alone), 3);
    }

    #[test]
    fn with_max_unavailable_zero_old_pods_go_only_as_new_ones_become_available() {
        // replicas 3, maxSurge 1, maxUnavailable 0.
        let old = [set("old", 3, 3)];
        let new = set("new", 1, 0);
        assert!(scale_down_old(3, 0, &old, Some(&new)).is_empty());
        let new = set("new", 1, 1);
        assert_eq!(
            scale_down_old(3, 0, &old, Some(&new)),
            [("old".to_string(), 2)]
        );
    }

    #[test]
    fn unhealthy_old_pods_are_cleaned_up_first_oldest_set_first() {
        // replicas 4, maxUnavailable 1; two old sets, the oldest with 2 unavailable pods.
        let old = [set("oldest", 2, 0), set("older", 2, 2)];
        let new = set("new", 1, 1);
        // all 5, min available 3, new unavailable 0: budget 2 -> both unhealthy pods go;
        // then available 3 (2 + 1) - 3 = 0 more.
        assert_eq!(
            scale_down_old(4, 1, &old, Some(&new)),
            [("oldest".to_string(), 0)]
        );
    }

    #[test]
    fn available_old_pods_go_down_to_the_minimum_availability() {
        // replicas 10, maxUnavailable 2: 10 old available, new set at 3 but none available yet.
        let old = [set("old", 10, 10)];
        let new = set("new", 3, 0);
        assert_eq!(
            scale_down_old(10, 2, &old, Some(&new)),
            [("old".to_string(), 8)]
        );
    }

    #[test]
    fn nothing_to_do_without_old_pods() {
        assert!(scale_down_old(3, 1, &[set("old", 0, 0)], None).is_empty());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn arb_set() -> impl Strategy<Value = SetCounts> {
            (0i32..20, 0i32..20).prop_map(|(r, a)| set("s", r, a.min(r)))
        }

        proptest! {
            #[test]
            fn a_step_keeps_the_surge_and_the_availability(
                replicas in 1i32..20,
                surge in 0i32..5,
                unavailable in 0i32..5,
                old in proptest::collection::vec(arb_set(), 1..4),
                new in arb_set(),
            ) {
                let old: Vec<SetCounts> = old
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| SetCounts { name: format!("old-{i}"), ..s })
                    .collect();
                let mut all = old.clone();
                all.push(new.clone());
                let grown = new_replicas(replicas, surge, &all, &new);
                let before: i32 = all.iter().map(|s| s.replicas).sum();
                prop_assert!(grown >= new.replicas);
                prop_assert!(grown == new.replicas || before - new.replicas + grown <= replicas + surge);

                let min_available = replicas - unavailable.min(replicas);
                let available_before: i32 = all.iter().map(|s| s.available).sum();
                let changes = scale_down_old(replicas, unavailable.min(replicas), &old, Some(&new));
                let mut available_after = new.available;
                for s in &old {
                    let after = changes
                        .iter()
                        .find(|(n, _)| n == &s.name)
                        .map_or(s.replicas, |(_, r)| *r);
                    prop_assert!(after <= s.replicas && after >= 0);
                    available_after += s.available.min(after);
                }
                if available_before >= min_available {
                    prop_assert!(available_after >= min_available);
                }
            }
        }
    }
}
