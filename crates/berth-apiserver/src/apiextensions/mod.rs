//! `apiextensions.k8s.io`: what the served custom kinds are, as upstream's
//! `apiextensions-apiserver` knows them. This module sits below the request context (which
//! holds [`CustomKinds`]) and below admission (which compiles CEL with [`cel`]), so it
//! names neither; what acts on requests lives above:
//!
//! - [`schema`], [`formats`], [`cel`]: a version's structural schema, what it prunes,
//!   defaults and refuses, and its `x-kubernetes-validations` rules;
//! - [`openapi`]: their schemas in the OpenAPI v3 and v2 documents (`kubectl explain`);
//! - this file: [`CustomKinds`], the served custom kinds, following the stored CRDs.
//!
//! Elsewhere: the CRD kind's strategy and the custom resources' strategy in
//! `strategy::{custom_resource_definition, custom_resource}`; CRD writes and the deletion of
//! a CRD's objects in `crd_lifecycle`.
//!
//! Built-in kinds do not pay for any of it: a request's kind is looked up in the static
//! registry first, and here only when the registry does not serve its path.

pub mod cel;
pub mod formats;
pub mod openapi;
pub mod ratcheting;
pub mod schema;

use berth_api::custom::{CustomKind, PrinterColumn};
use berth_api::registry::ResourceType;
use berth_store::{EventKind, KeyValue};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};

/// The finalizer that holds a deleted CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Where CRDs are stored.
pub const CRD_PREFIX: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions/";

/// Where `scale` reads and writes a custom resource (`.spec.replicas`, ...).
#[derive(Debug, Clone, Default)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: String,
}

/// One served version of a CRD.
#[derive(Debug)]
pub struct Served {
    pub rt: &'static ResourceType,
    pub schema: Option<schema::Schema>,
    /// The version's `openAPIV3Schema` as written, for the OpenAPI documents.
    pub raw_schema: Option<Value>,
    pub scale: Option<ScalePaths>,
    /// Whether the CRD is being deleted: its objects are, and no new one is created.
    pub terminating: bool,
}

/// The custom kinds this server serves, kept current from the stored CRDs.
#[derive(Default)]
pub struct CustomKinds {
    /// CRD name → its served versions.
    by_crd: RwLock<BTreeMap<String, Vec<Arc<Served>>>>,
    following: AtomicBool,
    v2: openapi::V2Cache,
}

impl CustomKinds {
    /// The served version at `group`/`version`/`plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Served>> {
        let by_crd = self.by_crd.read().unwrap_or_else(|e| e.into_inner());
        by_crd
            .values()
            .flatten()
            .find(|s| s.rt.group == group && s.rt.version == version && s.rt.plural == plural)
            .cloned()
    }

    /// The served version a resource type of this server belongs to.
    pub fn of(&self, rt: &ResourceType) -> Option<Arc<Served>> {
        self.find(rt.group, rt.version, rt.plural)
    }

    /// The resource type at `group`/`version`/`plural`, for routing.
    pub fn resource_type(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&'static ResourceType> {
        self.find(group, version, plural).map(|s| s.rt)
    }

    /// Every served custom resource type, for discovery.
    pub fn resource_types(&self) -> Vec<&'static ResourceType> {
        let by_crd = self.by_crd.read().unwrap_or_else(|e| e.into_inner());
        by_crd.values().flatten().map(|s| s.rt).collect()
    }

    /// Every served version, for OpenAPI.
    pub fn served(&self) -> Vec<Arc<Served>> {
        let by_crd = self.by_crd.read().unwrap_or_else(|e| e.into_inner());
        by_crd.values().flatten().cloned().collect()
    }

    /// The `/openapi/v2` document built for the kinds served now.
    pub fn v2_cache(&self) -> &openapi::V2Cache {
        &self.v2
    }

    fn put(&self, crd: &Value) {
        let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
        let versions = served_versions(crd);
        let mut by_crd = self.by_crd.write().unwrap_or_else(|e| e.into_inner());
        if versions.is_empty() {
            by_crd.remove(&name);
        } else {
            by_crd.insert(name, versions);
        }
        self.v2.invalidate();
    }
}

impl crate::follow::StoreFollower for CustomKinds {
    const PREFIX: &'static str = CRD_PREFIX;
    const WHAT: &'static str = "the CustomResourceDefinitions";

    fn load(&self, kvs: &[KeyValue]) {
        let mut fresh = BTreeMap::new();
        for kv in kvs {
            if let Ok(crd) = serde_json::from_slice::<Value>(&kv.value) {
                let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
                let versions = served_versions(&crd);
                if !versions.is_empty() {
                    fresh.insert(name, versions);
                }
            }
        }
        *self.by_crd.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        self.v2.invalidate();
    }

    fn event(&self, kind: EventKind, kv: &KeyValue) {
        match kind {
            EventKind::Delete => {
                let name = kv.key.strip_prefix(CRD_PREFIX).unwrap_or("");
                self.by_crd
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(name);
                self.v2.invalidate();
            }
            _ => {
                if let Ok(crd) = serde_json::from_slice::<Value>(&kv.value) {
                    self.put(&crd);
                }
            }
        }
    }

    fn following(&self) -> &AtomicBool {
        &self.following
    }
}

/// The served versions of a stored CRD. A version whose schema cannot be read is not served
/// (validation refuses such a CRD; this guards against one stored before).
fn served_versions(crd: &Value) -> Vec<Arc<Served>> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let group = s(&spec["group"]);
    let plural = s(&names["plural"]);
    let kind = s(&names["kind"]);
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let singular = match s(&names["singular"]) {
        x if x.is_empty() => kind.to_lowercase(),
        x => x,
    };
    let terminating = crd["metadata"].get("deletionTimestamp").is_some();
    let mut out = Vec::new();
    for v in spec["versions"].as_array().into_iter().flatten() {
        if !v["served"].as_bool().unwrap_or(false) {
            continue;
        }
        let subresources = &v["subresources"];
        let scale = subresources
            .get("scale")
            .filter(|s| s.is_object())
            .map(|sc| ScalePaths {
                spec_replicas: s(&sc["specReplicasPath"]),
                status_replicas: s(&sc["statusReplicasPath"]),
                label_selector: s(&sc["labelSelectorPath"]),
            });
        let columns = v["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: s(&c["name"]),
                ty: s(&c["type"]),
                format: s(&c["format"]),
                description: s(&c["description"]),
                priority: c["priority"].as_u64().unwrap_or(0).min(u8::MAX as u64) as u8,
                json_path: s(&c["jsonPath"]),
            })
            .collect();
        let definition = CustomKind {
            group: group.clone(),
            version: s(&v["name"]),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced: spec["scope"] != "Cluster",
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status: subresources.get("status").is_some_and(Value::is_object),
            scale: scale.is_some(),
            columns,
        };
        let Some(rt) = berth_api::custom::resource_type(&definition) else {
            tracing::error!(
                crd = s(&crd["metadata"]["name"]),
                "too many distinct custom kinds; this one is not served"
            );
            continue;
        };
        let schema = match v["schema"].get("openAPIV3Schema") {
            Some(raw) => match schema::Schema::parse(raw) {
                Ok(schema) => Some(schema),
                Err(_) => continue,
            },
            None => None,
        };
        out.push(Arc::new(Served {
            rt,
            schema,
            raw_schema: v["schema"].get("openAPIV3Schema").cloned(),
            scale,
            terminating,
        }));
    }
    out
}

/// Whether `rt` is the CustomResourceDefinition resource.
pub fn is_definitions(rt: &ResourceType) -> bool {
    rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions"
}
