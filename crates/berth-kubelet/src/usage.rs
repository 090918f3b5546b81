//! The usage model: what each simulated pod uses, from its `berth.io/usage` annotation or its
//! requests (issue 6 "Usage model").

use crate::eviction::Amounts;
use berth_core::quantity::Quantity;
use std::time::Duration;

/// The annotation that sets a pod's simulated usage.
pub const USAGE_ANNOTATION: &str = "berth.io/usage";

/// What a BestEffort pod without the annotation uses.
pub const BEST_EFFORT_DEFAULT: Usage = Usage {
    cpu_milli: 10,
    amounts: Amounts {
        memory: 64 << 20,
        ephemeral_storage: 0,
        inodes: 10,
        pids: 5,
    },
};

/// A resource's usage: fixed, or a linear ramp from the container's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageValue {
    Fixed(i64),
    Ramp { from: i64, to: i64, over: Duration },
}

impl UsageValue {
    /// The value `elapsed` after the container started.
    pub fn at(self, elapsed: Duration) -> i64 {
        match self {
            UsageValue::Fixed(v) => v,
            UsageValue::Ramp { from, to, over } => {
                if over.is_zero() || elapsed >= over {
                    return to;
                }
                let f = elapsed.as_secs_f64() / over.as_secs_f64();
                from + ((to - from) as f64 * f) as i64
            }
        }
    }
}

/// A parsed `berth.io/usage` annotation; resources left out fall back to the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageSpec {
    pub cpu_milli: Option<UsageValue>,
    pub memory: Option<UsageValue>,
    pub ephemeral_storage: Option<UsageValue>,
    pub inodes: Option<UsageValue>,
    pub pids: Option<UsageValue>,
}

/// Usage at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_milli: i64,
    pub amounts: Amounts,
}

impl UsageSpec {
    /// Whether a ramp is still changing `elapsed` after the start (usage then varies with time
    /// alone).
    pub fn ramping(&self, elapsed: Duration) -> bool {
        [
            self.cpu_milli,
            self.memory,
            self.ephemeral_storage,
            self.inodes,
            self.pids,
        ]
        .into_iter()
        .flatten()
        .any(|v| matches!(v, UsageValue::Ramp { from, to, over } if from != to && elapsed < over))
    }

    /// Usage `elapsed` after start; unset resources take `default`'s.
    pub fn at(&self, elapsed: Duration, default: &Usage) -> Usage {
        let get = |v: Option<UsageValue>, d: i64| v.map_or(d, |v| v.at(elapsed));
        Usage {
            cpu_milli: get(self.cpu_milli, default.cpu_milli),
            amounts: Amounts {
                memory: get(self.memory, default.amounts.memory),
                ephemeral_storage: get(self.ephemeral_storage, default.amounts.ephemeral_storage),
                inodes: get(self.inodes, default.amounts.inodes),
                pids: get(self.pids, default.amounts.pids),
            },
        }
    }
}

fn parse_amount(resource: &str, v: &str) -> Result<i64, String> {
    let q = Quantity::parse(v.trim())
        .map_err(|e| format!("{resource}: invalid quantity {v:?}: {e}"))?;
    if q.milli_value() < 0 {
        return Err(format!("{resource}: must not be negative: {v}"));
    }
    Ok(if resource == "cpu" {
        q.milli_value()
    } else {
        q.value()
    })
}

fn parse_value(resource: &str, v: &str) -> Result<UsageValue, String> {
    let Some((from, rest)) = v.split_once("->") else {
        return Ok(UsageValue::Fixed(parse_amount(resource, v)?));
    };
    let (to, over) = rest
        .split_once('/')
        .ok_or_else(|| format!("{resource}: a ramp is FROM->TO/DURATION, got {v:?}"))?;
    let over = crate::eviction::thresholds::parse_duration(over)
        .map_err(|_| format!("{resource}: invalid ramp duration {over:?}"))?;
    Ok(UsageValue::Ramp {
        from: parse_amount(resource, from)?,
        to: parse_amount(resource, to)?,
        over,
    })
}

/// Parses `cpu=200m,memory=1Gi,ephemeral-storage=2Gi,inodes=1000,pids=20`, where any value may
/// be a ramp `1Gi->3Gi/60s`.
pub fn parse_usage(text: &str) -> Result<UsageSpec, String> {
    let mut spec = UsageSpec::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("expected resource=quantity, got {item:?}"))?;
        let k = k.trim();
        let value = parse_value(k, v.trim())?;
        let slot = match k {
            "cpu" => &mut spec.cpu_milli,
            "memory" => &mut spec.memory,
            "ephemeral-storage" => &mut spec.ephemeral_storage,
            "inodes" => &mut spec.inodes,
            "pids" => &mut spec.pids,
            _ => {
                return Err(format!(
                    "unknown resource {k:?} (cpu, memory, ephemeral-storage, inodes, pids)"
                ))
            }
        };
        *slot = Some(value);
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: i64 = 1 << 20;
    const GI: i64 = 1 << 30;

    #[test]
    fn parse_and_evaluate() {
        let default = Usage::default();
        // (annotation, seconds since start, cpu milli, memory)
        let cases = [
            ("cpu=200m,memory=1Gi", 0, 200, GI),
            ("memory=1Gi->3Gi/60s", 0, 0, GI),
            ("memory=1Gi->3Gi/60s", 30, 0, 2 * GI),
            ("memory=1Gi->3Gi/60s", 600, 0, 3 * GI),
            ("memory=3Gi->1Gi/1m", 30, 0, 2 * GI),
            (" cpu = 1 , memory=500Mi ", 0, 1000, 500 * MI),
        ];
        for (text, secs, cpu, mem) in cases {
            let u = parse_usage(text)
                .unwrap()
                .at(Duration::from_secs(secs), &default);
            assert_eq!(
                (u.cpu_milli, u.amounts.memory),
                (cpu, mem),
                "{text} at {secs}s"
            );
        }
        let u = parse_usage("ephemeral-storage=2Gi,inodes=1000,pids=20")
            .unwrap()
            .at(Duration::ZERO, &BEST_EFFORT_DEFAULT);
        assert_eq!(u.amounts.ephemeral_storage, 2 * GI);
        assert_eq!(u.amounts.inodes, 1000);
        assert_eq!(u.amounts.pids, 20);
        assert_eq!(u.amounts.memory, 64 * MI);
    }

    #[test]
    fn errors() {
        for text in [
            "memory",
            "memory=1Gx",
            "gpu=1",
            "memory=-1Gi",
            "memory=1Gi->2Gi",
            "memory=1Gi->2Gi/soon",
        ] {
            assert!(parse_usage(text).is_err(), "{text}");
        }
    }
}
