//! Several `berth serve` replicas on one etcd: the `--etcd-*` flags that select the etcd
//! backend, and the Leases that elect which replica runs each group of control loops.
//!
//! Every replica serves the API from its own mirror of etcd. Each group of control loops runs
//! only in the replica holding its own Lease in `kube-system`, named as upstream's components
//! name theirs: `kube-scheduler` (the scheduler), `kube-controller-manager` (the controllers,
//! node lifecycle among them), `descheduler`; the simulated kubelets run in the holder of
//! `berth-control-plane` (the cluster file's node failure schedule). A replica may lead some and
//! not others. When a holder dies, another replica takes its Lease once it has not moved for
//! the lease duration and starts those loops. A holder that cannot renew within the renew
//! deadline stops those loops at once, so they have stopped before anyone may take over, but
//! it does not exit as kube-scheduler and kube-controller-manager do: its API server shares the
//! process and keeps serving, and it campaigns again ([`crate::leading`]).
//!
//! The simulated kubelets are shared among the replicas (`berth_kubelet::share`): each replica
//! keeps its own Lease `kube-system/berth-replica-<id>` ([`Election::membership`]) and runs the
//! nodes assigned to it by rendezvous hashing over the live replicas.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use berth_apiserver::Clock;
use berth_core::supervisor::Supervisor;
use berth_scheduler::driver::{leader, LeaderElectionConfig, LeaderElector};
use berth_store::{EtcdConfig, Store};

/// The scheduler's Lease (upstream kube-scheduler's).
pub const SCHEDULER_LEASE: &str = "kube-scheduler";
/// The controllers' Lease (upstream kube-controller-manager's, which runs node lifecycle too).
pub const CONTROLLER_MANAGER_LEASE: &str = "kube-controller-manager";
/// The in-process descheduler's Lease (upstream descheduler's).
pub const DESCHEDULER_LEASE: &str = "descheduler";
/// The Lease of the simulated nodes' cluster-wide part: the cluster file's failure schedule
/// (the kubelets themselves are shared among the replicas).
pub const KUBELETS_LEASE: &str = "berth-control-plane";

/// kube-apiserver's etcd flags, and the election timings of the replicas' control loops.
#[derive(clap::Args, Debug, Clone)]
pub struct EtcdArgs {
    /// Store everything in etcd at these client URLs (comma-separated) instead of the embedded
    /// store; several replicas on the same etcd serve one cluster.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// CA bundle of the etcd members' certificates.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd.
    #[arg(long)]
    pub etcd_certfile: Option<PathBuf>,
    /// The client certificate's key.
    #[arg(long)]
    pub etcd_keyfile: Option<PathBuf>,
    /// The etcd key prefix of every object (as kube-apiserver's).
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// How often etcd's history is compacted (one replica per round; 0 never). Without etcd,
    /// how long the embedded store keeps its history (a `continue` token or a watch's
    /// resourceVersion expires about this long after it was handed out, give or take 10 s),
    /// within its bound on revisions.
    #[arg(long, default_value = "5m", value_parser = berth_controllers::parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// With etcd: how long standby replicas wait after the leader's last observed renewal
    /// before taking over the control loops.
    #[arg(long, default_value = "15s", value_parser = berth_controllers::parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// With etcd: how long the leader keeps trying to renew before it stops its loops.
    #[arg(long, default_value = "10s", value_parser = berth_controllers::parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// With etcd: time between attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = berth_controllers::parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// With etcd: this replica's id among those sharing the simulated kubelets (its Lease is
    /// `kube-system/berth-replica-<id>`; node Leases name it as holder). Unique per replica;
    /// default: the host name and the port (`myhost-6443`).
    #[arg(long, value_parser = parse_replica_id)]
    pub replica_id: Option<String>,
}

/// A replica id: lowercase letters, digits, '-' and '.', as a Lease name allows.
fn parse_replica_id(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 200
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?}: a replica id is lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"))
    }
}

/// The default replica id: the host name, made fit for a Lease name, and the port.
pub fn default_replica_id(port: u16) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    replica_id_of(&host, port)
}

fn replica_id_of(host: &str, port: u16) -> String {
    let host: String = host
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = host.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let host = if host.is_empty() { "berth" } else { host };
    format!("{host}-{port}")
}

impl EtcdArgs {
    /// Whether the etcd backend is selected.
    pub fn enabled(&self) -> bool {
        !self.etcd_servers.is_empty()
    }

    fn config(&self) -> EtcdConfig {
        EtcdConfig {
            ca_file: self.etcd_cafile.clone(),
            cert_file: self.etcd_certfile.clone(),
            key_file: self.etcd_keyfile.clone(),
            prefix: self.etcd_prefix.clone(),
            compaction_interval: (!self.etcd_compaction_interval.is_zero())
                .then_some(self.etcd_compaction_interval),
            ..EtcdConfig::new(self.etcd_servers.clone())
        }
    }

    /// Connects to etcd and loads the mirror.
    pub async fn open_store(&self) -> anyhow::Result<Store> {
        let config = self.config();
        let servers = self.etcd_servers.join(",");
        tokio::task::spawn_blocking(move || Store::etcd(&config))
            .await
            .context("opening the etcd store")?
            .with_context(|| format!("opening the etcd store at {servers}"))
    }

    /// This replica's elections: one identity for all its Leases (so `kubectl get leases -n
    /// kube-system` shows which replica leads what), with the flags' timings; their campaigns
    /// run under `supervisor`.
    pub fn election(
        &self,
        client: kube::Client,
        clock: Clock,
        supervisor: Supervisor,
    ) -> anyhow::Result<Election> {
        let timings = LeaderElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            ..LeaderElectionConfig::new("", &leader::default_identity())
        };
        timings.validate().map_err(anyhow::Error::msg)?;
        Ok(Election {
            timings,
            client,
            clock,
            supervisor,
        })
    }

    /// The id of this replica, listening on `port`.
    pub fn replica_id(&self, port: u16) -> String {
        self.replica_id
            .clone()
            .unwrap_or_else(|| default_replica_id(port))
    }
}

/// Campaigns for this replica's Leases.
pub struct Election {
    timings: LeaderElectionConfig,
    client: kube::Client,
    clock: Clock,
    /// Each campaign is a loop: one that panics is restarted (and campaigns again).
    supervisor: Supervisor,
}

/// The name the campaign for this replica's own Lease is supervised under.
pub const MEMBERSHIP_LOOP: &str = "replica-membership";

/// The name the campaign for the Lease `lease` is supervised under.
pub fn campaign_loop(lease: &str) -> String {
    format!("leader-election-{lease}")
}

impl Election {
    /// Keeps this replica's own Lease `kube-system/berth-replica-<replica>` renewed, with the
    /// flags' timings; the receiver reads `true` while it is. A renewal missing its deadline
    /// turns it `false` (the kubelets stop) and the replica campaigns again: nobody else
    /// campaigns for this Lease, so it is ours again as soon as the API answers.
    pub fn membership(&self, replica: &str) -> tokio::sync::watch::Receiver<bool> {
        let cfg = LeaderElectionConfig {
            name: berth_kubelet::share::membership::lease_name(replica),
            identity: replica.to_string(),
            ..self.timings.clone()
        };
        println!(
            "simulated kubelets shared among the replicas, this one as {replica} (Lease kube-system/{})",
            cfg.name
        );
        let (tx, rx) = tokio::sync::watch::channel(false);
        let (client, clock) = (self.client.clone(), self.clock.clone());
        self.supervisor.spawn(MEMBERSHIP_LOOP, move || {
            renew_membership(client.clone(), cfg.clone(), clock.clone(), tx.clone())
        });
        rx
    }

    /// The timings members are judged by: (lease duration, retry period).
    pub fn timings(&self) -> (Duration, Duration) {
        (self.timings.lease_duration, self.timings.retry_period)
    }

    /// Campaigns for the Lease `kube-system/<lease>` in the background and runs `loops` each
    /// time this replica wins it; on a lost Lease the loops stop in place (the API server keeps
    /// serving) and the replica campaigns again (see [`crate::leading`]).
    pub fn run_when_leading<F>(
        &self,
        lease: &str,
        what: &'static str,
        loops: impl Fn() -> F + Send + Sync + 'static,
    ) -> anyhow::Result<()>
    where
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let election = LeaderElectionConfig {
            name: lease.to_string(),
            ..self.timings.clone()
        };
        println!(
            "{what} elected through the Lease kube-system/{lease} as {}",
            election.identity
        );
        let (client, clock) = (self.client.clone(), self.clock.clone());
        let loops = Arc::new(loops);
        self.supervisor.spawn(campaign_loop(lease), move || {
            let loops = loops.clone();
            crate::leading::campaign(
                client.clone(),
                election.clone(),
                clock.clone(),
                what,
                move || loops(),
            )
        });
        Ok(())
    }
}

/// Holds this replica's own Lease for as long as the process runs, campaigning again after
/// each renewal that missed its deadline.
async fn renew_membership(
    client: kube::Client,
    cfg: LeaderElectionConfig,
    clock: Clock,
    tx: tokio::sync::watch::Sender<bool>,
) {
    loop {
        let elector = LeaderElector::new(client.clone(), cfg.clone(), clock.clone());
        if let Err(lost) = elector.run(tx.clone(), std::future::pending()).await {
            println!("{lost}; this replica's kubelets stopped until it renews again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_replica_id, replica_id_of};

    #[test]
    fn the_default_replica_id_is_the_host_name_fit_for_a_lease_name_and_the_port() {
        assert_eq!(replica_id_of("berth-a\n", 6443), "berth-a-6443");
        assert_eq!(replica_id_of("My_Host.lan", 6444), "my-host.lan-6444");
        assert_eq!(replica_id_of("", 6445), "berth-6445");
        assert_eq!(replica_id_of("__", 6445), "berth-6445");
    }

    #[test]
    fn a_replica_id_given_must_make_a_lease_name() {
        assert_eq!(parse_replica_id("replica-a"), Ok("replica-a".into()));
        for bad in ["", "Replica", "a_b", "-a", "a-", "a/b"] {
            assert!(parse_replica_id(bad).is_err(), "{bad:?}");
        }
    }
}
