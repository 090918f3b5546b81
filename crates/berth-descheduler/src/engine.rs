//! One descheduling pass: the node set, the pods on each node, the per-node eviction cap, and the
//! strategies in upstream's fixed order (control-loops §1.1–1.5).

use crate::evictable::{evictable, evictable_in_context, EVICT_ANNOTATION};
use crate::model::{NodeState, PodState};
use crate::policy::{EvictorArgs, Policy};
use crate::Strategy;
use berth_core::labels::Selector;
use serde::Serialize;

/// What the command line adds to the policy.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only nodes matching this are considered (`--node-selector`; the policy's otherwise).
    pub node_selector: Option<Selector>,
    /// At most this many evictions per node in one pass, all strategies together
    /// (`--max-pods-to-evict-per-node`; 0 or absent: the policy's, else no limit).
    pub max_pods_to_evict_per_node: Option<u32>,
    /// Pods with `emptyDir`/`hostPath` volumes may be evicted (`--evict-local-storage-pods`).
    pub evict_local_storage_pods: bool,
    /// The time of the pass, seconds since the epoch: what PodLifeTime, RemoveFailedPods'
    /// `minPodLifetimeSeconds` and the evictor's `minPodAge` measure ages against. Without it
    /// (a caller with no clock) those treat every pod as too young.
    pub now: Option<i64>,
}

/// One eviction the pass chose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Eviction {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The node it runs on.
    pub node: String,
    /// The strategy that chose it.
    #[serde(serialize_with = "strategy_name")]
    pub strategy: Strategy,
    /// Why, in words.
    pub reason: String,
}

/// Something a strategy decided not to do, or a setting it skipped, in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    /// The strategy, or `None` for the pass as a whole.
    #[serde(serialize_with = "opt_strategy_name")]
    pub strategy: Option<Strategy>,
    /// What it says.
    pub message: String,
}

/// The outcome of [`plan`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct Plan {
    /// The evictions, in the order to carry them out.
    pub evictions: Vec<Eviction>,
    /// What strategies decided not to do, and why.
    pub notes: Vec<Note>,
    /// The strategies that ran.
    #[serde(serialize_with = "strategy_names")]
    pub strategies: Vec<Strategy>,
    /// Nodes considered (ready, selected).
    pub nodes: usize,
    /// Pods considered (bound to a considered node, not finished).
    pub pods_considered: usize,
}

fn strategy_name<S: serde::Serializer>(s: &Strategy, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.name())
}
fn opt_strategy_name<S: serde::Serializer>(
    s: &Option<Strategy>,
    ser: S,
) -> Result<S::Ok, S::Error> {
    match s {
        Some(s) => ser.serialize_str(s.name()),
        None => ser.serialize_none(),
    }
}
fn strategy_names<S: serde::Serializer>(s: &[Strategy], ser: S) -> Result<S::Ok, S::Error> {
    ser.collect_seq(s.iter().map(|s| s.name()))
}

/// The state of one pass, shared by the strategies.
pub(crate) struct Pass<'a> {
    /// Ready, selected nodes, by name.
    pub nodes: Vec<&'a NodeState>,
    /// All pods of the input.
    pub pods: &'a [PodState],
    /// Per node (same index as `nodes`), its pods' indices, by (namespace, name).
    pub on_node: Vec<Vec<usize>>,
    /// Per node, its `Failed` pods' indices, by (namespace, name) (RemoveFailedPods' only).
    pub failed_on_node: Vec<Vec<usize>>,
    /// The time of the pass (see [`Options::now`]).
    pub now: Option<i64>,
    /// The evictor's `nodeFit`: an eviction needs another node that would take the pod.
    node_fit: bool,
    /// Per pod: may be evicted.
    pub evictable: Vec<bool>,
    /// Per pod: chosen for eviction earlier in this pass.
    pub evicted: Vec<bool>,
    per_node: Vec<u32>,
    cap: Option<u32>,
    pub plan: Plan,
}

impl<'a> Pass<'a> {
    pub(crate) fn new(
        nodes: &'a [NodeState],
        pods: &'a [PodState],
        policy: &Policy,
        o: &Options,
    ) -> Self {
        let policy_selector = policy
            .node_selector
            .as_deref()
            .and_then(|s| Selector::parse(s).ok());
        let selector = o.node_selector.as_ref().or(policy_selector.as_ref());
        let mut chosen: Vec<&NodeState> = nodes
            .iter()
            .filter(|n| n.ready)
            .filter(|n| {
                selector.is_none_or(|s| {
                    let labels = n.labels();
                    s.matches_fn(|k| labels.get(k).map(String::as_str))
                })
            })
            .collect();
        chosen.sort_by(|a, b| a.name.cmp(&b.name));
        chosen.dedup_by(|a, b| a.name == b.name);
        let index: std::collections::HashMap<&str, usize> = chosen
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut on_node = vec![Vec::new(); chosen.len()];
        let mut failed_on_node = vec![Vec::new(); chosen.len()];
        for (i, p) in pods.iter().enumerate() {
            let Some(&n) = index.get(p.node.as_str()) else {
                continue;
            };
            if p.phase() == "Failed" {
                failed_on_node[n].push(i);
            } else if !p.is_terminal() {
                on_node[n].push(i);
            }
        }
        for list in on_node.iter_mut().chain(failed_on_node.iter_mut()) {
            list.sort_by(|&a, &b| {
                (&pods[a].namespace, &pods[a].name).cmp(&(&pods[b].namespace, &pods[b].name))
            });
        }
        let args = EvictorArgs {
            evict_local_storage_pods: policy.evictor.evict_local_storage_pods
                || o.evict_local_storage_pods,
            ..policy.evictor.clone()
        };
        // `minReplicas` counts the pods of each owner (by uid) across the cluster.
        let mut owner_pods: std::collections::HashMap<&str, u32> = Default::default();
        for p in pods {
            if let [owner] = p.pod.metadata.owner_references.as_slice() {
                *owner_pods.entry(owner.uid.as_str()).or_default() += 1;
            }
        }
        let now = o.now.unwrap_or(0);
        let evictable = pods
            .iter()
            .map(|p| {
                evictable(p, &args).is_ok()
                    && (p.annotation(EVICT_ANNOTATION).is_some()
                        || evictable_in_context(p, &args, &owner_pods, now).is_ok())
            })
            .collect();
        let cap = o
            .max_pods_to_evict_per_node
            .filter(|&n| n > 0)
            .or(policy.max_pods_to_evict_per_node.filter(|&n| n > 0));
        let plan = Plan {
            nodes: chosen.len(),
            pods_considered: on_node.iter().map(Vec::len).sum(),
            ..Plan::default()
        };
        Pass {
            per_node: vec![0; chosen.len()],
            nodes: chosen,
            pods,
            on_node,
            failed_on_node,
            now: o.now,
            node_fit: args.node_fit,
            evictable,
            evicted: vec![false; pods.len()],
            cap,
            plan,
        }
    }

    /// The pods still on node `n` (not chosen earlier in this pass).
    pub fn live(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        self.on_node[n]
            .iter()
            .copied()
            .filter(|&p| !self.evicted[p])
    }

    /// The pods on node `n` this pass may still evict, in list order.
    pub fn candidates(&self, n: usize) -> Vec<usize> {
        self.live(n).filter(|&p| self.evictable[p]).collect()
    }

    /// False once node `n` has had its share of evictions this pass.
    pub fn room_on(&self, n: usize) -> bool {
        self.cap.is_none_or(|cap| self.per_node[n] < cap)
    }

    /// The pods still on node `m`, as the scheduler's `fits` takes them.
    pub fn pods_on(&self, m: usize) -> Vec<berth_scheduler::model::Pod> {
        self.live(m).map(|p| self.pods[p].pod.clone()).collect()
    }

    /// The first schedulable node among `among`, other than `n`, that pod `p` fits next to
    /// that node's pods (upstream's `PodFitsAnyOtherNode`).
    pub fn fits_elsewhere(&self, p: usize, n: usize, among: &[usize]) -> Option<usize> {
        let mut unbound = self.pods[p].pod.clone();
        unbound.spec.node_name.clear();
        among.iter().copied().find(|&m| {
            m != n
                && !self.nodes[m].node.spec.unschedulable
                && berth_scheduler::fits(&unbound, &self.nodes[m].node, &self.pods_on(m)).fits()
        })
    }

    /// Chooses pod `p` on node `n`; returns false (and chooses nothing) when the node is at its
    /// cap, or, with the evictor's `nodeFit`, when no other node would take the pod.
    pub fn evict(&mut self, p: usize, n: usize, strategy: Strategy, reason: String) -> bool {
        if !self.room_on(n) || self.evicted[p] {
            return false;
        }
        if self.node_fit {
            let all: Vec<usize> = (0..self.nodes.len()).collect();
            if self.fits_elsewhere(p, n, &all).is_none() {
                let key = self.pods[p].key();
                self.note(
                    Some(strategy),
                    format!("{key} does not fit on any other node (nodeFit); not evicted"),
                );
                return false;
            }
        }
        self.per_node[n] += 1;
        self.evicted[p] = true;
        let pod = &self.pods[p];
        self.plan.evictions.push(Eviction {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            node: self.nodes[n].name.clone(),
            strategy,
            reason,
        });
        true
    }

    /// Records something a strategy decided not to do.
    pub fn note(&mut self, strategy: Option<Strategy>, message: impl Into<String>) {
        self.plan.notes.push(Note {
            strategy,
            message: message.into(),
        });
    }
}
