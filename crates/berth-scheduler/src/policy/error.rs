//! Load errors: every problem found in a policy file, each naming its entry.

use std::fmt;

/// A policy could not be loaded. Lists every problem found, not only the first.
///
/// Displays as `invalid scheduler policy[ file F]: ` followed by the one error, or by
/// `[e1, e2, ...]` when there are several (upstream's aggregate format); each error reads
/// `<entry>: <message>`.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The file the policy came from, when loaded with [`super::Policy::from_file`].
    pub file: Option<String>,
    /// Every problem found, in document order.
    pub errors: Vec<PolicyEntryError>,
}

/// One problem with one entry of a policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEntryError {
    /// Where: `predicates[2] (Foo)`, `priorities[0] (Zone)`, `extenders[1] (http://x)`,
    /// `hardPodAffinitySymmetricWeight`, `priorities`, or `line 3, column 7` for syntax errors.
    pub entry: String,
    /// What is wrong, with upstream's message text where upstream has one.
    pub message: String,
}

impl PolicyError {
    /// Builds an error for `file` (if known) from its problems.
    pub fn new(file: Option<String>, errors: Vec<PolicyEntryError>) -> Self {
        PolicyError { file, errors }
    }
}

impl PolicyEntryError {
    /// Builds one problem for `entry`.
    pub fn new(entry: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyEntryError {
            entry: entry.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for PolicyEntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.entry, self.message)
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid scheduler policy")?;
        if let Some(file) = &self.file {
            write!(f, " file {file}")?;
        }
        f.write_str(": ")?;
        match self.errors.as_slice() {
            [] => f.write_str("unknown error"),
            [one] => write!(f, "{one}"),
            many => {
                f.write_str("[")?;
                for (i, e) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str("]")
            }
        }
    }
}
