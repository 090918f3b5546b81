//! Who is evicted first: the seed's rule (spec README decision on control-loops §2.6).
//!
//! Pods rank by QoS class (BestEffort, then Burstable, then Guaranteed); within a class, pods
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

/// Indices of `pods` in eviction order for the starved `resource`.
/// `system_over_reserved`: system daemons use more than kube-reserved + system-reserved.
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

    #[test]
    fn critical_pods_are_never_ranked() {
        let mut p = pod("crit", QosClass::BestEffort, 0, 10 * MI);
        p.priority = 2_000_000_000;
        let pods = vec![p, pod("other", QosClass::Burstable, 0, MI)];
        assert_eq!(
            names(&pods, &rank(&pods, Resource::Memory, false)),
            vec!["other"]
        );
    }
}
