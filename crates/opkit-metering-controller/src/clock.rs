//! The clock the metering controller reads: the system's, or — for tests that must move time
//! in another process — an instant read from a file. History events are stamped with it and
//! periods fall due by it, so a test that writes the file controls both exactly.

use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;

/// Where the current time comes from.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// The RFC 3339 instant written in this file (a test rewrites it to move time).
    File(PathBuf),
}

/// A controlled clock that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the metering clock file {path}: {message}")]
pub struct ClockError {
    path: PathBuf,
    message: String,
}

impl Clock {
    /// The current time.
    pub fn now(&self) -> Result<Timestamp, ClockError> {
        match self {
            Clock::System => Ok(Timestamp::now()),
            Clock::File(path) => {
                let fail = |message: String| ClockError {
                    path: path.clone(),
                    message,
                };
                let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
                opkit_apimachinery::time::parse_time(text.trim()).map_err(|e| fail(e.to_string()))
            }
        }
    }

    /// How long to sleep before looking at the time again when waiting for `wait` on this clock:
    /// `wait` on the system clock; at most a quarter second on a file clock, which moves in jumps.
    pub(crate) fn sleep_for(&self, wait: Duration) -> Duration {
        match self {
            Clock::System => wait,
            Clock::File(_) => wait.min(Duration::from_millis(250)),
        }
    }
}
