//! The Pod Security Standards' checks (upstream's `pod-security-admission/policy/check_*.go`),
//! each a pure function of a pod spec giving its reason and detail when the pod breaks it.

use serde_json::Value;

/// A broken check: upstream's `CheckResult{ForbiddenReason, ForbiddenDetail}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub reason: &'static str,
    pub detail: String,
}

/// Capabilities the baseline level lets containers add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls the baseline level allows.
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Volume types the restricted level allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| spec[k].as_array().into_iter().flatten())
}

fn name(c: &Value) -> &str {
    c["name"].as_str().unwrap_or("")
}

/// `"a", "b"`.
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|s| format!("{:?}", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pluralize(singular: &'static str, plural: &'static str, n: usize) -> &'static str {
    if n == 1 {
        singular
    } else {
        plural
    }
}

fn container_list(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

fn violation(reason: &'static str, details: Vec<String>) -> Option<Violation> {
    (!details.is_empty()).then(|| Violation {
        reason,
        detail: details.join("; "),
    })
}

fn security(c: &Value) -> &Value {
    &c["securityContext"]
}

/// Baseline: `hostNetwork`, `hostPID`, `hostIPC`.
pub fn host_namespaces(spec: &Value) -> Option<Violation> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|k| spec[*k].as_bool() == Some(true))
        .map(|k| format!("{k}=true"))
        .collect();
    (!set.is_empty()).then(|| Violation {
        reason: "host namespaces",
        detail: set.join(", "),
    })
}

/// Baseline: privileged containers.
pub fn privileged(spec: &Value) -> Option<Violation> {
    let bad: Vec<&str> = containers(spec)
        .filter(|c| security(c)["privileged"].as_bool() == Some(true))
        .map(name)
        .collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "privileged",
        detail: format!(
            "{} must not set securityContext.privileged=true",
            container_list(&bad)
        ),
    })
}

fn added_capabilities(c: &Value) -> impl Iterator<Item = &str> {
    security(c)["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Baseline: capabilities beyond the default set.
pub fn capabilities_baseline(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut caps: Vec<&str> = Vec::new();
    for c in containers(spec) {
        let extra: Vec<&str> = added_capabilities(c)
            .filter(|cap| !BASELINE_CAPABILITIES.contains(cap))
            .collect();
        if !extra.is_empty() {
            bad.push(name(c));
            for cap in extra {
                if !caps.contains(&cap) {
                    caps.push(cap);
                }
            }
        }
    }
    (!bad.is_empty()).then(|| Violation {
        reason: "non-default capabilities",
        detail: format!(
            "{} must not include {} in securityContext.capabilities.add",
            container_list(&bad),
            join_quote(&caps)
        ),
    })
}

/// Baseline: hostPath volumes.
pub fn host_path_volumes(spec: &Value) -> Option<Violation> {
    let bad: Vec<&str> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null()))
        .map(name)
        .collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "hostPath volumes",
        detail: format!(
            "{} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    })
}

/// Baseline: host ports.
pub fn host_ports(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut ports = Vec::new();
    for c in containers(spec) {
        let used: Vec<String> = c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["hostPort"].as_i64())
            .filter(|p| *p != 0)
            .map(|p| p.to_string())
            .collect();
        if !used.is_empty() {
            bad.push(name(c));
            ports.extend(used);
        }
    }
    (!bad.is_empty()).then(|| Violation {
        reason: "hostPort",
        detail: format!(
            "{} {} {} {}",
            pluralize("container", "containers", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            format_args!(
                "{} {}",
                pluralize("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            )
        ),
    })
}

/// Baseline: `procMount` other than `Default`.
pub fn proc_mount(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut mounts: Vec<&str> = Vec::new();
    for c in containers(spec) {
        if let Some(m) = security(c)["procMount"]
            .as_str()
            .filter(|m| *m != "Default")
        {
            bad.push(name(c));
            if !mounts.contains(&m) {
                mounts.push(m);
            }
        }
    }
    (!bad.is_empty()).then(|| Violation {
        reason: "procMount",
        detail: format!(
            "{} must not set securityContext.procMount to {}",
            container_list(&bad),
            join_quote(&mounts)
        ),
    })
}

fn seccomp_type(v: &Value) -> Option<&str> {
    v["seccompProfile"]["type"].as_str()
}

/// Baseline: no `Unconfined` seccomp profile.
pub fn seccomp_baseline(spec: &Value) -> Option<Violation> {
    let mut details = Vec::new();
    if seccomp_type(&spec["securityContext"]) == Some("Unconfined") {
        details.push(
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\"".to_string(),
        );
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| seccomp_type(security(c)) == Some("Unconfined"))
        .map(name)
        .collect();
    if !bad.is_empty() {
        details.push(format!(
            "{} must not set securityContext.seccompProfile.type to \"Unconfined\"",
            container_list(&bad)
        ));
    }
    violation("seccompProfile", details)
}

/// Baseline: only the safe sysctls.
pub fn sysctls(spec: &Value) -> Option<Violation> {
    let bad: Vec<&str> = spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .filter(|s| !SAFE_SYSCTLS.contains(s))
        .collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "forbidden sysctls",
        detail: bad.join(", "),
    })
}

/// Restricted: `allowPrivilegeEscalation: false` on every container.
pub fn allow_privilege_escalation(spec: &Value) -> Option<Violation> {
    let bad: Vec<&str> = containers(spec)
        .filter(|c| security(c)["allowPrivilegeEscalation"].as_bool() != Some(false))
        .map(name)
        .collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "allowPrivilegeEscalation != false",
        detail: format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            container_list(&bad)
        ),
    })
}

/// Restricted: drop `ALL`, add nothing but `NET_BIND_SERVICE`.
pub fn capabilities_restricted(spec: &Value) -> Option<Violation> {
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut caps: Vec<&str> = Vec::new();
    for c in containers(spec) {
        let drops_all = security(c)["capabilities"]["drop"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d.as_str() == Some("ALL"));
        if !drops_all {
            missing_drop.push(name(c));
        }
        let extra: Vec<&str> = added_capabilities(c)
            .filter(|cap| *cap != "NET_BIND_SERVICE")
            .collect();
        if !extra.is_empty() {
            adding.push(name(c));
            for cap in extra {
                if !caps.contains(&cap) {
                    caps.push(cap);
                }
            }
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            container_list(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            container_list(&adding),
            join_quote(&caps)
        ));
    }
    violation("unrestricted capabilities", details)
}

/// Restricted: only the volume types that carry no host access.
pub fn restricted_volumes(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    for v in spec["volumes"].as_array().into_iter().flatten() {
        let Some(o) = v.as_object() else { continue };
        let kind = o
            .iter()
            .find(|(k, val)| *k != "name" && !val.is_null())
            .map(|(k, _)| k.as_str());
        if let Some(kind) = kind.filter(|k| !RESTRICTED_VOLUMES.contains(k)) {
            bad.push(name(v));
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    kinds.sort_unstable();
    (!bad.is_empty()).then(|| Violation {
        reason: "restricted volume types",
        detail: format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                kinds.len()
            ),
            join_quote(&kinds)
        ),
    })
}

/// Restricted: `runAsNonRoot: true` on the pod or every container. Explicit `false`s are
/// told first, and alone.
pub fn run_as_non_root(spec: &Value) -> Option<Violation> {
    let pod = spec["securityContext"]["runAsNonRoot"].as_bool();
    let mut bad_setters = Vec::new();
    if pod == Some(false) {
        bad_setters.push("pod".to_string());
    }
    let mut explicit_false = Vec::new();
    let mut unset = Vec::new();
    for c in containers(spec) {
        match security(c)["runAsNonRoot"].as_bool() {
            Some(false) => explicit_false.push(name(c)),
            None if pod != Some(true) => unset.push(name(c)),
            _ => {}
        }
    }
    if !explicit_false.is_empty() {
        bad_setters.push(container_list(&explicit_false));
    }
    if !bad_setters.is_empty() {
        return Some(Violation {
            reason: "runAsNonRoot != true",
            detail: format!(
                "{} must not set securityContext.runAsNonRoot=false",
                bad_setters.join(" and ")
            ),
        });
    }
    (!unset.is_empty()).then(|| Violation {
        reason: "runAsNonRoot != true",
        detail: format!(
            "pod or {} {} must set securityContext.runAsNonRoot=true",
            pluralize("container", "containers", unset.len()),
            join_quote(&unset)
        ),
    })
}

/// Restricted: no `runAsUser: 0`.
pub fn run_as_user(spec: &Value) -> Option<Violation> {
    let mut details = Vec::new();
    if spec["securityContext"]["runAsUser"].as_i64() == Some(0) {
        details.push("pod must not set runAsUser=0".to_string());
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| security(c)["runAsUser"].as_i64() == Some(0))
        .map(name)
        .collect();
    if !bad.is_empty() {
        details.push(format!("{} must not set runAsUser=0", container_list(&bad)));
    }
    violation("runAsUser=0", details)
}

/// Restricted: a `RuntimeDefault` or `Localhost` seccomp profile for every container.
/// Explicit bad profiles are told first, and alone.
pub fn seccomp_restricted(spec: &Value) -> Option<Violation> {
    let allowed = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    let mut bad_setters = Vec::new();
    let mut bad_values: Vec<&str> = Vec::new();
    let mut pod_set = false;
    if let Some(t) = seccomp_type(&spec["securityContext"]) {
        if allowed(t) {
            pod_set = true;
        } else {
            bad_setters.push("pod".to_string());
            bad_values.push(t);
        }
    }
    let mut explicit = Vec::new();
    let mut unset = Vec::new();
    for c in containers(spec) {
        match seccomp_type(security(c)) {
            Some(t) if !allowed(t) => {
                explicit.push(name(c));
                bad_values.push(t);
            }
            None if !pod_set => unset.push(name(c)),
            _ => {}
        }
    }
    if !explicit.is_empty() {
        bad_setters.push(container_list(&explicit));
    }
    if !bad_setters.is_empty() {
        bad_values.sort_unstable();
        bad_values.dedup();
        return Some(Violation {
            reason: "seccompProfile",
            detail: format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                bad_setters.join(" and "),
                join_quote(&bad_values)
            ),
        });
    }
    (!unset.is_empty()).then(|| Violation {
        reason: "seccompProfile",
        detail: format!(
            "pod or {} {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            pluralize("container", "containers", unset.len()),
            join_quote(&unset)
        ),
    })
}
