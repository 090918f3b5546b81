//! Field selectors (`?fieldSelector=spec.nodeName=n1,status.phase!=Failed`), as upstream
//! `apimachinery/pkg/fields`.
//!
//! Terms are `field=value`, `field==value` or `field!=value`, joined by commas. In values,
//! `\,`, `\=` and `\\` escape the special characters; any other escape, or an unescaped `,` or
//! `=` in a value, is an error. Which fields exist is the caller's business: check
//! [`FieldSelector::fields`] against the resource's supported fields and answer 400
//! `field label not supported: <field>` for the others, then match with
//! [`FieldSelector::matches_fn`].

use std::fmt;

/// Why a field selector string was rejected; `message` is upstream's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FieldSelectorError {
    /// Upstream's error message.
    pub message: String,
}

/// The comparison of one field selector term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `=` or `==`: the field equals the value.
    Equals,
    /// `!=`: the field differs from the value.
    NotEquals,
}

/// One `field op value` term, with the value unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `spec.nodeName`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

/// A conjunction of field terms. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Escapes `\`, `,` and `=` in a value (upstream `EscapeValue`).
pub fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Reverses [`escape_value`], rejecting unknown escapes and bare `,`/`=` (upstream `UnescapeValue`).
pub fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(FieldSelectorError {
                        message: format!("invalid field selector: invalid escape sequence: \\{c}"),
                    })
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Upstream prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(FieldSelectorError {
                    message: format!(
                        "invalid field selector: unescaped character in value: {}",
                        c as u32
                    ),
                })
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError {
            message: "invalid field selector: invalid escape sequence: \\".to_string(),
        });
    }
    Ok(out)
}

/// Splits on commas that are not escaped.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Finds the first operator (`!=`, `==`, `=`, checked in that order at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, rhs));
            }
        }
    }
    None
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Parses the string form. Terms are sorted (as raw text) like upstream; empty terms are
    /// skipped. A term without an operator is
    /// `invalid selector: '<selector>'; can't understand '<term>'`.
    pub fn parse(s: &str) -> Result<Self, FieldSelectorError> {
        if s.is_empty() {
            return Ok(FieldSelector::default());
        }
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let (field, operator, rhs) = split_term(part).ok_or_else(|| FieldSelectorError {
                message: format!("invalid selector: '{s}'; can't understand '{part}'"),
            })?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape_value(rhs)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The terms, in upstream order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The distinct field paths the selector mentions, for the caller's support check.
    pub fn fields(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.requirements.iter().map(|r| r.field.as_str()).collect();
        out.dedup();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// True when the selector has no terms.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// If a term requires `field` to equal a value, that value (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether an object matches; `get(field)` returns the object's value for a field, and
    /// `None` counts as the empty string (upstream `Fields.Get`).
    pub fn matches_fn(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = get(&r.field).unwrap_or_default();
            match r.operator {
                FieldOperator::Equals => actual == r.value,
                FieldOperator::NotEquals => actual != r.value,
            }
        })
    }
}

impl fmt::Display for FieldSelector {
    /// `field=value` / `field!=value` terms joined by `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{op}{}", r.field, escape_value(&r.value))?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = FieldSelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn get(field: &str) -> Option<String> {
        match field {
            "spec.nodeName" => Some("n1".into()),
            "status.phase" => Some("Running".into()),
            "metadata.name" => Some("a,b=c".into()),
            _ => None,
        }
    }

    #[test]
    fn kubectl_selectors() {
        let s =
            FieldSelector::parse("spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed")
                .unwrap();
        assert!(s.matches_fn(get));
        assert_eq!(s.fields(), vec!["spec.nodeName", "status.phase"]);
        assert_eq!(s.requirements().len(), 3);
        assert_eq!(s.requires_exact_match("spec.nodeName"), Some("n1"));
        assert!(!FieldSelector::parse("status.phase==Pending")
            .unwrap()
            .matches_fn(get));
        assert!(FieldSelector::parse("spec.missing=")
            .unwrap()
            .matches_fn(get));
        assert!(FieldSelector::parse("").unwrap().matches_fn(get));
        assert!(
            FieldSelector::parse("involvedObject.namespace=,involvedObject.kind=Node")
                .unwrap()
                .matches_fn(|f| (f == "involvedObject.kind").then(|| "Node".to_string()))
        );
    }

    #[test]
    fn escaping() {
        let s = FieldSelector::parse("metadata.name=a\\,b\\=c").unwrap();
        assert!(s.matches_fn(get));
        assert_eq!(s.to_string(), "metadata.name=a\\,b\\=c");
        assert_eq!(
            FieldSelector::parse("a=b\\c").unwrap_err().message,
            "invalid field selector: invalid escape sequence: \\c"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err().message,
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            FieldSelector::parse("a=b\\").unwrap_err().message,
            "invalid field selector: invalid escape sequence: \\"
        );
        assert_eq!(
            FieldSelector::parse("x=1,foo").unwrap_err().message,
            "invalid selector: 'x=1,foo'; can't understand 'foo'"
        );
    }

    proptest! {
        #[test]
        fn round_trip(terms in prop::collection::vec(("[a-z]{1,4}(\\.[a-zA-Z]{1,5})?", any::<bool>(), "\\PC{0,8}"), 0..4)) {
            let mut sel = FieldSelector::default();
            for (field, ne, value) in terms {
                let operator = if ne { FieldOperator::NotEquals } else { FieldOperator::Equals };
                sel.requirements.push(FieldRequirement { field, operator, value });
            }
            let shown = sel.to_string();
            let parsed = FieldSelector::parse(&shown).unwrap();
            let mut a = parsed.requirements.clone();
            let mut b = sel.requirements.clone();
            a.sort_by(|x, y| (&x.field, &x.value).cmp(&(&y.field, &y.value)));
            b.sort_by(|x, y| (&x.field, &x.value).cmp(&(&y.field, &y.value)));
            prop_assert_eq!(a, b);
        }

        #[test]
        fn never_panics(s in "\\PC{0,30}") {
            let _ = FieldSelector::parse(&s);
        }
    }
}
