//! berth-core: the shared, pure model of berth.
//!
//! What it is: functions over Kubernetes JSON shapes (`serde_json::Value`) that every other
//! crate needs to agree on, written to match upstream Kubernetes behaviour and messages:
//!
//! * [`quantity`]: resource quantities (`100m`, `1.5Gi`) with upstream canonical printing;
//! * [`labels`]: label selectors, string form (`a in (x,y),!b`) and `LabelSelector` JSON;
//! * [`fields`]: field selectors (`spec.nodeName=n1,status.phase!=Failed`);
//! * [`managed_fields`]: server-side apply's field ownership (`managedFields`) and conflicts;
//! * [`patch`]: strategic merge patch with per-kind list strategies and directives;
//! * [`validation`]: upstream-exact field validation (`FieldError` with upstream messages);
//! * [`qos`]: a pod's QoS class;
//! * [`pod_conditions`]: pod conditions as upstream updates them, and `DisruptionTarget`'s reasons;
//! * [`duration`]: durations in Go's `time.ParseDuration` syntax (`1h2m3.5s`, `300ms`);
//! * [`taints`]: whether a toleration tolerates a taint;
//! * [`clock`]: the injected wall clock, timestamps as Kubernetes writes them, and saturating
//!   time arithmetic for every number of seconds a user writes;
//! * [`loop_health`]: which control loops are down, for `/readyz`, and their restart counts;
//! * [`supervisor`]: runs a control loop and restarts it with back-off when it stops;
//! * [`client_metrics`]: `rest_client_requests_total` of the process's API clients;
//! * [`container_log`]: the log of a program berth runs inside a simulated pod;
//! * [`exposition`]: `/metrics` as Prometheus text 0.0.4, or OpenMetrics when asked.
//!
//! What it is not: no I/O, no reading of the system clock outside [`clock`], no HTTP status
//! mapping (the API server turns [`validation::FieldError`]s and the error enums here into
//! `Status` objects), no typed API structs.
//!
//! ```
//! use berth_core::{labels::Selector, quantity::Quantity, qos::qos_class};
//! use serde_json::json;
//!
//! let sel = Selector::parse("tier in (web,api),!canary").unwrap();
//! let labels = json!({"tier": "web"});
//! assert!(sel.matches(labels.as_object().unwrap()));
//!
//! assert_eq!(Quantity::parse("1.5").unwrap().to_string(), "1500m");
//!
//! let spec = json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
//! assert_eq!(qos_class(&spec), "Guaranteed");
//! ```

pub mod client_metrics;
pub mod clock;
pub mod container_log;
pub mod duration;
pub mod exposition;
pub mod fields;
pub mod labels;
pub mod loop_health;
pub mod managed_fields;
pub mod patch;
pub mod pod_conditions;
pub mod qos;
pub mod quantity;
pub mod quota;
pub mod supervisor;
pub mod taints;
pub mod validation;
