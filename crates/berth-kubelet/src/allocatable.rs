//! Node allocatable (seed 004; control-loops spec §2.12):
//! `Allocatable = Capacity − kube-reserved − system-reserved − hard eviction thresholds`,
//! per resource, clamped at 0.

use crate::eviction::{Signal, Threshold};
use berth_core::quantity::Quantity;
use std::collections::BTreeMap;

/// Resource name → quantity, as node status carries them.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The allocatable resources of a node.
///
/// `hard_eviction[memory]` is the hard `memory.available` threshold and
/// `hard_eviction[ephemeral-storage]` the hard `nodefs.available` one (percentages of capacity);
/// `ignore_eviction` (`experimental-allocatable-ignore-eviction`) leaves them out. `hugepages-*`
/// capacity is then taken from memory. `pods` stays as capacity.
pub fn allocatable(
    capacity: &ResourceList,
    kube_reserved: &ResourceList,
    system_reserved: &ResourceList,
    thresholds: &[Threshold],
    ignore_eviction: bool,
) -> ResourceList {
    let mut out = ResourceList::new();
    for (name, cap) in capacity {
        let mut value = *cap;
        for reserved in [kube_reserved, system_reserved] {
            if let Some(r) = reserved.get(name) {
                value = value.checked_sub(r).unwrap_or(value);
            }
        }
        if !ignore_eviction {
            let signal = match name.as_str() {
                "memory" => Some(Signal::MemoryAvailable),
                "ephemeral-storage" => Some(Signal::NodeFsAvailable),
                _ => None,
            };
            for t in thresholds
                .iter()
                .filter(|t| t.hard && Some(t.signal) == signal)
            {
                let q = Quantity::from_bytes(t.value.quantity(cap.value()));
                value = value.checked_sub(&q).unwrap_or(value);
            }
        }
        out.insert(name.clone(), clamp(value));
    }
    let hugepages: Vec<Quantity> = capacity
        .iter()
        .filter(|(k, _)| k.starts_with("hugepages-"))
        .map(|(_, v)| *v)
        .collect();
    if let Some(mem) = out.get_mut("memory") {
        for h in hugepages {
            *mem = clamp(mem.checked_sub(&h).unwrap_or(*mem));
        }
    }
    out
}

fn clamp(q: Quantity) -> Quantity {
    if q.milli_value() < 0 {
        Quantity::from_int(0)
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::thresholds::{parse_thresholds, EvictionSettings};

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    fn hard(v: &[&str]) -> Vec<Threshold> {
        parse_thresholds(
            &EvictionSettings {
                hard: v.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            true,
        )
        .unwrap()
    }

    #[test]
    fn seed_and_upstream_examples() {
        // (capacity, kube-reserved, system-reserved, eviction-hard, ignore eviction, resource, bytes)
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            &'a [(&'a str, &'a str)],
            &'a [(&'a str, &'a str)],
            &'a [&'a str],
            bool,
            &'a str,
            i64,
        );
        let cases: Vec<Case> = vec![
            (
                &[("memory", "32Gi")],
                &[("memory", "2Gi")],
                &[("memory", "1Gi")],
                &["memory.available<100Mi"],
                false,
                "memory",
                31033655296,
            ),
            (
                &[("memory", "10Gi")],
                &[],
                &[("memory", "1Gi")],
                &["memory.available<10%"],
                false,
                "memory",
                8589934576,
            ),
            (
                &[("memory", "10Gi")],
                &[],
                &[("memory", "1.5Gi")],
                &["memory.available<500Mi"],
                false,
                "memory",
                8204 << 20,
            ),
            (
                &[("memory", "10Gi")],
                &[],
                &[("memory", "1.5Gi")],
                &["memory.available<500Mi"],
                true,
                "memory",
                8704 << 20,
            ),
            (
                &[("memory", "10Gi")],
                &[],
                &[("memory", "1Gi")],
                &[],
                false,
                "memory",
                9 << 30,
            ),
            (
                &[("memory", "1Gi")],
                &[("memory", "1Gi")],
                &[("memory", "1Gi")],
                &[],
                false,
                "memory",
                0,
            ),
            (
                &[("ephemeral-storage", "100Gi")],
                &[],
                &[],
                &["nodefs.available<10%"],
                false,
                "ephemeral-storage",
                96636764000,
            ),
            (
                &[("cpu", "4")],
                &[("cpu", "500m")],
                &[("cpu", "500m")],
                &["memory.available<100Mi"],
                false,
                "cpu",
                3,
            ),
            (
                &[("memory", "4Gi"), ("hugepages-2Mi", "1Gi")],
                &[],
                &[],
                &[],
                false,
                "memory",
                3 << 30,
            ),
            (
                &[("nvidia.com/gpu", "2")],
                &[],
                &[],
                &["memory.available<100Mi"],
                false,
                "nvidia.com/gpu",
                2,
            ),
            (&[("pods", "110")], &[], &[], &[], false, "pods", 110),
        ];
        for (cap, kr, sr, ev, ignore, r, want) in cases {
            let a = allocatable(&list(cap), &list(kr), &list(sr), &hard(ev), ignore);
            assert_eq!(a[r].value(), want, "{cap:?} {kr:?} {sr:?} {ev:?}");
        }
    }

    #[test]
    fn printed_forms() {
        let a = allocatable(
            &list(&[("memory", "32Gi"), ("cpu", "4")]),
            &list(&[("memory", "2Gi"), ("cpu", "500m")]),
            &list(&[("memory", "1Gi")]),
            &hard(&["memory.available<100Mi"]),
            false,
        );
        assert_eq!(a["memory"].to_string(), "29596Mi");
        assert_eq!(a["cpu"].to_string(), "3500m");
    }
}
