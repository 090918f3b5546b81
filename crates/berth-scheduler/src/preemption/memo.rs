//! Work reuse across preemption decisions (an equivalence cache, like the filter's
//! `engine/memo.rs`): the resource part of selectVictimsOnNode — which potential victims the
//! reprieve keeps — depends only on the node and its pods, the preemptor's priority and request,
//! and the budgets that allow no disruption. It is remembered per node slot with the slot's
//! `hot_gen` stamp (the cache generation of the node's last change, pods included) and reused
//! while the stamp and those inputs are unchanged. Consecutive preemptors of one shape then
//! recompute only the nodes that changed since the previous decision.
//!
//! Like the filter's memo it assumes one scheduler serves one cache; it is off when the
//! scheduler is built with `reuse_across_pods(false)`.

use super::pick::PickKey;
use super::CompiledPdb;
use crate::compiled::{Resources, Selector};
use crate::intern::Sym;
use crate::pod_info::PodInfo;

/// What a remembered result depends on besides the node.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Key {
    priority: i32,
    request: Resources,
    resources: bool,
    /// Budgets with no disruption left, sorted: only they make a victim violating.
    blocking: Vec<(Sym, Selector)>,
}

impl Key {
    pub(super) fn new(pod: &PodInfo, resources: bool, pdbs: &[CompiledPdb]) -> Key {
        let mut blocking: Vec<(Sym, Selector)> = pdbs
            .iter()
            .filter(|b| b.allowed <= 0)
            .map(|b| (b.ns, b.selector.clone()))
            .collect();
        blocking.sort();
        Key {
            priority: pod.priority,
            request: pod.request.clone(),
            resources,
            blocking,
        }
    }
}

/// The resource part of selectVictimsOnNode on one node.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct NodeResult {
    /// The node has no potential victims (the reference skips such a node if it failed).
    pub empty: bool,
    /// The victims' key and where their positions (in the full order of the node's potential
    /// victims) are in the arena; None when the pod does not fit even without them all.
    pub victims: Option<(PickKey, u32, u32)>,
}

/// Remembered results per node slot.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    key: Option<Key>,
    /// Per node slot: (stamp, result).
    nodes: Vec<Option<(u64, NodeResult)>>,
    /// Victim positions of every remembered result.
    arena: Vec<u32>,
}

/// Past this many stored positions the arena is compacted (by forgetting everything).
const ARENA_LIMIT: usize = 1 << 20;

impl Memo {
    /// Starts a decision with `key` over `nodes` node slots; forgets everything if the key
    /// changed.
    pub(super) fn begin(&mut self, key: Key, nodes: usize) {
        if self.key.as_ref() != Some(&key) || self.arena.len() > ARENA_LIMIT {
            self.key = Some(key);
            self.nodes.clear();
            self.arena.clear();
        }
        self.nodes.resize(nodes.max(self.nodes.len()), None);
    }

    /// The remembered result for slot `ix` if computed at `stamp`.
    pub(super) fn get(&self, ix: u32, stamp: u64) -> Option<NodeResult> {
        match self.nodes.get(ix as usize) {
            Some(Some((s, r))) if *s == stamp => Some(*r),
            _ => None,
        }
    }

    /// Remembers a result for slot `ix` computed at `stamp` with victims at `positions`.
    pub(super) fn put(
        &mut self,
        ix: u32,
        stamp: u64,
        empty: bool,
        victims: Option<(PickKey, &[usize])>,
    ) -> NodeResult {
        let victims = victims.map(|(key, positions)| {
            let start = self.arena.len() as u32;
            self.arena.extend(positions.iter().map(|&p| p as u32));
            (key, start, positions.len() as u32)
        });
        let r = NodeResult { empty, victims };
        if let Some(slot) = self.nodes.get_mut(ix as usize) {
            *slot = Some((stamp, r));
        }
        r
    }

    /// Victim positions stored at (`start`, `len`).
    pub(super) fn positions(&self, start: u32, len: u32) -> &[u32] {
        &self.arena[start as usize..(start + len) as usize]
    }
}
