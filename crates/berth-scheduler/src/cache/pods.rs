//! Placing and removing pods: node aggregates and the affinity/label indexes.

use super::{CacheError, ClusterCache, ExistingTerm, PodSlot, TermKind};
use crate::events::ClusterEvent;
use crate::intern::{Sym, EMPTY};
use crate::model::Pod;
use crate::node_info::{AttachKind, Attached};
use crate::pod_info::{CVolume, PodInfo};

impl ClusterCache {
    /// Adds or updates a pod from the API. Pods without `spec.nodeName` are ignored (they belong to
    /// the queue); finished pods are removed. Confirms an assumed pod.
    pub fn upsert_pod(&mut self, pod: &Pod) -> Option<ClusterEvent> {
        let info = self.compile_pod(pod);
        self.upsert_pod_info(info)
    }

    /// Adds or updates a pod from Kubernetes JSON.
    pub fn upsert_pod_json(&mut self, bytes: &[u8]) -> Result<Option<ClusterEvent>, CacheError> {
        let pod: Pod = serde_json::from_slice(bytes).map_err(|e| CacheError::Decode {
            kind: "Pod",
            reason: e.to_string(),
        })?;
        Ok(self.upsert_pod(&pod))
    }

    /// Adds or updates an already compiled pod.
    pub fn upsert_pod_info(&mut self, info: PodInfo) -> Option<ClusterEvent> {
        if info.finished || info.node_name.is_empty() {
            return self.remove_pod(&info.key);
        }
        if let Some(&ix) = self.pod_by_key.get(&info.key) {
            self.unplace(ix);
        }
        let event = ClusterEvent::PodAdded {
            namespace: info.namespace.clone(),
            labels: self.label_strings(&info),
        };
        let node = info.node_name.clone();
        self.place(info, &node, false);
        Some(event)
    }

    fn label_strings(&self, info: &PodInfo) -> std::collections::BTreeMap<String, String> {
        info.labels
            .0
            .iter()
            .map(|(k, v)| {
                (
                    self.interner.resolve(*k).to_string(),
                    self.interner.resolve(*v).to_string(),
                )
            })
            .collect()
    }

    /// Removes a pod (`namespace/name`).
    pub fn remove_pod(&mut self, key: &str) -> Option<ClusterEvent> {
        let ix = *self.pod_by_key.get(key)?;
        let slot = self.unplace(ix)?;
        Some(ClusterEvent::PodDeleted {
            namespace: slot.info.namespace,
            labels: Default::default(),
        })
    }

    /// Assumes `pod` is bound to `node`: it counts there until confirmed by
    /// [`ClusterCache::upsert_pod`] or undone by [`ClusterCache::forget`].
    pub fn assume(&mut self, mut pod: PodInfo, node: &str) -> Result<(), CacheError> {
        if self.pod_by_key.contains_key(&pod.key) {
            return Err(CacheError::PodExists(pod.key));
        }
        pod.node_name = node.to_string();
        self.place(pod, node, true);
        Ok(())
    }

    /// Undoes [`ClusterCache::assume`].
    pub fn forget(&mut self, key: &str) -> Result<(), CacheError> {
        let ix = *self
            .pod_by_key
            .get(key)
            .ok_or_else(|| CacheError::PodNotFound(key.to_string()))?;
        if !self.pods[ix as usize].as_ref().is_some_and(|s| s.assumed) {
            return Err(CacheError::NotAssumed(key.to_string()));
        }
        self.unplace(ix);
        Ok(())
    }

    /// True if the pod is held as assumed.
    pub fn is_assumed(&self, key: &str) -> bool {
        self.pod_by_key
            .get(key)
            .and_then(|&ix| self.pod_slot(ix))
            .is_some_and(|s| s.assumed)
    }

    pub(crate) fn attach_ids(&self, pod: &PodInfo) -> Vec<(AttachKind, Sym, Sym)> {
        let mut out = Vec::new();
        for v in &pod.volumes {
            match v {
                CVolume::Ebs { id, .. } => out.push((AttachKind::Ebs, EMPTY, *id)),
                CVolume::Gce { pd, .. } => out.push((AttachKind::Gce, EMPTY, *pd)),
                CVolume::Azure { disk } => out.push((AttachKind::Azure, EMPTY, *disk)),
                CVolume::Csi { driver, handle } => out.push((AttachKind::Csi, *driver, *handle)),
                CVolume::Pvc { claim } => {
                    out.push(self.resolve_claim_attach(&pod.namespace, claim))
                }
                _ => {}
            }
        }
        out
    }

    fn resolve_claim_attach(&self, ns: &str, claim: &str) -> (AttachKind, Sym, Sym) {
        let synthetic = || {
            (
                AttachKind::Any,
                EMPTY,
                self.interner
                    .get(&format!("\0pvc:{ns}/{claim}"))
                    .unwrap_or(u32::MAX),
            )
        };
        let Some(pvc) = self.pvcs.get(&format!("{ns}/{claim}")) else {
            return synthetic();
        };
        if pvc.spec.volume_name.is_empty() {
            return synthetic();
        }
        let Some(pv) = self.pvs.get(&pvc.spec.volume_name).map(|c| &c.pv) else {
            return synthetic();
        };
        let get = |s: &str| self.interner.get(s).unwrap_or(u32::MAX);
        if let Some(e) = &pv.spec.aws_elastic_block_store {
            (AttachKind::Ebs, EMPTY, get(&e.volume_id))
        } else if let Some(g) = &pv.spec.gce_persistent_disk {
            (AttachKind::Gce, EMPTY, get(&g.pd_name))
        } else if let Some(a) = &pv.spec.azure_disk {
            (AttachKind::Azure, EMPTY, get(&a.disk_name))
        } else if let Some(c) = &pv.spec.csi {
            (AttachKind::Csi, get(&c.driver), get(&c.volume_handle))
        } else {
            (AttachKind::Any, EMPTY, u32::MAX - 1)
        }
    }

    fn intern_volume_ids(&mut self, pod: &PodInfo) {
        for v in &pod.volumes {
            if let CVolume::Pvc { claim } = v {
                let key = format!("{}/{}", pod.namespace, claim);
                self.interner.intern(&format!("\0pvc:{key}"));
                if let Some(pv) = self
                    .pvcs
                    .get(&key)
                    .and_then(|c| self.pvs.get(&c.spec.volume_name))
                    .map(|c| &c.pv)
                {
                    let ids: Vec<String> = [
                        pv.spec
                            .aws_elastic_block_store
                            .as_ref()
                            .map(|e| e.volume_id.clone()),
                        pv.spec
                            .gce_persistent_disk
                            .as_ref()
                            .map(|g| g.pd_name.clone()),
                        pv.spec.azure_disk.as_ref().map(|a| a.disk_name.clone()),
                        pv.spec.csi.as_ref().map(|c| c.volume_handle.clone()),
                        pv.spec.csi.as_ref().map(|c| c.driver.clone()),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    for id in ids {
                        self.interner.intern(&id);
                    }
                }
            }
        }
    }

    fn place(&mut self, info: PodInfo, node: &str, assumed: bool) {
        self.bump();
        self.intern_volume_ids(&info);
        let nix = self.slot_for_node(node);
        let ix = match self.free_pods.pop() {
            Some(ix) => ix,
            None => {
                self.pods.push(None);
                (self.pods.len() - 1) as u32
            }
        };
        let attach = self.attach_ids(&info);
        {
            let n = &mut self.nodes[nix as usize];
            n.requested.add(&info.container_request, 1);
            n.nonzero.0 = n.nonzero.0.saturating_add(info.nonzero.0);
            n.nonzero.1 = n.nonzero.1.saturating_add(info.nonzero.1);
            n.pod_count += 1;
            n.ports.extend_from_slice(&info.host_ports);
            for v in &info.volumes {
                if matches!(
                    v,
                    CVolume::Gce { .. }
                        | CVolume::Ebs { .. }
                        | CVolume::Rbd { .. }
                        | CVolume::Iscsi { .. }
                ) {
                    n.disks.push(v.clone());
                }
            }
            for &(kind, driver, id) in &attach {
                match n
                    .attached
                    .iter_mut()
                    .find(|a| a.kind == kind && a.driver == driver && a.id == id)
                {
                    Some(a) => a.count += 1,
                    None => n.attached.push(Attached {
                        kind,
                        driver,
                        id,
                        count: 1,
                    }),
                }
            }
            n.pods.push(ix);
            n.generation += 1;
        }
        for &(k, v) in &info.labels.0 {
            let p = self.postings.entry((info.ns, k, v)).or_default();
            p.pods.insert(ix);
            *p.nodes.entry(nix).or_insert(0) += 1;
        }
        self.ns_pods.entry(info.ns).or_default().insert(ix);
        let mut terms = Vec::new();
        let groups: [(TermKind, Vec<(i64, crate::pod_info::Term)>); 4] = [
            (
                TermKind::RequiredAnti,
                info.anti_affinity.iter().map(|t| (0, t.clone())).collect(),
            ),
            (
                TermKind::RequiredAffinity,
                info.affinity.iter().map(|t| (0, t.clone())).collect(),
            ),
            (TermKind::PreferredAffinity, info.preferred_affinity.clone()),
            (
                TermKind::PreferredAnti,
                info.preferred_anti_affinity.clone(),
            ),
        ];
        for (kind, list) in groups {
            if !list.is_empty() {
                self.term_kind_pods[kind as usize] += 1;
            }
            for (w, t) in list {
                let id = self.term_id(kind, w, t);
                let et = &mut self.terms[id as usize];
                et.total += 1;
                *et.nodes.entry(nix).or_insert(0) += 1;
                terms.push(id);
            }
        }
        self.seq += 1;
        self.pod_by_key.insert(info.key.clone(), ix);
        self.refresh_hot(nix);
        self.pods[ix as usize] = Some(PodSlot {
            info,
            node: nix,
            assumed,
            seq: self.seq,
            terms,
            attach,
        });
    }

    fn term_id(&mut self, kind: TermKind, weight: i64, term: crate::pod_info::Term) -> u32 {
        let key = (kind, weight, term);
        if let Some(&id) = self.term_ids.get(&key) {
            return id;
        }
        let id = self.terms.len() as u32;
        let term = key.2.clone();
        match term.selector.index_pair() {
            Some(pair) => self.term_index.entry(pair).or_default().push(id),
            None => self.generic_terms.push(id),
        }
        self.terms.push(ExistingTerm {
            kind,
            weight,
            term,
            nodes: Default::default(),
            total: 0,
        });
        self.term_ids.insert(key, id);
        id
    }

    pub(crate) fn unplace(&mut self, ix: u32) -> Option<PodSlot> {
        let slot = self.pods.get_mut(ix as usize)?.take()?;
        self.bump();
        self.pod_by_key.remove(&slot.info.key);
        self.free_pods.push(ix);
        let nix = slot.node;
        let info = &slot.info;
        let attach = &slot.attach;
        {
            let n = &mut self.nodes[nix as usize];
            n.requested.add(&info.container_request, -1);
            n.nonzero.0 = n.nonzero.0.saturating_sub(info.nonzero.0);
            n.nonzero.1 = n.nonzero.1.saturating_sub(info.nonzero.1);
            n.pod_count -= 1;
            for p in &info.host_ports {
                if let Some(pos) = n.ports.iter().position(|x| x == p) {
                    n.ports.swap_remove(pos);
                }
            }
            for v in &info.volumes {
                if let Some(pos) = n.disks.iter().position(|x| x == v) {
                    n.disks.swap_remove(pos);
                }
            }
            for &(kind, driver, id) in attach {
                if let Some(pos) = n
                    .attached
                    .iter()
                    .position(|a| a.kind == kind && a.driver == driver && a.id == id)
                {
                    n.attached[pos].count -= 1;
                    if n.attached[pos].count == 0 {
                        n.attached.swap_remove(pos);
                    }
                }
            }
            if let Some(pos) = n.pods.iter().position(|&p| p == ix) {
                n.pods.swap_remove(pos);
            }
            n.generation += 1;
        }
        for &(k, v) in &info.labels.0 {
            if let Some(p) = self.postings.get_mut(&(info.ns, k, v)) {
                p.pods.remove(&ix);
                dec(&mut p.nodes, nix);
                if p.pods.is_empty() {
                    self.postings.remove(&(info.ns, k, v));
                }
            }
        }
        if let Some(s) = self.ns_pods.get_mut(&info.ns) {
            s.remove(&ix);
            if s.is_empty() {
                self.ns_pods.remove(&info.ns);
            }
        }
        for (kind, n) in [
            (TermKind::RequiredAnti, info.anti_affinity.len()),
            (TermKind::RequiredAffinity, info.affinity.len()),
            (TermKind::PreferredAffinity, info.preferred_affinity.len()),
            (TermKind::PreferredAnti, info.preferred_anti_affinity.len()),
        ] {
            if n > 0 {
                self.term_kind_pods[kind as usize] -= 1;
            }
        }
        for &id in &slot.terms {
            let et = &mut self.terms[id as usize];
            et.total -= 1;
            dec(&mut et.nodes, nix);
        }
        self.release_node_if_empty(nix);
        self.refresh_hot(nix);
        Some(slot)
    }
}

fn dec(map: &mut crate::intern::FxMap<u32, u32>, k: u32) {
    if let Some(c) = map.get_mut(&k) {
        *c -= 1;
        if *c == 0 {
            map.remove(&k);
        }
    }
}
