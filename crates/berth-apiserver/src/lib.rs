//! berth-apiserver
