//! The stop signals long-running programs catch: the manager, `opkit up`, `opkit run`, the demo.
//!
//! Handlers must be installed before a program tells anyone it is ready: a SIGTERM sent the
//! moment a supervisor reads the ready line has to stop the program cleanly, not kill it with
//! the default action. So installing is a step of its own ([`Signals::install`]), separate
//! from waiting ([`Signals::recv`]).

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

fn install(kind: SignalKind, name: &str) -> std::io::Result<tokio::signal::unix::Signal> {
    signal(kind)
        .map_err(|e| std::io::Error::new(e.kind(), format!("installing the {name} handler: {e}")))
}

impl Signals {
    /// Catches SIGTERM and SIGINT.
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: install(SignalKind::terminate(), "SIGTERM")?,
            int: install(SignalKind::interrupt(), "SIGINT")?,
            hup: None,
        })
    }

    /// Also catches SIGHUP.
    pub fn with_hangup(mut self) -> std::io::Result<Signals> {
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
