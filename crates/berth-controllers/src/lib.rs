//! berth's controllers: the loops that keep cluster state true after the fact.
//!
//! - **daemonsets**: one pod of each DaemonSet per eligible node, with the tolerations that
//!   keep daemons on nodes under pressure or cordoned; failed (evicted) daemons are recreated;
//! - **disruption**: keeps every PodDisruptionBudget's `status` current, which is what the
//!   eviction subresource (`kubectl drain`, the descheduler) trusts;
//! - **node taints**: node conditions and cordons become `NoSchedule` taints;
//! - **node lifecycle**: nodes that stopped posting status (lease or heartbeat older than the
//!   grace period) go `Unknown` and get the `NoExecute` `unreachable`/`not-ready` taints;
//! - **taint manager**: evicts pods from nodes with `NoExecute` taints they do not tolerate, or
//!   tolerate only for `tolerationSeconds`;
//! - **aggregation**: an aggregated ClusterRole (`admin`, `edit`, `view`) has the rules of the
//!   ClusterRoles its `aggregationRule` selects;
//! - **resourcequota**: each ResourceQuota's `status.hard` and `status.used`;
//! - **podautoscaler**: each HorizontalPodAutoscaler scales its target on `metrics.k8s.io`;
//! - **certificates**: approved CertificateSigningRequests of the `kubernetes.io/*` signers
//!   are signed by the cluster CA;
//! - **credentials**: the controllers' ServiceAccount tokens under
//!   `--use-service-account-credentials`, renewed before they expire.
//!
//! Each controller is a pure engine — state and `now` in, decisions out, no I/O and no clock
//! ([`disruption::reconcile`], [`node_taints::reconcile`], [`lifecycle::Monitor`],
//! [`taint_manager::TaintManager`]) — and a thin driver that watches the API through a
//! `kube::Client`, feeds the engine and carries its decisions out through the API.
//!
//! The workload controllers ([`workload`]) follow the same shape: **replicaset** (ReplicaSets
//! and ReplicationControllers), **deployment**, **garbage_collector** (ownerReferences,
//! background/foreground/orphan) and **podgc** (pods of missing nodes, terminated pods).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! let clock = berth_controllers::Clock::system();
//! berth_controllers::Controllers::new(client, clock).spawn();
//! # }
//! ```

pub mod aggregation;
pub mod certificates;
pub mod claim;
pub mod controller_revision;
pub mod create_backoff;
pub mod credentials;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
mod duration;
pub mod endpoints;
pub(crate) mod events;
pub mod garbage_collector;
pub(crate) mod informers;
pub mod job;
pub mod lifecycle;
pub mod machineconfig;
pub mod metrics;
pub mod model;
pub mod namespace;
pub mod node_taints;
pub mod owned_pods;
pub mod podautoscaler;
pub mod podgc;
pub(crate) mod recorder;
pub mod replicaset;
pub mod resourcequota;
pub mod root_ca;
pub mod selection;
pub mod serviceaccount;
pub mod serviceaccount_token;
pub mod statefulset;
pub mod taint_manager;
pub mod update;
mod verbatim_help;
pub mod volume;
mod wait;
pub mod workqueue;

pub use berth_core::clock::Clock;
pub use duration::parse_duration;
pub(crate) mod driver;

pub use driver::{Controllers, ServiceAccountCredentials, SERVICE_ACCOUNTS};
