//! Jobs and CronJobs (batch/v1), as upstream's `registry/batch/{job,cronjob}/strategy.go` and
//! `apis/batch/v1/defaults.go`: defaults, a Job's generated selector and pod labels, status
//! reset on create, the pod template's `restartPolicy` (`OnFailure` or `Never`), the
//! `podFailurePolicy` (validation in `job/failure_policy.rs`), and what an update may not change.

mod failure_policy;

use super::{causes, defaults::default_at, Strategy};
use crate::codec::meta_str;
use crate::error::{ApiError, ApiResult, Cause};
use berth_api::registry::ResourceType;
use berth_core::validation::FieldError;
use serde_json::{json, Value};

/// The label that ties a Job's pods to it (its selector, generated from the Job's uid).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label that names a pod's Job.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The labels of the same meaning that clients before 1.27 read.
const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";

const RESTART_POLICIES: &[&str] = &["OnFailure", "Never"];

pub struct Job;

impl Strategy for Job {
    fn prepare_for_create(&self, job: &mut Value) {
        if let Some(o) = job.as_object_mut() {
            o.remove("status");
        }
        default_job_spec(&mut job["spec"]);
        if job["spec"]["manualSelector"].as_bool() != Some(true) {
            generate_selector(job);
        }
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) -> ApiResult<()> {
        default_job_spec(&mut new["spec"]);
        let mut changed = Vec::new();
        for field in [
            "selector",
            "completions",
            "completionMode",
            "podFailurePolicy",
        ] {
            if old["spec"].get(field) != new["spec"].get(field) {
                changed.push(field);
            }
        }
        // The template may change only while the Job is suspended (upstream 1.27+).
        let suspended = new["spec"]["suspend"].as_bool() == Some(true);
        if !suspended && old["spec"].get("template") != new["spec"].get("template") {
            changed.push("template");
        }
        if changed.is_empty() {
            return Ok(());
        }
        Err(ApiError::Invalid {
            kind: "Job".into(),
            name: meta_str(old, "name").into(),
            causes: changed
                .into_iter()
                .map(|f| Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "field is immutable".into(),
                    field: format!("spec.{f}"),
                })
                .collect(),
        })
    }

    fn validate(&self, rt: &ResourceType, job: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = berth_core::validation::validate_generic(job, rt.namespaced);
        errors.extend(validate_job_spec(&job["spec"], "spec"));
        causes(errors)
    }
}

pub struct CronJob;

impl Strategy for CronJob {
    fn prepare_for_create(&self, cron: &mut Value) {
        if let Some(o) = cron.as_object_mut() {
            o.remove("status");
        }
        default_cron_job_spec(&mut cron["spec"]);
    }

    fn prepare_for_update(&self, _old: &Value, new: &mut Value) -> ApiResult<()> {
        default_cron_job_spec(&mut new["spec"]);
        Ok(())
    }

    fn validate(&self, rt: &ResourceType, cron: &Value, _old: Option<&Value>) -> Vec<Cause> {
        let mut errors = berth_core::validation::validate_generic(cron, rt.namespaced);
        let spec = &cron["spec"];
        if spec["schedule"]
            .as_str()
            .is_none_or(|s| s.trim().is_empty())
        {
            errors.push(FieldError::required("spec.schedule", ""));
        }
        let policy = spec["concurrencyPolicy"].as_str().unwrap_or("Allow");
        let policies = ["Allow", "Forbid", "Replace"];
        if !policies.contains(&policy) {
            errors.push(FieldError::not_supported(
                "spec.concurrencyPolicy",
                policy,
                &policies,
            ));
        }
        // Any larger value is accepted, as upstream does: the controller's arithmetic saturates.
        if let Some(n) = spec["startingDeadlineSeconds"].as_i64().filter(|n| *n < 0) {
            errors.push(FieldError::invalid_rendered(
                "spec.startingDeadlineSeconds",
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        errors.extend(validate_job_spec(
            &spec["jobTemplate"]["spec"],
            "spec.jobTemplate.spec",
        ));
        causes(errors)
    }
}

/// Upstream `SetDefaults_Job`: parallelism (and completions, when neither is set) 1,
/// backoffLimit 6 (unlimited with a per-index limit), NonIndexed completion, not suspended, pods replaced once terminating or failed.
fn default_job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec["completions"] = json!(1);
    }
    default_at(spec, "parallelism", json!(1));
    let backoff_limit = if spec["backoffLimitPerIndex"].is_null() {
        6
    } else {
        i32::MAX
    };
    default_at(spec, "backoffLimit", json!(backoff_limit));
    default_at(spec, "completionMode", json!("NonIndexed"));
    default_at(spec, "suspend", json!(false));
    // Pods are replaced only once terminal under a pod failure policy, which reads how they ended.
    let replacement = if spec["podFailurePolicy"].is_object() {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_at(spec, "podReplacementPolicy", json!(replacement));
    failure_policy::default(spec);
    default_at(spec, "manualSelector", Value::Null);
    if spec["manualSelector"].is_null() {
        if let Some(o) = spec.as_object_mut() {
            o.remove("manualSelector");
        }
    }
}

/// Upstream `SetDefaults_CronJob`.
fn default_cron_job_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, "concurrencyPolicy", json!("Allow"));
    default_at(spec, "suspend", json!(false));
    default_at(spec, "successfulJobsHistoryLimit", json!(3));
    default_at(spec, "failedJobsHistoryLimit", json!(1));
    if spec["jobTemplate"]["spec"].is_object() {
        default_job_spec(&mut spec["jobTemplate"]["spec"]);
    }
}

/// The selector upstream generates: the Job's uid, which its pods carry as labels with the Job's
/// name (new and legacy spellings).
fn generate_selector(job: &mut Value) {
    let uid = meta_str(job, "uid").to_string();
    let name = meta_str(job, "name").to_string();
    let template = &mut job["spec"]["template"];
    if !template.is_object() {
        return;
    }
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    if !template["metadata"]["labels"].is_object() {
        template["metadata"]["labels"] = json!({});
    }
    let labels = &mut template["metadata"]["labels"];
    labels[CONTROLLER_UID_LABEL] = json!(uid);
    labels[LEGACY_CONTROLLER_UID_LABEL] = json!(uid);
    labels[JOB_NAME_LABEL] = json!(name);
    labels[LEGACY_JOB_NAME_LABEL] = json!(name);
    let selector = &mut job["spec"]["selector"];
    if !selector.is_object() {
        *selector = json!({});
    }
    if !selector["matchLabels"].is_object() {
        selector["matchLabels"] = json!({});
    }
    selector["matchLabels"][CONTROLLER_UID_LABEL] = json!(uid);
}

/// Field errors of a Job spec at `at` (`spec`, or a CronJob's `spec.jobTemplate.spec`).
fn validate_job_spec(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    if !spec["template"].is_object() {
        out.push(FieldError::required(format!("{at}.template"), ""));
        return out;
    }
    let policy = spec["template"]["spec"]["restartPolicy"].as_str();
    match policy {
        Some(p) if spec["podFailurePolicy"].is_object() && p != "Never" => {
            out.push(FieldError::invalid(
                format!("{at}.template.spec.restartPolicy"),
                p,
                "only \"Never\" is supported when podFailurePolicy is specified",
            ))
        }
        Some(p) if RESTART_POLICIES.contains(&p) => {}
        Some(p) => out.push(FieldError::not_supported(
            format!("{at}.template.spec.restartPolicy"),
            p,
            RESTART_POLICIES,
        )),
        None => out.push(FieldError::required(
            format!("{at}.template.spec.restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        )),
    }
    for field in [
        "parallelism",
        "completions",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "ttlSecondsAfterFinished",
    ] {
        if let Some(n) = spec[field].as_i64().filter(|n| *n < 0) {
            out.push(FieldError::invalid_rendered(
                format!("{at}.{field}"),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    out.extend(validate_completion_mode(spec, at));
    out.extend(validate_per_index_limits(spec, at));
    out.extend(failure_policy::validate(spec, at));
    if let Some(n) = spec["activeDeadlineSeconds"].as_i64().filter(|n| *n <= 0) {
        out.push(FieldError::invalid_rendered(
            format!("{at}.activeDeadlineSeconds"),
            &n.to_string(),
            "must be greater than 0",
        ));
    }
    out
}

/// Upstream's limits for Indexed Jobs (`maxParallelismForIndexedJob`, and completions).
const MAX_INDEXED: i64 = 100_000;

/// `completionMode` is NonIndexed or Indexed; an Indexed Job names its completions, at most
/// 100,000, and runs at most 100,000 pods at once.
fn validate_completion_mode(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    match spec["completionMode"].as_str() {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            match spec["completions"].as_i64() {
                None => out.push(FieldError::required(
                    format!("{at}.completions"),
                    "when completion mode is Indexed",
                )),
                Some(n) if n > MAX_INDEXED => out.push(FieldError::invalid_rendered(
                    format!("{at}.completions"),
                    &n.to_string(),
                    &format!("must be less than or equal to {MAX_INDEXED} when completion mode is Indexed"),
                )),
                Some(_) => {}
            }
            if let Some(n) = spec["parallelism"].as_i64().filter(|n| *n > MAX_INDEXED) {
                out.push(FieldError::invalid_rendered(
                    format!("{at}.parallelism"),
                    &n.to_string(),
                    &format!("must be less than or equal to {MAX_INDEXED} when completion mode is Indexed"),
                ));
            }
        }
        Some(other) => out.push(FieldError::not_supported(
            format!("{at}.completionMode"),
            other,
            &["Indexed", "NonIndexed"],
        )),
    }
    out
}

/// `backoffLimitPerIndex` needs Indexed completion; `maxFailedIndexes` needs
/// `backoffLimitPerIndex` and at most `completions` indexes.
fn validate_per_index_limits(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    let per_index = !spec["backoffLimitPerIndex"].is_null();
    if per_index && spec["completionMode"].as_str() != Some("Indexed") {
        out.push(FieldError::forbidden(
            format!("{at}.backoffLimitPerIndex"),
            "requires indexed completion mode",
        ));
    }
    if let Some(max) = spec["maxFailedIndexes"].as_i64() {
        if !per_index {
            out.push(FieldError::required(
                format!("{at}.backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
        if spec["completions"].as_i64().is_some_and(|c| max > c) {
            out.push(FieldError::invalid_rendered(
                format!("{at}.maxFailedIndexes"),
                &max.to_string(),
                "must be less than or equal to completions",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "c", "image": "busybox"}]}}},
               "status": {"succeeded": 9}})
    }

    #[test]
    fn a_new_job_gets_upstream_defaults_and_no_status() {
        let mut j = job();
        Job.prepare_for_create(&mut j);
        let s = &j["spec"];
        assert_eq!(s["completions"], 1);
        assert_eq!(s["parallelism"], 1);
        assert_eq!(s["backoffLimit"], 6);
        assert_eq!(s["completionMode"], "NonIndexed");
        assert_eq!(s["suspend"], false);
        assert!(j.get("status").is_none());
    }

    #[test]
    fn a_work_queue_job_keeps_completions_unset() {
        let mut j = job();
        j["spec"]["parallelism"] = json!(3);
        Job.prepare_for_create(&mut j);
        assert!(j["spec"].get("completions").is_none());
    }

    #[test]
    fn the_selector_is_generated_from_the_uid_and_pods_are_labelled() {
        let mut j = job();
        Job.prepare_for_create(&mut j);
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {CONTROLLER_UID_LABEL: "u-1"}})
        );
        let labels = &j["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels[CONTROLLER_UID_LABEL], "u-1");
        assert_eq!(labels["controller-uid"], "u-1");
        assert_eq!(labels[JOB_NAME_LABEL], "pi");
        assert_eq!(labels["job-name"], "pi");
    }

    #[test]
    fn a_manual_selector_is_kept() {
        let mut j = job();
        j["spec"]["manualSelector"] = json!(true);
        j["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        Job.prepare_for_create(&mut j);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"app": "x"}}));
    }

    #[test]
    fn restart_policy_always_is_refused() {
        let mut j = job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        let rt = berth_api::registry::find("batch", "v1", "jobs").unwrap();
        let causes = Job.validate(rt, &j, None);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.template.spec.restartPolicy");
        assert!(
            causes[0].message.contains("supported values"),
            "{:?}",
            causes
        );
    }

    #[test]
    fn a_pod_failure_policy_needs_restart_policy_never_and_defaults_replacement_to_failed() {
        let mut j = job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        j["spec"]["podFailurePolicy"] = json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
        Job.prepare_for_create(&mut j);
        assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
        let rt = berth_api::registry::find("batch", "v1", "jobs").unwrap();
        let causes = Job.validate(rt, &j, None);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.template.spec.restartPolicy");
        assert_eq!(
            causes[0].message,
            r#"Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified"#
        );
        let mut new = j.clone();
        new["spec"]["podFailurePolicy"]["rules"][0]["action"] = json!("Count");
        let e = Job.prepare_for_update(&j, &mut new).unwrap_err();
        assert!(format!("{e:?}").contains("spec.podFailurePolicy"));
    }

    #[test]
    fn the_template_and_selector_may_not_change_unless_suspended() {
        let mut old = job();
        Job.prepare_for_create(&mut old);
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
        let e = Job.prepare_for_update(&old, &mut new).unwrap_err();
        assert!(format!("{e:?}").contains("spec.template"));
        new["spec"]["suspend"] = json!(true);
        assert!(Job.prepare_for_update(&old, &mut new).is_ok());
        let mut new = old.clone();
        new["spec"]["parallelism"] = json!(5);
        assert!(Job.prepare_for_update(&old, &mut new).is_ok());
    }

    /// Issue 30: the time fields a tenant sets are validated as upstream validates them (no
    /// upper bound: the controllers' arithmetic saturates), so `i64::MAX` is accepted and
    /// negative values are refused.
    #[test]
    fn time_fields_are_validated_as_upstream() {
        let jobs = berth_api::registry::find("batch", "v1", "jobs").unwrap();
        let crons = berth_api::registry::find("batch", "v1", "cronjobs").unwrap();
        let messages = |c: Vec<Cause>| {
            c.into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
        };
        let job_with = |field: &str, v: Value| {
            let mut j = job();
            j["spec"][field] = v;
            Job.prepare_for_create(&mut j);
            messages(Job.validate(jobs, &j, None))
        };
        let cron_with = |v: Value| {
            let mut c = json!({"metadata": {"name": "c", "namespace": "ns"},
                "spec": {"schedule": "* * * * *", "startingDeadlineSeconds": v,
                "jobTemplate": {"spec": job()["spec"].clone()}}});
            CronJob.prepare_for_create(&mut c);
            messages(CronJob.validate(crons, &c, None))
        };
        assert!(job_with("activeDeadlineSeconds", json!(i64::MAX)).is_empty());
        assert!(job_with("ttlSecondsAfterFinished", json!(i32::MAX)).is_empty());
        assert_eq!(
            job_with("ttlSecondsAfterFinished", json!(-1)),
            ["spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert!(cron_with(json!(i64::MAX)).is_empty());
        assert!(cron_with(json!(0)).is_empty());
        assert_eq!(
            cron_with(json!(-5)),
            ["spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"]
        );
    }

    #[test]
    fn a_cron_job_gets_upstream_defaults() {
        let mut c = json!({"metadata": {"name": "c"}, "spec": {"schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}}}});
        CronJob.prepare_for_create(&mut c);
        let s = &c["spec"];
        assert_eq!(s["concurrencyPolicy"], "Allow");
        assert_eq!(s["successfulJobsHistoryLimit"], 3);
        assert_eq!(s["failedJobsHistoryLimit"], 1);
        assert_eq!(s["suspend"], false);
        assert_eq!(s["jobTemplate"]["spec"]["backoffLimit"], 6);
    }

    #[test]
    fn a_per_index_backoff_limit_unlimits_backoff_limit_and_needs_indexed_completion() {
        let rt = berth_api::registry::find("batch", "v1", "jobs").unwrap();
        let mut j = job();
        j["spec"]["completions"] = json!(3);
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["backoffLimitPerIndex"] = json!(1);
        j["spec"]["maxFailedIndexes"] = json!(2);
        Job.prepare_for_create(&mut j);
        assert_eq!(j["spec"]["backoffLimit"], i32::MAX);
        assert!(Job.validate(rt, &j, None).is_empty());

        let mut j = job();
        j["spec"]["backoffLimitPerIndex"] = json!(1);
        j["spec"]["maxFailedIndexes"] = json!(5);
        Job.prepare_for_create(&mut j);
        let messages: Vec<String> = Job
            .validate(rt, &j, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            messages,
            [
                "spec.backoffLimitPerIndex: Forbidden: requires indexed completion mode",
                "spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions",
            ]
        );
        let mut j = job();
        j["spec"]["maxFailedIndexes"] = json!(0);
        Job.prepare_for_create(&mut j);
        assert_eq!(
            Job.validate(rt, &j, None)[0].field,
            "spec.backoffLimitPerIndex"
        );
    }
}
