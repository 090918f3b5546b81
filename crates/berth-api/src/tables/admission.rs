//! Rows of `admissionregistration.k8s.io` kinds and CertificateSigningRequests.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::workloads::format_label_selector;
use super::{age, arr_at, col, human_duration, str_at, Column, AGE, NAME};

pub(super) const WEBHOOK_CONFIGURATION_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

pub(super) fn webhook_configuration_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(arr_at(obj, "/webhooks").len()),
        json!(age(obj, now)),
    ]
}

pub(super) const POLICY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    col(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];

pub(super) fn policy_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param_kind = match obj.pointer("/spec/paramKind") {
        Some(p) if p.is_object() => format!("{}/{}", str_at(p, "/apiVersion"), str_at(p, "/kind")),
        _ => "<unset>".to_string(),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(arr_at(obj, "/spec/validations").len()),
        json!(param_kind),
        json!(age(obj, now)),
    ]
}

pub(super) const POLICY_BINDING_COLUMNS: &[Column] = &[
    NAME,
    col(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    col(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];

pub(super) fn policy_binding_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let param_ref = match obj.pointer("/spec/paramRef") {
        Some(p) if p.is_object() => match (str_at(p, "/namespace"), str_at(p, "/name")) {
            (_, "") => format_label_selector(p.get("selector")),
            ("", name) => format!("*/{name}"),
            (ns, name) => format!("{ns}/{name}"),
        },
        _ => "<unset>".to_string(),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/spec/policyName")),
        json!(param_ref),
        json!(age(obj, now)),
    ]
}

pub(super) const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        "Only one signer name is allowed for a CertificateSigningRequest.",
    ),
    col(
        "Requestor",
        "string",
        "Name of the user requesting the certificate.",
    ),
    col(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of the issued certificate.",
    ),
    col(
        "Condition",
        "string",
        "Current condition of the certificate signing request.",
    ),
];

pub(super) fn csr_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let duration = match obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        Some(s) => human_duration(chrono::TimeDelta::seconds(s)),
        None => "<none>".to_string(),
    };
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(age(obj, now)),
        json!(str_at(obj, "/spec/signerName")),
        json!(str_at(obj, "/spec/username")),
        json!(duration),
        json!(csr_condition(obj)),
    ]
}

/// `Pending`, `Approved` or `Denied` (denial wins), then `,Failed` and `,Issued` (upstream's
/// `extractCSRStatus`).
fn csr_condition(obj: &Value) -> String {
    let has = |ty: &str| {
        arr_at(obj, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == ty)
    };
    let mut out = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        out.push_str(",Failed");
    }
    if !str_at(obj, "/status/certificate").is_empty() {
        out.push_str(",Issued");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::now;
    use super::*;

    #[test]
    fn a_csr_condition_is_pending_until_approved_or_denied() {
        let csr = |conditions: Value, cert: &str| json!({"status": {"conditions": conditions, "certificate": cert}});
        assert_eq!(csr_condition(&csr(json!([]), "")), "Pending");
        assert_eq!(
            csr_condition(&csr(json!([{"type": "Approved"}]), "Y2VydA==")),
            "Approved,Issued"
        );
        assert_eq!(
            csr_condition(&csr(json!([{"type": "Approved"}, {"type": "Denied"}]), "")),
            "Denied"
        );
    }

    #[test]
    fn a_csr_row_shows_signer_requestor_and_duration() {
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
            "username": "alice", "expirationSeconds": 86400}});
        let cells = csr_cells(&csr, now());
        assert_eq!(
            cells[2..],
            [
                json!("kubernetes.io/kube-apiserver-client"),
                json!("alice"),
                json!("24h"),
                json!("Pending")
            ]
        );
    }

    #[test]
    fn policies_and_bindings_show_their_parameters() {
        let p = json!({"spec": {"validations": [{}, {}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            policy_cells(&p, now())[1..3],
            [json!(2), json!("v1/ConfigMap")]
        );
        let b = json!({"spec": {"policyName": "p", "paramRef": {"name": "cm"}}});
        assert_eq!(
            policy_binding_cells(&b, now())[1..3],
            [json!("p"), json!("*/cm")]
        );
        let w = json!({"webhooks": [{}, {}, {}]});
        assert_eq!(webhook_configuration_cells(&w, now())[1], 3);
    }
}
