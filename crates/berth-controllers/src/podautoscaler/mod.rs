//! The horizontal pod autoscaler (upstream `pkg/controller/podautoscaler`): each
//! HorizontalPodAutoscaler (`autoscaling/v2`, and v1 through the API server's view) sets its
//! target's `scale` so that the target's pods use what its resource metrics aim at, read from
//! `metrics.k8s.io` (which berth serves from the simulated kubelets' usage).
//!
//! The engine is pure: [`replicas`] computes what a metric asks for (tolerance, pods not ready
//! or not measured), [`behavior`] stabilizes and rate-limits it (`spec.behavior`, or the
//! older defaults), [`reconcile`] runs one pass and says what to write. The driver reads the
//! scale and the metrics through the API every sync period and writes the decisions.

pub mod behavior;
pub(crate) mod driver;
pub mod reconcile;
pub mod replicas;

pub use driver::Config;
