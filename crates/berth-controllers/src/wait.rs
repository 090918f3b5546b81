//! How level-triggered controller loops wait: for a change signal of their informers, or until
//! a deadline (a back-off, a schedule) passes.

use futures::future::{select_all, BoxFuture};
use futures::FutureExt;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Waits until one of the signals fires or `until` passes; then marks all signals seen.
/// A short pause afterwards lets a burst of changes arrive as one pass.
pub async fn wait(signals: &mut [&mut watch::Receiver<()>], until: Option<Instant>) {
    {
        let changes: Vec<BoxFuture<'_, ()>> = signals
            .iter_mut()
            .map(|rx| {
                async move {
                    if rx.changed().await.is_err() {
                        futures::future::pending::<()>().await;
                    }
                }
                .boxed()
            })
            .collect();
        let deadline = async {
            match until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            _ = select_all(changes) => {}
            _ = deadline => {}
        }
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    for rx in signals.iter_mut() {
        rx.borrow_and_update();
    }
}
