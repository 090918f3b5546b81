//! Pod Security admission (upstream's `pod-security-admission`): a namespace's
//! `pod-security.kubernetes.io/enforce`, `warn` and `audit` labels name a level of the Pod
//! Security Standards (`privileged`, `baseline`, `restricted`); pods breaking the `enforce`
//! level are refused, and pods or workload templates breaking the `warn` level are admitted
//! with a warning. Without labels every namespace is `privileged` (upstream's default).
//!
//! The checks are pure functions of a pod spec ([`checks`]); [`evaluate`] runs those of a
//! level in force at a policy version (a namespace's `*-version` label, `latest` by default)
//! in upstream's order, a restricted check taking the place of its baseline sibling.

pub mod checks;
mod registry;

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
    fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
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

pub use registry::{evaluate, Version};

/// `violates PodSecurity "restricted:latest": reason (detail), ...` without its verb.
fn describe(level: Level, version: Version, violations: &[Violation]) -> String {
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
/// else from the configuration's `defaults` (`None`: privileged, nothing to judge). As
/// upstream's `PolicyToEvaluate`: a label that cannot be read enforces `restricted` but turns
/// `warn` and `audit` off, and a version that cannot be read is `latest`.
fn mode(labels: &Map<String, Value>, config: &Config, mode: &str) -> Option<(Level, Version)> {
    let label = |k: String| labels.get(&k).map(|v| v.as_str().unwrap_or(""));
    let default = config.defaults.get(mode).copied();
    let level = match label(format!("{LABEL_PREFIX}{mode}")) {
        Some(l) => Level::parse(l).unwrap_or(if mode == "enforce" {
            Level::Restricted
        } else {
            Level::Privileged
        }),
        None => default.map(|d| d.0)?,
    };
    if level == Level::Privileged {
        return None;
    }
    let version = match label(format!("{LABEL_PREFIX}{mode}-version")) {
        Some(v) => Version::parse(v).unwrap_or(Version::Latest),
        None => default.map_or(Version::Latest, |d| d.1),
    };
    Some((level, version))
}

/// The Pod Security labels of a namespace that cannot be read, as (label, value, detail) in
/// upstream's order: a namespace is refused with them on create, and on an update that
/// changes them (upstream's `PolicyToEvaluate` errors, answered by `ValidateNamespace`).
pub fn invalid_labels(labels: &Map<String, Value>) -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    for mode in ["enforce", "audit", "warn"] {
        let level = format!("{LABEL_PREFIX}{mode}");
        if let Some(v) = labels.get(&level).map(|v| v.as_str().unwrap_or("")) {
            if Level::parse(v).is_none() {
                let detail = "must be one of privileged, baseline, restricted";
                out.push((level, v.to_string(), detail));
            }
        }
        let version = format!("{LABEL_PREFIX}{mode}-version");
        if let Some(v) = labels.get(&version).map(|v| v.as_str().unwrap_or("")) {
            if Version::parse(v).is_none() {
                out.push((version, v.to_string(), "must be \"latest\" or \"v1.x\""));
            }
        }
    }
    out
}

/// Existing pods a namespace update checks against a new enforce level (upstream's
/// `namespaceMaxPodsToCheck`): a namespace's update stays bounded whatever it holds.
const MAX_PODS_TO_CHECK: usize = 3000;

/// The warnings of an update of namespace `namespace` from `old_labels` to `new_labels` that
/// tightens its enforce level or changes its version: which of its `pods` the new level would
/// refuse, grouped by reasons (upstream's `EvaluatePodsInNamespace`). Nothing when the enforce
/// level is unchanged, privileged, or relaxed at the same version, or the namespace is exempt.
pub fn existing_pod_warnings(
    config: &Config,
    namespace: &str,
    old_labels: &Map<String, Value>,
    new_labels: &Map<String, Value>,
    pods: &[Value],
) -> Vec<String> {
    let Some((level, version)) = mode(new_labels, config, "enforce") else {
        return Vec::new();
    };
    let old = mode(old_labels, config, "enforce");
    let relaxed = old.is_some_and(|(l, v)| v == version && level <= l);
    if old == Some((level, version)) || relaxed || config.namespaces.iter().any(|n| n == namespace)
    {
        return Vec::new();
    }
    // reasons → (how many pods, the first pod's name)
    let mut groups: std::collections::BTreeMap<String, (usize, &str)> = Default::default();
    let checked = pods.len().min(MAX_PODS_TO_CHECK);
    for pod in &pods[..checked] {
        let spec = &pod["spec"];
        if config.exempt("", "", spec) {
            continue;
        }
        let violations = evaluate(level, version, &pod["metadata"], spec);
        if violations.is_empty() {
            continue;
        }
        let reasons: Vec<&str> = violations.iter().map(|v| v.reason).collect();
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        let group = groups.entry(reasons.join(", ")).or_insert((0, name));
        group.0 += 1;
        group.1 = group.1.min(name);
    }
    let mut warnings = Vec::new();
    if checked < pods.len() {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {} existing pods",
            pods.len()
        ));
    }
    if groups.is_empty() {
        return warnings;
    }
    warnings.push(format!(
        "existing pods in namespace {} violate the new PodSecurity enforce level \"{}:{version}\"",
        berth_core::validation::names::go_quote(namespace),
        level.as_str()
    ));
    let mut per_pods: Vec<String> = groups
        .into_iter()
        .map(|(reasons, (count, name))| match count {
            1 => format!("{name}: {reasons}"),
            2 => format!("{name} (and 1 other pod): {reasons}"),
            n => format!("{name} (and {} other pods): {reasons}", n - 1),
        })
        .collect();
    per_pods.sort();
    warnings.extend(per_pods);
    warnings
}

/// [`existing_pod_warnings`] for an update of namespace object `ns` from `old`, its pods read
/// from the store.
pub fn namespace_update_warnings(
    config: &Config,
    store: &berth_store::Store,
    ns: &Value,
    old: &Value,
) -> Vec<String> {
    let empty = Map::new();
    let labels = |o: &Value| {
        o.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (new_labels, old_labels) = (labels(ns), labels(old));
    let name = ns["metadata"]["name"].as_str().unwrap_or("");
    if mode(&new_labels, config, "enforce") == mode(&old_labels, config, "enforce") {
        return Vec::new();
    }
    match super::namespace_objects::list(store, "", "pods", name) {
        Ok(pods) => existing_pod_warnings(config, name, &old_labels, &new_labels, &pods),
        Err(_) => vec!["failed to list pods while checking new PodSecurity enforce level".into()],
    }
}

/// The PodSecurity admission plugin's configuration (upstream's
/// `pod-security.admission.config.k8s.io/v1` `PodSecurityConfiguration`): the levels of
/// namespaces without labels, and who and what is exempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `enforce`, `audit`, `warn` → (level, version).
    defaults: std::collections::BTreeMap<String, (Level, Version)>,
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
            let text = defaults[format!("{mode}-version")]
                .as_str()
                .unwrap_or("latest");
            let Some(version) = Version::parse(text) else {
                return Err(ConfigError::new(
                    PLUGIN,
                    &format!("defaults.{mode}-version"),
                    format!("Invalid value: {text:?}: must be 'latest' or of the form 'v1.x'"),
                ));
            };
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
            let violations = evaluate(level, version, meta, spec);
            if !violations.is_empty() {
                return Err(format!(
                    "violates {}",
                    describe(level, version, &violations)
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    if let Some((level, version)) = mode(labels, config, "warn") {
        let violations = evaluate(level, version, meta, spec);
        if !violations.is_empty() {
            warnings.push(format!(
                "would violate {}",
                describe(level, version, &violations)
            ));
        }
    }
    if let Some((level, version)) = mode(labels, config, "audit") {
        let violations = evaluate(level, version, meta, spec);
        if !violations.is_empty() {
            tracing::info!(audit = %describe(level, version, &violations), "pod security audit");
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
        let v = evaluate(Level::Restricted, Version::Latest, &Value::Null, &spec);
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
        let b = evaluate(Level::Baseline, Version::Latest, &Value::Null, &spec);
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

    fn with_sysctl(name: &str) -> Value {
        let mut p = pod(json!({}));
        p["spec"]["securityContext"] = json!({"sysctls": [{"name": name, "value": "1"}]});
        p
    }

    #[test]
    fn a_namespace_is_judged_by_the_version_its_labels_pin() {
        let at = |version: &str| {
            labels(json!({"pod-security.kubernetes.io/enforce": "baseline",
                          "pod-security.kubernetes.io/enforce-version": version}))
        };
        // net.ipv4.ip_local_reserved_ports became safe in v1.27.
        let p = with_sysctl("net.ipv4.ip_local_reserved_ports");
        assert_eq!(
            admit(&at("v1.26"), "Pod", &p, None).unwrap_err(),
            "violates PodSecurity \"baseline:v1.26\": forbidden sysctls (net.ipv4.ip_local_reserved_ports)"
        );
        assert_eq!(admit(&at("v1.27"), "Pod", &p, None), Ok(vec![]));
        assert_eq!(admit(&at("latest"), "Pod", &p, None), Ok(vec![]));
        // A version newer than berth's checks is judged as the newest, and named as given.
        let newer = with_sysctl("kernel.msgmax");
        assert_eq!(
            admit(&at("v1.99"), "Pod", &newer, None).unwrap_err(),
            "violates PodSecurity \"baseline:v1.99\": forbidden sysctls (kernel.msgmax)"
        );
        // A version that cannot be read is `latest`.
        assert_eq!(
            admit(&at("1.26"), "Pod", &newer, None).unwrap_err(),
            "violates PodSecurity \"baseline:latest\": forbidden sysctls (kernel.msgmax)"
        );
        // warn and audit carry their own versions.
        let w = labels(json!({"pod-security.kubernetes.io/warn": "baseline",
                              "pod-security.kubernetes.io/warn-version": "v1.26"}));
        assert_eq!(
            admit(&w, "Pod", &p, None).unwrap(),
            vec!["would violate PodSecurity \"baseline:v1.26\": forbidden sysctls (net.ipv4.ip_local_reserved_ports)".to_string()]
        );
    }

    #[test]
    fn unreadable_levels_enforce_restricted_but_turn_warnings_off() {
        let l = labels(json!({"pod-security.kubernetes.io/enforce": "strict"}));
        assert!(admit(&l, "Pod", &pod(json!({})), None)
            .unwrap_err()
            .starts_with("violates PodSecurity \"restricted:latest\""));
        let l = labels(json!({"pod-security.kubernetes.io/warn": "strict"}));
        let privileged = pod(json!({"securityContext": {"privileged": true}}));
        assert_eq!(admit(&l, "Pod", &privileged, None), Ok(vec![]));
    }

    #[test]
    fn the_configuration_defaults_carry_versions() {
        let config = Config::parse(&json!({
            "defaults": {"enforce": "baseline", "enforce-version": "v1.26"}}))
        .unwrap();
        let p = with_sysctl("net.ipv4.ip_local_reserved_ports");
        assert_eq!(
            admit_with(&config, "alice", "demo", &Map::new(), "Pod", &p, None).unwrap_err(),
            "violates PodSecurity \"baseline:v1.26\": forbidden sysctls (net.ipv4.ip_local_reserved_ports)"
        );
        // A namespace's own version label wins over the default's.
        let l = labels(json!({"pod-security.kubernetes.io/enforce-version": "v1.27"}));
        assert_eq!(
            admit_with(&config, "alice", "demo", &l, "Pod", &p, None),
            Ok(vec![])
        );
        assert!(Config::parse(&json!({"defaults": {"audit-version": "v1.026"}})).is_err());
    }

    #[test]
    fn unreadable_namespace_labels_are_named_in_upstreams_order() {
        let l = labels(json!({"pod-security.kubernetes.io/warn-version": "1.26",
                              "pod-security.kubernetes.io/enforce": "strict",
                              "pod-security.kubernetes.io/audit-version": "v1.27",
                              "other": "x"}));
        assert_eq!(
            invalid_labels(&l),
            vec![
                (
                    "pod-security.kubernetes.io/enforce".to_string(),
                    "strict".to_string(),
                    "must be one of privileged, baseline, restricted"
                ),
                (
                    "pod-security.kubernetes.io/warn-version".to_string(),
                    "1.26".to_string(),
                    "must be \"latest\" or \"v1.x\""
                ),
            ]
        );
    }

    #[test]
    fn tightening_a_namespace_warns_of_its_pods_the_new_level_refuses() {
        let old = labels(json!({}));
        let new = labels(json!({"pod-security.kubernetes.io/enforce": "baseline",
                                "pod-security.kubernetes.io/enforce-version": "v1.26"}));
        let named = |name: &str, mut p: Value| {
            p["metadata"]["name"] = json!(name);
            p
        };
        let privileged = pod(json!({"securityContext": {"privileged": true}}));
        let pods = vec![
            named("b", privileged.clone()),
            named("a", privileged),
            named("c", with_sysctl("net.ipv4.ip_local_reserved_ports")),
            named("ok", pod(json!({}))),
        ];
        let config = Config::default();
        assert_eq!(
            existing_pod_warnings(&config, "demo", &old, &new, &pods),
            [
                "existing pods in namespace \"demo\" violate the new PodSecurity enforce level \"baseline:v1.26\"",
                "a (and 1 other pod): privileged",
                "c: forbidden sysctls",
            ]
        );
        // Relaxing, or keeping the level, says nothing.
        assert!(existing_pod_warnings(&config, "demo", &new, &old, &pods).is_empty());
        assert!(existing_pod_warnings(&config, "demo", &new, &new, &pods).is_empty());
        // A new version at the same level is checked again.
        let v27 = labels(json!({"pod-security.kubernetes.io/enforce": "baseline",
                                "pod-security.kubernetes.io/enforce-version": "v1.27"}));
        assert_eq!(
            existing_pod_warnings(&config, "demo", &new, &v27, &pods)[1..],
            ["a (and 1 other pod): privileged"]
        );
    }
}
