//! `kubectl kudo plan status|history|trigger` (KUDO's) and `plan abandon|retry` (opkit's):
//! the plan tree of an instance, and the writes that ask the manager to run or end a plan
//! (the CLI/manager protocol: a manual trigger is `spec.planExecution = {planName, uid}`;
//! abandon is the annotation [`ABANDON_ANNOTATION`] holding the running plan's uid).

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use opkit_kudo::api::{ExecutionStatus, PlanStatus};
use opkit_kudo::{Instance, OperatorVersion};

use super::output::{self, Format, Tree};
use super::{Global, Kudo, last_executed_plan, parse_wait_time};

/// The annotation `plan abandon` sets: the uid of the plan run to end.
pub(crate) const ABANDON_ANNOTATION: &str = "kudo.opkit.dev/abandon";

/// `plan ...`.
#[derive(Subcommand)]
pub(crate) enum PlanCommand {
    /// Show the plans of an instance and where they are.
    Status(StatusArgs),
    /// List the plans of an instance and when each last ran.
    History(InstanceArg),
    /// Run a plan of an instance now.
    Trigger(TriggerArgs),
    /// End the running (or stuck) plan of an instance with FATAL_ERROR, so it can take a new one (opkit).
    Abandon(InstanceArg),
    /// Run a plan that ended in FATAL_ERROR again (opkit; the last plan unless --name).
    Retry(RetryArgs),
}

/// `--instance`.
#[derive(Args)]
pub(crate) struct InstanceArg {
    /// The instance.
    #[arg(long)]
    instance: Option<String>,
}

/// The flags of `plan status`.
#[derive(Args)]
pub(crate) struct StatusArgs {
    /// The instance.
    #[arg(long)]
    instance: Option<String>,
    /// Also show how long ago the plan changed and its run's uid (opkit).
    #[arg(long)]
    wide: bool,
    /// Print the instance's status as yaml or json.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
}

/// The flags of `plan trigger`.
#[derive(Args)]
pub(crate) struct TriggerArgs {
    /// The plan to run.
    #[arg(long)]
    name: Option<String>,
    /// The instance.
    #[arg(long)]
    instance: Option<String>,
    /// Wait until the plan ends.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits (seconds or a duration).
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_time: Duration,
}

/// The flags of `plan retry`.
#[derive(Args)]
pub(crate) struct RetryArgs {
    /// The instance.
    #[arg(long)]
    instance: Option<String>,
    /// The plan to retry (default: the plan that ran last).
    #[arg(long)]
    name: Option<String>,
    /// Wait until the plan ends.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits (seconds or a duration).
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_time: Duration,
}

fn instance_flag(i: Option<String>) -> anyhow::Result<String> {
    i.filter(|i| !i.is_empty())
        .context("please choose the instance with '--instance=<instanceName>'")
}

pub(crate) async fn run(cmd: PlanCommand, g: &Global) -> anyhow::Result<()> {
    match cmd {
        PlanCommand::Status(a) => status(a, g).await,
        PlanCommand::History(a) => history(a, g).await,
        PlanCommand::Trigger(a) => trigger(a, g).await,
        PlanCommand::Abandon(a) => abandon(a, g).await,
        PlanCommand::Retry(a) => retry(a, g).await,
    }
}

async fn status(args: StatusArgs, g: &Global) -> anyhow::Result<()> {
    let name = instance_flag(args.instance)?;
    let kudo = Kudo::connect(g).await?;
    let instance = kudo
        .instances()
        .get_opt(&name)
        .await?
        .with_context(|| format!("instance {}/{name} does not exist", kudo.namespace))?;
    if let Some(format) = args.output {
        print!(
            "{}",
            output::object(&instance.status.clone().unwrap_or_default(), format)?
        );
        return Ok(());
    }
    let ov_name = instance
        .spec
        .operator_version
        .name
        .clone()
        .unwrap_or_default();
    let ov = kudo
        .operator_versions()
        .get_opt(&ov_name)
        .await?
        .with_context(|| {
            format!(
                "OperatorVersion {ov_name} from instance {}/{name} does not exist",
                kudo.namespace
            )
        })?;
    print!(
        "{}",
        status_text(&instance, &ov, &kudo.namespace, args.wide)
    );
    Ok(())
}

fn message(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(" ({m})")
    }
}

fn go_time(t: &Time, layout: &str) -> String {
    t.0.strftime(layout).to_string()
}

/// KUDO's `plan status` tree (every step with its status and message, e.g. the failing
/// task's error); `wide` adds how long ago the plan changed, the run's uid, and each step's
/// time (from the manager's `kudo.opkit.dev/step-times` annotation, see `opkit_kudo::timing`).
pub(crate) fn status_text(
    instance: &Instance,
    ov: &OperatorVersion,
    ns: &str,
    wide: bool,
) -> String {
    let name = instance.metadata.name.clone().unwrap_or_default();
    let Some(last) = last_executed_plan(instance) else {
        return format!("No plan ever run for instance - nothing to show for instance {name}\n");
    };
    let phase_strategy = |phase: &str| {
        ov.spec
            .plans
            .values()
            .flat_map(|p| &p.phases)
            .find(|p| p.name == phase)
            .map(|p| p.strategy.as_str())
            .unwrap_or("")
    };
    let mut root = Tree::new(".");
    let top = root.add(format!(
        "{name} (Operator-Version: \"{}\" Active-Plan: \"{}\")",
        instance
            .spec
            .operator_version
            .name
            .clone()
            .unwrap_or_default(),
        last.name
    ));
    for (plan_name, plan) in &ov.spec.plans {
        if *plan_name == last.name {
            let mut line = format!(
                "Plan {plan_name} ({} strategy) [{}]{}",
                plan.strategy.as_str(),
                last.status,
                message(&last.message)
            );
            if let Some(t) = &last.last_updated_timestamp {
                line.push_str(&format!(
                    ", last updated {}",
                    go_time(t, "%Y-%m-%d %H:%M:%S")
                ));
                if wide {
                    line.push_str(&format!(" ({})", ago(t)));
                }
            }
            if wide && !last.uid.is_empty() {
                line.push_str(&format!(" uid {}", last.uid));
            }
            let plan_tree = top.add(line);
            let times = wide
                .then(|| {
                    let all = opkit_kudo::timing::parse(
                        instance
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(opkit_kudo::STEP_TIMES_ANNOTATION))
                            .map(String::as_str),
                    );
                    all.get(&last.name).filter(|t| t.uid == last.uid).cloned()
                })
                .flatten();
            add_phases(plan_tree, last, &phase_strategy, times.as_ref());
        } else {
            let plan_tree = top.add(format!(
                "Plan {plan_name} ({} strategy) [NOT ACTIVE]",
                plan.strategy.as_str()
            ));
            for phase in &plan.phases {
                let phase_tree = plan_tree.add(format!(
                    "Phase {} ({} strategy) [NOT ACTIVE]",
                    phase.name,
                    phase.strategy.as_str()
                ));
                for step in &phase.steps {
                    phase_tree.add(format!("Step {} [NOT ACTIVE]", step.name));
                }
            }
        }
    }
    format!(
        "Plan(s) for \"{name}\" in namespace \"{ns}\":\n{}\n",
        root.render()
    )
}

fn add_phases(
    plan_tree: &mut Tree,
    last: &PlanStatus,
    phase_strategy: &dyn Fn(&str) -> &'static str,
    times: Option<&opkit_kudo::timing::PlanTimes>,
) {
    for phase in &last.phases {
        let phase_tree = plan_tree.add(format!(
            "Phase {} ({} strategy) [{}]{}",
            phase.name,
            phase_strategy(&phase.name),
            phase.status,
            message(&phase.message)
        ));
        for step in &phase.steps {
            let took = times
                .and_then(|t| {
                    t.steps
                        .get(&opkit_kudo::timing::step_key(&phase.name, &step.name))
                })
                .map(step_time)
                .unwrap_or_default();
            phase_tree.add(format!(
                "Step {} [{}]{}{took}",
                step.name,
                step.status,
                message(&step.message)
            ));
        }
    }
}

/// ` (took 3s)` for a finished step, ` (running for 3s)` for a started one.
fn step_time(t: &opkit_kudo::timing::StepTime) -> String {
    match (&t.started, &t.finished) {
        (Some(s), Some(f)) => format!(" (took {}s)", (f.0.as_second() - s.0.as_second()).max(0)),
        (Some(s), None) => format!(" (running for {}s)", seconds_since(s)),
        _ => String::new(),
    }
}

fn ago(t: &Time) -> String {
    format!("{}s ago", seconds_since(t))
}

/// Whole seconds from `t` to now (0 for a time in the future).
fn seconds_since(t: &Time) -> i64 {
    (k8s_openapi::jiff::Timestamp::now().as_second() - t.0.as_second()).max(0)
}

async fn history(args: InstanceArg, g: &Global) -> anyhow::Result<()> {
    let name = instance_flag(args.instance)?;
    let kudo = Kudo::connect(g).await?;
    let instance = kudo
        .instances()
        .get_opt(&name)
        .await?
        .with_context(|| format!("instance {}/{name} does not exist", kudo.namespace))?;
    let mut root = Tree::new(".");
    for plan in instance.status.iter().flat_map(|s| s.plan_status.values()) {
        let msg = match &plan.last_updated_timestamp {
            Some(t) => format!(
                "last finished run at {} ({})",
                go_time(t, "%Y-%m-%dT%H:%M:%S"),
                plan.status
            ),
            None if plan.status.is_running() => "is running".to_string(),
            None if plan.status == ExecutionStatus::NeverRun => "never run".to_string(),
            None => plan.status.to_string(),
        };
        root.add(format!("{} ({msg})", plan.name));
    }
    println!("{}", root.render());
    Ok(())
}

/// Merge-patches `spec.planExecution = {planName, uid: <new>}`; returns the uid.
async fn start_plan(kudo: &Kudo, name: &str, plan: &str) -> anyhow::Result<String> {
    let uid = uuid::Uuid::new_v4().to_string();
    let patch = serde_json::json!({"spec": {"planExecution": {"planName": plan, "uid": uid}}});
    kudo.instances()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| {
            format!(
                "triggering plan {plan} of instance {}/{name}",
                kudo.namespace
            )
        })?;
    Ok(uid)
}

async fn trigger(args: TriggerArgs, g: &Global) -> anyhow::Result<()> {
    let name = instance_flag(args.instance)?;
    let plan = args
        .name
        .filter(|p| !p.is_empty())
        .context("please choose the plan name with '--name=<planName>'")?;
    let kudo = Kudo::connect(g).await?;
    let instance = kudo.instance(&name).await?;
    let ov = kudo.operator_version_of(&instance).await?;
    if !ov.spec.plans.contains_key(&plan) {
        bail!(
            "plan {plan} does not exist in operatorversion {} (it has: {})",
            ov.metadata.name.clone().unwrap_or_default(),
            ov.spec.plans.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let previous = instance
        .status
        .as_ref()
        .and_then(|s| s.plan_status.get(&plan))
        .map(|p| p.uid.clone());
    start_plan(&kudo, &name, &plan).await?;
    println!(
        "Triggered {plan} plan for {}/{name} instance",
        kudo.namespace
    );
    if args.wait {
        kudo.wait_for_plan(&name, previous.as_deref(), args.wait_time)
            .await?;
    }
    Ok(())
}

/// The uid of the plan run an instance is running now, if any.
fn running_plan(instance: &Instance) -> Option<(String, String)> {
    let pe = &instance.spec.plan_execution;
    if !pe.plan_name.is_empty() && !pe.uid.is_empty() {
        return Some((pe.plan_name.clone(), pe.uid.clone()));
    }
    instance
        .status
        .as_ref()?
        .plan_status
        .values()
        .find(|p| p.status.is_running() && !p.uid.is_empty())
        .map(|p| (p.name.clone(), p.uid.clone()))
}

async fn abandon(args: InstanceArg, g: &Global) -> anyhow::Result<()> {
    let name = instance_flag(args.instance)?;
    let kudo = Kudo::connect(g).await?;
    let instance = kudo.instance(&name).await?;
    let Some((plan, uid)) = running_plan(&instance) else {
        bail!(
            "instance {}/{name} runs no plan: nothing to abandon (see `kubectl kudo plan status \
             --instance {name}`)",
            kudo.namespace
        );
    };
    let patch = serde_json::json!({"metadata": {"annotations": {ABANDON_ANNOTATION: uid}}});
    kudo.instances()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| {
            format!(
                "abandoning plan {plan} of instance {}/{name}",
                kudo.namespace
            )
        })?;
    println!(
        "Abandoning {plan} plan (uid {uid}) of {}/{name} instance: the manager ends it with FATAL_ERROR",
        kudo.namespace
    );
    Ok(())
}

async fn retry(args: RetryArgs, g: &Global) -> anyhow::Result<()> {
    let name = instance_flag(args.instance)?;
    let kudo = Kudo::connect(g).await?;
    let instance = kudo.instance(&name).await?;
    let plans = instance
        .status
        .as_ref()
        .map(|s| &s.plan_status)
        .cloned()
        .unwrap_or_default();
    let plan = match args.name.filter(|p| !p.is_empty()) {
        Some(p) => plans.get(&p).cloned().with_context(|| {
            format!(
                "plan {p} of instance {}/{name} never ran: nothing to retry",
                kudo.namespace
            )
        })?,
        None => last_executed_plan(&instance).cloned().with_context(|| {
            format!(
                "no plan ever ran for instance {}/{name}: nothing to retry",
                kudo.namespace
            )
        })?,
    };
    if plan.status != ExecutionStatus::FatalError {
        bail!(
            "plan {} of instance {}/{name} is {}, not FATAL_ERROR: only a failed plan can be retried",
            plan.name,
            kudo.namespace,
            plan.status
        );
    }
    if let Some((running, _)) = running_plan(&instance) {
        bail!(
            "instance {}/{name} is running plan {running}: wait for it or abandon it first",
            kudo.namespace
        );
    }
    start_plan(&kudo, &name, &plan.name).await?;
    println!(
        "Retrying {} plan for {}/{name} instance",
        plan.name, kudo.namespace
    );
    if args.wait {
        kudo.wait_for_plan(&name, Some(&plan.uid), args.wait_time)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use opkit_kudo::timing::StepTime;

    use super::*;

    fn at(secs: i64) -> Option<Time> {
        Some(Time(Timestamp::from_second(secs).unwrap()))
    }

    #[test]
    fn wide_step_time_says_how_long_a_finished_step_took() {
        let done = StepTime {
            started: at(100),
            finished: at(107),
        };
        assert_eq!(step_time(&done), " (took 7s)");
        let running = StepTime {
            started: at(100),
            finished: None,
        };
        assert!(step_time(&running).starts_with(" (running for "));
        assert_eq!(step_time(&StepTime::default()), "");
    }
}
