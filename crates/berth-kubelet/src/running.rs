//! The in-pod programs running in this process, by pod, so that a node's programs can be
//! stopped when its kubelet stops here (the node moved to another replica, or this replica lost
//! its own Lease): the new owner starts them, and one pod's program never runs in two replicas.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One running program.
struct Program {
    node: String,
    /// Tells the program to stop (what it sees when its pod is deleted).
    stop: Arc<watch::Sender<bool>>,
    task: JoinHandle<()>,
}

/// The programs running here, by pod uid.
#[derive(Clone, Default)]
pub struct Running(Arc<Mutex<HashMap<String, Program>>>);

impl Running {
    /// Records the program of pod `uid` on `node`, run by `task`, told to stop through `stop`.
    /// Called with the task just spawned; [`Running::ended`] is its last act.
    pub fn add(&self, uid: &str, node: &str, stop: Arc<watch::Sender<bool>>, task: JoinHandle<()>) {
        // A program that ended before it was recorded is not recorded (one that ends just
        // after this check leaves an entry that a stop finds ended: harmless).
        if task.is_finished() {
            return;
        }
        let program = Program {
            node: node.to_string(),
            stop,
            task,
        };
        if let Some(old) = self.lock().insert(uid.to_string(), program) {
            old.task.abort();
        }
    }

    /// The program of pod `uid` told to stop through `stop` ended by itself (a program
    /// started again for the same pod since is left alone).
    pub fn ended(&self, uid: &str, stop: &Arc<watch::Sender<bool>>) {
        let mut running = self.lock();
        if running.get(uid).is_some_and(|p| Arc::ptr_eq(&p.stop, stop)) {
            running.remove(uid);
        }
    }

    /// Whether pod `uid`'s program runs here.
    pub fn runs(&self, uid: &str) -> bool {
        self.lock().contains_key(uid)
    }

    /// Stops the programs of `node`'s pods: each is told to stop at once, and dropped if it has
    /// not ended within `grace` (at once for a zero grace). Returns the pod uids stopped, and a
    /// future that resolves once every one of them has ended.
    pub fn stop_node(
        &self,
        node: &str,
        grace: Duration,
    ) -> (Vec<String>, futures::future::BoxFuture<'static, ()>) {
        let stopped: Vec<(String, Program)> = {
            let mut running = self.lock();
            let uids: Vec<String> = running
                .iter()
                .filter(|(_, p)| p.node == node)
                .map(|(uid, _)| uid.clone())
                .collect();
            uids.into_iter()
                .filter_map(|uid| running.remove(&uid).map(|p| (uid, p)))
                .collect()
        };
        let uids = stopped.iter().map(|(uid, _)| uid.clone()).collect();
        for (_, p) in &stopped {
            let _ = p.stop.send(true);
            if grace.is_zero() {
                p.task.abort();
            }
        }
        let ended = async move {
            for (_, mut p) in stopped {
                if tokio::time::timeout(grace, &mut p.task).await.is_err() {
                    p.task.abort();
                    let _ = p.task.await;
                }
            }
        };
        (uids, Box::pin(ended))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Program>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::Running;
    use std::sync::Arc;
    use std::time::Duration;

    /// A program that ends when told to stop (`obeys`) or never.
    fn spawn(running: &Running, uid: &str, node: &str, obeys: bool) {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            if obeys {
                let _ = stopped.wait_for(|s| *s).await;
            } else {
                std::future::pending::<()>().await;
            }
        });
        running.add(uid, node, Arc::new(stop), task);
    }

    fn stop_of(running: &Running, uid: &str) -> Arc<tokio::sync::watch::Sender<bool>> {
        running
            .lock()
            .get(uid)
            .map(|p| p.stop.clone())
            .expect("running")
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_a_node_stops_only_its_programs_and_waits_for_them() {
        let running = Running::default();
        spawn(&running, "u1", "node-1", true);
        spawn(&running, "u2", "node-1", true);
        spawn(&running, "u3", "node-2", true);
        let (mut uids, ended) = running.stop_node("node-1", Duration::from_secs(2));
        uids.sort();
        assert_eq!(uids, ["u1", "u2"]);
        ended.await;
        assert!(!running.runs("u1") && !running.runs("u2"));
        assert!(running.runs("u3"), "another node's program keeps running");
    }

    #[tokio::test(start_paused = true)]
    async fn a_program_that_does_not_stop_is_dropped_after_the_grace() {
        let running = Running::default();
        spawn(&running, "u1", "node-1", false);
        let (uids, ended) = running.stop_node("node-1", Duration::from_secs(2));
        assert_eq!(uids, ["u1"]);
        tokio::time::timeout(Duration::from_secs(3), ended)
            .await
            .expect("dropped within the grace");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_grace_drops_programs_at_once_and_an_idle_node_stops_nothing() {
        let running = Running::default();
        spawn(&running, "u1", "node-1", false);
        let (uids, ended) = running.stop_node("node-1", Duration::ZERO);
        assert_eq!(uids, ["u1"]);
        ended.await;
        let (none, _) = running.stop_node("node-9", Duration::ZERO);
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_program_that_ended_is_forgotten() {
        let running = Running::default();
        spawn(&running, "u1", "node-1", true);
        let first = stop_of(&running, "u1");
        spawn(&running, "u1", "node-1", true);
        running.ended("u1", &first);
        assert!(
            running.runs("u1"),
            "the program started again is not the one that ended"
        );
        let second = stop_of(&running, "u1");
        running.ended("u1", &second);
        assert!(!running.runs("u1"));
        assert!(running.stop_node("node-1", Duration::ZERO).0.is_empty());
    }
}
