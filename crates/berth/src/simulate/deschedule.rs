//! The descheduler of a simulation (`--descheduler-policy`), with its preview: each run's
//! chosen evictions are first scheduled in order with the run's own scheduler policy
//! ([`berth_descheduler::preview`]); a pod that fits nowhere is not evicted, and every move,
//! `pod X: node A -> node B` or `fits nowhere: not evicted`, goes into the report.

use super::observer::Observer;
use super::report::Millis;
use berth_core::clock::Clock;
use berth_descheduler::driver::{self, RunConfig, Stop};
use berth_descheduler::{Destination, Outcome, Policy};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Runs the descheduler every `interval` (the first run after one interval, as `serve` does)
/// until the runtime stops.
pub fn spawn(
    client: kube::Client,
    policy: Policy,
    interval: Duration,
    clock: Clock,
    mut scheduler: berth_scheduler::Scheduler,
    observer: Arc<Mutex<Observer>>,
    start: Instant,
) {
    let cfg = RunConfig {
        policy,
        options: Default::default(),
        dry_run: false,
        events: driver::Events::start(client.clone(), clock.clone()),
        clock: clock.clone(),
        stop: Stop::default(),
    };
    tokio::spawn(async move {
        loop {
            clock.sleep(interval.max(Duration::from_secs(1))).await;
            let mut moves = Vec::new();
            let run = driver::run_once_vetted(&client, &cfg, |nodes, pods, plan| {
                let planned =
                    berth_descheduler::preview(nodes, pods, &plan.evictions, &mut scheduler);
                moves = planned
                    .into_iter()
                    .zip(&plan.evictions)
                    .map(|(m, e)| (m, e.strategy.name().to_string()))
                    .collect();
                moves
                    .iter()
                    .map(|(m, _)| match &m.to {
                        Destination::Node(_) => None,
                        Destination::Nowhere(why) => Some(Outcome::FitsNowhere(why.clone())),
                    })
                    .collect()
            })
            .await;
            let at: Millis =
                u64::try_from(clock.instant().saturating_duration_since(start).as_millis())
                    .unwrap_or(u64::MAX);
            match run {
                Ok(_) => {
                    let mut o = observer.lock().unwrap_or_else(|e| e.into_inner());
                    for (m, strategy) in moves {
                        o.moved(at, &m, strategy);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "descheduling run failed"),
            }
        }
    });
}
