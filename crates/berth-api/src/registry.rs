//! The resource registry: every kind berth serves, declared once as one entry of [`RESOURCES`].
//!
//! Discovery, OpenAPI and Table printing are all derived from this table, so adding a kind is
//! adding one [`ResourceType`] literal below (plus, if it has its own columns, a [`TableKind`]).

use std::cmp::Ordering;

/// A subresource of a resource (`pods/status`, `pods/eviction`, `deployments/scale`, ...).
///
/// `group`/`version`/`kind` name the kind the subresource accepts and returns, which may live in
/// another group than its parent (`pods/eviction` takes a `policy/v1` `Eviction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subresource {
    /// The path segment after the object name: `status`, `binding`, `eviction`, `scale`.
    pub name: &'static str,
    /// API group of the subresource's kind (`""` for core).
    pub group: &'static str,
    /// API version of the subresource's kind.
    pub version: &'static str,
    /// Kind the subresource accepts and returns.
    pub kind: &'static str,
    /// Verbs allowed on the subresource.
    pub verbs: &'static [&'static str],
}

/// Which Table columns the server prints for a resource (`kubectl get` output).
///
/// Columns follow upstream `pkg/printers/internalversion/printers.go`; see [`crate::tables`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// `NAME  AGE`: the fallback for kinds without their own printer.
    Generic,
    /// `NAME READY STATUS RESTARTS AGE` + wide `IP NODE NOMINATED NODE READINESS GATES`.
    Pod,
    /// `NAME STATUS ROLES AGE VERSION` + wide addresses and node info.
    Node,
    /// `LAST SEEN TYPE REASON OBJECT MESSAGE` + wide `SUBOBJECT SOURCE FIRST SEEN COUNT NAME`.
    /// Prints both `core/v1` and `events.k8s.io/v1` events.
    Event,
    /// `NAME STATUS AGE`.
    Namespace,
    /// `NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY`.
    PriorityClass,
    /// `NAME HOLDER AGE`.
    Lease,
    /// `NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL`.
    FlowSchema,
    /// `NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE`.
    PriorityLevelConfiguration,
    /// `NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE`.
    PodDisruptionBudget,
    /// `NAME READY UP-TO-DATE AVAILABLE AGE` + wide `CONTAINERS IMAGES SELECTOR`.
    Deployment,
    /// `NAME DESIRED CURRENT READY AGE` + wide `CONTAINERS IMAGES SELECTOR`
    /// (replica sets and replication controllers).
    ReplicaSet,
    /// `NAME READY AGE` + wide `CONTAINERS IMAGES`.
    StatefulSet,
    /// `NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE` + wide.
    DaemonSet,
    /// `NAME STATUS COMPLETIONS DURATION AGE` + wide `CONTAINERS IMAGES SELECTOR`.
    Job,
    /// `NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE` + wide `CONTAINERS IMAGES SELECTOR`.
    CronJob,
    /// `NAME CONTROLLER REVISION AGE`.
    ControllerRevision,
    /// `NAME DATA AGE`.
    ConfigMap,
    /// `NAME TYPE DATA AGE`.
    Secret,
    /// `NAME SECRETS AGE`.
    ServiceAccount,
    /// `NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE` + wide `SELECTOR`.
    Service,
    /// `NAME ENDPOINTS AGE`.
    Endpoints,
    /// `NAME ADDRESSTYPE PORTS ENDPOINTS AGE`.
    EndpointSlice,
    /// `NAME CREATED AT` (roles and cluster roles: upstream's default columns).
    Role,
    /// `NAME ROLE AGE` + wide `USERS GROUPS SERVICEACCOUNTS` (role and cluster role bindings).
    RoleBinding,
    /// `NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS
    /// VOLUMEATTRIBUTESCLASS REASON AGE` + wide `VOLUMEMODE`.
    PersistentVolume,
    /// `NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE` + wide
    /// `VOLUMEMODE`.
    PersistentVolumeClaim,
    /// `NAME AGE REQUEST LIMIT`: `used/hard` of each resource, `limits.*` in LIMIT.
    ResourceQuota,
    /// `NAME CREATED AT`.
    LimitRange,
    /// `NAME CONTAINERS IMAGES POD LABELS`.
    PodTemplate,
    /// `NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE` (both served versions).
    HorizontalPodAutoscaler,
    /// `NAME CLASS HOSTS ADDRESS PORTS AGE`.
    Ingress,
    /// `NAME CONTROLLER PARAMETERS AGE`.
    IngressClass,
    /// `NAME POD-SELECTOR AGE`.
    NetworkPolicy,
    /// `NAME HANDLER AGE`.
    RuntimeClass,
    /// `NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION`.
    CertificateSigningRequest,
    /// `NAME WEBHOOKS AGE` (validating and mutating webhook configurations).
    WebhookConfiguration,
    /// `NAME VALIDATIONS PARAMKIND AGE`.
    ValidatingAdmissionPolicy,
    /// `NAME POLICYNAME PARAMREF AGE`.
    ValidatingAdmissionPolicyBinding,
    /// `NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE`.
    StorageClass,
    /// `NAME DISPLAY NAME STATUS` (OpenShift's projects).
    Project,
    /// `NAME UID FULL NAME IDENTITIES` (OpenShift's users).
    User,
    /// `NAME USERS` (OpenShift's groups).
    Group,
    /// `NAME CONFIG UPDATED UPDATING DEGRADED MACHINECOUNT READYMACHINECOUNT
    /// UPDATEDMACHINECOUNT DEGRADEDMACHINECOUNT AGE` (OpenShift's machine config pools).
    MachineConfigPool,
    /// `NAME SERVICE AVAILABLE AGE` (the aggregator's APIServices).
    ApiService,
    /// `NAME GENERATEDBYCONTROLLER IGNITIONVERSION AGE` (OpenShift's machine configs).
    MachineConfig,
    /// A custom resource's `NAME` and its CustomResourceDefinition's `additionalPrinterColumns`
    /// (see [`crate::custom`]).
    Custom(&'static crate::columns::CustomColumns),
}

/// One kind the API server serves, with everything discovery and printing need to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceType {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// API version within the group (`v1`, `v1beta1`).
    pub version: &'static str,
    /// Kind (`Pod`).
    pub kind: &'static str,
    /// Resource name in URLs (`pods`).
    pub plural: &'static str,
    /// Singular name (`pod`), accepted by kubectl as a resource name.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names (`po`).
    pub short_names: &'static [&'static str],
    /// Categories (`all`), used by `kubectl get all`.
    pub categories: &'static [&'static str],
    /// Subresources the server serves for this resource.
    pub subresources: &'static [Subresource],
    /// Which Table columns the server prints.
    pub table: TableKind,
    /// Verbs allowed on the resource itself (see [`ALL_VERBS`], [`CREATE_ONLY`]).
    pub verbs: &'static [&'static str],
}

/// The verbs of an ordinary resource, sorted as the real server lists them.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a resource without `deletecollection` (namespaces, as upstream).
pub const NO_DELETECOLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The verbs of a create-only resource (`bindings`) and of `eviction`/`binding` subresources.
pub const CREATE_ONLY: &[&str] = &["create"];

/// The verbs of `status` and `scale` subresources.
pub const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];

const fn status(group: &'static str, version: &'static str, kind: &'static str) -> Subresource {
    Subresource {
        name: "status",
        group,
        version,
        kind,
        verbs: GET_PATCH_UPDATE,
    }
}

/// `certificatesigningrequests/approval`: approval conditions only (`kubectl certificate approve`).
const APPROVAL: Subresource = Subresource {
    name: "approval",
    group: "certificates.k8s.io",
    version: "v1",
    kind: "CertificateSigningRequest",
    verbs: GET_PATCH_UPDATE,
};

const SCALE: Subresource = Subresource {
    name: "scale",
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    verbs: GET_PATCH_UPDATE,
};

/// Builds an entry with the common defaults: all verbs, no short names, categories or
/// subresources, `NAME AGE` columns. Entries override what differs with struct update syntax.
const fn base(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
) -> ResourceType {
    ResourceType {
        group,
        version,
        kind,
        plural,
        singular,
        namespaced,
        short_names: &[],
        categories: &[],
        subresources: &[],
        table: TableKind::Generic,
        verbs: ALL_VERBS,
    }
}

const ALL: &[&str] = &["all"];

/// The `api-extensions` category of upstream's admission registration kinds.
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// Every resource berth serves, in discovery order (groups appear in order of first entry).
pub static RESOURCES: &[ResourceType] = &[
    // ---- core/v1
    ResourceType {
        short_names: &["ns"],
        subresources: &[status("", "v1", "Namespace")],
        table: TableKind::Namespace,
        verbs: NO_DELETECOLLECTION,
        ..base("", "v1", "Namespace", "namespaces", "namespace", false)
    },
    ResourceType {
        short_names: &["no"],
        subresources: &[status("", "v1", "Node")],
        table: TableKind::Node,
        ..base("", "v1", "Node", "nodes", "node", false)
    },
    ResourceType {
        short_names: &["po"],
        categories: ALL,
        subresources: &[
            status("", "v1", "Pod"),
            Subresource {
                name: "eviction",
                group: "policy",
                version: "v1",
                kind: "Eviction",
                verbs: CREATE_ONLY,
            },
            Subresource {
                name: "binding",
                group: "",
                version: "v1",
                kind: "Binding",
                verbs: CREATE_ONLY,
            },
        ],
        table: TableKind::Pod,
        ..base("", "v1", "Pod", "pods", "pod", true)
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base("", "v1", "Binding", "bindings", "binding", true)
    },
    ResourceType {
        short_names: &["ev"],
        table: TableKind::Event,
        ..base("", "v1", "Event", "events", "event", true)
    },
    ResourceType {
        short_names: &["cm"],
        table: TableKind::ConfigMap,
        ..base("", "v1", "ConfigMap", "configmaps", "configmap", true)
    },
    ResourceType {
        table: TableKind::Secret,
        ..base("", "v1", "Secret", "secrets", "secret", true)
    },
    ResourceType {
        short_names: &["svc"],
        categories: ALL,
        subresources: &[status("", "v1", "Service")],
        table: TableKind::Service,
        ..base("", "v1", "Service", "services", "service", true)
    },
    ResourceType {
        short_names: &["sa"],
        subresources: &[Subresource {
            name: "token",
            group: "authentication.k8s.io",
            version: "v1",
            kind: "TokenRequest",
            verbs: CREATE_ONLY,
        }],
        table: TableKind::ServiceAccount,
        ..base(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            true,
        )
    },
    ResourceType {
        short_names: &["rc"],
        categories: ALL,
        subresources: &[status("", "v1", "ReplicationController"), SCALE],
        table: TableKind::ReplicaSet,
        ..base(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            true,
        )
    },
    ResourceType {
        short_names: &["pv"],
        table: TableKind::PersistentVolume,
        subresources: &[status("", "v1", "PersistentVolume")],
        ..base(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            "persistentvolume",
            false,
        )
    },
    ResourceType {
        short_names: &["pvc"],
        table: TableKind::PersistentVolumeClaim,
        subresources: &[status("", "v1", "PersistentVolumeClaim")],
        ..base(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            "persistentvolumeclaim",
            true,
        )
    },
    ResourceType {
        short_names: &["ep"],
        table: TableKind::Endpoints,
        ..base("", "v1", "Endpoints", "endpoints", "endpoints", true)
    },
    ResourceType {
        short_names: &["quota"],
        subresources: &[status("", "v1", "ResourceQuota")],
        table: TableKind::ResourceQuota,
        ..base(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            "resourcequota",
            true,
        )
    },
    ResourceType {
        short_names: &["limits"],
        table: TableKind::LimitRange,
        ..base("", "v1", "LimitRange", "limitranges", "limitrange", true)
    },
    ResourceType {
        table: TableKind::PodTemplate,
        ..base("", "v1", "PodTemplate", "podtemplates", "podtemplate", true)
    },
    // ---- apps/v1
    ResourceType {
        short_names: &["deploy"],
        categories: ALL,
        subresources: &[status("apps", "v1", "Deployment"), SCALE],
        table: TableKind::Deployment,
        ..base(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            true,
        )
    },
    ResourceType {
        short_names: &["rs"],
        categories: ALL,
        subresources: &[status("apps", "v1", "ReplicaSet"), SCALE],
        table: TableKind::ReplicaSet,
        ..base(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            true,
        )
    },
    ResourceType {
        short_names: &["ds"],
        categories: ALL,
        subresources: &[status("apps", "v1", "DaemonSet")],
        table: TableKind::DaemonSet,
        ..base("apps", "v1", "DaemonSet", "daemonsets", "daemonset", true)
    },
    ResourceType {
        short_names: &["sts"],
        categories: ALL,
        subresources: &[status("apps", "v1", "StatefulSet"), SCALE],
        table: TableKind::StatefulSet,
        ..base(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            "statefulset",
            true,
        )
    },
    ResourceType {
        table: TableKind::ControllerRevision,
        ..base(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            "controllerrevision",
            true,
        )
    },
    // ---- batch/v1
    ResourceType {
        categories: ALL,
        subresources: &[status("batch", "v1", "Job")],
        table: TableKind::Job,
        ..base("batch", "v1", "Job", "jobs", "job", true)
    },
    ResourceType {
        short_names: &["cj"],
        categories: ALL,
        subresources: &[status("batch", "v1", "CronJob")],
        table: TableKind::CronJob,
        ..base("batch", "v1", "CronJob", "cronjobs", "cronjob", true)
    },
    // ---- policy/v1
    ResourceType {
        short_names: &["pdb"],
        subresources: &[status("policy", "v1", "PodDisruptionBudget")],
        table: TableKind::PodDisruptionBudget,
        ..base(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            true,
        )
    },
    // policy/v1beta1 (the seeds' samples): the v1 objects under another apiVersion
    ResourceType {
        short_names: &["pdb"],
        subresources: &[status("policy", "v1beta1", "PodDisruptionBudget")],
        table: TableKind::PodDisruptionBudget,
        ..base(
            "policy",
            "v1beta1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            true,
        )
    },
    // ---- rbac.authorization.k8s.io/v1: stored, and enforced by the API server's authorizer
    ResourceType {
        table: TableKind::RoleBinding,
        ..base(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            false,
        )
    },
    ResourceType {
        table: TableKind::Role,
        ..base(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            false,
        )
    },
    ResourceType {
        table: TableKind::RoleBinding,
        ..base(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            true,
        )
    },
    ResourceType {
        table: TableKind::Role,
        ..base(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            "role",
            true,
        )
    },
    // rbac.authorization.k8s.io/v1beta1 (the seeds' manifests): the v1 objects under another
    // apiVersion, as upstream 1.21 served them
    ResourceType {
        table: TableKind::RoleBinding,
        ..base(
            "rbac.authorization.k8s.io",
            "v1beta1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            false,
        )
    },
    ResourceType {
        table: TableKind::Role,
        ..base(
            "rbac.authorization.k8s.io",
            "v1beta1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            false,
        )
    },
    ResourceType {
        table: TableKind::RoleBinding,
        ..base(
            "rbac.authorization.k8s.io",
            "v1beta1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            true,
        )
    },
    ResourceType {
        table: TableKind::Role,
        ..base(
            "rbac.authorization.k8s.io",
            "v1beta1",
            "Role",
            "roles",
            "role",
            true,
        )
    },
    // ---- authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews are answered by the
    // authorizer and authenticator, never stored
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            false,
        )
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            "selfsubjectrulesreview",
            false,
        )
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            "subjectaccessreview",
            false,
        )
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            "selfsubjectreview",
            false,
        )
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            "tokenreview",
            false,
        )
    },
    // ---- scheduling.k8s.io: v1 (preferred) and v1beta1 (the seeds' samples), one storage
    ResourceType {
        short_names: &["pc"],
        table: TableKind::PriorityClass,
        ..base(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            "priorityclass",
            false,
        )
    },
    ResourceType {
        short_names: &["pc"],
        table: TableKind::PriorityClass,
        ..base(
            "scheduling.k8s.io",
            "v1beta1",
            "PriorityClass",
            "priorityclasses",
            "priorityclass",
            false,
        )
    },
    // ---- coordination.k8s.io/v1
    ResourceType {
        table: TableKind::Lease,
        ..base(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            "lease",
            true,
        )
    },
    // ---- flowcontrol.apiserver.k8s.io/v1 (API Priority and Fairness)
    ResourceType {
        subresources: &[status("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")],
        table: TableKind::FlowSchema,
        ..base(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "flowschemas",
            "flowschema",
            false,
        )
    },
    ResourceType {
        subresources: &[status(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
        )],
        table: TableKind::PriorityLevelConfiguration,
        ..base(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            "prioritylevelconfiguration",
            false,
        )
    },
    // ---- events.k8s.io/v1 (same objects as core/v1 events)
    ResourceType {
        short_names: &["ev"],
        table: TableKind::Event,
        ..base("events.k8s.io", "v1", "Event", "events", "event", true)
    },
    // ---- discovery.k8s.io/v1
    ResourceType {
        table: TableKind::EndpointSlice,
        ..base(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            "endpointslice",
            true,
        )
    },
    // ---- storage.k8s.io/v1
    ResourceType {
        short_names: &["sc"],
        table: TableKind::StorageClass,
        ..base(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            "storageclass",
            false,
        )
    },
    base(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        "csinode",
        false,
    ),
    base(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        "csidriver",
        false,
    ),
    base(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        "csistoragecapacity",
        true,
    ),
    ResourceType {
        short_names: &["vac"],
        ..base(
            "storage.k8s.io",
            "v1",
            "VolumeAttributesClass",
            "volumeattributesclasses",
            "volumeattributesclass",
            false,
        )
    },
    ResourceType {
        subresources: &[status("storage.k8s.io", "v1", "VolumeAttachment")],
        ..base(
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            "volumeattachments",
            "volumeattachment",
            false,
        )
    },
    // ---- resource.k8s.io: v1 (preferred) and v1beta1
    base(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        "deviceclass",
        false,
    ),
    ResourceType {
        subresources: &[status("resource.k8s.io", "v1", "ResourceClaim")],
        ..base(
            "resource.k8s.io",
            "v1",
            "ResourceClaim",
            "resourceclaims",
            "resourceclaim",
            true,
        )
    },
    base(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        true,
    ),
    base(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        "resourceslice",
        false,
    ),
    base(
        "resource.k8s.io",
        "v1beta1",
        "DeviceClass",
        "deviceclasses",
        "deviceclass",
        false,
    ),
    ResourceType {
        subresources: &[status("resource.k8s.io", "v1beta1", "ResourceClaim")],
        ..base(
            "resource.k8s.io",
            "v1beta1",
            "ResourceClaim",
            "resourceclaims",
            "resourceclaim",
            true,
        )
    },
    base(
        "resource.k8s.io",
        "v1beta1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        true,
    ),
    base(
        "resource.k8s.io",
        "v1beta1",
        "ResourceSlice",
        "resourceslices",
        "resourceslice",
        false,
    ),
    // ---- OpenShift's APIs that its documentation's `oc` procedures use (crate
    // berth-apiserver's `openshift` module): projects are a view of namespaces, reviews are
    // answered from the RBAC index, users and groups are stored.
    ResourceType {
        table: TableKind::Project,
        verbs: &["create", "delete", "get", "list"],
        ..base(
            "project.openshift.io",
            "v1",
            "Project",
            "projects",
            "project",
            false,
        )
    },
    ResourceType {
        verbs: &["create", "list"],
        ..base(
            "project.openshift.io",
            "v1",
            "ProjectRequest",
            "projectrequests",
            "projectrequest",
            false,
        )
    },
    ResourceType {
        table: TableKind::User,
        ..base("user.openshift.io", "v1", "User", "users", "user", false)
    },
    ResourceType {
        table: TableKind::Group,
        ..base("user.openshift.io", "v1", "Group", "groups", "group", false)
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authorization.openshift.io",
            "v1",
            "ResourceAccessReview",
            "resourceaccessreviews",
            "resourceaccessreview",
            false,
        )
    },
    ResourceType {
        verbs: CREATE_ONLY,
        ..base(
            "authorization.openshift.io",
            "v1",
            "LocalResourceAccessReview",
            "localresourceaccessreviews",
            "localresourceaccessreview",
            true,
        )
    },
    ResourceType {
        short_names: &["mcp"],
        subresources: &[status(
            "machineconfiguration.openshift.io",
            "v1",
            "MachineConfigPool",
        )],
        table: TableKind::MachineConfigPool,
        ..base(
            "machineconfiguration.openshift.io",
            "v1",
            "MachineConfigPool",
            "machineconfigpools",
            "machineconfigpool",
            false,
        )
    },
    ResourceType {
        short_names: &["mc"],
        table: TableKind::MachineConfig,
        ..base(
            "machineconfiguration.openshift.io",
            "v1",
            "MachineConfig",
            "machineconfigs",
            "machineconfig",
            false,
        )
    },
    ResourceType {
        subresources: &[status(
            "machineconfiguration.openshift.io",
            "v1",
            "KubeletConfig",
        )],
        ..base(
            "machineconfiguration.openshift.io",
            "v1",
            "KubeletConfig",
            "kubeletconfigs",
            "kubeletconfig",
            false,
        )
    },
    // ---- autoscaling: v2 (preferred, stored) and v1 (a view of the same objects)
    ResourceType {
        short_names: &["hpa"],
        categories: ALL,
        subresources: &[status("autoscaling", "v2", "HorizontalPodAutoscaler")],
        table: TableKind::HorizontalPodAutoscaler,
        ..base(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            true,
        )
    },
    ResourceType {
        short_names: &["hpa"],
        categories: ALL,
        subresources: &[status("autoscaling", "v1", "HorizontalPodAutoscaler")],
        table: TableKind::HorizontalPodAutoscaler,
        ..base(
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            true,
        )
    },
    // ---- networking.k8s.io/v1
    ResourceType {
        short_names: &["ing"],
        subresources: &[status("networking.k8s.io", "v1", "Ingress")],
        table: TableKind::Ingress,
        ..base(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            "ingress",
            true,
        )
    },
    ResourceType {
        table: TableKind::IngressClass,
        ..base(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            "ingressclass",
            false,
        )
    },
    ResourceType {
        short_names: &["netpol"],
        table: TableKind::NetworkPolicy,
        ..base(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            "networkpolicy",
            true,
        )
    },
    ResourceType {
        subresources: &[status("networking.k8s.io", "v1", "ServiceCIDR")],
        ..base(
            "networking.k8s.io",
            "v1",
            "ServiceCIDR",
            "servicecidrs",
            "servicecidr",
            false,
        )
    },
    ResourceType {
        short_names: &["ip"],
        ..base(
            "networking.k8s.io",
            "v1",
            "IPAddress",
            "ipaddresses",
            "ipaddress",
            false,
        )
    },
    // ---- node.k8s.io/v1
    ResourceType {
        table: TableKind::RuntimeClass,
        ..base(
            "node.k8s.io",
            "v1",
            "RuntimeClass",
            "runtimeclasses",
            "runtimeclass",
            false,
        )
    },
    // ---- certificates.k8s.io/v1
    ResourceType {
        short_names: &["csr"],
        subresources: &[
            APPROVAL,
            status("certificates.k8s.io", "v1", "CertificateSigningRequest"),
        ],
        table: TableKind::CertificateSigningRequest,
        ..base(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            "certificatesigningrequest",
            false,
        )
    },
    // ---- admissionregistration.k8s.io/v1: webhooks and policies the admission chain calls
    ResourceType {
        categories: API_EXTENSIONS,
        table: TableKind::WebhookConfiguration,
        ..base(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            false,
        )
    },
    ResourceType {
        categories: API_EXTENSIONS,
        table: TableKind::WebhookConfiguration,
        ..base(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            false,
        )
    },
    ResourceType {
        categories: API_EXTENSIONS,
        subresources: &[status(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
        )],
        table: TableKind::ValidatingAdmissionPolicy,
        ..base(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            "validatingadmissionpolicy",
            false,
        )
    },
    ResourceType {
        categories: API_EXTENSIONS,
        table: TableKind::ValidatingAdmissionPolicyBinding,
        ..base(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding",
            false,
        )
    },
    // ---- metrics.k8s.io/v1beta1 (computed from the kubelets on each request; `kubectl top`)
    ResourceType {
        verbs: GET_LIST,
        ..base(
            "metrics.k8s.io",
            "v1beta1",
            "NodeMetrics",
            "nodes",
            "",
            false,
        )
    },
    ResourceType {
        verbs: GET_LIST,
        ..base("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", "", true)
    },
    // ---- apiextensions.k8s.io/v1 (the kinds they define: `crate::custom`)
    ResourceType {
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        subresources: &[status(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )],
        table: TableKind::Role,
        ..base(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            false,
        )
    },
    // ---- apiregistration.k8s.io/v1 (the aggregator: `berth-apiserver`'s `apiregistration`)
    ResourceType {
        categories: API_EXTENSIONS,
        subresources: &[status("apiregistration.k8s.io", "v1", "APIService")],
        table: TableKind::ApiService,
        ..base(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            "apiservice",
            false,
        )
    },
];

/// The verbs of a read-only resource (the resource metrics API).
pub const GET_LIST: &[&str] = &["get", "list"];

impl ResourceType {
    /// The `apiVersion` of this kind's objects: `"v1"` for core, else `"<group>/<version>"`.
    pub fn api_version(&self) -> String {
        group_version(self.group, self.version)
    }

    /// The kind of a list of these objects (`PodList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Verbs allowed on the resource itself (not its subresources).
    pub fn verbs(&self) -> &'static [&'static str] {
        self.verbs
    }

    /// The subresource named `name` (`status`, `eviction`, ...), if served.
    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether `verb` is allowed on the resource itself.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// The entry of the same group and resource in the group's preferred version (itself when
    /// this is the preferred version). Versions of one resource share storage: a
    /// `scheduling.k8s.io/v1beta1` PriorityClass is the `v1` object under another apiVersion.
    pub fn canonical(&'static self) -> &'static ResourceType {
        versions(self.group)
            .into_iter()
            .find_map(|v| find(self.group, v, self.plural))
            .unwrap_or(self)
    }

    /// The URL prefix of this resource's group version: `/api/v1` or `/apis/<group>/<version>`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

/// `"v1"` for the core group, else `"<group>/<version>"`.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Every resource berth serves.
pub fn all() -> &'static [ResourceType] {
    RESOURCES
}

/// The resource served at `group`/`version`/`plural` (`("", "v1", "pods")`).
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource whose objects have this `apiVersion` (`"v1"`, `"apps/v1"`) and `kind`.
pub fn find_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// The API groups served, in discovery order; the core group is `""`.
pub fn groups() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in RESOURCES {
        if !out.contains(&r.group) {
            out.push(r.group);
        }
    }
    out
}

/// The versions served for `group`, preferred first (GA before beta before alpha, higher
/// numbers first, as upstream orders them). Empty when the group is not served.
pub fn versions(group: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group) {
        if !out.contains(&r.version) {
            out.push(r.version);
        }
    }
    out.sort_by(|a, b| compare_versions(a, b));
    out
}

/// The preferred version of `group` (the first of [`versions`]).
pub fn preferred_version(group: &str) -> Option<&'static str> {
    versions(group).into_iter().next()
}

/// The resources of one group version, in registry order.
pub fn resources_of(group: &str, version: &str) -> impl Iterator<Item = &'static ResourceType> {
    let group = group.to_string();
    let version = version.to_string();
    RESOURCES
        .iter()
        .filter(move |r| r.group == group && r.version == version)
}

/// Orders Kubernetes versions by priority, highest first: `v2 < v1 < v1beta2 < v1beta1 <
/// v1alpha1 < anything not of that form` (sorted alphabetically among themselves).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    match (parse_version(a), parse_version(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// `(stability, major, minor)` where stability is 2 for GA, 1 for beta and 0 for alpha, so
/// that larger tuples have higher priority.
fn parse_version(v: &str) -> Option<(u8, u32, u32)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u32 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, num) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else {
        return None;
    };
    let minor: u32 = num.parse().ok()?;
    Some((stability, major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_resource_and_by_kind() {
        let pods = find("", "v1", "pods").unwrap();
        assert_eq!(pods.kind, "Pod");
        assert_eq!(pods.api_version(), "v1");
        assert_eq!(pods.list_kind(), "PodList");
        assert!(find("", "v1", "nope").is_none());
        let deploy = find_kind("apps/v1", "Deployment").unwrap();
        assert_eq!(deploy.plural, "deployments");
        assert_eq!(deploy.api_version(), "apps/v1");
        assert_eq!(deploy.group_version_path(), "/apis/apps/v1");
        assert!(find_kind("v1", "Deployment").is_none());
        let pc = find_kind("scheduling.k8s.io/v1beta1", "PriorityClass").unwrap();
        assert_eq!(pc.version, "v1beta1");
        assert_eq!(pc.canonical().version, "v1");
        assert_eq!(pc.canonical().canonical(), pc.canonical());
        assert_eq!(find("", "v1", "pods").unwrap().canonical().plural, "pods");
        // events.k8s.io events are their own group; the server converts between the two.
        let ev = find("events.k8s.io", "v1", "events").unwrap();
        assert_eq!(ev.canonical().group, "events.k8s.io");
    }

    #[test]
    fn no_duplicate_entries() {
        for (i, a) in RESOURCES.iter().enumerate() {
            for b in &RESOURCES[i + 1..] {
                assert!(
                    !(a.group == b.group && a.version == b.version && a.plural == b.plural),
                    "duplicate {}/{} {}",
                    a.group,
                    a.version,
                    a.plural
                );
                assert!(
                    !(a.group == b.group && a.version == b.version && a.kind == b.kind),
                    "duplicate kind {}",
                    a.kind
                );
            }
        }
    }

    #[test]
    fn bindings_are_create_only_and_pods_have_eviction() {
        let bindings = find("", "v1", "bindings").unwrap();
        assert_eq!(bindings.verbs(), &["create"]);
        assert!(!bindings.allows("get"));
        let eviction = find("", "v1", "pods")
            .unwrap()
            .subresource("eviction")
            .unwrap();
        assert_eq!(
            (eviction.group, eviction.version, eviction.kind),
            ("policy", "v1", "Eviction")
        );
    }

    #[test]
    fn versions_preferred_first() {
        assert_eq!(versions("scheduling.k8s.io"), vec!["v1", "v1beta1"]);
        assert_eq!(preferred_version("resource.k8s.io"), Some("v1"));
        assert_eq!(versions(""), vec!["v1"]);
        assert!(versions("nope").is_empty());
        let mut vs = vec!["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "foo"];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            vs,
            vec!["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn groups_in_registry_order() {
        let g = groups();
        assert_eq!(g[0], "");
        assert_eq!(g[1], "apps");
        assert!(g.contains(&"events.k8s.io"));
    }
}
