//! The aggregation controller's loop: after any change to ClusterRoles, write the aggregated
//! roles whose rules are not the union they aggregate.

use crate::workqueue::Queue;
use berth_informers::Informer;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::time::Duration;

/// How long a burst of changes may gather into one pass.
const GATHER: Duration = Duration::from_millis(20);
/// When a write failed and nothing else changes, how soon it is tried again; the wait
/// doubles with each failed pass in a row (a 403 that lasts is not retried every second).
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between retries.
const MAX_RETRY: Duration = Duration::from_secs(300);

/// The wait before the retry that follows `failures` failed passes in a row (at least 1).
fn retry_after(failures: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(MAX_RETRY)
}

/// Watches ClusterRoles and keeps every aggregated one's rules current; each aggregated role
/// a pass checks is one key of `queue` (upstream's `ClusterRoleAggregator`).
pub async fn run(client: kube::Client, queue: Queue) {
    let api: Api<ClusterRole> = Api::all(client);
    let roles: Informer<ClusterRole> = Informer::start(api.clone(), watcher::Config::default());
    if !roles.synced().await {
        return;
    }
    let mut changed = roles.changed.clone();
    let mut failures = 0u32;
    loop {
        failures = match sync(&api, &roles, &queue).await {
            true => failures.saturating_add(1),
            false => 0,
        };
        let retry = async {
            match failures {
                0 => futures::future::pending().await,
                n => tokio::time::sleep(retry_after(n)).await,
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
async fn sync(api: &Api<ClusterRole>, roles: &Informer<ClusterRole>, queue: &Queue) -> bool {
    let all: Vec<ClusterRole> = roles.store.state().iter().map(|r| (**r).clone()).collect();
    let aggregated = all.iter().filter(|r| r.aggregation_rule.is_some()).count();
    let mut pass = queue.pass(aggregated);
    let writes = super::reconcile(&all);
    // The aggregated roles already current are synced at once; each other is one write.
    pass.skip(aggregated.saturating_sub(writes.len()));
    let mut failed = false;
    for (name, rules) in writes {
        let work = pass.take();
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
                work.retry();
                failed = true;
            }
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_passes_in_a_row_wait_longer_each_time_up_to_the_bound() {
        assert_eq!(retry_after(1), Duration::from_secs(1));
        assert_eq!(retry_after(2), Duration::from_secs(2));
        assert_eq!(retry_after(4), Duration::from_secs(8));
        assert_eq!(retry_after(40), MAX_RETRY);
    }
}
