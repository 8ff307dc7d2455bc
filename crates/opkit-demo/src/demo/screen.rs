//! Where frames go: redrawn in place on a terminal, printed on change to a pipe.
//!
//! On a terminal the view takes the alternate screen with the cursor hidden (plain ANSI
//! escapes; no raw mode, so Ctrl-C stays an ordinary SIGINT) and gives both back on every way
//! out: [`Screen::leave`], dropping the [`Screen`] (errors, early returns) and — through a
//! panic hook — a panic, so a crash never leaves the user's shell on a blank screen without
//! a cursor. Piped output gets whole plain frames, only when the shown state changed and at
//! most once a second, each flushed at once so `tee` and CI logs follow along.

use std::io::{IsTerminal, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::scenario::Caption;
use super::view::{self, Header, Snapshot};

/// Whether the terminal is in the demo's alternate screen (read by the panic hook).
static ALTERNATE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

const ENTER: &str = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
const LEAVE: &str = "\x1b[?25h\x1b[?1049l";
/// The minimum time between two printed frames when piped.
const PRINT_EVERY: Duration = Duration::from_secs(1);
/// The height assumed when the terminal does not say.
const DEFAULT_HEIGHT: usize = 40;

/// The demo's output.
pub struct Screen {
    tty: bool,
    entered: bool,
    printed: Option<(Snapshot, Caption)>,
    last_print: Option<Instant>,
}

impl Screen {
    /// A screen on stdout, live if stdout is a terminal.
    pub fn new() -> Screen {
        Screen {
            tty: std::io::stdout().is_terminal(),
            entered: false,
            printed: None,
            last_print: None,
        }
    }

    /// On a terminal: switches to the alternate screen and hides the cursor.
    pub fn enter(&mut self) -> std::io::Result<()> {
        if !self.tty || self.entered {
            return Ok(());
        }
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_terminal();
                previous(info);
            }));
        });
        ALTERNATE.store(true, Ordering::SeqCst);
        self.entered = true;
        let mut out = std::io::stdout().lock();
        out.write_all(ENTER.as_bytes())?;
        out.flush()
    }

    /// Shows the frame: redrawn on a terminal; printed when piped if it changed and the last
    /// print is a second old.
    pub fn show(
        &mut self,
        header: &Header,
        snapshot: &Snapshot,
        caption: &Caption,
    ) -> anyhow::Result<()> {
        if self.tty {
            if self.entered && !ALTERNATE.load(Ordering::SeqCst) {
                anyhow::bail!("the demo panicked (see above); stopping");
            }
            let (cols, rows) = terminal_size().unwrap_or((view::WIDTH, DEFAULT_HEIGHT));
            let lines = frame(header, snapshot, caption, rows);
            let mut text = String::from("\x1b[H");
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str(&line.render(cols.min(view::WIDTH), true));
                text.push_str("\x1b[K");
            }
            text.push_str("\x1b[J");
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            return Ok(());
        }
        let due = self.last_print.is_none_or(|at| at.elapsed() >= PRINT_EVERY);
        if due {
            self.print(header, snapshot, caption)?;
        }
        Ok(())
    }

    /// The last frame when piped, if it is not printed yet.
    pub fn finish(
        &mut self,
        header: &Header,
        snapshot: &Snapshot,
        caption: &Caption,
    ) -> anyhow::Result<()> {
        if !self.tty {
            self.print(header, snapshot, caption)?;
        }
        Ok(())
    }

    fn print(
        &mut self,
        header: &Header,
        snapshot: &Snapshot,
        caption: &Caption,
    ) -> anyhow::Result<()> {
        let state = (snapshot.clone(), caption.clone());
        if self.printed.as_ref() == Some(&state) {
            return Ok(());
        }
        let lines = frame(header, snapshot, caption, usize::MAX);
        let mut text = String::new();
        for line in &lines {
            text.push_str(&line.render(view::WIDTH, false));
            text.push('\n');
        }
        text.push('\n');
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        self.printed = Some(state);
        self.last_print = Some(Instant::now());
        Ok(())
    }

    /// Gives the terminal back (normal screen, cursor shown); idempotent.
    pub fn leave(&mut self) {
        if self.entered {
            self.entered = false;
            restore_terminal();
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.leave();
    }
}

fn frame(header: &Header, snapshot: &Snapshot, caption: &Caption, rows: usize) -> Vec<view::Line> {
    view::render(
        header,
        snapshot,
        caption,
        header.started.elapsed(),
        Timestamp::now(),
        rows,
    )
}

/// Leaves the alternate screen and shows the cursor, once, if the demo took the terminal.
fn restore_terminal() {
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        let mut out = std::io::stdout();
        let _ = out.write_all(LEAVE.as_bytes());
        let _ = out.flush();
    }
}

/// The terminal's columns and rows, if stdout is a terminal that says.
fn terminal_size() -> Option<(usize, usize)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which is valid and
    // exclusively borrowed for the duration of the call.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_row > 0 && size.ws_col > 0)
        .then(|| (usize::from(size.ws_col), usize::from(size.ws_row)))
}
