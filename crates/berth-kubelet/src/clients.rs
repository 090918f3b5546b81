//! Who the simulated nodes act as. Each node writes as its own kubelet would, through a client
//! carrying `system:node:<name>` (made by [`NodeCredentials`], once per node, on first use), so
//! that the Node authorizer and NodeRestriction judge its requests; the watches that serve all
//! simulated nodes at once (every bound pod, every node) go through one shared client, standing
//! in for the per-node field-selected watches a thousand real kubelets would open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Makes the client of the kubelet of the node named.
pub type NodeCredentials = Arc<dyn Fn(&str) -> kube::Client + Send + Sync>;

/// The shared client and each node's own.
#[derive(Clone)]
pub struct Clients {
    shared: kube::Client,
    credentials: Option<NodeCredentials>,
    made: Arc<Mutex<HashMap<String, kube::Client>>>,
}

impl Clients {
    /// Clients over `shared`; without `credentials` every node acts through `shared` too.
    pub fn new(shared: kube::Client, credentials: Option<NodeCredentials>) -> Clients {
        Clients {
            shared,
            credentials,
            made: Arc::default(),
        }
    }

    /// The client the watches shared by every node read through.
    pub fn shared(&self) -> kube::Client {
        self.shared.clone()
    }

    /// The client of `node`'s kubelet.
    pub fn node(&self, node: &str) -> kube::Client {
        let Some(credentials) = &self.credentials else {
            return self.shared.clone();
        };
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        made.entry(node.to_string())
            .or_insert_with(|| credentials(node))
            .clone()
    }
}
