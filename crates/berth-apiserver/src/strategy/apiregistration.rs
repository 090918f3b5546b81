//! The APIService kind's strategy, as kube-aggregator's `registry/apiservice/strategy.go` and
//! `apis/apiregistration/validation`: the name is `<version>.<group>`, the priorities are in
//! range, a local APIService (no `spec.service`) has no TLS settings, a remote one names its
//! Service and does not both trust a `caBundle` and skip verification.

use super::{causes, Strategy};
use crate::error::Cause;
use berth_api::registry::ResourceType;
use berth_core::validation::names;
use berth_core::validation::{validate_object_meta, FieldError};
use serde_json::{json, Value};

pub struct ApiService;

impl Strategy for ApiService {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_port(obj);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> crate::error::ApiResult<()> {
        default_port(new);
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        causes(validate(obj))
    }
}

/// `spec.service.port` defaults to 443, as the v1 defaulter sets it.
fn default_port(obj: &mut Value) {
    if let Some(service) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".into(), json!(443));
        }
    }
}

/// The name an APIService must have: `<version>.<group>` (`v1.` for the legacy group).
pub fn required_name(spec: &Value) -> String {
    format!(
        "{}.{}",
        spec["version"].as_str().unwrap_or(""),
        spec["group"].as_str().unwrap_or("")
    )
}

/// How many bytes a base64 `caBundle` holds (what upstream's message counts).
pub fn ca_bundle_len(spec: &Value) -> usize {
    use base64::Engine;
    let text = spec["caBundle"].as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len() * 3 / 4, |b| b.len())
}

/// Every field error of an APIService, in upstream's order and words.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    // The object metadata, with the name checked by the APIService's own rule (`v1.` is not a
    // DNS subdomain, and it is a valid APIService name).
    let mut meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let name = meta["name"].as_str().unwrap_or("").to_string();
    if !name.is_empty() {
        meta["name"] = json!("placeholder");
    }
    errs.extend(validate_object_meta(&meta, false, "metadata"));
    if !name.is_empty() {
        for detail in name_errors(&name, &required_name(spec)) {
            errs.push(FieldError::invalid("metadata.name", &name, detail));
        }
    }
    let group = spec["group"].as_str().unwrap_or("");
    let version = spec["version"].as_str().unwrap_or("");
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for detail in names::dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, detail));
        }
    }
    for detail in names::dns1035_label(version) {
        errs.push(FieldError::invalid("spec.version", version, detail));
    }
    let group_priority = spec["groupPriorityMinimum"].as_i64().unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid_rendered(
            "spec.groupPriorityMinimum",
            &group_priority.to_string(),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = spec["versionPriority"].as_i64().unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid_rendered(
            "spec.versionPriority",
            &version_priority.to_string(),
            "must be positive and less than 1000",
        ));
    }
    let insecure = spec["insecureSkipTLSVerify"].as_bool().unwrap_or(false);
    let ca_bytes = ca_bundle_len(spec);
    let Some(service) = spec.get("service").filter(|s| !s.is_null()) else {
        if ca_bytes != 0 {
            errs.push(FieldError::invalid(
                "spec.caBundle",
                &format!("{ca_bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid_rendered(
                "spec.insecureSkipTLSVerify",
                "true",
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        errs.extend(status_errors(obj));
        return errs;
    };
    if service["namespace"].as_str().unwrap_or("").is_empty() {
        errs.push(FieldError::required("spec.service.namespace", ""));
    }
    if service["name"].as_str().unwrap_or("").is_empty() {
        errs.push(FieldError::required("spec.service.name", ""));
    }
    if insecure && ca_bytes > 0 {
        errs.push(FieldError::invalid_rendered(
            "spec.insecureSkipTLSVerify",
            "true",
            "may not be true if caBundle is present",
        ));
    }
    errs.extend(status_errors(obj));
    errs
}

/// Upstream's name rule: a valid path segment, then exactly `<version>.<group>`.
fn name_errors(name: &str, required: &str) -> Vec<String> {
    let mut out = Vec::new();
    for bad in [".", ".."] {
        if name == bad {
            out.push(format!("may not be '{bad}'"));
        }
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    if out.is_empty() && name != required {
        out.push(format!(
            "must be `spec.version+\".\"+spec.group`: {}",
            names::go_quote(required)
        ));
    }
    out
}

/// A condition's status is True, False or Unknown.
fn status_errors(obj: &Value) -> Vec<FieldError> {
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    conditions
        .enumerate()
        .filter_map(|(i, c)| {
            let status = c["status"].as_str().unwrap_or("");
            (!matches!(status, "True" | "False" | "Unknown")).then(|| {
                FieldError::not_supported(
                    format!("status.conditions[{i}].status"),
                    status,
                    &["True", "False", "Unknown"],
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> Value {
        json!({"metadata": {"name": "v1alpha1.wardle.example.com"},
            "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                "groupPriorityMinimum": 2000, "versionPriority": 200,
                "service": {"namespace": "sample", "name": "api", "port": 443},
                "caBundle": "AAEC"}})
    }

    fn messages(obj: &Value) -> Vec<String> {
        validate(obj).iter().map(FieldError::message).collect()
    }

    #[test]
    fn a_well_formed_remote_and_local_api_service_are_valid() {
        assert!(messages(&remote()).is_empty(), "{:?}", messages(&remote()));
        let local = json!({"metadata": {"name": "v1."}, "spec": {"group": "", "version": "v1",
            "groupPriorityMinimum": 18000, "versionPriority": 1, "service": null}});
        assert!(messages(&local).is_empty(), "{:?}", messages(&local));
    }

    #[test]
    fn the_name_must_be_version_dot_group() {
        let mut obj = remote();
        obj["metadata"]["name"] = json!("wardle");
        assert_eq!(
            messages(&obj),
            ["metadata.name: Invalid value: \"wardle\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\""]
        );
        obj["metadata"]["name"] = json!("a/b");
        assert_eq!(
            messages(&obj),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
    }

    #[test]
    fn priorities_in_range() {
        let mut obj = remote();
        obj["spec"]["groupPriorityMinimum"] = json!(0);
        obj["spec"]["versionPriority"] = json!(1001);
        assert_eq!(
            messages(&obj),
            [
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"
            ]
        );
    }

    #[test]
    fn tls_settings() {
        let mut obj = remote();
        obj["spec"]["insecureSkipTLSVerify"] = json!(true);
        assert_eq!(
            messages(&obj),
            ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"]
        );
        obj["spec"]["service"] = Value::Null;
        assert_eq!(
            messages(&obj),
            [
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"
            ]
        );
    }

    #[test]
    fn group_version_and_service_fields() {
        let obj = json!({"metadata": {"name": "v1beta1."}, "spec": {"version": "v1beta1",
            "groupPriorityMinimum": 1, "versionPriority": 1, "service": {}}});
        assert_eq!(
            messages(&obj),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.service.namespace: Required value",
                "spec.service.name: Required value"
            ]
        );
        let mut obj = remote();
        obj["metadata"]["name"] = json!("1a.wardle.example.com");
        obj["spec"]["version"] = json!("1a");
        assert_eq!(
            messages(&obj),
            ["spec.version: Invalid value: \"1a\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]
        );
    }

    #[test]
    fn the_service_port_defaults_to_443() {
        let mut obj = remote();
        obj["spec"]["service"] = json!({"namespace": "a", "name": "b"});
        default_port(&mut obj);
        assert_eq!(obj["spec"]["service"]["port"], 443);
    }
}
