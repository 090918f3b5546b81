//! Patch metadata: which lists merge (and by which key) for the kinds berth serves, taken from
//! the `patchStrategy`/`patchMergeKey` tags of `k8s.io/api` (api-compat spec §3.6).

/// The type of a JSON object inside a Kubernetes object, as far as patching cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// Anything without special list fields: maps merge, lists are replaced.
    Unknown,
    /// The top level of an object of the given kind.
    Root(Kind),
    ObjectMeta,
    PodTemplate,
    PodSpec,
    Container,
    PodStatus,
    NodeSpec,
    NodeStatus,
    /// The spec of a workload with `template` (Deployment, ReplicaSet, ...).
    WorkloadSpec,
    CronJobSpec,
    JobTemplate,
    /// A status whose `conditions` merge by `type`.
    ConditionsStatus,
    ServiceSpec,
}

/// Kinds with known patch metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pod,
    Node,
    Workload,
    CronJob,
    Service,
    PodDisruptionBudget,
    Other,
}

impl Kind {
    pub(crate) fn from_name(kind: &str) -> Kind {
        match kind {
            "Pod" => Kind::Pod,
            "Node" => Kind::Node,
            "Deployment"
            | "ReplicaSet"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "ReplicationController"
            | "PodTemplate" => Kind::Workload,
            "CronJob" => Kind::CronJob,
            "Service" => Kind::Service,
            "PodDisruptionBudget" => Kind::PodDisruptionBudget,
            _ => Kind::Other,
        }
    }
}

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// The patch list replaces the original (the default).
    Atomic,
    /// Elements merge: maps by the merge key, primitives as a set (`key` is `None`).
    Merge { key: Option<&'static str> },
}

const fn by(key: &'static str) -> ListStrategy {
    ListStrategy::Merge { key: Some(key) }
}
const SET: ListStrategy = ListStrategy::Merge { key: None };
const ATOMIC: ListStrategy = ListStrategy::Atomic;

/// The type of field `name` of an object of type `ty`, and the strategy if it is a list.
pub(crate) fn field(ty: Ty, name: &str) -> (Ty, ListStrategy) {
    use Ty::*;
    match (ty, name) {
        (Root(_), "metadata") => (ObjectMeta, ATOMIC),
        (Root(Kind::Pod), "spec") => (PodSpec, ATOMIC),
        (Root(Kind::Pod), "status") => (PodStatus, ATOMIC),
        (Root(Kind::Node), "spec") => (NodeSpec, ATOMIC),
        (Root(Kind::Node), "status") => (NodeStatus, ATOMIC),
        (Root(Kind::Workload), "spec") => (WorkloadSpec, ATOMIC),
        (Root(Kind::Workload), "template") => (PodTemplate, ATOMIC),
        (Root(Kind::CronJob), "spec") => (CronJobSpec, ATOMIC),
        (Root(Kind::Service), "spec") => (ServiceSpec, ATOMIC),
        (
            Root(Kind::Workload | Kind::CronJob | Kind::PodDisruptionBudget | Kind::Service),
            "status",
        ) => (ConditionsStatus, ATOMIC),
        (ObjectMeta, "finalizers") => (Unknown, SET),
        (ObjectMeta, "ownerReferences") => (Unknown, by("uid")),
        (WorkloadSpec, "template") => (PodTemplate, ATOMIC),
        (CronJobSpec, "jobTemplate") => (JobTemplate, ATOMIC),
        (JobTemplate, "metadata") | (PodTemplate, "metadata") => (ObjectMeta, ATOMIC),
        (JobTemplate, "spec") => (WorkloadSpec, ATOMIC),
        (PodTemplate, "spec") => (PodSpec, ATOMIC),
        (PodSpec, "containers" | "initContainers" | "ephemeralContainers") => {
            (Container, by("name"))
        }
        (PodSpec, "volumes" | "imagePullSecrets" | "schedulingGates" | "resourceClaims") => {
            (Unknown, by("name"))
        }
        (PodSpec, "hostAliases") => (Unknown, by("ip")),
        (PodSpec, "topologySpreadConstraints") => (Unknown, by("topologyKey")),
        (Container, "env") => (Unknown, by("name")),
        (Container, "ports") => (Unknown, by("containerPort")),
        (Container, "volumeMounts") => (Unknown, by("mountPath")),
        (Container, "volumeDevices") => (Unknown, by("devicePath")),
        (PodStatus, "conditions") => (Unknown, by("type")),
        (PodStatus, "podIPs" | "hostIPs") => (Unknown, by("ip")),
        (NodeSpec, "podCIDRs") => (Unknown, SET),
        (NodeStatus, "conditions" | "addresses") => (Unknown, by("type")),
        (ConditionsStatus, "conditions") => (Unknown, by("type")),
        (ServiceSpec, "ports") => (Unknown, by("port")),
        _ => (Unknown, ATOMIC),
    }
}
