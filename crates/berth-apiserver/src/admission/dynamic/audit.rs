//! Audit annotations of one request (upstream's `auditAnnotationCollector` and
//! `admission.Attributes.AddAnnotation`): what ValidatingAdmissionPolicies' `auditAnnotations`
//! and `Audit` validation actions add to the request's audit event. berth's audit record is a
//! log line per annotation under the target `berth::audit`, beside the access log's line for
//! the request.

use super::Attributes;
use std::collections::BTreeMap;

/// The key an `Audit` validation action's failures are recorded under.
pub const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The annotations collected while admitting one request, by key.
#[derive(Debug, Default, PartialEq)]
pub struct AuditAnnotations(BTreeMap<String, Vec<String>>);

impl AuditAnnotations {
    /// Adds `value` under `key`; a value the key already has is not repeated (several
    /// bindings of one policy give the same value).
    pub fn add(&mut self, key: String, value: String) {
        let values = self.0.entry(key).or_default();
        if !values.contains(&value) {
            values.push(value);
        }
    }

    /// Each key with its values joined by `", "`, as upstream publishes them.
    pub fn published(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), v.join(", ")))
            .collect()
    }

    /// Writes the annotations to the audit record of the request `a`.
    pub fn record(&self, a: &Attributes) {
        for (key, value) in self.published() {
            tracing::info!(
                target: "berth::audit",
                verb = a.operation.as_str(),
                resource = a.rt.plural,
                group = a.rt.group,
                namespace = a.namespace,
                name = a.name,
                user = %a.user.name,
                key = %key,
                value = %value,
                "audit annotation"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_one_key_are_joined_once_each() {
        let mut a = AuditAnnotations::default();
        a.add("p/k".into(), "one".into());
        a.add("p/k".into(), "two".into());
        a.add("p/k".into(), "one".into());
        a.add("p/a".into(), "x".into());
        assert_eq!(
            a.published(),
            vec![
                ("p/a".to_string(), "x".to_string()),
                ("p/k".to_string(), "one, two".to_string())
            ]
        );
    }
}
