//! The Deployment engine, as upstream's `pkg/controller/deployment`. So far: the rolling-update
//! arithmetic ([`rolling`]): how far the new ReplicaSet may grow and the old ones shrink under
//! `maxSurge` and `maxUnavailable`. Pure; not wired to a driver yet.

pub mod rolling;
