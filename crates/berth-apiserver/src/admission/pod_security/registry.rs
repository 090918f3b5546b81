//! Which checks a level holds at a policy version (upstream's `policy/registry.go`): each check
//! has revisions, each in force from a minimum version `v1.<minor>` until the next revision;
//! a namespace pinned to `v1.26` is judged by the revisions in force at v1.26, so a cluster
//! upgrade does not tighten (or loosen) what an admitted workload is held to.
//!
//! The order of the results is upstream's: the baseline checks by ID, then the restricted ones
//! by ID; at the restricted level a restricted revision may override baseline checks it makes
//! redundant (restricted volumes cover hostPath volumes, and so on).

use super::checks::{self, Violation};
use super::Level;
use serde_json::Value;

/// The newest policy version any check has a revision for: `latest`, and every version newer
/// than it, are judged as this one (upstream's `maxVersion`).
pub const LATEST_MINOR: u32 = 35;

/// A policy version named by a namespace label or the configuration (upstream's `api.Version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Latest,
    /// `v1.<minor>`.
    Minor(u32),
}

impl Version {
    /// `latest` or `v1.<minor>` (no leading zeros), as upstream's `ParseVersion`; `None` for
    /// anything else.
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::Latest);
        }
        let minor = s.strip_prefix("v1.")?;
        let digits = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits || (minor.len() > 1 && minor.starts_with('0')) {
            return None;
        }
        minor.parse().ok().map(Version::Minor)
    }

    /// The minor version whose revisions apply.
    fn resolve(self) -> u32 {
        match self {
            Version::Latest => LATEST_MINOR,
            Version::Minor(m) => m.min(LATEST_MINOR),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// A check of the pod spec, or of the pod's metadata and spec (annotations).
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

/// One revision of a check: in force from `v1.<since>`, and, for a restricted check, the
/// baseline checks it overrides at the restricted level while in force.
struct Revision {
    since: u32,
    check: Check,
    overrides: &'static [&'static str],
}

const fn spec(since: u32, c: fn(&Value) -> Option<Violation>) -> Revision {
    Revision {
        since,
        check: Check::Spec(c),
        overrides: &[],
    }
}

const fn pod(since: u32, c: fn(&Value, &Value) -> Option<Violation>) -> Revision {
    Revision {
        since,
        check: Check::Pod(c),
        overrides: &[],
    }
}

const fn overriding(
    since: u32,
    c: fn(&Value) -> Option<Violation>,
    overrides: &'static [&'static str],
) -> Revision {
    Revision {
        since,
        check: Check::Spec(c),
        overrides,
    }
}

/// A registered check: its ID and its revisions, oldest first.
struct Registered {
    id: &'static str,
    revisions: &'static [Revision],
}

/// The baseline checks, by ID.
const BASELINE: &[Registered] = &[
    Registered {
        id: "appArmorProfile",
        revisions: &[pod(0, checks::app_armor)],
    },
    Registered {
        id: "capabilities_baseline",
        revisions: &[spec(0, checks::capabilities_baseline)],
    },
    Registered {
        id: "hostNamespaces",
        revisions: &[spec(0, checks::host_namespaces)],
    },
    Registered {
        id: "hostPathVolumes",
        revisions: &[spec(0, checks::host_path_volumes)],
    },
    Registered {
        id: "hostPorts",
        revisions: &[spec(0, checks::host_ports)],
    },
    Registered {
        id: "hostProbesAndHostLifecycle",
        revisions: &[spec(34, checks::host_probes_and_lifecycle)],
    },
    Registered {
        id: "privileged",
        revisions: &[spec(0, checks::privileged)],
    },
    Registered {
        id: "procMount",
        revisions: &[
            spec(0, checks::proc_mount),
            spec(35, checks::proc_mount_unless_user_namespaced),
        ],
    },
    Registered {
        id: "seLinuxOptions",
        revisions: &[
            spec(0, checks::se_linux_options_v1_0),
            spec(31, checks::se_linux_options),
        ],
    },
    Registered {
        id: "seccompProfile_baseline",
        revisions: &[
            pod(0, checks::seccomp_annotations),
            spec(19, checks::seccomp_baseline),
        ],
    },
    Registered {
        id: "sysctls",
        revisions: &[
            spec(0, checks::sysctls_v1_0),
            spec(27, checks::sysctls_v1_27),
            spec(29, checks::sysctls_v1_29),
            spec(32, checks::sysctls),
        ],
    },
    Registered {
        id: "windowsHostProcess",
        revisions: &[spec(0, checks::windows_host_process)],
    },
];

/// The restricted level's own checks, by ID.
const RESTRICTED: &[Registered] = &[
    Registered {
        id: "allowPrivilegeEscalation",
        revisions: &[
            spec(8, checks::allow_privilege_escalation),
            spec(25, checks::allow_privilege_escalation_v1_25),
        ],
    },
    Registered {
        id: "capabilities_restricted",
        revisions: &[
            overriding(
                22,
                checks::capabilities_restricted,
                &["capabilities_baseline"],
            ),
            overriding(
                25,
                checks::capabilities_restricted_v1_25,
                &["capabilities_baseline"],
            ),
        ],
    },
    Registered {
        id: "procMount_restricted",
        revisions: &[overriding(35, checks::proc_mount, &["procMount"])],
    },
    Registered {
        id: "restrictedVolumes",
        revisions: &[overriding(
            0,
            checks::restricted_volumes,
            &["hostPathVolumes"],
        )],
    },
    Registered {
        id: "runAsNonRoot",
        revisions: &[
            spec(0, checks::run_as_non_root),
            spec(35, checks::run_as_non_root_v1_35),
        ],
    },
    Registered {
        id: "runAsUser",
        revisions: &[
            spec(23, checks::run_as_user),
            spec(35, checks::run_as_user_v1_35),
        ],
    },
    Registered {
        id: "seccompProfile_restricted",
        revisions: &[
            overriding(19, checks::seccomp_restricted, &["seccompProfile_baseline"]),
            overriding(
                25,
                checks::seccomp_restricted_v1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    },
];

impl Registered {
    /// The revision in force at `v1.<minor>`, if the check exists yet.
    fn at(&self, minor: u32) -> Option<&Revision> {
        self.revisions.iter().rev().find(|r| r.since <= minor)
    }
}

/// Every broken check of `level` at `version` for a pod's `meta`data and `spec`, in
/// upstream's order.
pub fn evaluate(level: Level, version: Version, meta: &Value, spec: &Value) -> Vec<Violation> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let minor = version.resolve();
    let restricted: Vec<&Revision> = if level == Level::Restricted {
        RESTRICTED.iter().filter_map(|c| c.at(minor)).collect()
    } else {
        Vec::new()
    };
    let overridden = |id: &str| restricted.iter().any(|r| r.overrides.contains(&id));
    BASELINE
        .iter()
        .filter(|c| !overridden(c.id))
        .filter_map(|c| c.at(minor))
        .chain(restricted.iter().copied())
        .filter_map(|r| r.check.run(meta, spec))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_parse_as_upstreams() {
        assert_eq!(Version::parse("latest"), Some(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Some(Version::Minor(0)));
        assert_eq!(Version::parse("v1.26"), Some(Version::Minor(26)));
        for bad in [
            "", "1.26", "v1", "v1.", "v1.026", "v2.0", "v1.x", "v1.26.0", "Latest",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(Version::Minor(26).to_string(), "v1.26");
        assert_eq!(Version::Latest.to_string(), "latest");
        // Versions newer than the newest revision are judged as it, as `latest` is.
        assert_eq!(Version::Minor(99).resolve(), LATEST_MINOR);
        assert_eq!(Version::Latest.resolve(), LATEST_MINOR);
    }

    #[test]
    fn the_newest_revision_is_latest() {
        let newest = BASELINE
            .iter()
            .chain(RESTRICTED)
            .flat_map(|c| c.revisions.iter().map(|r| r.since))
            .max();
        assert_eq!(newest, Some(LATEST_MINOR));
        // Revisions are strictly increasing and the IDs sorted, as upstream's registry
        // requires and orders its results.
        for table in [BASELINE, RESTRICTED] {
            assert!(table.windows(2).all(|w| w[0].id < w[1].id));
            for c in table {
                assert!(c.revisions.windows(2).all(|w| w[0].since < w[1].since));
            }
        }
    }

    fn reasons(level: Level, version: Version, meta: &Value, spec: &Value) -> Vec<&'static str> {
        evaluate(level, version, meta, spec)
            .into_iter()
            .map(|v| v.reason)
            .collect()
    }

    fn with_sysctl(name: &str) -> Value {
        json!({"securityContext": {"sysctls": [{"name": name, "value": "1"}]},
               "containers": [{"name": "a"}]})
    }

    // Upstream's check_sysctls_test.go: each version allows what was safe at it.
    #[test]
    fn newer_versions_allow_more_sysctls() {
        let b = Level::Baseline;
        let m = Version::Minor;
        let at = |v, s| reasons(b, v, &Value::Null, &with_sysctl(s));
        assert_eq!(
            at(m(26), "net.ipv4.ip_local_reserved_ports"),
            ["forbidden sysctls"]
        );
        assert!(at(m(27), "net.ipv4.ip_local_reserved_ports").is_empty());
        assert_eq!(
            at(m(28), "net.ipv4.tcp_keepalive_time"),
            ["forbidden sysctls"]
        );
        assert!(at(m(29), "net.ipv4.tcp_keepalive_time").is_empty());
        assert_eq!(at(m(31), "net.ipv4.tcp_rmem"), ["forbidden sysctls"]);
        assert!(at(m(32), "net.ipv4.tcp_wmem").is_empty());
        assert!(at(Version::Latest, "net.ipv4.tcp_wmem").is_empty());
        assert!(at(m(0), "kernel.shm_rmid_forced").is_empty());
        let v = evaluate(
            b,
            m(26),
            &Value::Null,
            &with_sysctl("net.ipv4.ip_local_reserved_ports"),
        );
        assert_eq!(v[0].detail, "net.ipv4.ip_local_reserved_ports");
    }

    #[test]
    fn restricted_checks_come_into_force_at_their_versions() {
        let r = Level::Restricted;
        let m = Version::Minor;
        // A pod that sets nothing: runAsNonRoot from v1.0, allowPrivilegeEscalation from
        // v1.8, seccomp from v1.19, capabilities from v1.22.
        let plain = json!({"containers": [{"name": "a"}]});
        assert_eq!(
            reasons(r, m(0), &Value::Null, &plain),
            ["runAsNonRoot != true"]
        );
        assert_eq!(
            reasons(r, m(8), &Value::Null, &plain),
            ["allowPrivilegeEscalation != false", "runAsNonRoot != true"]
        );
        assert_eq!(
            reasons(r, m(19), &Value::Null, &plain),
            [
                "allowPrivilegeEscalation != false",
                "runAsNonRoot != true",
                "seccompProfile"
            ]
        );
        assert_eq!(
            reasons(r, m(22), &Value::Null, &plain),
            [
                "allowPrivilegeEscalation != false",
                "unrestricted capabilities",
                "runAsNonRoot != true",
                "seccompProfile"
            ]
        );
        // runAsUser=0 is refused from v1.23.
        let root = json!({"securityContext": {"runAsUser": 0, "runAsNonRoot": true},
            "containers": [{"name": "a"}]});
        assert!(!reasons(r, m(22), &Value::Null, &root).contains(&"runAsUser=0"));
        assert!(reasons(r, m(23), &Value::Null, &root).contains(&"runAsUser=0"));
    }

    #[test]
    fn before_v1_22_restricted_judges_capabilities_as_baseline_does() {
        let spec = json!({"containers": [{"name": "a", "securityContext": {
            "capabilities": {"add": ["NET_ADMIN"]}}}]});
        let r = reasons(Level::Restricted, Version::Minor(21), &Value::Null, &spec);
        assert!(r.contains(&"non-default capabilities"), "{r:?}");
        let r = reasons(Level::Restricted, Version::Minor(22), &Value::Null, &spec);
        assert!(!r.contains(&"non-default capabilities"), "{r:?}");
        assert!(r.contains(&"unrestricted capabilities"), "{r:?}");
    }

    #[test]
    fn seccomp_was_judged_by_annotations_before_v1_19() {
        let meta = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/a": "docker/default"}});
        let spec = json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a"}]});
        let v = evaluate(Level::Baseline, Version::Minor(18), &meta, &spec);
        assert_eq!(
            v[0].detail,
            "forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\""
        );
        let v = evaluate(Level::Baseline, Version::Minor(19), &meta, &spec);
        assert_eq!(
            v[0].detail,
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\""
        );
        // Restricted before v1.19 keeps the baseline (annotation) check.
        let r = reasons(Level::Restricted, Version::Minor(18), &meta, &spec);
        assert!(r.contains(&"seccompProfile"), "{r:?}");
    }

    #[test]
    fn probe_hosts_are_refused_from_v1_34() {
        let spec = json!({"containers": [{"name": "a",
            "livenessProbe": {"httpGet": {"port": 80, "host": "10.0.0.1"}}}]});
        assert!(reasons(Level::Baseline, Version::Minor(33), &Value::Null, &spec).is_empty());
        assert_eq!(
            reasons(Level::Baseline, Version::Minor(34), &Value::Null, &spec),
            ["probe or lifecycle host"]
        );
    }

    #[test]
    fn user_namespaces_relax_checks_from_v1_35() {
        let spec = json!({"hostUsers": false, "containers": [{"name": "a", "securityContext": {
            "procMount": "Unmasked", "runAsUser": 0, "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}]});
        let m = Version::Minor;
        assert_eq!(
            reasons(Level::Baseline, m(34), &Value::Null, &spec),
            ["procMount"]
        );
        assert!(reasons(Level::Baseline, m(35), &Value::Null, &spec).is_empty());
        assert_eq!(
            reasons(Level::Restricted, m(34), &Value::Null, &spec),
            ["procMount", "runAsNonRoot != true", "runAsUser=0"]
        );
        // Restricted still refuses an unmasked /proc, through its own check.
        assert_eq!(
            reasons(Level::Restricted, m(35), &Value::Null, &spec),
            ["procMount"]
        );
    }

    #[test]
    fn windows_pods_are_exempt_from_linux_only_restricted_checks_from_v1_25() {
        let spec = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "a"}]});
        assert_eq!(
            reasons(Level::Restricted, Version::Minor(24), &Value::Null, &spec),
            [
                "allowPrivilegeEscalation != false",
                "unrestricted capabilities",
                "seccompProfile"
            ]
        );
        assert!(reasons(Level::Restricted, Version::Minor(25), &Value::Null, &spec).is_empty());
    }

    #[test]
    fn container_engine_t_is_allowed_from_v1_31() {
        let spec = json!({"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}},
            "containers": [{"name": "a"}]});
        assert_eq!(
            reasons(Level::Baseline, Version::Minor(30), &Value::Null, &spec),
            ["seLinuxOptions"]
        );
        assert!(reasons(Level::Baseline, Version::Minor(31), &Value::Null, &spec).is_empty());
    }

    #[test]
    fn baseline_results_follow_the_check_ids() {
        // capabilities_baseline sorts before hostNamespaces, seccompProfile_baseline before
        // sysctls: upstream orders results by check ID, overlapping checks included.
        let spec = json!({"hostNetwork": true,
            "securityContext": {"seccompProfile": {"type": "Unconfined"},
                                "sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
            "containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]});
        assert_eq!(
            reasons(Level::Baseline, Version::Latest, &Value::Null, &spec),
            [
                "non-default capabilities",
                "host namespaces",
                "seccompProfile",
                "forbidden sysctls"
            ]
        );
    }
}
