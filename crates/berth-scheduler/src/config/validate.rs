//! Upstream's validation (`pkg/scheduler/apis/config/validation/validation.go` and
//! `validation_pluginargs.go`), with its field paths and words, plus component-base's checks of
//! `leaderElection` and `clientConnection`.

use super::field::{child, index, Errors, FieldError};
use super::*;

/// Every problem of a defaulted configuration, in upstream's order.
pub(crate) fn configuration(c: &SchedulerConfiguration) -> Errors {
    let mut errors = Errors::new();
    if c.client_connection.burst < 0 {
        errors.push(FieldError::invalid(
            "clientConnection.burst",
            c.client_connection.burst.to_string(),
            "must be non-negative",
        ));
    }
    leader_election(&c.leader_election, &mut errors);
    if c.parallelism <= 0 {
        errors.push(FieldError::invalid(
            "parallelism",
            c.parallelism.to_string(),
            "should be an integer value greater than zero",
        ));
    }
    for (i, p) in c.profiles.iter().enumerate() {
        let path = index("profiles", i);
        if p.scheduler_name.is_empty() {
            errors.push(FieldError::required(&child(&path, "schedulerName"), ""));
        }
        if let Some(pct) = p.percentage_of_nodes_to_score {
            percentage(&child(&path, "percentageOfNodesToScore"), pct, &mut errors);
        }
        plugin_config(&path, p, &mut errors);
        if let Some(first) = c.profiles[..i]
            .iter()
            .position(|q| q.scheduler_name == p.scheduler_name)
        {
            errors.push(FieldError::duplicate(
                &child(&path, "schedulerName"),
                child(&index("profiles", first), "schedulerName"),
            ));
        }
    }
    common_queue_sort(&c.profiles, &mut errors);
    percentage(
        "percentageOfNodesToScore",
        c.percentage_of_nodes_to_score,
        &mut errors,
    );
    if c.pod_initial_backoff_seconds <= 0 {
        errors.push(FieldError::invalid(
            "podInitialBackoffSeconds",
            c.pod_initial_backoff_seconds.to_string(),
            "must be greater than 0",
        ));
    }
    if c.pod_max_backoff_seconds < c.pod_initial_backoff_seconds {
        errors.push(FieldError::invalid(
            "podMaxBackoffSeconds",
            c.pod_max_backoff_seconds.to_string(),
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    errors
}

fn percentage(path: &str, v: i64, errors: &mut Errors) {
    if !(0..=100).contains(&v) {
        errors.push(FieldError::invalid(
            path,
            v.to_string(),
            "not in valid range [0-100]",
        ));
    }
}

/// A duration as Go prints a `metav1.Duration` in an error (`0s`, `15s`, `1.5s`).
fn go_duration(d: Duration) -> String {
    format!("{:?}", d).replace("ns", "s")
}

/// component-base's `ValidateLeaderElectionConfiguration`, then the scheduler's lease-only rule.
fn leader_election(le: &LeaderElection, errors: &mut Errors) {
    if !le.leader_elect {
        return;
    }
    let p = "leaderElection";
    for (name, d) in [
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ] {
        if d.is_zero() {
            errors.push(FieldError::invalid(
                &child(p, name),
                go_duration(d),
                "must be greater than zero",
            ));
        }
    }
    if le.lease_duration <= le.renew_deadline {
        errors.push(FieldError::invalid(
            &child(p, "leaseDuration"),
            go_duration(le.renew_deadline),
            "LeaseDuration must be greater than RenewDeadline",
        ));
    }
    if le.resource_name.is_empty() {
        errors.push(FieldError::invalid(
            &child(p, "resourceName"),
            "\"\"",
            "resourceName is required",
        ));
    }
    if le.resource_namespace.is_empty() {
        errors.push(FieldError::invalid(
            &child(p, "resourceNamespace"),
            "\"\"",
            "resourceNamespace is required",
        ));
    }
    if le.resource_lock != "leases" {
        errors.push(FieldError::invalid(
            &child(p, "resourceLock"),
            format!("{:?}", le.resource_lock),
            "resourceLock value must be \"leases\"",
        ));
    }
}

/// `validateCommonQueueSort`: every profile sorts its queue the same way.
fn common_queue_sort(profiles: &[Profile], errors: &mut Errors) {
    let Some(first) = profiles.first() else {
        return;
    };
    let canon = first.plugins.at(Point::QueueSort);
    if canon.enabled.len() > 1 {
        errors.push(FieldError::invalid(
            "profiles[0].plugins.queueSort.Enabled",
            canon.enabled.len().to_string(),
            "only one queue sort plugin can be enabled",
        ));
    }
    for (i, p) in profiles.iter().enumerate().skip(1) {
        if p.plugins.at(Point::QueueSort) != canon {
            errors.push(FieldError::invalid(
                &child(&index("profiles", i), "plugins.queueSort"),
                "{...}",
                "must be the same for all profiles",
            ));
        }
    }
}

/// `validatePluginConfig`: duplicates, then each plugin's args.
fn plugin_config(path: &str, p: &Profile, errors: &mut Errors) {
    for (i, pc) in p.plugin_config.iter().enumerate() {
        let pc_path = index(&child(path, "pluginConfig"), i);
        if p.plugin_config[..i].iter().any(|q| q.name == pc.name) {
            errors.push(FieldError::duplicate(&pc_path, format!("{:?}", pc.name)));
        }
        args(&child(&pc_path, "args"), &pc.args, errors);
    }
}

const SCORING_STRATEGIES: [&str; 3] = [
    "LeastAllocated",
    "MostAllocated",
    "RequestedToCapacityRatio",
];

/// Upstream's `Validate<Kind>Args`.
pub(crate) fn args(path: &str, args: &Args, errors: &mut Errors) {
    match args {
        Args::DefaultPreemption {
            min_candidate_nodes_percentage: pct,
            min_candidate_nodes_absolute: abs,
        } => {
            let pp = child(path, "minCandidateNodesPercentage");
            let ap = child(path, "minCandidateNodesAbsolute");
            if !(0..=100).contains(pct) {
                errors.push(FieldError::invalid(
                    &pp,
                    pct.to_string(),
                    "not in valid range [0, 100]",
                ));
            }
            if *abs < 0 {
                errors.push(FieldError::invalid(
                    &ap,
                    abs.to_string(),
                    "not in valid range [0, inf)",
                ));
            }
            if *pct == 0 && *abs == 0 {
                errors.push(FieldError::invalid(
                    &pp,
                    "0",
                    "cannot be zero at the same time as minCandidateNodesAbsolute",
                ));
                errors.push(FieldError::invalid(
                    &ap,
                    "0",
                    "cannot be zero at the same time as minCandidateNodesPercentage",
                ));
            }
        }
        Args::InterPodAffinity {
            hard_pod_affinity_weight: w,
            ..
        } => {
            if !(0..=100).contains(w) {
                errors.push(FieldError::invalid(
                    &child(path, "hardPodAffinityWeight"),
                    w.to_string(),
                    "not in valid range [0, 100]",
                ));
            }
        }
        Args::NodeAffinity { added_affinity } => {
            if let Some(a) = added_affinity {
                node_affinity(&child(path, "addedAffinity"), a, errors);
            }
        }
        Args::NodeResourcesFit {
            ignored_resources,
            ignored_resource_groups,
            scoring_strategy,
        } => {
            for (i, r) in ignored_resources.iter().enumerate() {
                label_name(&index(&child(path, "ignoredResources"), i), r, errors);
            }
            for (i, g) in ignored_resource_groups.iter().enumerate() {
                let p = index(&child(path, "ignoredResourceGroups"), i);
                if g.contains('/') {
                    errors.push(FieldError::invalid(
                        &p,
                        format!("{g:?}"),
                        "resource group name can't contain '/'",
                    ));
                }
                label_name(&p, g, errors);
            }
            let sp = child(path, "scoringStrategy");
            let s = scoring_strategy;
            if !SCORING_STRATEGIES.contains(&s.type_.as_str()) {
                errors.push(FieldError::not_supported(
                    &child(&sp, "type"),
                    format!("{:?}", s.type_),
                    &SCORING_STRATEGIES,
                ));
            }
            for (i, r) in s.resources.iter().enumerate() {
                if r.weight <= 0 || r.weight > 100 {
                    errors.push(FieldError::invalid(
                        &child(&index(&child(&sp, "resources"), i), "weight"),
                        r.weight.to_string(),
                        format!("resource weight of {} not in valid range (0, 100]", r.name),
                    ));
                }
            }
            // upstream validates the shape wherever `requestedToCapacityRatio` is given, at
            // `scoringStrategy.shape`, and ignores it under the other types. Without one,
            // RequestedToCapacityRatio has nothing to score with (upstream's plugin fails to
            // start): refused here, naming the field.
            match &s.shape {
                Some(shape) => function_shape(&child(&sp, "shape"), shape, errors),
                None if s.type_ == "RequestedToCapacityRatio" => errors.push(FieldError::required(
                    &child(&sp, "requestedToCapacityRatio"),
                    "must be specified when type is RequestedToCapacityRatio",
                )),
                None => {}
            }
        }
        Args::NodeResourcesBalancedAllocation { resources } => {
            for (i, r) in resources.iter().enumerate() {
                let rp = index(&child(path, "resources"), i);
                if resources[..i].iter().any(|q| q.name == r.name) {
                    errors.push(FieldError::duplicate(
                        &child(&rp, "name"),
                        format!("{:?}", r.name),
                    ));
                }
                if r.weight != 1 {
                    errors.push(FieldError::invalid(
                        &child(&rp, "weight"),
                        r.weight.to_string(),
                        "must be 1",
                    ));
                }
            }
        }
        Args::PodTopologySpread {
            default_constraints,
            defaulting_type,
        } => topology_spread(path, default_constraints, defaulting_type, errors),
        Args::VolumeBinding {
            bind_timeout_seconds,
            shape,
        } => {
            if *bind_timeout_seconds < 0 {
                errors.push(FieldError::invalid(
                    &child(path, "bindTimeoutSeconds"),
                    bind_timeout_seconds.to_string(),
                    "invalid BindTimeoutSeconds, should not be a negative value",
                ));
            }
            if shape.is_some() {
                errors.push(FieldError::invalid(
                    &child(path, "shape"),
                    "[...]",
                    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                ));
            }
        }
        Args::DynamicResources => {}
    }
}

/// `validateFunctionShape`: sorted utilizations in 0..=100, scores in 0..=10.
fn function_shape(path: &str, shape: &[ShapePoint], errors: &mut Errors) {
    if shape.is_empty() {
        errors.push(FieldError::required(
            path,
            "at least one point must be specified",
        ));
        return;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errors.push(FieldError::invalid(
                &child(&index(path, i), "utilization"),
                shape[i].utilization.to_string(),
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errors.push(FieldError::invalid(
                &child(&index(path, i), "utilization"),
                p.utilization.to_string(),
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=10).contains(&p.score) {
            errors.push(FieldError::invalid(
                &child(&index(path, i), "score"),
                p.score.to_string(),
                "not in valid range [0, 10]",
            ));
        }
    }
}

/// metav1 `ValidateLabelName`: a qualified name.
fn label_name(path: &str, name: &str, errors: &mut Errors) {
    for msg in berth_core::validation::names::qualified_name(name) {
        errors.push(FieldError::invalid(path, format!("{name:?}"), msg));
    }
}

fn node_affinity(path: &str, a: &crate::model::NodeAffinity, errors: &mut Errors) {
    const OPS: [&str; 6] = ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"];
    let check_term = |tp: &str, term: &crate::model::NodeSelectorTerm, errors: &mut Errors| {
        for (j, r) in term.match_expressions.iter().enumerate() {
            let rp = index(&child(tp, "matchExpressions"), j);
            if !OPS.contains(&r.operator.as_str()) {
                errors.push(FieldError::not_supported(
                    &child(&rp, "operator"),
                    format!("{:?}", r.operator),
                    &OPS,
                ));
            }
            label_name(&child(&rp, "key"), &r.key, errors);
        }
    };
    if let Some(req) = &a.required_during_scheduling_ignored_during_execution {
        let rp = child(path, "requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in req.node_selector_terms.iter().enumerate() {
            check_term(&index(&child(&rp, "nodeSelectorTerms"), i), t, errors);
        }
    }
    let pp = child(path, "preferredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in a
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        check_term(&child(&index(&pp, i), "preference"), &t.preference, errors);
    }
}

fn topology_spread(path: &str, constraints: &[Value], defaulting: &str, errors: &mut Errors) {
    let dp = child(path, "defaultingType");
    if defaulting != "System" && defaulting != "List" {
        errors.push(FieldError::not_supported(
            &dp,
            format!("{defaulting:?}"),
            &["System", "List"],
        ));
    } else if defaulting == "System" && !constraints.is_empty() {
        errors.push(FieldError::invalid(
            &dp,
            format!("{defaulting:?}"),
            "when .defaultConstraints are not empty",
        ));
    }
    let cp = child(path, "defaultConstraints");
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = index(&cp, i);
        let max_skew = c.get("maxSkew").and_then(|v| v.as_i64()).unwrap_or(0);
        if max_skew <= 0 {
            errors.push(FieldError::invalid(
                &child(&p, "maxSkew"),
                max_skew.to_string(),
                "not in valid range (0, inf)",
            ));
        }
        let key = c
            .get("topologyKey")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        if key.is_empty() {
            errors.push(FieldError::required(
                &child(&p, "topologyKey"),
                "can not be empty",
            ));
        } else {
            label_name(&child(&p, "topologyKey"), &key, errors);
        }
        let when = c
            .get("whenUnsatisfiable")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        if when.is_empty() {
            errors.push(FieldError::required(
                &child(&p, "whenUnsatisfiable"),
                "can not be empty",
            ));
        } else if when != "DoNotSchedule" && when != "ScheduleAnyway" {
            errors.push(FieldError::not_supported(
                &child(&p, "whenUnsatisfiable"),
                format!("{when:?}"),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if c.get("labelSelector").is_some_and(|v| !v.is_null()) {
            errors.push(FieldError::forbidden(
                &child(&p, "labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        if seen.contains(&(key.clone(), when.clone())) {
            errors.push(FieldError::duplicate(&p, format!("{{{key}, {when}}}")));
        }
        seen.push((key, when));
    }
}
