//! NamespaceLifecycle: objects may be created only in a namespace that exists and is not
//! terminating (events excepted, as upstream lets them record the namespace's end).

use super::cache::NamespaceState;
use super::{AdmissionCache, ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::path;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::Value;
use std::sync::Arc;

pub const REGISTRATION: Registration = Registration {
    name: "NamespaceLifecycle",
    on_by_default: true,
    build,
};

/// The namespaces the cluster's own components live in or rely on, which may not be deleted
/// (upstream's immortal namespaces).
pub const IMMORTAL_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

struct NamespaceLifecycle {
    store: Store,
    cache: Arc<AdmissionCache>,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(NamespaceLifecycle {
        store: handles.store.clone(),
        cache: handles.cache.clone(),
    }))
}

impl Plugin for NamespaceLifecycle {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns = meta_str(obj, "namespace");
        match self.cache.namespace(&self.store, ns)? {
            NamespaceState::Missing => Err(ApiError::NotFound {
                resource: "namespaces".into(),
                name: ns.to_string(),
            }),
            NamespaceState::Terminating if rt.kind != "Event" => Err(ApiError::Forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                path::qualified_resource(rt),
                meta_str(obj, "name")
            ))),
            NamespaceState::Terminating | NamespaceState::Active => Ok(()),
        }
    }

    fn admit_delete(&self, _user: &UserInfo, rt: &ResourceType, existing: &Value) -> ApiResult<()> {
        let name = meta_str(existing, "name");
        if rt.group.is_empty() && rt.kind == "Namespace" && IMMORTAL_NAMESPACES.contains(&name) {
            return Err(ApiError::Forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )));
        }
        Ok(())
    }
}
