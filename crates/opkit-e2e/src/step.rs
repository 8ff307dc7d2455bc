//! One kuttl step, in kuttl's order: delete what `TestStep.delete` names (and wait), run the
//! step's commands, apply every object, then poll once a second (a chaos run: every 100 ms)
//! until every assert matches, the TestAssert commands and CEL expressions pass and no errors
//! object matches — or the timeout passes; collectors run when it fails.
//!
//! On purpose unlike kuttl: a failing step command stops the step before the apply (kuttl
//! applies anyway), and an assert command never runs without a timeout (kuttl does when less
//! than a second remains).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::command::{self, CommandEnv, CommandError};
use crate::discovery::Step;
use crate::log::Log;
use crate::operation::{Created, Target};
use crate::types::{Collector, Command};

/// How often kuttl checks a step's asserts again.
pub(crate) const KUTTL_INTERVAL: Duration = Duration::from_secs(1);

/// What a step run needs.
pub(crate) struct StepContext<'a> {
    pub target: &'a Target,
    pub test_dir: &'a Path,
    pub cwd: &'a Path,
    pub kubeconfig: &'a Path,
    /// The suite's per-step timeout, in seconds.
    pub suite_timeout: i64,
    /// How often the asserts are checked again ([`KUTTL_INTERVAL`] unless a chaos run).
    pub assert_interval: Duration,
    pub log: &'a Log,
    pub test: &'a str,
}

/// How a step went.
pub(crate) struct StepOutcome {
    pub errors: Vec<String>,
    pub created: Vec<Created>,
    pub duration: Duration,
}

fn secs(s: i64) -> Duration {
    Duration::from_secs(s.max(0) as u64)
}

impl StepContext<'_> {
    fn prefix(&self, step: &Step) -> String {
        format!("{}/{}", self.test, step.label())
    }

    fn command_env(&self, step: &Step) -> CommandEnv {
        CommandEnv {
            namespace: self.target.namespace.clone(),
            kubeconfig: self.kubeconfig.to_path_buf(),
            workdir: self.test_dir.to_path_buf(),
            cwd: self.cwd.to_path_buf(),
            log: self.log.clone(),
            prefix: self.prefix(step),
            own_group: false,
        }
    }

    /// The assert window: `TestAssert.timeout` when set, else the suite's.
    fn window(&self, step: &Step) -> i64 {
        match step.assert.as_ref().map(|a| a.timeout) {
            Some(t) if t != 0 => t,
            _ => self.suite_timeout,
        }
    }

    /// Runs `step`.
    pub(crate) async fn run(&self, step: &Step) -> StepOutcome {
        let start = Instant::now();
        let mut created = Vec::new();
        let errors = self.run_inner(step, &mut created).await;
        let prefix = self.prefix(step);
        let duration = start.elapsed();
        let word = if errors.is_empty() {
            "completed"
        } else {
            "failed"
        };
        self.log.log(
            &prefix,
            &format!(
                "test step {word} {} ({:.2}s)",
                step.label(),
                duration.as_secs_f64()
            ),
        );
        StepOutcome {
            errors,
            created,
            duration,
        }
    }

    async fn run_inner(&self, step: &Step, created: &mut Vec<Created>) -> Vec<String> {
        let prefix = self.prefix(step);
        self.log
            .log(&prefix, &format!("starting test step {}", step.label()));
        let window = self.window(step);
        let suite_timeout = secs(self.suite_timeout);
        if let Some(ts) = &step.step {
            if !ts.delete.is_empty() {
                let mut log = |line: String| self.log.log(&prefix, &line);
                if let Err(e) = self.target.delete(&ts.delete, secs(window), &mut log).await {
                    return vec![e];
                }
            }
            if !ts.commands.is_empty()
                && let Err(e) = command::run_all(
                    &ts.commands,
                    &self.command_env(step),
                    Some(suite_timeout),
                    false,
                )
                .await
            {
                return vec![e.to_string()];
            }
        }
        let mut errors = Vec::new();
        for object in &step.apply {
            match self.target.apply(object, suite_timeout).await {
                Ok((line, made)) => {
                    self.log.log(&prefix, &line);
                    created.extend(made);
                }
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return errors;
        }
        if window < 0 {
            // kuttl: a negative TestAssert.timeout skips the assertions.
            return Vec::new();
        }
        let deadline = Instant::now() + secs(window);
        let errors = loop {
            let (errors, aborted) = self.check(step, deadline).await;
            if errors.is_empty() || aborted || Instant::now() + self.assert_interval > deadline {
                break errors;
            }
            tokio::time::sleep(self.assert_interval).await;
        };
        if !errors.is_empty()
            && let Some(ta) = &step.assert
        {
            self.collect(step, &ta.collectors).await;
        }
        errors
    }

    /// One evaluation of everything the step asserts; `true` when a command timed out.
    async fn check(&self, step: &Step, deadline: Instant) -> (Vec<String>, bool) {
        let mut errors = Vec::new();
        let mut aborted = false;
        for expected in &step.asserts {
            errors.extend(self.target.assert(expected).await);
        }
        if let Some(ta) = &step.assert {
            let env = self.command_env(step);
            for c in &ta.commands {
                let remaining = deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_secs(1));
                let cmd = Command {
                    command: c.command.clone(),
                    script: c.script.clone(),
                    namespaced: c.namespaced,
                    skip_log_output: c.skip_log_output,
                    ..Command::default()
                };
                match command::run(&cmd, &env, Some(remaining)).await {
                    Ok(_) => {}
                    Err(e) => {
                        aborted |= matches!(e, CommandError::TimedOut(..));
                        errors.push(e.to_string());
                    }
                }
            }
            if !ta.resource_refs.is_empty()
                || !step.assert_all.is_empty()
                || !step.assert_any.is_empty()
            {
                errors.extend(
                    self.target
                        .cel(&ta.resource_refs, &step.assert_all, &step.assert_any)
                        .await,
                );
            }
        }
        for expected in &step.errors {
            errors.extend(self.target.absent(expected).await);
        }
        (errors, aborted)
    }

    /// Runs the collectors of a failed assert (their failures are only logged).
    async fn collect(&self, step: &Step, collectors: &[Collector]) {
        let env = self.command_env(step);
        for c in collectors {
            let (header, command) = match collector_command(c, &self.target.namespace) {
                Ok(x) => x,
                Err(e) => {
                    self.log.log(
                        &env.prefix,
                        &format!("skipping invalid assertion collector: {e}"),
                    );
                    continue;
                }
            };
            self.log.log(
                &env.prefix,
                &format!("collecting log output for [{header}]"),
            );
            let cmd = Command {
                command,
                ignore_failure: true,
                ..Command::default()
            };
            if let Err(e) = command::run(&cmd, &env, Some(secs(self.suite_timeout))).await {
                self.log.log(&env.prefix, &format!("collector failed: {e}"));
            }
        }
    }
}

/// The header and the command line of a collector (kuttl's `collector.go`).
fn collector_command(c: &Collector, test_namespace: &str) -> Result<(String, String), String> {
    let kind = if !c.kind.is_empty() {
        c.kind.to_ascii_lowercase()
    } else if !c.command.is_empty() {
        "command".to_string()
    } else {
        "pod".to_string()
    };
    let ns = if c.namespace.is_empty() {
        test_namespace
    } else {
        &c.namespace
    };
    let mut header = vec![format!("type=={kind}")];
    if !c.pod.is_empty() {
        header.push(format!("pod=={}", c.pod));
    }
    if !c.selector.is_empty() {
        header.push(format!("label: {}", c.selector));
    }
    if !c.namespace.is_empty() {
        header.push(format!("namespace: {}", c.namespace));
    }
    if !c.container.is_empty() {
        header.push(format!("container: {}", c.container));
    }
    if !c.command.is_empty() {
        header.push(format!("command: {}", c.command));
    }
    let command = match kind.as_str() {
        "pod" => {
            if c.pod.is_empty() && c.selector.is_empty() {
                return Err("pod collector requires a pod or a selector".into());
            }
            if !c.command.is_empty() {
                return Err("pod collector cannot have a command".into());
            }
            let mut cmd = String::from("kubectl logs --prefix");
            if !c.pod.is_empty() {
                cmd.push_str(&format!(" {}", c.pod));
            }
            if !c.selector.is_empty() {
                cmd.push_str(&format!(" -l {}", c.selector));
            }
            cmd.push_str(&format!(" -n {ns}"));
            if c.container.is_empty() {
                cmd.push_str(" --all-containers");
            } else {
                cmd.push_str(&format!(" -c {}", c.container));
            }
            let tail = if c.tail != 0 {
                c.tail
            } else if c.selector.is_empty() {
                -1
            } else {
                10
            };
            cmd.push_str(&format!(" --tail={tail}"));
            cmd
        }
        "events" => {
            if !c.selector.is_empty() || !c.container.is_empty() || !c.command.is_empty() {
                return Err("events collector takes no selector, container or command".into());
            }
            let pod = if c.pod.is_empty() {
                String::new()
            } else {
                format!(" {}", c.pod)
            };
            format!("kubectl get events{pod} -n {ns}")
        }
        "command" => {
            if c.command.is_empty() {
                return Err("command collector requires a command".into());
            }
            if !c.pod.is_empty()
                || !c.namespace.is_empty()
                || !c.container.is_empty()
                || !c.selector.is_empty()
            {
                return Err(
                    "command collector takes no pod, namespace, container or selector".into(),
                );
            }
            c.command.clone()
        }
        other => return Err(format!("unknown collector type {other:?}")),
    };
    Ok((header.join(","), command))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectors_become_kuttls_kubectl_commands() {
        let pod = Collector {
            selector: "app=x".into(),
            ..Collector::default()
        };
        assert_eq!(
            collector_command(&pod, "ns").unwrap().1,
            "kubectl logs --prefix -l app=x -n ns --all-containers --tail=10"
        );
        let events = Collector {
            kind: "Events".into(),
            ..Collector::default()
        };
        assert_eq!(
            collector_command(&events, "ns").unwrap().1,
            "kubectl get events -n ns"
        );
        assert!(collector_command(&Collector::default(), "ns").is_err());
    }
}
