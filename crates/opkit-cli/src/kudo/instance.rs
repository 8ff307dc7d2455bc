//! `kubectl kudo update` and `uninstall`: change an instance's parameters (a merge patch of
//! `spec.parameters`, checked against its operator version first) or delete it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{DeleteParams, Patch, PatchParams};

use super::{Global, Kudo, last_executed_plan, parse_wait_time};

/// The flags of `update`.
#[derive(Args)]
pub(crate) struct UpdateArgs {
    /// The instance to update.
    #[arg(long)]
    instance: Option<String>,
    /// A parameter value: `-p NAME=VALUE` (repeatable).
    #[arg(short = 'p', long = "parameter", value_name = "NAME=VALUE")]
    parameters: Vec<String>,
    /// A YAML file of parameter values (repeatable).
    #[arg(short = 'P', long = "parameter-file", value_name = "FILE")]
    parameter_files: Vec<PathBuf>,
    /// Wait until the plan the update runs ends.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits (seconds or a duration).
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_time: Duration,
}

/// The flags of `uninstall`.
#[derive(Args)]
pub(crate) struct UninstallArgs {
    /// The instance to delete.
    #[arg(long)]
    instance: Option<String>,
    /// Wait until the instance is gone (its cleanup plan has run).
    #[arg(long)]
    wait: bool,
    /// How long --wait waits (seconds or a duration).
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_time: Duration,
}

pub(crate) async fn update(args: UpdateArgs, g: &Global) -> anyhow::Result<()> {
    let name = args.instance.filter(|i| !i.is_empty()).context(
        "--instance flag has to be provided to indicate which instance you want to update",
    )?;
    let params = opkit_kudo::params::parameter_map(&args.parameters, &args.parameter_files)
        .map_err(|e| anyhow::anyhow!("could not parse parameters: {e}"))?;
    if params.is_empty() {
        bail!(
            "need to specify at least one parameter to override via -p otherwise there is nothing to update"
        );
    }
    let kudo = Kudo::connect(g).await?;
    let instance = kudo.instance(&name).await?;
    let ov = kudo.operator_version_of(&instance).await?;
    opkit_kudo::params::validate_update(
        &ov.spec.parameters,
        &instance.spec.parameters,
        &params,
        ov.metadata.name.as_deref().unwrap_or_default(),
    )
    .with_context(|| format!("updating instance {name}"))?;
    let previous = last_executed_plan(&instance).map(|p| p.uid.clone());
    let patch = serde_json::json!({"spec": {"parameters": params}});
    kudo.instances()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("updating instance {name}"))?;
    println!("Instance {name} was updated.");
    if args.wait {
        kudo.wait_for_plan(&name, previous.as_deref(), args.wait_time)
            .await?;
    }
    Ok(())
}

pub(crate) async fn uninstall(args: UninstallArgs, g: &Global) -> anyhow::Result<()> {
    let name = args
        .instance
        .filter(|i| !i.is_empty())
        .context("the command expects no arguments and --instance flag must be provided.")?;
    let kudo = Kudo::connect(g).await?;
    kudo.instance(&name).await?;
    kudo.instances()
        .delete(&name, &DeleteParams::foreground())
        .await
        .with_context(|| format!("deleting instance {}/{name}", kudo.namespace))?;
    if args.wait {
        let mut status = crate::progress::Status::new();
        while kudo.instances().get_opt(&name).await?.is_some() {
            if status.elapsed() > args.wait_time {
                bail!(
                    "timeout waiting for instance {}/{name} to be deleted; see `kubectl kudo \
                     plan status --instance {name} -n {}`",
                    kudo.namespace,
                    kudo.namespace
                );
            }
            status.update(&format!("waiting for instance {name} to be deleted"));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        status.finish(&format!("instance {name} deleted"));
    }
    println!("instance.kudo.dev/v1beta1/{name} deleted");
    Ok(())
}
