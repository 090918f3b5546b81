//! One sync of a Deployment (upstream `syncDeployment`): find its new ReplicaSet (the one whose
//! template is the Deployment's), create it with the next revision, scale it and the old ones
//! as the strategy allows, clean up old revisions beyond `revisionHistoryLimit`, and compute
//! the status and conditions. Pure: the Deployment and its ReplicaSets in, a [`Plan`] out.

use super::conditions::{self as cond, Condition};
use super::proportional::{self, ScaleSet, ScaleTarget};
use super::rolling::{max_unavailable, new_replicas, scale_down_old, IntOrPercent, SetCounts};
use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeMap;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const TEMPLATE_HASH: &str = "pod-template-hash";

/// Annotations of the Deployment never copied to its ReplicaSets (upstream
/// `skipCopyAnnotation`).
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// How pods are replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    Recreate,
    RollingUpdate {
        max_surge: IntOrPercent,
        max_unavailable: IntOrPercent,
    },
}

/// The Deployment as the engine reads it.
#[derive(Clone, Debug)]
pub struct DeploymentView {
    pub name: String,
    pub replicas: i32,
    pub generation: i64,
    pub paused: bool,
    pub strategy: Strategy,
    /// `None` when the deadline is disabled (upstream's "max int32").
    pub progress_deadline: Option<i64>,
    pub revision_history_limit: i32,
    /// The hash of its pod template (see [`super::hash`]).
    pub template_hash: String,
    pub annotations: BTreeMap<String, String>,
    pub status: StatusView,
}

/// The counts and conditions of a Deployment's status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusView {
    pub observed_generation: i64,
    pub replicas: i32,
    pub updated_replicas: i32,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub unavailable_replicas: i32,
    pub conditions: Vec<Condition>,
}

/// One of the Deployment's ReplicaSets.
#[derive(Clone, Debug, PartialEq)]
pub struct SetView {
    pub name: String,
    /// Its template is the Deployment's (by `pod-template-hash` or by equality).
    pub current: bool,
    pub revision: i64,
    pub replicas: i32,
    pub status_replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub created: Option<DateTime<Utc>>,
    pub deleting: bool,
    pub annotations: BTreeMap<String, String>,
}

/// A ReplicaSet to create: named `<deployment>-<hash>` by the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSet {
    pub replicas: i32,
    pub annotations: BTreeMap<String, String>,
}

/// A change to an existing ReplicaSet's `replicas` and annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetUpdate {
    pub name: String,
    pub replicas: i32,
    pub annotations: BTreeMap<String, String>,
}

/// What one sync does.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub create: Option<NewSet>,
    pub update: Vec<SetUpdate>,
    pub delete: Vec<String>,
    /// The Deployment's `deployment.kubernetes.io/revision`, when it changes.
    pub revision: Option<String>,
    pub status: StatusView,
    /// When to look again even if nothing changes (the progress deadline).
    pub recheck_at: Option<DateTime<Utc>>,
}

fn surge_and_unavailable(d: &DeploymentView) -> (i32, i32) {
    match &d.strategy {
        Strategy::Recreate => (0, 0),
        Strategy::RollingUpdate {
            max_surge,
            max_unavailable: unavailable,
        } => {
            let (surge, _) = super::rolling::resolve_fenceposts(max_surge, unavailable, d.replicas);
            (surge, max_unavailable(max_surge, unavailable, d.replicas))
        }
    }
}

/// The annotations a ReplicaSet of `d` carries at `revision`.
fn set_annotations(
    d: &DeploymentView,
    base: &BTreeMap<String, String>,
    revision: i64,
) -> BTreeMap<String, String> {
    let (surge, _) = surge_and_unavailable(d);
    let mut a = base.clone();
    for (k, v) in &d.annotations {
        if !NOT_COPIED.contains(&k.as_str()) {
            a.insert(k.clone(), v.clone());
        }
    }
    a.insert(REVISION.into(), revision.to_string());
    a.insert(DESIRED_REPLICAS.into(), d.replicas.to_string());
    a.insert(MAX_REPLICAS.into(), (d.replicas + surge).to_string());
    a
}

fn counts(s: &SetView) -> SetCounts {
    SetCounts {
        name: s.name.clone(),
        replicas: s.replicas,
        available: s.available,
    }
}

/// One sync of `d` over its ReplicaSets.
pub fn sync(d: &DeploymentView, sets: &[SetView], now: DateTime<Utc>) -> Plan {
    let mut sets: Vec<SetView> = sets.iter().filter(|s| !s.deleting).cloned().collect();
    sets.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
    let new_index = sets.iter().position(|s| s.current);
    let max_old_revision = sets
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != new_index)
        .map(|(_, s)| s.revision)
        .max()
        .unwrap_or(0);
    let (surge, unavailable) = surge_and_unavailable(d);
    let mut plan = Plan {
        create: None,
        update: Vec::new(),
        delete: Vec::new(),
        revision: None,
        status: d.status.clone(),
        recheck_at: None,
    };
    let mut replicas: BTreeMap<String, i32> =
        sets.iter().map(|s| (s.name.clone(), s.replicas)).collect();
    let mut created_new = false;

    // The new set's revision: the next one, also when an old template comes back (undo).
    let new_revision = match new_index {
        Some(i) if sets[i].revision > max_old_revision => sets[i].revision,
        _ => max_old_revision + 1,
    };
    let old: Vec<&SetView> = sets
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != new_index)
        .map(|(_, s)| s)
        .collect();
    let old_counts: Vec<SetCounts> = old.iter().map(|s| counts(s)).collect();
    let old_active = old.iter().any(|s| s.replicas > 0);
    let new = new_index.map(|i| &sets[i]);

    let scale_sets: Vec<ScaleSet> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let number = |key: &str| s.annotations.get(key).and_then(|v| v.parse().ok());
            ScaleSet {
                name: s.name.clone(),
                replicas: s.replicas,
                available: s.available,
                created: s.created,
                desired: number(DESIRED_REPLICAS),
                max: number(MAX_REPLICAS),
                is_new: Some(i) == new_index,
            }
        })
        .collect();
    // Paused, or scaled since the sets were last sized: scale only, no rollout this pass
    // (upstream's `sync`), spreading the change over the sets in proportion.
    let rescale = d.paused || proportional::is_scaling_event(d.replicas, &scale_sets);
    if rescale {
        let target = ScaleTarget {
            replicas: d.replicas,
            max_surge: surge,
            status_replicas: d.status.replicas,
            rolling: matches!(d.strategy, Strategy::RollingUpdate { .. }),
        };
        for (name, r) in proportional::scale(&target, &scale_sets) {
            replicas.insert(name, r);
        }
    } else {
        match &d.strategy {
            Strategy::Recreate => {
                if old_active {
                    for s in &old {
                        replicas.insert(s.name.clone(), 0);
                    }
                } else if old.iter().all(|s| s.status_replicas == 0) {
                    // The old pods are gone: now the new ones.
                    match new {
                        Some(n) => {
                            replicas.insert(n.name.clone(), d.replicas);
                        }
                        None => {
                            plan.create = Some(NewSet {
                                replicas: d.replicas,
                                annotations: set_annotations(d, &BTreeMap::new(), new_revision),
                            });
                            created_new = true;
                        }
                    }
                }
            }
            Strategy::RollingUpdate { .. } => {
                let mut all = old_counts.clone();
                let new_counts = match new {
                    Some(n) => counts(n),
                    None => SetCounts {
                        name: String::new(),
                        replicas: 0,
                        available: 0,
                    },
                };
                all.push(new_counts.clone());
                let want_new = if new_counts.replicas > d.replicas {
                    d.replicas
                } else {
                    new_replicas(d.replicas, surge, &all, &new_counts)
                };
                match new {
                    None => {
                        plan.create = Some(NewSet {
                            replicas: want_new,
                            annotations: set_annotations(d, &BTreeMap::new(), new_revision),
                        });
                        created_new = true;
                    }
                    Some(n) if want_new != n.replicas => {
                        replicas.insert(n.name.clone(), want_new);
                    }
                    Some(_) => {
                        // The new set is where it may be: the old ones shrink.
                        let new_c = new.map(counts);
                        for (name, r) in
                            scale_down_old(d.replicas, unavailable, &old_counts, new_c.as_ref())
                        {
                            replicas.insert(name, r);
                        }
                    }
                }
            }
        }
    }

    for s in &sets {
        let want = replicas.get(&s.name).copied().unwrap_or(s.replicas);
        let is_new = Some(&s.name) == new.map(|n| &n.name);
        let annotations = if is_new {
            set_annotations(d, &s.annotations, new_revision)
        } else if want != s.replicas {
            // Upstream rewrites the replica annotations of an old set whenever it scales it.
            set_annotations(d, &s.annotations, s.revision)
        } else if rescale && s.replicas > 0 {
            // A scaling pass records the new size on every active set, which ends the event.
            let (surge, _) = surge_and_unavailable(d);
            let mut a = s.annotations.clone();
            a.insert(DESIRED_REPLICAS.into(), d.replicas.to_string());
            a.insert(MAX_REPLICAS.into(), (d.replicas + surge).to_string());
            a
        } else {
            s.annotations.clone()
        };
        if want != s.replicas || annotations != s.annotations {
            plan.update.push(SetUpdate {
                name: s.name.clone(),
                replicas: want,
                annotations,
            });
        }
    }
    let revision = new_revision.to_string();
    if (new.is_some() || created_new) && d.annotations.get(REVISION) != Some(&revision) {
        plan.revision = Some(revision);
    }

    // The status, from the sets' own status counts.
    let total = |f: fn(&SetView) -> i32| sets.iter().map(f).sum::<i32>();
    let st = &mut plan.status;
    st.observed_generation = d.generation;
    st.replicas = total(|s| s.status_replicas);
    st.updated_replicas = new.map_or(0, |n| n.status_replicas);
    st.ready_replicas = total(|s| s.ready);
    st.available_replicas = total(|s| s.available);
    // Upstream counts the sets' desired replicas after this sync's scaling.
    let desired: i32 =
        replicas.values().sum::<i32>() + plan.create.as_ref().map_or(0, |c| c.replicas);
    st.unavailable_replicas = (desired - st.available_replicas).max(0);
    let avail_cond = cond::available(st.available_replicas, d.replicas, unavailable, now);
    cond::set(&mut st.conditions, avail_cond);

    let new_name = || {
        new.map(|n| n.name.clone())
            .unwrap_or_else(|| format!("{}-{}", d.name, d.template_hash))
    };
    let progressing = cond::find(&d.status.conditions, cond::PROGRESSING).cloned();
    if d.paused {
        let c = Condition::new(
            cond::PROGRESSING,
            "Unknown",
            cond::PAUSED,
            "Deployment is paused".into(),
            now,
        );
        cond::set(&mut st.conditions, c);
        return plan;
    }
    if progressing
        .as_ref()
        .is_some_and(|c| c.reason == cond::PAUSED)
    {
        let c = Condition::new(
            cond::PROGRESSING,
            "Unknown",
            cond::RESUMED,
            "Deployment is resumed".into(),
            now,
        );
        cond::set(&mut st.conditions, c);
    }
    if created_new {
        let msg = format!("Created new replica set {:?}", new_name());
        cond::set(
            &mut st.conditions,
            Condition::new(cond::PROGRESSING, "True", cond::NEW_RS_CREATED, msg, now),
        );
        return plan;
    }
    if progressing.is_none() && new.is_some() {
        let msg = format!("Found new replica set {:?}", new_name());
        cond::set(
            &mut st.conditions,
            Condition::new(cond::PROGRESSING, "True", cond::FOUND_NEW_RS, msg, now),
        );
    }
    let Some(deadline) = d.progress_deadline else {
        return plan;
    };
    let complete = st.updated_replicas == d.replicas
        && st.replicas == d.replicas
        && st.available_replicas == d.replicas
        && new.is_some();
    let old_status = &d.status;
    let progressed = st.updated_replicas > old_status.updated_replicas
        || st.ready_replicas > old_status.ready_replicas
        || st.available_replicas > old_status.available_replicas
        || st.replicas - st.updated_replicas < old_status.replicas - old_status.updated_replicas;
    if complete {
        let msg = format!("ReplicaSet {:?} has successfully progressed.", new_name());
        cond::set(
            &mut st.conditions,
            Condition::new(cond::PROGRESSING, "True", cond::NEW_RS_AVAILABLE, msg, now),
        );
    } else if progressed {
        let msg = format!("ReplicaSet {:?} is progressing.", new_name());
        cond::refresh(
            &mut st.conditions,
            Condition::new(cond::PROGRESSING, "True", cond::RS_UPDATED, msg, now),
        );
    } else if cond::timed_out(&st.conditions, Some(deadline), now) {
        let msg = format!("ReplicaSet {:?} has timed out progressing.", new_name());
        cond::set(
            &mut st.conditions,
            Condition::new(cond::PROGRESSING, "False", cond::TIMED_OUT, msg, now),
        );
    }
    if !complete {
        plan.recheck_at = cond::find(&st.conditions, cond::PROGRESSING)
            .filter(|c| c.reason != cond::TIMED_OUT)
            .map(|c| c.last_update + Duration::seconds(deadline + 1));
    }
    if complete {
        plan.delete = cleanup(d, &sets, new_index);
    }
    plan
}

/// Old ReplicaSets beyond `revisionHistoryLimit`, lowest revision first: only those scaled to
/// zero with no pods left (upstream `cleanupDeployment`).
fn cleanup(d: &DeploymentView, sets: &[SetView], new_index: Option<usize>) -> Vec<String> {
    let mut idle: Vec<&SetView> = sets
        .iter()
        .enumerate()
        .filter(|(i, s)| Some(*i) != new_index && s.replicas == 0 && s.status_replicas == 0)
        .map(|(_, s)| s)
        .collect();
    let limit = d.revision_history_limit.max(0) as usize;
    if idle.len() <= limit {
        return Vec::new();
    }
    idle.sort_by(|a, b| a.revision.cmp(&b.revision).then(a.created.cmp(&b.created)));
    idle.iter()
        .take(idle.len() - limit)
        .map(|s| s.name.clone())
        .collect()
}
