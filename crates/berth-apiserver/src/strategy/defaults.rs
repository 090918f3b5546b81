//! Setting a default where a field is missing or null, as upstream's `SetDefaults_*`, and the
//! defaults of the pod templates every workload kind embeds.

use berth_api::registry::ResourceType;
use serde_json::Value;

/// Sets `obj[field]` to `value` when it is missing or null (`obj` must be an object).
pub fn default_at(obj: &mut Value, field: &str, value: Value) {
    if let Some(o) = obj.as_object_mut() {
        if o.get(field).is_none_or(Value::is_null) {
            o.insert(field.to_string(), value);
        }
    }
}

/// Where each kind embeds a pod template (JSON pointer), as upstream defaults the
/// `PodTemplateSpec` inside them on every decode.
const POD_TEMPLATES: &[(&str, &str, &str)] = &[
    ("apps", "Deployment", "/spec/template"),
    ("apps", "ReplicaSet", "/spec/template"),
    ("apps", "DaemonSet", "/spec/template"),
    ("apps", "StatefulSet", "/spec/template"),
    ("batch", "Job", "/spec/template"),
    ("batch", "CronJob", "/spec/jobTemplate/spec/template"),
    ("", "ReplicationController", "/spec/template"),
    ("", "PodTemplate", "/template"),
];

/// Defaults the pod template `obj` embeds, if its kind embeds one.
pub fn pod_templates(rt: &ResourceType, obj: &mut Value) {
    let Some((_, _, at)) = POD_TEMPLATES
        .iter()
        .find(|(group, kind, _)| *group == rt.group && *kind == rt.kind)
    else {
        return;
    };
    if let Some(template) = obj.pointer_mut(at) {
        super::pod::default_template(template);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::registry::find;
    use serde_json::json;

    #[test]
    fn a_workload_template_gets_pod_spec_defaults_but_not_pod_only_ones() {
        let rt = find("apps", "v1", "deployments").unwrap();
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
            "image": "nginx:1.25", "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "1"}},
            "readinessProbe": {"httpGet": {"port": 80}}}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}}}});
        pod_templates(rt, &mut d);
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["securityContext"], json!({}));
        let c = &spec["containers"][0];
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert!(c["resources"].get("requests").is_none());
        assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
        assert!(spec.get("serviceAccountName").is_none());
        assert!(spec.get("enableServiceLinks").is_none());
    }

    #[test]
    fn a_cron_job_template_is_found_under_its_job_template() {
        let rt = find("batch", "v1", "cronjobs").unwrap();
        let mut cj = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        pod_templates(rt, &mut cj);
        let c = &cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
    }

    #[test]
    fn kinds_without_templates_are_left_alone() {
        let rt = find("", "v1", "configmaps").unwrap();
        let mut cm = json!({"data": {"a": "b"}});
        pod_templates(rt, &mut cm);
        assert_eq!(cm, json!({"data": {"a": "b"}}));
    }
}
