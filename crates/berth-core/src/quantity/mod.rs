//! Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `1e3`), parsed and printed the way
//! upstream `apimachinery/pkg/api/resource` does.
//!
//! A [`Quantity`] is an exact fixed-point number with nine decimal places (upstream rounds any
//! finer value *up* to the next nano unit) plus the [`Format`] its suffix came in, which decides
//! how it is printed. Equality and ordering compare the numeric value only, like upstream
//! `Quantity.Cmp`.
//!
//! Deviations from upstream, all at the edges: the magnitude is limited to about 1.7e26
//! (upstream uses arbitrary precision; larger inputs are an error here instead), and
//! [`Display`](std::fmt::Display) always prints the canonical form (upstream echoes a parsed
//! string that was already canonical verbatim, so `+1` prints as `+1` there and `1` here).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Upstream's error text for a string that is not a quantity.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const NANO_PER_UNIT: i128 = 1_000_000_000;
/// Upstream caps binary-SI quantities at 2^63-1.
const MAX_BINARY: i128 = i64::MAX as i128 * NANO_PER_UNIT;
/// Largest magnitude accepted, in nano units (leaves headroom for canonicalisation).
const MAX_NANOS: i128 = i128::MAX / 1_000;

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string does not have the shape `<number><suffix>`.
    #[error("{}", FORMAT_WRONG)]
    FormatWrong,
    /// The numeric part could not be read.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is not one of the binary, decimal SI or exponent suffixes.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// The value is beyond what berth represents exactly (about 1.7e26).
    #[error("quantity is too large")]
    TooLarge,
}

/// How a quantity is printed: the family of suffix it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `e3`, `E6`: a decimal exponent, e.g. `12e6`.
    DecimalExponent,
    /// `Ki`, `Mi`, ...: powers of 1024, e.g. `12Mi`.
    BinarySI,
    /// `n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`: powers of 1000, e.g. `12M`.
    DecimalSI,
}

/// An exact resource quantity: a value in nano units plus the print [`Format`].
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}
impl Eq for Quantity {}
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}
impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state)
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity {
            nanos: 0,
            format: Format::DecimalSI,
        }
    }
}

fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

/// Splits `s` the way upstream's scanner does: (negative, integer digits, fraction digits,
/// suffix). Leading zeros of the integer part are dropped.
fn scan(s: &str) -> Result<(bool, &str, &str, &str), QuantityError> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut negative = false;
    match b.first() {
        Some(b'-') => {
            negative = true;
            pos = 1
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = &s[start..pos];
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let d = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() {
        return Err(QuantityError::FormatWrong);
    }
    Ok((negative, num, denom, &s[suffix_start..]))
}

/// Interprets a suffix as (base, exponent, format), like upstream's `quantitySuffixer`.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ if suffix.len() > 1 && (suffix.starts_with('e') || suffix.starts_with('E')) => {
            let rest = &suffix[1..];
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let e: i64 = rest.parse().ok()?;
            Some((10, i32::try_from(e).ok()?, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// Divides rounding away from zero (upstream rounds quantities "up" in magnitude).
fn div_away(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n < 0 {
        q - 1
    } else {
        q + 1
    }
}

/// The significant digits of `num.denom` as one integer and the power of ten it is scaled by,
/// without allocating (the scheduler parses every request and allocatable this way).
fn significant(num: &str, denom: &str) -> Result<(i128, i64), QuantityError> {
    let digits = || num.bytes().chain(denom.bytes());
    let len = num.len() + denom.len();
    let leading = digits().take_while(|&c| c == b'0').count();
    if leading == len {
        return Ok((0, 0));
    }
    let trailing = digits().rev().take_while(|&c| c == b'0').count();
    let significant = len - leading - trailing;
    if significant > 38 {
        return Err(QuantityError::TooLarge);
    }
    let mut mantissa: i128 = 0;
    for c in digits().skip(leading).take(significant) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(c - b'0')))
            .ok_or(QuantityError::Numeric)?;
    }
    Ok((mantissa, trailing as i64 - denom.len() as i64))
}

fn saturate(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

impl Quantity {
    /// Parses any Kubernetes quantity string (`100m`, `1.5`, `2Gi`, `1e3`, `.5`, `-1k`).
    ///
    /// ```
    /// use berth_core::quantity::Quantity;
    /// let q = Quantity::parse("1.5Gi").unwrap();
    /// assert_eq!(q.to_string(), "1536Mi");
    /// assert_eq!(Quantity::parse("100m").unwrap().milli_value(), 100);
    /// assert!(Quantity::parse("1x").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        let (negative, num, denom, suffix) = scan(s)?;
        let (base, exponent, mut format) = interpret(suffix).ok_or(QuantityError::Suffix)?;
        let (mantissa, dexp) = significant(num, denom)?;
        // nanos = mantissa * base^exponent * 10^(dexp + 9)
        let (scaled, shift) = if base == 10 {
            (Some(mantissa), exponent as i64 + dexp + 9)
        } else {
            (mantissa.checked_mul(1i128 << exponent), dexp + 9)
        };
        let mut nanos: i128 = match scaled {
            _ if mantissa == 0 => 0,
            None => i128::MAX,
            Some(m) if shift >= 0 => u32::try_from(shift)
                .ok()
                .and_then(pow10)
                .and_then(|p| m.checked_mul(p))
                .unwrap_or(i128::MAX),
            Some(m) => match u32::try_from(-shift).ok().and_then(pow10) {
                Some(p) => div_away(m, p),
                None => 1, // finer than a nano: rounds up to one nano
            },
        };
        if format == Format::BinarySI {
            nanos = nanos.min(MAX_BINARY);
        }
        if nanos > MAX_NANOS {
            return Err(QuantityError::TooLarge);
        }
        if format == Format::BinarySI && nanos > 0 && nanos < NANO_PER_UNIT {
            format = Format::DecimalSI;
        }
        if negative {
            nanos = -nanos;
        }
        Ok(Quantity { nanos, format })
    }

    /// A quantity of `milli` thousandths, printed in decimal SI (e.g. `from_milli(1500)` is `1500m`).
    pub fn from_milli(milli: i64) -> Quantity {
        Quantity {
            nanos: milli as i128 * 1_000_000,
            format: Format::DecimalSI,
        }
    }

    /// A whole quantity printed in decimal SI (cpu cores, pods, `2k`).
    pub fn from_int(value: i64) -> Quantity {
        Quantity {
            nanos: value as i128 * NANO_PER_UNIT,
            format: Format::DecimalSI,
        }
    }

    /// A whole number of bytes printed in binary SI (`from_bytes(1 << 30)` is `1Gi`).
    pub fn from_bytes(bytes: i64) -> Quantity {
        Quantity {
            nanos: bytes as i128 * NANO_PER_UNIT,
            format: Format::BinarySI,
        }
    }

    /// The print format remembered from parsing.
    pub fn format(&self) -> Format {
        self.format
    }

    /// True when the value is strictly positive.
    pub fn is_positive(&self) -> bool {
        self.nanos > 0
    }

    /// True when the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The value in thousandths, rounded away from zero (upstream `MilliValue`; `1n` is `1`),
    /// saturating at the `i64` bounds.
    pub fn milli_value(&self) -> i64 {
        saturate(div_away(self.nanos, 1_000_000))
    }

    /// The value in whole units, rounded away from zero (upstream `Value`; `100m` is `1`),
    /// saturating at the `i64` bounds.
    pub fn value(&self) -> i64 {
        saturate(div_away(self.nanos, NANO_PER_UNIT))
    }

    /// Sum of two quantities, keeping `self`'s format; `None` on overflow.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = self.nanos.checked_add(other.nanos)?;
        Some(Quantity {
            nanos,
            format: self.format,
        })
    }

    /// Difference of two quantities, keeping `self`'s format; `None` on overflow.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = self.nanos.checked_sub(other.nanos)?;
        Some(Quantity {
            nanos,
            format: self.format,
        })
    }

    /// Canonical (mantissa, suffix) pair as upstream `CanonicalizeBytes` computes it.
    fn canonical(&self) -> (i128, String) {
        if self.nanos == 0 {
            return (0, String::new());
        }
        let mut format = self.format;
        if format == Format::BinarySI
            && (self.nanos.unsigned_abs() < (1024 * NANO_PER_UNIT) as u128
                || self.nanos % NANO_PER_UNIT != 0)
        {
            format = Format::DecimalSI;
        }
        if format == Format::BinarySI {
            let mut m = self.nanos / NANO_PER_UNIT;
            let mut e = 0;
            while e < 6 && m % 1024 == 0 {
                m /= 1024;
                e += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e];
            return (m, suffix.to_string());
        }
        let mut m = self.nanos;
        let mut e: i32 = -9;
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        // Exponent down to a multiple of three; DecimalSI also stops at `E` (10^18).
        while e.rem_euclid(3) != 0 || (format == Format::DecimalSI && e > 18) {
            m *= 10;
            e -= 1;
        }
        let suffix = match format {
            Format::DecimalExponent if e == 0 => String::new(),
            Format::DecimalExponent => format!("e{e}"),
            _ => match e {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }
            .to_string(),
        };
        (m, suffix)
    }
}

impl fmt::Display for Quantity {
    /// The canonical upstream form: `1500m`, `1536Mi`, `2`, `1k`, `1e3`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (m, suffix) = self.canonical();
        write!(f, "{m}{suffix}")
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl serde::Serialize for Quantity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    /// Accepts a string or a JSON number (upstream accepts unquoted numbers too).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return Err(serde::de::Error::custom(FORMAT_WRONG)),
        };
        Quantity::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Parses a quantity and returns it in milli-units (CPU: `500m` → 500, `2` → 2000).
pub fn parse_cpu_milli(s: &str) -> Result<i64, QuantityError> {
    Ok(Quantity::parse(s)?.milli_value())
}

/// Parses a quantity and returns whole units, rounded up (memory: `1Gi` → 1073741824).
pub fn parse_bytes(s: &str) -> Result<i64, QuantityError> {
    Ok(Quantity::parse(s)?.value())
}

/// Reads a quantity from a JSON value as found in resource maps (string or number).
pub fn from_json(v: &serde_json::Value) -> Result<Quantity, QuantityError> {
    match v {
        serde_json::Value::String(s) => Quantity::parse(s),
        serde_json::Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => Err(QuantityError::FormatWrong),
    }
}

#[cfg(test)]
mod tests;
