//! Which pods the descheduler may evict at all, and in which order (control-loops §1.4).
//!
//! berth's critical-pod rule is the seed's (spec README): the annotation
//! `scheduler.alpha.kubernetes.io/critical-pod` with any value, a priority of at least
//! 2000000000, or a static or mirror pod.

use crate::model::PodState;
use crate::policy::EvictorArgs;
use std::cmp::Ordering;

/// Makes a pod evictable whatever else holds (upstream's override).
pub const EVICT_ANNOTATION: &str = "descheduler.alpha.kubernetes.io/evict";
/// The seed's critical-pod annotation.
pub const CRITICAL_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/critical-pod";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Priorities from here up are system-critical.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// Why a pod may not be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotEvictable {
    /// Critical: the annotation, a system-critical priority, or a static or mirror pod.
    Critical,
    /// No owner would recreate it.
    NoOwner,
    /// A DaemonSet owns it.
    DaemonSet,
    /// It has `emptyDir`/`hostPath` volumes and local-storage pods are not evicted.
    LocalStorage,
    /// It has a PersistentVolumeClaim and the policy ignores such pods.
    PersistentVolumeClaim,
    /// It is being deleted already.
    Terminating,
    /// Its priority is at or above the policy's threshold.
    Priority,
    /// The policy's label selector does not match it.
    Labels,
    /// Its owner has fewer pods than the evictor's `minReplicas`.
    MinReplicas,
    /// It started less than the evictor's `minPodAge` ago, or has not started.
    MinPodAge,
}

impl NotEvictable {
    /// Why, in words.
    pub fn text(self) -> &'static str {
        match self {
            NotEvictable::Critical => "critical pod",
            NotEvictable::NoOwner => "no owner would recreate it",
            NotEvictable::DaemonSet => "owned by a DaemonSet",
            NotEvictable::LocalStorage => "uses local storage (--evict-local-storage-pods is off)",
            NotEvictable::PersistentVolumeClaim => "uses a PersistentVolumeClaim (ignorePvcPods)",
            NotEvictable::Terminating => "already terminating",
            NotEvictable::Priority => "priority at or above the policy's threshold",
            NotEvictable::Labels => "not selected by the policy's labelSelector",
            NotEvictable::MinReplicas => "its owner has fewer pods than minReplicas",
            NotEvictable::MinPodAge => "not older than minPodAge",
        }
    }
}

/// Whether the descheduler may evict `pod`.
pub fn evictable(pod: &PodState, args: &EvictorArgs) -> Result<(), NotEvictable> {
    if pod.annotation(EVICT_ANNOTATION).is_some() {
        return Ok(());
    }
    let meta = &pod.pod.metadata;
    if meta.deletion_timestamp.is_some() {
        return Err(NotEvictable::Terminating);
    }
    if is_critical(pod) && !args.evict_system_critical_pods {
        return Err(NotEvictable::Critical);
    }
    // `evictFailedBarePods`: a failed pod without an owner may go (nothing will recreate it).
    let bare_failed = args.evict_failed_bare_pods && pod.phase() == "Failed";
    if meta.owner_references.is_empty() && !bare_failed {
        return Err(NotEvictable::NoOwner);
    }
    if !args.evict_daemonset_pods && meta.owner_references.iter().any(|o| o.kind == "DaemonSet") {
        return Err(NotEvictable::DaemonSet);
    }
    if pod.local_storage && !args.evict_local_storage_pods {
        return Err(NotEvictable::LocalStorage);
    }
    if pod.uses_pvc && args.ignore_pvc_pods {
        return Err(NotEvictable::PersistentVolumeClaim);
    }
    if let (Some(limit), Some(p)) = (args.priority_threshold, pod.pod.spec.priority) {
        if p >= limit {
            return Err(NotEvictable::Priority);
        }
    }
    if let Some(sel) = &args.label_selector {
        let labels = pod.labels();
        if !sel.matches_fn(|k| labels.get(k).map(String::as_str)) {
            return Err(NotEvictable::Labels);
        }
    }
    Ok(())
}

/// The evictor's checks that need the whole cluster or the time: `minReplicas` (pods of the
/// same single owner, by uid, among `owner_pods`) and `minPodAge` (against `now`, seconds since
/// the epoch). Upstream's constraints, in its order after [`evictable`]'s.
pub fn evictable_in_context(
    pod: &PodState,
    args: &EvictorArgs,
    owner_pods: &std::collections::HashMap<&str, u32>,
    now: i64,
) -> Result<(), NotEvictable> {
    let owners = &pod.pod.metadata.owner_references;
    if args.min_replicas > 1 && owners.len() == 1 {
        let siblings = owner_pods.get(owners[0].uid.as_str()).copied().unwrap_or(0);
        if siblings < args.min_replicas {
            return Err(NotEvictable::MinReplicas);
        }
    }
    if let Some(min_age) = args.min_pod_age_seconds {
        if pod.started.is_none_or(|s| now.saturating_sub(s) < min_age) {
            return Err(NotEvictable::MinPodAge);
        }
    }
    Ok(())
}

/// Critical by the seed's rule (see the module doc).
pub fn is_critical(pod: &PodState) -> bool {
    pod.annotation(CRITICAL_ANNOTATION).is_some()
        || pod.annotation(MIRROR_ANNOTATION).is_some()
        || pod
            .annotation(SOURCE_ANNOTATION)
            .is_some_and(|s| s != "api")
        || pod
            .pod
            .spec
            .priority
            .is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

/// The order pods leave a node: BestEffort, then Burstable, then Guaranteed (the seed); within a
/// class by priority, pods without one first, then lower first (upstream); then by
/// namespace and name.
pub fn eviction_order(a: &PodState, b: &PodState) -> Ordering {
    a.qos
        .cmp(&b.qos)
        .then_with(|| a.pod.spec.priority.cmp(&b.pod.spec.priority))
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.name.cmp(&b.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Qos;
    use crate::strategies::testutil::{pod, P};

    fn check(p: P) -> Result<(), NotEvictable> {
        evictable(&p.build(), &EvictorArgs::default())
    }

    #[test]
    fn owned_pods_are_evictable_and_the_protected_kinds_are_not() {
        assert_eq!(check(pod("a").rs("rs")), Ok(()));
        assert_eq!(check(pod("a")), Err(NotEvictable::NoOwner));
        assert_eq!(
            check(pod("a").owner("DaemonSet", "ds")),
            Err(NotEvictable::DaemonSet)
        );
        assert_eq!(
            check(pod("a").rs("rs").critical_annotation("true")),
            Err(NotEvictable::Critical)
        );
        assert_eq!(
            check(pod("a").rs("rs").priority(2_000_000_000)),
            Err(NotEvictable::Critical)
        );
        assert_eq!(
            check(pod("a").rs("rs").mirror()),
            Err(NotEvictable::Critical)
        );
        assert_eq!(
            check(pod("a").rs("rs").empty_dir()),
            Err(NotEvictable::LocalStorage)
        );
        assert_eq!(
            check(pod("a").rs("rs").terminating()),
            Err(NotEvictable::Terminating)
        );
        let flag = EvictorArgs {
            evict_local_storage_pods: true,
            ..Default::default()
        };
        assert_eq!(
            evictable(&pod("a").rs("rs").empty_dir().build(), &flag),
            Ok(())
        );
    }

    #[test]
    fn the_override_annotation_makes_anything_evictable() {
        assert_eq!(
            check(pod("a").mirror().annotate(EVICT_ANNOTATION, "")),
            Ok(())
        );
    }

    #[test]
    fn failed_bare_pods_are_evictable_only_when_asked() {
        let bare_failed = || pod("a").phase("Failed").build();
        assert_eq!(check(pod("a").phase("Failed")), Err(NotEvictable::NoOwner));
        let args = EvictorArgs {
            evict_failed_bare_pods: true,
            ..Default::default()
        };
        assert_eq!(evictable(&bare_failed(), &args), Ok(()));
        // A running bare pod stays protected (upstream: "not in failed phase").
        assert_eq!(
            evictable(&pod("a").build(), &args),
            Err(NotEvictable::NoOwner)
        );
    }

    /// `defaultevictor_test.go`'s minReplicas and minPodAge cases.
    #[test]
    fn min_replicas_and_min_pod_age_protect_small_owners_and_young_pods() {
        const NOW: i64 = 1_767_226_200;
        let args = EvictorArgs {
            min_replicas: 3,
            min_pod_age_seconds: Some(300),
            ..Default::default()
        };
        let owners: std::collections::HashMap<&str, u32> = [("rs", 2), ("big", 3)].into();
        let old = |o: &str| pod("a").rs(o).created_secs_before(NOW, 600).build();
        assert_eq!(
            evictable_in_context(&old("rs"), &args, &owners, NOW),
            Err(NotEvictable::MinReplicas)
        );
        assert_eq!(
            evictable_in_context(&old("big"), &args, &owners, NOW),
            Ok(())
        );
        let young = pod("a").rs("big").created_secs_before(NOW, 60).build();
        assert_eq!(
            evictable_in_context(&young, &args, &owners, NOW),
            Err(NotEvictable::MinPodAge)
        );
        let not_started = pod("a").rs("big").build();
        assert_eq!(
            evictable_in_context(&not_started, &args, &owners, NOW),
            Err(NotEvictable::MinPodAge)
        );
        // minReplicas 1 is no check (upstream logs and ignores it).
        let one = EvictorArgs {
            min_replicas: 1,
            ..Default::default()
        };
        assert_eq!(evictable_in_context(&old("rs"), &one, &owners, NOW), Ok(()));
    }

    #[test]
    fn order_is_qos_then_priority_then_name() {
        // TestSortPodsByPriority's pods, read with the seed's QoS-first rule.
        let mut pods = [
            pod("p4").guaranteed().priority(10000).build(),
            pod("p3").cpu(100).priority(10000).build(),
            pod("p2").priority(10000).build(),
            pod("p1").cpu(100).priority(0).build(),
            pod("p6").guaranteed().build(),
            pod("p5").cpu(100).build(),
        ];
        pods.sort_by(eviction_order);
        let names: Vec<_> = pods.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p2", "p5", "p1", "p3", "p6", "p4"]);
        assert_eq!(pods[0].qos, Qos::BestEffort);
    }
}
