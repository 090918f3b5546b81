//! Roles and bindings (`rbac.authorization.k8s.io`): upstream's `v1` defaulting of bindings and
//! RBAC validation (see [`crate::rbac`]).

use super::{causes, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use serde_json::Value;

pub use crate::rbac::GROUP;

/// `Role` and `ClusterRole`.
pub struct Role;

impl Strategy for Role {
    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        causes(crate::rbac::validate(rt, obj, old))
    }
}

/// `RoleBinding` and `ClusterRoleBinding`: defaulted on create and on update.
pub struct Binding;

impl Strategy for Binding {
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::rbac::default_binding(obj);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        crate::rbac::default_binding(new);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        causes(crate::rbac::validate(rt, obj, old))
    }
}
