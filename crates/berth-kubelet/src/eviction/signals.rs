//! Observing eviction signals from a node's stats (control-loops spec §2.1; seed table 1).

use super::thresholds::Signal;
use std::collections::BTreeMap;

/// A file system's size and use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    pub capacity_bytes: i64,
    pub used_bytes: i64,
    pub inodes: i64,
    pub inodes_used: i64,
}

impl FsStats {
    /// Bytes available (never negative).
    pub fn available_bytes(&self) -> i64 {
        (self.capacity_bytes - self.used_bytes).max(0)
    }
    /// Inodes free (never negative).
    pub fn inodes_free(&self) -> i64 {
        (self.inodes - self.inodes_used).max(0)
    }
}

/// What the node's summary says about it: the inputs of every signal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// `status.capacity[memory]`.
    pub memory_capacity: i64,
    /// Working set of everything on the node (pods and system daemons).
    pub memory_working_set: i64,
    /// Working set of the pods alone.
    pub pods_memory_working_set: i64,
    /// The pods' cgroup limit: capacity − kube-reserved − system-reserved.
    pub pods_memory_limit: i64,
    /// The root file system (volumes, logs, dead containers).
    pub nodefs: FsStats,
    /// A dedicated image file system; `None` when images live on nodefs.
    pub imagefs: Option<FsStats>,
    /// Largest pid (`/proc/sys/kernel/pid_max`).
    pub pid_max: i64,
    /// Processes running.
    pub pids: i64,
}

impl NodeStats {
    /// The image file system: the dedicated one, else nodefs.
    pub fn image_fs(&self) -> FsStats {
        self.imagefs.unwrap_or(self.nodefs)
    }
}

/// One signal's value: what is available, out of what capacity (for percentages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    pub available: i64,
    pub capacity: i64,
}

/// Every signal observed from `stats`.
pub fn observe(stats: &NodeStats) -> BTreeMap<Signal, Observation> {
    let memory = Observation {
        available: stats.memory_capacity - stats.memory_working_set,
        capacity: stats.memory_capacity,
    };
    let allocatable = Observation {
        available: stats.pods_memory_limit - stats.pods_memory_working_set,
        capacity: stats.pods_memory_limit,
    };
    let fs_bytes = |fs: FsStats| Observation {
        available: fs.available_bytes(),
        capacity: fs.capacity_bytes,
    };
    let fs_inodes = |fs: FsStats| Observation {
        available: fs.inodes_free(),
        capacity: fs.inodes,
    };
    let image = stats.image_fs();
    BTreeMap::from([
        (Signal::MemoryAvailable, memory),
        (Signal::AllocatableMemoryAvailable, allocatable),
        (Signal::NodeFsAvailable, fs_bytes(stats.nodefs)),
        (Signal::NodeFsInodesFree, fs_inodes(stats.nodefs)),
        (Signal::ImageFsAvailable, fs_bytes(image)),
        (Signal::ImageFsInodesFree, fs_inodes(image)),
        (
            Signal::PidAvailable,
            Observation {
                available: stats.pid_max - stats.pids,
                capacity: stats.pid_max,
            },
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    #[test]
    fn signals_from_stats() {
        let nodefs = FsStats {
            capacity_bytes: 100 * GI,
            used_bytes: 30 * GI,
            inodes: 1000,
            inodes_used: 400,
        };
        let mut stats = NodeStats {
            memory_capacity: 10 * GI,
            memory_working_set: 3 * GI,
            pods_memory_working_set: 2 * GI,
            pods_memory_limit: 9 * GI,
            nodefs,
            imagefs: None,
            pid_max: 32768,
            pids: 768,
        };
        let cases = [
            (Signal::MemoryAvailable, 7 * GI, 10 * GI),
            (Signal::AllocatableMemoryAvailable, 7 * GI, 9 * GI),
            (Signal::NodeFsAvailable, 70 * GI, 100 * GI),
            (Signal::NodeFsInodesFree, 600, 1000),
            (Signal::ImageFsAvailable, 70 * GI, 100 * GI),
            (Signal::ImageFsInodesFree, 600, 1000),
            (Signal::PidAvailable, 32000, 32768),
        ];
        let obs = observe(&stats);
        for (sig, available, capacity) in cases {
            assert_eq!(
                obs[&sig],
                Observation {
                    available,
                    capacity
                },
                "{sig}"
            );
        }
        stats.imagefs = Some(FsStats {
            capacity_bytes: 50 * GI,
            used_bytes: 45 * GI,
            inodes: 100,
            inodes_used: 100,
        });
        let obs = observe(&stats);
        assert_eq!(obs[&Signal::ImageFsAvailable].available, 5 * GI);
        assert_eq!(obs[&Signal::ImageFsInodesFree].available, 0);
        assert_eq!(obs[&Signal::NodeFsAvailable].available, 70 * GI);
    }
}
