//! `kubectl kudo package add maintainer|parameter|task|plan`: KUDO's questions, asked one
//! per line. On a terminal each question is shown (with its choices and default) and a bad
//! answer is asked again; otherwise the answers are read from stdin, one per line, in the
//! order of the questions, and a bad or missing answer is an error naming the question. The
//! package directory is edited by `opkit_kudo::package::edit`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use opkit_kudo::Ordering;
use opkit_kudo::api::{Phase, PipeSpec, Plan, Step, Task, TaskSpec};
use opkit_kudo::package::edit::{self, NewParameter};

/// `package add ...`.
#[derive(Subcommand)]
pub(crate) enum AddCommand {
    /// Add a maintainer to operator.yaml: `maintainer NAME EMAIL`, or asked for.
    Maintainer(MaintainerArgs),
    /// Add a parameter to params.yaml (asked for).
    Parameter,
    /// Add a task to operator.yaml, creating the templates it names (asked for).
    Task,
    /// Add a plan to operator.yaml, and the tasks it needs (asked for).
    Plan,
}

/// The arguments of `package add maintainer`.
#[derive(Args)]
pub(crate) struct MaintainerArgs {
    /// The maintainer's name and e-mail address (asked for when absent).
    args: Vec<String>,
}

/// Asks KUDO's questions on a terminal, or reads their answers from stdin.
pub(crate) struct Prompter<R, W> {
    input: R,
    out: W,
    terminal: bool,
}

impl Prompter<std::io::StdinLock<'static>, std::io::Stderr> {
    fn stdin() -> Self {
        Prompter {
            input: std::io::stdin().lock(),
            out: std::io::stderr(),
            terminal: std::io::stdin().is_terminal(),
        }
    }
}

impl<R: BufRead, W: Write> Prompter<R, W> {
    /// One answer: the line typed (trimmed), or `default` for an empty line; checked by
    /// `valid` (asked again on a terminal, an error otherwise).
    fn ask_with(
        &mut self,
        question: &str,
        default: &str,
        valid: impl Fn(&str) -> Result<(), String>,
    ) -> anyhow::Result<String> {
        loop {
            if self.terminal {
                let shown = if default.is_empty() {
                    format!("{question}: ")
                } else {
                    format!("{question} [{default}]: ")
                };
                write!(self.out, "{shown}")?;
                self.out.flush()?;
            }
            let mut line = String::new();
            if self.input.read_line(&mut line)? == 0 {
                bail!("no answer for {question:?}: the input ended");
            }
            let mut answer = line.trim().to_string();
            if answer.is_empty() {
                answer = default.to_string();
            }
            match valid(&answer) {
                Ok(()) => return Ok(answer),
                Err(e) if self.terminal => writeln!(self.out, "{e}")?,
                Err(e) => bail!("{question}: {e}"),
            }
        }
    }

    fn ask(&mut self, question: &str, default: &str) -> anyhow::Result<String> {
        self.ask_with(question, default, |_| Ok(()))
    }

    /// One of `options` (the first is the default); with `other`, any non-empty answer.
    fn choose(&mut self, question: &str, options: &[&str], other: bool) -> anyhow::Result<String> {
        let label = format!("{question} ({})", options.join("/"));
        let default = options.first().copied().unwrap_or("");
        self.ask_with(&label, default, |a| {
            if options.contains(&a) || (other && !a.is_empty()) {
                Ok(())
            } else {
                Err(format!("choose one of {}", options.join(", ")))
            }
        })
    }

    fn confirm(&mut self, question: &str) -> anyhow::Result<bool> {
        let a = self.ask_with(&format!("{question} [y/N]"), "n", |a| {
            match a.to_lowercase().as_str() {
                "y" | "yes" | "n" | "no" => Ok(()),
                _ => Err("answer y or n".to_string()),
            }
        })?;
        Ok(a.to_lowercase().starts_with('y'))
    }
}

fn named<'a>(what: &'static str, taken: &'a [String]) -> impl Fn(&str) -> Result<(), String> + 'a {
    move |a: &str| {
        if a.is_empty() {
            Err(format!("{what} name must be > than 1 character"))
        } else if taken.iter().any(|t| t == a) {
            Err(format!("{what} name must be unique"))
        } else {
            Ok(())
        }
    }
}

/// KUDO's check of an e-mail address: something@something.something.
fn valid_email(a: &str) -> bool {
    let Some((user, host)) = a.split_once('@') else {
        return false;
    };
    !user.is_empty() && host.contains('.') && !host.starts_with('.') && !host.ends_with('.')
}

/// `package add ...` in the package found from the current directory.
pub(crate) fn run(cmd: AddCommand) -> anyhow::Result<()> {
    let dir = edit::operator_dir(Path::new("."))?;
    run_in(cmd, &dir, &mut Prompter::stdin())
}

fn run_in<R: BufRead, W: Write>(
    cmd: AddCommand,
    dir: &Path,
    p: &mut Prompter<R, W>,
) -> anyhow::Result<()> {
    match cmd {
        AddCommand::Maintainer(a) => {
            let (name, email) = match a.args.as_slice() {
                [] => {
                    let name = p.ask_with("Maintainer Name", "", |a| {
                        if a.is_empty() {
                            Err("maintainer name must be > than 1 character".into())
                        } else {
                            Ok(())
                        }
                    })?;
                    let email = p.ask_with("Maintainer Email", "", |a| {
                        if valid_email(a) {
                            Ok(())
                        } else {
                            Err("maintainer email must be valid email address".into())
                        }
                    })?;
                    (name, email)
                }
                [name, email] => (name.clone(), email.clone()),
                _ => bail!("expecting two arguments - name and email address"),
            };
            edit::add_maintainer(dir, &name, &email)?;
        }
        AddCommand::Parameter => {
            let names = edit::names(dir)?;
            let param = ask_parameter(p, &names.plans, &names.params)?;
            edit::add_parameter(dir, &param)?;
        }
        AddCommand::Task => {
            let tasks = edit::names(dir)?.tasks;
            let name = p.ask_with("Task Name", "", named("task", &tasks))?;
            let task = ask_task(p, name)?;
            edit::add_task(dir, &task)?;
        }
        AddCommand::Plan => {
            let names = edit::names(dir)?;
            let (name, plan, new_tasks) = ask_plan(p, &names.plans, names.tasks)?;
            for task in &new_tasks {
                edit::add_task(dir, task)?;
            }
            edit::add_plan(dir, &name, &plan)?;
        }
    }
    Ok(())
}

fn ask_parameter<R: BufRead, W: Write>(
    p: &mut Prompter<R, W>,
    plans: &[String],
    params: &[String],
) -> anyhow::Result<NewParameter> {
    let name = p.ask_with("Parameter Name", "", named("parameter", params))?;
    let default = p.ask("Default Value", "")?;
    let display_name = p.ask("Display Name", "")?;
    let description = p.ask("Description", "")?;
    let required = p.choose("Required", &["false", "true"], false)? == "true";
    let mut trigger = String::new();
    if p.confirm("Add Trigger Plan (defaults to deploy)")? {
        trigger = if plans.is_empty() {
            p.ask("Trigger Plan", "")?
        } else {
            let options: Vec<&str> = plans.iter().map(String::as_str).collect();
            p.choose("Trigger Plan", &options, true)?
        };
    }
    Ok(NewParameter {
        name,
        default: (!default.is_empty()).then_some(default),
        display_name,
        description,
        required,
        trigger,
    })
}

/// KUDO adds `.yaml` to a template name without an extension.
fn with_extension(name: String) -> String {
    if name.contains('.') {
        name
    } else {
        format!("{name}.yaml")
    }
}

fn ask_resources<R: BufRead, W: Write>(p: &mut Prompter<R, W>) -> anyhow::Result<Vec<String>> {
    let mut resources = Vec::new();
    loop {
        let r = p.ask_with("Task Resource", "", |a| {
            if a.is_empty() {
                Err("a resource (template file name) is needed".into())
            } else {
                Ok(())
            }
        })?;
        resources.push(with_extension(r));
        if !p.confirm("Add another Resource")? {
            return Ok(resources);
        }
    }
}

fn ask_task<R: BufRead, W: Write>(p: &mut Prompter<R, W>, name: String) -> anyhow::Result<Task> {
    let kind = p.choose("Task Kind", &["Apply", "Delete", "Pipe", "Toggle"], false)?;
    let mut spec = TaskSpec::default();
    match kind.as_str() {
        "Apply" | "Delete" => spec.resources = ask_resources(p)?,
        "Toggle" => {
            spec.resources = ask_resources(p)?;
            spec.parameter = p.ask_with("Toggle Parameter", "", |a| {
                if a.is_empty() {
                    Err("a Toggle task needs a boolean parameter".into())
                } else {
                    Ok(())
                }
            })?;
        }
        _ => {
            spec.pod = with_extension(p.ask("Pipe Pod File", "")?);
            let mut pipes = Vec::new();
            loop {
                let file = p.ask("Pipe File (internal to pod)", "")?;
                let kind = p.choose("Pipe Kind", &["ConfigMap", "Secret"], false)?;
                let key = p.ask("Pipe Kind Key", "")?;
                pipes.push(PipeSpec {
                    file,
                    kind,
                    key,
                    ..PipeSpec::default()
                });
                if !p.confirm("Add another pipe")? {
                    break;
                }
            }
            spec.pipe = Some(pipes);
        }
    }
    Ok(Task { name, kind, spec })
}

fn ordering(s: &str) -> anyhow::Result<Ordering> {
    serde_json::from_value(serde_json::Value::from(s)).with_context(|| format!("strategy {s:?}"))
}

/// KUDO's plan questions: the plan, then phases, steps and their tasks; a task name that does
/// not exist yet may be created on the spot (returned, to be added before the plan).
fn ask_plan<R: BufRead, W: Write>(
    p: &mut Prompter<R, W>,
    plans: &[String],
    mut all_tasks: Vec<String>,
) -> anyhow::Result<(String, Plan, Vec<Task>)> {
    let first = if plans.is_empty() { "deploy" } else { "" };
    let (mut phase_default, mut step_default, mut task_default) = (first, first, first);
    let name = p.ask_with("Plan Name", first, named("plan", plans))?;
    let strategy = p.choose("Plan strategy for phase", &["serial", "parallel"], false)?;
    let mut plan = Plan {
        strategy: ordering(&strategy)?,
        phases: Vec::new(),
    };
    let mut new_tasks = Vec::new();
    loop {
        let taken: Vec<String> = plan.phases.iter().map(|ph| ph.name.clone()).collect();
        let question = format!("Phase {} name", plan.phases.len() + 1);
        let phase_name = p.ask_with(&question, phase_default, named("phase", &taken))?;
        let strategy = p.choose("Phase strategy for steps", &["serial", "parallel"], false)?;
        let mut phase = Phase {
            name: phase_name,
            strategy: ordering(&strategy)?,
            steps: Vec::new(),
        };
        loop {
            let taken: Vec<String> = phase.steps.iter().map(|s| s.name.clone()).collect();
            let question = format!("Step {} name", phase.steps.len() + 1);
            let step_name = p.ask_with(&question, step_default, named("step", &taken))?;
            let mut step = Step {
                name: step_name,
                tasks: Vec::new(),
            };
            loop {
                let question = format!(
                    "Task Name {} for Step {:?}",
                    step.tasks.len() + 1,
                    step.name
                );
                let options: Vec<&str> = all_tasks
                    .iter()
                    .map(String::as_str)
                    .filter(|t| !step.tasks.iter().any(|s| s == t))
                    .collect();
                let task = if options.is_empty() {
                    p.ask_with(&question, task_default, named("task", &step.tasks))?
                } else {
                    p.choose(&question, &options, true)?
                };
                if !all_tasks.contains(&task) {
                    if !p.confirm("Create Task Now")? {
                        bail!(
                            "task {task:?} does not exist: create it now or add it first with `package add task`"
                        );
                    }
                    new_tasks.push(ask_task(p, task.clone())?);
                    all_tasks.push(task.clone());
                }
                step.tasks.push(task);
                task_default = "";
                if !p.confirm("Add another Task")? {
                    break;
                }
            }
            phase.steps.push(step);
            step_default = "";
            if !p.confirm("Add another Step")? {
                break;
            }
        }
        plan.phases.push(phase);
        phase_default = "";
        if !p.confirm("Add another Phase")? {
            break;
        }
    }
    Ok((name, plan, new_tasks))
}
