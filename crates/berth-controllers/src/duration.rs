//! Durations as upstream flags write them (`40s`, `5m`, `1m30s`, `500ms`; a bare number is seconds).

use std::time::Duration;

/// Parses a flag duration; the error names the input and what was expected.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: expected e.g. 40s, 5m, 1m30s or 500ms");
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = &rest[unit..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors() {
        let ok = [
            ("40s", 40_000),
            ("5m", 300_000),
            ("1m30s", 90_000),
            ("500ms", 500),
            ("7", 7_000),
            ("1h", 3_600_000),
        ];
        for (s, ms) in ok {
            assert_eq!(parse_duration(s), Ok(Duration::from_millis(ms)), "{s}");
        }
        for s in ["", "s", "40x", "-5s", "1.5s", "40 s"] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
    }
}
