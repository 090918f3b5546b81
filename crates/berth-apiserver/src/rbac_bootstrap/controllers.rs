//! The `system:controller:<name>` roles of the controllers berth runs, each bound to the
//! ServiceAccount `kube-system/<name>` the controller acts as (upstream's
//! `bootstrappolicy/controller_policy.go`, kube-controller-manager with
//! `--use-service-account-credentials`).

use super::{rule, ClusterRole, EVENT_WRITE, READ};

/// The prefix of a controller's role and binding name.
pub const PREFIX: &str = "system:controller:";

/// Every controller also records events.
fn events() -> serde_json::Value {
    rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE)
}

fn controller(name: &str, mut rules: Vec<serde_json::Value>) -> ClusterRole {
    rules.push(events());
    ClusterRole::new(&format!("{PREFIX}{name}"), rules)
}

/// The controllers' roles, by controller (ServiceAccount) name.
pub fn cluster_roles() -> Vec<ClusterRole> {
    vec![
        // Signs approved requests: writes their status.
        controller(
            "certificate-controller",
            vec![
                rule(
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                    &["delete", "get", "list", "watch"],
                ),
                rule(
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/approval",
                        "certificatesigningrequests/status",
                    ],
                    &["update"],
                ),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
            ],
        ),
        controller(
            "clusterrole-aggregation-controller",
            // `escalate`: it writes rules it does not itself hold.
            vec![rule(
                &["rbac.authorization.k8s.io"],
                &["clusterroles"],
                &["escalate", "get", "list", "patch", "update", "watch"],
            )],
        ),
        // OpenShift's machine-config-controller (berth runs it with the controllers):
        // KubeletConfigs into MachineConfigs, pools' rendered configurations, the nodes'
        // `desiredConfig` annotations.
        controller(
            "machine-config-controller",
            vec![
                rule(
                    &["machineconfiguration.openshift.io"],
                    &["machineconfigs", "machineconfigpools", "kubeletconfigs"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
                rule(
                    &["machineconfiguration.openshift.io"],
                    &["machineconfigpools/status", "kubeletconfigs/status"],
                    &["patch", "update"],
                ),
                rule(&[""], &["nodes"], &["get", "list", "patch", "watch"]),
            ],
        ),
        controller(
            "cronjob-controller",
            vec![
                rule(
                    &["batch"],
                    &["cronjobs"],
                    &["get", "list", "update", "watch"],
                ),
                rule(
                    &["batch"],
                    &["jobs"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
                rule(&["batch"], &["cronjobs/status"], &["update"]),
                rule(&["batch"], &["cronjobs/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["delete", "list", "watch"]),
            ],
        ),
        controller(
            "daemon-set-controller",
            vec![
                rule(&["apps", "extensions"], &["daemonsets"], READ),
                rule(&["apps", "extensions"], &["daemonsets/status"], &["update"]),
                rule(
                    &["apps", "extensions"],
                    &["daemonsets/finalizers"],
                    &["update"],
                ),
                rule(&[""], &["nodes"], &["list", "watch"]),
                rule(
                    &[""],
                    &["pods"],
                    &["create", "delete", "list", "patch", "watch"],
                ),
                rule(&[""], &["pods/binding"], &["create"]),
                rule(
                    &["apps"],
                    &["controllerrevisions"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
            ],
        ),
        controller(
            "deployment-controller",
            vec![
                rule(
                    &["apps", "extensions"],
                    &["deployments"],
                    &["get", "list", "update", "watch"],
                ),
                rule(
                    &["apps", "extensions"],
                    &["deployments/status"],
                    &["update"],
                ),
                rule(
                    &["apps", "extensions"],
                    &["deployments/finalizers"],
                    &["update"],
                ),
                rule(
                    &["apps", "extensions"],
                    &["replicasets"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
                rule(&[""], &["pods"], &["get", "list", "update", "watch"]),
            ],
        ),
        controller(
            "disruption-controller",
            vec![
                rule(&["apps", "extensions"], &["deployments"], READ),
                rule(&["apps", "extensions"], &["replicasets"], READ),
                rule(&[""], &["replicationcontrollers"], READ),
                rule(&["policy"], &["poddisruptionbudgets"], READ),
                rule(&["apps"], &["statefulsets"], READ),
                rule(&["policy"], &["poddisruptionbudgets/status"], &["update"]),
                rule(&["*"], &["*/scale"], &["get"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
            ],
        ),
        controller(
            "endpoint-controller",
            vec![
                rule(&[""], &["pods", "services"], READ),
                rule(
                    &[""],
                    &["endpoints"],
                    &["create", "delete", "get", "list", "update", "watch"],
                ),
                rule(&[""], &["endpoints/restricted"], &["create"]),
            ],
        ),
        controller(
            "endpointslice-controller",
            vec![
                rule(&[""], &["nodes", "pods", "services"], READ),
                rule(
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                    &["create", "delete", "get", "list", "update", "watch"],
                ),
            ],
        ),
        controller(
            "generic-garbage-collector",
            vec![rule(
                &["*"],
                &["*"],
                &["delete", "get", "list", "patch", "update", "watch"],
            )],
        ),
        // Reads autoscalers, pods and their metrics; writes scales and autoscaler status.
        controller(
            "horizontal-pod-autoscaler",
            vec![
                rule(
                    &["autoscaling"],
                    &["horizontalpodautoscalers"],
                    &["get", "list", "watch"],
                ),
                rule(
                    &["autoscaling"],
                    &["horizontalpodautoscalers/status"],
                    &["update"],
                ),
                rule(&["*"], &["*/scale"], &["get", "update"]),
                rule(&[""], &["pods"], &["list"]),
                rule(&["metrics.k8s.io"], &["pods"], &["list"]),
                rule(&["custom.metrics.k8s.io"], &["*"], &["get", "list"]),
                rule(&["external.metrics.k8s.io"], &["*"], &["get", "list"]),
            ],
        ),
        controller(
            "job-controller",
            vec![
                rule(
                    &["batch"],
                    &["jobs"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(&["batch"], &["jobs/status"], &["update"]),
                rule(&["batch"], &["jobs/finalizers"], &["update"]),
                rule(
                    &[""],
                    &["pods"],
                    &["create", "delete", "list", "patch", "watch"],
                ),
            ],
        ),
        controller(
            "namespace-controller",
            vec![
                rule(&[""], &["namespaces"], &["delete", "get", "list", "watch"]),
                rule(
                    &[""],
                    &["namespaces/finalize", "namespaces/status"],
                    &["update"],
                ),
                rule(
                    &["*"],
                    &["*"],
                    &["delete", "deletecollection", "get", "list"],
                ),
            ],
        ),
        controller(
            "node-controller",
            vec![
                rule(
                    &[""],
                    &["nodes"],
                    &["delete", "get", "list", "patch", "update", "watch"],
                ),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                // The taint eviction controller acts with these credentials too.
                rule(&[""], &["pods"], &["delete", "get", "list", "watch"]),
            ],
        ),
        controller(
            "persistent-volume-binder",
            vec![
                rule(
                    &[""],
                    &["persistentvolumes"],
                    &["create", "delete", "get", "list", "update", "watch"],
                ),
                rule(&[""], &["persistentvolumes/status"], &["update"]),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "update", "watch"],
                ),
                rule(&[""], &["persistentvolumeclaims/status"], &["update"]),
                rule(
                    &["storage.k8s.io"],
                    &["storageclasses"],
                    &["get", "list", "watch"],
                ),
            ],
        ),
        controller(
            "pod-garbage-collector",
            vec![
                rule(&[""], &["pods"], &["delete", "list", "watch"]),
                rule(&[""], &["nodes"], &["get", "list"]),
                rule(&[""], &["pods/status"], &["patch"]),
            ],
        ),
        controller(
            "replicaset-controller",
            vec![
                rule(
                    &["apps", "extensions"],
                    &["replicasets"],
                    &["get", "list", "update", "watch"],
                ),
                rule(
                    &["apps", "extensions"],
                    &["replicasets/status"],
                    &["update"],
                ),
                rule(
                    &["apps", "extensions"],
                    &["replicasets/finalizers"],
                    &["update"],
                ),
                rule(
                    &[""],
                    &["pods"],
                    &["create", "delete", "list", "patch", "watch"],
                ),
            ],
        ),
        controller(
            "replication-controller",
            vec![
                rule(
                    &[""],
                    &["replicationcontrollers"],
                    &["get", "list", "update", "watch"],
                ),
                rule(&[""], &["replicationcontrollers/status"], &["update"]),
                rule(&[""], &["replicationcontrollers/finalizers"], &["update"]),
                rule(
                    &[""],
                    &["pods"],
                    &["create", "delete", "list", "patch", "watch"],
                ),
            ],
        ),
        // Upstream's: reads every kind a quota may count, writes quota status.
        controller(
            "resourcequota-controller",
            vec![
                rule(&["*"], &["*"], &["list", "watch"]),
                rule(&[""], &["resourcequotas/status"], &["update"]),
                rule(&[""], &["events"], &["create", "patch", "update"]),
            ],
        ),
        controller(
            "root-ca-cert-publisher",
            vec![rule(&[""], &["configmaps"], &["create", "update"])],
        ),
        controller(
            "service-account-controller",
            vec![rule(&[""], &["serviceaccounts"], &["create"])],
        ),
        controller(
            "ttl-after-finished-controller",
            vec![rule(
                &["batch"],
                &["jobs"],
                &["delete", "get", "list", "watch"],
            )],
        ),
        controller(
            "statefulset-controller",
            vec![
                rule(
                    &[""],
                    &["pods"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
                rule(&["apps"], &["statefulsets"], READ),
                rule(&["apps"], &["statefulsets/status"], &["update"]),
                rule(&["apps"], &["statefulsets/finalizers"], &["update"]),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["create", "delete", "get", "patch", "update"],
                ),
                rule(
                    &["apps"],
                    &["controllerrevisions"],
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
            ],
        ),
    ]
}
