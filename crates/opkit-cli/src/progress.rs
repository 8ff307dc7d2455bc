//! Progress for long steps: a headline per step, and a status line that updates in place on a
//! terminal (plain lines when stderr is a pipe, so logs stay readable).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Announces a step (`==> building guestbook`).
pub fn step(message: impl std::fmt::Display) {
    eprintln!("==> {message}");
}

/// A status line for a wait: `update` redraws it on a terminal; `finish` ends it.
pub struct Status {
    started: Instant,
    terminal: bool,
    last_plain: Option<(String, Instant)>,
    drawn: bool,
}

impl Status {
    /// A new status line.
    pub fn new() -> Status {
        Status {
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            last_plain: None,
            drawn: false,
        }
    }

    /// Time since the status line was created.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Shows `message` with the elapsed time. On a pipe, a line is written only when the
    /// message changes or every 10 s.
    pub fn update(&mut self, message: &str) {
        const SPINNER: [char; 4] = ['|', '/', '-', '\\'];
        let secs = self.started.elapsed().as_secs_f32();
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let frame = SPINNER[(self.started.elapsed().as_millis() / 250 % 4) as usize];
            let _ = write!(err, "\r\x1b[2K    {frame} {message} ({secs:.0}s)");
            let _ = err.flush();
            self.drawn = true;
        } else {
            let due = match &self.last_plain {
                Some((last, at)) => last != message || at.elapsed() >= Duration::from_secs(10),
                None => true,
            };
            if due {
                let _ = writeln!(err, "    {message} ({secs:.0}s)");
                self.last_plain = Some((message.to_string(), Instant::now()));
            }
        }
    }

    /// Whether this status line is redrawn in place (stderr is a terminal).
    pub fn on_terminal(&self) -> bool {
        self.terminal
    }

    /// Erases the status line on a terminal, so other output can be printed; the next
    /// `update` draws it again.
    pub fn clear(&mut self) {
        if self.terminal && self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }

    /// Ends the status line with a final message.
    pub fn finish(self, message: &str) {
        let secs = self.started.elapsed().as_secs_f32();
        let mut err = std::io::stderr().lock();
        if self.terminal && self.drawn {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(err, "    {message} ({secs:.1}s)");
    }
}
