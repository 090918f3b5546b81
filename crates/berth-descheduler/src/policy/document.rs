//! Policy text to a document tree: JSON, YAML, and YAML as the seed prints it with callout
//! numbers after values (`numberOfNodes: 3 3`, `thresholds: 1`, `- "required…" 2`).

use super::FieldError;
use serde_json::Value;

/// Parses the text as JSON (when it starts with `{`) or YAML; when that fails, once more with
/// the seed's callout numbers removed. The first attempt's error is the one reported.
pub(crate) fn document(text: &str) -> Result<Value, FieldError> {
    let strict = parse(text);
    match strict {
        Ok(v) => Ok(v),
        Err(e) => match without_callouts(text) {
            Some(repaired) => parse(&repaired).map_err(|_| e),
            None => Err(e),
        },
    }
}

fn parse(text: &str) -> Result<Value, FieldError> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| {
            FieldError::new(
                "policy",
                &format!("line {}, column {}", e.line(), e.column()),
                format!("malformed JSON: {e}"),
            )
        });
    }
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        let at = match e.location() {
            Some(l) if l.line() > 0 => format!("line {}, column {}", l.line(), l.column()),
            _ => "(document)".to_string(),
        };
        FieldError::new("policy", &at, format!("malformed YAML: {first}"))
    })
}

/// The text with trailing callout numbers removed, or `None` when there are none.
///
/// A trailing ` <digits>` is a callout when it follows a value (`enabled: false 1`,
/// `numberOfNodes: 3 3`, `- "x" 2`), or when it is the only value of a key whose next line is
/// indented deeper (`thresholds: 1`, `"RemoveDuplicates": 1`): a mapping follows, not a number.
pub(crate) fn without_callouts(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut changed = false;
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_end();
        let Some((head, tail)) = trimmed.rsplit_once(' ') else {
            out.push(line.to_string());
            continue;
        };
        let is_number = !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit());
        let head_trim = head.trim_end();
        let next_deeper = lines[i + 1..]
            .iter()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| indent(l) > indent(line));
        let after_value = !head_trim.ends_with(':')
            && (head_trim.contains(": ") || head_trim.trim_start().starts_with("- "));
        let key_then_mapping = head_trim.ends_with(':') && next_deeper;
        if is_number && (after_value || key_then_mapping) {
            out.push(head_trim.to_string());
            changed = true;
        } else {
            out.push(line.to_string());
        }
    }
    changed.then(|| out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_callouts_are_read_past() {
        let text = "strategies:\n  \"LowNodeUtilization\":\n     enabled: true\n     params:\n       nodeResourceUtilizationThresholds:\n         thresholds: 1\n           \"cpu\" : 20\n         numberOfNodes: 3 3\n  \"RemovePodsViolatingNodeAffinity\": 1\n    enabled: true\n    params:\n      nodeAffinityType:\n      - \"requiredDuringSchedulingIgnoredDuringExecution\" 2\n";
        let v = document(text).unwrap();
        let t =
            &v["strategies"]["LowNodeUtilization"]["params"]["nodeResourceUtilizationThresholds"];
        assert_eq!(t["thresholds"]["cpu"], 20);
        assert_eq!(t["numberOfNodes"], 3);
        assert_eq!(
            v["strategies"]["RemovePodsViolatingNodeAffinity"]["params"]["nodeAffinityType"][0],
            "requiredDuringSchedulingIgnoredDuringExecution"
        );
    }

    #[test]
    fn a_plain_number_value_is_kept() {
        let v = document("a: 3\nb:\n  c: 4\n").unwrap();
        assert_eq!(v["a"], 3);
        assert_eq!(v["b"]["c"], 4);
    }
}
