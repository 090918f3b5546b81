//! OpenShift's bootstrap roles that its documentation's `oc` procedures name, in the words of
//! OpenShift's bootstrap policy: `basic-user` (who am I, which projects may I see),
//! `self-provisioner` (`oc new-project`), `cluster-reader` (read everything but secrets), and
//! the project rights the aggregated `admin` and `view` roles carry in OpenShift.

use super::roles::{TO_ADMIN, TO_VIEW};
use super::{named, rule, ClusterRole, Subject, READ};

/// The machine config daemon's role, and its ServiceAccount in
/// `openshift-machine-config-operator` (its user is
/// `system:serviceaccount:openshift-machine-config-operator:machine-config-daemon`).
pub const MACHINE_CONFIG_DAEMON: &str = "machine-config-daemon";
pub const MACHINE_CONFIG_OPERATOR_NAMESPACE: &str = "openshift-machine-config-operator";

/// The label that puts a role's rules into `cluster-reader`.
pub const TO_CLUSTER_READER: &str = "rbac.authorization.k8s.io/aggregate-to-cluster-reader";

pub fn cluster_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "basic-user",
            vec![
                named(&["user.openshift.io"], &["users"], &["~"], &["get"]),
                rule(&["project.openshift.io"], &["projectrequests"], &["list"]),
                rule(&["project.openshift.io"], &["projects"], &["list", "watch"]),
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["clusterroles"],
                    &["get", "list"],
                ),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list"]),
            ],
        ),
        ClusterRole::new(
            "self-provisioner",
            vec![rule(
                &["project.openshift.io"],
                &["projectrequests"],
                &["create"],
            )],
        ),
        ClusterRole::aggregated("cluster-reader", TO_CLUSTER_READER, &[]),
        ClusterRole::new(
            "system:openshift:aggregate-to-cluster-reader",
            vec![
                rule(
                    &[""],
                    &[
                        "componentstatuses",
                        "nodes",
                        "nodes/status",
                        "persistentvolumes",
                        "persistentvolumes/status",
                        "namespaces",
                        "namespaces/status",
                    ],
                    READ,
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &[
                        "clusterroles",
                        "clusterrolebindings",
                        "roles",
                        "rolebindings",
                    ],
                    READ,
                ),
                rule(
                    &["storage.k8s.io"],
                    &[
                        "storageclasses",
                        "csidrivers",
                        "csinodes",
                        "volumeattachments",
                    ],
                    READ,
                ),
                rule(&["scheduling.k8s.io"], &["priorityclasses"], READ),
                rule(&["coordination.k8s.io"], &["leases"], READ),
                rule(
                    &["flowcontrol.apiserver.k8s.io"],
                    &["flowschemas", "prioritylevelconfigurations"],
                    READ,
                ),
                rule(&["metrics.k8s.io"], &["nodes", "pods"], READ),
                rule(&["project.openshift.io"], &["projects"], READ),
                rule(
                    &["user.openshift.io"],
                    &["users", "groups", "identities"],
                    READ,
                ),
                rule(
                    &["machineconfiguration.openshift.io"],
                    &["machineconfigpools", "kubeletconfigs", "machineconfigs"],
                    READ,
                ),
            ],
        )
        .labelled(&[TO_CLUSTER_READER]),
        // The machine config daemon of each node reads its node's configurations and writes
        // its node's `currentConfig`/`state` annotations (OpenShift's `machine-config-daemon`
        // role; the Node authorizer would not let a kubelet read MachineConfigs).
        ClusterRole::new(
            MACHINE_CONFIG_DAEMON,
            vec![
                rule(
                    &[""],
                    &["nodes"],
                    &["get", "list", "watch", "patch", "update"],
                ),
                rule(
                    &["machineconfiguration.openshift.io"],
                    &["machineconfigs", "machineconfigpools"],
                    READ,
                ),
                rule(
                    &["", "events.k8s.io"],
                    &["events"],
                    &["create", "patch", "update"],
                ),
            ],
        ),
        ClusterRole::new(
            "system:openshift:aggregate-to-admin",
            vec![
                rule(
                    &["project.openshift.io"],
                    &["projects"],
                    &["delete", "get", "patch", "update"],
                ),
                rule(
                    &["authorization.openshift.io"],
                    &["localresourceaccessreviews"],
                    &["create"],
                ),
            ],
        )
        .labelled(&[TO_ADMIN]),
        ClusterRole::new(
            "system:openshift:aggregate-to-view",
            vec![rule(&["project.openshift.io"], &["projects"], &["get"])],
        )
        .labelled(&[TO_VIEW]),
    ]
}

/// (binding, role, subjects): every authenticated user may see who they are and request
/// projects (OpenShift grants `self-provisioner` to `system:authenticated:oauth`, the users of
/// its OAuth server; berth has none, so to every authenticated user; remove the binding's
/// subject to turn self-provisioning off, as OpenShift's documentation does).
pub(super) fn cluster_role_bindings() -> Vec<(&'static str, &'static str, Vec<Subject>)> {
    vec![
        (
            "basic-users",
            "basic-user",
            vec![Subject::Group("system:authenticated")],
        ),
        (
            "self-provisioners",
            "self-provisioner",
            vec![Subject::Group("system:authenticated")],
        ),
        (
            MACHINE_CONFIG_DAEMON,
            MACHINE_CONFIG_DAEMON,
            vec![Subject::Account(
                MACHINE_CONFIG_OPERATOR_NAMESPACE,
                MACHINE_CONFIG_DAEMON,
            )],
        ),
    ]
}
