//! Durations as upstream flags write them (`40s`, `5m`, `1m30s`, `500ms`; a bare number is seconds).

use berth_core::duration::{self, Syntax};
use std::time::Duration;

/// Whole units only: the node lifecycle flags have always refused fractions such as `1.5s`.
const SYNTAX: Syntax = Syntax {
    bare_seconds: true,
    fractions: false,
};

/// Parses a flag duration; the error names the input and what was expected.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    duration::parse_with(s, SYNTAX)
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 40s, 5m, 1m30s or 500ms"))
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
