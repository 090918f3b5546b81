//! What a component still has to write when it is told to stop: queued and in-flight events
//! (of the scheduler, the descheduler and the controllers) and status updates, bindings in flight (each of which queues a `Scheduled`
//! event), and the descheduler's eviction in flight with its `Descheduled` event.
//!
//! Every such piece of work holds a [`Ticket`] while it is pending; [`Outstanding::settle`]
//! waits, with a bound, until none is left. Upstream's event broadcaster does the same on
//! `Shutdown()`: the watchers are disconnected, but the queued events are still distributed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::sync::Notify;

/// How long a stopping scheduler waits for its queued events to be written. A pod stopped by
/// the kubelet has 30 s (the default `terminationGracePeriodSeconds`) before SIGKILL; 10 s is
/// ample for a full queue (1000 events, 4 writers, milliseconds each against a live server)
/// and leaves the rest of that grace to give up the Lease and exit. An unreachable server
/// cannot hold the exit longer than this.
pub const EVENT_FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// A count of pending work and a way to wait for it to reach zero. Cloning shares the count.
#[derive(Debug, Clone, Default)]
pub struct Outstanding(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    pending: AtomicUsize,
    idle: Notify,
}

/// One piece of pending work; dropping it (written, failed, or discarded) ends it.
#[derive(Debug)]
pub struct Ticket(Outstanding);

impl Drop for Ticket {
    fn drop(&mut self) {
        let inner = &(self.0).0;
        if inner.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            inner.idle.notify_waiters();
        }
    }
}

static PROCESS: LazyLock<Outstanding> = LazyLock::new(Outstanding::default);

impl Outstanding {
    /// The process's count: every scheduler's recorder in this process adds to it.
    pub fn process() -> Outstanding {
        PROCESS.clone()
    }

    /// Starts one piece of work.
    pub fn start(&self) -> Ticket {
        self.0.pending.fetch_add(1, Ordering::SeqCst);
        Ticket(self.clone())
    }

    /// Pieces of work not yet ended.
    pub fn pending(&self) -> usize {
        self.0.pending.load(Ordering::SeqCst)
    }

    /// Waits until no work is pending, or `limit` (tokio time) has passed; returns how much
    /// is left (0 when everything was written).
    pub async fn settle(&self, limit: Duration) -> usize {
        let idle = async {
            loop {
                let notified = self.0.idle.notified();
                tokio::pin!(notified);
                // Registered before the check, so a drop to zero in between still wakes us.
                notified.as_mut().enable();
                if self.pending() == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::select! {
            () = idle => {}
            () = tokio::time::sleep(limit) => {}
        }
        self.pending()
    }
}

/// Waits (at most [`EVENT_FLUSH_LIMIT`]) for the events this process's schedulers and
/// descheduler queued, and the bindings and evictions they have in flight, to be written; returns how many were left unwritten.
/// Call it once scheduling has stopped, before the process exits.
pub async fn flush_events() -> usize {
    let left = Outstanding::process().settle(EVENT_FLUSH_LIMIT).await;
    if left > 0 {
        tracing::warn!(
            left,
            limit = ?EVENT_FLUSH_LIMIT,
            "exiting with events still unwritten"
        );
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    // Plain runtimes (this crate's tokio has no test-util): nothing here waits on time but the
    // last test, which gives up after 10 ms.

    #[tokio::test]
    async fn settling_with_nothing_pending_returns_at_once() {
        let o = Outstanding::default();
        assert_eq!(o.settle(Duration::from_secs(3600)).await, 0);
    }

    #[tokio::test]
    async fn settling_waits_until_the_last_ticket_is_dropped() {
        let o = Outstanding::default();
        let tickets: Vec<Ticket> = (0..3).map(|_| o.start()).collect();
        assert_eq!(o.pending(), 3);
        let writer = tokio::spawn(async move {
            for t in tickets {
                tokio::task::yield_now().await;
                drop(t);
            }
        });
        assert_eq!(o.settle(Duration::from_secs(3600)).await, 0);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn settling_gives_up_at_the_limit_and_says_what_is_left() {
        let o = Outstanding::default();
        let _stuck = o.start();
        let _also = o.start();
        assert_eq!(o.settle(Duration::from_millis(10)).await, 2);
    }

    #[test]
    fn clones_share_one_count() {
        let o = Outstanding::default();
        let t = o.clone().start();
        assert_eq!(o.pending(), 1);
        drop(t);
        assert_eq!(o.pending(), 0);
    }
}
