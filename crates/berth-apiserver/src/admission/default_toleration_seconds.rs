//! DefaultTolerationSeconds: a new pod tolerates the `not-ready` and `unreachable` NoExecute
//! taints for 300 seconds unless it says otherwise, and (control-loops §4.5) a non-BestEffort
//! pod tolerates memory pressure.
//!
//! Configuration (upstream's flags `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds`):
//! `{defaultNotReadyTolerationSeconds: 300, defaultUnreachableTolerationSeconds: 300}`.

use super::config::{only_fields, seconds};
use super::{ConfigError, Handles, Plugin, Registration};
use crate::error::ApiResult;
use crate::user::UserInfo;
use berth_api::registry::ResourceType;
use serde_json::{json, Value};

pub const REGISTRATION: Registration = Registration {
    name: "DefaultTolerationSeconds",
    on_by_default: true,
    build,
};

/// Upstream's default for both tolerations.
const DEFAULT_SECONDS: i64 = 300;
const NOT_READY: &str = "defaultNotReadyTolerationSeconds";
const UNREACHABLE: &str = "defaultUnreachableTolerationSeconds";

/// How long a pod tolerates each NoExecute taint by default.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seconds {
    not_ready: i64,
    unreachable: i64,
}

impl Default for Seconds {
    fn default() -> Seconds {
        Seconds {
            not_ready: DEFAULT_SECONDS,
            unreachable: DEFAULT_SECONDS,
        }
    }
}

struct DefaultTolerationSeconds {
    seconds: Seconds,
}

fn build(_: &Handles, configuration: Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError> {
    Ok(Box::new(DefaultTolerationSeconds {
        seconds: configure(configuration)?,
    }))
}

fn configure(configuration: Option<&Value>) -> Result<Seconds, ConfigError> {
    let mut out = Seconds::default();
    let Some(c) = configuration else {
        return Ok(out);
    };
    let name = REGISTRATION.name;
    only_fields(name, c, &[NOT_READY, UNREACHABLE])?;
    if let Some(s) = seconds(name, c, NOT_READY)? {
        out.not_ready = s;
    }
    if let Some(s) = seconds(name, c, UNREACHABLE)? {
        out.unreachable = s;
    }
    Ok(out)
}

impl Plugin for DefaultTolerationSeconds {
    fn admit_create(&self, _user: &UserInfo, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        if rt.kind == "Pod" {
            default_tolerations(obj, &self.seconds);
        }
        Ok(())
    }
}

/// Adds the tolerations a pod does not have already: `not-ready` and `unreachable` NoExecute
/// for the configured seconds, and memory-pressure NoSchedule for non-BestEffort pods.
fn default_tolerations(pod: &mut Value, seconds: &Seconds) {
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
    for (key, seconds) in [
        ("node.kubernetes.io/not-ready", seconds.not_ready),
        ("node.kubernetes.io/unreachable", seconds.unreachable),
    ] {
        if !has(key, "NoExecute", &tolerations) {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}));
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
        default_tolerations(&mut be, &Seconds::default());
        assert_eq!(keys(&be).len(), 2);
        assert!(!keys(&be).contains(&memory));
        let mut burstable = pod(json!({"requests": {"memory": "10Mi"}}));
        default_tolerations(&mut burstable, &Seconds::default());
        assert_eq!(keys(&burstable)[2], memory);
        // Added once: a second pass (an update) or the pod's own toleration leaves one.
        default_tolerations(&mut burstable, &Seconds::default());
        assert_eq!(keys(&burstable).len(), 3);
        let mut all = pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}));
        all["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        default_tolerations(&mut all, &Seconds::default());
        assert_eq!(keys(&all).len(), 1);
    }

    #[test]
    fn toleration_seconds_are_configurable() {
        let c = json!({NOT_READY: 60, UNREACHABLE: 0});
        let seconds = configure(Some(&c)).unwrap();
        let mut p = pod(json!({}));
        default_tolerations(&mut p, &seconds);
        let tols = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tols[0]["tolerationSeconds"], 60);
        assert_eq!(tols[1]["tolerationSeconds"], 0);
        assert_eq!(configure(None).unwrap(), Seconds::default());
        let bad = configure(Some(&json!({NOT_READY: "5m"}))).unwrap_err();
        assert_eq!(bad.field, NOT_READY);
        let typo = configure(Some(&json!({"defaultNotReadyTolerationSecond": 5}))).unwrap_err();
        assert_eq!(typo.field, "defaultNotReadyTolerationSecond");
    }
}
