//! The cluster cache: nodes, the pods placed on them, and the objects the predicates and
//! priorities read, kept up to date incrementally by the driver.
//!
//! Besides per-node aggregates (requested resources, ports, volumes, pod count) it keeps the
//! indexes that let a decision avoid scanning every pod of the cluster: pods by
//! (namespace, label key, value) with per-node counts, the distinct (anti-)affinity terms of
//! placed pods with per-node counts, and nodes by (label key, value).

mod dump;
mod objects;
mod pods;
mod query;

use crate::compiled::Selector;
use crate::events::{ClusterEvent, NodeChange};
use crate::intern::{FxMap, FxSet, Interner, Sym};
use crate::model::{Node, Pod};
use crate::node_info::NodeInfo;
use crate::pod_info::{PodInfo, Term};
use std::collections::{BTreeMap, HashMap};
use thiserror::Error;

pub use dump::CacheDump;
pub(crate) use objects::Workload;

/// Errors from cache updates.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CacheError {
    /// The object could not be decoded.
    #[error("cannot decode {kind}: {reason}")]
    Decode {
        /// Object kind.
        kind: &'static str,
        /// Decoder message.
        reason: String,
    },
    /// The pod is already in the cache (assume of a placed pod).
    #[error("pod {0} is already in the cache")]
    PodExists(String),
    /// The pod is not in the cache.
    #[error("pod {0} is not in the cache")]
    PodNotFound(String),
    /// The pod is in the cache but was not assumed.
    #[error("pod {0} was not assumed")]
    NotAssumed(String),
}

/// Pods indexed by one label pair, with per-node counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Posting {
    pub pods: FxSet<u32>,
    pub nodes: FxMap<u32, u32>,
}

/// Kind of an (anti-)affinity term carried by a placed pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TermKind {
    RequiredAnti,
    RequiredAffinity,
    PreferredAffinity,
    PreferredAnti,
}

/// A distinct term of placed pods and where its carriers are.
#[derive(Debug, Clone)]
pub(crate) struct ExistingTerm {
    pub kind: TermKind,
    pub weight: i64,
    pub term: Term,
    pub nodes: FxMap<u32, u32>,
    pub total: u32,
}

/// A pod held by the cache.
#[derive(Debug, Clone)]
pub(crate) struct PodSlot {
    pub info: PodInfo,
    pub node: u32,
    pub assumed: bool,
    pub seq: u64,
    pub terms: Vec<u32>,
    pub attach: Vec<(crate::node_info::AttachKind, Sym, Sym)>,
}

/// The scheduler's view of the cluster. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct ClusterCache {
    pub(crate) interner: Interner,
    pub(crate) nodes: Vec<NodeInfo>,
    node_by_name: HashMap<String, u32>,
    free_nodes: Vec<u32>,
    /// Existing nodes sorted by name: the order decisions visit nodes in.
    pub(crate) order: Vec<u32>,
    pub(crate) pods: Vec<Option<PodSlot>>,
    pod_by_key: HashMap<String, u32>,
    free_pods: Vec<u32>,
    pub(crate) postings: FxMap<(Sym, Sym, Sym), Posting>,
    pub(crate) ns_pods: FxMap<Sym, FxSet<u32>>,
    pub(crate) terms: Vec<ExistingTerm>,
    term_ids: HashMap<(TermKind, i64, Term), u32>,
    pub(crate) term_index: FxMap<(Sym, Sym), Vec<u32>>,
    pub(crate) generic_terms: Vec<u32>,
    /// Number of placed pods carrying each term kind (for fast skips).
    pub(crate) term_kind_pods: [usize; 4],
    pub(crate) topo: FxMap<(Sym, Sym), u32>,
    /// Topology domains: nodes sharing one (label key, value); indexed by `NodeInfo::domains`.
    pub(crate) domains: Vec<Vec<u32>>,
    free_domains: Vec<u32>,
    /// Per label key: number of topology domains with more than one node.
    pub(crate) key_shared_domains: FxMap<Sym, u32>,
    /// Per label key: number of nodes carrying it.
    pub(crate) key_nodes: FxMap<Sym, u32>,
    /// Nodes with PreferNoSchedule taints.
    pub(crate) soft_taint_nodes: usize,
    /// Per image name a node reports: the number of nodes reporting it (1.35's ImageLocality
    /// scales an image's size by the share of nodes that have it).
    pub(crate) image_nodes: FxMap<Sym, u32>,
    /// Compact per-node-slot data read by the filter's fast path.
    pub(crate) hot: Vec<crate::node_info::NodeHot>,
    /// Cache generation at which each slot's `hot` entry last changed.
    pub(crate) hot_gen: Vec<u64>,
    /// Slots whose `hot` entry changed, in order (truncated when long; see `log_epoch`).
    pub(crate) change_log: Vec<u32>,
    /// Bumped whenever `change_log` is truncated.
    pub(crate) log_epoch: u64,
    /// Bumped whenever `order` changes.
    pub(crate) order_epoch: u64,
    /// Position of each node slot in `order` (u32::MAX if absent).
    pub(crate) rank: Vec<u32>,
    pub(crate) services: BTreeMap<String, Workload>,
    pub(crate) controllers: BTreeMap<String, Workload>,
    pub(crate) pvs: HashMap<String, objects::CompiledPv>,
    pub(crate) pvcs: HashMap<String, crate::model::PersistentVolumeClaim>,
    pub(crate) classes: HashMap<String, objects::CompiledClass>,
    generation: u64,
    seq: u64,
}

impl ClusterCache {
    /// An empty cache.
    pub fn new() -> ClusterCache {
        ClusterCache::default()
    }

    /// Global generation: bumped on every change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of nodes (node objects present).
    pub fn node_count(&self) -> usize {
        self.order.len()
    }

    /// Number of pods held (bound and assumed).
    pub fn pod_count(&self) -> usize {
        self.pod_by_key.len()
    }

    /// The generation of a node's info, if the node exists.
    pub fn node_generation(&self, name: &str) -> Option<u64> {
        self.node_by_name
            .get(name)
            .map(|&ix| self.nodes[ix as usize].generation)
    }

    /// The compiled node, if present.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.node_by_name
            .get(name)
            .map(|&ix| &self.nodes[ix as usize])
            .filter(|n| n.exists)
    }

    /// The interner (for resolving symbols in explanations).
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    pub(crate) fn node_index(&self, name: &str) -> Option<u32> {
        self.node_by_name.get(name).copied()
    }

    /// Compiles a pod against this cache's interner (adds new label strings).
    pub fn compile_pod(&mut self, pod: &Pod) -> PodInfo {
        PodInfo::compile(pod, &mut self.interner)
    }

    /// Decodes and compiles a pod from Kubernetes JSON.
    pub fn compile_pod_json(&mut self, bytes: &[u8]) -> Result<PodInfo, CacheError> {
        let pod: Pod = serde_json::from_slice(bytes).map_err(|e| CacheError::Decode {
            kind: "Pod",
            reason: e.to_string(),
        })?;
        Ok(self.compile_pod(&pod))
    }

    fn bump(&mut self) {
        self.generation += 1;
    }

    pub(crate) fn refresh_hot(&mut self, ix: u32) {
        let ix = ix as usize;
        if self.hot.len() < self.nodes.len() {
            self.hot.resize(self.nodes.len(), Default::default());
        }
        if self.hot_gen.len() < self.nodes.len() {
            self.hot_gen.resize(self.nodes.len(), 0);
        }
        if let Some(n) = self.nodes.get(ix) {
            self.hot[ix] = n.hot();
            self.hot_gen[ix] = self.generation;
            self.change_log.push(ix as u32);
            if self.change_log.len() > 1 << 16 {
                self.change_log.clear();
                self.log_epoch += 1;
            }
        }
    }

    fn slot_for_node(&mut self, name: &str) -> u32 {
        if let Some(&ix) = self.node_by_name.get(name) {
            return ix;
        }
        let info = NodeInfo {
            name: name.to_string(),
            ..NodeInfo::default()
        };
        let ix = match self.free_nodes.pop() {
            Some(ix) => {
                self.nodes[ix as usize] = info;
                ix
            }
            None => {
                self.nodes.push(info);
                (self.nodes.len() - 1) as u32
            }
        };
        self.node_by_name.insert(name.to_string(), ix);
        ix
    }

    fn topo_update(&mut self, ix: u32, add: bool) {
        let labels = self.nodes[ix as usize].labels.0.clone();
        if add {
            let mut doms = Vec::with_capacity(labels.len());
            for (k, v) in labels {
                let id = match self.topo.get(&(k, v)) {
                    Some(&id) => id,
                    None => {
                        let id = match self.free_domains.pop() {
                            Some(id) => id,
                            None => {
                                self.domains.push(Vec::new());
                                (self.domains.len() - 1) as u32
                            }
                        };
                        self.topo.insert((k, v), id);
                        id
                    }
                };
                self.domains[id as usize].push(ix);
                if self.domains[id as usize].len() == 2 {
                    *self.key_shared_domains.entry(k).or_insert(0) += 1;
                }
                *self.key_nodes.entry(k).or_insert(0) += 1;
                doms.push(id);
            }
            self.nodes[ix as usize].domains = doms;
        } else {
            for (k, v) in labels {
                let Some(&id) = self.topo.get(&(k, v)) else {
                    continue;
                };
                let d = &mut self.domains[id as usize];
                let before = d.len();
                d.retain(|&n| n != ix);
                if before == 2 && d.len() == 1 {
                    if let Some(c) = self.key_shared_domains.get_mut(&k) {
                        *c -= 1;
                    }
                }
                if let Some(c) = self.key_nodes.get_mut(&k) {
                    *c = c.saturating_sub(1);
                }
                if d.is_empty() {
                    self.topo.remove(&(k, v));
                    self.free_domains.push(id);
                }
            }
            self.nodes[ix as usize].domains.clear();
        }
    }

    /// Counts the node's images in (or out of) `image_nodes`.
    fn images_update(&mut self, ix: u32, add: bool) {
        for &(name, _) in &self.nodes[ix as usize].images {
            if add {
                *self.image_nodes.entry(name).or_insert(0) += 1;
            } else if let Some(c) = self.image_nodes.get_mut(&name) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    self.image_nodes.remove(&name);
                }
            }
        }
    }

    fn order_insert(&mut self, ix: u32) {
        let name = &self.nodes[ix as usize].name;
        let nodes = &self.nodes;
        let pos = self
            .order
            .partition_point(|&o| nodes[o as usize].name.as_str() < name.as_str());
        self.order.insert(pos, ix);
        self.order_changed();
    }

    fn order_changed(&mut self) {
        self.order_epoch += 1;
        self.rank.clear();
        self.rank.resize(self.nodes.len(), u32::MAX);
        for (r, &ix) in self.order.iter().enumerate() {
            self.rank[ix as usize] = r as u32;
        }
    }

    /// Adds or replaces a node.
    pub fn upsert_node(&mut self, node: &Node) -> ClusterEvent {
        self.bump();
        let ix = self.slot_for_node(&node.metadata.name);
        let old = self.nodes[ix as usize].clone();
        if old.exists {
            self.topo_update(ix, false);
            self.images_update(ix, false);
        }
        self.nodes[ix as usize].set_node(node, &mut self.interner);
        self.topo_update(ix, true);
        self.images_update(ix, true);
        self.refresh_hot(ix);
        let soft = self.nodes[ix as usize].soft_taints;
        if soft != (old.exists && old.soft_taints) {
            if soft {
                self.soft_taint_nodes += 1;
            } else {
                self.soft_taint_nodes -= 1;
            }
        }
        if !old.exists {
            self.order_insert(ix);
            return ClusterEvent::NodeAdded;
        }
        let new = &self.nodes[ix as usize];
        ClusterEvent::NodeChanged(NodeChange {
            labels: old.labels != new.labels,
            taints: old.taints != new.taints,
            allocatable: old.alloc != new.alloc || old.alloc_pods != new.alloc_pods,
            conditions: old.conditions != new.conditions,
            unschedulable: old.unschedulable != new.unschedulable,
        })
    }

    /// Adds or replaces a node from Kubernetes JSON.
    pub fn upsert_node_json(&mut self, bytes: &[u8]) -> Result<ClusterEvent, CacheError> {
        let node: Node = serde_json::from_slice(bytes).map_err(|e| CacheError::Decode {
            kind: "Node",
            reason: e.to_string(),
        })?;
        Ok(self.upsert_node(&node))
    }

    /// Removes a node. Pods bound to it stay accounted on a placeholder until they are removed.
    pub fn remove_node(&mut self, name: &str) -> Option<ClusterEvent> {
        let ix = *self.node_by_name.get(name)?;
        if !self.nodes[ix as usize].exists {
            return None;
        }
        self.bump();
        self.topo_update(ix, false);
        self.images_update(ix, false);
        self.order.retain(|&o| o != ix);
        self.order_changed();
        if self.nodes[ix as usize].soft_taints {
            self.soft_taint_nodes -= 1;
        }
        let n = &mut self.nodes[ix as usize];
        let pods = std::mem::take(&mut n.pods);
        *n = NodeInfo {
            name: name.to_string(),
            pods,
            generation: n.generation + 1,
            ..NodeInfo::default()
        };
        self.release_node_if_empty(ix);
        self.refresh_hot(ix);
        Some(ClusterEvent::NodeDeleted)
    }

    fn release_node_if_empty(&mut self, ix: u32) {
        let n = &self.nodes[ix as usize];
        if !n.exists && n.pods.is_empty() {
            self.node_by_name.remove(&n.name);
            self.nodes[ix as usize] = NodeInfo::default();
            self.free_nodes.push(ix);
        }
    }

    pub(crate) fn pod_slot(&self, ix: u32) -> Option<&PodSlot> {
        self.pods.get(ix as usize).and_then(|p| p.as_ref())
    }

    /// Services in a namespace whose selector matches the pod.
    pub(crate) fn matching_services<'a>(
        &'a self,
        pod: &'a PodInfo,
    ) -> impl Iterator<Item = &'a Selector> + 'a {
        self.services
            .values()
            .filter(move |w| w.ns == pod.ns && w.selector.matches(&pod.labels, &self.interner))
            .map(|w| &w.selector)
    }
}
