use super::*;
use crate::eviction::ranking::{Amounts, ContainerUsage, QosClass};
use crate::eviction::signals::FsStats;
use crate::eviction::thresholds::{parse_thresholds, EvictionSettings};

const MI: i64 = 1 << 20;
const GI: i64 = 1 << 30;

fn settings(hard: &[&str], soft: &[&str], grace: &[&str], reclaim: &[&str]) -> EvictionSettings {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
    EvictionSettings {
        hard: s(hard),
        soft: s(soft),
        soft_grace_period: s(grace),
        minimum_reclaim: s(reclaim),
    }
}

fn manager(s: EvictionSettings, max_grace: i64) -> EvictionManager {
    EvictionManager::new(EvictionConfig {
        thresholds: parse_thresholds(&s, false).unwrap(),
        max_pod_grace_period: max_grace,
        pressure_transition_period: Duration::from_secs(300),
        // These cases are the seed's (control-loops §2): its QoS-only order.
        pod_priority: false,
    })
}

fn pod(key: &str, qos: QosClass, request: i64, usage: i64) -> Candidate {
    Candidate {
        key: key.into(),
        qos,
        priority: 0,
        termination_grace_seconds: 30,
        containers: vec![ContainerUsage {
            name: "c".into(),
            usage: Amounts {
                memory: usage,
                ephemeral_storage: usage,
                ..Default::default()
            },
            request: Amounts {
                memory: request,
                ephemeral_storage: request,
                ..Default::default()
            },
        }],
    }
}

fn memory_stats(available: i64) -> NodeStats {
    NodeStats {
        memory_capacity: 10 * GI,
        memory_working_set: 10 * GI - available,
        pods_memory_working_set: 0,
        pods_memory_limit: 10 * GI,
        nodefs: FsStats {
            capacity_bytes: 100 * GI,
            used_bytes: 0,
            inodes: 1_000_000,
            inodes_used: 0,
        },
        imagefs: None,
        pid_max: 32768,
        pids: 100,
    }
}

fn test_memory_pressure_pods() -> Vec<Candidate> {
    use QosClass::*;
    vec![
        pod("guaranteed-low", Guaranteed, GI, 200 * MI),
        pod("guaranteed-high", Guaranteed, GI, 800 * MI),
        pod("burstable-low", Burstable, 100 * MI, 300 * MI),
        pod("burstable-high", Burstable, 100 * MI, 800 * MI),
        pod("best-effort-low", BestEffort, 0, 300 * MI),
        pod("best-effort-high", BestEffort, 0, 500 * MI),
    ]
}

fn mins(m: u64) -> Duration {
    Duration::from_secs(60 * m)
}

/// control-loops §2.9, with the seed's ranking rule (best-effort-high is the victim).
#[test]
fn worked_pass_sequence() {
    let mut m = manager(
        settings(
            &["memory.available<1Gi"],
            &["memory.available<2Gi"],
            &["memory.available=2m"],
            &[],
        ),
        5,
    );
    let pods = test_memory_pressure_pods();
    // (t, memory.available, MemoryPressure, evicted pod and grace)
    type Step<'a> = (Duration, i64, bool, Option<(&'a str, i64)>);
    let steps: Vec<Step> = vec![
        (mins(0), 2 * GI, false, None),
        (mins(1), 1500 * MI, true, None),
        (mins(4), 1500 * MI, true, Some(("best-effort-high", 5))),
        (mins(24), 3 * GI, false, None),
        (mins(25), 500 * MI, true, Some(("best-effort-high", 0))),
        (mins(26), 2 * GI, true, None),
        (mins(31), 2 * GI, false, None),
    ];
    for (t, available, pressure, evicted) in steps {
        let stats = memory_stats(available);
        let d = m.housekeeping(
            &Inputs {
                stats: &stats,
                pods: &pods,
                reclaimable: Reclaimable::default(),
                system_over_reserved: false,
                eviction_in_flight: false,
            },
            t,
        );
        assert_eq!(
            d.conditions.contains(&Condition::MemoryPressure),
            pressure,
            "t={t:?}"
        );
        let got = d
            .eviction
            .as_ref()
            .map(|e| (e.pod.as_str(), e.grace_period_seconds));
        assert_eq!(got, evicted, "t={t:?}");
    }
}

#[test]
fn soft_grace_is_the_lesser_of_pod_and_max() {
    // (max pod grace, pod terminationGracePeriodSeconds, expected)
    for (max, pod_grace, want) in [(5, 30, 5), (60, 30, 30), (0, 30, 0), (10, 0, 0)] {
        let mut m = manager(
            settings(
                &[],
                &["memory.available<2Gi"],
                &["memory.available=30s"],
                &[],
            ),
            max,
        );
        let mut p = pod("be", QosClass::BestEffort, 0, GI);
        p.termination_grace_seconds = pod_grace;
        let pods = vec![p];
        let stats = memory_stats(GI);
        let input = Inputs {
            stats: &stats,
            pods: &pods,
            reclaimable: Reclaimable::default(),
            system_over_reserved: false,
            eviction_in_flight: false,
        };
        let d = m.housekeeping(&input, Duration::from_secs(0));
        assert!(d.eviction.is_none());
        let d = m.housekeeping(&input, Duration::from_secs(20));
        assert!(d.eviction.is_none(), "grace not yet elapsed");
        let d = m.housekeeping(&input, Duration::from_secs(30));
        assert_eq!(d.eviction.unwrap().grace_period_seconds, want);
    }
}

#[test]
fn threshold_vectors() {
    // (threshold, minReclaim, available, capacity, enforce minReclaim, met)
    let cases = [
        (
            "memory.available<1Gi",
            "500Mi",
            500 * MI,
            10 * GI,
            false,
            true,
        ),
        (
            "memory.available<1Gi",
            "500Mi",
            2 * GI,
            10 * GI,
            false,
            false,
        ),
        (
            "memory.available<1Gi",
            "500Mi",
            1075 * MI,
            10 * GI,
            true,
            true,
        ),
        (
            "memory.available<20%",
            "5%",
            225 * MI,
            1000 * MI,
            true,
            true,
        ),
        (
            "memory.available<20%",
            "5%",
            300 * MI,
            1000 * MI,
            true,
            false,
        ),
        ("nodefs.available<30%", "", 100 * GI, 1000 * GI, false, true),
        ("memory.available<1Gi", "", GI, 10 * GI, false, false),
    ];
    for (th, reclaim, available, capacity, enforce, want) in cases {
        let sig = th.split('<').next().unwrap();
        let r: Vec<String> = if reclaim.is_empty() {
            vec![]
        } else {
            vec![format!("{sig}={reclaim}")]
        };
        let t = parse_thresholds(
            &EvictionSettings {
                hard: vec![th.into()],
                minimum_reclaim: r,
                ..Default::default()
            },
            false,
        )
        .unwrap();
        let obs = BTreeMap::from([(
            t[0].signal,
            Observation {
                available,
                capacity,
            },
        )]);
        assert_eq!(
            is_met(&t[0], &obs, enforce),
            want,
            "{th} {reclaim} {available}"
        );
    }
}

#[test]
fn minimum_reclaim_keeps_evicting_until_past_it() {
    let mut m = manager(
        settings(
            &["memory.available<1Gi"],
            &[],
            &[],
            &["memory.available=500Mi"],
        ),
        0,
    );
    let pods = vec![pod("be", QosClass::BestEffort, 0, GI)];
    // (t seconds, available, evicts?)
    let steps = [
        (0, 900 * MI, true),
        (10, 1200 * MI, true),
        (20, 1600 * MI, false),
        (30, 1200 * MI, false),
    ];
    for (t, available, evicts) in steps {
        let stats = memory_stats(available);
        let d = m.housekeeping(
            &Inputs {
                stats: &stats,
                pods: &pods,
                reclaimable: Reclaimable::default(),
                system_over_reserved: false,
                eviction_in_flight: false,
            },
            Duration::from_secs(t),
        );
        assert_eq!(d.eviction.is_some(), evicts, "t={t}");
    }
}

#[test]
fn disk_pressure_reclaims_node_level_first() {
    let mut m = manager(settings(&["nodefs.available<10Gi"], &[], &[], &[]), 0);
    let pods = vec![pod("be", QosClass::BestEffort, 0, 5 * GI)];
    let mut stats = memory_stats(8 * GI);
    stats.nodefs.used_bytes = 95 * GI;
    // (reclaimable dead containers, unused images, expected eviction)
    let cases = [
        (2 * GI, 4 * GI, false),
        (GI, 2 * GI, true),
        (0, 6 * GI, false),
    ];
    for (dead, images, evicts) in cases {
        let d = m.housekeeping(
            &Inputs {
                stats: &stats,
                pods: &pods,
                reclaimable: Reclaimable {
                    dead_containers_bytes: dead,
                    unused_images_bytes: images,
                    ..Default::default()
                },
                system_over_reserved: false,
                eviction_in_flight: false,
            },
            Duration::from_secs(0),
        );
        assert!(d.conditions.contains(&Condition::DiskPressure));
        assert_eq!(
            d.reclaim,
            vec![Reclaim::DeleteDeadContainers, Reclaim::DeleteUnusedImages]
        );
        assert_eq!(d.eviction.is_some(), evicts, "dead {dead} images {images}");
        assert_eq!(d.reclaiming, Some(Resource::EphemeralStorage));
    }
}

#[test]
fn node_reclaim_order_follows_the_seed() {
    use Reclaim::*;
    let cases = [
        (Signal::MemoryAvailable, false, vec![]),
        (Signal::PidAvailable, true, vec![]),
        (Signal::NodeFsAvailable, true, vec![DeleteDeadContainers]),
        (Signal::NodeFsInodesFree, true, vec![DeleteDeadContainers]),
        (Signal::ImageFsAvailable, true, vec![DeleteUnusedImages]),
        (
            Signal::NodeFsAvailable,
            false,
            vec![DeleteDeadContainers, DeleteUnusedImages],
        ),
        (
            Signal::ImageFsInodesFree,
            false,
            vec![DeleteDeadContainers, DeleteUnusedImages],
        ),
    ];
    for (sig, imagefs, want) in cases {
        assert_eq!(node_reclaim(sig, imagefs), want, "{sig} imagefs={imagefs}");
    }
}

#[test]
fn one_eviction_at_a_time() {
    let mut m = manager(settings(&["memory.available<1Gi"], &[], &[], &[]), 0);
    let pods = test_memory_pressure_pods();
    let stats = memory_stats(500 * MI);
    let d = m.housekeeping(
        &Inputs {
            stats: &stats,
            pods: &pods,
            reclaimable: Reclaimable::default(),
            system_over_reserved: false,
            eviction_in_flight: true,
        },
        Duration::ZERO,
    );
    assert!(d.conditions.contains(&Condition::MemoryPressure));
    assert!(d.eviction.is_none());
}

#[test]
fn messages() {
    let p = pod("ns/p", QosClass::BestEffort, 0, GI);
    assert_eq!(
        eviction_message(&p, Resource::Memory, None).0,
        "The node was low on resource: memory. Container c was using 1Gi, request is 0, has larger consumption of memory. "
    );
    let p = pod("ns/p", QosClass::Burstable, 2 * GI, GI);
    assert_eq!(
        eviction_message(&p, Resource::Memory, None).0,
        "The node was low on resource: memory. "
    );
    let mut p = pod("ns/p", QosClass::Burstable, 0, 0);
    p.containers[0].usage.inodes = 2000;
    assert_eq!(
        eviction_message(&p, Resource::Inodes, None).0,
        "The node was low on resource: inodes. Container c was using 2k, request is 0, has larger consumption of inodes. "
    );
}

#[test]
fn the_message_names_the_threshold_met_and_what_was_available() {
    // Upstream's example: a 100Mi memory.available threshold with 50Mi left.
    let p = pod("ns/p", QosClass::BestEffort, 0, 200 * 1024 * 1024);
    assert_eq!(
        eviction_message(&p, Resource::Memory, Some((100 << 20, 50 << 20))).0,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
         Container c was using 200Mi, request is 0, has larger consumption of memory. "
    );
}

#[test]
fn no_thresholds_no_decisions() {
    let mut m = EvictionManager::new(EvictionConfig::default());
    let stats = memory_stats(0);
    let pods = test_memory_pressure_pods();
    let d = m.housekeeping(
        &Inputs {
            stats: &stats,
            pods: &pods,
            reclaimable: Reclaimable::default(),
            system_over_reserved: false,
            eviction_in_flight: false,
        },
        Duration::ZERO,
    );
    assert_eq!(d, Decisions::default());
}
