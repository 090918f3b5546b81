//! Kubernetes resource quantities (`100m`, `500Mi`, `1.5`, `1e3`) parsed into integers.
//!
//! Values are computed exactly in nano-units (i128) and rounded up, as the API's `MilliValue()` and
//! `Value()` do, then saturated to `i64`.

use thiserror::Error;

/// A quantity string that is not a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {0:?}")]
pub struct QuantityError(pub String);

/// A parsed quantity, in nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedQuantity {
    nanos: i128,
}

const NANO: i128 = 1_000_000_000;

impl ParsedQuantity {
    /// Parses a quantity string.
    pub fn parse(text: &str) -> Result<ParsedQuantity, QuantityError> {
        let err = || QuantityError(text.to_string());
        let s = text.trim();
        if s.is_empty() {
            return Err(err());
        }
        let (neg, rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, suffix) = rest.split_at(num_end);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(err());
        }
        let (int_part, frac_part) = match num.split_once('.') {
            Some((i, f)) => (i, f),
            None => (num, ""),
        };
        // mantissa = digits, scale = number of fraction digits (capped to keep i128 in range)
        let mut mantissa: i128 = 0;
        let mut scale: i32 = 0;
        for c in int_part.bytes() {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add((c - b'0') as i128))
                .ok_or_else(err)?;
            if mantissa > 10i128.pow(30) {
                return Err(err());
            }
        }
        let mut frac_rest_nonzero = false;
        for c in frac_part.bytes() {
            if scale >= 18 {
                frac_rest_nonzero |= c != b'0';
                continue;
            }
            mantissa = mantissa * 10 + (c - b'0') as i128;
            scale += 1;
        }
        // multiplier as (base-10 exponent) or binary multiplier
        let (bin_mult, dec_exp): (i128, i32) = match suffix {
            "" => (1, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            e if e.starts_with(['e', 'E']) => {
                let exp: i32 = e[1..].parse().map_err(|_| err())?;
                if !(-30..=30).contains(&exp) {
                    return Err(err());
                }
                (1, exp)
            }
            _ => return Err(err()),
        };
        // nanos = mantissa * bin_mult * 10^(dec_exp + 9 - scale), rounded up when truncating
        let value = mantissa.checked_mul(bin_mult).ok_or_else(err)?;
        let exp = dec_exp + 9 - scale;
        let mut nanos = if exp >= 0 {
            value
                .checked_mul(10i128.checked_pow(exp as u32).ok_or_else(err)?)
                .ok_or_else(err)?
        } else {
            let div = 10i128.checked_pow((-exp) as u32).ok_or_else(err)?;
            let q = value / div;
            if value % div != 0 {
                q + 1
            } else {
                q
            }
        };
        if frac_rest_nonzero && exp <= 0 {
            nanos += 1;
        }
        Ok(ParsedQuantity {
            nanos: if neg { -nanos } else { nanos },
        })
    }

    /// Value in thousandths, rounded up (cpu millicores).
    pub fn milli_value(&self) -> i64 {
        saturate(ceil_div(self.nanos, 1_000_000))
    }

    /// Integer value, rounded up (bytes, counts).
    pub fn value(&self) -> i64 {
        saturate(ceil_div(self.nanos, NANO))
    }

    /// True when the quantity is strictly positive.
    pub fn is_positive(&self) -> bool {
        self.nanos > 0
    }
}

fn ceil_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && a > 0 {
        q + 1
    } else {
        q
    }
}

fn saturate(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors() {
        let cases: &[(&str, i64, i64)] = &[
            ("100m", 100, 1),
            ("1", 1000, 1),
            ("1.5", 1500, 2),
            ("0.1", 100, 1),
            ("500Mi", 500 * 1024 * 1024 * 1000, 500 * 1024 * 1024),
            ("32Gi", 32 * (1 << 30) * 1000, 32 * (1 << 30)),
            ("1k", 1_000_000, 1000),
            ("1e3", 1_000_000, 1000),
            ("1E3", 1_000_000, 1000),
            ("0", 0, 0),
            ("2000", 2_000_000, 2000),
            ("1n", 1, 1),
            ("250m", 250, 1),
        ];
        for (s, milli, val) in cases {
            let q = ParsedQuantity::parse(s).unwrap();
            assert_eq!(q.milli_value(), *milli, "{s}");
            assert_eq!(q.value(), *val, "{s}");
        }
    }

    #[test]
    fn rejects() {
        for s in ["", "abc", "1.2.3", "1Zi", ".", "1e", "--1"] {
            assert!(ParsedQuantity::parse(s).is_err(), "{s}");
        }
    }
}
