//! From the replicas the metrics ask for to the replicas to set (upstream's
//! `normalizeDesiredReplicas*`): the recommendation is stabilized over the recent ones (a
//! scale-down waits until every recommendation of the window agrees), then limited by the
//! scaling policies' rates and by `minReplicas`/`maxReplicas`. Each step says why it limited,
//! in the words of the `AbleToScale` and `ScalingLimited` conditions.
//!
//! An autoscaler with `spec.behavior` follows its rules, each missing field defaulted as the
//! API server defaults it; one without follows upstream's older rules: the
//! `--horizontal-pod-autoscaler-downscale-stabilization` window, and a scale-up of at most
//! double (at least 4).

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};

/// What the controller remembers of one autoscaler between passes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    recommendations: Vec<(i32, DateTime<Utc>)>,
    scale_up_events: Vec<ScaleEvent>,
    scale_down_events: Vec<ScaleEvent>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScaleEvent {
    change: i32,
    at: DateTime<Utc>,
    outdated: bool,
}

/// A condition's reason and message.
pub type Why = (&'static str, &'static str);

/// The outcome of normalization: the replicas to set, and the `AbleToScale` (stabilization)
/// and `ScalingLimited` (rates and bounds) conditions it sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub replicas: i32,
    pub able_to_scale: Why,
    pub limited: bool,
    pub scaling_limited: Why,
}

const READY_FOR_NEW_SCALE: Why = ("ReadyForNewScale", "recommended size matches current size");
const SCALE_UP_STABILIZED: Why = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const SCALE_DOWN_STABILIZED: Why = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const WITHIN_RANGE: Why = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const SCALE_UP_LIMIT: Why = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const SCALE_DOWN_LIMIT: Why = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_MANY: Why = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const TOO_FEW: Why = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);

/// The rules of one direction, with upstream's defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub stabilization_window_seconds: i32,
    /// `Max`, `Min` or `Disabled`.
    pub select_policy: String,
    /// (`Pods` or `Percent`, value, periodSeconds).
    pub policies: Vec<(String, i32, i32)>,
}

/// Upstream's default scale-up rules: no stabilization, the larger of 4 pods or 100% per 15 s.
pub fn default_scale_up() -> Rules {
    Rules {
        stabilization_window_seconds: 0,
        select_policy: "Max".into(),
        policies: vec![("Pods".into(), 4, 15), ("Percent".into(), 100, 15)],
    }
}

/// Upstream's default scale-down rules: a 300 s window, down to any size in 15 s.
pub fn default_scale_down() -> Rules {
    Rules {
        stabilization_window_seconds: 300,
        select_policy: "Max".into(),
        policies: vec![("Percent".into(), 100, 15)],
    }
}

fn rules(given: Option<&HPAScalingRules>, default: Rules) -> Rules {
    let Some(g) = given else {
        return default;
    };
    let policies: Vec<(String, i32, i32)> = g
        .policies
        .iter()
        .flatten()
        .map(|p: &HPAScalingPolicy| (p.type_.clone(), p.value, p.period_seconds))
        .collect();
    Rules {
        stabilization_window_seconds: g
            .stabilization_window_seconds
            .unwrap_or(default.stabilization_window_seconds),
        select_policy: g.select_policy.clone().unwrap_or(default.select_policy),
        policies: if policies.is_empty() {
            default.policies
        } else {
            policies
        },
    }
}

/// A `spec.behavior` with every missing field defaulted: (scale-up, scale-down).
pub fn behavior_rules(b: &HorizontalPodAutoscalerBehavior) -> (Rules, Rules) {
    (
        rules(b.scale_up.as_ref(), default_scale_up()),
        rules(b.scale_down.as_ref(), default_scale_down()),
    )
}

/// The bounds and the desired replicas of one normalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    pub current: i32,
    pub desired: i32,
    pub min: i32,
    pub max: i32,
}

impl Memory {
    /// Remembers the current replicas as the first recommendation (upstream's
    /// `recordInitialRecommendation`): a controller that just started does not scale down
    /// before a whole window has passed.
    pub fn record_initial(&mut self, current: i32, now: DateTime<Utc>) {
        if self.recommendations.is_empty() {
            self.recommendations.push((current, now));
        }
    }

    /// Normalization without `spec.behavior`: `window` is the downscale stabilization.
    pub fn normalize_legacy(
        &mut self,
        ask: Ask,
        window: TimeDelta,
        now: DateTime<Utc>,
    ) -> Normalized {
        let cutoff = now - window;
        let mut stabilized = ask.desired;
        let mut old = None;
        for (i, (replicas, at)) in self.recommendations.iter().enumerate() {
            if *at < cutoff {
                old = Some(i);
            } else {
                stabilized = stabilized.max(*replicas);
            }
        }
        self.record(old, ask.desired, now);
        let able_to_scale = if stabilized != ask.desired {
            SCALE_DOWN_STABILIZED
        } else {
            READY_FOR_NEW_SCALE
        };
        // At most double, and at least 4, in one step.
        let scale_up_limit = ask.current.saturating_mul(2).max(4);
        let (max_allowed, over_max) = if ask.max > scale_up_limit {
            (scale_up_limit, SCALE_UP_LIMIT)
        } else {
            (ask.max, TOO_MANY)
        };
        let (replicas, why) = if stabilized < ask.min {
            (ask.min, TOO_FEW)
        } else if stabilized > max_allowed {
            (max_allowed, over_max)
        } else {
            (stabilized, WITHIN_RANGE)
        };
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            scaling_limited: why,
        }
    }

    /// Normalization with `spec.behavior` (`up` and `down` defaulted by [`behavior_rules`]).
    pub fn normalize(
        &mut self,
        ask: Ask,
        up: &Rules,
        down: &Rules,
        now: DateTime<Utc>,
    ) -> Normalized {
        let up_cutoff = now - TimeDelta::seconds(up.stabilization_window_seconds.into());
        let down_cutoff = now - TimeDelta::seconds(down.stabilization_window_seconds.into());
        let (mut up_rec, mut down_rec) = (ask.desired, ask.desired);
        let mut old = None;
        for (i, (replicas, at)) in self.recommendations.iter().enumerate() {
            if *at > up_cutoff {
                up_rec = up_rec.min(*replicas);
            }
            if *at > down_cutoff {
                down_rec = down_rec.max(*replicas);
            }
            if *at < up_cutoff && *at < down_cutoff {
                old = Some(i);
            }
        }
        let stabilized = ask.current.max(up_rec).min(down_rec);
        self.record(old, ask.desired, now);
        let able_to_scale = if stabilized == ask.desired {
            READY_FOR_NEW_SCALE
        } else if ask.desired >= ask.current {
            SCALE_UP_STABILIZED
        } else {
            SCALE_DOWN_STABILIZED
        };
        let (replicas, why) = self.limit_by_rate(ask, stabilized, up, down, now);
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            scaling_limited: why,
        }
    }

    fn record(&mut self, old: Option<usize>, desired: i32, now: DateTime<Utc>) {
        match old.and_then(|i| self.recommendations.get_mut(i)) {
            Some(slot) => *slot = (desired, now),
            None => self.recommendations.push((desired, now)),
        }
    }

    /// The stabilized recommendation within the policies' rates and the bounds.
    fn limit_by_rate(
        &self,
        ask: Ask,
        desired: i32,
        up: &Rules,
        down: &Rules,
        now: DateTime<Utc>,
    ) -> (i32, Why) {
        if desired > ask.current {
            let limit = self.scale_up_limit(ask.current, up, now).max(ask.current);
            let (allowed, why) = if ask.max > limit {
                (limit, SCALE_UP_LIMIT)
            } else {
                (ask.max, TOO_MANY)
            };
            if desired > allowed {
                return (allowed, why);
            }
        } else if desired < ask.current {
            let limit = self
                .scale_down_limit(ask.current, down, now)
                .min(ask.current);
            let (allowed, why) = if ask.min < limit {
                (limit, SCALE_DOWN_LIMIT)
            } else {
                (ask.min, TOO_FEW)
            };
            if desired < allowed {
                return (allowed, why);
            }
        }
        (desired, WITHIN_RANGE)
    }

    /// Where each policy's period began: the replicas before the changes within it.
    fn period_start(&self, current: i32, period_seconds: i32, now: DateTime<Utc>) -> i32 {
        let cutoff = now - TimeDelta::seconds(period_seconds.into());
        let sum = |events: &[ScaleEvent]| -> i32 {
            events
                .iter()
                .filter(|e| e.at > cutoff)
                .map(|e| e.change)
                .sum()
        };
        current - sum(&self.scale_up_events) + sum(&self.scale_down_events)
    }

    fn scale_up_limit(&self, current: i32, rules: &Rules, now: DateTime<Utc>) -> i32 {
        if rules.select_policy == "Disabled" {
            return current;
        }
        let proposals = rules.policies.iter().map(|(kind, value, period)| {
            let start = self.period_start(current, *period, now);
            if kind == "Pods" {
                start.saturating_add(*value)
            } else {
                (start as f64 * (1.0 + *value as f64 / 100.0)).ceil() as i32
            }
        });
        if rules.select_policy == "Min" {
            proposals.min().unwrap_or(i32::MAX)
        } else {
            proposals.max().unwrap_or(i32::MIN)
        }
    }

    fn scale_down_limit(&self, current: i32, rules: &Rules, now: DateTime<Utc>) -> i32 {
        if rules.select_policy == "Disabled" {
            return current;
        }
        let proposals = rules.policies.iter().map(|(kind, value, period)| {
            let start = self.period_start(current, *period, now);
            if kind == "Pods" {
                start.saturating_sub(*value)
            } else {
                (start as f64 * (1.0 - *value as f64 / 100.0)) as i32
            }
        });
        // `Min` selects the policy that removes the fewest pods: the highest limit.
        if rules.select_policy == "Min" {
            proposals.max().unwrap_or(i32::MIN)
        } else {
            proposals.min().unwrap_or(i32::MAX)
        }
    }

    /// Remembers a rescale from `from` to `to` for the policies' periods (with behavior
    /// only); events older than the longest period are reused.
    pub fn store_scale_event(
        &mut self,
        (up, down): (&Rules, &Rules),
        from: i32,
        to: i32,
        now: DateTime<Utc>,
    ) {
        let (events, rules, change) = if to > from {
            (&mut self.scale_up_events, up, to - from)
        } else if to < from {
            (&mut self.scale_down_events, down, from - to)
        } else {
            return;
        };
        let longest = rules.policies.iter().map(|p| p.2).max().unwrap_or(0);
        let cutoff = now - TimeDelta::seconds(longest.into());
        for e in events.iter_mut() {
            if e.at < cutoff {
                e.outdated = true;
            }
        }
        let event = ScaleEvent {
            change,
            at: now,
            outdated: false,
        };
        match events.iter_mut().find(|e| e.outdated) {
            Some(slot) => *slot = event,
            None => events.push(event),
        }
    }
}

#[cfg(test)]
mod tests;
