//! berth-kubelet
