//! The stop signals the long-running commands (`up`, `run`, `demo`) catch.
//!
//! Handlers must be installed before a command tells anyone it is ready: a SIGTERM sent the
//! moment a supervisor reads the ready line has to stop the command cleanly, not kill it with
//! the default action.

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

/// Which stop signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM.
    Terminate,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGHUP (the terminal closed); only with [`Signals::with_hangup`].
    Hangup,
}

/// SIGTERM and SIGINT (and optionally SIGHUP), caught from the moment they are installed;
/// each may arrive more than once.
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: Option<tokio::signal::unix::Signal>,
}

fn install(kind: SignalKind, name: &str) -> anyhow::Result<tokio::signal::unix::Signal> {
    signal(kind).with_context(|| format!("installing the {name} handler"))
}

impl Signals {
    /// Catches SIGTERM and SIGINT.
    pub fn install() -> anyhow::Result<Signals> {
        Ok(Signals {
            term: install(SignalKind::terminate(), "SIGTERM")?,
            int: install(SignalKind::interrupt(), "SIGINT")?,
            hup: None,
        })
    }

    /// Also catches SIGHUP.
    pub fn with_hangup(mut self) -> anyhow::Result<Signals> {
        self.hup = Some(install(SignalKind::hangup(), "SIGHUP")?);
        Ok(self)
    }

    /// Waits for the next stop signal.
    pub async fn recv(&mut self) -> Stop {
        let hangup = async {
            match &mut self.hup {
                Some(hup) => {
                    hup.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = self.term.recv() => Stop::Terminate,
            _ = self.int.recv() => Stop::Interrupt,
            () = hangup => Stop::Hangup,
        }
    }
}
