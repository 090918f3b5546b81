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
    /// Request as predicates see it: max(sum of containers, max of init containers).
    pub request: Resources,
    /// Request as node accounting sees it (regular containers only, 1.11 rule).
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
}

fn sum_containers(cs: &[Container], i: &mut Interner) -> Resources {
    let mut r = Resources::default();
    for c in cs {
        r.add(&Resources::compile(&c.resources.requests, i).0, 1);
    }
    r
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
        let container_request = sum_containers(&spec.containers, i);
        let mut request = container_request.clone();
        for c in &spec.init_containers {
            request.max_with(&Resources::compile(&c.resources.requests, i).0);
        }
        let mut nonzero = (0, 0);
        for c in &spec.containers {
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
            controller: pod
                .metadata
                .controller_ref()
                .map(|o| (o.kind.clone(), o.uid.clone())),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            finished: matches!(pod.status.phase.as_str(), "Succeeded" | "Failed"),
            nominated_node: pod.status.nominated_node_name.clone(),
            preempt_never: spec.preemption_policy.as_deref() == Some("Never"),
            start: pod.status.start_time.as_deref().and_then(unix_seconds),
        }
    }

    /// True if the pod has any pod affinity or anti-affinity (required or preferred).
    pub fn has_pod_affinity(&self) -> bool {
        !(self.affinity.is_empty()
            && self.anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty())
    }
}
