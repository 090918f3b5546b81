//! Which control loops are down right now: a cheap shared handle that a loop supervisor
//! writes and the API server's `/readyz` reads (`poststarthook/berth-control-loops`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The names of the control loops that are down (crashed and waiting to restart). Cloning
/// shares it; every method takes a short lock and never blocks on I/O.
#[derive(Clone, Debug, Default)]
pub struct LoopHealth {
    down: Arc<Mutex<BTreeSet<String>>>,
}

impl LoopHealth {
    /// A handle on which no loop is down.
    pub fn new() -> LoopHealth {
        LoopHealth::default()
    }

    /// Records that loop `name` stopped (panicked or returned) and is not running.
    pub fn down(&self, name: &str) {
        self.lock().insert(name.to_string());
    }

    /// Records that loop `name` is running (again).
    pub fn up(&self, name: &str) {
        self.lock().remove(name);
    }

    /// Whether every loop is running.
    pub fn healthy(&self) -> bool {
        self.lock().is_empty()
    }

    /// The loops that are down, by name.
    pub fn failing(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A set of names stays consistent even if a holder panicked.
        self.down.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_is_down_makes_the_whole_unhealthy_until_it_is_up() {
        let health = LoopHealth::new();
        let shared = health.clone();
        assert!(health.healthy());
        shared.down("taint-manager");
        shared.down("job-controller");
        assert!(!health.healthy());
        assert_eq!(health.failing(), ["job-controller", "taint-manager"]);
        shared.up("taint-manager");
        shared.up("job-controller");
        assert!(health.healthy());
    }
}
