//! The string formats a structural schema may name (upstream's `apiextensions` format
//! registry, kube-openapi's `strfmt`): the common ones are checked, the rest accepted.

/// Whether `s` is a valid value of `format`. Formats berth does not check are accepted, as
/// upstream accepts formats it does not know.
pub fn valid(format: &str, s: &str) -> bool {
    match format {
        "int32" | "int64" | "float" | "double" | "byte" | "password" | "" => true,
        "email" => email(s),
        "hostname" => hostname(s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => cidr(s),
        "uuid" => uuid::Uuid::parse_str(s).is_ok() && s.len() == 36,
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "date-time" | "datetime" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "duration" => duration(s),
        "uri" => s.contains(':') && !s.contains(char::is_whitespace),
        _ => true,
    }
}

fn email(s: &str) -> bool {
    match s.split_once('@') {
        Some((local, domain)) => !local.is_empty() && hostname(domain) && !domain.is_empty(),
        None => false,
    }
}

fn hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `time.ParseDuration` form: `1h30m`, `500ms`, `-1.5s`.
fn duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(*u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn common_formats_accept_what_upstream_accepts_and_refuse_the_rest() {
        for (format, value, ok) in [
            ("email", "a@example.com", true),
            ("email", "not-an-email", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("date-time", "2025-01-01T00:00:00Z", true),
            ("date-time", "yesterday", false),
            ("duration", "1h30m", true),
            ("duration", "5 minutes", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123", false),
            ("something-else", "anything", true),
        ] {
            assert_eq!(valid(format, value), ok, "{format} {value}");
        }
    }
}
