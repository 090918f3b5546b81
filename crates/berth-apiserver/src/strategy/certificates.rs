//! CertificateSigningRequests (`certificates.k8s.io/v1`): the requester's identity recorded
//! on create (upstream's `PrepareForCreate`), status reset, and the main rules of
//! `ValidateCertificateSigningRequest` (a request, a signer, known usages). Approval goes
//! through the `approval` subresource, which changes only the status's conditions.

use super::{causes, Strategy};
use crate::error::Cause;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_core::validation::{self as v, FieldError};
use serde_json::{json, Value};

/// Key usages upstream accepts (`KeyUsage`).
const USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// Condition types of a CSR's status.
const CONDITION_TYPES: &[&str] = &["Approved", "Denied", "Failed"];

pub struct CertificateSigningRequest;

impl Strategy for CertificateSigningRequest {
    fn prepare_for_create_by(&self, user: &UserInfo, csr: &mut Value) {
        if let Some(o) = csr.as_object_mut() {
            o.remove("status");
        }
        if csr["spec"].is_object() {
            csr["spec"]["username"] = json!(user.name);
            csr["spec"]["uid"] = json!(user.uid);
            csr["spec"]["groups"] = json!(user.groups);
            if user.extra.is_empty() {
                if let Some(s) = csr["spec"].as_object_mut() {
                    s.remove("extra");
                }
            } else {
                csr["spec"]["extra"] = json!(user.extra);
            }
        }
    }

    fn validate(&self, rt: &ResourceType, csr: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = v::validate_generic(csr, rt.namespaced);
        let spec = &csr["spec"];
        if spec["request"].as_str().unwrap_or("").is_empty() {
            errors.push(FieldError::invalid_rendered(
                "spec.request",
                "[]byte(nil)",
                "PEM block type must be CERTIFICATE REQUEST",
            ));
        }
        if spec["signerName"].as_str().unwrap_or("").is_empty() {
            errors.push(FieldError::required("spec.signerName", ""));
        }
        for (i, u) in spec["usages"].as_array().into_iter().flatten().enumerate() {
            let u = u.as_str().unwrap_or("");
            if !USAGES.contains(&u) {
                errors.push(FieldError::not_supported(
                    format!("spec.usages[{i}]"),
                    u,
                    USAGES,
                ));
            }
        }
        if let Some(s) = spec["expirationSeconds"].as_i64() {
            if s < 600 {
                errors.push(FieldError::invalid_rendered(
                    "spec.expirationSeconds",
                    &s.to_string(),
                    "may not specify a duration less than 600 seconds (10 minutes)",
                ));
            }
        }
        let conditions = csr["status"]["conditions"].as_array();
        let has = |t: &str| conditions.into_iter().flatten().any(|c| c["type"] == t);
        for (i, c) in conditions.into_iter().flatten().enumerate() {
            let t = c["type"].as_str().unwrap_or("");
            if !CONDITION_TYPES.contains(&t) && t.is_empty() {
                errors.push(FieldError::required(
                    format!("status.conditions[{i}].type"),
                    "",
                ));
            }
        }
        if has("Approved") && has("Denied") {
            errors.push(FieldError::invalid_rendered(
                "status.conditions",
                "",
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        causes(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;

    #[test]
    fn the_requester_is_recorded_whatever_the_request_says() {
        let mut csr =
            json!({"spec": {"username": "root", "request": "x"}, "status": {"certificate": "y"}});
        let user = UserInfo {
            name: "alice".into(),
            uid: "u1".into(),
            groups: vec!["dev".into()],
            extra: Default::default(),
        };
        CertificateSigningRequest.prepare_for_create_by(&user, &mut csr);
        assert_eq!(csr["spec"]["username"], "alice");
        assert_eq!(csr["spec"]["groups"], json!(["dev"]));
        assert!(csr.get("status").is_none());
    }

    #[test]
    fn approval_and_denial_exclude_each_other() {
        let rt = find("certificates.k8s.io", "v1", "certificatesigningrequests").unwrap();
        let csr = json!({"metadata": {"name": "c"}, "spec": {"request": "eA==", "signerName": "example.com/s",
            "usages": ["client auth", "flying"]},
            "status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}]}});
        let m: Vec<String> = CertificateSigningRequest
            .validate(rt, &csr, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(m, vec!["spec.usages[1]", "status.conditions"]);
    }
}
