//! Pod defaulting (as the upstream defaulters do) and the DefaultTolerationSeconds plugin.

use crate::error::ApiResult;
use serde_json::{json, Value};

/// Upstream's defaults for a new pod.
pub fn default_pod(pod: &mut Value) {
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    let spec = &mut pod["spec"];
    let defaults = [
        ("schedulerName", json!("default-scheduler")),
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
    ];
    for (field, value) in defaults {
        if spec.get(field).is_none_or(Value::is_null) {
            spec[field] = value;
        }
    }
    if spec.get("serviceAccountName").is_none_or(Value::is_null) {
        spec["serviceAccountName"] = json!("default");
        spec["serviceAccount"] = json!("default");
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                default_container(c);
            }
        }
    }
    let status = pod.get("status").cloned().unwrap_or(json!({}));
    pod["status"] = json!({"phase": "Pending"});
    // Preserve a nominated node if a client set one on create (status is otherwise server-owned).
    if let Some(n) = status.get("nominatedNodeName") {
        pod["status"]["nominatedNodeName"] = n.clone();
    }
}

fn default_container(c: &mut Value) {
    let image = c["image"].as_str().unwrap_or("").to_string();
    if c.get("imagePullPolicy").is_none_or(Value::is_null) {
        let tag = image.rsplit('/').next().unwrap_or("");
        let latest = !tag.contains(':') || tag.ends_with(":latest");
        let policy = if latest && !image.contains('@') {
            "Always"
        } else {
            "IfNotPresent"
        };
        c["imagePullPolicy"] = json!(policy);
    }
    for (field, value) in [
        ("terminationMessagePath", json!("/dev/termination-log")),
        ("terminationMessagePolicy", json!("File")),
        ("resources", json!({})),
    ] {
        if c.get(field).is_none_or(Value::is_null) {
            c[field] = value;
        }
    }
    // Requests default to limits where only limits are given.
    if let Some(limits) = c["resources"]["limits"].as_object().cloned() {
        if !c["resources"]["requests"].is_object() {
            c["resources"]["requests"] = json!({});
        }
        for (k, v) in limits {
            if c["resources"]["requests"].get(&k).is_none() {
                c["resources"]["requests"][k] = v;
            }
        }
    }
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if p.get("protocol").is_none_or(Value::is_null) {
                p["protocol"] = json!("TCP");
            }
        }
    }
}

/// DefaultTolerationSeconds: tolerate `not-ready` and `unreachable` NoExecute for 300s unless
/// the pod says otherwise; and (control-loops §4.5) memory-pressure for non-BestEffort pods.
pub fn default_tolerations(pod: &mut Value) {
    let mut tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = |key: &str, effect: &str, tols: &[Value]| {
        tols.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or("");
            let e = t["effect"].as_str().unwrap_or("");
            let exists_all = k.is_empty() && t["operator"] == "Exists";
            (k == key || exists_all) && (e == effect || e.is_empty())
        })
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !has(key, "NoExecute", &tolerations) {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    let memory_pressure = "node.kubernetes.io/memory-pressure";
    if berth_core::qos::qos_class(&pod["spec"]) != "BestEffort"
        && !has(memory_pressure, "NoSchedule", &tolerations)
    {
        tolerations
            .push(json!({"key": memory_pressure, "operator": "Exists", "effect": "NoSchedule"}));
    }
    pod["spec"]["tolerations"] = Value::Array(tolerations);
}

/// Writes the QoS class into the pod's status.
pub fn set_qos(pod: &mut Value) {
    let class = berth_core::qos::qos_class(&pod["spec"]);
    pod["status"]["qosClass"] = json!(class);
}

/// A pod update may not rewrite what upstream treats as immutable; status is kept by the caller.
pub fn admit_update(old: &Value, new: &mut Value) -> ApiResult<()> {
    // Priority and QoS class are set at creation and never change.
    for field in ["priority", "priorityClassName"] {
        match old["spec"].get(field) {
            Some(v) => new["spec"][field] = v.clone(),
            None => {
                if let Some(s) = new["spec"].as_object_mut() {
                    s.remove(field);
                }
            }
        }
    }
    if let Some(q) = old["status"].get("qosClass") {
        if new["status"].is_object() {
            new["status"]["qosClass"] = q.clone();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pod: &Value) -> Vec<(String, String)> {
        pod["spec"]["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
                (s("key"), s("effect"))
            })
            .collect()
    }

    fn pod(resources: Value) -> Value {
        json!({"spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}})
    }

    #[test]
    fn non_best_effort_pods_tolerate_memory_pressure() {
        let memory = (
            "node.kubernetes.io/memory-pressure".to_string(),
            "NoSchedule".to_string(),
        );
        let mut be = pod(json!({}));
        default_tolerations(&mut be);
        assert_eq!(keys(&be).len(), 2);
        assert!(!keys(&be).contains(&memory));
        let mut burstable = pod(json!({"requests": {"memory": "10Mi"}}));
        default_tolerations(&mut burstable);
        assert_eq!(keys(&burstable)[2], memory);
        // Added once: a second pass (an update) or the pod's own toleration leaves one.
        default_tolerations(&mut burstable);
        assert_eq!(keys(&burstable).len(), 3);
        let mut all = pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}));
        all["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        default_tolerations(&mut all);
        assert_eq!(keys(&all).len(), 1);
    }
}
