//! Upstream's defaults (`pkg/scheduler/apis/config/v1/defaults.go`, `default_plugins.go`): the
//! top-level values, the default plugin set merged with each profile's, and each plugin's args.

use super::field::{child, index, render, At, Errors, FieldError};
use super::parse::UNSET_DURATION;
use super::plugins::{self, Point};
use super::*;

/// `parallelism` when not given.
pub const PARALLELISM: i64 = 16;
/// `percentageOfNodesToScore` when not given: 0, upstream's adaptive rule.
pub const PERCENTAGE_OF_NODES_TO_SCORE: i64 = 0;
/// `podInitialBackoffSeconds` when not given.
pub const POD_INITIAL_BACKOFF_SECONDS: i64 = 1;
/// `podMaxBackoffSeconds` when not given.
pub const POD_MAX_BACKOFF_SECONDS: i64 = 10;
/// The scheduler name of a lone profile that gives none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// The Lease kube-scheduler elects on by default.
pub const LEASE_NAME: &str = "kube-scheduler";
/// The Lease's namespace.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// The default plugins, all enabled at `multiPoint`, with their score weights (1.35's set; the
/// volume-count plugins of older releases are gone from v1).
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

/// Applies the defaults in place (after parsing, before validation).
pub(crate) fn apply(c: &mut SchedulerConfiguration) {
    let set = |v: &mut i64, d: i64| {
        if *v == i64::MIN {
            *v = d
        }
    };
    set(&mut c.parallelism, PARALLELISM);
    set(
        &mut c.percentage_of_nodes_to_score,
        PERCENTAGE_OF_NODES_TO_SCORE,
    );
    set(
        &mut c.pod_initial_backoff_seconds,
        POD_INITIAL_BACKOFF_SECONDS,
    );
    set(&mut c.pod_max_backoff_seconds, POD_MAX_BACKOFF_SECONDS);
    let le = &mut c.leader_election;
    for (v, d) in [
        (&mut le.lease_duration, 15),
        (&mut le.renew_deadline, 10),
        (&mut le.retry_period, 2),
    ] {
        if *v == UNSET_DURATION {
            *v = Duration::from_secs(d);
        }
    }
    for (v, d) in [
        (&mut le.resource_lock, "leases"),
        (&mut le.resource_name, LEASE_NAME),
        (&mut le.resource_namespace, LEASE_NAMESPACE),
    ] {
        if v.is_empty() {
            *v = d.to_string();
        }
    }
    let cc = &mut c.client_connection;
    if cc.content_type.is_empty() {
        cc.content_type = "application/vnd.kubernetes.protobuf".into();
    }
    if cc.qps == 0.0 {
        cc.qps = 50.0;
    }
    if cc.burst == 0 {
        cc.burst = 100;
    }
    if c.profiles.is_empty() {
        c.profiles.push(Profile {
            scheduler_name: String::new(),
            percentage_of_nodes_to_score: None,
            plugins: Plugins::default(),
            plugin_config: Vec::new(),
        });
    }
    // Only a lone profile gets the default name; validation requires one for the others.
    if c.profiles.len() == 1 && c.profiles[0].scheduler_name.is_empty() {
        c.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME.into();
    }
    for p in &mut c.profiles {
        p.plugins = merge(default_plugins(), &p.plugins);
        for name in enabled_names(&p.plugins) {
            if p.plugin_config.iter().any(|pc| pc.name == name) {
                continue;
            }
            if let Some(args) = default_args(&name) {
                p.plugin_config.push(PluginConfig { name, args });
            }
        }
    }
}

/// The default `plugins` of a profile.
pub(crate) fn default_plugins() -> Plugins {
    Plugins {
        multi_point: PluginSet {
            enabled: DEFAULT_PLUGINS
                .iter()
                .map(|(name, weight)| PluginRef {
                    name: name.to_string(),
                    weight: *weight,
                })
                .collect(),
            disabled: Vec::new(),
        },
        points: Default::default(),
    }
}

/// Upstream's `mergePlugins`: per point, the defaults minus the disabled ones (none with `*`),
/// a default the profile enables again replaced in place, then the profile's other plugins.
pub(crate) fn merge(defaults: Plugins, custom: &Plugins) -> Plugins {
    let mut out = Plugins {
        multi_point: merge_set(&defaults.multi_point, &custom.multi_point),
        points: Default::default(),
    };
    for point in Point::EVERY {
        out.points[point as usize] = merge_set(defaults.at(point), custom.at(point));
    }
    out
}

fn merge_set(defaults: &PluginSet, custom: &PluginSet) -> PluginSet {
    let mut disabled: Vec<String> = custom.disabled.clone();
    disabled.extend(defaults.disabled.iter().cloned());
    let mut replaced = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !disabled.iter().any(|d| d == "*") {
        for d in &defaults.enabled {
            if disabled.contains(&d.name) {
                continue;
            }
            match custom.enabled.iter().position(|c| c.name == d.name) {
                Some(ix) => {
                    replaced[ix] = true;
                    enabled.push(custom.enabled[ix].clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    for (ix, c) in custom.enabled.iter().enumerate() {
        if !replaced[ix] {
            enabled.push(c.clone());
        }
    }
    PluginSet { enabled, disabled }
}

/// Every plugin enabled at some point (upstream's `pluginsNames`), sorted.
fn enabled_names(p: &Plugins) -> Vec<String> {
    let mut names: Vec<String> = std::iter::once(&p.multi_point)
        .chain(p.points.iter())
        .flat_map(|s| s.enabled.iter().map(|e| e.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The default resources of the resource scorers: cpu and memory, weight 1.
fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

/// A plugin's args when its `pluginConfig` entry is absent (none for plugins without args).
pub(crate) fn default_args(name: &str) -> Option<Args> {
    let empty = Value::Object(Default::default());
    let mut errors = Errors::new();
    let kind = plugins::lookup(name)?.args?;
    args(
        kind,
        At {
            value: &empty,
            path: "",
        },
        &mut errors,
    )
}

/// Reads one `pluginConfig` entry, defaulting its args.
pub(crate) fn plugin_config(at: At, errors: &mut Errors) -> Option<PluginConfig> {
    at.object(&["name", "args"], errors);
    let Some(name) = at.string("name", errors) else {
        errors.push(FieldError::required(&child(at.path, "name"), ""));
        return None;
    };
    let value = render(&Value::String(name.clone()));
    if plugins::REMOVED.contains(&name.as_str()) {
        errors.push(FieldError::invalid(
            at.path,
            value,
            format!(
                "was invalid in version {API_VERSION:?} (KubeSchedulerConfiguration is version {API_VERSION:?})"
            ),
        ));
        return None;
    }
    let Some(plugin) = plugins::lookup(&name) else {
        errors.push(FieldError::invalid(
            &child(at.path, "name"),
            value,
            format!("plugin {name:?} does not exist"),
        ));
        return None;
    };
    let args_path = child(at.path, "args");
    let empty = Value::Object(Default::default());
    let raw = at.get("args").unwrap_or(&empty);
    let Some(kind) = plugin.args else {
        if raw.as_object().is_some_and(|m| !m.is_empty()) {
            errors.push(FieldError::invalid(
                &args_path,
                "",
                format!("plugin {name:?} takes no args"),
            ));
        }
        return None;
    };
    // `kind` (and `apiVersion`) may name the args type; a different type is refused as upstream.
    if let Some(k) = raw.get("kind").and_then(|k| k.as_str()) {
        if k != kind {
            errors.push(FieldError::invalid(
                &args_path,
                format!("{k:?}"),
                "has to match plugin args",
            ));
            return None;
        }
    }
    let args = args(
        kind,
        At {
            value: raw,
            path: &args_path,
        },
        errors,
    )?;
    Some(PluginConfig { name, args })
}

/// Decodes args of `kind` strictly, applying upstream's `SetDefaults_<Kind>`.
fn args(kind: &str, at: At, errors: &mut Errors) -> Option<Args> {
    const META: [&str; 2] = ["apiVersion", "kind"];
    let known = |fields: &[&'static str]| -> Vec<&'static str> {
        META.iter().chain(fields.iter()).copied().collect()
    };
    Some(match kind {
        "DefaultPreemptionArgs" => {
            at.object(
                &known(&["minCandidateNodesPercentage", "minCandidateNodesAbsolute"]),
                errors,
            );
            Args::DefaultPreemption {
                min_candidate_nodes_percentage: at
                    .int("minCandidateNodesPercentage", errors)
                    .unwrap_or(10),
                min_candidate_nodes_absolute: at
                    .int("minCandidateNodesAbsolute", errors)
                    .unwrap_or(100),
            }
        }
        "InterPodAffinityArgs" => {
            at.object(
                &known(&[
                    "hardPodAffinityWeight",
                    "ignorePreferredTermsOfExistingPods",
                ]),
                errors,
            );
            Args::InterPodAffinity {
                hard_pod_affinity_weight: at.int("hardPodAffinityWeight", errors).unwrap_or(1),
                ignore_preferred_terms_of_existing_pods: at
                    .boolean("ignorePreferredTermsOfExistingPods", errors)
                    .unwrap_or(false),
            }
        }
        "NodeAffinityArgs" => {
            at.object(&known(&["addedAffinity"]), errors);
            let added_affinity = match at.get("addedAffinity") {
                None => None,
                Some(v) => match serde_json::from_value::<crate::model::NodeAffinity>(v.clone()) {
                    Ok(a) => Some(a),
                    Err(e) => {
                        errors.push(FieldError::invalid(
                            &child(at.path, "addedAffinity"),
                            "",
                            format!("not a NodeAffinity: {e}"),
                        ));
                        None
                    }
                },
            };
            Args::NodeAffinity { added_affinity }
        }
        "NodeResourcesFitArgs" => {
            at.object(
                &known(&[
                    "ignoredResources",
                    "ignoredResourceGroups",
                    "scoringStrategy",
                ]),
                errors,
            );
            let strings = |name: &str, errors: &mut Errors| -> Vec<String> {
                let path = child(at.path, name);
                at.list(name, errors)
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| match v.as_str() {
                        Some(s) => Some(s.to_string()),
                        None => {
                            errors.push(FieldError::invalid(
                                &index(&path, i),
                                render(v),
                                "must be a string",
                            ));
                            None
                        }
                    })
                    .collect()
            };
            let ignored_resources = strings("ignoredResources", errors);
            let ignored_resource_groups = strings("ignoredResourceGroups", errors);
            let path = child(at.path, "scoringStrategy");
            let scoring_strategy = match at.get("scoringStrategy") {
                None => ScoringStrategy {
                    type_: "LeastAllocated".into(),
                    resources: default_resources(),
                    shape: None,
                },
                Some(v) => scoring_strategy(
                    At {
                        value: v,
                        path: &path,
                    },
                    errors,
                ),
            };
            Args::NodeResourcesFit {
                ignored_resources,
                ignored_resource_groups,
                scoring_strategy,
            }
        }
        "NodeResourcesBalancedAllocationArgs" => {
            at.object(&known(&["resources"]), errors);
            let mut resources = resources(&at, errors);
            if resources.is_empty() {
                resources = default_resources();
            }
            Args::NodeResourcesBalancedAllocation { resources }
        }
        "PodTopologySpreadArgs" => {
            at.object(&known(&["defaultConstraints", "defaultingType"]), errors);
            Args::PodTopologySpread {
                default_constraints: at.list("defaultConstraints", errors).to_vec(),
                defaulting_type: at
                    .string("defaultingType", errors)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "System".into()),
            }
        }
        "VolumeBindingArgs" => {
            at.object(&known(&["bindTimeoutSeconds", "shape"]), errors);
            Args::VolumeBinding {
                bind_timeout_seconds: at.int("bindTimeoutSeconds", errors).unwrap_or(600),
                shape: at.get("shape").map(|_| shape(&at, "shape", errors)),
            }
        }
        "DynamicResourcesArgs" => {
            at.object(&known(&["filterTimeout", "bindingTimeout"]), errors);
            for field in ["filterTimeout", "bindingTimeout"] {
                if at.get(field).is_some() {
                    errors.push(FieldError::forbidden(
                        &child(at.path, field),
                        "berth has no dynamic resource allocation",
                    ));
                }
            }
            Args::DynamicResources
        }
        _ => return None,
    })
}

fn scoring_strategy(at: At, errors: &mut Errors) -> ScoringStrategy {
    at.object(&["type", "resources", "requestedToCapacityRatio"], errors);
    let type_ = at.string("type", errors).unwrap_or_default();
    let mut resources = resources(&at, errors);
    if resources.is_empty() {
        resources = default_resources();
    }
    let shape = at.get("requestedToCapacityRatio").map(|v| {
        let path = child(at.path, "requestedToCapacityRatio");
        let r = At {
            value: v,
            path: &path,
        };
        r.object(&["shape"], errors);
        shape(&r, "shape", errors)
    });
    ScoringStrategy {
        type_,
        resources,
        shape,
    }
}

/// `resources`: name and weight (a weight of 0 or none means 1).
fn resources(at: &At, errors: &mut Errors) -> Vec<ResourceSpec> {
    let path = child(at.path, "resources");
    let mut out = Vec::new();
    for (i, v) in at.list("resources", errors).iter().enumerate() {
        let p = index(&path, i);
        let r = At { value: v, path: &p };
        r.object(&["name", "weight"], errors);
        let name = r.string("name", errors).unwrap_or_default();
        let weight = r.int("weight", errors).filter(|w| *w != 0).unwrap_or(1);
        out.push(ResourceSpec { name, weight });
    }
    out
}

fn shape(at: &At, name: &str, errors: &mut Errors) -> Vec<ShapePoint> {
    let path = child(at.path, name);
    let mut out = Vec::new();
    for (i, v) in at.list(name, errors).iter().enumerate() {
        let p = index(&path, i);
        let r = At { value: v, path: &p };
        r.object(&["utilization", "score"], errors);
        out.push(ShapePoint {
            utilization: r.int("utilization", errors).unwrap_or(0),
            score: r.int("score", errors).unwrap_or(0),
        });
    }
    out
}
