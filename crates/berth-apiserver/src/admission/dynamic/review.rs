//! `admission.k8s.io/v1` AdmissionReview: the request berth sends a webhook and the checks
//! its response must pass (upstream's `webhook/request/admissionreview.go`).

use super::Attributes;
use base64::Engine;
use serde_json::{json, Value};

/// The `request` of an AdmissionReview (also CEL's `request` variable).
pub fn request(a: &Attributes, uid: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
    let rt = a.rt;
    let kind = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let resource = json!({"group": rt.group, "version": rt.version, "resource": rt.plural});
    let user = a.user;
    let mut user_info = json!({"username": user.name});
    if !user.uid.is_empty() {
        user_info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        user_info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        user_info["extra"] = json!(user.extra);
    }
    let mut r = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": a.operation.as_str(),
        "userInfo": user_info,
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": a.options,
    });
    if !a.subresource.is_empty() {
        r["subResource"] = json!(a.subresource);
        r["requestSubResource"] = json!(a.subresource);
    }
    if !a.name.is_empty() {
        r["name"] = json!(a.name);
    }
    if !a.namespace.is_empty() {
        r["namespace"] = json!(a.namespace);
    }
    r
}

/// The whole AdmissionReview sent to a webhook.
pub fn review(request: Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// What a webhook answered, checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    pub allowed: bool,
    /// The webhook's `status` (a refusal's code and message).
    pub status: Value,
    /// A JSONPatch to apply (mutating webhooks only).
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Reads a webhook's response body; an `Err` is why it cannot be used (a call failure,
/// which `failurePolicy` then decides on).
pub fn verdict(body: &[u8], uid: &str, mutating: bool) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("failed to decode webhook response: {e}"))?;
    let api_version = review["apiVersion"].as_str().unwrap_or("");
    let kind = review["kind"].as_str().unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(r) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got = r["uid"].as_str().unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let patch_type = r["patchType"].as_str();
    let patch = match r
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        None => None,
        Some(_) if !mutating => return Err("validating webhooks may not return patches".into()),
        Some(encoded) => {
            match patch_type {
                None => {
                    return Err("webhook returned response.patch but not response.patchType".into())
                }
                Some("JSONPatch") => {}
                Some(other) => {
                    return Err(format!(
                        "webhook returned invalid response.patchType of {other:?}"
                    ))
                }
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("failed to decode the patch: {e}"))?;
            Some(
                serde_json::from_slice::<json_patch::Patch>(&bytes)
                    .map_err(|e| format!("failed to decode the patch: {e}"))?,
            )
        }
    };
    if patch.is_none() && patch_type.is_some_and(|t| !t.is_empty()) {
        return Err("webhook returned response.patchType but not response.patch".into());
    }
    let warnings = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let audit_annotations = r["auditAnnotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    Ok(Verdict {
        allowed: r["allowed"].as_bool().unwrap_or(false),
        status: r.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings,
        audit_annotations,
    })
}

/// The Status a refusal by webhook `name` is answered with (upstream's `ToStatusErr`): the
/// webhook's own code (at least 400) and reason, its message after who denied.
pub fn denial(name: &str, status: &Value) -> Value {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let mut out = match status {
        Value::Object(_) => status.clone(),
        _ => json!({}),
    };
    let code = out["code"].as_u64().unwrap_or(0);
    out["code"] = json!(if code < 400 { 400 } else { code });
    out["status"] = json!("Failure");
    out["kind"] = json!("Status");
    out["apiVersion"] = json!("v1");
    if !out["metadata"].is_object() {
        out["metadata"] = json!({});
    }
    let message = out["message"].as_str().unwrap_or("");
    let reason = out["reason"].as_str().unwrap_or("");
    out["message"] = json!(match (message, reason) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::dynamic::Operation;
    use crate::user::UserInfo;

    fn pods() -> &'static berth_api::registry::ResourceType {
        berth_api::registry::find("", "v1", "pods").expect("pods")
    }

    #[test]
    fn the_request_names_what_is_asked_and_by_whom() {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into()],
            ..UserInfo::default()
        };
        let a = Attributes {
            operation: Operation::Update,
            rt: pods(),
            subresource: "status",
            namespace: "ns",
            name: "p",
            user: &user,
            dry_run: true,
            options: json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
        };
        let obj = json!({"kind": "Pod"});
        let r = request(&a, "u1", Some(&obj), Some(&obj));
        assert_eq!(r["uid"], "u1");
        assert_eq!(
            r["kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert_eq!(
            r["resource"],
            json!({"group": "", "version": "v1", "resource": "pods"})
        );
        assert_eq!(r["subResource"], "status");
        assert_eq!(r["requestSubResource"], "status");
        assert_eq!(r["operation"], "UPDATE");
        assert_eq!(r["namespace"], "ns");
        assert_eq!(r["name"], "p");
        assert_eq!(r["dryRun"], true);
        assert_eq!(
            r["userInfo"],
            json!({"username": "alice", "groups": ["devs"]})
        );
        assert_eq!(r["options"]["kind"], "UpdateOptions");
        let whole = review(r);
        assert_eq!(whole["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(whole["kind"], "AdmissionReview");
    }

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})).unwrap()
    }

    #[test]
    fn a_response_is_checked_as_upstream_checks_it() {
        let ok = verdict(
            &answer(json!({"uid": "u", "allowed": true, "warnings": ["w1"]})),
            "u",
            false,
        )
        .unwrap();
        assert!(ok.allowed);
        assert_eq!(ok.warnings, vec!["w1".to_string()]);
        assert_eq!(
            verdict(&answer(json!({"uid": "v", "allowed": true})), "u", false).unwrap_err(),
            "expected response.uid=\"u\", got \"v\""
        );
        let v1beta1 = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#;
        assert!(verdict(v1beta1, "u", false)
            .unwrap_err()
            .starts_with("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview"));
        let absent = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert_eq!(
            verdict(absent, "u", false).unwrap_err(),
            "webhook response was absent"
        );
        assert!(verdict(b"not json", "u", false).is_err());
    }

    #[test]
    fn patches_are_json_patches_from_mutating_webhooks_only() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#);
        let with = json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"});
        let v = verdict(&answer(with.clone()), "u", true).unwrap();
        let mut obj = json!({"metadata": {}});
        json_patch::patch(&mut obj, v.patch.as_ref().unwrap()).unwrap();
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
        assert_eq!(
            verdict(&answer(with), "u", false).unwrap_err(),
            "validating webhooks may not return patches"
        );
        let untyped = json!({"uid": "u", "allowed": true, "patch": patch});
        assert_eq!(
            verdict(&answer(untyped), "u", true).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let merge = json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "MergePatch"});
        assert_eq!(
            verdict(&answer(merge), "u", true).unwrap_err(),
            "webhook returned invalid response.patchType of \"MergePatch\""
        );
    }

    #[test]
    fn a_denial_keeps_the_webhooks_code_and_names_it() {
        let s = denial(
            "deny.example.com",
            &json!({"code": 403, "message": "no pods on Fridays"}),
        );
        assert_eq!(s["code"], 403);
        assert_eq!(
            s["message"],
            "admission webhook \"deny.example.com\" denied the request: no pods on Fridays"
        );
        assert_eq!(s["status"], "Failure");
        let bare = denial("deny.example.com", &Value::Null);
        assert_eq!(bare["code"], 400);
        assert_eq!(
            bare["message"],
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
        let low = denial("d.example.com", &json!({"code": 200, "reason": "Nope"}));
        assert_eq!(low["code"], 400);
        assert_eq!(
            low["message"],
            "admission webhook \"d.example.com\" denied the request: Nope"
        );
    }
}
