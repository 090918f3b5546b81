//! Which replicas are alive: each replica renews its own Lease
//! `kube-system/berth-replica-<id>`, and a replica is live while its Lease's record has moved
//! within the lease duration.
//!
//! As client-go's leader election does, expiry is judged from when *this* replica observed the
//! record change, not by comparing another host's `renewTime` with our clock, so clock skew
//! between hosts cannot make a dead replica look alive for long. Only the first sight of a
//! record (at our start) is dated by its `renewTime`, clamped into the last lease duration: a
//! replica that died long before we started is not live, and one whose clock runs ahead of ours
//! is live for one lease duration, no longer.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::time::Duration;

/// The prefix of every replica's Lease name in `kube-system`.
pub const REPLICA_LEASE_PREFIX: &str = "berth-replica-";

/// The name of the Lease of replica `id`.
pub fn lease_name(id: &str) -> String {
    format!("{REPLICA_LEASE_PREFIX}{id}")
}

/// The replica a Lease name belongs to, if it is a replica's Lease.
pub fn replica_of(lease: &str) -> Option<&str> {
    lease
        .strip_prefix(REPLICA_LEASE_PREFIX)
        .filter(|id| !id.is_empty())
}

/// A replica's Lease as read: who holds it and its `renewTime` (as written, compared as is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub replica: String,
    pub holder: String,
    pub renew_time: String,
}

/// What this replica has observed of the others' Leases.
#[derive(Clone, Debug, Default)]
pub struct Membership {
    seen: BTreeMap<String, Seen>,
}

#[derive(Clone, Debug)]
struct Seen {
    holder: String,
    renew_time: String,
    observed_at: DateTime<Utc>,
}

impl Membership {
    /// Takes in every replica Lease as listed now; Leases no longer listed are forgotten (a
    /// deleted Lease is a replica gone).
    pub fn observe(&mut self, records: &[Record], now: DateTime<Utc>, lease_duration: Duration) {
        let window = chrono::Duration::from_std(lease_duration).unwrap_or(chrono::Duration::MAX);
        let mut seen = BTreeMap::new();
        for r in records {
            let observed_at = match self.seen.get(&r.replica) {
                Some(s) if s.holder == r.holder && s.renew_time == r.renew_time => s.observed_at,
                Some(_) => now,
                None => first_sight(&r.renew_time, now, window),
            };
            seen.insert(
                r.replica.clone(),
                Seen {
                    holder: r.holder.clone(),
                    renew_time: r.renew_time.clone(),
                    observed_at,
                },
            );
        }
        self.seen = seen;
    }

    /// The live replicas, by name: a Lease held (a released one has no holder) whose record
    /// moved less than `lease_duration` ago.
    pub fn live(&self, now: DateTime<Utc>, lease_duration: Duration) -> Vec<String> {
        let window = chrono::Duration::from_std(lease_duration).unwrap_or(chrono::Duration::MAX);
        self.seen
            .iter()
            .filter(|(_, s)| !s.holder.is_empty() && now - s.observed_at < window)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// When a record first seen is taken to have been observed: its `renewTime`, no later than now
/// and no earlier than a lease duration ago (an unreadable one: a lease duration ago).
fn first_sight(renew_time: &str, now: DateTime<Utc>, window: chrono::Duration) -> DateTime<Utc> {
    let oldest = now - window;
    DateTime::parse_from_rfc3339(renew_time)
        .map(|t| t.with_timezone(&Utc))
        .map_or(oldest, |t| t.clamp(oldest, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(15);

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    fn record(replica: &str, renewed: DateTime<Utc>) -> Record {
        Record {
            replica: replica.into(),
            holder: replica.into(),
            renew_time: berth_core::clock::micro_timestamp(renewed),
        }
    }

    #[test]
    fn lease_names_read_back_and_other_leases_are_not_replicas() {
        assert_eq!(lease_name("host-6443"), "berth-replica-host-6443");
        assert_eq!(replica_of("berth-replica-host-6443"), Some("host-6443"));
        assert_eq!(replica_of("kube-scheduler"), None);
        assert_eq!(replica_of("berth-replica-"), None);
    }

    #[test]
    fn a_replica_renewing_stays_live_and_one_that_stops_is_dropped_after_the_lease_duration() {
        let mut m = Membership::default();
        m.observe(&[record("a", at(0)), record("b", at(0))], at(0), LEASE);
        assert_eq!(m.live(at(0), LEASE), ["a", "b"]);
        // a renews every 2s; b stops renewing at 0.
        for t in (2..=14).step_by(2) {
            m.observe(&[record("a", at(t)), record("b", at(0))], at(t), LEASE);
        }
        assert_eq!(m.live(at(14), LEASE), ["a", "b"]);
        assert_eq!(m.live(at(15), LEASE), ["a"], "b is gone 15s after 0");
        for t in (16..=40).step_by(2) {
            m.observe(&[record("a", at(t)), record("b", at(0))], at(t), LEASE);
        }
        assert_eq!(m.live(at(40), LEASE), ["a"]);
    }

    #[test]
    fn expiry_runs_from_our_observation_not_from_the_holders_clock() {
        let mut m = Membership::default();
        m.observe(&[record("a", at(0))], at(0), LEASE);
        // a's clock runs an hour behind ours: its renewals still count when we see them.
        m.observe(&[record("a", at(-3600))], at(10), LEASE);
        assert_eq!(m.live(at(24), LEASE), ["a"]);
        assert!(m.live(at(25), LEASE).is_empty());
    }

    #[test]
    fn a_lease_first_seen_long_after_its_last_renewal_is_not_live() {
        let mut m = Membership::default();
        m.observe(
            &[record("old", at(-600)), record("new", at(-3))],
            at(0),
            LEASE,
        );
        assert_eq!(m.live(at(0), LEASE), ["new"]);
        assert!(m.live(at(12), LEASE).is_empty(), "new expires 15s after -3");
    }

    #[test]
    fn a_renewal_time_ahead_of_our_clock_counts_for_one_lease_duration_only() {
        let mut m = Membership::default();
        m.observe(&[record("ahead", at(3600))], at(0), LEASE);
        assert_eq!(m.live(at(14), LEASE), ["ahead"]);
        assert!(m.live(at(15), LEASE).is_empty());
    }

    #[test]
    fn a_released_or_deleted_lease_is_no_live_replica() {
        let mut m = Membership::default();
        m.observe(&[record("a", at(0)), record("b", at(0))], at(0), LEASE);
        let released = Record {
            holder: String::new(),
            ..record("a", at(1))
        };
        m.observe(&[released, record("b", at(1))], at(1), LEASE);
        assert_eq!(m.live(at(1), LEASE), ["b"]);
        m.observe(&[], at(2), LEASE);
        assert!(m.live(at(2), LEASE).is_empty());
    }

    #[test]
    fn an_unreadable_renewal_time_first_seen_is_not_live() {
        let mut m = Membership::default();
        let r = Record {
            renew_time: "yesterday".into(),
            ..record("a", at(0))
        };
        m.observe(std::slice::from_ref(&r), at(0), LEASE);
        assert!(m.live(at(0), LEASE).is_empty());
        // It becomes live once we see it change.
        let renewed = Record {
            renew_time: "today".into(),
            ..r
        };
        m.observe(&[renewed], at(1), LEASE);
        assert_eq!(m.live(at(1), LEASE), ["a"]);
    }
}
