//! `opkit report run QUERY --input FILE… --start T --end T [--format csv|json|tab]`: a built-in
//! ReportQuery evaluated offline over samples in Operator Metering's data-source format, printed
//! as Metering's report API printed it. Each input file is named after its data source
//! (`pod-request-cpu-cores.json` feeds `pod-request-cpu-cores`). `--cost-per-core-hour`,
//! `--cost-per-gib-hour` and `--cost-per-gib-month` (a rate card) add cost columns.
//!
//! `opkit report get NAME [-n NS] [--format]` prints the results a cluster's metering controller
//! stored for a Report (all periods, as Metering's `/api/v1/reports/get` served them), read from
//! the API with the same code the controller's HTTP API uses; `opkit report list` lists Reports
//! with their state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use opkit_metering::{Format, Period, RateCard, builtin, parse_samples, price, render, run};

/// `opkit report …`.
#[derive(Subcommand)]
pub(crate) enum ReportCommand {
    /// Evaluate a built-in ReportQuery over data-source files for [start, end) and print the
    /// report.
    Run(RunArgs),
    /// Print the stored results of a Report on a cluster (every period run so far).
    Get(GetArgs),
    /// List the Reports on a cluster with their query, schedule and state.
    List(ListArgs),
}

/// `opkit report get`'s arguments.
#[derive(Args)]
pub(crate) struct GetArgs {
    /// The Report.
    name: String,
    /// Its namespace.
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// `csv`, `json` or `tab` (`tabular`).
    #[arg(long, value_name = "FORMAT", default_value = "csv")]
    format: String,
    /// The cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
}

/// `opkit report list`'s arguments.
#[derive(Args)]
pub(crate) struct ListArgs {
    /// The namespace.
    #[arg(
        short,
        long,
        default_value = "default",
        conflicts_with = "all_namespaces"
    )]
    namespace: String,
    /// Every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// The cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
}

/// `opkit report run`'s arguments.
#[derive(Args)]
pub(crate) struct RunArgs {
    /// The ReportQuery (`pod-cpu-request`, `namespace-memory-usage`, …).
    query: String,
    /// A data-source file (a JSON array of `{amount, timestamp, stepSize, labels}` rows), named
    /// after its data source: `pod-request-cpu-cores.json`. Repeatable.
    #[arg(long = "input", value_name = "FILE", required = true)]
    inputs: Vec<PathBuf>,
    /// The reporting start (RFC 3339, included).
    #[arg(long, value_name = "TIME")]
    start: String,
    /// The reporting end (RFC 3339, excluded).
    #[arg(long, value_name = "TIME")]
    end: String,
    /// `csv`, `json` or `tab` (`tabular`), as Metering's `/api/v1/reports/get?format=`.
    #[arg(long, value_name = "FORMAT", default_value = "csv")]
    format: String,
    /// Rate card: cost of one CPU core for one hour (adds a `_cost` column to each
    /// `cpu_core_seconds` column).
    #[arg(long, value_name = "PRICE")]
    cost_per_core_hour: Option<f64>,
    /// Rate card: cost of one GiB of memory for one hour.
    #[arg(long, value_name = "PRICE")]
    cost_per_gib_hour: Option<f64>,
    /// Rate card: cost of one GiB of storage for one month (730 hours).
    #[arg(long, value_name = "PRICE")]
    cost_per_gib_month: Option<f64>,
}

/// Runs `opkit report run` (offline, no async runtime needed).
pub(crate) fn run_offline(args: RunArgs, cwd: &Path) -> ExitCode {
    print_result(run_query(args, cwd))
}

/// Runs `opkit report …`.
pub(crate) async fn run_report(cmd: ReportCommand, cwd: &Path) -> ExitCode {
    print_result(match cmd {
        ReportCommand::Run(args) => run_query(args, cwd),
        ReportCommand::Get(args) => get(args).await,
        ReportCommand::List(args) => list(args).await,
    })
}

async fn get(args: GetArgs) -> anyhow::Result<String> {
    let format: Format = args.format.parse()?;
    let cluster = crate::cluster::connect(args.kubeconfig.as_deref()).await?;
    Ok(opkit_metering_controller::results::report_text(
        &cluster.client,
        &args.namespace,
        &args.name,
        format,
    )
    .await?)
}

async fn list(args: ListArgs) -> anyhow::Result<String> {
    use kube::ResourceExt;
    use opkit_metering_controller::Report;
    let cluster = crate::cluster::connect(args.kubeconfig.as_deref()).await?;
    let api: kube::Api<Report> = if args.all_namespaces {
        kube::Api::all(cluster.client)
    } else {
        kube::Api::namespaced(cluster.client, &args.namespace)
    };
    let reports = api
        .list(&Default::default())
        .await
        .context("cannot list Reports (is metering running? `opkit up --metering`)")?;
    let mut rows = vec![
        [
            "NAMESPACE",
            "NAME",
            "QUERY",
            "SCHEDULE",
            "RUNNING",
            "FAILED",
            "LAST REPORT TIME",
        ]
        .map(String::from),
    ];
    for r in &reports.items {
        let conditions = r
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        let condition = |t: &str,
                         f: fn(
            &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
        ) -> String| {
            opkit::conditions::find(conditions, t)
                .map(f)
                .unwrap_or_default()
        };
        let schedule = r.spec.schedule.as_ref().map(|s| {
            serde_json::to_value(s.period)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        });
        rows.push([
            r.namespace().unwrap_or_default(),
            r.name_any(),
            r.spec.query.clone(),
            schedule.unwrap_or_else(|| "once".into()),
            condition("Running", |c| c.reason.clone()),
            condition("Failed", |c| c.status.clone()),
            r.status
                .as_ref()
                .and_then(|s| s.last_report_time.as_ref())
                .map(|t| t.0.to_string())
                .unwrap_or_default(),
        ]);
    }
    if reports.items.is_empty() {
        return Ok("No Reports found.\n".into());
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    Ok(out)
}

fn print_result(result: anyhow::Result<String>) -> ExitCode {
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_query(args: RunArgs, cwd: &Path) -> anyhow::Result<String> {
    let format: Format = args.format.parse()?;
    let time = |flag: &str, text: &str| {
        opkit_apimachinery::time::parse_time(text).with_context(|| format!("--{flag}"))
    };
    let period = Period {
        start: time("start", &args.start)?,
        end: time("end", &args.end)?,
    };
    let catalog = builtin::catalog();
    catalog.query(&args.query)?;
    let mut samples = BTreeMap::new();
    for input in &args.inputs {
        let path = cwd.join(input);
        let Some(name) = data_source_name(&path) else {
            bail!(
                "input {}: cannot tell its data source from the file name",
                input.display()
            );
        };
        if !catalog.data_sources.contains_key(&name) {
            bail!(
                "input {}: no data source is named {name:?} (data sources of samples: {})",
                input.display(),
                sample_sources(&catalog).join(", ")
            );
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read input {}", input.display()))?;
        let rows = parse_samples(&input.display().to_string(), &text)?;
        if samples.insert(name.clone(), rows).is_some() {
            bail!("two inputs for data source {name:?}");
        }
    }
    let mut table = run(&catalog, &args.query, &samples, period)?;
    let card = RateCard {
        per_core_hour: args.cost_per_core_hour,
        per_gib_hour: args.cost_per_gib_hour,
        per_gib_month: args.cost_per_gib_month,
    };
    if card != RateCard::default() {
        table = price(&table, &card)?;
    }
    Ok(render(&table, format))
}

/// The data source a file feeds: its name without the extension.
fn data_source_name(path: &Path) -> Option<String> {
    path.file_stem().and_then(|s| s.to_str()).map(str::to_owned)
}

fn sample_sources(catalog: &opkit_metering::Catalog) -> Vec<String> {
    catalog
        .data_sources
        .values()
        .filter(|d| d.kind == opkit_metering::DataSourceKind::Samples)
        .map(|d| d.name.clone())
        .collect()
}
