//! The machine config kinds as the informers and clients read them: metadata typed, the rest
//! kept as JSON (the engines read JSON).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

macro_rules! machine_config_kind {
    ($(#[$doc:meta])* $kind:ident, $plural:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, Deserialize, Serialize)]
        pub struct $kind {
            pub metadata: ObjectMeta,
            /// `spec`, `status` and the rest.
            #[serde(flatten)]
            pub rest: Map<String, Value>,
        }

        impl k8s_openapi::Resource for $kind {
            const API_VERSION: &'static str = super::API_VERSION;
            const GROUP: &'static str = "machineconfiguration.openshift.io";
            const KIND: &'static str = stringify!($kind);
            const VERSION: &'static str = "v1";
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::ClusterResourceScope;
        }

        impl k8s_openapi::Metadata for $kind {
            type Ty = ObjectMeta;
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl $kind {
            /// The whole object as JSON.
            pub fn to_value(&self) -> Value {
                let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
                v["apiVersion"] = Value::String(super::API_VERSION.into());
                v["kind"] = Value::String(stringify!($kind).into());
                v
            }
        }
    };
}

machine_config_kind!(
    /// `MachineConfigPool`: a set of nodes and the configuration they run.
    MachineConfigPool,
    "machineconfigpools"
);
machine_config_kind!(
    /// `KubeletConfig`: kubelet settings for the pools it selects.
    KubeletConfig,
    "kubeletconfigs"
);
machine_config_kind!(
    /// `MachineConfig`: one piece of a node's configuration, or a pool's rendered whole.
    MachineConfig,
    "machineconfigs"
);
