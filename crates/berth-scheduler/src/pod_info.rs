//! `PodInfo`: a pod compiled once into the form every predicate and priority reads.

use crate::compiled::{CToleration, Labels, NodeTerm, Resources, Selector};
use crate::intern::{Interner, Sym};
use crate::model::{Container, Pod, PodAffinityTerm};
use std::collections::BTreeMap;

/// Default cpu request (millicores) used by priorities for containers without one.
pub const DEFAULT_MILLI_CPU: i64 = 100;
/// Default memory request (bytes) used by priorities for containers without one.
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// A compiled pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Term {
    /// Namespaces the term selects in (resolved: never empty).
    pub namespaces: Vec<Sym>,
    /// Pod selector.
    pub selector: Selector,
    /// Topology key (EMPTY = none).
    pub topology_key: Sym,
}

impl Term {
    fn compile(t: &PodAffinityTerm, own_ns: Sym, i: &mut Interner) -> Term {
        let mut namespaces: Vec<Sym> = t.namespaces.iter().map(|n| i.intern(n)).collect();
        if namespaces.is_empty() {
            namespaces.push(own_ns);
        }
        namespaces.sort_unstable();
        namespaces.dedup();
        Term {
            namespaces,
            selector: Selector::compile(t.label_selector.as_ref(), i),
            topology_key: i.intern(&t.topology_key),
        }
    }
    /// True if a pod (namespace, labels) matches the term.
    #[inline]
    pub fn matches(&self, ns: Sym, labels: &Labels, i: &Interner) -> bool {
        self.namespaces.contains(&ns) && self.selector.matches(labels, i)
    }
}

/// A host port: (ip, protocol, port); ip EMPTY stands for `0.0.0.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    /// Host IP (EMPTY = `0.0.0.0`).
    pub ip: Sym,
    /// Protocol symbol.
    pub proto: Sym,
    /// Port.
    pub port: i32,
}

/// A compiled volume source, as the disk and volume predicates need it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CVolume {
    /// GCE PD.
    Gce { pd: Sym, ro: bool },
    /// AWS EBS.
    Ebs { id: Sym, ro: bool },
    /// Azure disk.
    Azure { disk: Sym },
    /// Ceph RBD.
    Rbd {
        mons: Vec<Sym>,
        pool: Sym,
        image: Sym,
        ro: bool,
    },
    /// iSCSI.
    Iscsi { iqn: Sym, ro: bool },
    /// CSI inline volume.
    Csi { driver: Sym, handle: Sym },
    /// A claim (resolved against the cache when needed).
    Pvc { claim: String },
}

/// A pod compiled for scheduling. Built by [`crate::ClusterCache::compile_pod`].
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// `namespace/name`.
    pub key: String,
    /// Name.
    pub name: String,
    /// Namespace (defaulted).
    pub namespace: String,
    /// Namespace symbol.
    pub ns: Sym,
    /// Uid.
    pub uid: String,
    /// Labels.
    pub labels: Labels,
    /// `spec.nodeName`.
    pub node_name: String,
    /// Priority (0 when unset).
    pub priority: i32,
    /// Request as predicates see it: upstream's `PodRequests` (see [`pod_request`]).
    pub request: Resources,
    /// Request as node accounting sees it: regular and sidecar containers plus the overhead
    /// (non-restartable init containers are left out, the 1.11 rule).
    pub container_request: Resources,
    /// Non-zero cpu/memory request used by priorities.
    pub nonzero: (i64, i64),
    /// BestEffort QoS.
    pub best_effort: bool,
    /// Wanted host ports.
    pub host_ports: Vec<HostPort>,
    /// `spec.nodeSelector`.
    pub node_selector: Vec<(Sym, Sym)>,
    /// Required node affinity terms (None = no constraint).
    pub required_node_terms: Option<Vec<NodeTerm>>,
    /// The profile's NodeAffinity `addedAffinity` required terms (None = none): checked before
    /// the pod's own, with their own reason, and not part of the pod's affinity elsewhere
    /// (topology spread's `nodeAffinityPolicy` counts by the pod's own, as upstream).
    pub enforced_node_terms: Option<Vec<NodeTerm>>,
    /// Preferred node affinity terms with weights.
    pub preferred_node_terms: Vec<(i64, NodeTerm)>,
    /// Tolerations.
    pub tolerations: Vec<CToleration>,
    /// Required pod affinity terms.
    pub affinity: Vec<Term>,
    /// Required pod anti-affinity terms.
    pub anti_affinity: Vec<Term>,
    /// Preferred pod affinity terms.
    pub preferred_affinity: Vec<(i64, Term)>,
    /// Preferred pod anti-affinity terms.
    pub preferred_anti_affinity: Vec<(i64, Term)>,
    /// Volumes.
    pub volumes: Vec<CVolume>,
    /// Container images (regular containers).
    pub images: Vec<Sym>,
    /// Init container images (1.35's ImageLocality counts them beside the regular ones).
    pub init_images: Vec<Sym>,
    /// Controller (kind, uid).
    pub controller: Option<(String, String)>,
    /// Has a deletion timestamp.
    pub terminating: bool,
    /// Succeeded or Failed: not counted on nodes.
    pub finished: bool,
    /// Nominated node from status.
    pub nominated_node: String,
    /// `preemptionPolicy: Never`: the pod waits instead of preempting.
    pub preempt_never: bool,
    /// `status.startTime` as Unix seconds (None before the kubelet starts it, or unparsable).
    pub start: Option<i64>,
    /// `spec.topologySpreadConstraints`, compiled (empty for most pods: they pay nothing).
    pub spread: Vec<crate::topology_spread::SpreadConstraint>,
    /// `spec.schedulingGates` is not empty: the pod waits, no attempt is made.
    pub gated: bool,
}

fn sum_containers(cs: &[Container], i: &mut Interner) -> Resources {
    let mut r = Resources::default();
    for c in cs {
        r.add(&Resources::compile(&c.resources.requests, i).0, 1);
    }
    r
}

/// An init container with `restartPolicy: Always` (a sidecar): it keeps running next to the
/// regular containers.
fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The pod's request as upstream's resource helpers (`PodRequests`) compute it, and the request
/// node accounting keeps for a placed pod.
///
/// Regular containers and sidecars run together, so they are summed. Init containers run one
/// at a time, each next to the sidecars started before it, so the pod needs the largest of
/// those moments; the request is the larger of that and the running sum, plus `spec.overhead`.
/// Example (upstream's): sidecar S {cpu 1}, init I {cpu 2}, container C {cpu 1}: running
/// C+S = 2, init moment I+S = 3, request 3 (plus overhead).
///
/// The second value is what a placed pod adds to its node: the running sum plus the overhead
/// (the 1.11 rule leaves init containers out of node accounting; sidecars and the overhead are
/// newer fields and count).
pub(crate) fn pod_request(
    spec: &crate::model::PodSpec,
    i: &mut Interner,
) -> (Resources, Resources) {
    let mut running = sum_containers(&spec.containers, i);
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for c in &spec.init_containers {
        let r = Resources::compile(&c.resources.requests, i).0;
        let moment = if is_sidecar(c) {
            running.add(&r, 1);
            sidecars.add(&r, 1);
            sidecars.clone()
        } else {
            let mut m = r;
            m.add(&sidecars, 1);
            m
        };
        init_peak.max_with(&moment);
    }
    let mut request = running.clone();
    request.max_with(&init_peak);
    if !spec.overhead.is_empty() {
        let o = Resources::compile(&spec.overhead, i).0;
        request.add(&o, 1);
        running.add(&o, 1);
    }
    (request, running)
}

fn is_positive(map: &BTreeMap<String, crate::model::Quantity>, name: &str) -> bool {
    map.get(name)
        .and_then(|q| crate::quantity::ParsedQuantity::parse(&q.text()).ok())
        .is_some_and(|q| q.is_positive())
}

/// Unix seconds of an RFC 3339 time (`2024-01-02T03:04:05Z`, fraction and offset allowed).
/// Hand-rolled because the pure engine does not depend on chrono; metav1.Time has second
/// precision, so a fraction is dropped.
pub(crate) fn unix_seconds(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0')))
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    if sep(i, b".") {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(c @ (b'+' | b'-')) if i + 6 == b.len() && sep(i + 3, b":") => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if *c == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    // days from the civil date (proleptic Gregorian), after Howard Hinnant's algorithm
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

impl PodInfo {
    /// Compiles a pod.
    pub fn compile(pod: &Pod, i: &mut Interner) -> PodInfo {
        let namespace = pod.metadata.namespace_or_default().to_string();
        let ns = i.intern(&namespace);
        let spec = &pod.spec;
        let (request, container_request) = pod_request(spec, i);
        let mut nonzero = (0, 0);
        let sidecars = spec.init_containers.iter().filter(|c| is_sidecar(c));
        for c in spec.containers.iter().chain(sidecars) {
            let r = Resources::compile(&c.resources.requests, i).0;
            nonzero.0 += if c.resources.requests.contains_key("cpu") {
                r.cpu
            } else {
                DEFAULT_MILLI_CPU
            };
            nonzero.1 += if c.resources.requests.contains_key("memory") {
                r.memory
            } else {
                DEFAULT_MEMORY
            };
        }
        if !spec.overhead.is_empty() {
            let o = Resources::compile(&spec.overhead, i).0;
            nonzero.0 += o.cpu;
            nonzero.1 += o.memory;
        }
        let best_effort = spec
            .containers
            .iter()
            .chain(&spec.init_containers)
            .all(|c| {
                let r = &c.resources;
                !["cpu", "memory"]
                    .iter()
                    .any(|n| is_positive(&r.requests, n) || is_positive(&r.limits, n))
            });
        let mut host_ports = Vec::new();
        for c in &spec.containers {
            for p in &c.ports {
                if p.host_port > 0 {
                    let ip = if p.host_ip.is_empty() || p.host_ip == "0.0.0.0" {
                        0
                    } else {
                        i.intern(&p.host_ip)
                    };
                    let proto = i.intern(if p.protocol.is_empty() {
                        "TCP"
                    } else {
                        &p.protocol
                    });
                    host_ports.push(HostPort {
                        ip,
                        proto,
                        port: p.host_port,
                    });
                }
            }
        }
        let node_selector = Labels::compile(&spec.node_selector, i).0;
        let aff = spec.affinity.as_ref();
        let na = aff.and_then(|a| a.node_affinity.as_ref());
        let required_node_terms = na
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|s| {
                s.node_selector_terms
                    .iter()
                    .map(|t| NodeTerm::compile(t, i))
                    .collect()
            });
        let preferred_node_terms = na
            .map(|n| {
                n.preferred_during_scheduling_ignored_during_execution
                    .iter()
                    .filter(|t| t.weight != 0)
                    .map(|t| (t.weight as i64, NodeTerm::compile(&t.preference, i)))
                    .collect()
            })
            .unwrap_or_default();
        let pa = aff.and_then(|a| a.pod_affinity.as_ref());
        let paa = aff.and_then(|a| a.pod_anti_affinity.as_ref());
        let req = |p: Option<&crate::model::PodAffinity>, i: &mut Interner| -> Vec<Term> {
            p.map(|p| {
                p.required_during_scheduling_ignored_during_execution
                    .iter()
                    .map(|t| Term::compile(t, ns, i))
                    .collect()
            })
            .unwrap_or_default()
        };
        let pref = |p: Option<&crate::model::PodAffinity>, i: &mut Interner| -> Vec<(i64, Term)> {
            p.map(|p| {
                p.preferred_during_scheduling_ignored_during_execution
                    .iter()
                    .map(|w| (w.weight as i64, Term::compile(&w.pod_affinity_term, ns, i)))
                    .collect()
            })
            .unwrap_or_default()
        };
        let volumes = spec
            .volumes
            .iter()
            .filter_map(|v| {
                if let Some(g) = &v.gce_persistent_disk {
                    Some(CVolume::Gce {
                        pd: i.intern(&g.pd_name),
                        ro: g.read_only,
                    })
                } else if let Some(e) = &v.aws_elastic_block_store {
                    Some(CVolume::Ebs {
                        id: i.intern(&e.volume_id),
                        ro: e.read_only,
                    })
                } else if let Some(a) = &v.azure_disk {
                    Some(CVolume::Azure {
                        disk: i.intern(&a.disk_name),
                    })
                } else if let Some(r) = &v.rbd {
                    let mut mons: Vec<Sym> = r.monitors.iter().map(|m| i.intern(m)).collect();
                    mons.sort_unstable();
                    let pool = if r.pool.is_empty() { "rbd" } else { &r.pool };
                    Some(CVolume::Rbd {
                        mons,
                        pool: i.intern(pool),
                        image: i.intern(&r.image),
                        ro: r.read_only,
                    })
                } else if let Some(s) = &v.iscsi {
                    Some(CVolume::Iscsi {
                        iqn: i.intern(&s.iqn),
                        ro: s.read_only,
                    })
                } else if let Some(c) = &v.csi {
                    Some(CVolume::Csi {
                        driver: i.intern(&c.driver),
                        handle: i.intern(&c.volume_handle),
                    })
                } else {
                    v.persistent_volume_claim.as_ref().map(|c| {
                        i.intern(&format!("\0pvc:{}/{}", namespace, c.claim_name));
                        CVolume::Pvc {
                            claim: c.claim_name.clone(),
                        }
                    })
                }
            })
            .collect();
        PodInfo {
            key: format!("{}/{}", namespace, pod.metadata.name),
            name: pod.metadata.name.clone(),
            namespace,
            ns,
            uid: pod.metadata.uid.clone(),
            labels: Labels::compile(&pod.metadata.labels, i),
            node_name: spec.node_name.clone(),
            priority: spec.priority.unwrap_or(0),
            request,
            container_request,
            nonzero,
            best_effort,
            host_ports,
            node_selector,
            required_node_terms,
            enforced_node_terms: None,
            preferred_node_terms,
            tolerations: spec
                .tolerations
                .iter()
                .map(|t| CToleration::compile(t, i))
                .collect(),
            affinity: req(pa, i),
            anti_affinity: req(paa, i),
            preferred_affinity: pref(pa, i),
            preferred_anti_affinity: pref(paa, i),
            volumes,
            images: spec.containers.iter().map(|c| i.intern(&c.image)).collect(),
            init_images: spec
                .init_containers
                .iter()
                .map(|c| i.intern(&c.image))
                .collect(),
            controller: pod
                .metadata
                .controller_ref()
                .map(|o| (o.kind.clone(), o.uid.clone())),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            finished: matches!(pod.status.phase.as_str(), "Succeeded" | "Failed"),
            nominated_node: pod.status.nominated_node_name.clone(),
            preempt_never: spec.preemption_policy.as_deref() == Some("Never"),
            start: pod.status.start_time.as_deref().and_then(unix_seconds),
            spread: if spec.topology_spread_constraints.is_empty() {
                Vec::new()
            } else {
                let labels = Labels::compile(&pod.metadata.labels, i);
                spec.topology_spread_constraints
                    .iter()
                    .map(|c| crate::topology_spread::SpreadConstraint::compile(c, &labels, i))
                    .collect()
            },
            gated: !spec.scheduling_gates.is_empty(),
        }
    }

    /// True if the pod has `DoNotSchedule` topology spread constraints of its own.
    pub fn has_hard_spread(&self) -> bool {
        self.spread.iter().any(|c| c.hard)
    }

    /// True if the pod has any pod affinity or anti-affinity (required or preferred).
    pub fn has_pod_affinity(&self) -> bool {
        !(self.affinity.is_empty()
            && self.anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::pod;
    use serde_json::json;

    fn cpu(c: &str) -> serde_json::Value {
        json!({"resources": {"requests": {"cpu": c, "memory": "1Gi"}}})
    }

    fn container(name: &str, c: &str, sidecar: bool) -> serde_json::Value {
        let mut v = cpu(c);
        v["name"] = json!(name);
        if sidecar {
            v["restartPolicy"] = json!("Always");
        }
        v
    }

    /// (pod request cpu, node accounting cpu, non-zero cpu) in millicores.
    fn requests(spec: serde_json::Value) -> (i64, i64, i64) {
        let mut i = Interner::default();
        let info = PodInfo::compile(&pod(json!({"spec": spec})), &mut i);
        (info.request.cpu, info.container_request.cpu, info.nonzero.0)
    }

    #[test]
    fn requests_sum_as_upstreams_resource_helpers() {
        let cases = [
            (
                "containers are summed",
                json!({"containers": [container("a", "1", false), container("b", "500m", false)]}),
                (1500, 1500, 1500),
            ),
            (
                "an init container larger than the containers sets the request (upstream's \
                 worked example: init 2 and 2, containers 2 and 1 ask 3)",
                json!({"initContainers": [container("i1", "2", false), container("i2", "2", false)],
                       "containers": [container("c1", "2", false), container("c2", "1", false)]}),
                (3000, 3000, 3000),
            ),
            (
                "a larger init container wins over the containers; nodes count containers only",
                json!({"initContainers": [container("i", "4", false)],
                       "containers": [container("c", "1", false)]}),
                (4000, 1000, 1000),
            ),
            (
                "a sidecar runs next to the containers and to later init containers",
                json!({"initContainers": [container("s", "1", true), container("i", "2", false)],
                       "containers": [container("c", "1", false)]}),
                (3000, 2000, 2000),
            ),
            (
                "an init container before the sidecar does not run next to it",
                json!({"initContainers": [container("i", "2", false), container("s", "1", true)],
                       "containers": [container("c", "500m", false)]}),
                (2000, 1500, 1500),
            ),
            (
                "the overhead is added to everything",
                json!({"overhead": {"cpu": "250m"},
                       "initContainers": [container("i", "2", false)],
                       "containers": [container("c", "1", false)]}),
                (2250, 1250, 1250),
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(requests(spec), want, "{name}");
        }
    }

    #[test]
    fn gates_and_spread_constraints_are_compiled_once() {
        let mut i = Interner::default();
        let p = pod(json!({"spec": {"schedulingGates": [{"name": "g"}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}]}}));
        let info = PodInfo::compile(&p, &mut i);
        assert!(info.gated);
        assert_eq!(info.spread.len(), 1);
        assert!(!info.has_hard_spread());
        let plain = PodInfo::compile(&pod(json!({"spec": {}})), &mut i);
        assert!(!plain.gated && plain.spread.is_empty());
    }
}
