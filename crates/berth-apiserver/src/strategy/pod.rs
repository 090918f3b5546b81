//! Pods: upstream's defaults, status reset and QoS class on create; priority and QoS kept on
//! update; `spec.nodeName` immutable once set; graceful deletion of bound, running pods.

use super::{causes, Deletion, Strategy};
use crate::error::{ApiResult, Cause};
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

mod update;

pub struct Pod;

/// Grace period of a pod that names none (upstream's default `terminationGracePeriodSeconds`).
const DEFAULT_GRACE_SECONDS: i64 = 30;

impl Strategy for Pod {
    fn prepare_for_create(&self, pod: &mut Value) {
        default_pod(pod);
        set_qos(pod);
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) -> ApiResult<()> {
        // Defaults apply to every write, as upstream defaults on decode: a replace with the
        // manifest as first written then compares equal to the stored spec.
        default_spec(new);
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
        keep_observed_generation(old, new);
        Ok(())
    }

    fn validate(&self, _rt: &ResourceType, pod: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut errors = berth_core::validation::validate_pod(pod);
        if let Some(old) = old {
            errors.extend(update::validate(old, pod));
        }
        causes(errors)
    }

    /// A bound, running pod terminates gracefully: its kubelet removes it when it has stopped.
    fn deletion(&self, pod: &Value, grace_period_seconds: Option<i64>) -> Deletion {
        let bound = !pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty();
        let phase = pod["status"]["phase"].as_str().unwrap_or("");
        if !bound || phase == "Succeeded" || phase == "Failed" {
            return Deletion::Immediate;
        }
        let grace = grace_period_seconds
            .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(DEFAULT_GRACE_SECONDS);
        match grace {
            g if g > 0 => Deletion::Graceful(g),
            _ => Deletion::Immediate,
        }
    }

    /// A pod's kubelet removes it, finalizers or not.
    fn removed_with_last_finalizer(&self, _pod: &Value) -> bool {
        false
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// A status write that clears `status.observedGeneration` (a client that predates it) keeps
/// the stored one, as upstream's pod strategies do; any other value, lower ones included, is
/// taken.
fn keep_observed_generation(old: &Value, new: &mut Value) {
    let stored = old["status"]["observedGeneration"].as_i64().unwrap_or(0);
    let written = new["status"]["observedGeneration"].as_i64().unwrap_or(0);
    if stored != 0 && written == 0 && new["status"].is_object() {
        new["status"]["observedGeneration"] = json!(stored);
    }
}

/// Writes the QoS class into the pod's status.
fn set_qos(pod: &mut Value) {
    let class = berth_core::qos::qos_class(&pod["spec"]);
    pod["status"]["qosClass"] = json!(class);
}

/// Upstream's defaults for a new pod.
fn default_pod(pod: &mut Value) {
    default_spec(pod);
    let status = pod.get("status").cloned().unwrap_or(json!({}));
    pod["status"] = json!({"phase": "Pending"});
    // Preserve a nominated node if a client set one on create (status is otherwise server-owned).
    if let Some(n) = status.get("nominatedNodeName") {
        pod["status"]["nominatedNodeName"] = n.clone();
    }
    apply_scheduling_gated_condition(pod);
}

/// A pod created with scheduling gates says so in its `PodScheduled` condition (upstream's
/// `applySchedulingGatedCondition`), which `kubectl get pod` shows as `SchedulingGated`.
fn apply_scheduling_gated_condition(pod: &mut Value) {
    let gated = pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty());
    if gated {
        pod["status"]["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "observedGeneration": 1,
        }]);
    }
}

fn default_spec(pod: &mut Value) {
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    default_pod_spec(&mut pod["spec"]);
    let spec = &mut pod["spec"];
    // SetDefaults_Pod's own (not a template's).
    let defaults = [
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
    ];
    for (field, value) in defaults {
        if spec.get(field).is_none_or(Value::is_null) {
            spec[field] = value;
        }
    }
    // Upstream names the `default` account in its ServiceAccount admission, which skips mirror
    // pods: a kubelet's mirror of a static pod has none (NodeRestriction refuses one that has).
    let mirror = pod["metadata"]["annotations"]
        .get("kubernetes.io/config.mirror")
        .is_some();
    let spec = &mut pod["spec"];
    if !mirror && spec.get("serviceAccountName").is_none_or(Value::is_null) {
        // The deprecated `serviceAccount` names the account when `serviceAccountName` does not.
        let name = match spec["serviceAccount"].as_str() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => "default".to_string(),
        };
        spec["serviceAccountName"] = json!(name);
        spec["serviceAccount"] = json!(name);
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                requests_from_limits(c);
            }
        }
    }
}

/// Upstream's defaults of a pod template (`spec.template` of a workload, a PodTemplate's
/// `template`): `SetDefaults_PodSpec` and what it defaults inside (containers, volumes,
/// probes), but not what only pods get (`SetDefaults_Pod`: service links, requests from
/// limits; the service account and preemption policy of admission).
pub(super) fn default_template(template: &mut Value) {
    if !template.is_object() {
        return;
    }
    if template["spec"].is_object() {
        default_pod_spec(&mut template["spec"]);
    }
}

/// Upstream's `SetDefaults_PodSpec` with its containers, volumes and probes.
fn default_pod_spec(spec: &mut Value) {
    let defaults = [
        ("schedulerName", json!("default-scheduler")),
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
    ];
    for (field, value) in defaults {
        if spec.get(field).is_none_or(Value::is_null) {
            spec[field] = value;
        }
    }
    for list in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                default_container(c);
            }
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes {
            default_volume(v);
        }
    }
}

/// Mode bits of secret, config map, projected and downward API volumes (upstream's
/// `SecretVolumeSourceDefaultMode` and its siblings, 0644).
const DEFAULT_VOLUME_MODE: i64 = 0o644;

/// `SetDefaults_Volume` and the defaults of its sources: a volume without a source is an
/// `emptyDir`; file-projecting sources get mode 0644.
fn default_volume(v: &mut Value) {
    let Some(o) = v.as_object_mut() else {
        return;
    };
    if o.keys().all(|k| k == "name") {
        o.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "projected", "downwardAPI"] {
        if let Some(s) = o.get_mut(source).filter(|s| s.is_object()) {
            if s.get("defaultMode").is_none_or(Value::is_null) {
                s["defaultMode"] = json!(DEFAULT_VOLUME_MODE);
            }
        }
    }
    if let Some(path) = o.get_mut("hostPath").filter(|s| s.is_object()) {
        if path.get("type").is_none_or(Value::is_null) {
            path["type"] = json!("");
        }
    }
}

/// `SetDefaults_Probe` and its handlers' defaults (`httpGet` path `/` over `HTTP`).
fn default_probe(p: &mut Value) {
    if !p.is_object() {
        return;
    }
    for (field, value) in [
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        if p.get(field).is_none_or(Value::is_null) {
            p[field] = json!(value);
        }
    }
    if let Some(get) = p.get_mut("httpGet").filter(|g| g.is_object()) {
        if get.get("path").is_none_or(Value::is_null) {
            get["path"] = json!("/");
        }
        if get.get("scheme").is_none_or(Value::is_null) {
            get["scheme"] = json!("HTTP");
        }
    }
}

/// `SetDefaults_Pod`: requests default to limits where only limits are given.
fn requests_from_limits(c: &mut Value) {
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
    // A field reference names the pod's API version, `v1`, unless it says otherwise.
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for var in env.iter_mut() {
            if let Some(r) = var
                .get_mut("valueFrom")
                .and_then(|v| v.get_mut("fieldRef"))
                .and_then(Value::as_object_mut)
            {
                r.entry("apiVersion").or_insert_with(|| json!("v1"));
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe) {
            default_probe(p);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_write_without_observed_generation_keeps_the_stored_one() {
        let old = json!({"spec": {}, "status": {"observedGeneration": 3}});
        let mut cleared = json!({"spec": {}, "status": {"phase": "Running"}});
        Pod.prepare_for_update(&old, &mut cleared).unwrap();
        assert_eq!(cleared["status"]["observedGeneration"], 3);
        // Upstream lets a writer move it back: only a cleared value is kept.
        let mut lower = json!({"spec": {}, "status": {"observedGeneration": 2}});
        Pod.prepare_for_update(&old, &mut lower).unwrap();
        assert_eq!(lower["status"]["observedGeneration"], 2);
    }

    #[test]
    fn a_mirror_pod_gets_no_service_account() {
        let mut plain = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
        default_spec(&mut plain);
        assert_eq!(plain["spec"]["serviceAccountName"], "default");
        let mut mirror = json!({
            "metadata": {"annotations": {"kubernetes.io/config.mirror": "h"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        default_spec(&mut mirror);
        assert!(mirror["spec"].get("serviceAccountName").is_none());
    }
}
