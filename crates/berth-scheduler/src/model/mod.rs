//! Kubernetes API objects as the scheduler reads them, deserialized directly from Kubernetes JSON.
//!
//! Field names are the API's (camelCase); unknown fields are ignored and absent fields take their
//! defaults, so `serde_json::from_slice::<Pod>(bytes)` accepts any object the API server returns.
//! Only the fields the scheduling engine reads are modelled.

mod meta;
mod node;
mod pod;
mod volume;
mod workload;

pub use meta::*;
pub use node::*;
pub use pod::*;
pub use volume::*;
pub use workload::*;
