//! The run's output lines, in kuttl's (Go `testing -v`) shapes: `=== RUN`, `--- PASS: …`, and
//! logger lines `    HH:MM:SS | <test>[/<step>] | <message>` (without Go's `file:line:`
//! prefixes). Lines go to a sink, so the CLI prints them and tests capture them.

use std::sync::{Arc, Mutex};

/// Where output lines go.
#[derive(Clone)]
pub struct Log {
    sink: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Log")
    }
}

impl Log {
    /// Lines go to `sink`, one call per line (without the newline).
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Log {
        Log {
            sink: Arc::new(sink),
        }
    }

    /// Lines go to standard output.
    pub fn stdout() -> Log {
        Log::new(|line| println!("{line}"))
    }

    /// Lines are collected into the returned buffer (for tests and tools).
    pub fn buffer() -> (Log, Arc<Mutex<String>>) {
        let buf = Arc::new(Mutex::new(String::new()));
        let b = buf.clone();
        let log = Log::new(move |line| {
            let mut b = b.lock().unwrap_or_else(|e| e.into_inner());
            b.push_str(line);
            b.push('\n');
        });
        (log, buf)
    }

    /// A raw line.
    pub fn line(&self, line: &str) {
        (self.sink)(line);
    }

    /// A logger line for `prefix` (`test` or `test/0-step`; "" for suite lines); continuation
    /// lines are indented as Go's testing indents them.
    pub fn log(&self, prefix: &str, message: &str) {
        let time = jiff::Zoned::now().strftime("%H:%M:%S").to_string();
        let mut lines = message.trim_end_matches('\n').split('\n');
        let first = lines.next().unwrap_or("");
        let mut out = format!("    {time} | {prefix} | {first}");
        for l in lines {
            out.push_str("\n        ");
            out.push_str(l);
        }
        self.line(&out);
    }
}
