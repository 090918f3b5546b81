//! Eviction signals and thresholds: parsing the kubelet's `eviction-*` settings
//! (control-loops spec §2.1, §2.2).

use berth_core::duration::DurationError;
use berth_core::quantity::Quantity;
use std::fmt;
use std::time::Duration;

/// An eviction signal: a resource whose availability the node watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    /// `memory.available`: memory capacity − node working set.
    MemoryAvailable,
    /// `allocatableMemory.available` (internal): pod cgroup limit − pods' working set.
    AllocatableMemoryAvailable,
    /// `nodefs.available`: root file system bytes available.
    NodeFsAvailable,
    /// `nodefs.inodesFree`: root file system inodes free.
    NodeFsInodesFree,
    /// `imagefs.available`: image file system bytes available.
    ImageFsAvailable,
    /// `imagefs.inodesFree`: image file system inodes free.
    ImageFsInodesFree,
    /// `pid.available`: max pid − running processes.
    PidAvailable,
}

/// A node condition reported while a threshold is met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    MemoryPressure,
    DiskPressure,
    PIDPressure,
}

/// The resource a signal reclaims, as eviction messages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    Memory,
    EphemeralStorage,
    Inodes,
    Pids,
}

impl Resource {
    /// The name used in messages (`memory`, `ephemeral-storage`, `inodes`, `pids`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::EphemeralStorage => "ephemeral-storage",
            Resource::Inodes => "inodes",
            Resource::Pids => "pids",
        }
    }
}

impl Condition {
    /// The condition type as the node status names it.
    pub fn name(self) -> &'static str {
        match self {
            Condition::MemoryPressure => "MemoryPressure",
            Condition::DiskPressure => "DiskPressure",
            Condition::PIDPressure => "PIDPressure",
        }
    }

    /// All pressure conditions, in the order the node status lists them.
    pub const ALL: [Condition; 3] = [
        Condition::MemoryPressure,
        Condition::DiskPressure,
        Condition::PIDPressure,
    ];
}

impl Signal {
    /// The signals a user may configure.
    pub const CONFIGURABLE: [Signal; 6] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::PidAvailable,
    ];

    /// Parses a configurable signal name.
    pub fn parse(s: &str) -> Option<Signal> {
        Signal::CONFIGURABLE.into_iter().find(|sig| sig.name() == s)
    }

    /// The signal's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::AllocatableMemoryAvailable => "allocatableMemory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// The node condition this signal maps to.
    pub fn condition(self) -> Condition {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => {
                Condition::MemoryPressure
            }
            Signal::PidAvailable => Condition::PIDPressure,
            _ => Condition::DiskPressure,
        }
    }

    /// The resource reclaimed when acting on this signal.
    pub fn resource(self) -> Resource {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => Resource::Memory,
            Signal::NodeFsAvailable | Signal::ImageFsAvailable => Resource::EphemeralStorage,
            Signal::NodeFsInodesFree | Signal::ImageFsInodesFree => Resource::Inodes,
            Signal::PidAvailable => Resource::Pids,
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A threshold value: an absolute quantity or a fraction of the signal's capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdValue {
    /// Bytes, inodes or pids.
    Quantity(i64),
    /// A fraction of capacity, kept in 32-bit float as upstream (`10%` is 0.1f32).
    Percentage(f32),
}

impl ThresholdValue {
    /// The value as a quantity for a signal of `capacity`: `trunc(capacity × fraction)`,
    /// the fraction widened from float32 (control-loops §2.12, precision rule).
    pub fn quantity(self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q,
            ThresholdValue::Percentage(f) => (capacity as f64 * f as f64) as i64,
        }
    }
}

/// One eviction threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub signal: Signal,
    pub value: ThresholdValue,
    /// How long the threshold must hold before acting; zero for hard thresholds.
    pub grace_period: Duration,
    /// How far past the threshold reclaim continues once started.
    pub min_reclaim: Option<ThresholdValue>,
    /// Hard thresholds act at once and kill with no grace.
    pub hard: bool,
}

/// Errors in eviction settings; messages are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    #[error("unsupported eviction signal {0}")]
    UnknownSignal(String),
    #[error("invalid eviction threshold syntax {0}, expected <signal><<value>")]
    Syntax(String),
    #[error("eviction percentage threshold {0} must be >= 0%: {1}")]
    PercentNegative(String, String),
    #[error("eviction percentage threshold {0} must be <= 100%: {1}")]
    PercentOver(String, String),
    #[error("eviction threshold {0} must be positive: {1}")]
    NotPositive(String, String),
    #[error("invalid quantity {1} for {0}: {2}")]
    Quantity(String, String, String),
    #[error("grace period must be specified for the soft eviction threshold {0}")]
    NoGracePeriod(String),
    #[error("invalid eviction grace period specified: {0}, must be a positive value")]
    BadGracePeriod(String),
    #[error("eviction percentage minimum reclaim {0} must be positive: {1}")]
    MinReclaimPercent(String, String),
    #[error("negative eviction minimum reclaim specified for {0}")]
    MinReclaimNegative(String),
    #[error("invalid duration {0}")]
    Duration(String),
}

/// Splits list entries that themselves hold comma-separated statements.
fn statements(list: &[String]) -> impl Iterator<Item = &str> {
    list.iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Parses a threshold value; `None` for `0%` and `100%` (upstream drops them).
fn parse_value(signal: &str, value: &str) -> Result<Option<ThresholdValue>, ThresholdError> {
    if let Some(p) = value.strip_suffix('%') {
        let f: f32 = p.trim().parse().map_err(|_| {
            ThresholdError::Quantity(signal.into(), value.into(), "not a number".into())
        })?;
        if f == 0.0 || f == 100.0 {
            return Ok(None);
        }
        if f < 0.0 {
            return Err(ThresholdError::PercentNegative(signal.into(), value.into()));
        }
        if f > 100.0 {
            return Err(ThresholdError::PercentOver(signal.into(), value.into()));
        }
        return Ok(Some(ThresholdValue::Percentage(f / 100.0f32)));
    }
    let q = Quantity::parse(value)
        .map_err(|e| ThresholdError::Quantity(signal.into(), value.into(), e.to_string()))?;
    if q.milli_value() <= 0 {
        return Err(ThresholdError::NotPositive(signal.into(), value.into()));
    }
    Ok(Some(ThresholdValue::Quantity(q.value())))
}

/// Parses `signal<value` statements into (signal, value) pairs, dropping 0%/100%.
pub fn parse_statements(list: &[String]) -> Result<Vec<(Signal, ThresholdValue)>, ThresholdError> {
    let mut out = Vec::new();
    for st in statements(list) {
        let (sig, value) = st
            .split_once('<')
            .ok_or_else(|| ThresholdError::Syntax(st.into()))?;
        let signal = Signal::parse(sig.trim())
            .ok_or_else(|| ThresholdError::UnknownSignal(sig.trim().into()))?;
        if let Some(v) = parse_value(signal.name(), value.trim())? {
            out.push((signal, v));
        }
    }
    Ok(out)
}

/// Parses `signal=value` statements (grace periods, minimum reclaim).
fn parse_pairs(list: &[String]) -> Result<Vec<(Signal, &str)>, ThresholdError> {
    let mut out = Vec::new();
    for st in statements(list) {
        let (sig, value) = st
            .split_once('=')
            .ok_or_else(|| ThresholdError::Syntax(st.into()))?;
        let signal = Signal::parse(sig.trim())
            .ok_or_else(|| ThresholdError::UnknownSignal(sig.trim().into()))?;
        out.push((signal, value.trim()));
    }
    Ok(out)
}

/// Parses a Go duration (`1m30s`, `30s`, `5m`, `1h`, `500ms`, `0`); a negative one is a bad grace
/// period.
pub fn parse_duration(s: &str) -> Result<Duration, ThresholdError> {
    berth_core::duration::parse(s).map_err(|e| match e {
        DurationError::Negative(_) => ThresholdError::BadGracePeriod(s.to_string()),
        DurationError::Invalid(_) | DurationError::Overflow(_) => {
            ThresholdError::Duration(s.to_string())
        }
    })
}

/// The raw eviction settings, as lists of statements (the `kubeletArguments` shape).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvictionSettings {
    pub hard: Vec<String>,
    pub soft: Vec<String>,
    pub soft_grace_period: Vec<String>,
    pub minimum_reclaim: Vec<String>,
}

/// Parses the eviction settings into thresholds. With `enforce_pods_allocatable` (upstream's
/// default `--enforce-node-allocatable=pods`) each hard `memory.available` threshold is copied to
/// `allocatableMemory.available`.
pub fn parse_thresholds(
    settings: &EvictionSettings,
    enforce_pods_allocatable: bool,
) -> Result<Vec<Threshold>, ThresholdError> {
    let mut out = Vec::new();
    for (signal, value) in parse_statements(&settings.hard)? {
        out.push(Threshold {
            signal,
            value,
            grace_period: Duration::ZERO,
            min_reclaim: None,
            hard: true,
        });
        if enforce_pods_allocatable && signal == Signal::MemoryAvailable {
            out.push(Threshold {
                signal: Signal::AllocatableMemoryAvailable,
                value,
                grace_period: Duration::ZERO,
                min_reclaim: None,
                hard: true,
            });
        }
    }
    let graces = parse_pairs(&settings.soft_grace_period)?;
    for (signal, value) in parse_statements(&settings.soft)? {
        let grace = graces
            .iter()
            .rev()
            .find(|(s, _)| *s == signal)
            .ok_or_else(|| ThresholdError::NoGracePeriod(signal.name().into()))?;
        let grace_period = parse_duration(grace.1).map_err(|e| match e {
            ThresholdError::Duration(v) => ThresholdError::BadGracePeriod(v),
            e => e,
        })?;
        out.push(Threshold {
            signal,
            value,
            grace_period,
            min_reclaim: None,
            hard: false,
        });
    }
    for (signal, value) in parse_pairs(&settings.minimum_reclaim)? {
        let reclaim = if let Some(p) = value.strip_suffix('%') {
            let f: f32 = p.trim().parse().map_err(|_| {
                ThresholdError::MinReclaimPercent(signal.name().into(), value.into())
            })?;
            if f <= 0.0 {
                return Err(ThresholdError::MinReclaimPercent(
                    signal.name().into(),
                    value.into(),
                ));
            }
            ThresholdValue::Percentage(f / 100.0f32)
        } else {
            let q = Quantity::parse(value).map_err(|e| {
                ThresholdError::Quantity(signal.name().into(), value.into(), e.to_string())
            })?;
            if q.milli_value() < 0 {
                return Err(ThresholdError::MinReclaimNegative(signal.name().into()));
            }
            ThresholdValue::Quantity(q.value())
        };
        for t in out.iter_mut().filter(|t| t.signal == signal) {
            t.min_reclaim = Some(reclaim);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn hard(v: &[&str]) -> EvictionSettings {
        EvictionSettings {
            hard: s(v),
            ..Default::default()
        }
    }

    #[test]
    fn parse_vectors() {
        // (settings, enforce allocatable, Ok(number of thresholds) or Err(message))
        let cases: Vec<(EvictionSettings, bool, Result<usize, &str>)> = vec![
            (hard(&["memory.available<0%"]), false, Ok(0)),
            (hard(&["memory.available<100%"]), false, Ok(0)),
            (hard(&["memory.available<150Mi"]), false, Ok(1)),
            (hard(&["memory.available<150Mi"]), true, Ok(2)),
            (
                hard(&["memory.available<100Mi,nodefs.available<10%"]),
                false,
                Ok(2),
            ),
            (
                hard(&["mem.available<150Mi"]),
                false,
                Err("unsupported eviction signal mem.available"),
            ),
            (
                hard(&["memory.available<-150Mi"]),
                false,
                Err("eviction threshold memory.available must be positive: -150Mi"),
            ),
            (
                hard(&["memory.available<-5%"]),
                false,
                Err("eviction percentage threshold memory.available must be >= 0%: -5%"),
            ),
            (
                hard(&["memory.available<150%"]),
                false,
                Err("eviction percentage threshold memory.available must be <= 100%: 150%"),
            ),
            (
                EvictionSettings {
                    soft: s(&["memory.available<150Mi"]),
                    ..Default::default()
                },
                false,
                Err("grace period must be specified for the soft eviction threshold memory.available"),
            ),
            (
                EvictionSettings {
                    soft: s(&["memory.available<150Mi"]),
                    soft_grace_period: s(&["memory.available=-30s"]),
                    ..Default::default()
                },
                false,
                Err("invalid eviction grace period specified: -30s, must be a positive value"),
            ),
            (
                EvictionSettings {
                    hard: s(&["memory.available<150Mi"]),
                    minimum_reclaim: s(&["memory.available=-300Mi"]),
                    ..Default::default()
                },
                false,
                Err("negative eviction minimum reclaim specified for memory.available"),
            ),
            (
                EvictionSettings {
                    hard: s(&["memory.available<150Mi"]),
                    minimum_reclaim: s(&["memory.available=0%"]),
                    ..Default::default()
                },
                false,
                Err("eviction percentage minimum reclaim memory.available must be positive: 0%"),
            ),
            (
                hard(&["memory.available<1x"]),
                false,
                Err("invalid quantity 1x for memory.available"),
            ),
        ];
        for (settings, enforce, want) in cases {
            let got = parse_thresholds(&settings, enforce);
            match (got, want) {
                (Ok(t), Ok(n)) => assert_eq!(t.len(), n, "{settings:?}"),
                (Err(e), Err(m)) => assert!(e.to_string().starts_with(m), "{e} vs {m}"),
                (got, want) => panic!("{settings:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn soft_with_grace_and_min_reclaim() {
        let t = parse_thresholds(
            &EvictionSettings {
                hard: s(&["memory.available<500Mi"]),
                soft: s(&["memory.available<1.5Gi"]),
                soft_grace_period: s(&["memory.available=1m30s"]),
                minimum_reclaim: s(&["memory.available=0Mi,nodefs.available=500Mi"]),
            },
            true,
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[2].grace_period, Duration::from_secs(90));
        assert!(!t[2].hard);
        assert_eq!(t[2].value, ThresholdValue::Quantity(1536 << 20));
        assert_eq!(t[1].signal, Signal::AllocatableMemoryAvailable);
        assert_eq!(t[0].min_reclaim, Some(ThresholdValue::Quantity(0)));
    }

    #[test]
    fn percentage_precision() {
        let cases = [
            ("10%", 10737418240i64, 1073741840i64),
            ("20%", 1000 << 20, 209715203),
            ("10%", 107374182400, 10737418400),
        ];
        for (v, cap, want) in cases {
            let (_, val) = parse_statements(&[format!("memory.available<{v}")]).unwrap()[0];
            assert_eq!(val.quantity(cap), want, "{v} of {cap}");
        }
    }

    #[test]
    fn durations() {
        let cases = [
            ("1m30s", Some(90.0)),
            ("30s", Some(30.0)),
            ("5m", Some(300.0)),
            ("1h", Some(3600.0)),
            ("0", Some(0.0)),
            ("1.5s", Some(1.5)),
            ("x", None),
            ("10", None),
        ];
        for (s, want) in cases {
            let got = parse_duration(s).ok().map(|d| d.as_secs_f64());
            assert_eq!(got, want, "{s}");
        }
    }
}
