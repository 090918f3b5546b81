//! An Indexed Job's `successPolicy`, as upstream's `matchSuccessPolicy`: the Job succeeds as
//! soon as one rule holds — every index of its `succeededIndexes` succeeded (or at least
//! `succeededCount` of them), or, without `succeededIndexes`, at least `succeededCount` indexes
//! succeeded. The Job then gets `SuccessCriteriaMet` (reason `SuccessPolicy`), its remaining
//! pods are deleted, and `Complete` follows with the same reason and message.

use super::indexed::parse_intervals;
use k8s_openapi::api::batch::v1::Job;
use std::collections::BTreeSet;

/// The reason of the conditions a matched success policy sets.
pub const REASON: &str = "SuccessPolicy";

/// The message naming the first rule that holds (`Matched rules at index 0`), if one does.
pub fn matched(job: &Job, completions: i32, succeeded: &BTreeSet<i32>) -> Option<String> {
    let rules = &job.spec.as_ref()?.success_policy.as_ref()?.rules;
    if succeeded.is_empty() {
        return None;
    }
    rules.iter().enumerate().find_map(|(i, rule)| {
        let count = rule.succeeded_count.map(|c| c.max(0) as usize);
        let holds = match &rule.succeeded_indexes {
            Some(text) => {
                let required = parse_intervals(text, completions);
                if required.is_empty() {
                    return None;
                }
                let done = required.intersection(succeeded).count();
                done == required.len() || count.is_some_and(|c| done >= c)
            }
            None => count.is_some_and(|c| succeeded.len() >= c),
        };
        holds.then(|| format!("Matched rules at index {i}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(rules: serde_json::Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "j"},
            "spec": {"completionMode": "Indexed", "completions": 10,
                     "successPolicy": {"rules": rules},
                     "template": {"spec": {"containers": []}}},
        }))
        .unwrap()
    }

    fn set(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    #[test]
    fn a_rule_holds_once_all_its_indexes_succeeded() {
        let j = job(json!([{"succeededIndexes": "0-2"}]));
        assert_eq!(matched(&j, 10, &set(&[0, 1])), None);
        assert_eq!(
            matched(&j, 10, &set(&[0, 1, 2, 7])).as_deref(),
            Some("Matched rules at index 0")
        );
    }

    #[test]
    fn a_count_with_indexes_needs_that_many_of_them() {
        let j = job(json!([{"succeededIndexes": "0,2-4", "succeededCount": 2}]));
        assert_eq!(matched(&j, 10, &set(&[0, 1])), None);
        assert!(matched(&j, 10, &set(&[0, 3])).is_some());
    }

    #[test]
    fn a_count_alone_needs_that_many_indexes() {
        let j = job(json!([{"succeededIndexes": "9"}, {"succeededCount": 3}]));
        assert_eq!(matched(&j, 10, &set(&[1, 2])), None);
        assert_eq!(
            matched(&j, 10, &set(&[1, 2, 5])).as_deref(),
            Some("Matched rules at index 1")
        );
    }

    #[test]
    fn nothing_succeeded_or_no_policy_matches_nothing() {
        let j = job(json!([{"succeededCount": 0}]));
        assert_eq!(matched(&j, 10, &set(&[])), None);
        let plain: Job = serde_json::from_value(json!({"metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": []}}}}))
        .unwrap();
        assert_eq!(matched(&plain, 10, &set(&[0])), None);
    }

    #[test]
    fn indexes_beyond_completions_do_not_count_as_required() {
        let j = job(json!([{"succeededIndexes": "8-12"}]));
        assert!(matched(&j, 10, &set(&[8, 9])).is_some());
    }
}
