//! The wall clock the CronJob controller schedules by, injectable so tests need not wait for
//! the next minute.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

/// A source of the current time.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(Timestamp::now))
    }

    /// The system clock moved `ahead` into the future (a test can make a `* * * * *` CronJob
    /// due at once by running a minute ahead).
    pub fn ahead(ahead: Duration) -> Clock {
        let ahead = jiff::SignedDuration::try_from(ahead).unwrap_or(jiff::SignedDuration::ZERO);
        Clock(Arc::new(move || {
            Timestamp::now()
                .checked_add(ahead)
                .unwrap_or_else(|_| Timestamp::now())
        }))
    }

    /// A clock reading `now` from a function.
    pub fn from_fn(now: impl Fn() -> Timestamp + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(now))
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clock({})", self.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ahead_runs_ahead_of_the_system_clock() {
        let c = Clock::ahead(Duration::from_secs(60));
        let minute = jiff::SignedDuration::from_secs(60);
        // Bracketed by two readings of the system clock: no bound on how long reading takes.
        let before = Timestamp::now();
        let ahead = c.now();
        let after = Timestamp::now();
        assert!(
            before + minute <= ahead && ahead <= after + minute,
            "{before} <= {ahead} - 60 s <= {after}"
        );
    }
}
