//! Who is evicted first.
//!
//! With pod priority on (the default, as in seed 003's release and today's kubelet), upstream's
//! ranking ([`rank_with_priority`], `pkg/kubelet/eviction/helpers.go`): pods using more of the
//! starved resource than they request first, then the lowest priority, then the largest usage
//! above request; under PID pressure by priority, then process count.
//!
//! With pod priority off (`feature-gates: PodPriority=false`), the seed's rule ([`rank`], spec
//! README decision on control-loops §2.6): pods rank by QoS class (BestEffort, then Burstable, then Guaranteed); within a class, pods
//! using more of the starved resource than they request come first, the largest excess first;
//! when no pod of the class exceeds its request, the largest consumer comes first. Guaranteed
//! pods are candidates only when system daemons use more than their reservations or only
//! Guaranteed pods remain. Ties break by namespace/name.

use super::thresholds::Resource;

/// A pod's QoS class, ordered by who is evicted first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QosClass {
    BestEffort,
    Burstable,
    Guaranteed,
}

impl QosClass {
    /// From the class name `berth_core::qos::qos_class` returns.
    pub fn from_name(name: &str) -> QosClass {
        match name {
            "Guaranteed" => QosClass::Guaranteed,
            "Burstable" => QosClass::Burstable,
            _ => QosClass::BestEffort,
        }
    }

    /// The class name as pod status shows it.
    pub fn name(self) -> &'static str {
        match self {
            QosClass::BestEffort => "BestEffort",
            QosClass::Burstable => "Burstable",
            QosClass::Guaranteed => "Guaranteed",
        }
    }
}

/// Usage (or request) of each resource the eviction manager reclaims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amounts {
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub inodes: i64,
    pub pids: i64,
}

impl Amounts {
    /// The amount of one resource.
    pub fn get(&self, r: Resource) -> i64 {
        match r {
            Resource::Memory => self.memory,
            Resource::EphemeralStorage => self.ephemeral_storage,
            Resource::Inodes => self.inodes,
            Resource::Pids => self.pids,
        }
    }
}

/// One container as the eviction message describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerUsage {
    pub name: String,
    pub usage: Amounts,
    pub request: Amounts,
}

/// A pod the node could evict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// `namespace/name`.
    pub key: String,
    pub qos: QosClass,
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// `spec.terminationGracePeriodSeconds` (30 when unset).
    pub termination_grace_seconds: i64,
    pub containers: Vec<ContainerUsage>,
}

impl Candidate {
    /// The pod's usage of `r` (sum over containers).
    pub fn usage(&self, r: Resource) -> i64 {
        self.containers.iter().map(|c| c.usage.get(r)).sum()
    }

    /// The pod's request of `r` (sum over containers; inodes and pids are never requested).
    pub fn request(&self, r: Resource) -> i64 {
        match r {
            Resource::Inodes | Resource::Pids => 0,
            _ => self.containers.iter().map(|c| c.request.get(r)).sum(),
        }
    }

    /// Critical pods (priority ≥ 2000000000) are never evicted (modern kubelet).
    pub fn is_critical(&self) -> bool {
        self.priority >= 2_000_000_000
    }
}

/// Indices of `pods` in eviction order for the starved `resource`: upstream's ranking when pod
/// priority is on, the seed's QoS-only rule when it is off.
pub fn rank_for(
    pods: &[Candidate],
    resource: Resource,
    system_over_reserved: bool,
    pod_priority: bool,
) -> Vec<usize> {
    if pod_priority {
        rank_with_priority(pods, resource)
    } else {
        rank(pods, resource, system_over_reserved)
    }
}

/// Upstream's `rankMemoryPressure` / `rankDiskPressureFunc` (`orderedBy(exceedRequests,
/// priority, usage above request)`) and `rankPIDPressure` (`orderedBy(priority, process)`).
/// Critical pods are never candidates (upstream refuses to evict them). Ties keep the
/// namespace/name order, so that a rank is reproducible.
pub fn rank_with_priority(pods: &[Candidate], resource: Resource) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len())
        .filter(|&i| !pods[i].is_critical())
        .collect();
    let key = |i: &usize| {
        let p = &pods[*i];
        let usage = p.usage(resource);
        let request = p.request(resource);
        match resource {
            Resource::Pids => (false, p.priority, -usage, p.key.clone()),
            _ => (
                usage <= request,
                p.priority,
                -(usage - request),
                p.key.clone(),
            ),
        }
    };
    order.sort_by_cached_key(key);
    order
}

/// The seed's rule. `system_over_reserved`: system daemons use more than kube-reserved + system-reserved.
pub fn rank(pods: &[Candidate], resource: Resource, system_over_reserved: bool) -> Vec<usize> {
    let eligible: Vec<usize> = (0..pods.len())
        .filter(|&i| !pods[i].is_critical())
        .collect();
    let only_guaranteed = eligible
        .iter()
        .all(|&i| pods[i].qos == QosClass::Guaranteed);
    let guaranteed_ok = system_over_reserved || only_guaranteed;
    let mut order: Vec<usize> = eligible
        .into_iter()
        .filter(|&i| guaranteed_ok || pods[i].qos != QosClass::Guaranteed)
        .collect();
    // Whether any pod of a class exceeds its request decides how that class is ordered.
    let exceeds = |p: &Candidate| p.usage(resource) > p.request(resource);
    let class_has_exceeder = |q: QosClass| pods.iter().any(|p| p.qos == q && exceeds(p));
    let key = |i: &usize| {
        let p = &pods[*i];
        let usage = p.usage(resource);
        let request = p.request(resource);
        let score = if class_has_exceeder(p.qos) {
            // exceeders first, by excess; then the rest by (negative) excess.
            (!exceeds(p), -(usage - request))
        } else {
            (false, -usage)
        };
        (p.qos, score, p.key.clone())
    };
    order.sort_by_cached_key(key);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: i64 = 1 << 20;

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
                    inodes: usage,
                    pids: usage,
                },
                request: Amounts {
                    memory: request,
                    ephemeral_storage: request,
                    inodes: 0,
                    pids: 0,
                },
            }],
        }
    }

    fn names(pods: &[Candidate], order: &[usize]) -> Vec<String> {
        order.iter().map(|&i| pods[i].key.clone()).collect()
    }

    #[test]
    fn seed_rule_on_test_memory_pressure_pods() {
        // The pods of control-loops §2.9: the seed's rule picks best-effort-high.
        use QosClass::*;
        let pods = vec![
            pod("guaranteed-low", Guaranteed, 1024 * MI, 200 * MI),
            pod("guaranteed-high", Guaranteed, 1024 * MI, 800 * MI),
            pod("burstable-low", Burstable, 100 * MI, 300 * MI),
            pod("burstable-high", Burstable, 100 * MI, 800 * MI),
            pod("best-effort-low", BestEffort, 0, 300 * MI),
            pod("best-effort-high", BestEffort, 0, 500 * MI),
        ];
        let cases: Vec<(bool, Vec<&str>)> = vec![
            (
                false,
                vec![
                    "best-effort-high",
                    "best-effort-low",
                    "burstable-high",
                    "burstable-low",
                ],
            ),
            (
                true,
                vec![
                    "best-effort-high",
                    "best-effort-low",
                    "burstable-high",
                    "burstable-low",
                    "guaranteed-high",
                    "guaranteed-low",
                ],
            ),
        ];
        for (over, want) in cases {
            assert_eq!(names(&pods, &rank(&pods, Resource::Memory, over)), want);
        }
    }

    #[test]
    fn within_class() {
        use QosClass::*;
        // (pods, resource, expected order)
        let cases: Vec<(Vec<Candidate>, Resource, Vec<&str>)> = vec![
            // Burstable: exceeders by excess first, then the rest.
            (
                vec![
                    pod("a", Burstable, 1000 * MI, 1100 * MI),
                    pod("b", Burstable, 100 * MI, 400 * MI),
                    pod("c", Burstable, 900 * MI, 800 * MI),
                    pod("d", Burstable, 500 * MI, 100 * MI),
                ],
                Resource::Memory,
                vec!["b", "a", "c", "d"],
            ),
            // No pod exceeds its request: the largest consumer first.
            (
                vec![
                    pod("a", Burstable, 1000 * MI, 900 * MI),
                    pod("b", Burstable, 100 * MI, 90 * MI),
                    pod("c", Burstable, 2000 * MI, 1000 * MI),
                ],
                Resource::Memory,
                vec!["c", "a", "b"],
            ),
            // Only Guaranteed pods remain: they become candidates.
            (
                vec![
                    pod("a", Guaranteed, 1000 * MI, 200 * MI),
                    pod("b", Guaranteed, 100 * MI, 100 * MI),
                    pod("c", Guaranteed, 500 * MI, 400 * MI),
                ],
                Resource::Memory,
                vec!["c", "a", "b"],
            ),
            // Inodes are never requested: BestEffort by use, then Burstable by use.
            (
                vec![
                    pod("a", Burstable, 0, 900),
                    pod("b", BestEffort, 0, 10),
                    pod("c", BestEffort, 0, 50),
                    pod("d", Guaranteed, 0, 5000),
                ],
                Resource::Inodes,
                vec!["c", "b", "a"],
            ),
            // Ties break by name.
            (
                vec![
                    pod("z", BestEffort, 0, 10 * MI),
                    pod("y", BestEffort, 0, 10 * MI),
                ],
                Resource::Memory,
                vec!["y", "z"],
            ),
        ];
        for (pods, r, want) in cases {
            assert_eq!(names(&pods, &rank(&pods, r, false)), want);
        }
    }

    fn prioritized(key: &str, qos: QosClass, request: i64, usage: i64, priority: i32) -> Candidate {
        Candidate {
            priority,
            ..pod(key, qos, request, usage)
        }
    }

    #[test]
    fn upstream_ranking_vectors() {
        use QosClass::*;
        // (case, pods, resource, expected order): upstream's helpers_test.go cases.
        let cases: Vec<(&str, Vec<Candidate>, Resource, Vec<&str>)> = vec![
            (
                // TestOrderedByExceedsRequestMemory: exceeding its request outranks priority.
                "exceeds request memory",
                vec![
                    prioritized("below-requests", Burstable, 200 * MI, 199 * MI, -1),
                    prioritized("exceeds-requests", Burstable, 200 * MI, 250 * MI, 1),
                ],
                Resource::Memory,
                vec!["exceeds-requests", "below-requests"],
            ),
            (
                // TestOrderedByPriority: the lowest priority first.
                "priority",
                vec![
                    prioritized("high-priority", BestEffort, 0, 100 * MI, 1),
                    prioritized("low-priority", BestEffort, 0, 100 * MI, -1),
                    prioritized("default-priority", BestEffort, 0, 100 * MI, 0),
                ],
                Resource::Memory,
                vec!["low-priority", "default-priority", "high-priority"],
            ),
            (
                // TestOrderedByMemory: usage above request, whatever the QoS class.
                "memory above request",
                vec![
                    pod("best-effort-high", BestEffort, 0, 500 * MI),
                    pod("best-effort-low", BestEffort, 0, 300 * MI),
                    pod("burstable-high", Burstable, 100 * MI, 800 * MI),
                    pod("burstable-low", Burstable, 100 * MI, 300 * MI),
                    pod("guaranteed-high", Guaranteed, 1024 * MI, 800 * MI),
                    pod("guaranteed-low", Guaranteed, 1024 * MI, 200 * MI),
                ],
                Resource::Memory,
                vec![
                    "burstable-high",
                    "best-effort-high",
                    "best-effort-low",
                    "burstable-low",
                    "guaranteed-high",
                    "guaranteed-low",
                ],
            ),
            (
                // The case: a BestEffort pod of priority 1000 outlives a Burstable pod
                // over its request of priority 10 (both exceed their requests).
                "issue 32",
                vec![
                    prioritized("best-effort-1000", BestEffort, 0, 100 * MI, 1000),
                    prioritized("burstable-10", Burstable, 100 * MI, 300 * MI, 10),
                ],
                Resource::Memory,
                vec!["burstable-10", "best-effort-1000"],
            ),
            (
                // TestOrderedByExceedsRequestDisk, then priority, then disk above request.
                "disk",
                vec![
                    prioritized("below", Burstable, 200 * MI, 100 * MI, -1),
                    prioritized("exceeds-high", Burstable, 100 * MI, 900 * MI, 5),
                    prioritized("exceeds-low", BestEffort, 0, 50 * MI, 0),
                ],
                Resource::EphemeralStorage,
                vec!["exceeds-low", "exceeds-high", "below"],
            ),
            (
                // rankPIDPressure: priority, then the most processes.
                "pids",
                vec![
                    prioritized("a", Guaranteed, 0, 10, 0),
                    prioritized("b", BestEffort, 0, 50, 0),
                    prioritized("c", BestEffort, 0, 500, 7),
                ],
                Resource::Pids,
                vec!["b", "a", "c"],
            ),
        ];
        for (case, pods, r, want) in cases {
            assert_eq!(
                names(&pods, &rank_for(&pods, r, false, true)),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn without_pod_priority_the_seed_rule_applies() {
        use QosClass::*;
        let pods = vec![
            prioritized("best-effort-1000", BestEffort, 0, 100 * MI, 1000),
            prioritized("burstable-10", Burstable, 100 * MI, 300 * MI, 10),
        ];
        assert_eq!(
            names(&pods, &rank_for(&pods, Resource::Memory, false, false)),
            vec!["best-effort-1000", "burstable-10"]
        );
    }

    #[test]
    fn critical_pods_are_never_ranked() {
        let mut p = pod("crit", QosClass::BestEffort, 0, 10 * MI);
        p.priority = 2_000_000_000;
        let pods = vec![p, pod("other", QosClass::Burstable, 0, MI)];
        for priority in [false, true] {
            assert_eq!(
                names(&pods, &rank_for(&pods, Resource::Memory, false, priority)),
                vec!["other"]
            );
        }
    }
}
