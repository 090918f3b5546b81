//! Scheduler extenders as the policy file declares them. berth parses and validates them but
//! never calls them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::syntax::{is_extended_resource_name, qualified_name_errors};
use super::PolicyEntryError;

/// One `extenders` entry (upstream's `ExtenderConfig`). Kept for validation and reporting only:
/// **berth does not call extenders**.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Extender {
    /// Base URL of the extender.
    pub url_prefix: String,
    /// Verb of the filter call, if the extender filters.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_verb: String,
    /// Verb of the preempt call, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preempt_verb: String,
    /// Verb of the prioritize call, if the extender scores.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prioritize_verb: String,
    /// Weight of the extender's scores; must be positive when `prioritize_verb` is set.
    pub weight: i64,
    /// Verb of the bind call, if the extender binds (at most one extender may).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bind_verb: String,
    /// Whether to use HTTPS.
    pub enable_https: bool,
    /// TLS settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Call timeout in nanoseconds (Go `time.Duration`); 0 means the default.
    pub http_timeout: i64,
    /// Whether the extender caches node information.
    pub node_cache_capable: bool,
    /// Extended resources the extender manages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ExtenderManagedResource>,
    /// Whether scheduling continues when the extender is unreachable.
    pub ignorable: bool,
}

/// `tlsConfig` of an extender.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExtenderTlsConfig {
    /// Skip server certificate verification.
    pub insecure: bool,
    /// Server name for SNI and verification.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    /// Client certificate file.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    /// Client key file.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_file: String,
    /// CA bundle file.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    /// Client certificate, PEM, base64 in JSON.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cert_data: String,
    /// Client key, PEM, base64 in JSON.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key_data: String,
    /// CA bundle, PEM, base64 in JSON.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca_data: String,
}

/// One `managedResources` entry of an extender.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExtenderManagedResource {
    /// The extended resource name, e.g. `example.com/foo`.
    pub name: String,
    /// Whether the scheduler's PodFitsResources ignores this resource.
    pub ignored_by_scheduler: bool,
}

/// Decodes and validates the `extenders` list (scheduler spec §6.2).
pub(crate) fn extenders(items: &[Value], errors: &mut Vec<PolicyEntryError>) -> Vec<Extender> {
    let mut out = Vec::new();
    let mut managed = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let label = match item.get("urlPrefix").and_then(Value::as_str) {
            Some(url) => format!("extenders[{i}] ({url})"),
            None => format!("extenders[{i}]"),
        };
        let extender: Extender = match serde_json::from_value(item.clone()) {
            Ok(e) => e,
            Err(e) => {
                errors.push(PolicyEntryError::new(label, e.to_string()));
                continue;
            }
        };
        if !extender.prioritize_verb.is_empty() && extender.weight <= 0 {
            errors.push(PolicyEntryError::new(
                &label,
                format!(
                    "Priority for extender {} should have a positive weight applied to it",
                    extender.url_prefix
                ),
            ));
        }
        for resource in &extender.managed_resources {
            for problem in qualified_name_errors(&resource.name) {
                errors.push(PolicyEntryError::new(
                    &label,
                    format!("managedResources {:?}: {problem}", resource.name),
                ));
            }
            if !is_extended_resource_name(&resource.name) {
                errors.push(PolicyEntryError::new(
                    &label,
                    format!("{} is an invalid extended resource name", resource.name),
                ));
            }
            if !managed.insert(resource.name.clone()) {
                errors.push(PolicyEntryError::new(
                    &label,
                    format!("Duplicate extender managed resource name {}", resource.name),
                ));
            }
        }
        out.push(extender);
    }
    let binders = out.iter().filter(|e| !e.bind_verb.is_empty()).count();
    if binders > 1 {
        errors.push(PolicyEntryError::new(
            "extenders",
            format!("Only one extender can implement bind, found {binders}"),
        ));
    }
    out
}
