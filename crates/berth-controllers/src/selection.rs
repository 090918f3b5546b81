//! `--controllers`: which controllers run, by kube-controller-manager's names. `*` enables
//! every controller that is on by default, `name` enables one, `-name` disables one; the
//! names before 1.28 (`deployment`, `namespace`, ...) are accepted as aliases.

use std::collections::BTreeSet;

/// Every controller berth runs: upstream's name and its alias from before 1.28.
pub const CONTROLLERS: &[(&str, &str)] = &[
    ("certificatesigningrequest-signing-controller", "csrsigning"),
    (
        "clusterrole-aggregation-controller",
        "clusterrole-aggregation",
    ),
    ("cronjob-controller", "cronjob"),
    ("daemonset-controller", "daemonset"),
    ("deployment-controller", "deployment"),
    ("disruption-controller", "disruption"),
    ("endpoints-controller", "endpoint"),
    ("endpointslice-controller", "endpointslice"),
    ("garbage-collector-controller", "garbagecollector"),
    (
        "horizontal-pod-autoscaler-controller",
        "horizontalpodautoscaling",
    ),
    ("job-controller", "job"),
    // OpenShift's machine-config-controller: KubeletConfigs, pools' rendered configurations
    // and their rollout over the nodes.
    ("machine-config-controller", "machineconfig"),
    ("namespace-controller", "namespace"),
    ("node-lifecycle-controller", "nodelifecycle"),
    (
        "persistentvolume-binder-controller",
        "persistentvolume-binder",
    ),
    ("pod-garbage-collector-controller", "podgc"),
    ("replicaset-controller", "replicaset"),
    ("replicationcontroller-controller", "replicationcontroller"),
    ("resourcequota-controller", "resourcequota"),
    (
        "root-ca-certificate-publisher-controller",
        "root-ca-cert-publisher",
    ),
    ("serviceaccount-controller", "serviceaccount"),
    ("serviceaccount-token-controller", "serviceaccount-token"),
    ("statefulset-controller", "statefulset"),
    ("taint-eviction-controller", "taint-eviction-controller"),
    ("ttl-after-finished-controller", "ttl-after-finished"),
];

/// The controllers to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    enabled: BTreeSet<&'static str>,
}

impl Default for Selection {
    /// `--controllers=*`: all of them.
    fn default() -> Selection {
        Selection {
            enabled: CONTROLLERS.iter().map(|(name, _)| *name).collect(),
        }
    }
}

impl Selection {
    /// The selection a `--controllers` list makes (`["*"]` by default). An unknown name is an
    /// error in upstream's words.
    pub fn parse(list: &[String]) -> Result<Selection, String> {
        let mut star = false;
        let mut on = BTreeSet::new();
        let mut off = BTreeSet::new();
        for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            if item == "*" {
                star = true;
                continue;
            }
            let (negated, name) = match item.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, item),
            };
            let canonical = CONTROLLERS
                .iter()
                .find(|(c, alias)| *c == name || *alias == name)
                .map(|(c, _)| *c)
                .ok_or_else(|| format!("{name:?} is not in the list of known controllers"))?;
            if negated {
                off.insert(canonical);
            } else {
                on.insert(canonical);
            }
        }
        let enabled = CONTROLLERS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !off.contains(c) && (star || on.contains(c)))
            .collect();
        Ok(Selection { enabled })
    }

    /// Whether the controller named `name` (upstream's name) runs.
    pub fn enabled(&self, name: &str) -> bool {
        self.enabled.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Result<Selection, String> {
        Selection::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_star_enables_every_controller() {
        let all = parse(&["*"]).unwrap();
        assert_eq!(all, Selection::default());
        assert!(CONTROLLERS.iter().all(|(c, _)| all.enabled(c)));
    }

    #[test]
    fn a_dash_disables_one_controller_by_its_name_or_alias() {
        let s = parse(&["*", "-namespace-controller", "-podgc"]).unwrap();
        assert!(!s.enabled("namespace-controller"));
        assert!(!s.enabled("pod-garbage-collector-controller"));
        assert!(s.enabled("deployment-controller"));
    }

    #[test]
    fn without_a_star_only_the_named_controllers_run() {
        let s = parse(&["namespace-controller", "deployment"]).unwrap();
        assert!(s.enabled("namespace-controller"));
        assert!(s.enabled("deployment-controller"));
        assert!(!s.enabled("replicaset-controller"));
        let none = parse(&["-*"]);
        assert_eq!(
            none.unwrap_err(),
            "\"*\" is not in the list of known controllers"
        );
    }

    #[test]
    fn an_unknown_controller_is_refused_in_upstreams_words() {
        assert_eq!(
            parse(&["*", "-bogus"]).unwrap_err(),
            "\"bogus\" is not in the list of known controllers"
        );
    }
}
