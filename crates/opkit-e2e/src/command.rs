//! Commands and scripts of suites, steps, asserts and collectors, run as kuttl runs them:
//! `command` env-expanded (Go `os.Expand`: `$NAMESPACE`, `$$` → `$`, unknown → "") and split
//! shell-style, `script` through `sh -c`, with `NAMESPACE`, `KUBECONFIG` and `PATH=<cwd>/bin/:…`
//! set, output logged line by line, and a timeout.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::log::Log;
use crate::types::Command;

/// Why a command failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CommandError {
    /// The command's fields do not make sense.
    #[error("{0}")]
    Invalid(String),
    /// It exited non-zero.
    #[error("command {0:?} failed, {1}")]
    Failed(String, String),
    /// It ran past its timeout.
    #[error("command {0:?} exceeded {1} sec timeout, context deadline exceeded")]
    TimedOut(String, u64),
    /// It could not be started.
    #[error("{0}")]
    Exec(String),
}

/// Where and how commands run.
#[derive(Debug, Clone)]
pub(crate) struct CommandEnv {
    /// `$NAMESPACE` (and `--namespace` of namespaced commands).
    pub namespace: String,
    /// `$KUBECONFIG`.
    pub kubeconfig: PathBuf,
    /// The working directory.
    pub workdir: PathBuf,
    /// The process's working directory (`$PATH` gets `<cwd>/bin/` first).
    pub cwd: PathBuf,
    /// Output lines.
    pub log: Log,
    /// The logger prefix (`test/0-step`).
    pub prefix: String,
    /// Start each process in a process group of its own, so that killing the group ends
    /// everything it started (a supervised operator under test).
    pub own_group: bool,
}

impl CommandEnv {
    fn vars(&self) -> HashMap<String, String> {
        let mut vars: HashMap<String, String> = std::env::vars().collect();
        let path = format!(
            "{}/bin/:{}",
            self.cwd.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vars.insert("NAMESPACE".into(), self.namespace.clone());
        vars.insert("KUBECONFIG".into(), self.kubeconfig.display().to_string());
        vars.insert("PATH".into(), path);
        vars
    }
}

fn is_special(c: u8) -> bool {
    matches!(c, b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-') || c.is_ascii_digit()
}

fn is_name(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

/// Go's `getShellName`: the name after a `$` and how many bytes it takes.
fn shell_name(s: &[u8]) -> (&[u8], usize) {
    if s[0] == b'{' {
        if s.len() > 2 && is_special(s[1]) && s[2] == b'}' {
            return (&s[1..2], 3);
        }
        return match s.iter().position(|&c| c == b'}') {
            Some(1) => (&[], 2),
            Some(i) => (&s[1..i], i + 1),
            None => (&[], 1),
        };
    }
    if is_special(s[0]) {
        return (&s[0..1], 1);
    }
    let n = s.iter().take_while(|&&c| is_name(c)).count();
    (&s[..n], n)
}

/// Go's `os.Expand` with kuttl's mapping: `$$` → `$`, unknown variables → "".
pub(crate) fn expand(s: &str, vars: &HashMap<String, String>) -> String {
    let bytes = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            out.extend_from_slice(&bytes[start..i]);
            let (name, w) = shell_name(&bytes[i + 1..]);
            if name.is_empty() && w > 0 {
                // Bad syntax: the characters are eaten.
            } else if name.is_empty() {
                out.push(b'$');
            } else {
                let name = String::from_utf8_lossy(name);
                if name == "$" {
                    out.push(b'$');
                } else if let Some(v) = vars.get(name.as_ref()) {
                    out.extend_from_slice(v.as_bytes());
                }
            }
            i += 1 + w;
            start = i;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start.min(bytes.len())..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// kuttl's `Command.String()`: the command, or the script without comments, blank lines and a
/// leading `set -…`, lines joined by a literal `\n `, cut to 70 characters.
pub(crate) fn describe(cmd: &Command) -> String {
    if !cmd.command.is_empty() {
        return cmd.command.clone();
    }
    let lines: Vec<&str> = cmd
        .script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let lines = match lines.first() {
        Some(first) if first.starts_with("set -") => &lines[1..],
        _ => &lines[..],
    };
    let joined = lines.join("\\n ");
    if joined.chars().count() > 70 {
        format!("{}...", joined.chars().take(67).collect::<String>())
    } else {
        joined
    }
}

fn has_namespace_flag(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "-n"
            || a == "--namespace"
            || a.starts_with("--namespace=")
            || (a.starts_with("-n") && !a.starts_with("--"))
    })
}

/// The argv of a command (kuttl's `GetArgs`).
pub(crate) fn argv(cmd: &Command, env: &CommandEnv) -> Result<Vec<String>, CommandError> {
    match (cmd.command.is_empty(), cmd.script.is_empty()) {
        (false, false) => {
            return Err(CommandError::Invalid(
                "command and script can not be set in the same configuration".into(),
            ));
        }
        (true, true) => {
            return Err(CommandError::Invalid(
                "command or script must be set".into(),
            ));
        }
        (true, false) if cmd.namespaced => {
            return Err(CommandError::Invalid(
                "script can not used 'namespaced', use the $NAMESPACE environment variable instead"
                    .into(),
            ));
        }
        (true, false) => return Ok(vec!["sh".into(), "-c".into(), cmd.script.clone()]),
        (false, true) => {}
    }
    let expanded = expand(&cmd.command, &env.vars());
    let mut args = shlex::split(&expanded).ok_or_else(|| {
        CommandError::Invalid(format!("command {:?}: unbalanced quotes", cmd.command))
    })?;
    if args.is_empty() {
        return Err(CommandError::Invalid(
            "command or script must be set".into(),
        ));
    }
    if cmd.namespaced && !has_namespace_flag(&args[1..]) {
        args.push("--namespace".into());
        args.push(env.namespace.clone());
    }
    Ok(args)
}

/// The timeout a command gets: its own if positive, none if negative, else `default`.
fn effective_timeout(cmd: &Command, default: Option<Duration>) -> Option<Duration> {
    match cmd.timeout {
        t if t > 0 => Some(Duration::from_secs(t as u64)),
        t if t < 0 => None,
        _ => default,
    }
}

async fn pump(reader: impl tokio::io::AsyncRead + Unpin, log: Log, prefix: String, skip: bool) {
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if !skip {
            log.log(&prefix, &line);
        }
    }
}

/// Runs one command; a background one is returned still running.
pub(crate) async fn run(
    cmd: &Command,
    env: &CommandEnv,
    default_timeout: Option<Duration>,
) -> Result<Option<Child>, CommandError> {
    let args = argv(cmd, env)?;
    env.log.log(
        &env.prefix,
        &format!("running command: [{}]", args.join(" ")),
    );
    let mut process = tokio::process::Command::new(&args[0]);
    process
        .args(&args[1..])
        .current_dir(&env.workdir)
        .envs(env.vars())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if env.own_group {
        process.process_group(0);
    }
    let mut child = process
        .spawn()
        .map_err(|e| CommandError::Exec(format!("exec: {:?}: {e}", args[0])))?;
    let out = child.stdout.take().map(|o| {
        tokio::spawn(pump(
            o,
            env.log.clone(),
            env.prefix.clone(),
            cmd.skip_log_output,
        ))
    });
    let err = child.stderr.take().map(|o| {
        tokio::spawn(pump(
            o,
            env.log.clone(),
            env.prefix.clone(),
            cmd.skip_log_output,
        ))
    });
    if cmd.background {
        return Ok(Some(child));
    }
    let timeout = effective_timeout(cmd, default_timeout);
    let status = match timeout {
        Some(t) => match tokio::time::timeout(t, child.wait()).await {
            Ok(s) => s,
            Err(_) => {
                let _ = child.kill().await;
                for h in [out, err].into_iter().flatten() {
                    let _ = h.await;
                }
                if cmd.ignore_failure {
                    return Ok(None);
                }
                return Err(CommandError::TimedOut(describe(cmd), t.as_secs()));
            }
        },
        None => child.wait().await,
    }
    .map_err(|e| CommandError::Exec(e.to_string()))?;
    for h in [out, err].into_iter().flatten() {
        let _ = h.await;
    }
    if status.success() || cmd.ignore_failure {
        return Ok(None);
    }
    let how = match status.code() {
        Some(code) => format!("exit status {code}"),
        None => "signal: killed".to_string(),
    };
    Err(CommandError::Failed(describe(cmd), how))
}

/// Runs `commands` in order; the first failure stops the rest. Background commands (allowed
/// only when `allow_background`) are returned running.
pub(crate) async fn run_all(
    commands: &[Command],
    env: &CommandEnv,
    default_timeout: Option<Duration>,
    allow_background: bool,
) -> Result<Vec<Child>, CommandError> {
    let mut background = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        let mut c = c.clone();
        if c.background && !allow_background {
            env.log.log(
                &env.prefix,
                "background commands are not allowed for steps and will be run in foreground",
            );
            c.background = false;
        }
        match run(&c, env, default_timeout).await {
            Ok(Some(child)) => background.push(child),
            Ok(None) => {}
            Err(e) => {
                let rest = commands.len() - i - 1;
                if rest > 0 {
                    env.log.log(
                        &env.prefix,
                        &format!("command failure, skipping {rest} additional commands"),
                    );
                }
                return Err(e);
            }
        }
    }
    Ok(background)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> HashMap<String, String> {
        [("NAMESPACE", "ns"), ("A", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn expansion_follows_go_os_expand() {
        let v = vars();
        assert_eq!(expand("kubectl -n $NAMESPACE get", &v), "kubectl -n ns get");
        assert_eq!(expand("${A}b $Ab", &v), "xb ");
        assert_eq!(expand("cost $$5 and $1 $@", &v), "cost $5 and  ");
        assert_eq!(expand("end$", &v), "end$");
        assert_eq!(expand("${}x", &v), "x");
    }

    #[test]
    fn scripts_are_described_without_comments_and_cut() {
        let c = Command {
            script: "set -e\n# hi\necho a\n\necho b\n".into(),
            ..Command::default()
        };
        assert_eq!(describe(&c), "echo a\\n echo b");
        let long = Command {
            script: "x".repeat(100),
            ..Command::default()
        };
        assert_eq!(describe(&long).len(), 70);
    }

    #[test]
    fn namespaced_commands_get_a_namespace_unless_they_name_one() {
        let env = CommandEnv {
            namespace: "ns".into(),
            kubeconfig: "k".into(),
            workdir: ".".into(),
            cwd: ".".into(),
            log: Log::new(|_| {}),
            prefix: String::new(),
            own_group: false,
        };
        let c = |s: &str| Command {
            command: s.into(),
            namespaced: true,
            ..Command::default()
        };
        assert_eq!(
            argv(&c("kubectl get pods"), &env).unwrap().join(" "),
            "kubectl get pods --namespace ns"
        );
        assert_eq!(
            argv(&c("kubectl get pods -n x"), &env).unwrap().join(" "),
            "kubectl get pods -n x"
        );
        assert_eq!(
            argv(&c("kubectl get --namespace=x"), &env)
                .unwrap()
                .join(" "),
            "kubectl get --namespace=x"
        );
        let both = Command {
            command: "a".into(),
            script: "b".into(),
            ..Command::default()
        };
        assert!(
            argv(&both, &env)
                .unwrap_err()
                .to_string()
                .contains("can not be set in the same")
        );
    }
}
