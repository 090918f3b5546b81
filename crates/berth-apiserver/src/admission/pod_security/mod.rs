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

/// A check of the pod spec, or of the pod's metadata and spec (AppArmor's annotations).
#[derive(Clone, Copy)]
enum Check {
    Spec(fn(&Value) -> Option<Violation>),
    Pod(fn(&Value, &Value) -> Option<Violation>),
}

impl Check {
    fn run(self, meta: &Value, spec: &Value) -> Option<Violation> {
        match self {
            Check::Spec(c) => c(spec),
            Check::Pod(c) => c(meta, spec),
        }
    }
}

/// The baseline checks in upstream's order (its checks' IDs in alphabetical order), each with
/// whether it overlaps a restricted check (capabilities, hostPath volumes, seccomp): those
/// run only at the baseline level, after the others, as upstream's `overlappingBaselineChecks`.
const BASELINE: &[(Check, bool)] = &[
    (Check::Pod(checks::app_armor), false),
    (Check::Spec(checks::host_namespaces), false),
    (Check::Spec(checks::host_ports), false),
    (Check::Spec(checks::privileged), false),
    (Check::Spec(checks::proc_mount), false),
    (Check::Spec(checks::se_linux_options), false),
    (Check::Spec(checks::sysctls), false),
    (Check::Spec(checks::windows_host_process), false),
    (Check::Spec(checks::capabilities_baseline), true),
    (Check::Spec(checks::host_path_volumes), true),
    (Check::Spec(checks::seccomp_baseline), true),
];

/// The restricted level's own checks.
const RESTRICTED: &[fn(&Value) -> Option<Violation>] = &[
    checks::allow_privilege_escalation,
    checks::capabilities_restricted,
    checks::restricted_volumes,
    checks::run_as_non_root,
    checks::run_as_user,
    checks::seccomp_restricted,
];

/// Every broken check of `level` for a pod's `meta`data and `spec`, in upstream's order.
pub fn evaluate(level: Level, meta: &Value, spec: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    if level == Level::Privileged {
        return out;
    }
    let restricted = level == Level::Restricted;
    for (check, replaced) in BASELINE {
        if !(restricted && *replaced) {
            out.extend(check.run(meta, spec));
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

/// A namespace's mode (`enforce`, `warn`, `audit`): its level and version, from its labels,
/// else from the configuration's `defaults` (`None`: privileged, nothing to judge).
fn mode(labels: &Map<String, Value>, config: &Config, mode: &str) -> Option<(Level, String)> {
    let label = |k: String| {
        labels
            .get(&k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let default = config.defaults.get(mode);
    let level = match label(format!("{LABEL_PREFIX}{mode}")) {
        Some(l) => Level::parse(&l),
        None => default.map(|d| d.0)?,
    };
    if level == Level::Privileged {
        return None;
    }
    let version = label(format!("{LABEL_PREFIX}{mode}-version"))
        .or_else(|| default.map(|d| d.1.clone()))
        .unwrap_or_else(|| "latest".to_string());
    Some((level, version))
}

/// The PodSecurity admission plugin's configuration (upstream's
/// `pod-security.admission.config.k8s.io/v1` `PodSecurityConfiguration`): the levels of
/// namespaces without labels, and who and what is exempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `enforce`, `audit`, `warn` → (level, version).
    defaults: std::collections::BTreeMap<String, (Level, String)>,
    usernames: Vec<String>,
    namespaces: Vec<String>,
    runtime_classes: Vec<String>,
}

/// The plugin's name in an admission configuration.
pub const PLUGIN: &str = "PodSecurity";

impl Config {
    /// Reads a `PodSecurityConfiguration`; errors name the field as upstream's validation
    /// does.
    pub fn parse(v: &Value) -> Result<Config, super::ConfigError> {
        use super::ConfigError;
        super::config::only_fields(PLUGIN, v, &["defaults", "exemptions"])?;
        let mut config = Config::default();
        let defaults = &v["defaults"];
        if !defaults.is_null() {
            super::config::only_fields(
                PLUGIN,
                defaults,
                &[
                    "enforce",
                    "enforce-version",
                    "audit",
                    "audit-version",
                    "warn",
                    "warn-version",
                ],
            )
            .map_err(|e| ConfigError::new(PLUGIN, &format!("defaults.{}", e.field), e.message))?;
        }
        for mode in ["enforce", "audit", "warn"] {
            let level = match defaults[mode].as_str().unwrap_or("privileged") {
                "privileged" => Level::Privileged,
                "baseline" => Level::Baseline,
                "restricted" => Level::Restricted,
                other => {
                    return Err(ConfigError::new(
                        PLUGIN,
                        &format!("defaults.{mode}"),
                        format!(
                        "Invalid value: {other:?}: must be one of privileged, baseline, restricted"
                    ),
                    ))
                }
            };
            let version = defaults[format!("{mode}-version")]
                .as_str()
                .unwrap_or("latest")
                .to_string();
            if !valid_version(&version) {
                return Err(ConfigError::new(
                    PLUGIN,
                    &format!("defaults.{mode}-version"),
                    format!("Invalid value: {version:?}: must be 'latest' or of the form 'v1.x'"),
                ));
            }
            config.defaults.insert(mode.to_string(), (level, version));
        }
        let exemptions = &v["exemptions"];
        if !exemptions.is_null() {
            super::config::only_fields(
                PLUGIN,
                exemptions,
                &["usernames", "namespaces", "runtimeClasses"],
            )
            .map_err(|e| ConfigError::new(PLUGIN, &format!("exemptions.{}", e.field), e.message))?;
        }
        let list = |field: &str| -> Result<Vec<String>, ConfigError> {
            let mut out: Vec<String> = Vec::new();
            for (i, item) in exemptions[field]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("exemptions.{field}[{i}]");
                match item.as_str() {
                    Some("") => {
                        return Err(ConfigError::new(
                            PLUGIN,
                            &at,
                            "Invalid value: \"\": must be non-empty",
                        ))
                    }
                    Some(s) if out.iter().any(|o| o == s) => {
                        return Err(ConfigError::new(
                            PLUGIN,
                            &at,
                            format!("Duplicate value: {s:?}"),
                        ))
                    }
                    Some(s) => out.push(s.to_string()),
                    None => return Err(ConfigError::new(PLUGIN, &at, "expected a string")),
                }
            }
            Ok(out)
        };
        config.usernames = list("usernames")?;
        config.namespaces = list("namespaces")?;
        config.runtime_classes = list("runtimeClasses")?;
        Ok(config)
    }

    /// Whether the request is exempt: by its user, its namespace, or the pod's runtime class.
    fn exempt(&self, user: &str, namespace: &str, spec: &Value) -> bool {
        self.usernames.iter().any(|u| u == user)
            || self.namespaces.iter().any(|n| n == namespace)
            || spec["runtimeClassName"]
                .as_str()
                .is_some_and(|rc| self.runtime_classes.iter().any(|c| c == rc))
    }
}

/// `latest` or `v1.<minor>`.
fn valid_version(v: &str) -> bool {
    v == "latest"
        || v.strip_prefix("v1.")
            .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
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

/// The pod metadata and spec inside an object of `kind`: a pod's own, a workload's
/// template's.
fn pod_parts<'a>(kind: &str, obj: &'a Value) -> Option<(&'a Value, &'a Value)> {
    let spec = pod_spec(kind, obj)?;
    let meta = match kind {
        "Pod" => &obj["metadata"],
        "PodTemplate" => &obj["template"]["metadata"],
        "CronJob" => &obj["spec"]["jobTemplate"]["spec"]["template"]["metadata"],
        _ => &obj["spec"]["template"]["metadata"],
    };
    Some((meta, spec))
}

/// The pod's deprecated AppArmor annotations, which Pod Security judges beside the spec.
fn app_armor_annotations(meta: &Value) -> Vec<(&String, &Value)> {
    meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("container.apparmor.security.beta.kubernetes.io/"))
        .collect()
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
#[cfg(test)]
pub fn admit(
    labels: &Map<String, Value>,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, String> {
    admit_with(&Config::default(), "", "", labels, kind, obj, old)
}

/// [`admit`] under a configuration, for `user`'s request in `namespace`.
pub fn admit_with(
    config: &Config,
    user: &str,
    namespace: &str,
    labels: &Map<String, Value>,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, String> {
    if config.defaults.values().all(|d| d.0 == Level::Privileged)
        && !labels.keys().any(|k| k.starts_with(LABEL_PREFIX))
    {
        return Ok(Vec::new());
    }
    let Some((meta, spec)) = pod_parts(kind, obj) else {
        return Ok(Vec::new());
    };
    if config.exempt(user, namespace, spec) {
        return Ok(Vec::new());
    }
    // An update that leaves the pod spec and its AppArmor annotations as they were (labels,
    // status) is not judged again.
    if let Some((old_meta, old_spec)) = old.and_then(|o| pod_parts(kind, o)) {
        if old_spec == spec && app_armor_annotations(old_meta) == app_armor_annotations(meta) {
            return Ok(Vec::new());
        }
    }
    if kind == "Pod" {
        if let Some((level, version)) = mode(labels, config, "enforce") {
            let violations = evaluate(level, meta, spec);
            if !violations.is_empty() {
                return Err(format!(
                    "violates {}",
                    describe(level, &version, &violations)
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    if let Some((level, version)) = mode(labels, config, "warn") {
        let violations = evaluate(level, meta, spec);
        if !violations.is_empty() {
            warnings.push(format!(
                "would violate {}",
                describe(level, &version, &violations)
            ));
        }
    }
    if let Some((level, version)) = mode(labels, config, "audit") {
        let violations = evaluate(level, meta, spec);
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
        let v = evaluate(Level::Restricted, &Value::Null, &spec);
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
        let b = evaluate(Level::Baseline, &Value::Null, &spec);
        let reasons: Vec<&str> = b.iter().map(|v| v.reason).collect();
        assert_eq!(reasons, ["non-default capabilities", "hostPath volumes"]);
    }

    #[test]
    fn the_configuration_sets_defaults_and_exemptions() {
        let config = Config::parse(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "baseline", "enforce-version": "v1.35", "warn": "restricted"},
            "exemptions": {"usernames": ["ci-bot"], "namespaces": ["kube-system"],
                           "runtimeClasses": ["kata"]},
        }))
        .unwrap();
        let none = Map::new();
        let privileged = pod(json!({"securityContext": {"privileged": true}}));
        assert_eq!(
            admit_with(&config, "alice", "demo", &none, "Pod", &privileged, None).unwrap_err(),
            "violates PodSecurity \"baseline:v1.35\": privileged (container \"nginx\" must not set securityContext.privileged=true)"
        );
        let warnings = admit_with(
            &config,
            "alice",
            "demo",
            &none,
            "Pod",
            &pod(json!({})),
            None,
        )
        .unwrap();
        assert!(warnings[0].starts_with("would violate PodSecurity \"restricted:latest\""));
        // A namespace's own labels win over the defaults.
        let labelled = labels(json!({"pod-security.kubernetes.io/enforce": "privileged"}));
        assert!(admit_with(
            &config,
            "alice",
            "demo",
            &labelled,
            "Pod",
            &privileged,
            None
        )
        .is_ok());
        // Exempt users, namespaces and runtime classes are not judged.
        assert_eq!(
            admit_with(&config, "ci-bot", "demo", &none, "Pod", &privileged, None),
            Ok(vec![])
        );
        assert_eq!(
            admit_with(
                &config,
                "alice",
                "kube-system",
                &none,
                "Pod",
                &privileged,
                None
            ),
            Ok(vec![])
        );
        let mut kata = privileged.clone();
        kata["spec"]["runtimeClassName"] = json!("kata");
        assert_eq!(
            admit_with(&config, "alice", "demo", &none, "Pod", &kata, None),
            Ok(vec![])
        );
    }

    #[test]
    fn a_bad_configuration_names_the_field() {
        let e = Config::parse(&json!({"defaults": {"enforce": "strict"}})).unwrap_err();
        assert_eq!(e.field, "defaults.enforce");
        let e = Config::parse(&json!({"defaults": {"warn-version": "1.2"}})).unwrap_err();
        assert_eq!(e.field, "defaults.warn-version");
        let e = Config::parse(&json!({"exemptions": {"usernames": ["a", "a"]}})).unwrap_err();
        assert_eq!(e.field, "exemptions.usernames[1]");
        let e = Config::parse(&json!({"exemptions": {"users": []}})).unwrap_err();
        assert_eq!(e.field, "exemptions.users");
        assert!(Config::parse(&json!({})).is_ok());
    }

    #[test]
    fn app_armor_selinux_and_host_process_are_baseline_checks_in_upstreams_order() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
        let mut p = pod(json!({"securityContext": {
            "seLinuxOptions": {"user": "root"},
            "windowsOptions": {"hostProcess": true},
            "appArmorProfile": {"type": "Unconfined"}}}));
        p["spec"]["hostNetwork"] = json!(true);
        assert_eq!(
            admit(&l, "Pod", &p, None).unwrap_err(),
            "violates PodSecurity \"baseline:latest\": forbidden AppArmor profile (container \"nginx\" must not set AppArmor profile type to \"Unconfined\"), host namespaces (hostNetwork=true), seLinuxOptions (container \"nginx\" set forbidden securityContext.seLinuxOptions: user may not be set), hostProcess (container \"nginx\" must not set securityContext.windowsOptions.hostProcess=true)"
        );
        // A changed AppArmor annotation is judged again on update.
        let plain = pod(json!({}));
        let mut annotated = plain.clone();
        annotated["metadata"]["annotations"] =
            json!({"container.apparmor.security.beta.kubernetes.io/nginx": "unconfined"});
        assert!(admit(&l, "Pod", &annotated, Some(&plain)).is_err());
    }
}
