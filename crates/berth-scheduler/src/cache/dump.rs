//! A canonical, order-independent dump of the cache (for tests and debugging).

use super::ClusterCache;
use serde::Serialize;

/// Canonical textual state of a cache: every node aggregate, pod placement and index count,
/// resolved to strings and sorted. Generation counters are excluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheDump {
    /// One line per node.
    pub nodes: Vec<String>,
    /// One line per pod.
    pub pods: Vec<String>,
    /// One line per non-empty index entry.
    pub indexes: Vec<String>,
}

impl ClusterCache {
    /// The canonical dump.
    pub fn dump(&self) -> CacheDump {
        let s = |x: u32| self.interner.resolve(x).to_string();
        let mut nodes = Vec::new();
        for n in self.nodes.iter().filter(|n| !n.name.is_empty()) {
            let mut ports: Vec<String> = n
                .ports
                .iter()
                .map(|p| format!("{}/{}/{}", s(p.ip), s(p.proto), p.port))
                .collect();
            ports.sort();
            let mut disks: Vec<String> = n.disks.iter().map(|d| format!("{d:?}")).collect();
            disks.sort();
            let mut attached: Vec<String> = n
                .attached
                .iter()
                .map(|a| format!("{:?}/{}/{}x{}", a.kind, a.driver, a.id, a.count))
                .collect();
            attached.sort();
            let mut pods: Vec<String> = n
                .pods
                .iter()
                .filter_map(|&p| self.pod_slot(p))
                .map(|p| p.info.key.clone())
                .collect();
            pods.sort();
            nodes.push(format!(
                "{} exists={} req={:?} nonzero={:?} count={} ports={:?} disks={:?} attached={:?} pods={:?}",
                n.name, n.exists, n.requested, n.nonzero, n.pod_count, ports, disks, attached, pods
            ));
        }
        nodes.sort();
        let mut pods: Vec<String> = self
            .pods
            .iter()
            .flatten()
            .map(|p| {
                format!(
                    "{} node={} assumed={}",
                    p.info.key, self.nodes[p.node as usize].name, p.assumed
                )
            })
            .collect();
        pods.sort();
        let mut indexes = Vec::new();
        let node_name = |ix: u32| self.nodes[ix as usize].name.clone();
        for ((ns, k, v), p) in &self.postings {
            let mut per: Vec<String> = p
                .nodes
                .iter()
                .map(|(n, c)| format!("{}={c}", node_name(*n)))
                .collect();
            per.sort();
            indexes.push(format!(
                "label {}/{}={} pods={} nodes={per:?}",
                s(*ns),
                s(*k),
                s(*v),
                p.pods.len()
            ));
        }
        for t in self.terms.iter().filter(|t| t.total > 0) {
            let mut per: Vec<String> = t
                .nodes
                .iter()
                .map(|(n, c)| format!("{}={c}", node_name(*n)))
                .collect();
            per.sort();
            indexes.push(format!(
                "term {:?} w={} {:?} total={} nodes={per:?}",
                t.kind, t.weight, t.term, t.total
            ));
        }
        for (ns, set) in &self.ns_pods {
            indexes.push(format!("ns {} pods={}", s(*ns), set.len()));
        }
        indexes.push(format!("term_kind_pods {:?}", self.term_kind_pods));
        indexes.sort();
        CacheDump {
            nodes,
            pods,
            indexes,
        }
    }
}
