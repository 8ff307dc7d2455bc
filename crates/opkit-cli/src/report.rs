//! `opkit report run QUERY --input FILE… --start T --end T [--format csv|json|tab]`: a built-in
//! ReportQuery evaluated offline over samples in Operator Metering's data-source format, printed
//! as Metering's report API printed it. Each input file is named after its data source
//! (`pod-request-cpu-cores.json` feeds `pod-request-cpu-cores`). `--cost-per-core-hour`,
//! `--cost-per-gib-hour` and `--cost-per-gib-month` (a rate card) add cost columns. `report get` and `report list`
//! (reports stored on a cluster) come with the metering controller, which is not built yet.

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

/// Runs `opkit report …`.
pub(crate) fn run_report(cmd: ReportCommand, cwd: &Path) -> ExitCode {
    let result = match cmd {
        ReportCommand::Run(args) => run_query(args, cwd),
    };
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
