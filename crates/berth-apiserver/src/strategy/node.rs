//! Nodes: a spec on create (upstream's `NodeSpec` is a value), and node validation.

use super::{causes, Strategy};
use crate::error::Cause;
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

pub struct Node;

impl Strategy for Node {
    fn prepare_for_create(&self, node: &mut Value) {
        if !node["spec"].is_object() {
            node["spec"] = json!({});
        }
    }

    fn validate(&self, _rt: &ResourceType, node: &Value, _old: Option<&Value>) -> Vec<Cause> {
        causes(berth_core::validation::validate_node(node))
    }
}
