//! Loading a chart the way Helm's `loader.Load`, `LoadDir`, `LoadArchive` and `LoadFiles` do:
//! a directory (filtered by `.helmignore`) or a `.tgz`, which file goes where (`Chart.yaml`,
//! `Chart.lock`, `values.yaml`, `values.schema.json`, v1 `requirements.yaml`/`.lock`,
//! `templates/`, `charts/` with directory and archived subcharts, everything else), and
//! `Chart.yaml`'s validation with Helm's error texts.

use std::path::Path;

use opkit_template::Value;

use crate::archive::{MAX_DECOMPRESSED_FILE_SIZE, archive_files, is_gzip, strip_bom};
use crate::chart::{Chart, File, Lock, Metadata};
use crate::chartfile;
use crate::ignore::{HELM_IGNORE, IgnoreError, Rules};
use crate::values::read_values;

/// Why a chart could not be loaded; the texts follow Helm's.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read (Go's text, e.g. `stat x: no such file or directory`).
    #[error("{0}")]
    Io(String),
    /// The chart has no `Chart.yaml`.
    #[error("Chart.yaml file is missing")]
    MissingChartYaml,
    /// A chart file is not valid YAML of the right shape (`cannot load Chart.yaml: …`).
    #[error("cannot load {file}: {message}")]
    Parse {
        /// The chart file (`Chart.yaml`, `values.yaml`, `Chart.lock`, …).
        file: String,
        /// The parser's message.
        message: String,
    },
    /// `Chart.yaml` breaks one of Helm's rules (`validation: chart.metadata.name is required`).
    #[error("validation: {0}")]
    Validation(String),
    /// A chart archive is malformed or too large.
    #[error("{0}")]
    Archive(String),
    /// `.helmignore` has a bad rule.
    #[error("{0}")]
    Ignore(#[from] IgnoreError),
    /// A subchart under `charts/` failed to load.
    #[error("error unpacking subchart {name} in {parent}: {source}")]
    Subchart {
        /// The entry under `charts/`.
        name: String,
        /// The parent chart's name.
        parent: String,
        /// Why.
        source: Box<LoadError>,
    },
}

impl Chart {
    /// Loads the chart at `path`: a chart directory or a chart archive (`.tgz`), with its
    /// subcharts under `charts/` (Helm v4's `loader.Load`, which first reads `Chart.yaml`'s
    /// `apiVersion` to pick the chart format).
    pub fn load(path: &Path) -> Result<Chart, LoadError> {
        // Reading, decoding and parsing a chart are spread over helper threads: they start
        // now, so that they are running by the time the files are listed.
        opkit_template::parallel::start_helpers();
        let meta = std::fs::metadata(path).map_err(|e| go_io("stat", path, &e))?;
        if !meta.is_dir() {
            return Chart::load_file(path);
        }
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let chart_yaml = abs.join("Chart.yaml");
        let data = std::fs::read(&chart_yaml).map_err(|e| {
            LoadError::Io(format!(
                "unable to detect chart at {}: {}",
                chart_yaml.display(),
                crate::options::go_io_error("open", &chart_yaml.display().to_string(), &e)
            ))
        })?;
        check_api_version(&data)?;
        let chart = Chart::load_dir(path)?;
        crate::schema::compile_ahead(&chart);
        Ok(chart)
    }

    /// Loads a chart directory, skipping what `.helmignore` (and Helm's default rule for
    /// hidden templates) ignores (Helm's `LoadDir`).
    pub fn load_dir(dir: &Path) -> Result<Chart, LoadError> {
        let mut rules = match std::fs::read(dir.join(HELM_IGNORE)) {
            Ok(text) => Rules::parse(&text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Rules::default(),
            Err(e) => return Err(go_io("open", &dir.join(HELM_IGNORE), &e)),
        };
        rules.add_defaults();
        let mut files = Vec::new();
        walk(dir, &rules, &mut files)?;
        crate::schema::compile_files_ahead(&files);
        from_files(files)
    }

    /// Loads a chart archive file (Helm v4's `LoadFile`).
    pub fn load_file(path: &Path) -> Result<Chart, LoadError> {
        let data = std::fs::read(path).map_err(|e| go_io("open", path, &e))?;
        let name = path.display().to_string();
        if !is_gzip(&data) {
            if name.ends_with(".yml") || name.ends_with(".yaml") {
                return Err(LoadError::Archive(format!(
                    "file '{name}' seems to be a YAML file, but expected a gzipped archive"
                )));
            }
            return Err(LoadError::Archive(format!(
                "file '{name}' does not appear to be a gzipped archive; got '{}'",
                content_type(&data)
            )));
        }
        let files = archive_files(&data)
            .map_err(|_| LoadError::Archive("unable to load chart archive".into()))?;
        from_archive_files(files)
    }

    /// Loads a chart from the bytes of a gzipped chart archive (Helm v4's `LoadArchive`).
    pub fn load_archive(data: &[u8]) -> Result<Chart, LoadError> {
        let files = archive_files(data).map_err(|e| {
            LoadError::Archive(if data.len() >= 10 && !is_gzip(data) {
                format!("stream does not appear to be a valid chart file (details: {e})")
            } else {
                format!("unable to load chart archive: {e}")
            })
        })?;
        from_archive_files(files)
    }
}

/// An archive's files as a chart, once its `Chart.yaml` says it is one this loader reads.
fn from_archive_files(files: Vec<File>) -> Result<Chart, LoadError> {
    let Some(chart_yaml) = files.iter().find(|f| f.name == "Chart.yaml") else {
        return Err(LoadError::Archive(
            "unable to detect chart version, no Chart.yaml found".into(),
        ));
    };
    check_api_version(&chart_yaml.data)?;
    from_files(files)
}

/// Helm v4 reads `apiVersion` first: `v1`, `v2` (or none) are Helm's v2 chart format.
fn check_api_version(chart_yaml: &[u8]) -> Result<(), LoadError> {
    match chartfile::api_version(chart_yaml)
        .map_err(|e| parse_err("Chart.yaml", e))?
        .as_str()
    {
        "" | "v1" | "v2" => Ok(()),
        "v3" => Err(LoadError::Archive(
            "apiVersion v3 charts (Helm 4's experimental format) are not supported".into(),
        )),
        _ => Err(LoadError::Archive("unsupported chart version".into())),
    }
}

/// A Go-style I/O error text: `OP PATH: reason`.
fn go_io(op: &str, path: &Path, e: &std::io::Error) -> LoadError {
    LoadError::Io(crate::options::go_io_error(
        op,
        &path.display().to_string(),
        e,
    ))
}

/// What Go's `http.DetectContentType` says of data that is not gzip, for the two answers a
/// chart path gets in practice.
fn content_type(data: &[u8]) -> &'static str {
    let head = &data[..data.len().min(512)];
    let binary = head.iter().any(|&b| {
        b <= 0x08 || b == 0x0B || (0x0E..=0x1A).contains(&b) || (0x1C..=0x1F).contains(&b)
    });
    if binary {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// Walks `dir` in Go's `filepath.Walk` order (names sorted within each directory), following
/// symbolic links, keeping regular files `rules` do not ignore: first the names (a directory
/// entry's type comes with it, so only links are looked up), then the contents, read on
/// several threads for a large chart and taken in order, so the first bad file in walk order
/// gives the error, as reading them one by one would.
fn walk(dir: &Path, rules: &Rules, out: &mut Vec<File>) -> Result<(), LoadError> {
    let mut entries = Vec::new();
    // A listing error stops the walk after the files listed before it, which are read first:
    // the first of their errors wins over it.
    let listed = list(dir, "", rules, &mut entries);
    if entries
        .iter()
        .any(|(n, _)| crate::schema::is_schema_file(n))
    {
        // A schema's check needs what this starts; it overlaps the reading.
        crate::schema::prepare_validator();
    }
    let read = opkit_template::parallel::map_in_order(
        entries,
        |_| 1,
        FILES_PER_THREAD,
        |(n, kind)| read_file(dir, n, kind),
    );
    for file in read {
        out.push(file?);
    }
    listed
}

/// How many files a thread reads at least when a chart's files are read on several.
const FILES_PER_THREAD: usize = 24;

/// What a walked name is, as far as loading it goes.
#[derive(Clone, Copy)]
enum EntryKind {
    Regular,
    Irregular,
}

/// The names under `dir/rel` [`walk`] keeps, in its order, until an error.
fn list(
    dir: &Path,
    rel: &str,
    rules: &Rules,
    out: &mut Vec<(String, EntryKind)>,
) -> Result<(), LoadError> {
    let here = if rel.is_empty() {
        dir.to_path_buf()
    } else {
        dir.join(rel)
    };
    let mut names: Vec<(String, Option<std::fs::FileType>)> = std::fs::read_dir(&here)
        .map_err(|e| go_io("open", &here, &e))?
        .map(|e| {
            e.map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.file_type().ok(),
                )
            })
            .map_err(|err| go_io("readdirent", &here, &err))
        })
        .collect::<Result<_, _>>()?;
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in names {
        let n = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        // Links (and entries whose type the directory does not tell) are followed.
        let file_type = match file_type {
            Some(t) if !t.is_symlink() => t,
            _ => {
                let path = dir.join(&n);
                std::fs::metadata(&path)
                    .map_err(|e| go_io("stat", &path, &e))?
                    .file_type()
            }
        };
        if file_type.is_dir() {
            if !rules.ignore(&n, true) {
                list(dir, &n, rules, out)?;
            }
            continue;
        }
        if rules.ignore(&n, false) {
            continue;
        }
        let kind = if file_type.is_file() {
            EntryKind::Regular
        } else {
            EntryKind::Irregular
        };
        out.push((n, kind));
    }
    Ok(())
}

/// The file `dir/n` [`list`] found.
fn read_file(dir: &Path, n: String, kind: EntryKind) -> Result<File, LoadError> {
    use std::io::Read;
    let path = dir.join(&n);
    if let EntryKind::Irregular = kind {
        return Err(LoadError::Io(format!(
            "cannot load irregular file {} as it has file mode type bits set",
            path.display()
        )));
    }
    let reading =
        |e: std::io::Error| LoadError::Io(format!("error reading {n}: {}", go_err_text(&e)));
    let mut file = std::fs::File::open(&path).map_err(reading)?;
    let len = file.metadata().map_err(reading)?.len();
    if len > MAX_DECOMPRESSED_FILE_SIZE {
        let name = n.rsplit('/').next().unwrap_or(&n);
        return Err(LoadError::Io(format!(
            "chart file {name:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
        )));
    }
    let mut data = Vec::with_capacity(len as usize);
    file.read_to_end(&mut data).map_err(reading)?;
    Ok(File {
        name: n,
        data: strip_bom(data),
    })
}

fn go_err_text(e: &std::io::Error) -> String {
    let s = crate::options::go_io_error("", "", e);
    s.trim_start_matches(' ')
        .trim_start_matches(": ")
        .to_string()
}

fn parse_err(file: &str, e: impl std::fmt::Display) -> LoadError {
    LoadError::Parse {
        file: file.into(),
        message: e.to_string(),
    }
}

fn parse_lock(file: &str, data: &[u8]) -> Result<Lock, LoadError> {
    let v = opkit_template::yaml::from_yaml(&crate::chart::text(data))
        .map_err(|e| parse_err(file, e))?;
    let json = match crate::values::to_json(&v) {
        serde_json::Value::Null => serde_json::json!({}),
        other => other,
    };
    serde_json::from_value(json).map_err(|e| parse_err(file, e))
}

/// Sorts loaded files into a chart and loads its subcharts, as Helm's `LoadFiles` does.
fn from_files(files: Vec<File>) -> Result<Chart, LoadError> {
    let mut metadata: Option<Metadata> = None;
    let (mut null_maintainer, mut null_dependency) = (false, false);
    for f in &files {
        if f.name == "Chart.yaml" {
            let cf = chartfile::read_metadata(&f.data, metadata.as_ref())
                .map_err(|e| parse_err("Chart.yaml", e))?;
            let mut md = cf.metadata;
            null_maintainer |= cf.null_maintainer;
            null_dependency |= cf.null_dependency;
            if md.api_version.is_empty() {
                md.api_version = "v1".into();
            }
            metadata = Some(md);
        }
    }
    let mut chart = Chart {
        metadata: Metadata::default(),
        templates: Vec::new(),
        values: Value::map(Default::default()),
        schema: None,
        files: Vec::new(),
        dependencies: Vec::new(),
        lock: None,
    };
    let mut subcharts: std::collections::BTreeMap<String, Vec<File>> = Default::default();
    let mut values = None;
    for f in files {
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" => chart.lock = Some(parse_lock("Chart.lock", &f.data)?),
            // Read beside the subcharts (below); its error still comes first.
            "values.yaml" => values = Some(f.data),
            "values.schema.json" => {
                crate::schema::prepare_validator();
                chart.schema = Some(f.data);
            }
            "requirements.yaml" => {
                let cf = chartfile::read_metadata(&f.data, metadata.as_ref())
                    .map_err(|e| parse_err("requirements.yaml", e))?;
                null_maintainer |= cf.null_maintainer;
                null_dependency |= cf.null_dependency;
                let v1 = cf.metadata.api_version == "v1";
                metadata = Some(cf.metadata);
                if v1 {
                    chart.files.push(f);
                }
            }
            "requirements.lock" => {
                chart.lock = Some(parse_lock("requirements.lock", &f.data)?);
                let md = metadata.get_or_insert_with(Metadata::default);
                if md.api_version == "v1" {
                    chart.files.push(f);
                }
            }
            name if name.starts_with("templates/") => chart.templates.push(f),
            name if name.starts_with("charts/") => {
                if name.ends_with(".prov") {
                    chart.files.push(f);
                    continue;
                }
                let rest = &name["charts/".len()..];
                let sub = rest.split('/').next().unwrap_or(rest).to_string();
                subcharts.entry(sub).or_default().push(File {
                    name: rest.to_string(),
                    data: f.data,
                });
            }
            _ => chart.files.push(f),
        }
    }
    let metadata = metadata
        .ok_or(LoadError::MissingChartYaml)
        .and_then(|mut md| {
            validate(&mut md, null_maintainer, null_dependency)?;
            Ok(md)
        });
    let parent = metadata.as_ref().map_or("", |md| md.name.as_str());
    // A broken values.yaml is the error before the metadata's, and the metadata's before a
    // subchart's; the subcharts load independently (each reads and parses its own values
    // and templates), beside the chart's own values: on several threads, then taken in
    // order, so the first broken one in name order is the error, as loading them one by one
    // would give.
    let mut jobs: Vec<Job> = values.into_iter().map(Job::Values).collect();
    if metadata.is_ok() {
        jobs.extend(
            subcharts
                .into_iter()
                .filter(|(name, _)| !name.starts_with('_') && !name.starts_with('.'))
                .map(|(name, files)| Job::Subchart(name, files)),
        );
    }
    let done = opkit_template::parallel::map_in_order(
        jobs,
        Job::weight,
        opkit_template::parallel::MIN_BYTES_PER_THREAD,
        |job| match job {
            Job::Values(data) => {
                Done::Values(read_values(&data).map_err(|e| parse_err("values.yaml", e)))
            }
            Job::Subchart(name, files) => {
                Done::Subchart(Box::new(load_subchart(parent, &name, files)))
            }
        },
    );
    let mut done = done.into_iter().peekable();
    if let Some(Done::Values(v)) = done.next_if(|d| matches!(d, Done::Values(_))) {
        chart.values = v?;
    }
    chart.metadata = metadata?;
    for sub in done {
        if let Done::Subchart(sub) = sub {
            chart.dependencies.push((*sub)?);
        }
    }
    Ok(chart)
}

/// What [`from_files`] reads on several threads: the chart's values and its subcharts.
enum Job {
    Values(Vec<u8>),
    Subchart(String, Vec<File>),
}

impl Job {
    fn weight(&self) -> usize {
        match self {
            Job::Values(data) => data.len(),
            Job::Subchart(_, files) => files.iter().map(|f| f.data.len()).sum(),
        }
    }
}

/// A [`Job`] done.
enum Done {
    Values(Result<Value, LoadError>),
    Subchart(Box<Result<Chart, LoadError>>),
}

/// The subchart `name` of `parent`: the archive `charts/NAME.tgz` or the directory
/// `charts/NAME/`, from the files under `charts/` whose first path element is `name`.
fn load_subchart(parent: &str, name: &str, files: Vec<File>) -> Result<Chart, LoadError> {
    let sub_err = |source: LoadError| LoadError::Subchart {
        name: name.to_string(),
        parent: parent.to_string(),
        source: Box::new(source),
    };
    if name.ends_with(".tgz") {
        let file = &files[0];
        if file.name != name {
            return Err(LoadError::Archive(format!(
                "error unpacking subchart tar in {parent}: expected {name}, got {}",
                file.name
            )));
        }
        return archive_files(&file.data)
            .and_then(from_files)
            .map_err(sub_err);
    }
    let inner = files
        .into_iter()
        .filter_map(|f| {
            let (_, rest) = f.name.split_once('/')?;
            Some(File {
                name: rest.to_string(),
                data: f.data,
            })
        })
        .collect();
    from_files(inner).map_err(sub_err)
}

/// Go's `unicode.IsSpace` / `IsPrint` clean-up Helm applies to metadata strings.
fn sanitize(s: &mut String) {
    if s.chars()
        .all(|c| c == ' ' || (!c.is_whitespace() && !c.is_control()))
    {
        return;
    }
    *s = s
        .chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() {
                None
            } else {
                Some(c)
            }
        })
        .collect();
}

/// Whether `v` is a version Masterminds/semver accepts (what Helm validates versions with).
pub(crate) fn is_valid_semver(v: &str) -> bool {
    opkit_semver::Version::parse(v).is_ok()
}

/// Helm's `IsCompatibleRange`: whether version `v` satisfies the constraint `range`; a bad
/// version or constraint is not compatible.
pub(crate) fn is_compatible_range(range: &str, v: &str) -> bool {
    opkit_semver::satisfies(range, v).unwrap_or(false)
}

/// Helm's `Metadata.Validate`.
fn validate(
    md: &mut Metadata,
    null_maintainer: bool,
    null_dependency: bool,
) -> Result<(), LoadError> {
    let v = |m: String| Err(LoadError::Validation(m));
    for s in [
        &mut md.name,
        &mut md.description,
        &mut md.home,
        &mut md.icon,
        &mut md.condition,
        &mut md.tags,
        &mut md.app_version,
        &mut md.kube_version,
    ] {
        sanitize(s);
    }
    md.sources.iter_mut().for_each(sanitize);
    md.keywords.iter_mut().for_each(sanitize);
    if md.api_version.is_empty() {
        return v("chart.metadata.apiVersion is required".into());
    }
    if md.name.is_empty() {
        return v("chart.metadata.name is required".into());
    }
    if md.name == "." || md.name == ".." {
        return v(format!("chart.metadata.name {:?} is not allowed", md.name));
    }
    if md.name.contains('/') {
        return v(format!("chart.metadata.name {:?} is invalid", md.name));
    }
    if md.version.is_empty() {
        return v("chart.metadata.version is required".into());
    }
    if !is_valid_semver(&md.version) {
        return v(format!(
            "chart.metadata.version {:?} is invalid",
            md.version
        ));
    }
    if !matches!(md.chart_type.as_str(), "" | "application" | "library") {
        return v("chart.metadata.type must be application or library".into());
    }
    if null_maintainer {
        return v("maintainers must not contain empty or null nodes".into());
    }
    for m in &mut md.maintainers {
        sanitize(&mut m.name);
        sanitize(&mut m.email);
        sanitize(&mut m.url);
    }
    if null_dependency {
        return v("dependencies must not contain empty or null nodes".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for d in &mut md.dependencies {
        sanitize(&mut d.name);
        sanitize(&mut d.version);
        sanitize(&mut d.repository);
        sanitize(&mut d.condition);
        d.tags.iter_mut().for_each(sanitize);
        if !d.alias.is_empty()
            && !d
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return v(format!(
                "dependency {:?} has disallowed characters in the alias",
                d.name
            ));
        }
        let key = if d.alias.is_empty() {
            &d.name
        } else {
            &d.alias
        };
        if !seen.insert(key.clone()) {
            return v(format!(
                "more than one dependency with name or alias {key:?}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::tests::tgz;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, data) in files {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, data).unwrap();
        }
    }

    const CHART: &str = "apiVersion: v2\nname: demo\nversion: 0.1.0\n";

    #[test]
    fn a_directory_is_sorted_into_templates_values_files_and_subcharts() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("Chart.yaml", CHART),
                ("values.yaml", "a: 1\n"),
                ("values.schema.json", "{}"),
                ("templates/cm.yaml", "x"),
                ("templates/.hidden.yaml", "x"),
                ("files/a-b/x.txt", "x"),
                ("files/a/x.txt", "x"),
                (
                    "charts/sub/Chart.yaml",
                    "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
                ),
                ("charts/sub/templates/s.yaml", "s"),
                ("charts/_skip/Chart.yaml", "name: skip"),
                ("charts/sub-1.0.0.tgz.prov", "sig"),
                (
                    "Chart.lock",
                    "digest: sha256:x\ndependencies:\n- name: sub\n  version: 1.0.0\n",
                ),
            ],
        );
        let c = Chart::load(dir.path()).unwrap();
        assert_eq!(c.name(), "demo");
        let names = |fs: &[File]| fs.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&c.templates), ["templates/cm.yaml"]);
        assert_eq!(
            names(&c.files),
            [
                "charts/sub-1.0.0.tgz.prov",
                "files/a/x.txt",
                "files/a-b/x.txt"
            ]
        );
        assert_eq!(c.values.to_string(), "map[a:1]");
        assert!(c.schema.is_some());
        assert_eq!(c.lock.as_ref().unwrap().dependencies[0].name, "sub");
        assert_eq!(c.dependencies.len(), 1);
        assert_eq!(c.dependencies[0].name(), "sub");
        assert_eq!(names(&c.dependencies[0].templates), ["templates/s.yaml"]);
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_an_irregular_file_is_refused_after_the_files_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        write(
            elsewhere.path(),
            &[("shared.yaml", "shared"), ("more/m.yaml", "m")],
        );
        write(
            dir.path(),
            &[("Chart.yaml", CHART), ("templates/a.yaml", "a")],
        );
        let t = dir.path().join("templates");
        std::os::unix::fs::symlink(elsewhere.path().join("shared.yaml"), t.join("b.yaml")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("more"), t.join("c")).unwrap();
        let c = Chart::load(dir.path()).unwrap();
        let names: Vec<&str> = c.templates.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["templates/a.yaml", "templates/b.yaml", "templates/c/m.yaml"]
        );
        assert_eq!(c.templates[1].data, b"shared");

        // A broken link stops the walk where Go's stops it.
        std::os::unix::fs::symlink(dir.path().join("gone"), t.join("d.yaml")).unwrap();
        let err = Chart::load(dir.path()).unwrap_err().to_string();
        assert!(err.starts_with("stat ") && err.contains("d.yaml"), "{err}");

        // An irregular file (a FIFO) is refused by name.
        std::fs::remove_file(t.join("d.yaml")).unwrap();
        let fifo = t.join("e.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = Chart::load(dir.path()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "cannot load irregular file {} as it has file mode type bits set",
                fifo.display()
            )
        );
    }

    #[test]
    fn a_broken_values_file_is_the_error_before_the_metadata_and_the_subcharts() {
        let dir = tempfile::tempdir().unwrap();
        let big: String = (0..2000).map(|i| format!("key{i}: value{i}\n")).collect();
        let sub = "apiVersion: v2\nname: sub\nversion: 1.0.0\n";
        write(
            dir.path(),
            &[
                ("Chart.yaml", CHART),
                ("values.yaml", &big),
                ("charts/sub/Chart.yaml", sub),
                ("charts/sub/values.yaml", "s: 1\n"),
            ],
        );
        let c = Chart::load(dir.path()).unwrap();
        assert!(matches!(&c.values, Value::Map(m) if m.len() == 2000));
        assert_eq!(c.dependencies[0].values.to_string(), "map[s:1]");

        // A broken values.yaml is the error, before the metadata's and a subchart's.
        let broken = format!("{big}bad: [\n");
        write(
            dir.path(),
            &[
                ("Chart.yaml", "apiVersion: v2\nversion: 0.1.0\n"),
                ("values.yaml", &broken),
                ("charts/sub/Chart.yaml", "name: [\n"),
            ],
        );
        let err = Chart::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("values.yaml"), "{err}");
        // Then the metadata's, before the subchart's.
        write(dir.path(), &[("values.yaml", &big)]);
        let err = Chart::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("name is required"), "{err}");
        write(dir.path(), &[("Chart.yaml", CHART)]);
        let err = Chart::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("sub"), "{err}");
    }

    #[test]
    fn a_chart_of_many_files_is_read_whole_and_in_walk_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = vec![("Chart.yaml".to_string(), CHART.to_string())];
        for i in 0..150 {
            files.push((format!("templates/t{i:03}.yaml"), format!("n: {i}\n")));
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        write(dir.path(), &refs);
        let c = Chart::load(dir.path()).unwrap();
        assert_eq!(c.templates.len(), 150);
        for (i, t) in c.templates.iter().enumerate() {
            assert_eq!(t.name, format!("templates/t{i:03}.yaml"));
            assert_eq!(t.data, format!("n: {i}\n").as_bytes());
        }
    }

    #[test]
    fn helmignore_rules_drop_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("Chart.yaml", CHART),
                (".helmignore", "*.bak\nci/\n"),
                ("templates/a.yaml", "x"),
                ("templates/a.yaml.bak", "x"),
                ("ci/values.yaml", "x"),
            ],
        );
        let c = Chart::load(dir.path()).unwrap();
        assert_eq!(c.templates.len(), 1);
        assert_eq!(
            c.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            [".helmignore"]
        );
    }

    #[test]
    fn an_archive_with_an_archived_subchart_loads() {
        let sub = tgz(&[
            (
                "sub/Chart.yaml",
                b"apiVersion: v2\nname: sub\nversion: 1.0.0\n",
            ),
            ("sub/values.yaml", b"s: 1\n"),
        ]);
        let top = tgz(&[
            ("demo/Chart.yaml", CHART.as_bytes()),
            ("demo/templates/a.yaml", b"a"),
            ("demo/charts/sub-1.0.0.tgz", &sub),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo-0.1.0.tgz");
        std::fs::write(&path, &top).unwrap();
        let c = Chart::load(&path).unwrap();
        assert_eq!(c.templates[0].name, "templates/a.yaml");
        assert_eq!(c.dependencies[0].name(), "sub");
        assert_eq!(c.dependencies[0].values.to_string(), "map[s:1]");
    }

    #[test]
    fn chart_yaml_validation_has_helms_errors() {
        let err = |chart_yaml: &str| {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), &[("Chart.yaml", chart_yaml)]);
            Chart::load(dir.path()).unwrap_err().to_string()
        };
        assert_eq!(
            err("apiVersion: v2\nversion: 1.0.0\n"),
            "validation: chart.metadata.name is required"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\n"),
            "validation: chart.metadata.version is required"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\nversion: one\n"),
            "validation: chart.metadata.version \"one\" is invalid"
        );
        assert_eq!(
            err("apiVersion: v2\nname: a/b\nversion: 1.0.0\n"),
            "validation: chart.metadata.name \"a/b\" is invalid"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\nversion: 1.0.0\ntype: plugin\n"),
            "validation: chart.metadata.type must be application or library"
        );
        assert_eq!(
            err(
                "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n- name: b\n  alias: a\n"
            ),
            "validation: more than one dependency with name or alias \"a\""
        );
        assert_eq!(
            err(
                "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n  alias: a.b\n"
            ),
            "validation: dependency \"a\" has disallowed characters in the alias"
        );
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("values.yaml", "a: 1")]);
        let abs = std::path::absolute(dir.path()).unwrap().join("Chart.yaml");
        assert_eq!(
            Chart::load(dir.path()).unwrap_err().to_string(),
            format!(
                "unable to detect chart at {0}: open {0}: no such file or directory",
                abs.display()
            )
        );
        assert_eq!(
            Chart::load_dir(dir.path()).unwrap_err().to_string(),
            "Chart.yaml file is missing"
        );
        assert_eq!(
            err("apiVersion: v9\nname: x\nversion: 1.0.0\n"),
            "unsupported chart version"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\nversion: 1.0.0\nmaintainers:\n- null\n"),
            "validation: maintainers must not contain empty or null nodes"
        );
        assert_eq!(
            err("apiVersion: v2\nname: [x\n"),
            "cannot load Chart.yaml: error converting YAML to JSON: yaml: line 2: did not find expected ',' or ']'"
        );
    }

    #[test]
    fn a_v1_chart_reads_its_dependencies_from_requirements_yaml() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("Chart.yaml", "name: old\nversion: 1.0.0\n"),
                (
                    "requirements.yaml",
                    "dependencies:\n- name: sub\n  version: ~1.0\n  condition: sub.enabled\n",
                ),
                ("charts/sub/Chart.yaml", "name: sub\nversion: 1.0.1\n"),
            ],
        );
        let c = Chart::load(dir.path()).unwrap();
        assert_eq!(c.metadata.api_version, "v1");
        assert_eq!(c.metadata.dependencies[0].condition, "sub.enabled");
        assert_eq!(c.files[0].name, "requirements.yaml");
    }

    #[test]
    fn a_broken_subchart_names_itself_and_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[("Chart.yaml", CHART), ("charts/bad/values.yaml", "a: 1")],
        );
        assert_eq!(
            Chart::load(dir.path()).unwrap_err().to_string(),
            "error unpacking subchart bad in demo: Chart.yaml file is missing"
        );
    }

    #[test]
    fn a_file_that_is_not_an_archive_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("values.yaml");
        std::fs::write(&p, "a: 1").unwrap();
        assert_eq!(
            Chart::load(&p).unwrap_err().to_string(),
            format!(
                "file '{}' seems to be a YAML file, but expected a gzipped archive",
                p.display()
            )
        );
        let p = dir.path().join("chart.bin");
        std::fs::write(&p, "a: 1").unwrap();
        assert_eq!(
            Chart::load(&p).unwrap_err().to_string(),
            format!(
                "file '{}' does not appear to be a gzipped archive; got 'text/plain; charset=utf-8'",
                p.display()
            )
        );
        assert_eq!(
            Chart::load(Path::new("/nonexistent/chart"))
                .unwrap_err()
                .to_string(),
            "stat /nonexistent/chart: no such file or directory"
        );
    }
}
