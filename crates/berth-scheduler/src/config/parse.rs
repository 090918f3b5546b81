//! Text to a configuration, strictly: every key must be one upstream's v1 types have (an unknown
//! key is reported as upstream's strict decoding reports it), every value must have its type,
//! and every plugin named must exist. Defaults are applied afterwards (`defaults.rs`); absent
//! values read as "unset" here.

use super::field::{child, index, render, At, Errors, FieldError};
use super::plugins::{self, Point};
use super::*;

/// Parses YAML or JSON text into a document tree.
pub(crate) fn document(text: &str) -> Result<Value, FieldError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        FieldError::invalid("document", "", format!("malformed YAML or JSON: {first}"))
    })
}

/// Reads the configuration; unset numbers read as `i64::MIN` for `defaults.rs` to fill in.
pub(crate) fn configuration(doc: &Value) -> Result<SchedulerConfiguration, Errors> {
    let mut errors = Errors::new();
    let top = At {
        value: doc,
        path: "",
    };
    if !top.object(
        &[
            "apiVersion",
            "kind",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "healthzBindAddress",
            "metricsBindAddress",
            "enableProfiling",
            "enableContentionProfiling",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "profiles",
            "extenders",
            "delayCacheUntilActive",
        ],
        &mut errors,
    ) {
        errors.push(FieldError::required("kind", ""));
        return Err(errors);
    }
    let api_version = top.string("apiVersion", &mut errors).unwrap_or_default();
    if api_version != API_VERSION {
        errors.push(FieldError::not_supported(
            "apiVersion",
            format!("{api_version:?}"),
            &[API_VERSION],
        ));
    }
    let kind = top.string("kind", &mut errors).unwrap_or_default();
    if kind != KIND {
        errors.push(FieldError::not_supported(
            "kind",
            format!("{kind:?}"),
            &[KIND],
        ));
    }
    let unset = i64::MIN;
    let mut config = SchedulerConfiguration {
        parallelism: top.int("parallelism", &mut errors).unwrap_or(unset),
        percentage_of_nodes_to_score: top
            .int("percentageOfNodesToScore", &mut errors)
            .unwrap_or(unset),
        pod_initial_backoff_seconds: top
            .int("podInitialBackoffSeconds", &mut errors)
            .unwrap_or(unset),
        pod_max_backoff_seconds: top
            .int("podMaxBackoffSeconds", &mut errors)
            .unwrap_or(unset),
        enable_profiling: top.boolean("enableProfiling", &mut errors).unwrap_or(true),
        enable_contention_profiling: top
            .boolean("enableContentionProfiling", &mut errors)
            .unwrap_or(true),
        delay_cache_until_active: top
            .boolean("delayCacheUntilActive", &mut errors)
            .unwrap_or(false),
        leader_election: leader_election(&top, &mut errors),
        client_connection: client_connection(&top, &mut errors),
        profiles: Vec::new(),
        extenders: top.list("extenders", &mut errors).to_vec(),
    };
    for (i, p) in top.list("profiles", &mut errors).iter().enumerate() {
        let path = index("profiles", i);
        config.profiles.push(profile(
            At {
                value: p,
                path: &path,
            },
            &mut errors,
        ));
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

fn leader_election(top: &At, errors: &mut Errors) -> LeaderElection {
    let empty = Value::Null;
    let at = At {
        value: top.get("leaderElection").unwrap_or(&empty),
        path: "leaderElection",
    };
    at.object(
        &[
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        ],
        errors,
    );
    LeaderElection {
        leader_elect: at.boolean("leaderElect", errors).unwrap_or(true),
        lease_duration: at
            .duration("leaseDuration", errors)
            .unwrap_or(UNSET_DURATION),
        renew_deadline: at
            .duration("renewDeadline", errors)
            .unwrap_or(UNSET_DURATION),
        retry_period: at.duration("retryPeriod", errors).unwrap_or(UNSET_DURATION),
        resource_lock: at.string("resourceLock", errors).unwrap_or_default(),
        resource_name: at.string("resourceName", errors).unwrap_or_default(),
        resource_namespace: at.string("resourceNamespace", errors).unwrap_or_default(),
    }
}

/// A duration the file did not give (defaults fill it in).
pub(crate) const UNSET_DURATION: Duration = Duration::MAX;

fn client_connection(top: &At, errors: &mut Errors) -> ClientConnection {
    let empty = Value::Null;
    let at = At {
        value: top.get("clientConnection").unwrap_or(&empty),
        path: "clientConnection",
    };
    at.object(
        &[
            "kubeconfig",
            "acceptContentTypes",
            "contentType",
            "qps",
            "burst",
        ],
        errors,
    );
    ClientConnection {
        kubeconfig: at.string("kubeconfig", errors).unwrap_or_default(),
        accept_content_types: at.string("acceptContentTypes", errors).unwrap_or_default(),
        content_type: at.string("contentType", errors).unwrap_or_default(),
        qps: at.number("qps", errors).unwrap_or(0.0),
        burst: at.int("burst", errors).unwrap_or(0),
    }
}

fn profile(at: At, errors: &mut Errors) -> Profile {
    at.object(
        &[
            "schedulerName",
            "percentageOfNodesToScore",
            "plugins",
            "pluginConfig",
        ],
        errors,
    );
    let plugins_path = child(at.path, "plugins");
    let plugins = match at.get("plugins") {
        None => Plugins::default(),
        Some(v) => plugin_sets(
            At {
                value: v,
                path: &plugins_path,
            },
            errors,
        ),
    };
    let mut plugin_config = Vec::new();
    let pc_path = child(at.path, "pluginConfig");
    for (i, entry) in at.list("pluginConfig", errors).iter().enumerate() {
        let path = index(&pc_path, i);
        if let Some(pc) = super::defaults::plugin_config(
            At {
                value: entry,
                path: &path,
            },
            errors,
        ) {
            plugin_config.push(pc);
        }
    }
    Profile {
        scheduler_name: at.string("schedulerName", errors).unwrap_or_default(),
        percentage_of_nodes_to_score: at.int("percentageOfNodesToScore", errors),
        plugins,
        plugin_config,
    }
}

fn plugin_sets(at: At, errors: &mut Errors) -> Plugins {
    let mut known = vec!["multiPoint"];
    known.extend(Point::EVERY.iter().map(|p| p.field()));
    at.object(&known, errors);
    let mut plugins = Plugins::default();
    let path = child(at.path, "multiPoint");
    if let Some(v) = at.get("multiPoint") {
        plugins.multi_point = plugin_set(
            At {
                value: v,
                path: &path,
            },
            None,
            errors,
        );
    }
    for point in Point::EVERY {
        let path = child(at.path, point.field());
        if let Some(v) = at.get(point.field()) {
            plugins.points[point as usize] = plugin_set(
                At {
                    value: v,
                    path: &path,
                },
                Some(point),
                errors,
            );
        }
    }
    plugins
}

/// One `enabled`/`disabled` set; `point` is `None` for `multiPoint`.
fn plugin_set(at: At, point: Option<Point>, errors: &mut Errors) -> PluginSet {
    at.object(&["enabled", "disabled"], errors);
    let mut set = PluginSet::default();
    let enabled_path = child(at.path, "enabled");
    for (i, e) in at.list("enabled", errors).iter().enumerate() {
        let path = index(&enabled_path, i);
        let e = At {
            value: e,
            path: &path,
        };
        e.object(&["name", "weight"], errors);
        let Some(name) = e.string("name", errors) else {
            errors.push(FieldError::required(&child(&path, "name"), ""));
            continue;
        };
        let weight = e.int("weight", errors).unwrap_or(0);
        check_plugin(&path, &name, point, errors);
        if weight < 0 {
            errors.push(FieldError::invalid(
                &child(&path, "weight"),
                weight.to_string(),
                "must not be negative (disable the plugin instead)",
            ));
        }
        set.enabled.push(PluginRef { name, weight });
    }
    let disabled_path = child(at.path, "disabled");
    for (i, d) in at.list("disabled", errors).iter().enumerate() {
        let path = index(&disabled_path, i);
        let d = At {
            value: d,
            path: &path,
        };
        d.object(&["name", "weight"], errors);
        match d.string("name", errors) {
            Some(name) => set.disabled.push(name),
            None => errors.push(FieldError::required(&child(&path, "name"), "")),
        }
    }
    set
}

/// An enabled plugin must exist (upstream: `FilterPlugin "X" does not exist`), must not be one
/// the v1 API removed, and must implement the point it is enabled at.
fn check_plugin(path: &str, name: &str, point: Option<Point>, errors: &mut Errors) {
    let value = render(&Value::String(name.to_string()));
    if plugins::REMOVED.contains(&name) {
        errors.push(FieldError::invalid(
            path,
            value,
            format!(
                "was invalid in version {API_VERSION:?} (KubeSchedulerConfiguration is version {API_VERSION:?})"
            ),
        ));
        return;
    }
    let interface = point.map_or("MultiPoint", |p| p.interface());
    let Some(plugin) = plugins::lookup(name) else {
        errors.push(FieldError::invalid(
            path,
            value,
            format!("{interface} {name:?} does not exist"),
        ));
        return;
    };
    if let Some(point) = point {
        if !plugin.implements(point) {
            errors.push(FieldError::invalid(
                path,
                value,
                format!("plugin {name:?} does not extend {interface} plugin"),
            ));
        }
    }
}
