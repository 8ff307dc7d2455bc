//! The operator under test in a chaos run: the suite's background commands (kuttl's way of
//! starting the operator), run with credentials of their own, each in a process group of its
//! own, killed and started again when the server signals an injected crash — as a kubelet
//! restarts a crashed container. Killing the whole group matters for scripts: the shell and the
//! `kubectl` it is running die together, so nothing of the old process writes after the crash.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::command::{self, CommandEnv};
use crate::log::Log;
use crate::types::Command;

/// How a chaos run supervises the suite's background commands.
#[derive(Debug)]
pub struct Supervision {
    /// The `$KUBECONFIG` background commands get: a user of their own, so that the server can
    /// target its faults at them while test steps keep the suite's kubeconfig.
    pub kubeconfig: PathBuf,
    /// Changes when an injected crash fired: the background commands are killed (their whole
    /// process groups) and started again.
    pub crashes: watch::Receiver<u64>,
    /// How long the background commands keep running after the last test, so that an operator
    /// that never becomes quiet shows it.
    pub settle: Duration,
    /// Told when the last test ended (the settle time starts then).
    pub tests_done: Option<oneshot::Sender<()>>,
}

/// The running background commands and the task that restarts them.
pub(crate) struct Supervisor {
    stop: oneshot::Sender<()>,
    task: JoinHandle<usize>,
}

impl Supervisor {
    /// Watches `crashes` and restarts `commands` (already running as `children`) on each.
    pub(crate) fn start(
        commands: Vec<Command>,
        env: CommandEnv,
        children: Vec<Child>,
        mut crashes: watch::Receiver<u64>,
    ) -> Supervisor {
        let (stop, mut stopped) = oneshot::channel::<()>();
        crashes.mark_unchanged();
        let task = tokio::spawn(async move {
            let mut children = children;
            let mut restarts = 0;
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    changed = crashes.changed() => {
                        if changed.is_err() {
                            // The server is gone: nothing will crash any more.
                            let _ = (&mut stopped).await;
                            break;
                        }
                        kill_all(&mut children).await;
                        restarts += 1;
                        env.log.log(
                            "",
                            &format!("injected crash: restarting the background commands (restart {restarts})"),
                        );
                        children = respawn(&commands, &env).await;
                    }
                }
            }
            kill_all(&mut children).await;
            restarts
        });
        Supervisor { stop, task }
    }

    /// Kills the background commands; how many times they were restarted.
    pub(crate) async fn stop(self) -> usize {
        let _ = self.stop.send(());
        self.task.await.unwrap_or(0)
    }
}

/// Starts the background commands again; one that cannot start is logged (the suite's asserts
/// then fail, naming what the operator did not do).
async fn respawn(commands: &[Command], env: &CommandEnv) -> Vec<Child> {
    let mut children = Vec::new();
    for c in commands.iter().filter(|c| c.background) {
        match command::run(c, env, None).await {
            Ok(Some(child)) => children.push(child),
            Ok(None) => {}
            Err(e) => env
                .log
                .log("", &format!("cannot restart a background command: {e}")),
        }
    }
    children
}

/// Kills each child's process group (SIGKILL: a crash, not a shutdown) and reaps the child.
pub(crate) async fn kill_all(children: &mut Vec<Child>) {
    for child in children.iter_mut() {
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on the process group of a child we spawned as its group leader
            // (`process_group(0)`) and have not reaped yet, so the id is still ours.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        }
        let _ = child.kill().await;
    }
    children.clear();
}

/// The log line of the crash restarts, for callers that count them in the output.
pub(crate) fn note_restarts(log: &Log, restarts: usize) {
    if restarts > 0 {
        log.log(
            "",
            &format!(
                "the background commands were restarted {restarts} times after injected crashes"
            ),
        );
    }
}
