//! Failing a simulated node on purpose: the Node annotation `berth.io/simulate` says how its
//! kubelet behaves, so that node failures can be tried with kubectl alone
//! (`kubectl annotate node node-1 berth.io/simulate=stopped --overwrite`, or `berth node stop`).
//!
//! | value | the kubelet |
//! | --- | --- |
//! | `running` (or none) | renews its lease, posts `Ready=True` (again, after the node lifecycle controller marked it `Unknown`), runs its pods |
//! | `not-ready` | renews its lease and runs its pods, but posts `Ready=False` (`KubeletNotReady`) |
//! | `partitioned` | keeps running its pods, but nothing it writes reaches the API: no lease, no status, no pod updates; its endpoints do not answer |
//! | `stopped` | a dead machine: no lease, no status, its pods stop (they stay in the API until evicted and deleted), its endpoints do not answer |
//!
//! When a stopped or partitioned node comes back, its kubelet catches up with what happened to
//! its pods meanwhile (it finishes the deletions the taint manager asked for).

use std::fmt;

/// The Node annotation the simulated kubelet obeys.
pub const SIMULATE_ANNOTATION: &str = "berth.io/simulate";

/// How a simulated node behaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Simulate {
    /// A healthy node.
    #[default]
    Running,
    /// The kubelet posts `Ready=False`.
    NotReady,
    /// The node runs its pods but cannot reach the API server.
    Partitioned,
    /// The machine is down.
    Stopped,
}

/// An annotation value that names no behaviour.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{SIMULATE_ANNOTATION}: unknown value {value:?} (running, not-ready, partitioned, stopped)"
)]
pub struct UnknownBehaviour {
    pub value: String,
}

impl Simulate {
    /// Every behaviour, in the order the CLI lists them.
    pub const ALL: [Simulate; 4] = [
        Simulate::Running,
        Simulate::NotReady,
        Simulate::Partitioned,
        Simulate::Stopped,
    ];

    /// The annotation's value for this behaviour.
    pub fn as_str(self) -> &'static str {
        match self {
            Simulate::Running => "running",
            Simulate::NotReady => "not-ready",
            Simulate::Partitioned => "partitioned",
            Simulate::Stopped => "stopped",
        }
    }

    /// Reads an annotation value (surrounding blanks and case ignored).
    pub fn parse(value: &str) -> Result<Simulate, UnknownBehaviour> {
        let v = value.trim().to_ascii_lowercase();
        Simulate::ALL
            .into_iter()
            .find(|s| s.as_str() == v)
            .ok_or_else(|| UnknownBehaviour {
                value: value.to_string(),
            })
    }

    /// Whether what the kubelet writes (lease, status, pod updates, events) reaches the API.
    pub fn reaches_api(self) -> bool {
        matches!(self, Simulate::Running | Simulate::NotReady)
    }

    /// Whether the node's pods keep running (and using resources).
    pub fn runs_pods(self) -> bool {
        self != Simulate::Stopped
    }
}

impl fmt::Display for Simulate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_value_reads_back() {
        for s in Simulate::ALL {
            assert_eq!(Simulate::parse(s.as_str()), Ok(s));
        }
        assert_eq!(Simulate::parse(" Stopped "), Ok(Simulate::Stopped));
        assert_eq!(
            Simulate::parse("down"),
            Err(UnknownBehaviour {
                value: "down".into()
            })
        );
    }

    #[test]
    fn only_healthy_and_not_ready_nodes_reach_the_api() {
        let reach: Vec<bool> = Simulate::ALL.iter().map(|s| s.reaches_api()).collect();
        assert_eq!(reach, [true, true, false, false]);
        let run: Vec<bool> = Simulate::ALL.iter().map(|s| s.runs_pods()).collect();
        assert_eq!(run, [true, true, true, false]);
    }

    proptest! {
        #[test]
        fn any_value_parses_or_is_refused_without_panic(v in ".*") {
            if let Ok(s) = Simulate::parse(&v) {
                prop_assert_eq!(s.as_str(), v.trim().to_ascii_lowercase());
            }
        }
    }
}
