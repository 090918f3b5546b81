//! Indexed Jobs (`completionMode: Indexed`), as upstream's `indexed_job_utils.go`: each pod
//! carries a completion index in `0..completions`; the Job is complete when every index has a
//! succeeded pod; `status.completedIndexes` lists them as intervals (`0-2,4`). Pure.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The annotation (and, since 1.28, label) naming a pod's completion index.
pub const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";
/// The environment variable upstream adds to every container, from the annotation.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The pod's completion index, if it has a valid one below `completions`.
pub fn index_of(pod: &Pod, completions: i32) -> Option<i32> {
    let text = pod.metadata.annotations.as_ref()?.get(INDEX_KEY)?;
    text.parse::<i32>()
        .ok()
        .filter(|i| (0..completions).contains(i))
}

/// The indexes of `completedIndexes` (`1,3-5,7`) below `completions`; malformed parts are
/// skipped, as upstream's parser does.
pub fn parse_intervals(text: &str, completions: i32) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
            None => (part.parse::<i32>(), part.parse::<i32>()),
        };
        if let (Ok(first), Ok(last)) = (first, last) {
            out.extend(first.max(0)..=last.min(completions - 1));
        }
    }
    out
}

/// `indexes` as intervals: `{0,1,2,4}` is `0-2,4`, `{1,2}` is `1,2`.
pub fn format_intervals(indexes: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        // Upstream writes two neighbours as a pair, not a range: `1,2`, `1-3`.
        parts.push(match last - first {
            0 => first.to_string(),
            1 => format!("{first},{last}"),
            _ => format!("{first}-{last}"),
        });
    }
    parts.join(",")
}

/// The lowest `count` indexes below `completions` that neither succeeded nor run.
pub fn next_indexes(
    completions: i32,
    succeeded: &BTreeSet<i32>,
    active: &BTreeSet<i32>,
    count: i32,
) -> Vec<i32> {
    (0..completions)
        .filter(|i| !succeeded.contains(i) && !active.contains(i))
        .take(count.max(0) as usize)
        .collect()
}

/// Makes a pod (as JSON, from the Job's template) the pod of `index` for Job `job_name`: the
/// index annotation and label, a name generated from `<job>-<index>-`, the hostname
/// `<job>-<index>`, and `JOB_COMPLETION_INDEX` in every container.
pub fn stamp(pod: &mut Value, job_name: &str, index: i32) {
    let meta = &mut pod["metadata"];
    meta["generateName"] = json!(format!("{job_name}-{index}-"));
    for field in ["annotations", "labels"] {
        if !meta[field].is_object() {
            meta[field] = json!({});
        }
        meta[field][INDEX_KEY] = json!(index.to_string());
    }
    let spec = &mut pod["spec"];
    if spec["hostname"].as_str().is_none_or(str::is_empty) {
        spec["hostname"] = json!(format!("{job_name}-{index}"));
    }
    let env = json!({"name": INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath":
        format!("metadata.annotations['{INDEX_KEY}']")}}});
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter(|c| c.is_object()) {
            if !c["env"].is_array() {
                c["env"] = json!([]);
            }
            if let Some(vars) = c["env"].as_array_mut() {
                if !vars.iter().any(|v| v["name"] == INDEX_ENV) {
                    vars.push(env.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(v: &[i32]) -> BTreeSet<i32> {
        v.iter().copied().collect()
    }

    #[test]
    fn intervals_read_and_write_as_upstream() {
        assert_eq!(format_intervals(&set(&[0, 1, 2, 4])), "0-2,4");
        assert_eq!(format_intervals(&set(&[])), "");
        assert_eq!(format_intervals(&set(&[7])), "7");
        assert_eq!(format_intervals(&set(&[1, 2, 5, 6, 7])), "1,2,5-7");
        assert_eq!(parse_intervals("0-2,4", 10), set(&[0, 1, 2, 4]));
        // Out of range and malformed parts are dropped.
        assert_eq!(parse_intervals("1,x,3-9", 5), set(&[1, 3, 4]));
    }

    #[test]
    fn the_lowest_free_indexes_come_next() {
        assert_eq!(next_indexes(5, &set(&[0]), &set(&[2]), 2), vec![1, 3]);
        assert_eq!(
            next_indexes(3, &set(&[0, 1, 2]), &set(&[]), 2),
            Vec::<i32>::new()
        );
    }

    #[test]
    fn a_pod_is_stamped_with_its_index() {
        let mut pod = json!({"metadata": {"labels": {"app": "x"}},
                             "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}});
        stamp(&mut pod, "sample", 3);
        assert_eq!(pod["metadata"]["generateName"], "sample-3-");
        assert_eq!(pod["metadata"]["annotations"][INDEX_KEY], "3");
        assert_eq!(pod["metadata"]["labels"][INDEX_KEY], "3");
        assert_eq!(pod["metadata"]["labels"]["app"], "x");
        assert_eq!(pod["spec"]["hostname"], "sample-3");
        assert_eq!(pod["spec"]["containers"][0]["env"][1]["name"], INDEX_ENV);
    }

    proptest! {
        #[test]
        fn intervals_round_trip(indexes in proptest::collection::btree_set(0i32..200, 0..50)) {
            let text = format_intervals(&indexes);
            prop_assert_eq!(parse_intervals(&text, 200), indexes);
        }

        #[test]
        fn any_text_parses_without_panic(text in ".{0,40}", completions in 0i32..1000) {
            let parsed = parse_intervals(&text, completions);
            prop_assert!(parsed.iter().all(|i| (0..completions).contains(i)));
        }
    }
}
