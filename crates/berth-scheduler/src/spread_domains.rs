//! Topology spread domain counts kept across decisions. A constraint's counts (matching pods per
//! value of its topology key) change only where pods or nodes change, so instead of recounting
//! the namespace's pods and visiting every node for each pod, each remembered constraint keeps
//! every node's contribution and catches up from the cache's change log (which names every node
//! slot a pod was placed on or removed from, and every node that changed). A decision then costs
//! the changed nodes plus one entry per domain.
//!
//! Only counts that depend on nothing but the namespace, the selector and the key are kept: the
//! caller uses them when every node carries the key and the inclusion policies include every
//! node (no node affinity of the pod to honour, taints ignored), else it counts directly.

use crate::cache::ClusterCache;
use crate::intern::{FxMap, Sym};
use crate::topology_spread::SpreadConstraint;

/// At most this many constraints are remembered; one more clears them all (a bound on memory:
/// each costs a word pair per node slot).
const MAX_ENTRIES: usize = 64;

/// What a count depends on: the namespace, the topology key and the selector.
type Key = (Sym, Sym, crate::compiled::Selector);

/// The remembered constraints. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct SpreadMemo {
    entries: FxMap<Key, Entry>,
}

#[derive(Debug, Default)]
struct Entry {
    /// `(order_epoch, log_epoch)` the entry is valid for.
    stamp: (u64, u64),
    log_pos: usize,
    /// Per node slot: its domain and its matching pods (None: not in the cluster's order, or
    /// without the key).
    per_node: Vec<Option<(Sym, i64)>>,
    /// Per domain: (nodes, matching pods).
    domains: FxMap<Sym, (u32, i64)>,
}

impl SpreadMemo {
    /// Matching pods per domain (every domain with a node, zero counts included) of constraint
    /// `c` for pods of namespace `ns`, up to date with `cache`.
    pub(crate) fn counts(
        &mut self,
        cache: &ClusterCache,
        ns: Sym,
        c: &SpreadConstraint,
    ) -> FxMap<Sym, i64> {
        let e = self.current(cache, ns, c);
        e.domains.iter().map(|(&v, &(_, n))| (v, n)).collect()
    }

    /// Matching pods per node slot (0 for slots that are not nodes with the key) of
    /// constraint `c` for pods of namespace `ns`, up to date with `cache`.
    pub(crate) fn node_counts(
        &mut self,
        cache: &ClusterCache,
        ns: Sym,
        c: &SpreadConstraint,
    ) -> Vec<i64> {
        let e = self.current(cache, ns, c);
        let mut out: Vec<i64> = e.per_node.iter().map(|x| x.map_or(0, |(_, n)| n)).collect();
        out.resize(out.len().max(cache.nodes.len()), 0);
        out
    }

    /// The entry of `c` for `ns`, caught up with `cache`.
    fn current(&mut self, cache: &ClusterCache, ns: Sym, c: &SpreadConstraint) -> &Entry {
        let key = (ns, c.key, c.selector.clone());
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_ENTRIES {
            self.entries.clear();
        }
        let e = self.entries.entry(key).or_default();
        let stamp = (cache.order_epoch, cache.log_epoch);
        if e.stamp != stamp || e.log_pos > cache.change_log.len() || e.per_node.is_empty() {
            e.rebuild(cache, ns, c);
            e.stamp = stamp;
        } else {
            e.catch_up(cache, ns, c);
        }
        e
    }
}

impl Entry {
    fn rebuild(&mut self, cache: &ClusterCache, ns: Sym, c: &SpreadConstraint) {
        self.per_node.clear();
        self.per_node.resize(cache.nodes.len().max(1), None);
        self.domains.clear();
        for &ix in &cache.order {
            self.set(ix, contribution(cache, ns, c, ix));
        }
        self.log_pos = cache.change_log.len();
    }

    fn catch_up(&mut self, cache: &ClusterCache, ns: Sym, c: &SpreadConstraint) {
        for &ix in &cache.change_log[self.log_pos..] {
            self.set(ix, contribution(cache, ns, c, ix));
        }
        self.log_pos = cache.change_log.len();
    }

    /// Replaces node slot `ix`'s contribution.
    fn set(&mut self, ix: u32, now: Option<(Sym, i64)>) {
        let ix = ix as usize;
        if ix >= self.per_node.len() {
            self.per_node.resize(ix + 1, None);
        }
        if let Some((v, n)) = self.per_node[ix].take() {
            if let Some(d) = self.domains.get_mut(&v) {
                d.0 -= 1;
                d.1 -= n;
                if d.0 == 0 {
                    self.domains.remove(&v);
                }
            }
        }
        if let Some((v, n)) = now {
            let d = self.domains.entry(v).or_insert((0, 0));
            d.0 += 1;
            d.1 += n;
        }
        self.per_node[ix] = now;
    }
}

/// Node slot `ix`'s domain and matching pods, if it is one of the cluster's nodes with the key.
fn contribution(
    cache: &ClusterCache,
    ns: Sym,
    c: &SpreadConstraint,
    ix: u32,
) -> Option<(Sym, i64)> {
    if cache.rank.get(ix as usize).is_none_or(|&r| r == u32::MAX) {
        return None;
    }
    let node = cache.nodes.get(ix as usize)?;
    let value = node.labels.get(c.key)?;
    let i = &cache.interner;
    let matching = node
        .pods
        .iter()
        .filter_map(|&p| cache.pod_slot(p))
        .filter(|s| !s.info.terminating && s.info.ns == ns && c.selector.matches(&s.info.labels, i))
        .count() as i64;
    Some((value, matching))
}
