//! What one ResourceQuota says about a new object, decided without I/O (upstream's
//! `CheckRequest`): whether it counts the object, whether the object fits in what it still
//! allows, and what it reads as used once the object is admitted. The caller counts what is
//! in use and writes the charge.

use berth_core::quantity::{self, Quantity};
use berth_core::quota::{self, Usage};
use serde_json::Value;

/// Whether `quota` counts a new object of `group`/`plural` that uses `requested`: `Ok(None)`
/// when it does not (it does not select the object, or limits nothing the object uses), else
/// the limited part of `requested`. `Err` is the Forbidden detail of a quota that refuses the
/// object before any counting (`failed quota: ...`, `status unknown for quota: ...`).
pub fn limited(
    quota: &Value,
    group: &str,
    plural: &str,
    obj: &Value,
    requested: &Usage,
) -> Result<Option<Usage>, String> {
    if !quota::quota_selects(quota, plural, obj) {
        return Ok(None);
    }
    let name = quota["metadata"]["name"].as_str().unwrap_or("");
    let hard = list(&quota["spec"]["hard"]);
    if group.is_empty() && plural == "pods" {
        let names: Vec<&str> = hard.keys().map(String::as_str).collect();
        if let Some(missing) = quota::missing_container_resources(&names, obj) {
            return Err(format!("failed quota: {name}: {missing}"));
        }
    }
    // A zero request changes no quota (upstream's `RemoveZeros`).
    let charged: Usage = requested
        .iter()
        .filter(|(r, q)| hard.contains_key(*r) && !q.is_zero())
        .map(|(r, q)| (r.clone(), *q))
        .collect();
    if charged.is_empty() {
        return Ok(None);
    }
    if quota["status"]["hard"].as_object().is_none() {
        let names: Vec<&str> = charged.keys().map(String::as_str).collect();
        return Err(format!(
            "status unknown for quota: {name}, resources: {}",
            names.join(",")
        ));
    }
    Ok(Some(charged))
}

/// What `quota` holds as used of each resource: the larger of what its status was charged
/// and what `counted` finds in the store. The charge covers objects admitted but not stored
/// yet; the count covers objects stored before the quota controller's first status.
pub fn in_use(quota: &Value, counted: &Usage) -> Usage {
    let mut used = list(&quota["status"]["used"]);
    for (r, q) in counted {
        let entry = used.entry(r.clone()).or_default();
        if *q > *entry {
            *entry = *q;
        }
    }
    used
}

/// Charges `requested` (the limited part, from [`limited`]) to `quota`, which holds `used`:
/// the quota's `status.used` with the charge added, or the Forbidden detail
/// `exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3`.
pub fn charge(quota: &Value, requested: &Usage, used: &Usage) -> Result<Value, String> {
    let hard = list(&quota["spec"]["hard"]);
    let mut over = (Usage::new(), Usage::new(), Usage::new());
    let mut charged = quota["status"]["used"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (r, want) in requested {
        let Some(limit) = hard.get(r) else { continue };
        let now = used.get(r).copied().unwrap_or_default();
        let total = now.checked_add(want).unwrap_or(now);
        if total > *limit {
            over.0.insert(r.clone(), *want);
            over.1.insert(r.clone(), now);
            over.2.insert(r.clone(), *limit);
        }
        charged.insert(r.clone(), Value::String(total.to_string()));
    }
    if !over.0.is_empty() {
        return Err(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            quota["metadata"]["name"].as_str().unwrap_or(""),
            quota::pretty(&over.0),
            quota::pretty(&over.1),
            quota::pretty(&over.2)
        ));
    }
    Ok(Value::Object(charged))
}

/// A `ResourceList` as quantities (unparseable entries left out: validation refuses them).
pub fn list(v: &Value) -> std::collections::BTreeMap<String, Quantity> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(entries: &[(&str, &str)]) -> Usage {
        entries
            .iter()
            .map(|(r, q)| (r.to_string(), Quantity::parse(q).unwrap()))
            .collect()
    }

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "q"}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used}})
    }

    fn pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    }

    #[test]
    fn a_quota_counts_what_it_limits_and_nothing_else() {
        let q = quota(json!({"pods": "3", "services": "1"}), json!({"pods": "0"}));
        let requested = quota::usage("", "pods", &pod());
        assert_eq!(
            limited(&q, "", "pods", &pod(), &requested),
            Ok(Some(usage(&[("pods", "1")])))
        );
        let secrets = json!({"pods": "3"});
        let q = quota(secrets, json!({}));
        let requested = quota::usage("", "secrets", &json!({}));
        assert_eq!(limited(&q, "", "secrets", &json!({}), &requested), Ok(None));
    }

    #[test]
    fn a_quota_without_status_refuses_with_upstreams_words() {
        let q = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "3"}}});
        let requested = quota::usage("", "pods", &pod());
        assert_eq!(
            limited(&q, "", "pods", &pod(), &requested),
            Err("status unknown for quota: q, resources: pods".into())
        );
    }

    #[test]
    fn a_compute_quota_needs_every_container_to_name_it() {
        let q = quota(json!({"limits.cpu": "1"}), json!({"limits.cpu": "0"}));
        let requested = quota::usage("", "pods", &pod());
        assert_eq!(
            limited(&q, "", "pods", &pod(), &requested),
            Err("failed quota: q: must specify limits.cpu for: c".into())
        );
    }

    #[test]
    fn in_use_is_the_larger_of_the_charge_and_the_count() {
        let q = quota(
            json!({"pods": "5", "requests.cpu": "2"}),
            json!({"pods": "3", "requests.cpu": "500m"}),
        );
        let counted = usage(&[("pods", "2"), ("requests.cpu", "1")]);
        assert_eq!(
            in_use(&q, &counted),
            usage(&[("pods", "3"), ("requests.cpu", "1")])
        );
    }

    #[test]
    fn a_charge_adds_the_request_to_what_is_used() {
        let q = quota(
            json!({"pods": "3", "services": "2"}),
            json!({"pods": "1", "services": "1"}),
        );
        let charged = charge(&q, &usage(&[("pods", "1")]), &usage(&[("pods", "2")]));
        assert_eq!(charged, Ok(json!({"pods": "3", "services": "1"})));
    }

    #[test]
    fn a_charge_past_the_limit_is_refused_with_upstreams_words() {
        let q = quota(json!({"pods": "3"}), json!({"pods": "3"}));
        let refused = charge(&q, &usage(&[("pods", "1")]), &usage(&[("pods", "3")]));
        assert_eq!(
            refused,
            Err("exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3".into())
        );
        let q = quota(
            json!({"requests.cpu": "1", "limits.cpu": "1"}),
            json!({"requests.cpu": "500m", "limits.cpu": "0"}),
        );
        let refused = charge(
            &q,
            &usage(&[("requests.cpu", "600m"), ("limits.cpu", "600m")]),
            &usage(&[("requests.cpu", "500m"), ("limits.cpu", "0")]),
        );
        assert_eq!(
            refused,
            Err("exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1".into())
        );
    }
}
