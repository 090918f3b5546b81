//! Name syntax checks: algorithm names, label keys, extended resource names.

/// The regular expression upstream validates algorithm (predicate and priority) names with.
pub(crate) const ALGORITHM_NAME_REGEXP: &str = "^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$";

/// Whether `name` matches [`ALGORITHM_NAME_REGEXP`]: two or more ASCII letters, digits or
/// `-`, starting and ending with a letter or digit.
pub(crate) fn is_algorithm_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
}

/// Upstream's message for a name not matching [`ALGORITHM_NAME_REGEXP`].
pub(crate) fn algorithm_name_message(name: &str) -> String {
    format!("Algorithm name {name} does not match the name validation regexp \"{ALGORITHM_NAME_REGEXP}\".")
}

/// Checks a qualified name (`[prefix/]name`, as label keys and resource names are), returning
/// upstream's messages for each problem.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let (prefix, name) = match value.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, value),
    };
    if name.contains('/') {
        errors.push(
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                .to_string(),
        );
        return errors;
    }
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errors.push("prefix part must be non-empty".to_string());
        } else if !is_dns_subdomain(prefix) {
            errors.push(format!(
                "prefix part {prefix} must be a lowercase RFC 1123 subdomain"
            ));
        }
    }
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errors.push("name part must be no more than 63 characters".to_string());
        }
        let b = name.as_bytes();
        let ok = b.first().is_some_and(u8::is_ascii_alphanumeric)
            && b.last().is_some_and(u8::is_ascii_alphanumeric)
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
        if !ok {
            errors.push(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                    .to_string(),
            );
        }
    }
    errors
}

/// Whether `s` is a lowercase RFC 1123 DNS subdomain (at most 253 characters).
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b.first().is_some_and(|c| *c != b'-')
                && b.last().is_some_and(|c| *c != b'-')
        })
}

/// Whether `name` is an extended resource name: has a domain prefix that is not
/// `kubernetes.io`, does not start with `requests.`, and `requests.<name>` is qualified.
pub(crate) fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && qualified_name_errors(&format!("requests.{name}")).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names() {
        for ok in ["Region", "ab", "a-b", "Zone2", "PodFitsHostPorts", "9a"] {
            assert!(is_algorithm_name(ok), "{ok}");
        }
        for bad in ["", "a", "-a", "a-", "a_b", "a b", "Région", "a.b"] {
            assert!(!is_algorithm_name(bad), "{bad}");
        }
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "region",
            "topology.kubernetes.io/zone",
            "a_b.c-d",
            "example.com/foo",
        ] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a/b/c",
            "/a",
            "Example.com/a",
            "a b",
            &"x".repeat(64),
        ] {
            assert!(!qualified_name_errors(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn extended_resources() {
        assert!(is_extended_resource_name("example.com/foo"));
        assert!(!is_extended_resource_name("cpu"));
        assert!(!is_extended_resource_name("kubernetes.io/foo"));
        assert!(!is_extended_resource_name("requests.example.com/foo"));
    }
}
