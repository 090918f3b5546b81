//! The schemas of the served kinds: `k8s-schemas.json`, written by `tools/openapi-gen` from
//! k8s-openapi's schemars impls (upstream's descriptions and formats), completed with what
//! clients rely on and k8s-openapi does not carry:
//!
//! - `x-kubernetes-group-version-kind` on each kind's definition (the caller picks which);
//! - `metadata` not required, as upstream's documents have it;
//! - on every list field, the patch strategy of berth's own strategic merge patch
//!   ([`berth_core::patch::list_patch`]) as `x-kubernetes-patch-strategy`/`-patch-merge-key`
//!   and `x-kubernetes-list-type`/`-list-map-keys`: `kubectl apply` computes its patch from
//!   these, so they must say what the server does, or lists get corrupted;
//! - in Swagger 2.0, `type: string` with `format: int-or-string` on `IntOrString` and
//!   `type: string` on `Quantity`, as upstream's v2 document has them (OpenAPI v3 keeps
//!   k8s-openapi's `x-kubernetes-int-or-string` without a type, as upstream's v3 documents
//!   do, and `kubectl explain` then prints `<IntOrString>` and `<Quantity>`).

use std::collections::{BTreeMap, BTreeSet};

use berth_core::patch::{list_patch, ListPatch};
use serde_json::{json, Map, Value};

/// The generated schemas, embedded at build time.
const SCHEMAS_JSON: &str = include_str!("k8s-schemas.json");

/// Where schemars points its references; the documents rewrite them.
const GENERATED_REF_PREFIX: &str = "#/$defs/";

/// Deeper than any served kind nests; guards the walk against recursive definitions.
const MAX_DEPTH: usize = 32;

/// Called with (definition, field, path from the object's root, strategy) for each list field.
type ListVisitor<'v> = dyn FnMut(&str, &str, &[String], ListPatch) + 'v;

/// One served group-version-kind and the definition that describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KindSchema {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub definition: String,
}

impl KindSchema {
    pub(crate) fn gvk(&self) -> Value {
        json!({"group": self.group, "version": self.version, "kind": self.kind})
    }
}

/// Every served kind's schema, definitions annotated and references still generic.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub kinds: Vec<KindSchema>,
    pub definitions: BTreeMap<String, Value>,
}

impl Catalog {
    /// Parses the embedded schemas and annotates them. An unreadable file (a unit test
    /// guards against it) yields an empty catalog: documents without schemas, no panic.
    pub(crate) fn load() -> Catalog {
        let Ok(mut raw) = serde_json::from_str::<Value>(SCHEMAS_JSON) else {
            return Catalog::default();
        };
        let kinds = raw["kinds"]
            .as_array()
            .map(|ks| ks.iter().filter_map(kind_schema).collect())
            .unwrap_or_default();
        let definitions = match raw["definitions"].take() {
            Value::Object(defs) => defs.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        let mut catalog = Catalog { kinds, definitions };
        catalog.annotate_lists();
        catalog.unrequire_metadata();
        catalog
    }

    /// k8s-openapi holds every object's `metadata` as required, upstream's documents never
    /// do; kubectl's client-side validation (from the v2 document) would refuse a body
    /// without it, such as the `TokenReview` that `kubectl create -f` sends.
    fn unrequire_metadata(&mut self) {
        for schema in self.definitions.values_mut() {
            let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) else {
                continue;
            };
            required.retain(|field| field != "metadata");
            if required.is_empty() {
                if let Some(object) = schema.as_object_mut() {
                    object.remove("required");
                }
            }
        }
    }

    /// The schema of `group`/`version`/`kind`, if served.
    pub(crate) fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&KindSchema> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
    }

    /// `roots` and every definition they reference, directly or not.
    pub(crate) fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = roots.into_iter().map(str::to_string).collect();
        while let Some(name) = todo.pop() {
            let Some(schema) = self.definitions.get(&name) else {
                continue;
            };
            if seen.insert(name) {
                collect_refs(schema, &mut todo);
            }
        }
        seen
    }

    /// Publishes, on each list field of each definition, the strategy berth's strategic merge
    /// patch uses there. The table is keyed by the kind and the path from the object's root, so
    /// every kind's tree is walked. A definition shared by several paths gets one answer: the
    /// shallowest path's. They disagree only on `ObjectMeta` embedded in volume claim
    /// templates, where the table treats `finalizers` and `ownerReferences` as atomic; an
    /// object's own `metadata` (merged as upstream does) wins. A unit test pins this.
    fn annotate_lists(&mut self) {
        let mut found: BTreeMap<(String, String), (usize, ListPatch)> = BTreeMap::new();
        for k in &self.kinds {
            self.walk_lists(
                &k.kind,
                &k.definition,
                &mut Vec::new(),
                &mut |def, field, path, s| {
                    let key = (def.to_string(), field.to_string());
                    let entry = found.entry(key).or_insert((path.len(), s));
                    if path.len() < entry.0 {
                        *entry = (path.len(), s);
                    }
                },
            );
        }
        for ((definition, field), (_, strategy)) in found {
            if let Some(prop) = self
                .definitions
                .get_mut(&definition)
                .and_then(|d| d.get_mut("properties"))
                .and_then(|p| p.get_mut(&field))
                .and_then(Value::as_object_mut)
            {
                for (key, value) in list_extensions(strategy) {
                    prop.insert(key.to_string(), value);
                }
            }
        }
    }

    fn walk_lists(
        &self,
        kind: &str,
        definition: &str,
        path: &mut Vec<String>,
        visit: &mut ListVisitor<'_>,
    ) {
        if path.len() > MAX_DEPTH {
            return;
        }
        let Some(Value::Object(props)) = self
            .definitions
            .get(definition)
            .and_then(|d| d.get("properties"))
        else {
            return;
        };
        for (field, schema) in props {
            path.push(field.clone());
            let target = if schema["type"] == "array" {
                let fields: Vec<&str> = path.iter().map(String::as_str).collect();
                visit(definition, field, path, list_patch(kind, &fields));
                schema.get("items").and_then(ref_name)
            } else {
                ref_name(schema)
            };
            if let Some(target) = target {
                self.walk_lists(kind, target, path, visit);
            }
            path.pop();
        }
    }
}

fn kind_schema(v: &Value) -> Option<KindSchema> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Some(KindSchema {
        group: s("group")?,
        version: s("version")?,
        kind: s("kind")?,
        definition: s("definition")?,
    })
}

/// The extensions upstream publishes for a list field of this strategy.
fn list_extensions(strategy: ListPatch) -> Vec<(&'static str, Value)> {
    match strategy {
        ListPatch::Atomic => vec![("x-kubernetes-list-type", json!("atomic"))],
        ListPatch::Set => vec![
            ("x-kubernetes-list-type", json!("set")),
            ("x-kubernetes-patch-strategy", json!("merge")),
        ],
        ListPatch::MergeByKey(key) => vec![
            ("x-kubernetes-list-map-keys", json!([key])),
            ("x-kubernetes-list-type", json!("map")),
            ("x-kubernetes-patch-merge-key", json!(key)),
            ("x-kubernetes-patch-strategy", json!("merge")),
        ],
    }
}

/// The definition a schema refers to (`{"$ref": "#/$defs/<name>", ...}`).
pub(crate) fn ref_name(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(GENERATED_REF_PREFIX))
}

fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = ref_name(schema) {
                out.push(name.to_string());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The OpenAPI dialect a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Swagger 2.0 (`/openapi/v2`): `#/definitions/`, `$ref` with a sibling description.
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/...`): `#/components/schemas/`; a reference with siblings is
    /// wrapped in `allOf`, as upstream writes it (3.0 ignores siblings of `$ref`).
    V3,
}

impl Dialect {
    pub(crate) fn reference(self, name: &str) -> Value {
        match self {
            Dialect::V2 => json!({ "$ref": format!("#/definitions/{name}") }),
            Dialect::V3 => json!({ "$ref": format!("#/components/schemas/{name}") }),
        }
    }
}

/// Definition `name` written for `dialect`.
pub(crate) fn definition(name: &str, schema: &Value, dialect: Dialect) -> Value {
    let mut out = convert(schema, dialect);
    if let (Dialect::V2, Value::Object(s)) = (dialect, &mut out) {
        match name {
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                s.insert("type".into(), json!("string"));
                s.insert("format".into(), json!("int-or-string"));
            }
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
                s.insert("type".into(), json!("string"));
            }
            _ => {}
        }
    }
    out
}

/// `schema` with its references rewritten for `dialect`.
pub(crate) fn convert(schema: &Value, dialect: Dialect) -> Value {
    match schema {
        Value::Object(map) => {
            let Some(name) = ref_name(schema) else {
                return Value::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), convert(v, dialect)))
                        .collect(),
                );
            };
            let reference = dialect.reference(name);
            let siblings: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != "$ref")
                .map(|(k, v)| (k.clone(), convert(v, dialect)))
                .collect();
            match (dialect, siblings.is_empty()) {
                (_, true) => reference,
                (Dialect::V2, false) => {
                    let mut out = siblings;
                    out.extend(reference.as_object().cloned().unwrap_or_default());
                    Value::Object(out)
                }
                (Dialect::V3, false) => {
                    let mut out = siblings;
                    out.insert("allOf".into(), json!([reference]));
                    Value::Object(out)
                }
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| convert(v, dialect)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    fn catalog() -> Catalog {
        Catalog::load()
    }

    fn prop<'a>(c: &'a Catalog, def: &str, field: &str) -> &'a Value {
        &c.definitions[def]["properties"][field]
    }

    #[test]
    fn every_served_kind_that_clients_write_has_a_schema() {
        let c = catalog();
        for rt in registry::all() {
            if rt.group == "metrics.k8s.io"
                || rt.group == "apiextensions.k8s.io"
                || rt.group == "apiregistration.k8s.io"
                || rt.group.ends_with(".openshift.io")
            {
                // Read-only resource metrics: k8s-openapi has no types for them. CRDs: not in
                // the generated file yet (`tools/openapi-gen` must be run with them). OpenShift's
                // kinds: k8s-openapi has none; their schemas are still to be written (issue 33).
                // APIServices: kube-aggregator's types are not in k8s-openapi either.
                continue;
            }
            let k = c
                .kind(rt.group, rt.version, rt.kind)
                .unwrap_or_else(|| panic!("no schema for {}/{}", rt.api_version(), rt.kind));
            assert!(c.definitions.contains_key(&k.definition), "{k:?}");
        }
    }

    #[test]
    fn every_definition_and_field_has_a_description() {
        let c = catalog();
        assert!(c.definitions.len() > 300);
        for (name, def) in &c.definitions {
            assert!(def["description"].is_string(), "{name} has no description");
            for (field, schema) in def["properties"].as_object().into_iter().flatten() {
                // Upstream's own schema gives CertificateSigningRequest's metadata no description.
                let undescribed = name == "io.k8s.api.certificates.v1.CertificateSigningRequest"
                    && field == "metadata";
                if matches!(field.as_str(), "apiVersion" | "kind" | "metadata") && !undescribed {
                    assert!(schema["description"].is_string(), "{name}.{field}");
                }
            }
        }
        let tolerations = prop(&c, "io.k8s.api.core.v1.PodSpec", "tolerations");
        assert_eq!(
            tolerations["description"],
            "If specified, the pod's tolerations."
        );
    }

    #[test]
    fn lists_carry_the_strategy_of_berths_strategic_merge_patch() {
        let c = catalog();
        let containers = prop(&c, "io.k8s.api.core.v1.PodSpec", "containers");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        let tolerations = prop(&c, "io.k8s.api.core.v1.PodSpec", "tolerations");
        assert_eq!(tolerations["x-kubernetes-list-type"], "atomic");
        assert!(tolerations.get("x-kubernetes-patch-strategy").is_none());
        let ports = prop(&c, "io.k8s.api.core.v1.Container", "ports");
        assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
        let finalizers = prop(
            &c,
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "finalizers",
        );
        assert_eq!(finalizers["x-kubernetes-list-type"], "set");
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
        let taints = prop(&c, "io.k8s.api.core.v1.NodeSpec", "taints");
        assert_eq!(taints["x-kubernetes-list-type"], "atomic");
        let conditions = prop(&c, "io.k8s.api.apps.v1.DeploymentStatus", "conditions");
        assert_eq!(conditions["x-kubernetes-patch-merge-key"], "type");
        let service_ports = prop(&c, "io.k8s.api.core.v1.ServiceSpec", "ports");
        assert_eq!(service_ports["x-kubernetes-patch-merge-key"], "port");
    }

    #[test]
    fn shared_definitions_disagree_only_on_embedded_object_meta() {
        let c = catalog();
        let mut seen: BTreeMap<(String, String), (ListPatch, Vec<String>)> = BTreeMap::new();
        for k in &c.kinds {
            c.walk_lists(
                &k.kind,
                &k.definition,
                &mut Vec::new(),
                &mut |def, field, path, s| {
                    let key = (def.to_string(), field.to_string());
                    let (first, first_path) = seen
                        .entry(key.clone())
                        .or_insert_with(|| (s, path.to_vec()))
                        .clone();
                    if first != s {
                        // Only embedded ObjectMetas disagree with an object's own metadata.
                        assert_eq!(key.0, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
                        let (shallow, deep) = if first_path.len() < path.len() {
                            (first_path.len(), path.len())
                        } else {
                            (path.len(), first_path.len())
                        };
                        assert_eq!(shallow, 2, "{} {path:?}", k.kind);
                        assert!(deep > 2, "{} {path:?}", k.kind);
                    }
                },
            );
        }
    }

    #[test]
    fn every_list_field_is_annotated() {
        let c = catalog();
        for (name, def) in &c.definitions {
            for (field, schema) in def["properties"].as_object().into_iter().flatten() {
                if schema["type"] == "array" {
                    assert!(
                        schema["x-kubernetes-list-type"].is_string(),
                        "{name}.{field} has no list type"
                    );
                }
            }
        }
    }

    #[test]
    fn int_or_string_and_quantity() {
        let c = catalog();
        let name = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
        let v2 = definition(name, &c.definitions[name], Dialect::V2);
        assert_eq!(v2["format"], "int-or-string");
        assert_eq!(v2["type"], "string");
        let v3 = definition(name, &c.definitions[name], Dialect::V3);
        assert_eq!(v3["x-kubernetes-int-or-string"], true);
        assert!(v3.get("type").is_none());
        let name = "io.k8s.apimachinery.pkg.api.resource.Quantity";
        assert_eq!(
            definition(name, &c.definitions[name], Dialect::V2)["type"],
            "string"
        );
        let time = &c.definitions["io.k8s.apimachinery.pkg.apis.meta.v1.Time"];
        assert_eq!(time["format"], "date-time");
    }

    #[test]
    fn references_are_rewritten_per_dialect() {
        let with_description = json!({"$ref": "#/$defs/a.B", "description": "d"});
        assert_eq!(
            convert(&with_description, Dialect::V3),
            json!({"allOf": [{"$ref": "#/components/schemas/a.B"}], "description": "d"})
        );
        assert_eq!(
            convert(&with_description, Dialect::V2),
            json!({"$ref": "#/definitions/a.B", "description": "d"})
        );
        let items = json!({"type": "array", "items": {"$ref": "#/$defs/a.B"}});
        assert_eq!(
            convert(&items, Dialect::V3),
            json!({"type": "array", "items": {"$ref": "#/components/schemas/a.B"}})
        );
    }

    #[test]
    fn closure_follows_references() {
        let c = catalog();
        let names = c.closure(["io.k8s.api.core.v1.Pod"]);
        assert!(names.contains("io.k8s.api.core.v1.Toleration"));
        assert!(names.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!names.contains("io.k8s.api.apps.v1.Deployment"));
    }
}
