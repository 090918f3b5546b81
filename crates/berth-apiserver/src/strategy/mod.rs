//! Per-kind behaviour of the generic handlers, as upstream's `registry/<group>/<kind>/strategy.go`:
//! defaults and server-owned fields of a new object, what an update may not change, validation,
//! and how a delete proceeds. Kinds without behaviour of their own get [`Generic`].
//!
//! A handler looks the strategy up once per request ([`for_type`]) and runs a write through
//! [`admit_create`] or [`admit_update`]: the strategy's preparation, then the admission chain
//! and the mutating webhooks, then the strategy's validation, then Pod Security, the
//! ValidatingAdmissionPolicies and the validating webhooks (as upstream runs mutating
//! admission, `PrepareFor*`, `Validate*`, and validating admission). Adding behaviour for a
//! kind is one file here plus its line in [`STRATEGIES`].

use crate::admission::dynamic::{self, Attributes, Operation};
use crate::codec::meta_str;
use crate::context::Ctx;
use crate::error::{ApiError, ApiResult, Cause};
use crate::request::ApiRequest;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::Value;

mod admissionregistration;
pub(crate) mod apiregistration;
mod autoscaling;
mod certificates;
mod config_data;
pub mod custom_resource;
pub mod custom_resource_definition;
mod defaults;
mod deployment;
mod flowcontrol;
mod job;
pub mod namespace;
mod networking;
mod node;
mod pod;
mod priority_class;
mod quota;
mod rbac;
mod replication_controller;
pub mod service;
mod volumes;
mod workload_sets;

/// How a delete proceeds once its preconditions hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Removed at once, or marked deleting until its finalizers are gone.
    Immediate,
    /// Marked deleting with this many seconds of grace; whoever runs it removes it when done.
    Graceful(i64),
    /// Marked terminating; the namespace controller deletes what it contains, then it.
    Cascade,
}

/// What a kind does differently from the generic handlers.
pub trait Strategy: Sync {
    /// Defaults and server-owned fields (status) of a new object, before admission.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// What a new object records of who creates it (a CertificateSigningRequest's requester),
    /// after [`Strategy::prepare_for_create`].
    fn prepare_for_create_by(&self, _user: &UserInfo, _obj: &mut Value) {}

    /// Restores what an update may not change, or refuses the update, before admission.
    fn prepare_for_update(&self, _old: &Value, _new: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Every field error of `obj`; on update `old` is the stored object it replaces.
    fn validate(&self, rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        causes(v::validate_generic(obj, rt.namespaced))
    }

    /// How a delete of `obj` proceeds; `grace_period_seconds` is what the request asked for.
    fn deletion(&self, _obj: &Value, _grace_period_seconds: Option<i64>) -> Deletion {
        Deletion::Immediate
    }

    /// Whether removing the last finalizer of `obj`, being deleted, removes it.
    fn removed_with_last_finalizer(&self, _obj: &Value) -> bool {
        true
    }

    /// Whether a delete that removes the object answers with it rather than a `Status`
    /// (upstream's `ReturnDeletedObject`). An object that stays (graceful deletion,
    /// finalizers) is always returned.
    fn returns_deleted_object(&self) -> bool {
        false
    }
}

/// The strategy of kinds without behaviour of their own.
pub struct Generic;

impl Strategy for Generic {}

/// Kinds without behaviour of their own whose delete answers with the deleted object.
pub struct ReturnsDeleted;

impl Strategy for ReturnsDeleted {
    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// Kinds with a strategy of their own: (API group, kind, strategy).
static STRATEGIES: &[(&str, &str, &dyn Strategy)] = &[
    ("", "Pod", &pod::Pod),
    ("", "Namespace", &namespace::Namespace),
    ("", "Node", &node::Node),
    ("", "Service", &service::Service),
    (
        "",
        "ReplicationController",
        &replication_controller::ReplicationController,
    ),
    ("", "ServiceAccount", &ReturnsDeleted),
    ("", "ConfigMap", &config_data::ConfigMap),
    ("", "Secret", &config_data::Secret),
    ("", "PersistentVolume", &volumes::PersistentVolume),
    ("", "PersistentVolumeClaim", &volumes::PersistentVolumeClaim),
    ("", "ResourceQuota", &quota::ResourceQuota),
    ("", "LimitRange", &quota::LimitRange),
    ("apps", "Deployment", &deployment::Deployment),
    ("apps", "ReplicaSet", &deployment::ReplicaSet),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        &autoscaling::HorizontalPodAutoscaler,
    ),
    ("networking.k8s.io", "Ingress", &networking::Ingress),
    (
        "networking.k8s.io",
        "IngressClass",
        &networking::IngressClass,
    ),
    (
        "networking.k8s.io",
        "NetworkPolicy",
        &networking::NetworkPolicy,
    ),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &certificates::CertificateSigningRequest,
    ),
    (
        admissionregistration::GROUP,
        "ValidatingWebhookConfiguration",
        &admissionregistration::WebhookConfiguration,
    ),
    (
        admissionregistration::GROUP,
        "MutatingWebhookConfiguration",
        &admissionregistration::WebhookConfiguration,
    ),
    (
        admissionregistration::GROUP,
        "ValidatingAdmissionPolicy",
        &admissionregistration::ValidatingAdmissionPolicy,
    ),
    ("storage.k8s.io", "StorageClass", &ReturnsDeleted),
    (
        "scheduling.k8s.io",
        "PriorityClass",
        &priority_class::PriorityClass,
    ),
    (rbac::GROUP, "Role", &rbac::Role),
    (rbac::GROUP, "ClusterRole", &rbac::Role),
    (rbac::GROUP, "RoleBinding", &rbac::Binding),
    (rbac::GROUP, "ClusterRoleBinding", &rbac::Binding),
    ("batch", "Job", &job::Job),
    ("batch", "CronJob", &job::CronJob),
    ("apps", "DaemonSet", &workload_sets::DaemonSet),
    ("apps", "StatefulSet", &workload_sets::StatefulSet),
    (
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        &flowcontrol::FlowSchema,
    ),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &custom_resource_definition::Definition,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        &flowcontrol::PriorityLevelConfiguration,
    ),
    (
        "apiregistration.k8s.io",
        "APIService",
        &apiregistration::ApiService,
    ),
];

/// The strategy a request writes through: its kind's, or a custom resource's with its
/// CRD's schema (looked up only for kinds the registry does not have).
pub enum Chosen {
    Builtin(&'static dyn Strategy),
    Custom(custom_resource::CustomResource),
}

impl std::ops::Deref for Chosen {
    type Target = dyn Strategy;

    fn deref(&self) -> &(dyn Strategy + 'static) {
        match self {
            Chosen::Builtin(s) => *s,
            Chosen::Custom(c) => c,
        }
    }
}

/// The strategy of `rt` on this server: [`for_type`], or a custom resource's.
pub fn for_request(ctx: &crate::context::Ctx, rt: &ResourceType) -> Chosen {
    if let berth_api::registry::TableKind::Custom(_) = rt.table {
        if let Some(served) = ctx.custom.of(rt) {
            return Chosen::Custom(custom_resource::CustomResource(served));
        }
    }
    Chosen::Builtin(for_type(rt))
}

/// The strategy of `rt`'s kind.
pub fn for_type(rt: &ResourceType) -> &'static dyn Strategy {
    STRATEGIES
        .iter()
        .find(|(group, kind, _)| *kind == rt.kind && *group == rt.group)
        .map_or(&Generic, |(_, _, strategy)| *strategy)
}

/// Readies a new object for the store: the strategy's defaults, the admission chain, the
/// mutating webhooks, validation (422 with every field error), then the
/// ValidatingAdmissionPolicies and validating webhooks. Returns their warnings.
pub async fn admit_create(
    ctx: &Ctx,
    req: &ApiRequest,
    strategy: &dyn Strategy,
    rt: &ResourceType,
    obj: &mut Value,
) -> ApiResult<Vec<String>> {
    defaults::pod_templates(rt, obj);
    strategy.prepare_for_create(obj);
    strategy.prepare_for_create_by(&req.user, obj);
    ctx.admission.admit_create(&req.user, rt, obj)?;
    let Some(snapshot) = ctx.dynamic.snapshot() else {
        validate(strategy, rt, obj, None)?;
        return pod_security(ctx, req, obj, None);
    };
    let mut warnings = Vec::new();
    let (namespace, name) = (namespace_of(req, obj), meta_str(obj, "name").to_string());
    let a = attributes(req, Operation::Create, &namespace, &name)?;
    let lookup = ctx.lookup();
    dynamic::mutate(&snapshot, &a, &lookup, obj, None, &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    validate(strategy, rt, obj, None)?;
    warnings.extend(pod_security(ctx, req, obj, None)?);
    dynamic::validate(&snapshot, &a, &lookup, Some(obj), None, &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    Ok(warnings)
}

/// Readies an update of `old` to `new` for the store, as [`admit_create`] does a new object.
pub async fn admit_update(
    ctx: &Ctx,
    req: &ApiRequest,
    strategy: &dyn Strategy,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
) -> ApiResult<Vec<String>> {
    defaults::pod_templates(rt, new);
    strategy.prepare_for_update(old, new)?;
    ctx.admission.admit_update(&req.user, rt, old, new)?;
    let Some(snapshot) = ctx.dynamic.snapshot() else {
        validate(strategy, rt, new, Some(old))?;
        return pod_security(ctx, req, new, Some(old));
    };
    let mut warnings = Vec::new();
    let (namespace, name) = (namespace_of(req, old), meta_str(old, "name").to_string());
    let a = attributes(req, Operation::Update, &namespace, &name)?;
    let lookup = ctx.lookup();
    dynamic::mutate(&snapshot, &a, &lookup, new, Some(old), &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    validate(strategy, rt, new, Some(old))?;
    warnings.extend(pod_security(ctx, req, new, Some(old))?);
    dynamic::validate(&snapshot, &a, &lookup, Some(new), Some(old), &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    Ok(warnings)
}

/// Asks the mutating webhooks, then the validating policies and webhooks, about the deletion
/// of `existing`; their warnings.
pub async fn admit_delete(
    ctx: &Ctx,
    req: &ApiRequest,
    existing: &Value,
    dry_run: bool,
) -> ApiResult<Vec<String>> {
    let mut warnings = Vec::new();
    let Some(snapshot) = ctx.dynamic.snapshot() else {
        return Ok(warnings);
    };
    let (namespace, name) = (
        namespace_of(req, existing),
        meta_str(existing, "name").to_string(),
    );
    let mut a = attributes(req, Operation::Delete, &namespace, &name)?;
    a.dry_run = dry_run;
    let lookup = ctx.lookup();
    dynamic::mutate_deletion(&snapshot, &a, &lookup, existing, &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    dynamic::validate(&snapshot, &a, &lookup, None, Some(existing), &mut warnings)
        .await
        .map_err(ApiError::status_of)?;
    Ok(warnings)
}

/// Pod Security admission of a pod or workload (its namespace's labels): a 403 when the
/// `enforce` level refuses a pod, else the `warn` level's warnings. Status writes and kinds
/// without a pod spec pass untouched.
fn pod_security(
    ctx: &Ctx,
    req: &ApiRequest,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<Vec<String>> {
    let rt = req.target.rt;
    if rt.group.is_empty() && rt.plural == "namespaces" && req.target.subresource.is_none() {
        let Some(config) = &ctx.admission.pod_security else {
            return Ok(Vec::new());
        };
        pod_security_labels(obj, old)?;
        return Ok(old.map_or_else(Vec::new, |old| {
            crate::admission::pod_security::namespace_update_warnings(config, &ctx.store, obj, old)
        }));
    }
    if !crate::admission::pod_security::judges(rt.kind)
        || !matches!(rt.group, "" | "apps" | "batch")
        || req.target.subresource.is_some()
    {
        return Ok(Vec::new());
    }
    let Some(config) = &ctx.admission.pod_security else {
        return Ok(Vec::new());
    };
    let namespace = namespace_of(req, obj);
    let Some(ns) = ctx.lookup().namespace_object(&namespace) else {
        return Ok(Vec::new());
    };
    let empty = serde_json::Map::new();
    let labels = ns
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    crate::admission::pod_security::admit_with(
        config,
        &req.user.name,
        &namespace,
        labels,
        rt.kind,
        obj,
        old,
    )
    .map_err(|reason| ApiError::Denied {
        group: String::new(),
        resource: rt.plural.to_string(),
        name: meta_str(obj, "name").to_string(),
        reason,
    })
}

/// A namespace whose Pod Security labels cannot be read is refused (422) when created, or
/// when an update changes what cannot be read, as upstream's `ValidateNamespace`.
fn pod_security_labels(ns: &Value, old: Option<&Value>) -> ApiResult<()> {
    let invalid = |o: &Value| {
        o.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(crate::admission::pod_security::invalid_labels)
            .unwrap_or_default()
    };
    let errors = invalid(ns);
    if errors.is_empty() || old.is_some_and(|o| invalid(o) == errors) {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: "Namespace".into(),
        name: meta_str(ns, "name").to_string(),
        causes: errors
            .into_iter()
            .map(|(label, value, detail)| Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: {detail}",
                    berth_core::validation::names::go_quote(&value)
                ),
                field: format!("metadata.labels[{label}]"),
            })
            .collect(),
    })
}

/// The object's namespace as admission names it: a namespace's is its own name.
fn namespace_of(req: &ApiRequest, obj: &Value) -> String {
    let rt = req.target.rt;
    if rt.group.is_empty() && rt.plural == "namespaces" {
        return meta_str(obj, "name").to_string();
    }
    match meta_str(obj, "namespace") {
        "" => req.target.namespace.clone().unwrap_or_default(),
        ns => ns.to_string(),
    }
}

fn attributes<'a>(
    req: &'a ApiRequest,
    operation: Operation,
    namespace: &'a str,
    name: &'a str,
) -> ApiResult<Attributes<'a>> {
    let dry_run = req.query.dry_run()?;
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = serde_json::json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if dry_run {
        options["dryRun"] = serde_json::json!(["All"]);
    }
    if let Some(manager) = req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        options["fieldManager"] = serde_json::json!(manager);
    }
    Ok(Attributes {
        operation,
        rt: req.target.rt,
        subresource: req.target.subresource.as_deref().unwrap_or(""),
        namespace,
        name,
        user: &req.user,
        dry_run,
        options,
    })
}

fn validate(
    strategy: &dyn Strategy,
    rt: &ResourceType,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    let causes = strategy.validate(rt, obj, old);
    if causes.is_empty() {
        return Ok(());
    }
    // A custom resource is named by its group too (upstream's `Widget.example.com "w" is
    // invalid`).
    let kind = match rt.table {
        berth_api::registry::TableKind::Custom(_) => format!("{}.{}", rt.kind, rt.group),
        _ => rt.kind.to_string(),
    };
    Err(ApiError::Invalid {
        kind,
        name: meta_str(obj, "name").to_string(),
        causes,
    })
}

/// Field errors as the causes of a 422 Status.
pub fn causes(errors: Vec<FieldError>) -> Vec<Cause> {
    errors
        .iter()
        .map(|e| {
            let full = e.message();
            let prefix = format!("{}: ", e.field);
            Cause {
                reason: e.reason().to_string(),
                message: full.strip_prefix(&prefix).unwrap_or(&full).to_string(),
                field: e.field.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    #[test]
    fn every_kind_with_behaviour_is_found_from_its_resource_type() {
        for (group, kind, _) in STRATEGIES {
            let rt = berth_api::registry::all()
                .iter()
                .find(|rt| rt.group == *group && rt.kind == *kind);
            assert!(rt.is_some(), "no resource type for {group}/{kind}");
        }
        let pods = find("", "v1", "pods").unwrap();
        let pod = json_pod();
        assert_eq!(
            for_type(pods).deletion(&pod, Some(5)),
            Deletion::Graceful(5)
        );
        let configmaps = find("", "v1", "configmaps").unwrap();
        assert_eq!(
            for_type(configmaps).deletion(&pod, Some(5)),
            Deletion::Immediate
        );
    }

    fn json_pod() -> Value {
        serde_json::json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    }
}
