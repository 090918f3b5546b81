//! When a failed event write is tried again, as upstream's two broadcasters do: up to
//! [`MAX_TRIES`] attempts while the server cannot be reached; an answer from the server (a
//! `Status`) ends the attempts, since the same event would be refused again.
//!
//! The waits differ by API, as upstream's: the core recorder (`tools/record`) sleeps a random
//! part of [`RETRY_SLEEP`] before its first retry (so clients do not retry in step after an
//! outage) and the whole of it after; the `events.k8s.io` broadcaster (`tools/events`) sleeps
//! [`RETRY_SLEEP`] with up to 25 % jitter every time. Waits go through tokio's clock, so a
//! paused runtime advances them.

use std::time::Duration;

/// Attempts per event (upstream `maxTriesPerEvent`).
pub const MAX_TRIES: u32 = 12;
/// The wait between attempts (upstream `defaultSleepDuration`).
pub const RETRY_SLEEP: Duration = Duration::from_secs(10);

/// Which API the event is written through (their waits differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Core,
    EventsV1,
}

/// The wait after the `tries`-th failed attempt (1-based); `unit` is a random number in [0, 1).
pub fn delay(api: Api, tries: u32, unit: f64) -> Duration {
    let unit = unit.clamp(0.0, 1.0);
    match api {
        Api::Core if tries <= 1 => RETRY_SLEEP.mul_f64(unit),
        Api::Core => RETRY_SLEEP,
        Api::EventsV1 => RETRY_SLEEP + RETRY_SLEEP.mul_f64(0.25 * unit),
    }
}

/// What a failed attempt leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Try again after [`delay`] (the server could not be reached).
    Retry,
    /// Give the event up (the server answered, or the request cannot be built).
    Abandon,
}

/// Upstream's `recordEvent` error handling. `series` says the write was the creation that
/// follows a series patch of a missing event: an `AlreadyExists` then means the event was
/// created meanwhile, and patching it again will work.
pub fn after(error: &kube::Error, series: bool) -> After {
    match error {
        kube::Error::Api(status) if series && status.code == 409 => After::Retry,
        kube::Error::Api(_) => After::Abandon,
        // The request is built the same way next time.
        kube::Error::BuildRequest(_) | kube::Error::HttpError(_) => After::Abandon,
        _ => After::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("m", "AlreadyExists")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn the_core_recorder_randomizes_only_its_first_wait() {
        assert_eq!(delay(Api::Core, 1, 0.5), Duration::from_secs(5));
        assert_eq!(delay(Api::Core, 1, 0.0), Duration::ZERO);
        assert_eq!(delay(Api::Core, 2, 0.5), RETRY_SLEEP);
        assert_eq!(delay(Api::Core, 11, 0.9), RETRY_SLEEP);
    }

    #[test]
    fn the_events_v1_broadcaster_jitters_every_wait_by_a_quarter() {
        assert_eq!(delay(Api::EventsV1, 1, 0.0), RETRY_SLEEP);
        assert_eq!(delay(Api::EventsV1, 5, 1.0), Duration::from_millis(12_500));
        assert_eq!(delay(Api::EventsV1, 5, 0.5), Duration::from_millis(11_250));
    }

    #[test]
    fn an_answer_from_the_server_ends_the_attempts() {
        assert_eq!(after(&status(422), false), After::Abandon);
        assert_eq!(after(&status(403), false), After::Abandon);
        assert_eq!(after(&status(409), false), After::Abandon);
        assert_eq!(after(&status(500), true), After::Abandon);
    }

    #[test]
    fn an_event_created_meanwhile_is_patched_again() {
        assert_eq!(after(&status(409), true), After::Retry);
    }

    #[test]
    fn an_unreachable_server_is_tried_again() {
        let e = kube::Error::Service("connection refused".into());
        assert_eq!(after(&e, false), After::Retry);
    }
}
