//! The chart behind a kind of a helm project, under `helm-charts/<chart>/`: a new chart like
//! the one `helm create` writes, or a copy of a chart directory or `.tgz` archive on this
//! machine (operator-sdk's `--helm-chart`).
//!
//! A given chart is loaded with `opkit-chart` (Helm v4's loader and its checks) before
//! anything is written, so a broken chart is refused with Helm's own message. The new chart's
//! files live in `templates/helm/chart/` with Helm's `<CHARTNAME>` placeholder.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};
use opkit_chart::Chart;

/// Where a helm project keeps its charts.
pub(crate) const CHARTS_DIR: &str = "helm-charts";

/// What `helm create` substitutes with the chart's name.
const CHART_NAME_PLACEHOLDER: &str = "<CHARTNAME>";

/// The files of a new chart, as `helm create` names them.
const NEW_CHART: &[(&str, &str)] = &[
    (
        ".helmignore",
        include_str!("../templates/helm/chart/.helmignore"),
    ),
    (
        "Chart.yaml",
        include_str!("../templates/helm/chart/Chart.yaml"),
    ),
    (
        "values.yaml",
        include_str!("../templates/helm/chart/values.yaml"),
    ),
    (
        "templates/NOTES.txt",
        include_str!("../templates/helm/chart/templates/NOTES.txt"),
    ),
    (
        "templates/_helpers.tpl",
        include_str!("../templates/helm/chart/templates/_helpers.tpl"),
    ),
    (
        "templates/deployment.yaml",
        include_str!("../templates/helm/chart/templates/deployment.yaml"),
    ),
    (
        "templates/hpa.yaml",
        include_str!("../templates/helm/chart/templates/hpa.yaml"),
    ),
    (
        "templates/httproute.yaml",
        include_str!("../templates/helm/chart/templates/httproute.yaml"),
    ),
    (
        "templates/ingress.yaml",
        include_str!("../templates/helm/chart/templates/ingress.yaml"),
    ),
    (
        "templates/service.yaml",
        include_str!("../templates/helm/chart/templates/service.yaml"),
    ),
    (
        "templates/serviceaccount.yaml",
        include_str!("../templates/helm/chart/templates/serviceaccount.yaml"),
    ),
    (
        "templates/tests/test-connection.yaml",
        include_str!("../templates/helm/chart/templates/tests/test-connection.yaml"),
    ),
];

/// Where a kind's chart comes from.
#[derive(Debug, Clone)]
pub(crate) enum ChartSource {
    /// A new chart named after the kind (lower case).
    New(String),
    /// A chart directory or `.tgz` archive on this machine, checked, with its loaded form.
    Given { path: PathBuf, chart: Box<Chart> },
}

impl ChartSource {
    /// The source `--helm-chart PATH` (and `--helm-chart-version`) name: the chart is loaded
    /// and checked now. Without a path, a new chart named `new_name`.
    pub(crate) fn resolve(
        path: Option<&Path>,
        version: Option<&str>,
        new_name: impl FnOnce() -> anyhow::Result<String>,
    ) -> anyhow::Result<ChartSource> {
        let Some(path) = path else {
            if version.is_some() {
                bail!("value of --helm-chart-version can only be used with --helm-chart");
            }
            return Ok(ChartSource::New(new_name()?));
        };
        if !path.exists() {
            bail!(
                "no chart at {}: --helm-chart takes a chart directory or a .tgz archive on this \
                 machine (opkit does not download charts; fetch one with `helm pull REPO/CHART \
                 --version V` first)",
                path.display()
            );
        }
        let chart = Chart::load(path)
            .with_context(|| format!("{} is not a chart Helm can load", path.display()))?;
        if let Some(wanted) = version
            && chart.metadata.version != wanted
        {
            bail!(
                "the chart at {} is {} version {}, not --helm-chart-version {wanted}",
                path.display(),
                chart.metadata.name,
                chart.metadata.version
            );
        }
        if !matches!(chart.metadata.chart_type.as_str(), "" | "application") {
            bail!(
                "{} is a {} chart, which cannot be installed: a kind needs an application chart",
                path.display(),
                chart.metadata.chart_type
            );
        }
        Ok(ChartSource::Given {
            path: path.to_path_buf(),
            chart: Box::new(chart),
        })
    }

    /// The chart's name (its directory under `helm-charts/`).
    pub(crate) fn name(&self) -> &str {
        match self {
            ChartSource::New(name) => name,
            ChartSource::Given { chart, .. } => &chart.metadata.name,
        }
    }

    /// `helm-charts/<name>`, relative to the project root.
    pub(crate) fn project_path(&self) -> String {
        format!("{CHARTS_DIR}/{}", self.name())
    }

    /// Writes the chart into `root/helm-charts/<name>/` and returns it loaded from there.
    pub(crate) fn write(&self, root: &Path) -> anyhow::Result<Chart> {
        let dest = root.join(self.project_path());
        match self {
            ChartSource::New(name) => {
                for (rel, text) in NEW_CHART {
                    write_file(
                        &dest.join(rel),
                        text.replace(CHART_NAME_PLACEHOLDER, name).as_bytes(),
                    )?;
                }
            }
            ChartSource::Given { path, .. } if path.is_dir() => copy_dir(path, &dest)?,
            ChartSource::Given { path, .. } => unpack(path, &dest)?,
        }
        Chart::load(&dest).with_context(|| format!("{} does not load", dest.display()))
    }
}

/// Operator-sdk's kind for a chart (`strcase.ToCamel`): `my-app` → `MyApp`.
pub(crate) fn kind_from_chart_name(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn write_file(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, data).with_context(|| format!("cannot write {}", path.display()))
}

/// Copies the chart directory `from` to `to`, every file (symbolic links followed, as Helm's
/// loader follows them).
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?;
    for entry in entries {
        let path = entry?.path();
        let target = to.join(path.file_name().context("a directory entry has a name")?);
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            let data =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            write_file(&target, &data)?;
        }
    }
    Ok(())
}

/// Unpacks the chart archive `archive` (`<chart>/...` entries, as `helm package` writes them)
/// into `to`, without its top directory.
fn unpack(archive: &Path, to: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::open(archive)
        .with_context(|| format!("cannot read {}", archive.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = tar
        .entries()
        .with_context(|| format!("{} is not a chart archive", archive.display()))?;
    for entry in entries {
        let mut entry = entry.with_context(|| format!("reading {}", archive.display()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path()?.into_owned();
        let rel: PathBuf = name.components().skip(1).collect();
        let safe = rel.components().all(|c| matches!(c, Component::Normal(_)));
        if rel.as_os_str().is_empty() || !safe {
            bail!(
                "{}: entry {} is not a file inside the chart's directory",
                archive.display(),
                name.display()
            );
        }
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .with_context(|| format!("reading {} from {}", name.display(), archive.display()))?;
        write_file(&to.join(rel), &data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_chart_names_are_upper_camel_case() {
        assert_eq!(kind_from_chart_name("nginx"), "Nginx");
        assert_eq!(kind_from_chart_name("my-app"), "MyApp");
        assert_eq!(
            kind_from_chart_name("kube_state.metrics"),
            "KubeStateMetrics"
        );
    }

    #[test]
    fn a_new_chart_loads_with_the_kinds_name() {
        let dir = tempfile::tempdir().unwrap();
        let chart = ChartSource::New("guestbook".into())
            .write(dir.path())
            .unwrap();
        assert_eq!(chart.metadata.name, "guestbook");
        assert_eq!(chart.templates.len(), NEW_CHART.len() - 3);
        let helpers = std::fs::read_to_string(
            dir.path()
                .join("helm-charts/guestbook/templates/_helpers.tpl"),
        )
        .unwrap();
        assert!(helpers.contains("define \"guestbook.fullname\""));
        assert!(!helpers.contains(CHART_NAME_PLACEHOLDER));
    }
}
