//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's `leaderelection`
//! package does it: acquire by creating the Lease, renew by replacing it with a
//! `resourceVersion` precondition, take over a Lease whose record has not moved for its
//! `leaseDurationSeconds`.
//!
//! Expiry is judged on the local monotonic clock from when this elector first *observed* the
//! current record (holder, renewTime, duration), not by comparing another host's `renewTime`
//! with our wall clock: for hosts with synchronised clocks that is `renewTime + leaseDuration`,
//! and clock skew between hosts can never make two replicas lead at once. The leader gives up
//! when it has not renewed for `renew_deadline` (< `lease_duration`), so it has stopped before
//! anyone may take over. On shutdown (SIGTERM/SIGINT in `berth scheduler`) the leader gives the
//! Lease up, as client-go does with `ReleaseOnCancel`, so a standby need not wait it out.

use berth_core::clock::Clock;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Timings and identity of one elector (upstream defaults: 15s / 10s / 2s).
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease (`kube-system`).
    pub namespace: String,
    /// Name of the Lease (the scheduler's name).
    pub name: String,
    /// Who we are in `holderIdentity` (hostname + random suffix).
    pub identity: String,
    /// How long non-leaders wait after the last observed renewal before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up.
    pub renew_deadline: Duration,
    /// Time between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// Upstream timings for the Lease `kube-system/<name>`.
    pub fn new(name: &str, identity: &str) -> LeaderElectionConfig {
        LeaderElectionConfig {
            namespace: "kube-system".into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Rejects timings with which two leaders could overlap (as kube-scheduler does).
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err(
                "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"
                    .into(),
            );
        }
        if self.renew_deadline <= self.retry_period {
            return Err(
                "--leader-elect-renew-deadline must be greater than --leader-elect-retry-period"
                    .into(),
            );
        }
        if self.retry_period.is_zero() {
            return Err("--leader-elect-retry-period must be positive".into());
        }
        Ok(())
    }
}

/// A unique holder identity: the host name plus a random suffix (as upstream's `id_<uuid>`).
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "berth".into());
    format!("{host}_{:016x}", rand::random::<u64>())
}

/// Why leading ended.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be renewed within the renew deadline, or another holder has it.
    #[error("leader election lost: {0}")]
    Lost(String),
}

/// The lease record as last observed, and when (local clock) it was first seen.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: String,
    renew_time: String,
    duration: Duration,
}

/// One participant in the election for a Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    cfg: LeaderElectionConfig,
    clock: Clock,
    observed: Option<(Record, Instant)>,
}

/// Outcome of one acquire-or-renew attempt.
enum Attempt {
    Leading,
    HeldBy(String),
}

impl LeaderElector {
    /// An elector for `cfg.namespace/cfg.name` through `client`, reading time from `clock`.
    pub fn new(client: kube::Client, cfg: LeaderElectionConfig, clock: Clock) -> LeaderElector {
        LeaderElector {
            api: Api::namespaced(client, &cfg.namespace),
            cfg,
            clock,
            observed: None,
        }
    }

    /// Campaigns until it leads, then renews; `leading` is `true` exactly while we hold the
    /// Lease. Returns `Err` when leadership is lost, and `Ok` once `shutdown` resolves, after
    /// giving the Lease up if we held it (client-go's `ReleaseOnCancel`): `leading` goes `false`
    /// first, then the Lease is written with no holder, so a standby takes over at its next
    /// retry instead of waiting out the lease duration.
    pub async fn run(
        mut self,
        leading: watch::Sender<bool>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), LeaderError> {
        tokio::pin!(shutdown);
        let lease = format!("{}/{}", self.cfg.namespace, self.cfg.name);
        loop {
            let attempt = tokio::select! {
                attempt = self.try_acquire_or_renew() => attempt,
                () = &mut shutdown => return self.release(&leading).await,
            };
            match attempt {
                Ok(Attempt::Leading) => break,
                Ok(Attempt::HeldBy(h)) => tracing::debug!(%lease, holder = %h, "lease held"),
                Err(e) => tracing::warn!(%lease, error = %e, "acquiring the lease failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(jitter(self.cfg.retry_period)) => {}
                () = &mut shutdown => return self.release(&leading).await,
            }
        }
        tracing::info!(%lease, identity = %self.cfg.identity, "became leader");
        let _ = leading.send(true);
        let mut last_renew = self.clock.instant();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.cfg.retry_period) => {}
                () = &mut shutdown => return self.release(&leading).await,
            }
            let left = self.cfg.renew_deadline.saturating_sub(last_renew.elapsed());
            let renewed = tokio::select! {
                r = tokio::time::timeout(left, self.try_acquire_or_renew()) => r,
                () = &mut shutdown => return self.release(&leading).await,
            };
            let why = match renewed {
                Ok(Ok(Attempt::Leading)) => {
                    last_renew = self.clock.instant();
                    continue;
                }
                Ok(Ok(Attempt::HeldBy(h))) => format!("the lease {lease} is now held by {h}"),
                Ok(Err(e)) if last_renew.elapsed() < self.cfg.renew_deadline => {
                    tracing::warn!(%lease, error = %e, "renewing the lease failed; retrying");
                    continue;
                }
                Ok(Err(e)) => format!("could not renew {lease} within the renew deadline: {e}"),
                Err(_) => format!("could not renew {lease} within the renew deadline"),
            };
            let _ = leading.send(false);
            // Upstream's words, at warn: in `berth serve` the replica lives on and campaigns again.
            tracing::warn!(%lease, reason = %why, "leaderelection lost");
            return Err(LeaderError::Lost(why));
        }
    }

    /// Stops leading and, if the Lease is ours, empties its holder (upstream writes the same
    /// record: no holder, `leaseDurationSeconds: 1`, renew and acquire time now). A Lease
    /// written before a cancelled attempt could report back is released too. Failing to
    /// release is only logged: the Lease then expires as it would after a crash.
    async fn release(&mut self, leading: &watch::Sender<bool>) -> Result<(), LeaderError> {
        let _ = leading.send(false);
        let lease = format!("{}/{}", self.cfg.namespace, self.cfg.name);
        match tokio::time::timeout(self.cfg.renew_deadline, self.try_release()).await {
            Ok(Ok(true)) => tracing::info!(%lease, "released the lease"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(%lease, error = %e, "releasing the lease failed"),
            Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
        }
        Ok(())
    }

    /// `true` when the Lease was ours and now has no holder.
    async fn try_release(&mut self) -> Result<bool, kube::Error> {
        let Some(current) = self.api.get_opt(&self.cfg.name).await? else {
            return Ok(false);
        };
        let spec = serde_json::to_value(&current.spec).unwrap_or(Value::Null);
        if spec.get("holderIdentity").and_then(Value::as_str) != Some(&self.cfg.identity) {
            return Ok(false);
        }
        let now = self.clock.micro_timestamp();
        let rv = current.metadata.resource_version.clone();
        let mut released = self.lease(rv, "", &now, &now, transitions_of(&spec))?;
        if let Some(spec) = released.spec.as_mut() {
            spec.lease_duration_seconds = Some(1);
        }
        match self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &released)
            .await
        {
            Ok(_) => Ok(true),
            // Changed meanwhile: then it is no longer ours to release.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let me = self.cfg.identity.clone();
        let now = self.clock.micro_timestamp();
        let current = match self.api.get_opt(&self.cfg.name).await? {
            None => {
                let lease = self.lease(None, &me, &now, &now, 0)?;
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(created) => {
                        self.observe(&created);
                        Ok(Attempt::Leading)
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::HeldBy("?".into())),
                    Err(e) => Err(e),
                };
            }
            Some(l) => l,
        };
        let record = self.observe(&current);
        let expired = self
            .observed
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() >= record.duration);
        if !record.holder.is_empty() && record.holder != me && !expired {
            return Ok(Attempt::HeldBy(record.holder));
        }
        let spec = serde_json::to_value(&current.spec).unwrap_or(Value::Null);
        let (acquire, transitions) = if record.holder == me {
            let acquired = spec.get("acquireTime").and_then(Value::as_str);
            (acquired.unwrap_or(&now).to_string(), transitions_of(&spec))
        } else {
            (now.clone(), transitions_of(&spec) + 1)
        };
        let rv = current.metadata.resource_version.clone();
        let lease = self.lease(rv, &me, &acquire, &now, transitions)?;
        match self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(&updated);
                Ok(Attempt::Leading)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::HeldBy(record.holder)),
            Err(e) => Err(e),
        }
    }

    /// Notes the record in `lease`; the observation time moves only when the record changes.
    fn observe(&mut self, lease: &Lease) -> Record {
        let spec = serde_json::to_value(&lease.spec).unwrap_or(Value::Null);
        let text = |k: &str| {
            spec.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let secs = spec.get("leaseDurationSeconds").and_then(Value::as_u64);
        let record = Record {
            holder: text("holderIdentity"),
            renew_time: text("renewTime"),
            duration: secs.map_or(self.cfg.lease_duration, Duration::from_secs),
        };
        if self.observed.as_ref().map(|(r, _)| r) != Some(&record) {
            self.observed = Some((record.clone(), self.clock.instant()));
        }
        record
    }

    fn lease(
        &self,
        resource_version: Option<String>,
        holder: &str,
        acquire: &str,
        renew: &str,
        transitions: i64,
    ) -> Result<Lease, kube::Error> {
        serde_json::from_value(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {
                "name": self.cfg.name, "namespace": self.cfg.namespace,
                "resourceVersion": resource_version,
            },
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": self.cfg.lease_duration.as_secs(),
                "acquireTime": acquire, "renewTime": renew,
                "leaseTransitions": transitions,
            },
        }))
        .map_err(kube::Error::SerdeError)
    }
}

fn transitions_of(spec: &Value) -> i64 {
    spec.get("leaseTransitions")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `period` plus up to 20% (client-go's `JitterUntil` factor 1.2), so replicas do not march in step.
fn jitter(period: Duration) -> Duration {
    period + period.mul_f64(rand::random::<f64>() * 0.2)
}

#[cfg(test)]
mod tests {
    use super::{default_identity, LeaderElectionConfig};
    use std::time::Duration;

    #[test]
    fn upstream_timings_are_valid_and_overlapping_ones_are_not() {
        let cfg = LeaderElectionConfig::new("custom-scheduler", "me");
        assert_eq!(cfg.namespace, "kube-system");
        assert_eq!(cfg.lease_duration, Duration::from_secs(15));
        assert!(cfg.validate().is_ok());
        let renew_too_long = LeaderElectionConfig {
            renew_deadline: Duration::from_secs(15),
            ..cfg.clone()
        };
        assert!(renew_too_long
            .validate()
            .unwrap_err()
            .contains("lease-duration"));
        let retry_too_long = LeaderElectionConfig {
            retry_period: Duration::from_secs(10),
            ..cfg
        };
        assert!(retry_too_long
            .validate()
            .unwrap_err()
            .contains("retry-period"));
    }

    #[test]
    fn identities_are_unique_per_process_start() {
        assert_ne!(default_identity(), default_identity());
    }
}
