//! Per-decision pod state (`PreFilter`): everything about the pod and its relation to the cluster
//! that does not depend on the candidate node, computed once per decision.
//!
//! It sits below both the engine (which fills it) and the predicates and priorities (which read
//! it), so that neither reaches into the other: the predicates' `prepare` functions fill the
//! state types declared here.

mod states;

pub(crate) use states::{AffinityState, BindingState, SpreadState, Unbound, ZoneState};

use crate::cache::ClusterCache;
use crate::intern::{Interner, Sym};
use crate::node_info::AttachKind;
use crate::pod_info::PodInfo;

/// Reusable per-node buffers, indexed by node slot.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Inter-pod affinity flags per node slot.
    pub aff_flags: Vec<u8>,
    /// Bitmask of own affinity terms satisfied per node slot.
    pub aff_sat: Vec<u64>,
    /// Node slots with a non-zero `aff_flags` entry.
    pub flagged: Vec<u32>,
}

impl Scratch {
    /// Clears the inter-pod affinity buffers for `n` node slots.
    pub(crate) fn reset(&mut self, n: usize, affinity_terms: bool) {
        if self.aff_flags.len() != n {
            self.aff_flags.clear();
            self.aff_flags.resize(n, 0);
        } else {
            for &ix in &self.flagged {
                self.aff_flags[ix as usize] = 0;
            }
        }
        self.flagged.clear();
        self.aff_sat.clear();
        if affinity_terms {
            self.aff_sat.resize(n, 0);
        }
    }
}

/// Everything the per-node checks read, computed once per decision.
pub(crate) struct PodCtx<'a> {
    /// The pod.
    pub pod: &'a PodInfo,
    /// The cache.
    pub cache: &'a ClusterCache,
    /// Symbols.
    pub i: &'a Interner,
    /// Inter-pod affinity state.
    pub affinity: AffinityState<'a>,
    /// Volume zone constraints of bound claims.
    pub zones: ZoneState,
    /// Volume binding state.
    pub binding: BindingState<'a>,
    /// The pod's attachable volume ids.
    pub attach: Vec<(AttachKind, Sym, Sym)>,
    /// `KUBE_MAX_PD_VOLS` override.
    pub max_pd_vols: Option<i64>,
    /// Resolved label arguments of labelsPresence / labelPreference / serviceAntiAffinity entries.
    pub label_args: Vec<Vec<Option<Sym>>>,
    /// hardPodAffinitySymmetricWeight.
    pub hard_weight: i64,
    /// CSI drivers of the pod's volumes with their allocatable limit resource names.
    pub csi_drivers: Vec<Sym>,
    /// Limit resource symbol per CSI driver (parallel to `csi_drivers`).
    pub csi_limits: Vec<Option<Sym>>,
    /// serviceAffinity entries: the (key, value) pairs a node must carry; None = any node.
    pub service_affinity: Vec<Vec<(Sym, Option<Sym>)>>,
    /// PodTopologySpread's filter state.
    pub spread: SpreadState,
    /// PodTopologySpread's arguments (default constraints).
    pub spread_args: &'a crate::topology_spread::TopologySpreadArgs,
    /// PodTopologySpread's counts kept across decisions (its score reads them).
    pub spread_memo: &'a std::sync::Mutex<crate::spread_domains::SpreadMemo>,
    /// The profile's plugin arguments (none under a policy file).
    pub plugin_args: &'a crate::plugin_args::PluginArgs,
    /// The priorities' scale: 0..10 under a policy file, 0..100 under a profile.
    pub scale: crate::score_scale::ScoreScale,
}

impl PodCtx<'_> {
    /// The allocatable resource naming the attach limit of a CSI driver.
    pub(crate) fn csi_limit_key(&self, driver: Sym) -> Option<Sym> {
        self.csi_drivers
            .iter()
            .position(|d| *d == driver)
            .and_then(|i| self.csi_limits[i])
    }
}
