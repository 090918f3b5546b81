//! `NodeInfo`: a node's compiled static part plus the aggregates of the pods placed on it.

use crate::compiled::{CTaint, Effect, Labels, Resources};
use crate::intern::{Interner, Sym};
use crate::model::Node;
use crate::pod_info::{CVolume, HostPort};

/// Well-known zone label.
pub const ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
/// Well-known region label.
pub const REGION_LABEL: &str = "failure-domain.beta.kubernetes.io/region";
/// Prefer-avoid-pods annotation.
pub const PREFER_AVOID_PODS: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// Node conditions that matter to the predicates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Conditions {
    /// Ready is present and not True.
    pub not_ready: bool,
    /// OutOfDisk present and not False.
    pub out_of_disk: bool,
    /// NetworkUnavailable present and not False.
    pub network_unavailable: bool,
    /// MemoryPressure True.
    pub memory_pressure: bool,
    /// DiskPressure True.
    pub disk_pressure: bool,
    /// PIDPressure True.
    pub pid_pressure: bool,
}

/// Volume kinds counted by the max-volume-count predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttachKind {
    /// AWS EBS.
    Ebs,
    /// GCE PD.
    Gce,
    /// Azure Disk.
    Azure,
    /// CSI (per driver).
    Csi,
    /// Unresolvable claim: counts for every kind.
    Any,
}

/// An attached volume id on a node with its multiplicity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Attached {
    /// Kind.
    pub kind: AttachKind,
    /// CSI driver (EMPTY otherwise).
    pub driver: Sym,
    /// Volume id.
    pub id: Sym,
    /// Pods using it.
    pub count: u32,
}

/// A node and what is placed on it.
#[derive(Debug, Clone, Default)]
pub struct NodeInfo {
    /// Name.
    pub name: String,
    /// Name symbol.
    pub name_sym: Sym,
    /// The node object exists (false: placeholder for pods bound to an unknown node).
    pub exists: bool,
    /// Labels.
    pub labels: Labels,
    /// Topology domain id of each label (parallel to `labels`).
    pub domains: Vec<u32>,
    /// Taints.
    pub taints: Vec<CTaint>,
    /// Has NoSchedule or NoExecute taints.
    pub hard_taints: bool,
    /// Has PreferNoSchedule taints.
    pub soft_taints: bool,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// Conditions.
    pub conditions: Conditions,
    /// Allocatable.
    pub alloc: Resources,
    /// Allocatable pod count.
    pub alloc_pods: i64,
    /// Images (name, size) sorted by name.
    pub images: Vec<(Sym, i64)>,
    /// Controllers (kind, uid) the node asks to avoid.
    pub avoid: Vec<(String, String)>,
    /// `beta.kubernetes.io/instance-type`.
    pub instance_type: String,
    /// Zone key for spreading (region ":\0:" zone), EMPTY if neither label.
    pub zone_key: Sym,
    /// Requested resources of the pods on the node (1.11 accounting).
    pub requested: Resources,
    /// Non-zero cpu/memory requests of the pods on the node.
    pub nonzero: (i64, i64),
    /// Number of pods.
    pub pod_count: i64,
    /// Used host ports (multiset).
    pub ports: Vec<HostPort>,
    /// Disk volumes of pods (multiset) for NoDiskConflict.
    pub disks: Vec<CVolume>,
    /// Attached volume ids for the count predicates.
    pub attached: Vec<Attached>,
    /// Pod slots on the node.
    pub pods: Vec<u32>,
    /// Bumped on every change.
    pub generation: u64,
}

impl NodeInfo {
    /// Replaces the static part from a Node object.
    pub fn set_node(&mut self, node: &Node, i: &mut Interner) {
        self.name = node.metadata.name.clone();
        self.name_sym = i.intern(&self.name);
        self.exists = true;
        self.labels = Labels::compile(&node.metadata.labels, i);
        self.taints = node
            .spec
            .taints
            .iter()
            .map(|t| CTaint::compile(t, i))
            .collect();
        self.hard_taints = self
            .taints
            .iter()
            .any(|t| matches!(t.effect, Effect::NoSchedule | Effect::NoExecute));
        self.soft_taints = self
            .taints
            .iter()
            .any(|t| t.effect == Effect::PreferNoSchedule);
        self.unschedulable = node.spec.unschedulable;
        let mut c = Conditions::default();
        for cond in &node.status.conditions {
            let s = cond.status.as_str();
            match cond.type_.as_str() {
                "Ready" => c.not_ready = s != "True",
                "OutOfDisk" => c.out_of_disk = s != "False",
                "NetworkUnavailable" => c.network_unavailable = s != "False",
                "MemoryPressure" => c.memory_pressure = s == "True",
                "DiskPressure" => c.disk_pressure = s == "True",
                "PIDPressure" => c.pid_pressure = s == "True",
                _ => {}
            }
        }
        self.conditions = c;
        let src = if node.status.allocatable.is_empty() {
            &node.status.capacity
        } else {
            &node.status.allocatable
        };
        let (alloc, pods) = Resources::compile(src, i);
        self.alloc = alloc;
        self.alloc_pods = pods.unwrap_or(0);
        let mut images = Vec::new();
        for img in &node.status.images {
            for n in &img.names {
                images.push((i.intern(n), img.size_bytes));
            }
        }
        images.sort_unstable();
        images.dedup_by_key(|(n, _)| *n);
        self.images = images;
        self.avoid = parse_avoid(
            node.metadata
                .annotations
                .get(PREFER_AVOID_PODS)
                .map(|s| s.as_str()),
        );
        self.instance_type = node
            .metadata
            .labels
            .get("beta.kubernetes.io/instance-type")
            .cloned()
            .unwrap_or_default();
        let region = node.metadata.labels.get(REGION_LABEL);
        let zone = node.metadata.labels.get(ZONE_LABEL);
        self.zone_key = if region.is_none() && zone.is_none() {
            0
        } else {
            i.intern(&format!(
                "{}:\0:{}",
                region.map_or("", |s| s),
                zone.map_or("", |s| s)
            ))
        };
        self.generation += 1;
    }

    /// Image size on this node (0 when absent).
    #[inline]
    pub fn image_size(&self, name: Sym) -> i64 {
        self.images
            .binary_search_by_key(&name, |(n, _)| *n)
            .map_or(0, |ix| self.images[ix].1)
    }
}

fn parse_avoid(text: Option<&str>) -> Vec<(String, String)> {
    let Some(text) = text else { return Vec::new() };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(list) = v.get("preferAvoidPods").and_then(|l| l.as_array()) {
        for e in list {
            let c = &e["podSignature"]["podController"];
            if let (Some(k), Some(u)) = (c["kind"].as_str(), c["uid"].as_str()) {
                out.push((k.to_string(), u.to_string()));
            }
        }
    }
    out
}

/// Node flag bits in [`NodeHot::flags`].
pub(crate) mod flag {
    pub const MISSING: u32 = 1;
    pub const NOT_READY: u32 = 2;
    pub const OUT_OF_DISK: u32 = 4;
    pub const NETWORK: u32 = 8;
    pub const UNSCHEDULABLE: u32 = 16;
    pub const HARD_TAINTS: u32 = 32;
    pub const MEMORY_PRESSURE: u32 = 64;
    pub const DISK_PRESSURE: u32 = 128;
    pub const PID_PRESSURE: u32 = 256;
    pub const PORTS: u32 = 512;
}

/// The few numbers of a node the filter's fast path and the resource priorities read, kept in
/// one dense array indexed by node slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeHot {
    /// Allocatable millicores.
    pub alloc_cpu: i64,
    /// Allocatable memory.
    pub alloc_mem: i64,
    /// Allocatable ephemeral storage.
    pub alloc_eph: i64,
    /// Allocatable pods.
    pub alloc_pods: i64,
    /// Requested millicores.
    pub req_cpu: i64,
    /// Requested memory.
    pub req_mem: i64,
    /// Requested ephemeral storage.
    pub req_eph: i64,
    /// Pods on the node.
    pub pod_count: i64,
    /// Non-zero requested millicores.
    pub nz_cpu: i64,
    /// Non-zero requested memory.
    pub nz_mem: i64,
    /// `flag::*` bits.
    pub flags: u32,
}

impl NodeInfo {
    /// The hot summary of this node.
    pub fn hot(&self) -> NodeHot {
        let c = self.conditions;
        let mut f = 0;
        let mut set = |cond: bool, bit: u32| {
            if cond {
                f |= bit
            }
        };
        set(!self.exists, flag::MISSING);
        set(c.not_ready, flag::NOT_READY);
        set(c.out_of_disk, flag::OUT_OF_DISK);
        set(c.network_unavailable, flag::NETWORK);
        set(self.unschedulable, flag::UNSCHEDULABLE);
        set(self.hard_taints, flag::HARD_TAINTS);
        set(c.memory_pressure, flag::MEMORY_PRESSURE);
        set(c.disk_pressure, flag::DISK_PRESSURE);
        set(c.pid_pressure, flag::PID_PRESSURE);
        set(!self.ports.is_empty(), flag::PORTS);
        NodeHot {
            alloc_cpu: self.alloc.cpu,
            alloc_mem: self.alloc.memory,
            alloc_eph: self.alloc.ephemeral,
            alloc_pods: self.alloc_pods,
            req_cpu: self.requested.cpu,
            req_mem: self.requested.memory,
            req_eph: self.requested.ephemeral,
            pod_count: self.pod_count,
            nz_cpu: self.nonzero.0,
            nz_mem: self.nonzero.1,
            flags: f,
        }
    }
}
