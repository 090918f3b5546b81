//! The REST operations of one served resource, as both dialects write them: create, read,
//! replace, patch and delete, each carrying `x-kubernetes-group-version-kind` and the query
//! parameters the server honours. kubectl reads two things here: a PATCH operation with a
//! `fieldValidation` parameter means "validate server-side" (so it skips client-side schema
//! validation), and one whose request body accepts `application/strategic-merge-patch+json`
//! means "compute apply patches from this document's schemas".

use serde_json::{json, Map, Value};

use super::catalog::{Dialect, KindSchema};
use crate::registry::ResourceType;

/// The patch types the server accepts, as upstream lists them.
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// One REST operation.
#[derive(Debug, Clone, Copy)]
enum Op {
    Create,
    Read,
    Replace,
    Patch,
    Delete,
}

impl Op {
    fn verb(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Read => "get",
            Op::Replace => "update",
            Op::Patch => "patch",
            Op::Delete => "delete",
        }
    }
    fn method(self) -> &'static str {
        match self {
            Op::Create => "post",
            Op::Read => "get",
            Op::Replace => "put",
            Op::Patch => "patch",
            Op::Delete => "delete",
        }
    }
    fn id_prefix(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Read => "read",
            Op::Replace => "replace",
            Op::Patch => "patch",
            Op::Delete => "delete",
        }
    }
    fn query(self) -> &'static [(&'static str, &'static str)] {
        const WRITE: &[(&str, &str)] = &[
            ("dryRun", "string"),
            ("fieldManager", "string"),
            ("fieldValidation", "string"),
        ];
        match self {
            Op::Create | Op::Replace => WRITE,
            Op::Patch => &[
                ("dryRun", "string"),
                ("fieldManager", "string"),
                ("fieldValidation", "string"),
                ("force", "boolean"),
            ],
            Op::Read => &[("pretty", "string")],
            Op::Delete => &[
                ("dryRun", "string"),
                ("gracePeriodSeconds", "integer"),
                ("propagationPolicy", "string"),
            ],
        }
    }
}

/// The paths of `rt` (whose objects `schema` describes): `{path: {method: operation}}`.
pub(crate) fn paths(
    rt: &ResourceType,
    schema: &KindSchema,
    dialect: Dialect,
) -> Map<String, Value> {
    let prefix = rt.group_version_path();
    let collection = if rt.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural)
    } else {
        format!("{prefix}/{}", rt.plural)
    };
    let item = format!("{collection}/{{name}}");
    let mut out = Map::new();
    for (path, ops) in [
        (collection, &[Op::Create][..]),
        (item, &[Op::Read, Op::Replace, Op::Patch, Op::Delete][..]),
    ] {
        let named = path.ends_with("{name}");
        let methods: Map<String, Value> = ops
            .iter()
            .filter(|op| rt.allows(op.verb()))
            .map(|&op| {
                let body = operation(rt, schema, op, named, dialect);
                (op.method().to_string(), body)
            })
            .collect();
        if !methods.is_empty() {
            out.insert(path, Value::Object(methods));
        }
    }
    out
}

fn operation(
    rt: &ResourceType,
    schema: &KindSchema,
    op: Op,
    named: bool,
    dialect: Dialect,
) -> Value {
    let object = dialect.reference(&schema.definition);
    let mut params = Vec::new();
    if named {
        params.push(parameter("name", "path", "string", dialect));
    }
    if rt.namespaced {
        params.push(parameter("namespace", "path", "string", dialect));
    }
    for (name, ty) in op.query() {
        params.push(parameter(name, "query", ty, dialect));
    }
    let mut out = json!({
        "operationId": operation_id(rt, op),
        "x-kubernetes-action": op.method(),
        "x-kubernetes-group-version-kind": schema.gvk(),
    });
    let body_types: Vec<&str> = match op {
        Op::Create | Op::Replace => vec!["application/json"],
        Op::Patch => PATCH_TYPES.to_vec(),
        Op::Read | Op::Delete => Vec::new(),
    };
    let body_schema = match op {
        Op::Patch => {
            json!({"type": "object", "description": "A patch of the object, in the patch type the Content-Type names."})
        }
        _ => object.clone(),
    };
    let response = match op {
        Op::Delete => json!({"description": "OK"}),
        _ => match dialect {
            Dialect::V2 => json!({"description": "OK", "schema": object}),
            Dialect::V3 => {
                json!({"description": "OK", "content": {"application/json": {"schema": object}}})
            }
        },
    };
    out["responses"] = json!({ "200": response });
    if !body_types.is_empty() {
        match dialect {
            Dialect::V2 => {
                params.push(
                    json!({"name": "body", "in": "body", "required": true, "schema": body_schema}),
                );
                out["consumes"] = json!(body_types);
            }
            Dialect::V3 => {
                let content: Map<String, Value> = body_types
                    .iter()
                    .map(|t| (t.to_string(), json!({ "schema": body_schema })))
                    .collect();
                out["requestBody"] = json!({"content": content, "required": true});
            }
        }
    }
    out["parameters"] = Value::Array(params);
    out
}

fn parameter(name: &str, location: &str, ty: &str, dialect: Dialect) -> Value {
    let mut p = match dialect {
        Dialect::V2 => json!({"name": name, "in": location, "type": ty}),
        Dialect::V3 => json!({"name": name, "in": location, "schema": {"type": ty}}),
    };
    if location == "path" {
        p["required"] = json!(true);
    }
    p
}

/// Upstream-style operation id: `patchCoreV1NamespacedPod`, `createSchedulingV1PriorityClass`.
fn operation_id(rt: &ResourceType, op: Op) -> String {
    let group = if rt.group.is_empty() {
        "core"
    } else {
        rt.group.split('.').next().unwrap_or(rt.group)
    };
    let scope = if rt.namespaced { "Namespaced" } else { "" };
    format!(
        "{}{}{}{}{}",
        op.id_prefix(),
        capitalize(group),
        capitalize(rt.version),
        scope,
        rt.kind
    )
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}
