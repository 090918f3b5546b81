//! The identities berth's in-process components act under, as upstream runs them: the
//! scheduler as `system:kube-scheduler`, so RBAC authorizes its requests by the bootstrap
//! role `system:kube-scheduler` and a rule missing from it shows as a 403; the controllers'
//! shared informers as `system:kube-controller-manager`; each controller's writes as its
//! ServiceAccount `system:serviceaccount:kube-system:<controller>`; each simulated node's
//! kubelet as `system:node:<name>` in `system:nodes`, judged by the Node authorizer and
//! NodeRestriction.

use berth_apiserver::user::UserInfo;
use berth_apiserver::ApiServer;

/// The user the scheduler authenticates as (upstream's client certificate CN).
pub const KUBE_SCHEDULER: &str = "system:kube-scheduler";
/// The upstream programs berth's in-process components stand for (their User-Agents).
pub const CONTROLLER_MANAGER_PROGRAM: &str = "kube-controller-manager";
pub const KUBELET_PROGRAM: &str = "kubelet";
/// The user the controller manager's shared informers authenticate as.
pub const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";

/// An in-process router whose requests count in `rest_client_requests_total` (host
/// `in-process`).
fn counted<S>(router: S) -> crate::client::Counted<S> {
    tower::Layer::layer(&crate::client::CountedLayer::new("in-process"), router)
}

/// Makes in-process clients that carry a component's identity.
#[derive(Clone)]
pub struct Identities {
    server: ApiServer,
    admin: kube::Client,
}

impl Identities {
    /// Identities served by `server`; `admin` is the client of the components that still act
    /// as the administrator (`system:masters`).
    pub fn new(server: ApiServer, admin: kube::Client) -> Identities {
        Identities { server, admin }
    }

    /// The administrator's client.
    pub fn admin(&self) -> kube::Client {
        self.admin.clone()
    }

    /// A client acting as the administrator for upstream's `program` (whose User-Agent it
    /// sends, so field managers read `kube-controller-manager`, `kubelet`, ...).
    pub fn admin_as(&self, program: &str) -> kube::Client {
        let router = ApiServer::as_program(self.server.in_process_router(), program);
        kube::Client::new(counted(router), "default")
    }

    /// A client of `program` acting as `name` in `groups`.
    pub fn client(&self, program: &str, name: &str, groups: &[&str]) -> kube::Client {
        let user = UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let router = ApiServer::as_program(self.server.in_process_router_as(user), program);
        kube::Client::new(counted(router), "default")
    }

    /// The client the controllers' shared informers list and watch through.
    pub fn controller_manager(&self) -> kube::Client {
        self.client(CONTROLLER_MANAGER_PROGRAM, KUBE_CONTROLLER_MANAGER, &[])
    }

    /// What each controller writes through: a client as its ServiceAccount in `kube-system`
    /// (upstream's `--use-service-account-credentials`), authorized by the bootstrap role
    /// `system:controller:<controller>`.
    pub fn controllers(&self) -> berth_controllers::ServiceAccountCredentials {
        let this = self.clone();
        std::sync::Arc::new(move |account: &str| {
            this.client(
                CONTROLLER_MANAGER_PROGRAM,
                &format!("system:serviceaccount:kube-system:{account}"),
                &[
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            )
        })
    }

    /// What each simulated node writes through: a client as its kubelet,
    /// `system:node:<name>` in `system:nodes`. Each is an in-process router carrying the
    /// identity, made once per node: no TLS connection, nothing built per request.
    pub fn nodes(&self) -> berth_kubelet::clients::NodeCredentials {
        let this = self.clone();
        std::sync::Arc::new(move |node: &str| {
            this.client(
                KUBELET_PROGRAM,
                &format!("system:node:{node}"),
                &["system:nodes", "system:authenticated"],
            )
        })
    }

    /// The client of the simulated nodes' machine config daemons: OpenShift's ServiceAccount
    /// `openshift-machine-config-operator/machine-config-daemon`, authorized by the bootstrap
    /// role `machine-config-daemon` (a node's own identity may read no MachineConfigs).
    pub fn machine_config_daemon(&self) -> kube::Client {
        self.client(
            "machine-config-daemon",
            "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:openshift-machine-config-operator",
                "system:authenticated",
            ],
        )
    }

    /// The scheduler's client.
    pub fn scheduler(&self) -> kube::Client {
        self.client("kube-scheduler", KUBE_SCHEDULER, &[])
    }
}
