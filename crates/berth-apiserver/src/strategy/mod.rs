//! Per-kind behaviour of the generic handlers, as upstream's `registry/<group>/<kind>/strategy.go`:
//! defaults and server-owned fields of a new object, what an update may not change, validation,
//! and how a delete proceeds. Kinds without behaviour of their own get [`Generic`].
//!
//! A handler looks the strategy up once per request ([`for_type`]) and runs a write through
//! [`admit_create`] or [`admit_update`]: the strategy's preparation, then the admission chain,
//! then the strategy's validation (as upstream runs mutating admission, `PrepareFor*`, and
//! `Validate*`). Adding behaviour for a kind is one file here plus its line in [`STRATEGIES`].

use crate::admission::Chain;
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::Value;

mod admissionregistration;
pub(crate) mod apiregistration;
mod autoscaling;
mod certificates;
mod config_data;
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
        &crate::apiextensions::crd::Definition,
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
    Custom(crate::apiextensions::custom_resource::CustomResource),
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
            return Chosen::Custom(crate::apiextensions::custom_resource::CustomResource(
                served,
            ));
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

/// Readies a new object for the store: the strategy's defaults, the admission chain, then
/// validation (422 with every field error).
pub fn admit_create(
    chain: &Chain,
    user: &UserInfo,
    strategy: &dyn Strategy,
    rt: &ResourceType,
    obj: &mut Value,
) -> ApiResult<()> {
    defaults::pod_templates(rt, obj);
    strategy.prepare_for_create(obj);
    strategy.prepare_for_create_by(user, obj);
    chain.admit_create(user, rt, obj)?;
    validate(strategy, rt, obj, None)
}

/// Readies an update of `old` to `new` for the store, as [`admit_create`] does a new object.
pub fn admit_update(
    chain: &Chain,
    user: &UserInfo,
    strategy: &dyn Strategy,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
) -> ApiResult<()> {
    defaults::pod_templates(rt, new);
    strategy.prepare_for_update(old, new)?;
    chain.admit_update(user, rt, old, new)?;
    validate(strategy, rt, new, Some(old))
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
