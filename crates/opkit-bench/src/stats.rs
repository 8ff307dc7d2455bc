//! Latency samples, percentiles, progress on stderr, and `/proc` readings.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A set of latency samples.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    values: Vec<Duration>,
    sorted: bool,
}

impl Samples {
    /// An empty set with room for `n` samples.
    pub fn with_capacity(n: usize) -> Samples {
        Samples {
            values: Vec::with_capacity(n),
            sorted: true,
        }
    }

    /// Adds one sample.
    pub fn push(&mut self, d: Duration) {
        self.values.push(d);
        self.sorted = false;
    }

    /// Adds all samples of another set.
    pub fn extend(&mut self, other: Samples) {
        self.values.extend(other.values);
        self.sorted = false;
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.values.sort_unstable();
            self.sorted = true;
        }
    }

    /// The `p`-th percentile (0–100), nearest rank; zero when empty.
    pub fn percentile(&mut self, p: f64) -> Duration {
        if self.values.is_empty() {
            return Duration::ZERO;
        }
        self.sort();
        let n = self.values.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.values[rank.clamp(1, n) - 1]
    }

    /// The median.
    pub fn median(&mut self) -> Duration {
        self.percentile(50.0)
    }

    /// The largest sample.
    pub fn max(&mut self) -> Duration {
        self.percentile(100.0)
    }
}

/// Milliseconds with a precision that suits the magnitude.
pub fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1000.0;
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// Mebibytes from kibibytes.
pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A counter that a background task reports on stderr every two seconds while it changes.
pub struct Progress {
    done: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    label: String,
    total: usize,
    started: Instant,
}

impl Progress {
    /// Starts reporting `label: done/total`.
    pub fn start(label: impl Into<String>, total: usize) -> Progress {
        let done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let label = label.into();
        {
            let (done, stop, label) = (done.clone(), stop.clone(), label.clone());
            tokio::spawn(async move {
                let mut last = 0;
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let now = done.load(Ordering::Relaxed);
                    if now != last {
                        eprintln!("  {label}: {now}/{total}");
                        last = now;
                    }
                }
            });
        }
        Progress {
            done,
            stop,
            label,
            total,
            started: Instant::now(),
        }
    }

    /// The shared counter (increment it once per finished item).
    pub fn counter(&self) -> Arc<AtomicUsize> {
        self.done.clone()
    }

    /// Counts one finished item.
    pub fn inc(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops reporting and prints the final count and elapsed time.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let done = self.done.load(Ordering::Relaxed);
        eprintln!(
            "  {}: {done}/{} in {:.2} s",
            self.label,
            self.total,
            self.started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `VmRSS` and `VmHWM` (KiB) of a process, from `/proc/PID/status`.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// User plus system CPU time a process has used so far, from `/proc/PID/stat`.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    // utime and stime are fields 14 and 15 of the line.
    stat_ticks(pid, 14)
}

/// User plus system CPU time of a process's children that ended and were waited for (with
/// theirs), from `/proc/PID/stat`.
pub fn children_cpu_time(pid: u32) -> Option<Duration> {
    // cutime and cstime are fields 16 and 17 of the line.
    stat_ticks(pid, 16)
}

/// The sum of the fields `field` and `field + 1` (1-based, clock ticks) of `/proc/PID/stat`.
fn stat_ticks(pid: u32, field: usize) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; the fields after its closing ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: u64 = fields.get(field - 3)?.parse().ok()?;
    let system: u64 = fields.get(field - 2)?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (user + system) as f64 / clock_ticks() as f64,
    ))
}

fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut s = Samples::default();
        for i in 1..=100 {
            s.push(Duration::from_millis(i));
        }
        assert_eq!(s.median(), Duration::from_millis(50));
        assert_eq!(s.percentile(99.0), Duration::from_millis(99));
        assert_eq!(s.max(), Duration::from_millis(100));
        assert_eq!(Samples::default().median(), Duration::ZERO);
    }

    #[test]
    fn proc_readings_work_for_this_process() {
        let (rss, hwm) = memory_kib(std::process::id()).unwrap();
        assert!(rss > 0 && hwm >= rss);
        assert!(cpu_time(std::process::id()).is_some());
        assert!(children_cpu_time(std::process::id()).is_some());
    }
}
