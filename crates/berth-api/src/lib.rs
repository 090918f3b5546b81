//! berth-api: what berth's API server *serves* about its resources, as pure functions that
//! return `serde_json::Value` bodies.
//!
//! - [`registry`]: every kind served (group, version, plural, short names, categories,
//!   subresources, verbs, which Table columns), declared once as one table entry per kind.
//! - [`discovery`]: aggregated (`apidiscovery.k8s.io/v2`) and legacy discovery documents.
//! - [`openapi`]: OpenAPI v2/v3 documents with every served kind's schema (`kubectl explain`,
//!   server-side validation, apply patches).
//! - [`tables`]: server-side `Table` printing (`kubectl get` columns), with upstream's pod
//!   status, node status/roles, event and age (`HumanDuration`) formatting.
//!
//! What it is not: no HTTP, no content negotiation, no storage, no clock. The server
//! (`berth-apiserver`) picks which body to send and with which Content-Type, and passes `now`
//! in; everything here is deterministic and unit-tested against shapes kubectl 1.32 accepted.
//!
//! # Example
//!
//! ```
//! use berth_api::{discovery, registry, tables};
//! use serde_json::json;
//!
//! // Routing: which resource is `/api/v1/namespaces/default/pods`?
//! let pods = registry::find("", "v1", "pods").unwrap();
//! assert_eq!(pods.api_version(), "v1");
//!
//! // `kubectl drain` looks for pods/eviction in legacy discovery.
//! let v1 = discovery::api_resource_list("", "v1").unwrap();
//! assert!(v1["resources"].as_array().unwrap().iter().any(|r| r["name"] == "pods/eviction"));
//!
//! // `kubectl get pods` asks for a Table.
//! let now = "2025-01-01T00:05:00Z".parse().unwrap();
//! let pod = json!({"metadata": {"name": "p1", "creationTimestamp": "2025-01-01T00:00:00Z"},
//!                  "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}});
//! let table = tables::table(pods, &[pod], json!({"resourceVersion": "7"}),
//!                           tables::IncludeObject::Metadata, now, true);
//! let cells = table["rows"][0]["cells"].as_array().unwrap();
//! assert_eq!(cells[..5], [json!("p1"), json!("0/1"), json!("Pending"), json!("0"), json!("5m")]);
//! ```

pub mod columns;
pub mod custom;
pub mod discovery;
pub mod openapi;
pub mod registry;
pub mod tables;

pub use discovery::{
    aggregated_core, aggregated_groups, api_group, api_group_list, api_resource_list, api_versions,
    AGGREGATED_CONTENT_TYPE,
};
pub use openapi::{
    openapi_v3_document, openapi_v3_hash, openapi_v3_index, OPENAPI_V2_CONTENT_TYPE,
};
pub use registry::{all, find, find_kind, ResourceType, Subresource, TableKind};
pub use tables::{human_age, human_duration, table, IncludeObject};
