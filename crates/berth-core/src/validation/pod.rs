//! Pod, pod template and node validation (upstream `ValidatePodCreate`, `ValidatePodSpec`,
//! `ValidatePodTemplateSpec`, `ValidateNode`).

use std::collections::HashSet;

use serde_json::Value;

use super::affinity::validate_affinity;
use super::meta::{validate_annotations, validate_labels, validate_object_meta};
use super::resources::validate_resources;
use super::taints::{validate_taints, validate_tolerations};
use super::{list_of, names, str_of, FieldError};

const NULL: Value = Value::Null;

fn containers(
    list: &[Value],
    path: &str,
    names_seen: &mut HashSet<String>,
    errs: &mut Vec<FieldError>,
) {
    for (i, c) in list.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let name = str_of(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{idx}.name"), ""));
        } else {
            for m in names::dns1123_label(name) {
                errs.push(FieldError::invalid(format!("{idx}.name"), name, m));
            }
        }
        let image = str_of(c, "image");
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                format!("{idx}.image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        errs.extend(validate_resources(
            c.get("resources"),
            &format!("{idx}.resources"),
        ));
        if !names_seen.insert(name.to_string()) {
            errs.push(FieldError::duplicate(format!("{idx}.name"), name));
        }
    }
}

/// The largest `activeDeadlineSeconds` a pod (or pod template) may set: upstream's
/// `math.MaxInt32` (about 68 years), so the deadline stays far inside any time arithmetic.
pub const MAX_ACTIVE_DEADLINE_SECONDS: i64 = i32::MAX as i64;

/// Validates a pod spec at `path` (`spec`, or `spec.template.spec` for workloads) with the
/// rules shared by pods and templates: at least one container; container names present,
/// DNS-1123 labels and unique across containers and init containers; resources; restart
/// policy; node selector labels; affinity; node name; `activeDeadlineSeconds` in
/// 1..=[`MAX_ACTIVE_DEADLINE_SECONDS`]; tolerations; priority class name.
/// Images are not required here (templates may omit them); [`validate_pod`] requires them.
pub fn validate_pod_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    let regular = list_of(spec, "containers");
    if regular.is_empty() {
        errs.push(FieldError::required(format!("{path}.containers"), ""));
    }
    containers(regular, &format!("{path}.containers"), &mut seen, &mut errs);
    containers(
        list_of(spec, "initContainers"),
        &format!("{path}.initContainers"),
        &mut seen,
        &mut errs,
    );
    let restart = str_of(spec, "restartPolicy");
    if !restart.is_empty() && !matches!(restart, "Always" | "OnFailure" | "Never") {
        errs.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            restart,
            &["Always", "OnFailure", "Never"],
        ));
    }
    errs.extend(validate_labels(
        spec.get("nodeSelector"),
        &format!("{path}.nodeSelector"),
    ));
    errs.extend(validate_affinity(
        spec.get("affinity"),
        &format!("{path}.affinity"),
    ));
    let node_name = str_of(spec, "nodeName");
    if !node_name.is_empty() {
        for m in names::dns1123_subdomain(node_name) {
            errs.push(FieldError::invalid(
                format!("{path}.nodeName"),
                node_name,
                m,
            ));
        }
    }
    errs.extend(validate_tolerations(
        spec.get("tolerations").unwrap_or(&NULL),
        &format!("{path}.tolerations"),
    ));
    if let Some(n) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=MAX_ACTIVE_DEADLINE_SECONDS).contains(&n) {
            errs.push(FieldError::invalid_rendered(
                format!("{path}.activeDeadlineSeconds"),
                &n.to_string(),
                &format!("must be between 1 and {MAX_ACTIVE_DEADLINE_SECONDS}, inclusive"),
            ));
        }
    }
    errs.extend(super::sysctls::validate_sysctls(spec, path));
    let pc = str_of(spec, "priorityClassName");
    if !pc.is_empty() {
        for m in names::dns1123_subdomain(pc) {
            errs.push(FieldError::invalid(
                format!("{path}.priorityClassName"),
                pc,
                m,
            ));
        }
    }
    errs
}

/// Validates a Pod for create/update: metadata (namespaced), the spec, and an image on every
/// container and init container (`spec.containers[0].image: Required value`).
pub fn validate_pod(pod: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta(pod.get("metadata").unwrap_or(&NULL), true, "metadata");
    let spec = pod.get("spec").unwrap_or(&NULL);
    errs.extend(validate_pod_spec(spec, "spec"));
    for key in ["containers", "initContainers"] {
        for (i, c) in list_of(spec, key).iter().enumerate() {
            if str_of(c, "image").is_empty() {
                errs.push(FieldError::required(format!("spec.{key}[{i}].image"), ""));
            }
        }
    }
    errs
}

/// Validates a pod template at `path` (e.g. `spec.template`): its labels and annotations
/// and its spec under the template rules of [`validate_pod_spec`].
pub fn validate_pod_template(template: &Value, path: &str) -> Vec<FieldError> {
    let meta = template.get("metadata").unwrap_or(&NULL);
    let mut errs = validate_labels(meta.get("labels"), &format!("{path}.metadata.labels"));
    errs.extend(validate_annotations(
        meta.get("annotations"),
        &format!("{path}.metadata.annotations"),
    ));
    errs.extend(validate_pod_spec(
        template.get("spec").unwrap_or(&NULL),
        &format!("{path}.spec"),
    ));
    errs
}

/// Validates a Node: metadata (cluster-scoped, DNS-1123 subdomain name) and `spec.taints`.
pub fn validate_node(node: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta(node.get("metadata").unwrap_or(&NULL), false, "metadata");
    let spec = node.get("spec").unwrap_or(&NULL);
    errs.extend(validate_taints(
        spec.get("taints").unwrap_or(&NULL),
        "spec.taints",
    ));
    errs
}
