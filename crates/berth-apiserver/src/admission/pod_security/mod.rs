//! Pod Security admission (upstream's `pod-security-admission`): a namespace's
//! `pod-security.kubernetes.io/enforce`, `warn` and `audit` labels name a level of the Pod
//! Security Standards (`privileged`, `baseline`, `restricted`); pods breaking the `enforce`
//! level are refused, and pods or workload templates breaking the `warn` level are admitted
//! with a warning. Without labels every namespace is `privileged` (upstream's default).
//!
//! The checks are pure functions of a pod spec ([`checks`]); [`evaluate`] runs those of a
//! level in upstream's order, a restricted check taking the place of its baseline sibling.

pub mod checks;

use checks::Violation;
use serde_json::{Map, Value};

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    fn parse(s: &str) -> Level {
        match s {
            "privileged" => Level::Privileged,
            "baseline" => Level::Baseline,
            // An unknown level is the most restrictive, as upstream's.
            _ => Level::Restricted,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

type Check = fn(&Value) -> Option<Violation>;

/// The baseline checks in upstream's order, each with whether it overlaps a restricted check
/// (capabilities, hostPath volumes, seccomp): those run only at the baseline level, after the
/// others, as upstream's `overlappingBaselineChecks`.
const BASELINE: &[(Check, bool)] = &[
    (checks::host_namespaces, false),
    (checks::host_ports, false),
    (checks::privileged, false),
    (checks::proc_mount, false),
    (checks::sysctls, false),
    (checks::capabilities_baseline, true),
    (checks::host_path_volumes, true),
    (checks::seccomp_baseline, true),
];

/// The restricted level's own checks.
const RESTRICTED: &[Check] = &[
    checks::allow_privilege_escalation,
    checks::capabilities_restricted,
    checks::restricted_volumes,
    checks::run_as_non_root,
    checks::run_as_user,
    checks::seccomp_restricted,
];

/// Every broken check of `level` for `spec`, in upstream's order.
pub fn evaluate(level: Level, spec: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    if level == Level::Privileged {
        return out;
    }
    let restricted = level == Level::Restricted;
    for (check, replaced) in BASELINE {
        if !(restricted && *replaced) {
            out.extend(check(spec));
        }
    }
    if restricted {
        out.extend(RESTRICTED.iter().filter_map(|c| c(spec)));
    }
    out
}

/// `violates PodSecurity "restricted:latest": reason (detail), ...` without its verb.
fn describe(level: Level, version: &str, violations: &[Violation]) -> String {
    let list: Vec<String> = violations
        .iter()
        .map(|v| format!("{} ({})", v.reason, v.detail))
        .collect();
    format!(
        "PodSecurity \"{}:{version}\": {}",
        level.as_str(),
        list.join(", ")
    )
}

/// A namespace's mode (`enforce`, `warn`, `audit`): its level and version.
fn mode(labels: &Map<String, Value>, mode: &str) -> Option<(Level, String)> {
    let level = labels.get(&format!("{LABEL_PREFIX}{mode}"))?.as_str()?;
    let version = labels
        .get(&format!("{LABEL_PREFIX}{mode}-version"))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .unwrap_or("latest");
    Some((Level::parse(level), version.to_string()))
}

/// Whether objects of `kind` carry a pod spec Pod Security judges.
pub fn judges(kind: &str) -> bool {
    matches!(
        kind,
        "Pod"
            | "Deployment"
            | "ReplicaSet"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "ReplicationController"
            | "PodTemplate"
            | "CronJob"
    )
}

/// The pod spec inside an object of `kind`: a pod's own, a workload's template's.
fn pod_spec<'a>(kind: &str, obj: &'a Value) -> Option<&'a Value> {
    match kind {
        "Pod" => obj.get("spec"),
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController"
        | "PodTemplate" => {
            let t = if kind == "PodTemplate" {
                &obj["template"]
            } else {
                &obj["spec"]["template"]
            };
            t.get("spec")
        }
        "CronJob" => obj.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// What Pod Security says about writing `obj` (`old` before an update) in a namespace with
/// `labels`: `Err(reason)` when `enforce` refuses a pod (the caller answers 403 with it), else
/// the warnings of the `warn` level.
pub fn admit(
    labels: &Map<String, Value>,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, String> {
    if !labels.keys().any(|k| k.starts_with(LABEL_PREFIX)) {
        return Ok(Vec::new());
    }
    let Some(spec) = pod_spec(kind, obj) else {
        return Ok(Vec::new());
    };
    // An update that leaves the pod spec as it was (labels, status) is not judged again.
    if old.and_then(|o| pod_spec(kind, o)) == Some(spec) {
        return Ok(Vec::new());
    }
    if kind == "Pod" {
        if let Some((level, version)) = mode(labels, "enforce") {
            let violations = evaluate(level, spec);
            if !violations.is_empty() {
                return Err(format!(
                    "violates {}",
                    describe(level, &version, &violations)
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    if let Some((level, version)) = mode(labels, "warn") {
        let violations = evaluate(level, spec);
        if !violations.is_empty() {
            warnings.push(format!(
                "would violate {}",
                describe(level, &version, &violations)
            ));
        }
    }
    if let Some((level, version)) = mode(labels, "audit") {
        let violations = evaluate(level, spec);
        if !violations.is_empty() {
            tracing::info!(audit = %describe(level, &version, &violations), "pod security audit");
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn pod(container: Value) -> Value {
        let mut c = json!({"name": "nginx", "image": "nginx"});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), container.as_object()) {
            c.extend(extra.clone());
        }
        json!({"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [c]}})
    }

    #[test]
    fn restricted_refuses_a_plain_pod_with_upstreams_words() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
        assert_eq!(
            admit(&l, "Pod", &pod(json!({})), None).unwrap_err(),
            "violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"nginx\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"nginx\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"nginx\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"nginx\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        let compliant = pod(json!({"securityContext": {
            "allowPrivilegeEscalation": false, "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}));
        assert_eq!(admit(&l, "Pod", &compliant, None), Ok(vec![]));
    }

    #[test]
    fn baseline_refuses_privileged_and_host_namespaces() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "baseline",
                              "pod-security.kubernetes.io/enforce-version": "v1.35"}));
        assert_eq!(
            admit(&l, "Pod", &pod(json!({"securityContext": {"privileged": true}})), None)
                .unwrap_err(),
            "violates PodSecurity \"baseline:v1.35\": privileged (container \"nginx\" must not set securityContext.privileged=true)"
        );
        let mut host = pod(json!({"ports": [{"containerPort": 80, "hostPort": 8080}]}));
        host["spec"]["hostNetwork"] = json!(true);
        host["spec"]["hostPID"] = json!(true);
        assert_eq!(
            admit(&l, "Pod", &host, None).unwrap_err(),
            "violates PodSecurity \"baseline:v1.35\": host namespaces (hostNetwork=true, hostPID=true), hostPort (container \"nginx\" uses hostPort 8080)"
        );
        assert!(admit(&l, "Pod", &pod(json!({})), None).is_ok());
    }

    #[test]
    fn without_labels_or_at_privileged_everything_is_admitted() {
        let privileged = pod(json!({"securityContext": {"privileged": true}}));
        assert_eq!(admit(&Map::new(), "Pod", &privileged, None), Ok(vec![]));
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "privileged"}));
        assert_eq!(admit(&l, "Pod", &privileged, None), Ok(vec![]));
    }

    #[test]
    fn warn_warns_about_pods_and_workload_templates() {
        let l = labels(json!({"pod-security.kubernetes.io/warn": "baseline"}));
        let privileged = pod(json!({"securityContext": {"privileged": true}}));
        assert_eq!(
            admit(&l, "Pod", &privileged, None).unwrap(),
            vec!["would violate PodSecurity \"baseline:latest\": privileged (container \"nginx\" must not set securityContext.privileged=true)".to_string()]
        );
        let deployment =
            json!({"kind": "Deployment", "spec": {"template": {"spec": privileged["spec"]}}});
        assert_eq!(admit(&l, "Deployment", &deployment, None).unwrap().len(), 1);
        // An enforce level never refuses a workload: its pods are judged when created.
        let e = labels(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
        assert_eq!(admit(&e, "Deployment", &deployment, None), Ok(vec![]));
    }

    #[test]
    fn an_update_that_keeps_the_spec_is_not_judged_again() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
        let p = pod(json!({}));
        assert_eq!(admit(&l, "Pod", &p, Some(&p)), Ok(vec![]));
    }

    #[test]
    fn restricted_checks_name_volumes_users_and_capabilities() {
        let spec = json!({
            "securityContext": {"runAsUser": 0, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}, {"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}}],
        });
        let v = evaluate(Level::Restricted, &spec);
        let reasons: Vec<&str> = v.iter().map(|v| v.reason).collect();
        assert_eq!(
            reasons,
            [
                "unrestricted capabilities",
                "restricted volume types",
                "runAsUser=0"
            ]
        );
        assert_eq!(
            v[0].detail,
            "container \"a\" must not include \"NET_ADMIN\" in securityContext.capabilities.add"
        );
        assert_eq!(
            v[1].detail,
            "volume \"host\" uses restricted volume type \"hostPath\""
        );
        assert_eq!(v[2].detail, "pod must not set runAsUser=0");
        let b = evaluate(Level::Baseline, &spec);
        let reasons: Vec<&str> = b.iter().map(|v| v.reason).collect();
        assert_eq!(reasons, ["non-default capabilities", "hostPath volumes"]);
    }
}
