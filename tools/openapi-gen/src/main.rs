//! Prints the OpenAPI schemas of every kind berth serves, as k8s-openapi's `schemars` impls
//! describe them (upstream's field descriptions, formats, `x-kubernetes-int-or-string`), to
//! stdout as JSON:
//!
//! ```json
//! {"kinds": [{"group": "", "version": "v1", "kind": "Pod", "definition": "io.k8s.api.core.v1.Pod"}, ...],
//!  "definitions": {"io.k8s.api.core.v1.Pod": {...}, ...}}
//! ```
//!
//! References between definitions are `{"$ref": "#/$defs/<name>"}` as schemars writes them;
//! `berth-api` turns them into OpenAPI v2 and v3 references and adds what k8s-openapi does not
//! carry (group-version-kind, patch strategies and list types from berth's own patch table).
//!
//! Served versions that k8s-openapi 0.29 no longer has (`policy/v1beta1`, `rbac/v1beta1`,
//! `scheduling.k8s.io/v1beta1`, `resource.k8s.io/v1`) are described by the version berth
//! stores them as, whose fields they share.

use k8s_openapi::api as a;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{json, Map, Value};

struct Kinds {
    gen: SchemaGenerator,
    kinds: Vec<Value>,
}

impl Kinds {
    fn add<T: JsonSchema>(&mut self, group: &str, version: &str, kind: &str) {
        self.gen.subschema_for::<T>();
        self.kinds.push(json!({
            "group": group,
            "version": version,
            "kind": kind,
            "definition": T::schema_name(),
        }));
    }
}

fn main() {
    let mut k = Kinds {
        gen: SchemaGenerator::default(),
        kinds: Vec::new(),
    };
    // core/v1
    k.add::<a::core::v1::Namespace>("", "v1", "Namespace");
    k.add::<a::core::v1::Node>("", "v1", "Node");
    k.add::<a::core::v1::Pod>("", "v1", "Pod");
    k.add::<a::core::v1::Binding>("", "v1", "Binding");
    k.add::<a::core::v1::Event>("", "v1", "Event");
    k.add::<a::core::v1::ConfigMap>("", "v1", "ConfigMap");
    k.add::<a::core::v1::Secret>("", "v1", "Secret");
    k.add::<a::core::v1::Service>("", "v1", "Service");
    k.add::<a::core::v1::Endpoints>("", "v1", "Endpoints");
    k.add::<a::core::v1::ServiceAccount>("", "v1", "ServiceAccount");
    k.add::<a::core::v1::ReplicationController>("", "v1", "ReplicationController");
    k.add::<a::core::v1::PersistentVolume>("", "v1", "PersistentVolume");
    k.add::<a::core::v1::PersistentVolumeClaim>("", "v1", "PersistentVolumeClaim");
    k.add::<a::core::v1::ResourceQuota>("", "v1", "ResourceQuota");
    k.add::<a::core::v1::LimitRange>("", "v1", "LimitRange");
    k.add::<a::core::v1::PodTemplate>("", "v1", "PodTemplate");
    // apps/v1
    k.add::<a::apps::v1::Deployment>("apps", "v1", "Deployment");
    k.add::<a::apps::v1::DaemonSet>("apps", "v1", "DaemonSet");
    k.add::<a::apps::v1::ReplicaSet>("apps", "v1", "ReplicaSet");
    k.add::<a::apps::v1::StatefulSet>("apps", "v1", "StatefulSet");
    k.add::<a::apps::v1::ControllerRevision>("apps", "v1", "ControllerRevision");
    // batch/v1
    k.add::<a::batch::v1::Job>("batch", "v1", "Job");
    k.add::<a::batch::v1::CronJob>("batch", "v1", "CronJob");
    // policy
    k.add::<a::policy::v1::PodDisruptionBudget>("policy", "v1", "PodDisruptionBudget");
    k.add::<a::policy::v1::PodDisruptionBudget>("policy", "v1beta1", "PodDisruptionBudget");
    // rbac.authorization.k8s.io
    for version in ["v1", "v1beta1"] {
        let g = "rbac.authorization.k8s.io";
        k.add::<a::rbac::v1::ClusterRoleBinding>(g, version, "ClusterRoleBinding");
        k.add::<a::rbac::v1::ClusterRole>(g, version, "ClusterRole");
        k.add::<a::rbac::v1::RoleBinding>(g, version, "RoleBinding");
        k.add::<a::rbac::v1::Role>(g, version, "Role");
    }
    // authorization.k8s.io, authentication.k8s.io
    let g = "authorization.k8s.io";
    k.add::<a::authorization::v1::SelfSubjectAccessReview>(g, "v1", "SelfSubjectAccessReview");
    k.add::<a::authorization::v1::SelfSubjectRulesReview>(g, "v1", "SelfSubjectRulesReview");
    k.add::<a::authorization::v1::SubjectAccessReview>(g, "v1", "SubjectAccessReview");
    let g = "authentication.k8s.io";
    k.add::<a::authentication::v1::SelfSubjectReview>(g, "v1", "SelfSubjectReview");
    k.add::<a::authentication::v1::TokenReview>(g, "v1", "TokenReview");
    // scheduling.k8s.io
    for version in ["v1", "v1beta1"] {
        k.add::<a::scheduling::v1::PriorityClass>("scheduling.k8s.io", version, "PriorityClass");
    }
    // coordination, discovery, events
    k.add::<a::coordination::v1::Lease>("coordination.k8s.io", "v1", "Lease");
    // flowcontrol.apiserver.k8s.io
    let g = "flowcontrol.apiserver.k8s.io";
    k.add::<a::flowcontrol::v1::FlowSchema>(g, "v1", "FlowSchema");
    k.add::<a::flowcontrol::v1::PriorityLevelConfiguration>(g, "v1", "PriorityLevelConfiguration");
    k.add::<a::discovery::v1::EndpointSlice>("discovery.k8s.io", "v1", "EndpointSlice");
    k.add::<a::events::v1::Event>("events.k8s.io", "v1", "Event");
    // storage.k8s.io
    let g = "storage.k8s.io";
    k.add::<a::storage::v1::StorageClass>(g, "v1", "StorageClass");
    k.add::<a::storage::v1::CSINode>(g, "v1", "CSINode");
    k.add::<a::storage::v1::CSIDriver>(g, "v1", "CSIDriver");
    k.add::<a::storage::v1::CSIStorageCapacity>(g, "v1", "CSIStorageCapacity");
    k.add::<a::storage::v1::VolumeAttachment>(g, "v1", "VolumeAttachment");
    // GA in 1.34 unchanged from v1beta1, which the schemas' 1.33 still calls it.
    k.add::<a::storage::v1beta1::VolumeAttributesClass>(g, "v1", "VolumeAttributesClass");
    // resource.k8s.io: v1 went GA in 1.34 unchanged from v1beta2.
    let g = "resource.k8s.io";
    k.add::<a::resource::v1beta2::DeviceClass>(g, "v1", "DeviceClass");
    k.add::<a::resource::v1beta2::ResourceClaim>(g, "v1", "ResourceClaim");
    k.add::<a::resource::v1beta2::ResourceClaimTemplate>(g, "v1", "ResourceClaimTemplate");
    k.add::<a::resource::v1beta2::ResourceSlice>(g, "v1", "ResourceSlice");
    k.add::<a::resource::v1beta1::DeviceClass>(g, "v1beta1", "DeviceClass");
    k.add::<a::resource::v1beta1::ResourceClaim>(g, "v1beta1", "ResourceClaim");
    k.add::<a::resource::v1beta1::ResourceClaimTemplate>(g, "v1beta1", "ResourceClaimTemplate");
    k.add::<a::resource::v1beta1::ResourceSlice>(g, "v1beta1", "ResourceSlice");
    // autoscaling: v2 stored, v1 a view of it
    let g = "autoscaling";
    k.add::<a::autoscaling::v2::HorizontalPodAutoscaler>(g, "v2", "HorizontalPodAutoscaler");
    k.add::<a::autoscaling::v1::HorizontalPodAutoscaler>(g, "v1", "HorizontalPodAutoscaler");
    // networking.k8s.io, node.k8s.io, certificates.k8s.io
    let g = "networking.k8s.io";
    k.add::<a::networking::v1::Ingress>(g, "v1", "Ingress");
    k.add::<a::networking::v1::IngressClass>(g, "v1", "IngressClass");
    k.add::<a::networking::v1::NetworkPolicy>(g, "v1", "NetworkPolicy");
    k.add::<a::networking::v1::ServiceCIDR>(g, "v1", "ServiceCIDR");
    k.add::<a::networking::v1::IPAddress>(g, "v1", "IPAddress");
    k.add::<a::node::v1::RuntimeClass>("node.k8s.io", "v1", "RuntimeClass");
    let g = "certificates.k8s.io";
    k.add::<a::certificates::v1::CertificateSigningRequest>(g, "v1", "CertificateSigningRequest");
    // admissionregistration.k8s.io
    let g = "admissionregistration.k8s.io";
    k.add::<a::admissionregistration::v1::MutatingWebhookConfiguration>(
        g,
        "v1",
        "MutatingWebhookConfiguration",
    );
    k.add::<a::admissionregistration::v1::ValidatingWebhookConfiguration>(
        g,
        "v1",
        "ValidatingWebhookConfiguration",
    );
    k.add::<a::admissionregistration::v1::ValidatingAdmissionPolicy>(
        g,
        "v1",
        "ValidatingAdmissionPolicy",
    );
    k.add::<a::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(
        g,
        "v1",
        "ValidatingAdmissionPolicyBinding",
    );
    // Subresource kinds: `kubectl scale`, evictions, tokens.
    k.add::<a::autoscaling::v1::Scale>("autoscaling", "v1", "Scale");
    k.add::<a::policy::v1::Eviction>("policy", "v1", "Eviction");
    k.add::<a::authentication::v1::TokenRequest>("authentication.k8s.io", "v1", "TokenRequest");

    let definitions: Map<String, Value> = k
        .gen
        .take_definitions(true)
        .into_iter()
        .collect();
    let out = json!({"kinds": k.kinds, "definitions": definitions});
    match serde_json::to_string_pretty(&out) {
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("error: cannot serialize the schemas: {e}");
            std::process::exit(1);
        }
    }
}
