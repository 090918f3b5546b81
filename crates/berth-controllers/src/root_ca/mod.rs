//! The root CA certificate publisher, as upstream's `pkg/controller/certificates/rootcacertpublisher`:
//! every namespace has a ConfigMap `kube-root-ca.crt` holding the cluster CA (`ca.crt`), which
//! every pod's projected ServiceAccount token volume mounts. Pure: the namespaces and the
//! ConfigMaps as found in, the writes out; the [`driver`] makes them.

pub(crate) mod driver;

use std::collections::BTreeMap;

/// The ConfigMap's name in every namespace.
pub const NAME: &str = "kube-root-ca.crt";
/// Its key holding the CA bundle.
pub const KEY: &str = "ca.crt";
/// The annotation upstream sets on it.
pub const DESCRIPTION_KEY: &str = "kubernetes.io/description";
/// Upstream's words for what it is.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// One namespace's `kube-root-ca.crt` as found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub data: BTreeMap<String, String>,
    pub description: Option<String>,
}

/// What the publisher does in one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    Create,
    /// The data or the annotation differ from the CA: put them back.
    Update,
}

/// What `namespace` (active or not) needs, its ConfigMap being `found`.
pub fn decide(active: bool, found: Option<&Published>, ca: &str) -> Option<Write> {
    match found {
        None if active => Some(Write::Create),
        None => None,
        Some(p) => {
            let same_data = p.data.len() == 1 && p.data.get(KEY).map(String::as_str) == Some(ca);
            (!same_data || p.description.as_deref() != Some(DESCRIPTION)).then_some(Write::Update)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(ca: &str, description: Option<&str>) -> Published {
        Published {
            data: [(KEY.to_string(), ca.to_string())].into(),
            description: description.map(str::to_string),
        }
    }

    #[test]
    fn an_active_namespace_without_the_configmap_gets_one() {
        assert_eq!(decide(true, None, "CA"), Some(Write::Create));
    }

    #[test]
    fn a_terminating_namespace_gets_none() {
        assert_eq!(decide(false, None, "CA"), None);
    }

    #[test]
    fn a_configmap_holding_the_ca_is_left_alone() {
        assert_eq!(
            decide(true, Some(&published("CA", Some(DESCRIPTION))), "CA"),
            None
        );
    }

    #[test]
    fn a_changed_ca_extra_keys_or_a_lost_annotation_are_put_back() {
        assert_eq!(
            decide(true, Some(&published("OLD", Some(DESCRIPTION))), "CA"),
            Some(Write::Update)
        );
        let mut extra = published("CA", Some(DESCRIPTION));
        extra.data.insert("x".into(), "y".into());
        assert_eq!(decide(true, Some(&extra), "CA"), Some(Write::Update));
        assert_eq!(
            decide(true, Some(&published("CA", None)), "CA"),
            Some(Write::Update)
        );
    }
}
