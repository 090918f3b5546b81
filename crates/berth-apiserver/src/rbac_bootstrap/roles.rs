//! The bootstrap ClusterRoles of people and of the control plane's own components, in the
//! words of upstream's `bootstrappolicy/policy.go` (kube-apiserver 1.32).

use super::{named, rule, urls, ClusterRole, EVENT_WRITE, READ};

/// Read and write, the verbs of upstream's `ReadWrite`.
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Upstream's `Write`: every change, no reading.
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// The labels that put a role's rules into an aggregated role.
pub const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
pub const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
pub const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// `admin`, `edit` and `view`: their rules are whatever the aggregation controller gathers from
/// the roles labelled for them (the `system:aggregate-to-*` roles below, and any user role
/// labelled the same way). `edit` goes into `admin`, `view` into `edit`.
fn user_facing() -> Vec<ClusterRole> {
    vec![
        ClusterRole::aggregated("admin", TO_ADMIN, &[]),
        ClusterRole::aggregated("edit", TO_EDIT, &[TO_ADMIN]),
        // OpenShift's `cluster-reader` gathers what `view` may read, and more.
        ClusterRole::aggregated(
            "view",
            TO_VIEW,
            &[TO_EDIT, super::openshift::TO_CLUSTER_READER],
        ),
        ClusterRole::new(
            "system:aggregate-to-admin",
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    READ_WRITE,
                ),
            ],
        )
        .labelled(&[TO_ADMIN]),
        ClusterRole::new(
            "system:aggregate-to-edit",
            vec![
                rule(&[""], &["serviceaccounts"], &["impersonate"]),
                rule(
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    WRITE,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
                rule(&["batch"], &["cronjobs", "jobs"], WRITE),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                    WRITE,
                ),
                rule(&["policy"], &["poddisruptionbudgets"], WRITE),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                    WRITE,
                ),
                rule(&["coordination.k8s.io"], &["leases"], WRITE),
            ],
        )
        .labelled(&[TO_EDIT]),
        ClusterRole::new(
            "system:aggregate-to-view",
            vec![
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    READ,
                ),
                rule(
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    READ,
                ),
                // At namespace scope, reading namespaces is reading this one.
                rule(&[""], &["namespaces"], READ),
                rule(&["discovery.k8s.io"], &["endpointslices"], READ),
                rule(
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    READ,
                ),
                rule(
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                    READ,
                ),
                rule(
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                    READ,
                ),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                    READ,
                ),
                rule(
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                    READ,
                ),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                    READ,
                ),
            ],
        )
        .labelled(&[TO_VIEW]),
        // As metrics-server installs it: whoever may view may read resource metrics.
        ClusterRole::new(
            "system:aggregated-metrics-reader",
            vec![rule(&["metrics.k8s.io"], &["nodes", "pods"], READ)],
        )
        .labelled(&[TO_VIEW, TO_EDIT, TO_ADMIN]),
    ]
}

/// What everyone, and monitoring, may do.
fn everyone() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        ClusterRole::new(
            "system:basic-user",
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
            ],
        ),
        ClusterRole::new(
            "system:discovery",
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        ClusterRole::new(
            "system:public-info-viewer",
            vec![urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )],
        ),
        // Service accounts read the issuer's OIDC discovery to validate each other's tokens.
        ClusterRole::new(
            "system:service-account-issuer-discovery",
            vec![urls(
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                &["get"],
            )],
        ),
        ClusterRole::new(
            "system:monitoring",
            vec![urls(
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
                &["get"],
            )],
        ),
    ]
}

/// The scheduler, the controller manager, the kubelet and kube-proxy.
fn components() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "system:kube-scheduler",
            vec![
                rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE),
                rule(&["coordination.k8s.io"], &["leases"], &["create"]),
                named(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["kube-scheduler"],
                    &["get", "update"],
                ),
                rule(&[""], &["nodes"], READ),
                rule(&[""], &["pods"], &["delete", "get", "list", "watch"]),
                rule(&[""], &["bindings", "pods/binding"], &["create"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["replicationcontrollers", "services"], READ),
                rule(&["apps", "extensions"], &["replicasets"], READ),
                rule(&["apps"], &["statefulsets"], READ),
                rule(&["policy"], &["poddisruptionbudgets"], READ),
                rule(
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                    READ,
                ),
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
                rule(&["storage.k8s.io"], &["csinodes"], READ),
                rule(&[""], &["namespaces"], READ),
                rule(&["storage.k8s.io"], &["csidrivers"], READ),
                rule(&["storage.k8s.io"], &["csistoragecapacities"], READ),
            ],
        ),
        ClusterRole::new(
            "system:volume-scheduler",
            vec![
                rule(
                    &[""],
                    &["persistentvolumes"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(&["storage.k8s.io"], &["storageclasses"], READ),
                rule(
                    &[""],
                    &["persistentvolumeclaims"],
                    &["get", "list", "patch", "update", "watch"],
                ),
            ],
        ),
        ClusterRole::new(
            "system:kube-controller-manager",
            vec![
                rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE),
                rule(&["coordination.k8s.io"], &["leases"], &["create"]),
                named(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["kube-controller-manager"],
                    &["get", "update"],
                ),
                rule(&[""], &["secrets", "serviceaccounts"], &["create"]),
                rule(&[""], &["secrets"], &["delete"]),
                rule(
                    &[""],
                    &["configmaps", "namespaces", "secrets", "serviceaccounts"],
                    &["get"],
                ),
                rule(&[""], &["secrets", "serviceaccounts"], &["update"]),
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
                // The shared informers list and watch everything.
                rule(&["*"], &["*"], &["list", "watch"]),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
            ],
        ),
        ClusterRole::new(
            "system:node",
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews", "subjectaccessreviews"],
                    &["create"],
                ),
                rule(&[""], &["services"], READ),
                rule(
                    &[""],
                    &["nodes"],
                    &["create", "get", "list", "watch", "patch", "update"],
                ),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE),
                rule(
                    &[""],
                    &["pods"],
                    &["get", "list", "watch", "create", "delete"],
                ),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(&[""], &["configmaps", "secrets"], READ),
                rule(
                    &[""],
                    &["persistentvolumeclaims", "persistentvolumes"],
                    &["get"],
                ),
                rule(&[""], &["endpoints"], &["get"]),
                rule(
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                    &["create", "get", "list", "watch"],
                ),
                rule(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["create", "delete", "get", "patch", "update"],
                ),
                rule(&["storage.k8s.io"], &["volumeattachments"], &["get"]),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(
                    &[""],
                    &["persistentvolumeclaims/status"],
                    &["get", "patch", "update"],
                ),
                rule(&["storage.k8s.io"], &["csidrivers"], READ),
                rule(
                    &["storage.k8s.io"],
                    &["csinodes"],
                    &["create", "delete", "get", "patch", "update"],
                ),
                rule(&["node.k8s.io"], &["runtimeclasses"], READ),
            ],
        ),
        ClusterRole::new(
            "system:node-proxier",
            vec![
                rule(&[""], &["endpoints", "services"], &["list", "watch"]),
                rule(&[""], &["nodes"], READ),
                rule(&["", "events.k8s.io"], &["events"], EVENT_WRITE),
                rule(
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                    &["list", "watch"],
                ),
            ],
        ),
    ]
}

/// Every bootstrap ClusterRole but the controllers' own.
pub fn cluster_roles() -> Vec<ClusterRole> {
    let mut out = everyone();
    out.extend(user_facing());
    out.extend(components());
    out.extend(super::openshift::cluster_roles());
    out
}
