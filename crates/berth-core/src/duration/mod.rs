//! Durations written as Go's `time.ParseDuration` reads them (`1h2m3.5s`, `300ms`, `1.5us`, `0`),
//! the syntax of upstream flags and config fields.
//!
//! A [`Syntax`] names what a caller accepts beyond (or short of) Go's: berth's flags also take a
//! bare number of seconds (`15`), and some refuse fractions (`1.5s`). Values are exact (integer
//! nanoseconds, as Go computes them) and limited to Go's range (about 292 years).

use std::time::Duration;

/// Why a string is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not `[+-]<number><unit>...`, an unknown unit, or a fraction where none is accepted.
    #[error("invalid duration {0:?}")]
    Invalid(String),
    /// A well-formed negative duration (Go allows them; a `std::time::Duration` cannot be one).
    #[error("negative duration {0:?}")]
    Negative(String),
    /// Beyond Go's range (`i64` nanoseconds).
    #[error("duration {0:?} out of range")]
    Overflow(String),
}

/// What a caller accepts besides Go's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syntax {
    /// A bare unsigned integer is that many seconds (`15` is `15s`); Go reads only `0` bare.
    pub bare_seconds: bool,
    /// Fractions such as `1.5s` are accepted.
    pub fractions: bool,
}

impl Syntax {
    /// Exactly Go's `time.ParseDuration`.
    pub const GO: Syntax = Syntax {
        bare_seconds: false,
        fractions: true,
    };
    /// Go's syntax plus bare seconds, as berth's command-line flags take durations.
    pub const FLAG: Syntax = Syntax {
        bare_seconds: true,
        fractions: true,
    };
}

/// Parses a duration in Go's syntax (surrounding whitespace is ignored).
///
/// ```
/// use berth_core::duration::parse;
/// use std::time::Duration;
/// assert_eq!(parse("1h2m3.5s"), Ok(Duration::from_millis(3_723_500)));
/// assert_eq!(parse("300ms"), Ok(Duration::from_millis(300)));
/// assert!(parse("15").is_err());
/// ```
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    parse_with(text, Syntax::GO)
}

/// Parses a duration in Go's syntax as amended by `syntax`.
pub fn parse_with(text: &str, syntax: Syntax) -> Result<Duration, DurationError> {
    let s = text.trim();
    if syntax.bare_seconds {
        if let Ok(secs) = s.parse::<u64>() {
            return Ok(Duration::from_secs(secs));
        }
    }
    let invalid = || DurationError::Invalid(text.to_string());
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (whole, after) = split_digits(rest);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(f) => {
                if !syntax.fractions {
                    return Err(invalid());
                }
                split_digits(f)
            }
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let nanos_per_unit = unit_nanos(&after[..unit_len]).ok_or_else(invalid)?;
        total += component_nanos(whole, fraction, nanos_per_unit)
            .ok_or_else(|| DurationError::Overflow(text.to_string()))?;
        if total > i64::MAX as u128 + u128::from(negative) {
            return Err(DurationError::Overflow(text.to_string()));
        }
        rest = &after[unit_len..];
    }
    if negative && total > 0 {
        return Err(DurationError::Negative(text.to_string()));
    }
    Ok(Duration::from_nanos(total as u64))
}

/// Splits leading ASCII digits off `s`.
fn split_digits(s: &str) -> (&str, &str) {
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// Nanoseconds per unit, for Go's units.
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// `whole.fraction` units in nanoseconds, computed as Go computes them; `None` when
/// the whole part alone is out of range.
fn component_nanos(whole: &str, fraction: &str, per_unit: u128) -> Option<u128> {
    let mut n: u128 = 0;
    for d in whole.bytes() {
        n = n.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
        if n > i64::MAX as u128 {
            return None;
        }
    }
    let mut nanos = n.checked_mul(per_unit)?;
    // As Go does: digits that would overflow are dropped, and the fraction is scaled in floating
    // point (so `0.3333333333333333333h` is exactly 20m).
    let (mut f, mut scale) = (0u64, 1f64);
    for d in fraction.bytes() {
        let Some(next) = f
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(d - b'0')))
        else {
            break;
        };
        if next > i64::MAX as u64 {
            break;
        }
        f = next;
        scale *= 10.0;
    }
    nanos += (f as f64 * (per_unit as f64 / scale)) as u128;
    Some(nanos)
}

#[cfg(test)]
mod tests;
