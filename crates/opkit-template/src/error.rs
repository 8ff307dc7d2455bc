//! Typed errors whose texts are Go's, byte for byte.

/// A template error. The message is exactly what Go's `text/template` reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The template text does not parse: `template: NAME:LINE: MESSAGE`.
    #[error("{0}")]
    Parse(String),
    /// Execution failed: `template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`.
    #[error("{0}")]
    Exec(String),
    /// An option string Go does not know (Go panics with this text).
    #[error("{0}")]
    Option(String),
}

impl Error {
    /// The full message.
    pub fn message(&self) -> &str {
        match self {
            Error::Parse(m) | Error::Exec(m) | Error::Option(m) => m,
        }
    }
}
