//! The ServiceAccount controller (upstream `pkg/controller/serviceaccount`): every active
//! namespace has a `default` ServiceAccount; one that is deleted comes back.
//!
//! The engine ([`missing`]) names the namespaces that lack it; the driver ([`run`]) watches
//! namespaces and ServiceAccounts and creates what is missing.

mod driver;

pub use driver::run;

use std::collections::HashSet;

/// The account every namespace gets.
pub const DEFAULT: &str = "default";

/// A namespace as the controller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub name: String,
    /// Phase `Active` and no deletion timestamp: a terminating namespace takes no new objects.
    pub active: bool,
}

/// The active namespaces whose `default` ServiceAccount is missing; `accounts` holds the
/// (namespace, name) of every ServiceAccount.
pub fn missing(namespaces: &[Namespace], accounts: &HashSet<(String, String)>) -> Vec<String> {
    let mut out: Vec<String> = namespaces
        .iter()
        .filter(|ns| ns.active && !accounts.contains(&(ns.name.clone(), DEFAULT.to_string())))
        .map(|ns| ns.name.clone())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, active: bool) -> Namespace {
        Namespace {
            name: name.into(),
            active,
        }
    }

    #[test]
    fn active_namespaces_without_a_default_account_get_one() {
        let accounts: HashSet<(String, String)> = [
            ("default".to_string(), "default".to_string()),
            ("team".to_string(), "builder".to_string()),
        ]
        .into();
        let namespaces = [
            ns("team", true),
            ns("default", true),
            ns("going", false),
            ns("new", true),
        ];
        assert_eq!(missing(&namespaces, &accounts), ["new", "team"]);
    }
}
