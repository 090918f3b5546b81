//! Kubernetes resource quantities (`100m`, `500Mi`, `1.5`, `1e3`): berth-core's parser, under the
//! name the engine's integer resources use. `milli_value()` (milli-CPU) and `value()` (bytes,
//! counts) round up as the API's `MilliValue()` and `Value()` do, saturating at the `i64` bounds.

pub use berth_core::quantity::{Quantity as ParsedQuantity, QuantityError};
