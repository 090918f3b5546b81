//! LimitRanger (upstream `plugin/pkg/admission/limitranger`): a new pod's containers get the
//! `default` limits and `defaultRequest` requests of the namespace's LimitRanges where they
//! name none, then the pod must keep within each range's `min`, `max` and
//! `maxLimitRequestRatio`, per container and (type `Pod`) summed over the pod, refused with
//! upstream's words (`maximum cpu usage per Container is 1, but limit is 2`).

use super::namespace_objects;
use super::{ConfigError, Handles, Plugin, Registration};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use berth_core::quantity::{self, Quantity};
use berth_store::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const REGISTRATION: Registration = Registration {
    name: "LimitRanger",
    on_by_default: true,
    build,
};

/// The annotation upstream records its defaulting in.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

struct LimitRanger {
    store: Store,
}

fn build(handles: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    if let Some(c) = configuration {
        super::config::only_fields(REGISTRATION.name, c, &[])?;
    }
    Ok(Box::new(LimitRanger {
        store: handles.store.clone(),
    }))
}

impl Plugin for LimitRanger {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if !(rt.group.is_empty() && rt.plural == "pods") {
            return Ok(());
        }
        let ranges =
            namespace_objects::list(&self.store, "", "limitranges", meta_str(obj, "namespace"))?;
        if ranges.is_empty() {
            return Ok(());
        }
        admit_pod(&ranges, obj).map_err(|errors| {
            let detail = if errors.len() == 1 {
                errors[0].clone()
            } else {
                format!("[{}]", errors.join(", "))
            };
            ApiError::Forbidden(format!(
                "pods \"{}\" is forbidden: {detail}",
                meta_str(obj, "name")
            ))
        })
    }
}

/// Defaults `pod` from every range, then checks it against them; the messages of every
/// violation when it does not keep within them.
pub fn admit_pod(ranges: &[Value], pod: &mut Value) -> Result<(), Vec<String>> {
    let items: Vec<&Value> = ranges
        .iter()
        .flat_map(|r| r["spec"]["limits"].as_array().into_iter().flatten())
        .collect();
    let mut set = Vec::new();
    for item in items.iter().filter(|i| i["type"] == "Container") {
        for list in ["initContainers", "containers"] {
            for c in pod["spec"][list].as_array_mut().into_iter().flatten() {
                set.extend(default_container(item, c));
            }
        }
    }
    if !set.is_empty() {
        let note = format!("LimitRanger plugin set: {}", set.join("; "));
        if !pod["metadata"]["annotations"].is_object() {
            pod["metadata"]["annotations"] = json!({});
        }
        pod["metadata"]["annotations"][ANNOTATION] = json!(note);
    }
    let mut errors = Vec::new();
    for item in &items {
        match item["type"].as_str() {
            Some("Container") => {
                for list in ["initContainers", "containers"] {
                    for c in pod["spec"][list].as_array().into_iter().flatten() {
                        let (requests, limits) = (resources(c, "requests"), resources(c, "limits"));
                        errors.extend(check(item, "Container", &requests, &limits));
                    }
                }
            }
            Some("Pod") => {
                let (requests, limits) = pod_totals(pod);
                errors.extend(check(item, "Pod", &requests, &limits));
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Sets a container's missing limits and requests from `item`; what it set, in upstream's
/// annotation words (`cpu request for container c`).
fn default_container(item: &Value, c: &mut Value) -> Vec<String> {
    let name = c["name"].as_str().unwrap_or("").to_string();
    let mut set = Vec::new();
    for (from, to, word) in [
        ("default", "limits", "limit"),
        ("defaultRequest", "requests", "request"),
    ] {
        for (r, v) in item[from].as_object().into_iter().flatten() {
            if !c["resources"].is_object() {
                c["resources"] = json!({});
            }
            if !c["resources"][to].is_object() {
                c["resources"][to] = json!({});
            }
            if c["resources"][to].get(r).is_none() {
                c["resources"][to][r] = v.clone();
                set.push(format!("{r} {word} for container {name}"));
            }
        }
    }
    set
}

type List = BTreeMap<String, Quantity>;

fn resources(c: &Value, which: &str) -> List {
    c["resources"][which]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q)))
        .collect()
}

/// A pod's requests and limits: the sum over its containers, or an init container's where
/// that is more.
fn pod_totals(pod: &Value) -> (List, List) {
    let mut totals = (List::new(), List::new());
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        for (which, total) in [("requests", &mut totals.0), ("limits", &mut totals.1)] {
            for (r, q) in resources(c, which) {
                let e = total.entry(r).or_default();
                *e = e.checked_add(&q).unwrap_or(*e);
            }
        }
    }
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (which, total) in [("requests", &mut totals.0), ("limits", &mut totals.1)] {
            for (r, q) in resources(c, which) {
                let e = total.entry(r).or_default();
                if q > *e {
                    *e = q;
                }
            }
        }
    }
    totals
}

/// Upstream's `minConstraint`, `maxConstraint` and `limitRequestRatioConstraint`.
fn check(item: &Value, kind: &str, requests: &List, limits: &List) -> Vec<String> {
    let mut errors = Vec::new();
    for (r, v) in item["min"].as_object().into_iter().flatten() {
        let Ok(min) = quantity::from_json(v) else {
            continue;
        };
        match requests.get(r) {
            None => errors.push(format!(
                "minimum {r} usage per {kind} is {min}.  No request is specified"
            )),
            Some(req) if *req < min => errors.push(format!(
                "minimum {r} usage per {kind} is {min}, but request is {req}"
            )),
            // One error per constraint, the first that fails (upstream's `minConstraint`).
            Some(_) => {
                if let Some(lim) = limits.get(r).filter(|l| **l < min) {
                    errors.push(format!(
                        "minimum {r} usage per {kind} is {min}, but limit is {lim}"
                    ));
                }
            }
        }
    }
    for (r, v) in item["max"].as_object().into_iter().flatten() {
        let Ok(max) = quantity::from_json(v) else {
            continue;
        };
        match limits.get(r) {
            None => errors.push(format!(
                "maximum {r} usage per {kind} is {max}.  No limit is specified"
            )),
            Some(lim) if *lim > max => errors.push(format!(
                "maximum {r} usage per {kind} is {max}, but limit is {lim}"
            )),
            // One error per constraint, the first that fails (upstream's `maxConstraint`).
            Some(_) => {
                if let Some(req) = requests.get(r).filter(|q| **q > max) {
                    errors.push(format!(
                        "maximum {r} usage per {kind} is {max}, but request is {req}"
                    ));
                }
            }
        }
    }
    for (r, v) in item["maxLimitRequestRatio"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let Ok(ratio) = quantity::from_json(v) else {
            continue;
        };
        let (Some(lim), Some(req)) = (limits.get(r), requests.get(r)) else {
            if limits.get(r).is_none() {
                errors.push(format!(
                    "{r} max limit to request ratio per {kind} is {ratio}, but no limit is specified"
                ));
            } else {
                errors.push(format!(
                    "{r} max limit to request ratio per {kind} is {ratio}, but no request is specified or request is 0"
                ));
            }
            continue;
        };
        if req.is_zero() {
            errors.push(format!(
                "{r} max limit to request ratio per {kind} is {ratio}, but no request is specified or request is 0"
            ));
            continue;
        }
        let actual = lim.milli_value() as f64 / req.milli_value() as f64;
        if actual > ratio.milli_value() as f64 / 1000.0 {
            errors.push(format!(
                "{r} max limit to request ratio per {kind} is {ratio}, but provided ratio is {actual:.6}"
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(limits: Value) -> Vec<Value> {
        vec![json!({"spec": {"limits": limits}})]
    }

    fn pod(resources: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": resources}]}})
    }

    #[test]
    fn missing_requests_and_limits_are_defaulted_and_recorded() {
        let ranges = range(json!([{"type": "Container", "default": {"cpu": "500m"},
            "defaultRequest": {"cpu": "100m", "memory": "64Mi"}}]));
        let mut p = pod(json!({"requests": {"memory": "32Mi"}}));
        admit_pod(&ranges, &mut p).unwrap();
        let r = &p["spec"]["containers"][0]["resources"];
        assert_eq!(r["limits"], json!({"cpu": "500m"}));
        assert_eq!(r["requests"], json!({"memory": "32Mi", "cpu": "100m"}));
        assert_eq!(
            p["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu limit for container c; cpu request for container c"
        );
    }

    #[test]
    fn a_limit_above_max_is_refused_with_upstream_words() {
        let ranges = range(json!([{"type": "Container", "max": {"cpu": "1"}}]));
        // Requests defaulted from the limit are over too: one error per constraint.
        let mut p = pod(json!({"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}));
        assert_eq!(
            admit_pod(&ranges, &mut p).unwrap_err(),
            vec!["maximum cpu usage per Container is 1, but limit is 2"]
        );
    }

    #[test]
    fn a_request_below_min_and_a_missing_request_are_refused() {
        let ranges = range(
            json!([{"type": "Container", "min": {"cpu": "200m", "memory": "1Mi"}, "defaultRequest": {}}]),
        );
        let mut p = pod(json!({"requests": {"cpu": "100m"}}));
        // defaultRequest falls back to min only through the strategy's defaulting; here it is empty.
        assert_eq!(
            admit_pod(&ranges, &mut p).unwrap_err(),
            vec![
                "minimum cpu usage per Container is 200m, but request is 100m",
                "minimum memory usage per Container is 1Mi.  No request is specified",
            ]
        );
    }

    #[test]
    fn a_pod_limit_is_summed_over_its_containers() {
        let ranges = range(json!([{"type": "Pod", "max": {"cpu": "1"}}]));
        let mut p = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "600m"}}},
            {"name": "b", "resources": {"limits": {"cpu": "600m"}}}]}});
        assert_eq!(
            admit_pod(&ranges, &mut p).unwrap_err(),
            vec!["maximum cpu usage per Pod is 1, but limit is 1200m"]
        );
    }

    #[test]
    fn a_limit_to_request_ratio_above_the_maximum_is_refused() {
        let ranges = range(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]));
        let mut p = pod(json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "300m"}}));
        assert_eq!(
            admit_pod(&ranges, &mut p).unwrap_err(),
            vec![
                "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000"
            ]
        );
    }
}
