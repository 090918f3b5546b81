//! pickOneNodeForPreemption (§7.6): upstream's ordered criteria, ties by node name.

use super::NodeVictims;

/// Picks the node to preempt on: zero victims wins at once; then fewest PDB violations, lowest
/// highest victim priority, smallest sum of (priority + 2^31), fewest victims, latest earliest
/// start time among the highest-priority victims; then the first by name.
pub fn pick_one_node(results: &[NodeVictims]) -> Option<&NodeVictims> {
    let mut sorted: Vec<&NodeVictims> = results.iter().collect();
    sorted.sort_by(|a, b| a.node.cmp(&b.node));
    if let Some(n) = sorted.iter().find(|n| n.victims.is_empty()) {
        return Some(n);
    }
    sorted.into_iter().min_by(|a, b| key(a).cmp(&key(b)))
}

fn key(n: &NodeVictims) -> (usize, i64, i64, usize, std::cmp::Reverse<i64>) {
    let highest = n
        .victims
        .iter()
        .map(|v| v.priority)
        .max()
        .unwrap_or(i32::MIN);
    let sum: i64 = n
        .victims
        .iter()
        .map(|v| v.priority as i64 + (1i64 << 31))
        .sum();
    let earliest = n
        .victims
        .iter()
        .filter(|v| v.priority == highest)
        .map(|v| v.start.unwrap_or(i64::MIN))
        .min()
        .unwrap_or(i64::MIN);
    (
        n.pdb_violations,
        highest as i64,
        sum,
        n.victims.len(),
        std::cmp::Reverse(earliest),
    )
}
