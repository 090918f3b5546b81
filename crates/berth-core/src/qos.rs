//! A pod's quality-of-service class (upstream `GetPodQOS`; control-loops spec §2.10).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::{self, Quantity};

/// `Guaranteed`.
pub const GUARANTEED: &str = "Guaranteed";
/// `Burstable`.
pub const BURSTABLE: &str = "Burstable";
/// `BestEffort`.
pub const BEST_EFFORT: &str = "BestEffort";

const SUPPORTED: [&str; 2] = ["cpu", "memory"];

/// Non-zero cpu/memory quantities of one resource map; unparseable values are ignored.
fn read(map: Option<&Value>) -> BTreeMap<&'static str, Quantity> {
    let mut out = BTreeMap::new();
    for name in SUPPORTED {
        if let Some(q) = map
            .and_then(|m| m.get(name))
            .and_then(|v| quantity::from_json(v).ok())
        {
            if !q.is_zero() {
                out.insert(name, q);
            }
        }
    }
    out
}

fn add(sum: &mut BTreeMap<&'static str, Quantity>, name: &'static str, q: Quantity) {
    let total = match sum.get(name) {
        Some(prev) => prev.checked_add(&q).unwrap_or(*prev),
        None => q,
    };
    sum.insert(name, total);
}

/// The QoS class of a pod spec (`pod.spec`): `BestEffort` when no container or init
/// container has a non-zero cpu or memory request or limit; `Guaranteed` when every container
/// has non-zero cpu and memory limits and, summed over containers, requests equal limits;
/// otherwise `Burstable`. Requests default to limits when only limits are set (API
/// defaulting), so an undefaulted spec gives the same answer. Other resources are ignored.
pub fn qos_class(pod_spec: &Value) -> &'static str {
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let mut all_limited = true;
    let lists = ["containers", "initContainers"];
    let all = lists.iter().flat_map(|k| {
        pod_spec
            .get(*k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    });
    for c in all {
        let res = c.get("resources");
        let lim = read(res.and_then(|r| r.get("limits")));
        let raw_req = res.and_then(|r| r.get("requests"));
        let mut req = read(raw_req);
        // API defaulting: a limit stands in for an *absent* request (an explicit 0 stays 0).
        for (name, q) in &lim {
            if raw_req.and_then(|r| r.get(*name)).is_none() {
                req.insert(name, *q);
            }
        }
        for (name, q) in req {
            add(&mut requests, name, q);
        }
        if lim.len() != SUPPORTED.len() {
            all_limited = false;
        }
        for (name, q) in lim {
            add(&mut limits, name, q);
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return BEST_EFFORT;
    }
    if all_limited && requests == limits {
        GUARANTEED
    } else {
        BURSTABLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(req: (&str, &str), lim: (&str, &str)) -> Value {
        let mut r = serde_json::Map::new();
        let mut l = serde_json::Map::new();
        for (m, (cpu, mem)) in [(&mut r, req), (&mut l, lim)] {
            if !cpu.is_empty() {
                m.insert("cpu".into(), json!(cpu));
            }
            if !mem.is_empty() {
                m.insert("memory".into(), json!(mem));
            }
        }
        json!({"name": "c", "resources": {"requests": r, "limits": l}})
    }

    #[test]
    fn upstream_vectors() {
        let none = c(("", ""), ("", ""));
        let cases = [
            (
                json!({"containers": [c(("100m", "100Mi"), ("100m", "100Mi"))]}),
                GUARANTEED,
            ),
            (
                json!({"containers": [c(("100m", "100Mi"), ("100m", "100Mi")), c(("100m", "100Mi"), ("100m", "100Mi"))]}),
                GUARANTEED,
            ),
            (json!({"containers": [none.clone()]}), BEST_EFFORT),
            (
                json!({"containers": [none.clone(), c(("1", ""), ("2", ""))]}),
                BURSTABLE,
            ),
            (
                json!({"containers": [none.clone(), c(("10m", "100Mi"), ("10m", "100Mi"))]}),
                BURSTABLE,
            ),
            (
                json!({"containers": [c(("", "100Mi"), ("", "100Mi"))]}),
                BURSTABLE,
            ),
            (
                json!({"containers": [c(("0", "0"), ("100m", "200Mi"))]}),
                BURSTABLE,
            ),
            (
                json!({"containers": [{"name": "c", "resources": {"requests": {"hugepages-2Mi": "1Gi", "cpu": "0", "memory": "0"}, "limits": {"hugepages-2Mi": "1Gi", "cpu": "0", "memory": "0"}}}]}),
                BEST_EFFORT,
            ),
            (
                json!({"containers": [none.clone()], "initContainers": [c(("10m", "100Mi"), ("100m", "200Mi"))]}),
                BURSTABLE,
            ),
            (
                json!({"containers": [c(("", ""), ("1", "1Gi"))]}),
                GUARANTEED,
            ),
            (
                json!({"containers": [c(("500m", "1Gi"), ("1", "1Gi"))]}),
                BURSTABLE,
            ),
            (json!({}), BEST_EFFORT),
        ];
        for (i, (spec, want)) in cases.iter().enumerate() {
            assert_eq!(qos_class(spec), *want, "case {i}");
        }
    }
}
