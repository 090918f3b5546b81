//! Terms of leadership of one group of control loops inside a `berth serve` replica.
//!
//! Upstream's components exit when they lose their Lease, which is safe because each is its
//! own process. In berth the API server shares the process with the loops, so a replica that
//! cannot renew (etcd electing a new leader, say) must stop only those loops and keep serving.
//! Each term therefore runs its loops on a Tokio runtime of its own: every task they spawn,
//! however deep inside a component (informers and their caches, watches, workers), lives on
//! that runtime and ends when the term's runtime is shut down. The replica then campaigns
//! again and starts the loops fresh when it wins.

use std::future::Future;

use berth_apiserver::Clock;
use berth_scheduler::driver::{LeaderElectionConfig, LeaderElector, LeaderError};
use tokio::sync::{oneshot, watch};

/// The loops of one term, running on their own runtime until the term is dropped.
struct Term {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Term {
    /// Starts `loops` on a new runtime named after `lease`; the receiver reads whether they
    /// started.
    fn start<F>(
        lease: &str,
        loops: F,
    ) -> std::io::Result<(Term, oneshot::Receiver<anyhow::Result<()>>)>
    where
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        // Half the cores: the API server's runtime has them all, several terms run at once,
        // and threads beyond the cores only add switches (on 2 cores, bench e2e through etcd
        // ran 3-9% faster with one worker per term than with two). The scheduler's filtering
        // splits over rayon's pool, not these workers.
        let workers = std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(format!("berth-{lease}"))
            .enable_all()
            .build()?;
        let (tx, rx) = oneshot::channel();
        runtime.spawn(async move {
            let _ = tx.send(loops.await);
        });
        Ok((
            Term {
                runtime: Some(runtime),
            },
            rx,
        ))
    }
}

impl Drop for Term {
    /// Ends every task of the term at its next await point; nothing waits for them (this runs
    /// on the main runtime, where blocking is not allowed).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Campaigns for `election`'s Lease for as long as the process runs: each time this replica
/// wins, `loops` start fresh in a new [`Term`]; each time it loses, the term ends and the
/// replica campaigns again. Loops that fail to start give the Lease up for another replica.
pub async fn campaign<F>(
    client: kube::Client,
    election: LeaderElectionConfig,
    clock: Clock,
    what: &'static str,
    loops: impl Fn() -> F + Send + Sync + 'static,
) where
    F: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let lease = format!("{}/{}", election.namespace, election.name);
    loop {
        let (tx, mut leading) = watch::channel(false);
        let (give_up, given_up) = oneshot::channel::<()>();
        let elector = LeaderElector::new(client.clone(), election.clone(), clock.clone());
        let mut running = tokio::spawn(elector.run(tx, async move {
            let _ = given_up.await;
        }));
        // The elector reports only once it has led, so the channel stays open until then.
        if leading.wait_for(|leading| *leading).await.is_err() {
            tokio::time::sleep(election.retry_period).await;
            continue;
        }
        println!("leading {lease}: starting {what}");
        let (term, mut started) = match Term::start(&election.name, loops()) {
            Ok(term) => term,
            Err(e) => {
                tracing::error!(%lease, error = %e, "no runtime for {what}; giving the lease up");
                let _ = give_up.send(());
                let _ = running.await;
                tokio::time::sleep(election.retry_period).await;
                continue;
            }
        };
        let mut give_up = Some(give_up);
        let mut starting = true;
        let ended = loop {
            tokio::select! {
                ended = &mut running => break ended,
                outcome = &mut started, if starting => {
                    starting = false;
                    let failed = match outcome {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(format!("{e:#}")),
                        Err(_) => Some("the loops ended before they started".to_string()),
                    };
                    if let Some(e) = failed {
                        tracing::error!(%lease, error = %e, "starting {what} failed; giving the lease up");
                        if let Some(give_up) = give_up.take() {
                            let _ = give_up.send(());
                        }
                    }
                }
            }
        };
        drop(term);
        match ended {
            // The elector has logged it at warn, in upstream's words.
            Ok(Err(LeaderError::Lost(reason))) => {
                println!("leaderelection lost: {reason}; stopped {what}, campaigning again");
            }
            Ok(Ok(())) => println!("gave {lease} up; stopped {what}, campaigning again"),
            Err(e) => tracing::error!(%lease, error = %e, "the elector failed; campaigning again"),
        }
        tokio::time::sleep(election.retry_period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::Term;

    #[tokio::test]
    async fn ending_a_term_stops_every_task_its_loops_spawned() {
        let (spawned_tx, spawned) = tokio::sync::oneshot::channel();
        let (held, dropped) = tokio::sync::oneshot::channel::<()>();
        let (term, started) = Term::start("test", async move {
            // A task spawned deep inside a component, holding state until it is dropped.
            tokio::spawn(async move {
                let _held = held;
                let _ = spawned_tx.send(());
                std::future::pending::<()>().await;
            });
            Ok(())
        })
        .expect("runtime");
        started.await.expect("reported").expect("started");
        spawned.await.expect("spawned");
        drop(term);
        // Resolves (as closed) only once the task, and what it held, is gone.
        assert!(dropped.await.is_err());
    }
}
