//! The Deployment engine, as upstream's `pkg/controller/deployment`: the rolling-update
//! arithmetic ([`rolling`]), the template hash ([`hash`]), the conditions ([`conditions`]),
//! proportional scaling mid-rollout ([`proportional`]) and one sync of a Deployment over its ReplicaSets ([`sync`]); the driver carries a sync out.

pub mod conditions;
pub(crate) mod driver;
pub mod hash;
pub mod proportional;
pub mod rolling;
pub mod sync;
#[cfg(test)]
mod tests;
