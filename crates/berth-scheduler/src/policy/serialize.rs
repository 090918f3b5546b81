//! Serialization of a policy back to the v1 file format.
