//! pickOneNodeForPreemption (§7.6): upstream's ordered criteria, ties by node name.

use super::victims::start_or_latest;
use super::NodeVictims;
use std::cmp::Reverse;

/// A node's standing: smaller is better. The fields compare in the order of the criteria.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PickKey {
    /// Fewest PDB violations.
    pdb_violations: usize,
    /// Lowest highest victim priority.
    highest: i64,
    /// Smallest sum of (priority + 2^31): the offset keeps negative priorities from favouring
    /// more victims.
    sum: i64,
    /// Fewest victims.
    count: usize,
    /// [1.16+] latest "earliest start time among the highest-priority victims"; a victim without
    /// a start time counts as started now, i.e. later than any recorded start.
    earliest_start: Reverse<i64>,
}

impl PickKey {
    /// The key of a node with these victims (priority, start time).
    pub(crate) fn of(
        pdb_violations: usize,
        victims: impl Iterator<Item = (i32, Option<i64>)> + Clone,
    ) -> PickKey {
        let highest = victims.clone().map(|(p, _)| p).max().unwrap_or(i32::MIN);
        let (mut sum, mut count, mut earliest) = (0i64, 0usize, i64::MAX);
        for (p, start) in victims {
            sum += p as i64 + (1i64 << 31);
            count += 1;
            if p == highest {
                earliest = earliest.min(start_or_latest(start));
            }
        }
        PickKey {
            pdb_violations,
            highest: highest as i64,
            sum,
            count,
            earliest_start: Reverse(earliest),
        }
    }

    /// True if evicting the victims violates a disruption budget.
    pub(crate) fn violates_budgets(&self) -> bool {
        self.pdb_violations > 0
    }

    /// A node without victims: pickOneNodeForPreemption takes the first such node at once.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn of_node(n: &NodeVictims) -> PickKey {
        PickKey::of(
            n.pdb_violations,
            n.victims.iter().map(|v| (v.priority, v.start)),
        )
    }
}

/// Picks the node to preempt on: zero victims wins at once; then fewest PDB violations, lowest
/// highest victim priority, smallest sum of (priority + 2^31), fewest victims, latest earliest
/// start time among the highest-priority victims; then the first by name.
pub fn pick_one_node(results: &[NodeVictims]) -> Option<&NodeVictims> {
    let mut sorted: Vec<&NodeVictims> = results.iter().collect();
    sorted.sort_by(|a, b| a.node.cmp(&b.node));
    if let Some(n) = sorted.iter().find(|n| n.victims.is_empty()) {
        return Some(n);
    }
    sorted.into_iter().min_by_key(|n| PickKey::of_node(n))
}
