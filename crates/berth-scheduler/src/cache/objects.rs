//! Services, controllers and volume objects held by the cache.

use super::{CacheError, ClusterCache};
use crate::compiled::{NodeTerm, Selector};
use crate::events::ClusterEvent;
use crate::intern::Sym;
use crate::model::{
    PersistentVolume, PersistentVolumeClaim, ReplicationController, SelectorWorkload, Service,
    StorageClass,
};

/// A selector-bearing object (Service, ReplicationController, ReplicaSet, StatefulSet).
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    pub ns: Sym,
    pub selector: Selector,
    pub seq: u64,
}

/// A PV with its node affinity and zone labels compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledPv {
    pub pv: PersistentVolume,
    pub terms: Option<Vec<NodeTerm>>,
    pub zone: Vec<(Sym, Vec<Sym>)>,
}

/// A StorageClass with allowed topologies compiled (terms ORed, requirements ANDed).
#[derive(Debug, Clone)]
pub(crate) struct CompiledClass {
    pub sc: StorageClass,
    pub topologies: Vec<Vec<(Sym, Vec<Sym>)>>,
}

fn decode<T: serde::de::DeserializeOwned>(
    kind: &'static str,
    bytes: &[u8],
) -> Result<T, CacheError> {
    serde_json::from_slice(bytes).map_err(|e| CacheError::Decode {
        kind,
        reason: e.to_string(),
    })
}

impl ClusterCache {
    fn next_seq(&mut self) -> u64 {
        self.bump();
        self.generation()
    }

    /// Adds or replaces a Service. A Service without a selector selects nothing.
    pub fn upsert_service(&mut self, svc: &Service) -> ClusterEvent {
        let ns = self.interner.intern(svc.metadata.namespace_or_default());
        let selector = match &svc.spec.selector {
            Some(m) => Selector::from_map(m, &mut self.interner),
            None => Selector::nothing(),
        };
        let key = format!(
            "{}/{}",
            svc.metadata.namespace_or_default(),
            svc.metadata.name
        );
        let seq = self
            .services
            .get(&key)
            .map(|w| w.seq)
            .unwrap_or_else(|| self.next_seq());
        self.bump();
        self.services.insert(key, Workload { ns, selector, seq });
        ClusterEvent::ServiceChanged
    }

    /// Adds or replaces a Service from JSON.
    pub fn upsert_service_json(&mut self, bytes: &[u8]) -> Result<ClusterEvent, CacheError> {
        Ok(self.upsert_service(&decode::<Service>("Service", bytes)?))
    }

    /// Removes a Service (`namespace/name`).
    pub fn remove_service(&mut self, key: &str) -> ClusterEvent {
        self.bump();
        self.services.remove(key);
        ClusterEvent::ServiceChanged
    }

    /// Adds or replaces a ReplicationController. An empty selector selects nothing here.
    pub fn upsert_replication_controller(&mut self, rc: &ReplicationController) -> ClusterEvent {
        let ns = self.interner.intern(rc.metadata.namespace_or_default());
        let selector = if rc.spec.selector.is_empty() {
            Selector::nothing()
        } else {
            Selector::from_map(&rc.spec.selector, &mut self.interner)
        };
        self.put_controller("ReplicationController", &rc.metadata, ns, selector)
    }

    /// Adds or replaces a ReplicaSet or StatefulSet (`kind` is `ReplicaSet` or `StatefulSet`).
    pub fn upsert_selector_workload(
        &mut self,
        kind: &'static str,
        w: &SelectorWorkload,
    ) -> ClusterEvent {
        let ns = self.interner.intern(w.metadata.namespace_or_default());
        let mut selector = Selector::compile(w.spec.selector.as_ref(), &mut self.interner);
        if selector.is_everything() {
            selector = Selector::nothing();
        }
        self.put_controller(kind, &w.metadata, ns, selector)
    }

    /// Adds or replaces a controller from JSON; `kind` is `ReplicationController`, `ReplicaSet` or `StatefulSet`.
    pub fn upsert_controller_json(
        &mut self,
        kind: &str,
        bytes: &[u8],
    ) -> Result<ClusterEvent, CacheError> {
        match kind {
            "ReplicationController" => {
                Ok(self.upsert_replication_controller(&decode("ReplicationController", bytes)?))
            }
            "ReplicaSet" => {
                Ok(self.upsert_selector_workload("ReplicaSet", &decode("ReplicaSet", bytes)?))
            }
            "StatefulSet" => {
                Ok(self.upsert_selector_workload("StatefulSet", &decode("StatefulSet", bytes)?))
            }
            _ => Err(CacheError::Decode {
                kind: "controller",
                reason: format!("unsupported kind {kind}"),
            }),
        }
    }

    fn put_controller(
        &mut self,
        kind: &'static str,
        meta: &crate::model::ObjectMeta,
        ns: Sym,
        selector: Selector,
    ) -> ClusterEvent {
        let key = format!("{kind}/{}/{}", meta.namespace_or_default(), meta.name);
        let seq = self
            .controllers
            .get(&key)
            .map(|w| w.seq)
            .unwrap_or_else(|| self.next_seq());
        self.bump();
        self.controllers.insert(key, Workload { ns, selector, seq });
        ClusterEvent::ServiceChanged
    }

    /// Removes a controller (`kind`, `namespace/name`).
    pub fn remove_controller(&mut self, kind: &str, key: &str) -> ClusterEvent {
        self.bump();
        self.controllers.remove(&format!("{kind}/{key}"));
        ClusterEvent::ServiceChanged
    }

    /// Adds or replaces a PersistentVolume.
    pub fn upsert_persistent_volume(&mut self, pv: PersistentVolume) -> ClusterEvent {
        self.bump();
        let i = &mut self.interner;
        let terms = pv
            .spec
            .node_affinity
            .as_ref()
            .and_then(|a| a.required.as_ref())
            .map(|r| {
                r.node_selector_terms
                    .iter()
                    .map(|t| NodeTerm::compile(t, i))
                    .collect()
            });
        let mut zone = Vec::new();
        for key in [crate::node_info::ZONE_LABEL, crate::node_info::REGION_LABEL] {
            if let Some(v) = pv.metadata.labels.get(key) {
                let vals: Vec<Sym> = v
                    .split("__")
                    .filter(|s| !s.is_empty())
                    .map(|s| i.intern(s))
                    .collect();
                if !vals.is_empty() {
                    zone.push((i.intern(key), vals));
                }
            }
        }
        for id in [
            pv.spec
                .aws_elastic_block_store
                .as_ref()
                .map(|e| e.volume_id.as_str()),
            pv.spec
                .gce_persistent_disk
                .as_ref()
                .map(|g| g.pd_name.as_str()),
            pv.spec.azure_disk.as_ref().map(|a| a.disk_name.as_str()),
            pv.spec.csi.as_ref().map(|c| c.volume_handle.as_str()),
            pv.spec.csi.as_ref().map(|c| c.driver.as_str()),
        ]
        .into_iter()
        .flatten()
        {
            i.intern(id);
        }
        self.pvs
            .insert(pv.metadata.name.clone(), CompiledPv { pv, terms, zone });
        ClusterEvent::VolumeChanged
    }
    /// Removes a PersistentVolume.
    pub fn remove_persistent_volume(&mut self, name: &str) -> ClusterEvent {
        self.bump();
        self.pvs.remove(name);
        ClusterEvent::VolumeChanged
    }
    /// Adds or replaces a PersistentVolumeClaim.
    pub fn upsert_persistent_volume_claim(&mut self, pvc: PersistentVolumeClaim) -> ClusterEvent {
        self.bump();
        let key = format!(
            "{}/{}",
            pvc.metadata.namespace_or_default(),
            pvc.metadata.name
        );
        self.pvcs.insert(key, pvc);
        ClusterEvent::VolumeChanged
    }
    /// Removes a PersistentVolumeClaim (`namespace/name`).
    pub fn remove_persistent_volume_claim(&mut self, key: &str) -> ClusterEvent {
        self.bump();
        self.pvcs.remove(key);
        ClusterEvent::VolumeChanged
    }
    /// Adds or replaces a StorageClass.
    pub fn upsert_storage_class(&mut self, sc: StorageClass) -> ClusterEvent {
        self.bump();
        let i = &mut self.interner;
        let topologies = sc
            .allowed_topologies
            .iter()
            .map(|t| {
                t.match_label_expressions
                    .iter()
                    .map(|e| {
                        (
                            i.intern(&e.key),
                            e.values.iter().map(|v| i.intern(v)).collect(),
                        )
                    })
                    .collect()
            })
            .collect();
        self.classes
            .insert(sc.metadata.name.clone(), CompiledClass { sc, topologies });
        ClusterEvent::VolumeChanged
    }
    /// Removes a StorageClass.
    pub fn remove_storage_class(&mut self, name: &str) -> ClusterEvent {
        self.bump();
        self.classes.remove(name);
        ClusterEvent::VolumeChanged
    }
    /// Adds or replaces a PV, PVC or StorageClass from JSON (`kind` names which).
    pub fn upsert_volume_object_json(
        &mut self,
        kind: &str,
        bytes: &[u8],
    ) -> Result<ClusterEvent, CacheError> {
        match kind {
            "PersistentVolume" => {
                Ok(self.upsert_persistent_volume(decode("PersistentVolume", bytes)?))
            }
            "PersistentVolumeClaim" => {
                Ok(self.upsert_persistent_volume_claim(decode("PersistentVolumeClaim", bytes)?))
            }
            "StorageClass" => Ok(self.upsert_storage_class(decode("StorageClass", bytes)?)),
            _ => Err(CacheError::Decode {
                kind: "volume object",
                reason: format!("unsupported kind {kind}"),
            }),
        }
    }
}
