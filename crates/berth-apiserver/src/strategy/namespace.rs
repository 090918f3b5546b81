//! Namespaces: the `kubernetes` finalizer and phase Active on create; deleting one empties it
//! first.

use super::{causes, Deletion, Strategy};
use crate::error::Cause;
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

pub struct Namespace;

impl Strategy for Namespace {
    fn prepare_for_create(&self, ns: &mut Value) {
        if ns["spec"]["finalizers"].is_null() {
            ns["spec"]["finalizers"] = json!(["kubernetes"]);
        }
        ns["status"] = json!({"phase": "Active"});
    }

    fn validate(&self, _rt: &ResourceType, ns: &Value, _old: Option<&Value>) -> Vec<Cause> {
        causes(berth_core::validation::validate_namespace(ns))
    }

    fn deletion(&self, _ns: &Value, _grace_period_seconds: Option<i64>) -> Deletion {
        Deletion::Cascade
    }
}
