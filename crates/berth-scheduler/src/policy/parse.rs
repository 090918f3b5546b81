//! Policy text to a document tree (`serde_json::Value`): JSON, YAML, and the documentation's
//! printed forms.
//!
//! The text is tried, in order, as JSON (when it starts with `{`), as YAML, and then as YAML
//! after [`documentation_form`] repairs the layouts that the OpenShift documentation prints
//! (seed 002, 16.2.4.1 and 16.2.8) and a reader pastes: `...` lines standing for elided
//! entries, callout numbers after values (`- name: "RackSpread" 4`), and the "sample modified"
//! file's JSON lists inside YAML with a comma and extra indentation between them. When every
//! attempt fails, the error of the first strict attempt is reported, with its line and column.

use serde_json::Value;

use super::PolicyEntryError;

/// Parses policy text into a document tree.
pub(crate) fn document(text: &str) -> Result<Value, PolicyEntryError> {
    let looks_like_json = text.trim_start().starts_with('{');
    let json_error = if looks_like_json {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => return Ok(value),
            Err(e) => Some(PolicyEntryError::new(
                format!("line {}, column {}", e.line(), e.column()),
                format!("malformed JSON: {}", strip_json_position(&e.to_string())),
            )),
        }
    } else {
        None
    };
    let yaml_error = match yaml(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    if let Some(repaired) = documentation_form(text) {
        if let Ok(value) = yaml(&repaired) {
            return Ok(value);
        }
    }
    Err(json_error.unwrap_or(yaml_error))
}

/// Parses YAML into a value tree, turning the parser's error into a located entry error.
fn yaml(text: &str) -> Result<Value, PolicyEntryError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
        let message = strip_yaml_position(&first_line);
        match e.location() {
            Some(l) if l.line() > 0 => PolicyEntryError::new(
                format!("line {}, column {}", l.line(), l.column()),
                format!("malformed YAML: {message}"),
            ),
            _ => PolicyEntryError::new("document", format!("malformed YAML: {message}")),
        }
    })
}

/// `expected value at line 1 column 2` → `expected value` (the position is in the entry).
fn strip_json_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// `error: line 4 column 3: unclosed bracket` → `unclosed bracket`.
fn strip_yaml_position(message: &str) -> String {
    let rest = message.strip_prefix("error: ").unwrap_or(message);
    if let Some(after_line) = rest.strip_prefix("line ") {
        if let Some(i) = after_line.find(": ") {
            return after_line[i + 2..].to_string();
        }
    }
    rest.to_string()
}

/// Bracket depth and quoting state while scanning lines.
#[derive(Default)]
struct Scanner {
    depth: usize,
    quote: Option<char>,
}

impl Scanner {
    /// Scans one line; returns the byte index where a comment starts (if any).
    fn scan(&mut self, line: &str) -> Option<usize> {
        let mut prev: Option<char> = None;
        let mut escaped = false;
        for (i, c) in line.char_indices() {
            match self.quote {
                Some('"') => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        self.quote = None;
                    }
                }
                Some(_) => {
                    if c == '\'' {
                        self.quote = None;
                    }
                }
                None => {
                    let at_token_start =
                        matches!(prev, None | Some(' ' | '\t' | '[' | '{' | ',' | ':'));
                    match c {
                        '"' | '\'' if at_token_start => self.quote = Some(c),
                        '#' if matches!(prev, None | Some(' ' | '\t')) => return Some(i),
                        '[' | '{' => self.depth += 1,
                        ']' | '}' => self.depth = self.depth.saturating_sub(1),
                        _ => {}
                    }
                }
            }
            prev = Some(c);
        }
        None
    }
}

/// Rewrites the documentation's printed layouts into plain YAML, keeping line numbers.
/// Returns `None` when nothing needed repair.
pub(crate) fn documentation_form(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut scanner = Scanner::default();
    let mut changed = false;
    // Indentation of the key that opened the last top-level flow collection, once it closed.
    let mut closed_flow_indent: Option<usize> = None;
    let mut open_flow_indent = 0;

    for (n, raw) in lines.iter().enumerate() {
        let depth_before = scanner.depth;
        let comment_at = scanner.scan(raw);
        let depth_after = scanner.depth;
        let code = match comment_at {
            Some(i) => &raw[..i],
            None => raw,
        };
        let mut line = raw.to_string();

        if depth_before == 0 && code.trim() == "..." {
            out.push(String::new());
            changed = true;
            continue;
        }
        if depth_before == 0 && depth_after == 0 {
            if let Some(stripped) = strip_callout(code, lines.get(n + 1..).unwrap_or(&[]), indent) {
                line = stripped;
                changed = true;
            }
        }
        if depth_before == 0 {
            if let Some(base) = closed_flow_indent {
                if indent(&line) > base && is_key_line(&line) {
                    line = format!("{}{}", " ".repeat(base), line.trim_start());
                    changed = true;
                }
            }
        }
        if depth_before == 0 && depth_after > 0 {
            open_flow_indent = indent(&line);
            closed_flow_indent = None;
        }
        if depth_before > 0 && depth_after == 0 {
            let trimmed = code.trim_end();
            if let Some(without_comma) = trimmed.strip_suffix(',') {
                line = without_comma.to_string();
                changed = true;
            }
            closed_flow_indent = Some(open_flow_indent);
        } else if depth_before == 0
            && depth_after == 0
            && !code.trim().is_empty()
            && (!is_key_line(&line) || indent(&line) <= open_flow_indent)
        {
            closed_flow_indent = None;
        }
        out.push(line);
    }
    changed.then(|| out.join("\n"))
}

/// Whether a line begins a mapping entry (`key:` or `"key":`).
fn is_key_line(line: &str) -> bool {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('"') {
        return rest
            .find('"')
            .is_some_and(|end| rest[end + 1..].trim_start().starts_with(':'));
    }
    match t.find(':') {
        Some(i) => {
            i > 0
                && t[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && t[i + 1..].chars().next().is_none_or(|c| c == ' ')
        }
        None => false,
    }
}

/// Removes a trailing callout number (`"RackSpread" 4`, or `serviceAffinity: 2` whose value
/// is the indented block below) from a block-context line.
fn strip_callout(code: &str, rest: &[&str], indent: impl Fn(&str) -> usize) -> Option<String> {
    let trimmed = code.trim_end();
    let digits = trimmed.len() - trimmed.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 2 {
        return None;
    }
    let before = &trimmed[..trimmed.len() - digits];
    if !before.ends_with(' ') {
        return None;
    }
    let before = before.trim_end();
    if before.ends_with('"') || before.ends_with('\'') {
        return Some(before.to_string());
    }
    if before.ends_with(':') {
        let next = rest.iter().find(|l| !l.trim().is_empty())?;
        if indent(next) > indent(code) {
            return Some(before.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_are_located() {
        let e = document("{\n  \"kind\": \"Policy\",\n  \"predicates\": [\n}").unwrap_err();
        assert!(e.entry.starts_with("line 4, column"), "{e}");
        assert!(e.message.starts_with("malformed JSON"), "{e}");
    }

    #[test]
    fn yaml_errors_are_located() {
        let e = document("kind: Policy\npredicates: [\n").unwrap_err();
        assert!(e.entry.starts_with("line "), "{e}");
        assert!(e.message.starts_with("malformed YAML"), "{e}");
    }

    #[test]
    fn callouts_and_elisions_are_repaired() {
        let text = "kind: Policy\npredicates:\n...\n  - name: \"A\" 1\n    argument:\n      x: 2\n        y: 3\n  - name: B\n    weight: 1\n";
        let repaired = documentation_form(text).unwrap();
        assert_eq!(
            repaired,
            "kind: Policy\npredicates:\n\n  - name: \"A\"\n    argument:\n      x:\n        y: 3\n  - name: B\n    weight: 1"
        );
    }

    #[test]
    fn json_lists_inside_yaml_are_repaired() {
        let text = "kind: \"Policy\"\n\"a\": [\n  1\n    ],\n    \"b\": [\n 2 ]\n";
        let value = document(text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"kind": "Policy", "a": [1], "b": [2]})
        );
    }

    #[test]
    fn valid_text_is_not_rewritten() {
        assert_eq!(
            documentation_form("a: 1\nb: [1, 2]\nc: \"x # y\" # z\n"),
            None
        );
    }
}
