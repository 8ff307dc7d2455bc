//! The operator under test in a chaos run: the suite's background commands (kuttl's way of
//! starting the operator), run with credentials of their own, each in a process group of its
//! own, killed and started again when the server signals an injected crash — as a kubelet
//! restarts a crashed container. Killing the whole group matters for scripts: the shell and the
//! `kubectl` it is running die together, so nothing of the old process writes after the crash.
//! An operator running as a task of the test process (`chaos::Operator::task`) is aborted and
//! spawned again instead. A paused-leader fault stops the operator's process groups (SIGSTOP),
//! starts a successor as a user of its own, and lets the old one continue (SIGCONT) when the
//! server says the successor took over.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use opkit_apiserver::faults::{Faults, Leadership};
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
    /// How long the operator must go without a write after the last test to be quiet; the
    /// background commands keep running until it did.
    pub settle: Duration,
    /// The server's faults: their crashes ([`Faults::crashes`]) kill the background commands
    /// (their whole process groups) and start them again; their trace counts the operator's
    /// writes; they know the watches a fault ended that the operator has not opened again
    /// ([`Faults::relists_pending`]): after the last test, the run waits for them.
    pub faults: Faults,
    /// Told when the last test ended and the operator caught up (the settle time starts then).
    pub tests_done: Option<oneshot::Sender<()>>,
    /// A paused leader's successor (`--chaos leader`), if the run may pause one.
    pub succession: Option<Succession>,
}

/// How a paused leader is succeeded.
#[derive(Debug, Clone)]
pub struct Succession {
    /// Changes when the server pauses the leader and when the successor took over.
    pub leadership: watch::Receiver<Leadership>,
    /// The `$KUBECONFIG` of the successor: a user of its own, so that the server tells the
    /// old leader's writes from the successor's.
    pub kubeconfig: PathBuf,
}

/// The running background commands and the task that restarts them.
pub(crate) struct Supervisor {
    stop: oneshot::Sender<()>,
    task: JoinHandle<usize>,
}

/// Starts an in-process operator: a task of its own.
pub(crate) type StartTask = Arc<dyn Fn() -> JoinHandle<()> + Send + Sync>;

/// What a supervisor kills and starts again.
pub(crate) enum Instances {
    /// Background commands, running as `children`.
    Commands {
        /// The commands.
        commands: Vec<Command>,
        /// How they run.
        env: CommandEnv,
        /// Their processes.
        children: Vec<Child>,
    },
    /// An operator running as a task of this process.
    Task {
        /// Spawns it.
        start: StartTask,
        /// The running task.
        running: JoinHandle<()>,
        /// Where the restart lines go.
        log: Log,
    },
}

impl Instances {
    fn log(&self) -> &Log {
        match self {
            Instances::Commands { env, .. } => &env.log,
            Instances::Task { log, .. } => log,
        }
    }

    /// Kills every instance: a crash, not a shutdown.
    async fn kill(&mut self) {
        match self {
            Instances::Commands { children, .. } => kill_all(children).await,
            Instances::Task { running, .. } => {
                running.abort();
                let _ = running.await;
            }
        }
    }

    /// Sends `signal` to every process group (SIGSTOP, SIGCONT); `false` for a task, which
    /// cannot be paused.
    fn signal(&self, signal: libc::c_int) -> bool {
        let Instances::Commands { children, .. } = self else {
            return false;
        };
        for pid in children.iter().filter_map(Child::id) {
            // SAFETY: kill(2) on the process group of a child we spawned as its group leader
            // and have not reaped yet, so the id is still ours.
            unsafe { libc::kill(-(pid as libc::pid_t), signal) };
        }
        true
    }

    /// A second set of the same commands, started with `kubeconfig` (a paused leader's
    /// successor); `None` for a task.
    async fn successor(&self, kubeconfig: &std::path::Path) -> Option<Instances> {
        let Instances::Commands { commands, env, .. } = self else {
            return None;
        };
        let env = CommandEnv {
            kubeconfig: kubeconfig.to_path_buf(),
            ..env.clone()
        };
        let children = respawn(commands, &env).await;
        Some(Instances::Commands {
            commands: commands.clone(),
            env,
            children,
        })
    }

    /// Starts them again.
    async fn respawn(&mut self) {
        match self {
            Instances::Commands {
                commands,
                env,
                children,
            } => *children = respawn(commands, env).await,
            Instances::Task { start, running, .. } => *running = start(),
        }
    }
}

impl Supervisor {
    /// Watches the crashes of `faults` and restarts the (running) `instances` on each (once
    /// they are dead, the server serves the operator again: [`Faults::restarted`]); with a
    /// `succession`, pauses them and starts a successor when the server pauses the leader.
    pub(crate) fn start(
        mut instances: Instances,
        faults: Faults,
        succession: Option<Succession>,
    ) -> Supervisor {
        let mut crashes = faults.crashes();
        let (stop, mut stopped) = oneshot::channel::<()>();
        crashes.mark_unchanged();
        let kubeconfig = succession.as_ref().map(|s| s.kubeconfig.clone());
        let mut leadership = succession.map(|s| s.leadership);
        if let Some(l) = &mut leadership {
            l.mark_unchanged();
        }
        let task = tokio::spawn(async move {
            let mut restarts = 0;
            // The paused old leader, once the successor runs.
            let mut paused: Option<Instances> = None;
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    now = leadership_change(&mut leadership) => {
                        let Some(now) = now else {
                            // The server is gone: no leader will be paused any more.
                            leadership = None;
                            continue;
                        };
                        match (now, &kubeconfig) {
                            (Leadership::Paused, Some(kubeconfig)) if paused.is_none() => {
                                if !instances.signal(libc::SIGSTOP) {
                                    instances.log().log("", "an in-process operator cannot be paused");
                                    continue;
                                }
                                instances.log().log("", "injected pause: the leader is stopped (SIGSTOP), a successor starts");
                                if let Some(next) = instances.successor(kubeconfig).await {
                                    paused = Some(std::mem::replace(&mut instances, next));
                                }
                            }
                            (Leadership::Resumed, _) => {
                                if let Some(old) = &paused {
                                    old.log().log("", "the successor took over: the old leader resumes (SIGCONT)");
                                    old.signal(libc::SIGCONT);
                                }
                            }
                            _ => {}
                        }
                    }
                    changed = crashes.changed() => {
                        if changed.is_err() {
                            // The server is gone: nothing will crash any more.
                            let _ = (&mut stopped).await;
                            break;
                        }
                        instances.kill().await;
                        faults.restarted();
                        restarts += 1;
                        instances.log().log(
                            "",
                            &format!("injected crash: restarting the operator under test (restart {restarts})"),
                        );
                        instances.respawn().await;
                    }
                }
            }
            instances.kill().await;
            if let Some(mut old) = paused {
                old.kill().await;
            }
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

/// The next change of `leadership`; `None` when its server is gone; never without one.
async fn leadership_change(
    leadership: &mut Option<watch::Receiver<Leadership>>,
) -> Option<Leadership> {
    match leadership {
        Some(l) => match l.changed().await {
            Ok(()) => Some(*l.borrow_and_update()),
            Err(_) => None,
        },
        None => std::future::pending().await,
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

/// How many settle times a run waits at most for the operator to become quiet.
pub(crate) const QUIET_WAIT: u32 = 5;

/// Waits after the last test until the operator has gone `settle` without a write (its writes
/// counted by the server's trace), at most [`QUIET_WAIT`] settle times: whether it became quiet.
/// An operator catching up after a restart (a level-triggered reconcile of everything, its
/// writes landing after the test's last assert passed) settles within a moment; one whose
/// writes trigger more writes never does.
pub(crate) async fn become_quiet(faults: &Faults, settle: Duration) -> bool {
    let writes = || faults.trace().writes.len();
    let start = tokio::time::Instant::now();
    let (mut seen, mut since) = (writes(), start);
    loop {
        let now = tokio::time::Instant::now();
        if now >= since + settle {
            return true;
        }
        if now >= start + settle * QUIET_WAIT {
            return false;
        }
        tokio::time::sleep(crate::poll::INTERVAL.min(since + settle - now)).await;
        let n = writes();
        if n != seen {
            (seen, since) = (n, tokio::time::Instant::now());
        }
    }
}

/// The longest a run waits after its last step for the operator to watch again what a fault
/// ended: client-go's and kube-rs's backoff before a relist starts at 800 ms (with jitter) and
/// doubles after each failure.
pub(crate) const RELIST_WAIT: Duration = Duration::from_secs(10);

/// Waits until the operator has opened again every watch a fault ended with `410 Expired`
/// (`relists` reaches 0), at most [`RELIST_WAIT`]. Until it relists it acts on what it saw
/// before the fault: its end state is not yet its answer to the test, and judging it then
/// blames the operator for the client's backoff. One that does not relist in time is logged
/// and judged as it stands.
pub(crate) async fn await_relists(relists: &mut watch::Receiver<usize>, log: &Log) {
    let caught_up = relists.wait_for(|pending| *pending == 0);
    match tokio::time::timeout(RELIST_WAIT, caught_up).await {
        Ok(_) => {}
        Err(_) => log.log(
            "",
            &format!(
                "the operator did not watch again within {RELIST_WAIT:?} after a watch ended with \
                 410 Expired: judged as it stands"
            ),
        ),
    }
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
