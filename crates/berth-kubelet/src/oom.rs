//! oom_score_adj per container and the simulated OOM killer (seed 001 "Out of Resource and Out
//! of Memory"; control-loops spec §2.11). berth uses the seed's (1.11) values.

use crate::eviction::QosClass;

/// oom_score_adj of Guaranteed containers (the seed's table).
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -998;
/// oom_score_adj of BestEffort containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// oom_score_adj of the kubelet and the container runtime.
pub const KUBELET_OOM_SCORE_ADJ: i64 = -999;

/// A container's oom_score_adj: Guaranteed −998, BestEffort 1000, Burstable
/// `min(max(2, 1000 − (1000 × memoryRequestBytes) / machineMemoryCapacityBytes), 999)`.
pub fn oom_score_adj(qos: QosClass, memory_request: i64, machine_memory: i64) -> i64 {
    match qos {
        QosClass::Guaranteed => GUARANTEED_OOM_SCORE_ADJ,
        QosClass::BestEffort => BEST_EFFORT_OOM_SCORE_ADJ,
        QosClass::Burstable => {
            if machine_memory <= 0 {
                return 999;
            }
            let a = 1000 - (1000i128 * memory_request as i128 / machine_memory as i128) as i64;
            a.clamp(2, 999)
        }
    }
}

/// A container's oom_score: its memory use in thousandths of the machine's memory (the kernel's
/// scale for the seed's "% of node memory") plus its oom_score_adj.
pub fn oom_score(usage: i64, machine_memory: i64, adj: i64) -> i64 {
    let per_mille = if machine_memory > 0 {
        (1000i128 * usage as i128 / machine_memory as i128) as i64
    } else {
        0
    };
    per_mille + adj
}

/// A running container the OOM killer may pick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OomCandidate {
    /// `namespace/name`.
    pub pod: String,
    pub container: String,
    pub usage: i64,
    pub adj: i64,
}

/// The container the OOM killer kills: the highest oom_score (ties: pod then container name).
pub fn oom_victim(containers: &[OomCandidate], machine_memory: i64) -> Option<&OomCandidate> {
    containers.iter().max_by(|a, b| {
        let sa = oom_score(a.usage, machine_memory, a.adj);
        let sb = oom_score(b.usage, machine_memory, b.adj);
        sa.cmp(&sb)
            .then_with(|| b.pod.cmp(&a.pod))
            .then_with(|| b.container.cmp(&a.container))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adj_vectors() {
        use QosClass::*;
        // control-loops §2.11 with 1.11 values (the seed's table).
        let cases = [
            (Burstable, 0, 4_000_000_000, 999),
            (Burstable, 10_000_000_000, 8_000_000_000, 2),
            (BestEffort, 0, 7_230_457_451, 1000),
            (Guaranteed, 10_000_000_000, 123_456_789, -998),
            (Burstable, 4_000_000_000, 8_000_000_000, 500),
            (Burstable, 7_999_999_999, 8_000_000_000, 2),
            (Burstable, 1, 8_000_000_000, 999),
        ];
        for (qos, req, mem, want) in cases {
            assert_eq!(oom_score_adj(qos, req, mem), want, "{qos:?} {req} {mem}");
        }
    }

    #[test]
    fn victim_is_highest_score() {
        let c = |pod: &str, usage: i64, adj: i64| OomCandidate {
            pod: pod.into(),
            container: "c".into(),
            usage,
            adj,
        };
        let mem = 1000;
        // A Guaranteed pod using 90% (900 − 998 = −98) loses to a Burstable using 10% with adj 500.
        let cs = vec![c("g", 900, -998), c("b", 100, 500), c("be", 0, 1000)];
        assert_eq!(oom_victim(&cs, mem).unwrap().pod, "be");
        let cs = vec![c("g", 900, -998), c("b1", 100, 500), c("b2", 300, 400)];
        assert_eq!(oom_victim(&cs, mem).unwrap().pod, "b2");
        assert!(oom_victim(&[], mem).is_none());
    }
}
