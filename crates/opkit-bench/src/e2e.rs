//! `opkit test` in an operator project (issue 17): a scaffolded operator (`opkit init` +
//! `opkit create api` against this checkout, built once in the workspace's target directory)
//! and a suite of kuttl tests — each creates a custom resource, asserts it Ready, updates its
//! spec, asserts the new generation reconciled, deletes it and asserts it gone. Measured: the
//! wall time of `opkit test` on the embedded plane (plane start, CRDs, RBAC, operator start
//! and the suite; the operator's cargo build is already fresh), the same suite with
//! `--kubeconfig` against an `opkit up` process where `opkit run` already runs the operator,
//! and the time from starting `opkit test` to its first step.
//!
//! Needs the `opkit` binary (`--opkit`, or next to opkit-bench) and cargo; the first run
//! compiles the scaffolded project (minutes when the workspace's debug build is cold).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::scenarios::Outcome;
use crate::server::{Server, ServerMode};
use crate::stats::Samples;
use crate::{Options, Row, Scenario};

const S: Scenario = Scenario::E2e;
/// The scaffolded kind's API group (under the domain) and kind.
const GROUP: &str = "demo";
const DOMAIN: &str = "bench.dev";
const KIND: &str = "Widget";
/// The project's (and binary's) name.
const NAME: &str = "benchop";

/// The workspace checkout this benchmark was built from (the scaffold depends on it).
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The target directory of this executable (`<target>/<profile>/opkit-bench`), shared with
/// the scaffolded project so its build reuses the workspace's compiled dependencies.
fn target_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("cannot tell the target directory from this executable's path")
}

/// The kuttl test `widget-NN`: create, Ready, update, reconciled again, delete, gone.
fn test_files(n: usize) -> Vec<(String, String)> {
    let name = format!("widget-{n:02}");
    let api_version = format!("{GROUP}.{DOMAIN}/v1");
    let object = |value: &str| {
        format!(
            "apiVersion: {api_version}\nkind: {KIND}\nmetadata:\n  name: {name}\nspec:\n  \
             foo: {value}\n"
        )
    };
    let ready = |generation: u32| {
        format!(
            "apiVersion: {api_version}\nkind: {KIND}\nmetadata:\n  name: {name}\nstatus:\n  \
             conditions:\n  - type: Ready\n    status: \"True\"\n    observedGeneration: \
             {generation}\n"
        )
    };
    let dir = format!("tests/e2e/{name}");
    vec![
        (format!("{dir}/00-create.yaml"), object("one")),
        (format!("{dir}/00-assert.yaml"), ready(1)),
        (format!("{dir}/01-update.yaml"), object("two")),
        (format!("{dir}/01-assert.yaml"), ready(2)),
        (
            format!("{dir}/02-delete.yaml"),
            format!(
                "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ndelete:\n- apiVersion: \
                 {api_version}\n  kind: {KIND}\n  name: {name}\n"
            ),
        ),
        (
            format!("{dir}/02-errors.yaml"),
            format!("apiVersion: {api_version}\nkind: {KIND}\nmetadata:\n  name: {name}\n"),
        ),
    ]
}

/// Runs `opkit ARGS` in `dir` to completion; fails with its output when it fails.
async fn opkit_ok(bin: &Path, dir: &Path, target: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .with_context(|| format!("cannot run {}", bin.display()))?;
    if !out.status.success() {
        bail!(
            "`opkit {}` failed ({}):\n{}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// One timed `opkit test`: its wall time and the time to its first step.
struct Timed {
    wall: Duration,
    first_step: Duration,
}

async fn timed_test(bin: &Path, dir: &Path, target: &Path, args: &[&str]) -> anyhow::Result<Timed> {
    let started = Instant::now();
    let mut child = Command::new(bin)
        .arg("test")
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    let stderr = child.stderr.take().context("stderr")?;
    let err_task = tokio::spawn(async move {
        let mut text = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            text.push_str(&l);
            text.push('\n');
        }
        text
    });
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut first_step = None;
    let mut out = String::new();
    while let Some(line) = lines.next_line().await? {
        if first_step.is_none() && line.contains("starting test step") {
            first_step = Some(started.elapsed());
        }
        out.push_str(&line);
        out.push('\n');
    }
    let status = child.wait().await?;
    let wall = started.elapsed();
    let err = err_task.await.unwrap_or_default();
    if !status.success() {
        bail!(
            "`opkit test {}` failed ({status}):\n{out}\n{err}",
            args.join(" ")
        );
    }
    let first_step =
        first_step.with_context(|| format!("`opkit test` ran no step:\n{out}\n{err}"))?;
    Ok(Timed { wall, first_step })
}

/// The scenario.
pub async fn e2e(options: &Options) -> anyhow::Result<Outcome> {
    let bin = options.opkit_bin.clone().context(
        "the e2e scenario runs the `opkit` binary: build it (cargo build -p opkit-cli) or pass \
         --opkit",
    )?;
    let target = target_dir()?;
    let work = tempfile::Builder::new()
        .prefix("opkit-bench-e2e-")
        .tempdir()?;
    let project = work.path().join(NAME);
    std::fs::create_dir(&project)?;
    let checkout = checkout();
    let checkout = checkout
        .to_str()
        .context("the checkout path is not UTF-8")?;
    opkit_ok(
        &bin,
        &project,
        &target,
        &[
            "init",
            "--domain",
            DOMAIN,
            "--repo",
            "github.com/bench/benchop",
            "--opkit-path",
            checkout,
        ],
    )
    .await?;
    opkit_ok(
        &bin,
        &project,
        &target,
        &[
            "create",
            "api",
            "--group",
            GROUP,
            "--version",
            "v1",
            "--kind",
            KIND,
        ],
    )
    .await?;
    // The suite: the bench's tests instead of the scaffolded one.
    std::fs::remove_dir_all(project.join("tests/e2e/widget"))?;
    let tests = options.counts.e2e_tests;
    for n in 1..=tests {
        for (rel, text) in test_files(n) {
            let path = project.join(rel);
            std::fs::create_dir_all(path.parent().context("a test file has a directory")?)?;
            std::fs::write(path, text)?;
        }
    }
    let build_started = Instant::now();
    opkit_ok(&bin, &project, &target, &["generate", "manifests"]).await?;
    let build = build_started.elapsed();

    let mut out = Outcome::default();
    let runs = options.counts.e2e_runs;
    let mut embedded = Samples::with_capacity(runs);
    let mut embedded_first = Samples::with_capacity(runs);
    for _ in 0..runs {
        let t = timed_test(&bin, &project, &target, &[]).await?;
        embedded.push(t.wall);
        embedded_first.push(t.first_step);
    }

    // The same suite against `opkit up`, with `opkit run` running the operator there.
    let server = Server::start(&ServerMode::Process { bin: bin.clone() }).await?;
    let kubeconfig = work.path().join("up.kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig())?;
    let kubeconfig = kubeconfig
        .to_str()
        .context("temp path not UTF-8")?
        .to_string();
    let mut operator = Command::new(&bin)
        .args([
            "run",
            "--kubeconfig",
            &kubeconfig,
            "--",
            "--health-probe-bind-address",
            "0",
        ])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut err = BufReader::new(operator.stderr.take().context("stderr")?).lines();
    let running = format!("running {NAME}");
    loop {
        match err.next_line().await? {
            Some(line) if line.contains(&running) => break,
            Some(_) => {}
            None => bail!("`opkit run` ended before the operator started"),
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });
    let mut existing = Samples::with_capacity(runs);
    let mut existing_first = Samples::with_capacity(runs);
    for _ in 0..runs {
        let t = timed_test(&bin, &project, &target, &["--kubeconfig", &kubeconfig]).await?;
        existing.push(t.wall);
        existing_first.push(t.first_step);
    }
    let _ = operator.start_kill();
    let _ = operator.wait().await;
    server.stop().await;

    let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    out.rows.push(Row::info(
        S,
        format!("{tests} kuttl tests (create, Ready, update, Ready, delete): opkit test, embedded plane + operator (median of {runs})"),
        secs(embedded.median()),
    ));
    out.rows.push(Row::info(
        S,
        "  opkit test start → first step (embedded)",
        secs(embedded_first.median()),
    ));
    out.rows.push(Row::info(
        S,
        format!("same suite: opkit test --kubeconfig against opkit up, operator already running (median of {runs})"),
        secs(existing.median()),
    ));
    out.rows.push(Row::info(
        S,
        "  opkit test start → first step (--kubeconfig)",
        secs(existing_first.median()),
    ));
    out.notes.push(format!(
        "e2e: a scaffolded operator ({KIND}, the `opkit create api` controller), debug build; \
         building it took {} (not in the figures; opkit test's own cargo build is a no-op)",
        secs(build)
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bench_test_creates_updates_and_deletes_one_object() {
        let files = test_files(7);
        let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "tests/e2e/widget-07/00-create.yaml",
                "tests/e2e/widget-07/00-assert.yaml",
                "tests/e2e/widget-07/01-update.yaml",
                "tests/e2e/widget-07/01-assert.yaml",
                "tests/e2e/widget-07/02-delete.yaml",
                "tests/e2e/widget-07/02-errors.yaml",
            ]
        );
        assert!(files[2].1.contains("foo: two"), "{}", files[2].1);
        assert!(
            files[3].1.contains("observedGeneration: 2"),
            "{}",
            files[3].1
        );
    }
}
