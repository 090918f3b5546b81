//! Zones, their disruption states and the per-zone taint rate limits (control-loops §3.5).
//!
//! Nodes are grouped into zones by their region and zone labels. Each pass counts, per zone,
//! the nodes whose Ready condition is not `True`; the zone's state decides how fast its nodes
//! may be tainted `NoExecute`: `Normal` and `FullDisruption` at `--node-eviction-rate`,
//! `PartialDisruption` at `--secondary-node-eviction-rate` in a zone of more than
//! `--large-cluster-size-threshold` nodes and not at all in a smaller one (a zone that lost most
//! of its nodes at once is more likely cut off than broken). When every zone is fully
//! disrupted, nothing is tainted anywhere (the controller may be the one cut off).

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use std::collections::{BTreeSet, VecDeque};
use std::fmt;

/// Zone labels, today's first, then the seed era's.
const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];
const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];

/// Zone settings (upstream flags of kube-controller-manager).
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneConfig {
    /// `--node-eviction-rate`: nodes tainted per second per zone (0.1).
    pub eviction_rate: f64,
    /// `--secondary-node-eviction-rate`: the same in a large partially disrupted zone (0.01).
    pub secondary_eviction_rate: f64,
    /// `--unhealthy-zone-threshold`: the not-ready fraction of a partially disrupted zone (0.55).
    pub unhealthy_zone_threshold: f64,
    /// `--large-cluster-size-threshold`: a zone of more nodes than this is large (50).
    pub large_cluster_size_threshold: usize,
}

impl Default for ZoneConfig {
    fn default() -> Self {
        ZoneConfig {
            eviction_rate: 0.1,
            secondary_eviction_rate: 0.01,
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
        }
    }
}

impl ZoneConfig {
    /// The taint rate of a zone of `size` nodes in `state` (upstream `setLimiterInZone`).
    pub fn rate(&self, state: ZoneState, size: usize) -> f64 {
        match state {
            ZoneState::Initial | ZoneState::Normal | ZoneState::FullDisruption => {
                self.eviction_rate
            }
            ZoneState::PartialDisruption if size > self.large_cluster_size_threshold => {
                self.secondary_eviction_rate
            }
            ZoneState::PartialDisruption => 0.0,
        }
    }

    /// A zone's state from its ready and not-ready node counts (upstream `ComputeZoneState`).
    pub fn state(&self, ready: usize, not_ready: usize) -> ZoneState {
        let total = ready + not_ready;
        if ready == 0 && not_ready > 0 {
            ZoneState::FullDisruption
        } else if not_ready > 2
            && total > 0
            && not_ready as f64 / total as f64 >= self.unhealthy_zone_threshold
        {
            ZoneState::PartialDisruption
        } else {
            ZoneState::Normal
        }
    }
}

/// A zone's disruption state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Just seen; tainted at the normal rate.
    Initial,
    Normal,
    PartialDisruption,
    FullDisruption,
}

impl fmt::Display for ZoneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::PartialDisruption => "PartialDisruption",
            ZoneState::FullDisruption => "FullDisruption",
        })
    }
}

/// The zone a node belongs to: `region:zone` from its labels, `zone` without a region, `""`
/// without either.
pub fn zone_of(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let first = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| labels.and_then(|l| l.get(*k)))
            .cloned()
            .unwrap_or_default()
    };
    let (region, zone) = (first(&REGION_LABELS), first(&ZONE_LABELS));
    if region.is_empty() {
        zone
    } else {
        format!("{region}:{zone}")
    }
}

/// How a zone is named in events.
pub fn zone_name(zone: &str) -> String {
    if zone.is_empty() {
        "(nodes without a zone label)".into()
    } else {
        format!("{zone:?}")
    }
}

/// A token bucket of burst 1 (upstream's `TokenBucketRateLimiter(qps, 1)`), or one that never
/// lets anything through (QPS 0).
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    qps: f64,
    tokens: f64,
    last: Option<DateTime<Utc>>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64) -> TokenBucket {
        TokenBucket {
            qps,
            tokens: 1.0,
            last: None,
        }
    }

    /// Its rate.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    fn refill(&mut self, now: DateTime<Utc>) {
        if let Some(last) = self.last {
            let elapsed = (now - last).num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
            self.tokens = (self.tokens + elapsed * self.qps).min(1.0);
        }
        self.last = Some(now);
    }

    /// Takes a token if one is there.
    pub fn try_accept(&mut self, now: DateTime<Utc>) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        self.refill(now);
        // A hair of tolerance: 10 s at 0.1/s must be a whole token despite float rounding.
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Replaces the bucket by one at `qps` (upstream `SwapLimiter`): nothing changes at the
    /// same rate; a new bucket starts full, unless the old one had no token left.
    pub fn swap(&mut self, qps: f64, now: DateTime<Utc>) {
        if self.qps == qps {
            return;
        }
        let mut next = TokenBucket::new(qps);
        if qps > 0.0 && !self.try_accept(now) {
            next.try_accept(now);
        }
        *self = next;
    }
}

/// The nodes of one zone waiting to be tainted `NoExecute`, with the zone's rate limit
/// (upstream `RateLimitedTimedQueue`): a node once taken stays remembered, and is not queued
/// again, until it is removed (it became Ready, or was declared reachable).
#[derive(Clone, Debug)]
pub struct TaintQueue {
    pub bucket: TokenBucket,
    queue: VecDeque<String>,
    seen: BTreeSet<String>,
}

impl TaintQueue {
    pub fn new(qps: f64) -> TaintQueue {
        TaintQueue {
            bucket: TokenBucket::new(qps),
            queue: VecDeque::new(),
            seen: BTreeSet::new(),
        }
    }

    /// Queues a node unless it is queued or was taken already.
    pub fn add(&mut self, node: &str) {
        if self.seen.insert(node.to_string()) {
            self.queue.push_back(node.to_string());
        }
    }

    /// Forgets a node.
    pub fn remove(&mut self, node: &str) {
        if self.seen.remove(node) {
            self.queue.retain(|n| n != node);
        }
    }

    /// Whether any node waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Takes nodes from the head while the bucket has tokens; `act` says whether the node is
    /// done (else it goes back to the end of the queue, still remembered).
    pub fn work(&mut self, now: DateTime<Utc>, mut act: impl FnMut(&str) -> bool) {
        let mut retried = Vec::new();
        while let Some(head) = self.queue.front().cloned() {
            if !self.bucket.try_accept(now) {
                break;
            }
            self.queue.pop_front();
            if !act(&head) {
                retried.push(head);
            }
        }
        self.queue.extend(retried);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default()
    }

    #[test]
    fn zone_states_follow_the_spec_vectors() {
        let c = ZoneConfig::default();
        // (ready, notReady, state, rate at size ≤ 50, rate at size 60)
        let cases = [
            (10, 0, ZoneState::Normal, 0.1, 0.1),
            (3, 2, ZoneState::Normal, 0.1, 0.1),
            (4, 6, ZoneState::PartialDisruption, 0.0, 0.01),
            (27, 33, ZoneState::PartialDisruption, 0.0, 0.01),
            (28, 32, ZoneState::Normal, 0.1, 0.1),
            (0, 3, ZoneState::FullDisruption, 0.1, 0.1),
            (1, 3, ZoneState::PartialDisruption, 0.0, 0.01),
            (0, 0, ZoneState::Normal, 0.1, 0.1),
        ];
        for (ready, not_ready, state, small, large) in cases {
            assert_eq!(c.state(ready, not_ready), state, "{ready}/{not_ready}");
            assert_eq!(c.rate(state, 10), small, "{ready}/{not_ready} small");
            assert_eq!(c.rate(state, 60), large, "{ready}/{not_ready} large");
        }
    }

    #[test]
    fn a_zone_is_named_by_its_labels() {
        let node = |labels: serde_json::Value| -> Node {
            serde_json::from_value(json!({"metadata": {"name": "n", "labels": labels}})).unwrap()
        };
        assert_eq!(zone_of(&node(json!({}))), "");
        assert_eq!(
            zone_of(&node(
                json!({"failure-domain.beta.kubernetes.io/zone": "us-east-1a"})
            )),
            "us-east-1a"
        );
        assert_eq!(
            zone_of(&node(json!({"topology.kubernetes.io/zone": "a",
                                  "topology.kubernetes.io/region": "r"}))),
            "r:a"
        );
    }

    #[test]
    fn the_bucket_lets_one_through_then_one_per_period() {
        let mut b = TokenBucket::new(0.1);
        assert!(b.try_accept(t(0)));
        assert!(!b.try_accept(t(0)));
        assert!(!b.try_accept(t(9)));
        assert!(b.try_accept(t(10)));
        assert!(!b.try_accept(t(15)));
        // Burst 1: a long wait saves one token only.
        assert!(b.try_accept(t(100)));
        assert!(!b.try_accept(t(100)));
        let mut never = TokenBucket::new(0.0);
        assert!(!never.try_accept(t(1000)));
    }

    #[test]
    fn swapping_keeps_an_empty_bucket_empty() {
        let mut b = TokenBucket::new(0.1);
        assert!(b.try_accept(t(0)));
        b.swap(0.01, t(1));
        assert!(!b.try_accept(t(1)));
        assert!(b.try_accept(t(1) + Duration::seconds(100)));
        // Same rate: untouched.
        let mut full = TokenBucket::new(0.1);
        full.swap(0.1, t(0));
        assert!(full.try_accept(t(0)));
        // From never to a rate: the old one had no token, so the new one starts empty too.
        let mut never = TokenBucket::new(0.0);
        never.swap(0.1, t(0));
        assert!(!never.try_accept(t(0)));
        assert!(never.try_accept(t(10)));
    }

    #[test]
    fn the_queue_releases_at_the_rate_and_remembers_what_it_released() {
        let mut q = TaintQueue::new(0.1);
        q.add("a");
        q.add("b");
        q.add("a");
        let mut taken = Vec::new();
        q.work(t(0), |n| {
            taken.push(n.to_string());
            true
        });
        assert_eq!(taken, ["a"]);
        q.work(t(5), |n| {
            taken.push(n.to_string());
            true
        });
        assert_eq!(taken, ["a"]);
        q.work(t(10), |n| {
            taken.push(n.to_string());
            true
        });
        assert_eq!(taken, ["a", "b"]);
        // Taken nodes are not queued again until removed.
        q.add("a");
        assert!(q.is_empty());
        q.remove("a");
        q.add("a");
        assert!(!q.is_empty());
    }

    #[test]
    fn a_node_not_done_goes_back_in_the_queue() {
        let mut q = TaintQueue::new(1.0);
        q.add("a");
        q.work(t(0), |_| false);
        assert!(!q.is_empty());
        let mut taken = Vec::new();
        q.work(t(1), |n| {
            taken.push(n.to_string());
            true
        });
        assert_eq!(taken, ["a"]);
    }
}
