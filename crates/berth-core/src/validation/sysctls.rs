//! A pod's `securityContext.sysctls`, checked as upstream's `validateSysctls`: each name is
//! present, a valid sysctl name and not repeated, and names of the network or IPC namespace
//! are not set on a pod sharing that namespace with its host. Values are the kubelet's to
//! judge (upstream's API server takes any).

use super::FieldError;
use serde_json::Value;
use std::collections::HashSet;

/// Upstream's `SysctlMaxLength`: a sysctl name is at most this long.
pub const SYSCTL_MAX_LENGTH: usize = 253;

/// Upstream's `SysctlContainSlashFmt`: segments joined by `.` or `/`.
const SYSCTL_FMT: &str = "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?";

/// Whether `name` matches [`SYSCTL_FMT`] within [`SYSCTL_MAX_LENGTH`] (upstream
/// `IsValidSysctlName`).
fn is_valid_name(name: &str) -> bool {
    let segment = |s: &str| {
        let b = s.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                edge(first) && edge(last) && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_')
            }
            _ => false,
        }
    };
    name.len() <= SYSCTL_MAX_LENGTH && name.split(['.', '/']).all(segment)
}

/// The kernel namespace a sysctl belongs to, as the kubelet's `GetNamespace` knows them.
#[derive(Debug, PartialEq, Eq)]
enum Namespace {
    Ipc,
    Net,
    Unknown,
}

fn namespace_of(name: &str) -> Namespace {
    let name = name.replace('/', ".");
    if name.starts_with("net.") {
        Namespace::Net
    } else if name == "kernel.sem"
        || name.starts_with("kernel.shm")
        || name.starts_with("kernel.msg")
        || name.starts_with("fs.mqueue.")
    {
        Namespace::Ipc
    } else {
        Namespace::Unknown
    }
}

/// Checks `spec.securityContext.sysctls` of a pod spec at `path` (`spec`).
pub fn validate_sysctls(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sysctls) = spec["securityContext"]["sysctls"].as_array() else {
        return errs;
    };
    let host_network = spec["hostNetwork"].as_bool() == Some(true);
    let host_ipc = spec["hostIPC"].as_bool() == Some(true);
    let mut seen = HashSet::new();
    for (i, sysctl) in sysctls.iter().enumerate() {
        let field = format!("{path}.securityContext.sysctls[{i}].name");
        let name = sysctl["name"].as_str().unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&field, ""));
        } else if !is_valid_name(name) {
            errs.push(FieldError::invalid(
                &field,
                name,
                format!(
                    "must have at most {SYSCTL_MAX_LENGTH} characters and match regex {SYSCTL_FMT}"
                ),
            ));
        } else if !seen.insert(name) {
            errs.push(FieldError::duplicate(&field, name));
        }
        match namespace_of(name) {
            Namespace::Net if host_network => errs.push(FieldError::invalid(
                &field,
                name,
                "may not be specified when 'hostNetwork' is true",
            )),
            Namespace::Ipc if host_ipc => errs.push(FieldError::invalid(
                &field,
                name,
                "may not be specified when 'hostIPC' is true",
            )),
            _ => {}
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(spec: Value) -> Vec<String> {
        validate_sysctls(&spec, "spec")
            .iter()
            .map(FieldError::message)
            .collect()
    }

    fn sysctls(names: &[&str]) -> Value {
        let list: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "value": "1"}))
            .collect();
        json!({"securityContext": {"sysctls": list}})
    }

    #[test]
    fn sysctl_names_are_checked_as_upstream_checks_them() {
        let invalid = format!("must have at most 253 characters and match regex {SYSCTL_FMT}");
        let cases: Vec<(&str, Value, Vec<String>)> = vec![
            (
                "the conformance spec's invalid names are refused, its valid ones accepted",
                sysctls(&["foo-", "kernel.shmmax", "safe-and-unsafe", "bar.."]),
                vec![
                    format!(
                        "spec.securityContext.sysctls[0].name: Invalid value: \"foo-\": {invalid}"
                    ),
                    format!(
                        "spec.securityContext.sysctls[3].name: Invalid value: \"bar..\": {invalid}"
                    ),
                ],
            ),
            (
                "slashes separate segments as dots do",
                sysctls(&["net/ipv4/ip_local_port_range", "kernel.shm_rmid_forced"]),
                vec![],
            ),
            (
                "a missing name is required",
                sysctls(&[""]),
                vec!["spec.securityContext.sysctls[0].name: Required value".into()],
            ),
            (
                "a name given twice is a duplicate",
                sysctls(&["kernel.sem", "kernel.sem"]),
                vec![
                    "spec.securityContext.sysctls[1].name: Duplicate value: \"kernel.sem\"".into(),
                ],
            ),
            (
                "a name over 253 characters is refused",
                sysctls(&["a".repeat(254).as_str()]),
                vec![format!(
                    "spec.securityContext.sysctls[0].name: Invalid value: \"{}\": {invalid}",
                    "a".repeat(254)
                )],
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(messages(spec), want, "{name}");
        }
    }

    #[test]
    fn host_namespaces_forbid_their_sysctls() {
        let mut spec = sysctls(&["net.core.somaxconn", "kernel.msgmax", "vm.swappiness"]);
        spec["hostNetwork"] = json!(true);
        spec["hostIPC"] = json!(true);
        assert_eq!(
            messages(spec),
            vec![
                "spec.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true",
                "spec.securityContext.sysctls[1].name: Invalid value: \"kernel.msgmax\": may not be specified when 'hostIPC' is true",
            ]
        );
    }
}
