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

/// Sysctls the baseline level allows, each with the policy version that first allowed it
/// (upstream's `sysctlsAllowedV1Dot0` ... `sysctlsAllowedV1Dot32`): newer versions allow more.
const SAFE_SYSCTLS: &[(&str, u32)] = &[
    ("kernel.shm_rmid_forced", 0),
    ("net.ipv4.ip_local_port_range", 0),
    ("net.ipv4.ip_unprivileged_port_start", 0),
    ("net.ipv4.tcp_syncookies", 0),
    ("net.ipv4.ping_group_range", 0),
    ("net.ipv4.ip_local_reserved_ports", 27),
    ("net.ipv4.tcp_keepalive_time", 29),
    ("net.ipv4.tcp_fin_timeout", 29),
    ("net.ipv4.tcp_keepalive_intvl", 29),
    ("net.ipv4.tcp_keepalive_probes", 29),
    ("net.ipv4.tcp_rmem", 32),
    ("net.ipv4.tcp_wmem", 32),
];

/// Volume types the restricted level allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
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

/// The annotation prefix of the deprecated per-container AppArmor profiles.
const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// SELinux types the baseline level allows (upstream's 1.0 list; policy v1.31 added
/// `container_engine_t`).
const SELINUX_TYPES: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];

/// `pod`, `containers "a", "b"`, or both joined by ` and `: who set a forbidden value.
fn setters(pod: bool, containers: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if pod {
        out.push("pod".to_string());
    }
    if !containers.is_empty() {
        out.push(container_list(containers));
    }
    out
}

/// Baseline: AppArmor profiles, in the `appArmorProfile` fields (only `RuntimeDefault` and
/// `Localhost`) and in the deprecated annotations (empty, `runtime/default`, `localhost/*`).
pub fn app_armor(meta: &Value, spec: &Value) -> Option<Violation> {
    let allowed_type = |sc: &Value| match sc.get("appArmorProfile").filter(|p| p.is_object()) {
        None => Ok(()),
        Some(p) => match p["type"].as_str().unwrap_or("") {
            "RuntimeDefault" | "Localhost" => Ok(()),
            other => Err(other.to_string()),
        },
    };
    let mut values = std::collections::BTreeSet::new();
    let pod = match allowed_type(&spec["securityContext"]) {
        Ok(()) => false,
        Err(v) => {
            values.insert(v);
            true
        }
    };
    let bad: Vec<&str> = containers(spec)
        .filter(|c| match allowed_type(security(c)) {
            Ok(()) => false,
            Err(v) => {
                values.insert(v);
                true
            }
        })
        .map(name)
        .collect();
    let mut who = setters(pod, &bad);
    let mut values: Vec<String> = values.into_iter().collect();
    let mut annotations: Vec<String> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(APPARMOR_ANNOTATION_PREFIX))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or("");
            let allowed = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!allowed).then(|| format!("{k}={v:?}"))
        })
        .collect();
    if !annotations.is_empty() {
        annotations.sort();
        who.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    if who.is_empty() {
        return None;
    }
    Some(Violation {
        reason: pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        detail: format!(
            "{} must not set AppArmor profile type to {}",
            who.join(" and "),
            join_quote(&values)
        ),
    })
}

/// Baseline from policy v1.31: SELinux options: a type of [`SELINUX_TYPES`] or
/// `container_engine_t`, no user, no role.
pub fn se_linux_options(spec: &Value) -> Option<Violation> {
    se_linux_options_allowing(spec, &["container_engine_t"])
}

/// Baseline before policy v1.31: SELinux options: a type of [`SELINUX_TYPES`], no user, no role.
pub fn se_linux_options_v1_0(spec: &Value) -> Option<Violation> {
    se_linux_options_allowing(spec, &[])
}

fn se_linux_options_allowing(spec: &Value, more_types: &[&str]) -> Option<Violation> {
    let mut types = std::collections::BTreeSet::new();
    let (mut user, mut role) = (false, false);
    let mut valid = |sc: &Value| -> bool {
        let Some(o) = sc.get("seLinuxOptions").filter(|o| o.is_object()) else {
            return true;
        };
        let mut ok = true;
        let t = o["type"].as_str().unwrap_or("");
        if !SELINUX_TYPES.contains(&t) && !more_types.contains(&t) {
            types.insert(t.to_string());
            ok = false;
        }
        if !o["user"].as_str().unwrap_or("").is_empty() {
            user = true;
            ok = false;
        }
        if !o["role"].as_str().unwrap_or("").is_empty() {
            role = true;
            ok = false;
        }
        ok
    };
    let pod = !valid(&spec["securityContext"]);
    let bad: Vec<&str> = containers(spec)
        .filter(|c| !valid(security(c)))
        .map(name)
        .collect();
    let who = setters(pod, &bad);
    if who.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !types.is_empty() {
        let types: Vec<String> = types.into_iter().collect();
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if user {
        data.push("user may not be set".to_string());
    }
    if role {
        data.push("role may not be set".to_string());
    }
    Some(Violation {
        reason: "seLinuxOptions",
        detail: format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            who.join(" and "),
            data.join("; ")
        ),
    })
}

/// Baseline: Windows host processes (`windowsOptions.hostProcess: true`).
pub fn windows_host_process(spec: &Value) -> Option<Violation> {
    let host_process = |sc: &Value| {
        sc.pointer("/windowsOptions/hostProcess")
            .and_then(Value::as_bool)
            == Some(true)
    };
    let pod = host_process(&spec["securityContext"]);
    let bad: Vec<&str> = containers(spec)
        .filter(|c| host_process(security(c)))
        .map(name)
        .collect();
    let who = setters(pod, &bad);
    (!who.is_empty()).then(|| Violation {
        reason: "hostProcess",
        detail: format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            who.join(" and ")
        ),
    })
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

/// Baseline from policy v1.35: as [`proc_mount`], but a pod in its own user namespace
/// (`hostUsers: false`) may unmask `/proc`.
pub fn proc_mount_unless_user_namespaced(spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    proc_mount(spec)
}

/// Whether the pod runs in its own user namespace (`hostUsers: false`), which relaxes some
/// checks from policy v1.35 (upstream's `relaxPolicyForUserNamespacePod`).
fn user_namespaced(spec: &Value) -> bool {
    spec["hostUsers"].as_bool() == Some(false)
}

/// Whether the pod declares itself a Windows pod (`os.name: windows`), which the restricted
/// checks of Linux-only fields exempt from policy v1.25.
fn windows(spec: &Value) -> bool {
    spec["os"]["name"].as_str() == Some("windows")
}

/// Baseline before policy v1.35, and restricted (`procMount_restricted`) from it: `procMount`
/// other than `Default`.
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
    mounts.sort_unstable();
    (!bad.is_empty()).then(|| Violation {
        reason: "procMount",
        detail: format!(
            "{} must not set securityContext.procMount to {}",
            container_list(&bad),
            join_quote(&mounts)
        ),
    })
}

/// The annotations through which pods chose a seccomp profile before the field existed.
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Baseline before policy v1.19: the seccomp annotations may name only `runtime/default`,
/// `docker/default` or a `localhost/` profile.
pub fn seccomp_annotations(meta: &Value, spec: &Value) -> Option<Violation> {
    let valid =
        |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let annotations = &meta["annotations"];
    let mut forbidden = std::collections::BTreeSet::new();
    let mut judge = |key: String| {
        if let Some(v) = annotations[key.as_str()].as_str() {
            if !valid(v) {
                forbidden.insert(format!("{key}={}", go_quote(v)));
            }
        }
    };
    judge(SECCOMP_POD_ANNOTATION.to_string());
    for c in containers(spec) {
        judge(format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", name(c)));
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    (!forbidden.is_empty()).then(|| Violation {
        reason: "seccompProfile",
        detail: format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", forbidden.len()),
            forbidden.join(", ")
        ),
    })
}

/// A seccomp profile type the standards allow.
fn valid_seccomp(t: &str) -> bool {
    matches!(t, "RuntimeDefault" | "Localhost")
}

/// The type of a security context's seccomp profile, when it sets one (`""` when the profile
/// names none).
fn seccomp_profile(sc: &Value) -> Option<&str> {
    sc.get("seccompProfile")
        .filter(|p| p.is_object())
        .map(|p| p["type"].as_str().unwrap_or(""))
}

/// Baseline from policy v1.19: a seccomp profile, where set, is `RuntimeDefault` or
/// `Localhost`.
pub fn seccomp_baseline(spec: &Value) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut values = std::collections::BTreeSet::new();
    if let Some(t) = seccomp_profile(&spec["securityContext"]).filter(|t| !valid_seccomp(t)) {
        setters.push("pod".to_string());
        values.insert(t);
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| match seccomp_profile(security(c)) {
            Some(t) if !valid_seccomp(t) => {
                values.insert(t);
                true
            }
            _ => false,
        })
        .map(name)
        .collect();
    if !bad.is_empty() {
        setters.push(container_list(&bad));
    }
    let values: Vec<&str> = values.into_iter().collect();
    (!setters.is_empty()).then(|| Violation {
        reason: "seccompProfile",
        detail: format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    })
}

/// Go's `%q` of a string.
fn go_quote(s: &str) -> String {
    berth_core::validation::names::go_quote(s)
}

/// Baseline from policy v1.32: only the safe sysctls.
pub fn sysctls(spec: &Value) -> Option<Violation> {
    sysctls_at(spec, 32)
}

/// Baseline from policy v1.29 to v1.31.
pub fn sysctls_v1_29(spec: &Value) -> Option<Violation> {
    sysctls_at(spec, 29)
}

/// Baseline at policy v1.27 and v1.28.
pub fn sysctls_v1_27(spec: &Value) -> Option<Violation> {
    sysctls_at(spec, 27)
}

/// Baseline before policy v1.27.
pub fn sysctls_v1_0(spec: &Value) -> Option<Violation> {
    sysctls_at(spec, 0)
}

/// The sysctls that are not safe at policy version `v1.<minor>`.
fn sysctls_at(spec: &Value, minor: u32) -> Option<Violation> {
    let safe = |s: &str| {
        SAFE_SYSCTLS
            .iter()
            .any(|(n, since)| *n == s && *since <= minor)
    };
    let bad: Vec<&str> = spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .filter(|&s| !safe(s))
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

/// Restricted from policy v1.25: as [`allow_privilege_escalation`], Windows pods exempt.
pub fn allow_privilege_escalation_v1_25(spec: &Value) -> Option<Violation> {
    if windows(spec) {
        return None;
    }
    allow_privilege_escalation(spec)
}

/// Restricted from policy v1.25: as [`capabilities_restricted`], Windows pods exempt.
pub fn capabilities_restricted_v1_25(spec: &Value) -> Option<Violation> {
    if windows(spec) {
        return None;
    }
    capabilities_restricted(spec)
}

/// Restricted from policy v1.25: as [`seccomp_restricted`], Windows pods exempt.
pub fn seccomp_restricted_v1_25(spec: &Value) -> Option<Violation> {
    if windows(spec) {
        return None;
    }
    seccomp_restricted(spec)
}

/// Restricted from policy v1.35: as [`run_as_non_root`], pods in their own user namespace
/// exempt (their root is not the node's).
pub fn run_as_non_root_v1_35(spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    run_as_non_root(spec)
}

/// Restricted from policy v1.35: as [`run_as_user`], pods in their own user namespace exempt.
pub fn run_as_user_v1_35(spec: &Value) -> Option<Violation> {
    if user_namespaced(spec) {
        return None;
    }
    run_as_user(spec)
}

/// Baseline from policy v1.34: probes and lifecycle handlers may not name a `host` (they would
/// reach the node's or another host's network from the kubelet).
pub fn host_probes_and_lifecycle(spec: &Value) -> Option<Violation> {
    let mut bad = std::collections::BTreeSet::new();
    let mut hosts = std::collections::BTreeSet::new();
    for c in containers(spec) {
        let handlers = ["livenessProbe", "readinessProbe", "startupProbe"]
            .into_iter()
            .map(|p| &c[p])
            .chain(
                ["postStart", "preStop"]
                    .into_iter()
                    .map(|h| &c["lifecycle"][h]),
            );
        for handler in handlers {
            for action in ["httpGet", "tcpSocket"] {
                if let Some(host) = handler[action]["host"].as_str().filter(|h| !h.is_empty()) {
                    bad.insert(name(c));
                    hosts.insert(host);
                }
            }
        }
    }
    let bad: Vec<&str> = bad.into_iter().collect();
    let hosts: Vec<&str> = hosts.into_iter().collect();
    (!bad.is_empty()).then(|| Violation {
        reason: "probe or lifecycle host",
        detail: format!(
            "{} {} {} {} {}",
            pluralize("container", "containers", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
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
    let allowed = valid_seccomp;
    let mut bad_setters = Vec::new();
    let mut bad_values: Vec<&str> = Vec::new();
    let mut pod_set = false;
    if let Some(t) = seccomp_profile(&spec["securityContext"]) {
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
        match seccomp_profile(security(c)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detail(v: Option<Violation>) -> (String, String) {
        let v = v.expect("a violation");
        (v.reason.to_string(), v.detail)
    }

    fn container(name: &str, security_context: &Value) -> Value {
        json!({"name": name, "securityContext": security_context})
    }

    // Upstream's check_appArmorProfile_test.go, with the 1.30 check's words.
    #[test]
    fn app_armor_annotations_and_profile_types() {
        let allowed = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/test": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/local": "localhost/sec-profile01",
            "env": "prod"}});
        assert_eq!(app_armor(&allowed, &json!({})), None);
        assert_eq!(app_armor(&json!({}), &json!({})), None);
        let meta = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/": "bogus",
            "container.apparmor.security.beta.kubernetes.io/a": "",
            "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
            "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
            "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/f": "unknown",
        }});
        assert_eq!(
            detail(app_armor(&meta, &json!({}))),
            (
                "forbidden AppArmor profiles".into(),
                r#"annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/=\"bogus\"", "container.apparmor.security.beta.kubernetes.io/e=\"unconfined\"", "container.apparmor.security.beta.kubernetes.io/f=\"unknown\"""#.into()
            )
        );
        let spec = json!({
        "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
        "containers": [
            container("a", &json!({"appArmorProfile": {"type": "RuntimeDefault"}})),
            container("b", &json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}})),
            container("c", &json!({"appArmorProfile": {"type": "Unconfined"}})),
        ]});
        assert_eq!(
            detail(app_armor(&json!({}), &spec)),
            (
                "forbidden AppArmor profile".into(),
                r#"pod and container "c" must not set AppArmor profile type to "Unconfined""#
                    .into()
            )
        );
    }

    // Upstream's check_seLinuxOptions_test.go.
    #[test]
    fn se_linux_options_vectors() {
        let valid_containers = vec![
            container("a", &json!({"seLinuxOptions": {"type": "container_t"}})),
            container(
                "b",
                &json!({"seLinuxOptions": {"type": "container_init_t"}}),
            ),
            container("c", &json!({"seLinuxOptions": {"type": "container_kvm_t"}})),
            container(
                "d",
                &json!({"seLinuxOptions": {"type": "container_engine_t"}}),
            ),
        ];
        let mut invalid_containers = valid_containers.clone();
        invalid_containers.extend([
            container("e", &json!({"seLinuxOptions": {"type": "bar"}})),
            container("f", &json!({"seLinuxOptions": {"user": "bar"}})),
            container("g", &json!({"seLinuxOptions": {"role": "baz"}})),
        ]);
        let bad_pod = json!({"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}});
        let cases = [
            (
                json!({"securityContext": &bad_pod, "containers": &invalid_containers}),
                r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": &bad_pod, "containers": &valid_containers}),
                r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {}}, "containers": &invalid_containers}),
                r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"type": "bad"}}}),
                r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"user": "bad"}}}),
                "pod set forbidden securityContext.seLinuxOptions: user may not be set",
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"role": "bad"}}}),
                "pod set forbidden securityContext.seLinuxOptions: role may not be set",
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(
                detail(se_linux_options(&spec)),
                ("seLinuxOptions".to_string(), want.to_string())
            );
        }
        assert_eq!(
            se_linux_options(&json!({"containers": valid_containers})),
            None
        );
    }

    // Upstream's check_windowsHostProcess_test.go.
    #[test]
    fn windows_host_process_vectors() {
        let host = json!({"windowsOptions": {"hostProcess": true}});
        let not = json!({"windowsOptions": {"hostProcess": false}});
        let spec = json!({"securityContext": &host, "containers": [
            container("a", &json!({})), container("b", &host), container("c", &host),
            container("d", &not)]});
        assert_eq!(
            detail(windows_host_process(&spec)),
            (
                "hostProcess".into(),
                r#"pod and containers "b", "c" must not set securityContext.windowsOptions.hostProcess=true"#.into()
            )
        );
        let one = json!({"containers": [container("a", &host)]});
        assert_eq!(
            detail(windows_host_process(&one)).1,
            r#"container "a" must not set securityContext.windowsOptions.hostProcess=true"#
        );
        let pod_only = json!({"securityContext": &host, "containers": [container("a", &not)]});
        assert_eq!(
            detail(windows_host_process(&pod_only)).1,
            "pod must not set securityContext.windowsOptions.hostProcess=true"
        );
        assert_eq!(
            windows_host_process(&json!({"securityContext": &not})),
            None
        );
    }

    // Upstream's check_hostProbesAndhostLifecycle_test.go.
    #[test]
    fn host_probes_and_lifecycle_vectors() {
        let probe = |kind: &str, action: &str, host: &str| json!({kind: {action: {"host": host}}});
        for (c, want) in [
            (
                json!({"name": "a", "livenessProbe": {"httpGet": {"host": "invalid.host"}}}),
                r#"container "a" uses probe or lifecycle host "invalid.host""#,
            ),
            (
                json!({"name": "b", "readinessProbe": {"tcpSocket": {"host": "invalid.host"}}}),
                r#"container "b" uses probe or lifecycle host "invalid.host""#,
            ),
            (
                json!({"name": "d", "lifecycle": {"postStart": {"tcpSocket": {"host": "invalid.host"}}}}),
                r#"container "d" uses probe or lifecycle host "invalid.host""#,
            ),
            (
                json!({"name": "e", "lifecycle": {"preStop": {"httpGet": {"host": "another.invalid.host"}}}}),
                r#"container "e" uses probe or lifecycle host "another.invalid.host""#,
            ),
        ] {
            let spec = json!({"containers": [c]});
            assert_eq!(
                detail(host_probes_and_lifecycle(&spec)),
                ("probe or lifecycle host".to_string(), want.to_string())
            );
        }
        let mut invalid2 = probe("startupProbe", "httpGet", "a.com");
        invalid2["name"] = json!("invalid2");
        invalid2["lifecycle"] = json!({"preStop": {"tcpSocket": {"host": "b.com"}}});
        let mut invalid1 = probe("livenessProbe", "httpGet", "a.com");
        invalid1["name"] = json!("invalid1");
        let spec = json!({"containers": [{"name": "valid"}, invalid1, invalid2]});
        assert_eq!(
            detail(host_probes_and_lifecycle(&spec)).1,
            r#"containers "invalid1", "invalid2" use probe or lifecycle hosts "a.com", "b.com""#
        );
        let init = json!({"initContainers": [{"name": "init",
            "livenessProbe": {"httpGet": {"host": "invalid.init.host"}}}]});
        assert_eq!(
            detail(host_probes_and_lifecycle(&init)).1,
            r#"container "init" uses probe or lifecycle host "invalid.init.host""#
        );
        let empty =
            json!({"containers": [{"name": "a", "livenessProbe": {"httpGet": {"host": ""}}}]});
        assert_eq!(host_probes_and_lifecycle(&empty), None);
    }

    // Upstream's check_seccompProfile_baseline_test.go: one detail naming every setter.
    #[test]
    fn seccomp_baseline_names_the_pod_and_containers_together() {
        let unconfined = json!({"seccompProfile": {"type": "Unconfined"}});
        let spec = json!({"securityContext": &unconfined, "containers": [
            container("a", &unconfined), container("b", &json!({})),
            container("c", &json!({"seccompProfile": {"type": "RuntimeDefault"}})),
            container("d", &unconfined)]});
        assert_eq!(
            detail(seccomp_baseline(&spec)),
            (
                "seccompProfile".into(),
                r#"pod and containers "a", "d" must not set securityContext.seccompProfile.type to "Unconfined""#.into()
            )
        );
        let ok = json!({"containers": [container("a", &json!({"seccompProfile": {"type": "Localhost"}}))]});
        assert_eq!(seccomp_baseline(&ok), None);
        let meta = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
            "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/b": "localhost/p",
            "container.seccomp.security.alpha.kubernetes.io/c": "bogus"}});
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
        assert_eq!(
            detail(seccomp_annotations(&meta, &spec)).1,
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/c="bogus""#
        );
    }

    // Upstream's check_procMount_test.go: the forbidden types sorted.
    #[test]
    fn proc_mount_names_sorted_types() {
        let spec = json!({"containers": [
            container("a", &json!({"procMount": "Unmasked"})),
            container("b", &json!({"procMount": "Default"})),
            container("c", &json!({"procMount": "Other"}))]});
        assert_eq!(
            detail(proc_mount(&spec)).1,
            r#"containers "a", "c" must not set securityContext.procMount to "Other", "Unmasked""#
        );
        let mut userns = spec.clone();
        userns["hostUsers"] = json!(false);
        assert_eq!(proc_mount_unless_user_namespaced(&userns), None);
        assert!(proc_mount_unless_user_namespaced(&spec).is_some());
    }

    #[test]
    fn image_volumes_are_allowed_at_restricted() {
        let spec = json!({"volumes": [{"name": "i", "image": {"reference": "x"}}]});
        assert_eq!(restricted_volumes(&spec), None);
    }
}
