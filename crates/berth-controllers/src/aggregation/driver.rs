//! The aggregation controller's loop: after any change to ClusterRoles, write the aggregated
//! roles whose rules are not the union they aggregate.

use berth_informers::Informer;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::time::Duration;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// When a write failed and nothing else changes, how soon it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// Watches ClusterRoles and keeps every aggregated one's rules current.
pub async fn run(client: kube::Client) {
    let api: Api<ClusterRole> = Api::all(client);
    let roles: Informer<ClusterRole> = Informer::start(api.clone(), watcher::Config::default());
    if !roles.synced().await {
        return;
    }
    let mut changed = roles.changed.clone();
    loop {
        let failed = sync(&api, &roles).await;
        let retry = async {
            match failed {
                true => tokio::time::sleep(RETRY).await,
                false => futures::future::pending().await,
            }
        };
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            _ = retry => {}
        }
        tokio::time::sleep(GATHER).await;
        changed.borrow_and_update();
    }
}

/// One pass; `true` when a write failed for another reason than a newer object.
async fn sync(api: &Api<ClusterRole>, roles: &Informer<ClusterRole>) -> bool {
    let all: Vec<ClusterRole> = roles.store.state().iter().map(|r| (**r).clone()).collect();
    let mut failed = false;
    for (name, rules) in super::reconcile(&all) {
        let Some(current) = all
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(&name))
        else {
            continue;
        };
        let mut updated = current.clone();
        updated.rules = Some(rules);
        // The stored resourceVersion is the precondition: a conflict means a newer role is
        // on its way through the watch, which starts the next pass.
        match api.replace(&name, &PostParams::default(), &updated).await {
            Ok(_) => tracing::debug!(role = %name, "aggregated cluster role updated"),
            Err(kube::Error::Api(e)) if [404, 409].contains(&e.code) => {}
            Err(e) => {
                tracing::warn!(role = %name, error = %e, "updating an aggregated cluster role failed");
                failed = true;
            }
        }
    }
    failed
}
