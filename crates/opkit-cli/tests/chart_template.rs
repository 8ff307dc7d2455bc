//! `opkit chart template` against `helm template`'s recorded output: opkit-chart's own
//! helm-checked chart (`crates/opkit-chart/tests/render-chart`, recordings in
//! `render-golden/`, kept equal to live helm by opkit-chart's `render_helm` test) and the
//! helm corpus (`../shared/corpus/helm/golden/NAME.cmd` run with `opkit chart template`
//! instead of `helm template`). stdout must match byte for byte, and errors come as helm's
//! `Error: …` line. Without the corpus the corpus part says so loudly and passes.
//!
//! The OLM bundle and catalog tools (`opkit bundle validate`, `opkit catalog
//! render|validate|template`), offline renderers like `chart template`, are checked here too,
//! on bundles the tests write, and so are `opkit bundle|catalog push|pull` against a real
//! registry (Debian's docker-registry, one process per test), and so is `opkit up --olm`'s
//! ClusterCatalog controller serving a pushed catalog; so is `opkit report run`
//! (Metering's report queries, offline), on samples the tests write.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Kill, Registry, try_http_get};

fn chart_tests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../opkit-chart/tests")
}

fn opkit_template(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
        .args(["chart", "template"])
        .args(args)
        .current_dir(dir)
        .env_remove("HELM_NAMESPACE")
        .output()
        .expect("opkit runs")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "opkit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout")
}

#[test]
fn the_render_chart_prints_what_helm_template_prints() {
    let cases: &[(&str, &[&str])] = &[
        ("default", &["rel", "render-chart", "--namespace", "ns1"]),
        (
            "include-crds",
            &["rel", "render-chart", "-n", "ns1", "--include-crds"],
        ),
        ("unnamed", &["render-chart"]),
        (
            // helm install's flags that change nothing `helm template` prints.
            "include-crds",
            &[
                "rel",
                "render-chart",
                "-n",
                "ns1",
                "--include-crds",
                "--create-namespace",
                "--skip-crds",
                "--description=x",
                "--disable-openapi-validation",
                "--hide-notes",
                "--render-subchart-notes",
                "--devel",
                "--timeout",
                "1m30s",
                "--wait",
                "--wait-for-jobs",
            ],
        ),
        (
            "skip-tests",
            &["rel", "render-chart", "-n", "ns1", "--skip-tests"],
        ),
        (
            "no-hooks",
            &["rel", "render-chart", "-n", "ns1", "--no-hooks"],
        ),
        (
            "show-only",
            &[
                "rel",
                "render-chart",
                "-n",
                "ns1",
                "-s",
                "templates/hooks.yaml",
                "--show-only=templates/work*",
                "-s",
                "charts/sub/templates/configmap.yaml",
            ],
        ),
        (
            "cluster",
            &[
                "rel",
                "render-chart",
                "-n",
                "ns1",
                "--kube-version",
                "1.30.2-gke.100",
                "-a",
                "monitoring.coreos.com/v1",
                "--is-upgrade",
            ],
        ),
    ];
    for (golden, args) in cases {
        let want =
            std::fs::read_to_string(chart_tests().join(format!("render-golden/{golden}.yaml")))
                .expect("recorded helm output");
        let got = stdout_of(&opkit_template(&chart_tests(), args));
        assert!(got == want, "case {golden} differs from helm:\n{got}");
    }
}

#[test]
fn errors_are_helms_error_line_and_a_failure_exit() {
    let out = opkit_template(
        &chart_tests(),
        &["rel", "render-chart", "-s", "templates/none.yaml"],
    );
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: could not find template templates/none.yaml in chart\n"
    );
    let out = opkit_template(&chart_tests(), &["a", "b", "c", "d"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: expected at most two arguments, unexpected arguments: c, d\n"
    );
    let out = opkit_template(
        &chart_tests(),
        &["--name-template", "{{ \"x\" | upper }}", "render-chart"],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: release name check failed: release name \"X\": invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53\n"
    );
}

/// A reader that stops reading early (`opkit chart template … | head -1`) ends the command
/// quietly with a failure status, as the SIGPIPE ends helm: no panic, no error text.
#[test]
fn a_closed_stdout_fails_quietly_without_a_panic() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_opkit"))
        .args(["chart", "template", "rel", "render-chart"])
        .current_dir(chart_tests())
        .env_remove("HELM_NAMESPACE")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("opkit runs");
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn a_name_template_names_the_release() {
    let out = opkit_template(
        &chart_tests(),
        &[
            "--name-template",
            "{{ \"named\" | lower }}-{{ add 1 2 }}",
            "render-chart",
            "-s",
            "charts/sub/templates/configmap.yaml",
        ],
    );
    let got = stdout_of(&out);
    assert!(got.contains("  name: named-3-sub\n"), "{got}");
}

/// The real helm v4 that `scripts/install-tools.sh` installs, run with private homes.
fn helm_template(dir: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("temp dir");
    Command::new(common::tool_path("helm"))
        .arg("template")
        .args(args)
        .current_dir(dir)
        .env_remove("HELM_NAMESPACE")
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .output()
        .expect("helm runs")
}

#[test]
fn skip_schema_validation_renders_values_the_schema_refuses_as_helm_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = dir.path().join("c");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "replicas: 1\n").unwrap();
    std::fs::write(
        chart.join("values.schema.json"),
        r#"{"properties": {"replicas": {"type": "integer", "minimum": 1}}}"#,
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
    )
    .unwrap();
    let refused = ["rel", "c", "--set", "replicas=many"];
    let skipped = [
        "rel",
        "c",
        "--set",
        "replicas=many",
        "--skip-schema-validation",
    ];

    let out = opkit_template(dir.path(), &refused);
    let helm_out = helm_template(dir.path(), &refused);
    assert!(!out.status.success() && !helm_out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&helm_out.stderr)
    );

    let got = stdout_of(&opkit_template(dir.path(), &skipped));
    assert!(got.contains("  replicas: \"many\"\n"), "{got}");
    assert_eq!(got, stdout_of(&helm_template(dir.path(), &skipped)));
}

#[test]
fn corpus_commands_print_what_helm_printed() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm");
    if !corpus.join("golden").is_dir() {
        eprintln!("!!!!! ../shared/corpus/helm is absent: the CLI corpus comparison did not run");
        return;
    }
    for name in [
        "cert-manager",
        "grafana",
        "ingress-nginx",
        "kube-state-metrics",
        "nginx",
        "prometheus",
    ] {
        let cmd = std::fs::read_to_string(corpus.join(format!("golden/{name}.cmd"))).unwrap();
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(&words[..2], ["helm", "template"], "{name}.cmd");
        let want = std::fs::read_to_string(corpus.join(format!("golden/{name}.yaml"))).unwrap();
        let got = stdout_of(&opkit_template(&corpus, &words[2..]));
        assert!(got == want, "corpus {name} differs from helm");
        eprintln!("corpus {name}: byte-identical through the CLI");
    }
}

// ---- OLM: `opkit bundle validate`, `opkit catalog render|validate|template` ----

fn opkit(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("opkit runs")
}

/// Writes a registry+v1 bundle of package `demo` at `version` (replacing `replaces`) under
/// `root/name`; `owned_kind` is the kind the CSV claims to own (the CRD is always `Widget`).
fn write_bundle(
    root: &Path,
    name: &str,
    version: &str,
    replaces: &str,
    owned_kind: &str,
) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n",
    )
    .unwrap();
    let replaces_line = if replaces.is_empty() {
        String::new()
    } else {
        format!("  replaces: {replaces}\n")
    };
    std::fs::write(
        dir.join("manifests/demo.clusterserviceversion.yaml"),
        format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: demo.v{version}\n  annotations:\n    alm-examples: '[{{\"apiVersion\": \"demo.example.com/v1\", \"kind\": \"{owned_kind}\", \"metadata\": {{\"name\": \"w\"}}}}]'\n    capabilities: Basic Install\nspec:\n  displayName: Demo\n  description: A demo operator.\n  version: {version}\n{replaces_line}  minKubeVersion: 1.25.0\n  provider:\n    name: opkit\n  maintainers:\n  - name: Jane\n    email: jane@example.com\n  links:\n  - name: Home\n    url: https://example.com\n  icon:\n  - base64data: PHN2Zy8+\n    mediatype: image/svg+xml\n  installModes:\n  - type: OwnNamespace\n    supported: true\n  - type: AllNamespaces\n    supported: true\n  customresourcedefinitions:\n    owned:\n    - name: widgets.demo.example.com\n      version: v1\n      kind: {owned_kind}\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: demo-controller\n        spec:\n          template:\n            spec:\n              containers:\n              - name: manager\n                image: example.com/demo:v{version}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("manifests/widgets.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.demo.example.com\nspec:\n  group: demo.example.com\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n",
    )
    .unwrap();
    dir
}

#[test]
fn bundle_validate_accepts_a_complete_bundle_with_the_operatorhub_suite() {
    let tmp = tempfile::tempdir().unwrap();
    write_bundle(tmp.path(), "b1", "1.0.0", "", "Widget");
    let out = opkit(
        tmp.path(),
        &[
            "bundle",
            "validate",
            "b1",
            "--select-optional",
            "suite=operatorframework",
        ],
    );
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("All validation tests have completed successfully"),
        "{stdout}"
    );
}

#[test]
fn bundle_validate_fails_naming_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    write_bundle(tmp.path(), "b1", "1.0.0", "", "Gadget");
    let out = opkit(tmp.path(), &["bundle", "validate", "b1"]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ERROR: manifests/demo.clusterserviceversion.yaml: spec.customresourcedefinitions.owned[0]: owned CRD Gadget (demo.example.com/v1) not found in the bundle"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ERROR: manifests/widgets.yaml: CRD Widget (demo.example.com/v1) is present in the bundle but not owned by the CSV"),
        "{stdout}"
    );
    let out = opkit(
        tmp.path(),
        &[
            "bundle",
            "validate",
            "b1",
            "--select-optional",
            "suite=nope",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown optional validator selector"));
}

#[test]
fn catalog_render_prints_an_olm_bundle_and_validate_checks_the_graph() {
    let tmp = tempfile::tempdir().unwrap();
    write_bundle(tmp.path(), "b1", "1.0.0", "", "Widget");
    let out = opkit(
        tmp.path(),
        &[
            "catalog",
            "render",
            "b1",
            "-o",
            "yaml",
            "--image-ref-template",
            "example.com/{{.Package}}-bundle:v{{.Version}}",
            "--migrate-level",
            "bundle-object-to-csv-metadata",
        ],
    );
    let stdout = stdout_of(&out);
    let doc: serde_json::Value = serde_yaml::from_str(stdout.trim_start_matches("---\n")).unwrap();
    assert_eq!(doc["schema"], "olm.bundle");
    assert_eq!(doc["name"], "demo.v1.0.0");
    assert_eq!(doc["image"], "example.com/demo-bundle:v1.0.0");
    let types: Vec<&str> = doc["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["olm.gvk", "olm.package", "olm.csv.metadata"]);
    assert_eq!(
        doc["relatedImages"],
        serde_json::json!([
            {"image": "example.com/demo-bundle:v1.0.0", "name": ""},
            {"image": "example.com/demo:v1.0.0", "name": ""}
        ])
    );

    // A catalog whose channel has two heads.
    let cat = tmp.path().join("catalog");
    std::fs::create_dir_all(&cat).unwrap();
    let mut text = String::from(
        "schema: olm.package\nname: demo\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: demo\nname: stable\nentries:\n- name: demo.v1.0.0\n- name: demo.v2.0.0\n",
    );
    for v in ["1.0.0", "2.0.0"] {
        text.push_str(&format!("---\nschema: olm.bundle\npackage: demo\nname: demo.v{v}\nimage: example.com/demo-bundle:v{v}\nproperties:\n- type: olm.package\n  value:\n    packageName: demo\n    version: {v}\n"));
    }
    std::fs::write(cat.join("index.yaml"), &text).unwrap();
    let out = opkit(tmp.path(), &["catalog", "validate", "catalog"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("multiple channel heads found in graph: demo.v1.0.0, demo.v2.0.0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        cat.join("index.yaml"),
        text.replace(
            "- name: demo.v2.0.0\n",
            "- name: demo.v2.0.0\n  replaces: demo.v1.0.0\n",
        ),
    )
    .unwrap();
    let out = opkit(tmp.path(), &["catalog", "validate", "catalog"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn catalog_templates_render_bundle_directories() {
    let tmp = tempfile::tempdir().unwrap();
    for (v, r) in [
        ("1.0.0", ""),
        ("1.0.1", "demo.v1.0.0"),
        ("1.1.0", "demo.v1.0.1"),
    ] {
        write_bundle(
            &tmp.path().join("bundles"),
            &format!("v{v}"),
            v,
            r,
            "Widget",
        );
    }
    std::fs::write(
        tmp.path().join("semver.yaml"),
        "schema: olm.semver\nstable:\n  bundles:\n  - image: bundles/v1.0.0\n  - image: bundles/v1.0.1\n  - image: bundles/v1.1.0\n",
    )
    .unwrap();
    let out = opkit(
        tmp.path(),
        &["catalog", "template", "semver", "semver.yaml", "-o", "json"],
    );
    let stdout = stdout_of(&out);
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .map(|d| d.unwrap())
        .collect();
    assert_eq!(docs[0]["schema"], "olm.package");
    assert_eq!(docs[0]["defaultChannel"], "stable-v1.1");
    assert_eq!(docs[0]["description"], "A demo operator.");
    assert_eq!(docs[1]["name"], "stable-v1.0");
    assert_eq!(docs[2]["name"], "stable-v1.1");
    assert_eq!(
        docs[2]["entries"],
        serde_json::json!([{"name": "demo.v1.1.0", "replaces": "demo.v1.0.1", "skips": ["demo.v1.0.0"]}])
    );
    assert_eq!(docs.len(), 6);

    std::fs::write(
        tmp.path().join("basic.yaml"),
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: demo\n  defaultChannel: stable\n- schema: olm.channel\n  package: demo\n  name: stable\n  entries:\n  - name: demo.v1.0.0\n- schema: olm.bundle\n  image: bundles/v1.0.0\n- schema: olm.bundle\n  image: quay.io/demo/bundle:v9\n",
    )
    .unwrap();
    let out = opkit(tmp.path(), &["catalog", "template", "basic", "basic.yaml"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bundle reference \"quay.io/demo/bundle:v9\": not a bundle directory (pulling images from a registry is not supported yet"), "{stderr}");
}

/// One HTTP/1.1 request over a plain socket; the status and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    try_http_get(addr, path).expect("the server answers")
}

/// Writes catalog `demo` (channel `stable`: 1.0.0, then 2.0.0 replacing it) to `dir/index.yaml`.
fn write_catalog(dir: &Path) {
    write_catalog_of(dir, |v| format!("example.com/demo-bundle:v{v}"));
}

/// As [`write_catalog`], with bundle images `image(version)`.
fn write_catalog_of(dir: &Path, image: impl Fn(&str) -> String) {
    std::fs::create_dir_all(dir).unwrap();
    let mut text = String::from(
        "schema: olm.package\nname: demo\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: demo\nname: stable\nentries:\n- name: demo.v1.0.0\n- name: demo.v2.0.0\n  replaces: demo.v1.0.0\n",
    );
    for v in ["1.0.0", "2.0.0"] {
        let image = image(v);
        text.push_str(&format!("---\nschema: olm.bundle\npackage: demo\nname: demo.v{v}\nimage: {image}\nproperties:\n- type: olm.package\n  value:\n    packageName: demo\n    version: {v}\n"));
    }
    std::fs::write(dir.join("index.yaml"), &text).unwrap();
}

/// Runs `opkit catalog serve SPECS… --listen 127.0.0.1:0` in `dir`; the process and the
/// address it serves on and its first line.
fn serve_catalogs(dir: &Path, specs: &[&str]) -> (Kill, String, String) {
    use std::io::BufRead;
    let mut child = Kill(
        Command::new(env!("CARGO_BIN_EXE_opkit"))
            .args(["catalog", "serve"])
            .args(specs)
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("opkit runs"),
    );
    // One line per catalog, all read: the server must not write into a closed pipe.
    let mut lines = std::io::BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut read = || lines.next().expect("a line per catalog").unwrap();
    let line = read();
    for _ in 1..specs.len() {
        read();
    }
    // "serving catalog NAME (N documents) at http://127.0.0.1:PORT/catalogs/NAME/api/v1/all"
    assert!(line.starts_with("serving catalog "), "{line}");
    let url = line.trim().rsplit(' ').next().unwrap();
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    (child, addr, line)
}

#[test]
fn catalog_serve_answers_catalogds_api_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    write_catalog(&tmp.path().join("catalog"));
    let (_server, addr, line) = serve_catalogs(tmp.path(), &["ops=catalog"]);
    assert!(
        line.starts_with("serving catalog ops (4 documents) at http://"),
        "{line}"
    );

    let (status, body) = http_get(&addr, "/catalogs/ops/api/v1/all");
    assert_eq!(status, 200);
    assert_eq!(body.lines().count(), 4, "{body}");
    let (status, body) = http_get(
        &addr,
        "/catalogs/ops/api/v1/metas?schema=olm.bundle&name=demo.v2.0.0",
    );
    assert_eq!(status, 200);
    let doc: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(doc["image"], "example.com/demo-bundle:v2.0.0");
    assert_eq!(
        http_get(&addr, "/catalogs/ops/api/v1/metas?version=2").0,
        400
    );
    assert_eq!(http_get(&addr, "/catalogs/nope/api/v1/all").0, 404);
}

// ---- Metering: `opkit report run` ----

/// Writes `pod-request-cpu-cores.json`: pod `web` (0.5 cores) and `db` (2 cores) in namespace
/// `shop` on node `n1`, sampled at 10:00, 10:01 and 10:02 with a 60 s step.
fn write_cpu_requests(dir: &Path) {
    let mut rows = Vec::new();
    for minute in ["00", "01", "02"] {
        for (pod, cores) in [("web", 0.5), ("db", 2.0)] {
            rows.push(serde_json::json!({
                "amount": cores,
                "timestamp": format!("2026-01-01T10:{minute}:00Z"),
                "stepSize": 60_000_000_000u64,
                "labels": {"namespace": "shop", "pod": pod, "node": "n1"},
            }));
        }
    }
    std::fs::write(
        dir.join("pod-request-cpu-cores.json"),
        serde_json::to_string_pretty(&rows).unwrap(),
    )
    .unwrap();
}

#[test]
fn report_run_prints_a_pod_cpu_request_report_as_metering_csv() {
    let tmp = tempfile::tempdir().unwrap();
    write_cpu_requests(tmp.path());
    let args = [
        "report",
        "run",
        "pod-cpu-request",
        "--input",
        "pod-request-cpu-cores.json",
        "--start",
        "2026-01-01T10:00:00Z",
        "--end",
        "2026-01-01T10:02:00Z",
    ];
    // Two samples of each pod fall in [10:00, 10:02): db 2 × 60 × 2 = 240, web 0.5 × 120 = 60.
    assert_eq!(
        stdout_of(&opkit(tmp.path(), &args)),
        "period_start,period_end,pod,namespace,node,pod_request_cpu_core_seconds\n\
         2026-01-01 10:00:00 +0000 UTC,2026-01-01 10:02:00 +0000 UTC,db,shop,n1,240.000000\n\
         2026-01-01 10:00:00 +0000 UTC,2026-01-01 10:02:00 +0000 UTC,web,shop,n1,60.000000\n"
    );
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    json_args[2] = "namespace-cpu-request";
    assert_eq!(
        stdout_of(&opkit(tmp.path(), &json_args)),
        r#"[{"namespace":"shop","period_end":"2026-01-01T10:02:00Z","period_start":"2026-01-01T10:00:00Z","pod_request_cpu_core_seconds":300}]"#
    );
}

#[test]
fn report_run_adds_cost_columns_from_a_rate_card() {
    let tmp = tempfile::tempdir().unwrap();
    write_cpu_requests(tmp.path());
    let out = opkit(
        tmp.path(),
        &[
            "report",
            "run",
            "namespace-cpu-request",
            "--input",
            "pod-request-cpu-cores.json",
            "--start",
            "2026-01-01T10:00:00Z",
            "--end",
            "2026-01-01T10:02:00Z",
            "--cost-per-core-hour",
            "0.036",
        ],
    );
    // 300 core-seconds = 1/12 core-hour; × 0.036 = 0.003.
    assert_eq!(
        stdout_of(&out),
        "period_start,period_end,namespace,pod_request_cpu_core_seconds,pod_request_cpu_core_seconds_cost\n\
         2026-01-01 10:00:00 +0000 UTC,2026-01-01 10:02:00 +0000 UTC,shop,300.000000,0.003000\n"
    );
}

#[test]
fn report_run_gives_metering_utilisation_and_pvc_usage_from_samples() {
    let tmp = tempfile::tempdir().unwrap();
    write_cpu_requests(tmp.path());
    let samples = |name: &str, amount: f64, labels: serde_json::Value| {
        let rows: Vec<_> = ["00", "01"]
            .iter()
            .map(|minute| {
                serde_json::json!({
                    "amount": amount,
                    "timestamp": format!("2026-01-01T10:{minute}:00Z"),
                    "stepSize": 60_000_000_000u64,
                    "labels": labels,
                })
            })
            .collect();
        std::fs::write(
            tmp.path().join(format!("{name}.json")),
            serde_json::to_string(&rows).unwrap(),
        )
        .unwrap();
    };
    samples(
        "node-allocatable-cpu-cores",
        10.0,
        serde_json::json!({"node": "n1"}),
    );
    samples(
        "persistentvolumeclaim-usage-bytes",
        1024.0,
        serde_json::json!({"namespace": "shop", "persistentvolumeclaim": "data"}),
    );
    let run = |query: &str, inputs: &[&str]| {
        let mut args = vec!["report", "run", query];
        for input in inputs {
            args.extend(["--input", input]);
        }
        args.extend([
            "--start",
            "2026-01-01T10:00:00Z",
            "--end",
            "2026-01-01T10:02:00Z",
            "--format",
            "json",
        ]);
        stdout_of(&opkit(tmp.path(), &args))
    };
    // Requests: 2.5 cores × 120 s = 300 of 10 cores × 120 s = 1200 allocatable.
    let report: serde_json::Value = serde_json::from_str(&run(
        "node-cpu-utilization",
        &[
            "node-allocatable-cpu-cores.json",
            "pod-request-cpu-cores.json",
        ],
    ))
    .unwrap();
    assert_eq!(report[0]["node_allocatable_cpu_core_seconds"], 1200.0);
    assert_eq!(report[0]["pod_request_cpu_core_seconds"], 300.0);
    assert_eq!(report[0]["cpu_used_percent"], 0.25);
    assert_eq!(report[0]["cpu_unused_percent"], 0.75);
    assert_eq!(
        run(
            "persistentvolumeclaim-usage",
            &["persistentvolumeclaim-usage-bytes.json"]
        ),
        r#"[{"namespace":"shop","period_end":"2026-01-01T10:02:00Z","period_start":"2026-01-01T10:00:00Z","persistentvolumeclaim":"data","persistentvolumeclaim_usage_bytes":1024}]"#
    );
}

#[test]
fn report_run_names_unknown_queries_missing_inputs_and_bad_rows() {
    let tmp = tempfile::tempdir().unwrap();
    write_cpu_requests(tmp.path());
    let run = |query: &str, input: &str| {
        let out = opkit(
            tmp.path(),
            &[
                "report",
                "run",
                query,
                "--input",
                input,
                "--start",
                "2026-01-01T10:00:00Z",
                "--end",
                "2026-01-01T11:00:00Z",
            ],
        );
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let err = run("pod-gpu-request", "pod-request-cpu-cores.json");
    assert!(
        err.starts_with("error: unknown ReportQuery \"pod-gpu-request\"; known queries: ")
            && err.contains(" pod-cpu-request, "),
        "{err}"
    );
    assert!(err.contains("pod-cpu-request, "), "{err}");
    let err = run("pod-memory-request", "pod-request-cpu-cores.json");
    assert_eq!(
        err,
        "error: ReportQuery \"pod-memory-request-raw\" reads data source \"pod-request-memory-bytes\", \
         but no input is named so (inputs given: pod-request-cpu-cores)\n"
    );
    std::fs::write(
        tmp.path().join("pod-usage-cpu-cores.json"),
        r#"[{"amount": 1, "timestamp": "2026-01-01T10:00:00Z", "labels": {}}]"#,
    )
    .unwrap();
    let err = run("pod-cpu-usage", "pod-usage-cpu-cores.json");
    assert_eq!(
        err,
        "error: pod-usage-cpu-cores.json: row 0: field \"stepSize\": missing\n"
    );
}

// ---- OLM images: `opkit bundle|catalog push|pull` against a real registry ----

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The `digest: sha256:…` line of a push.
fn pushed_digest(out: &Output) -> String {
    let stdout = stdout_of(out);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest line in {stdout:?}"))
        .to_string()
}

#[test]
fn bundle_push_and_pull_round_trip_byte_identical_with_one_digest_per_content() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let src = write_bundle(tmp.path(), "b1", "1.0.0", "", "Widget");
    let image = registry.image("demo/bundle:v1.0.0");
    let out = opkit(tmp.path(), &["bundle", "push", "b1", &image]);
    let digest = pushed_digest(&out);
    assert!(digest.starts_with("sha256:"), "{digest}");
    assert!(
        stdout_of(&out).contains(&format!("pushed bundle demo.v1.0.0 to {image}")),
        "{}",
        stdout_of(&out)
    );

    // The same content under another tag is the same image.
    let again = opkit(
        tmp.path(),
        &["bundle", "push", "b1", &registry.image("demo/bundle:again")],
    );
    assert_eq!(pushed_digest(&again), digest);

    let out = opkit(tmp.path(), &["bundle", "pull", &image, "pulled"]);
    assert!(
        stdout_of(&out).contains(&format!("({digest}) into pulled: 3 files")),
        "{}",
        stdout_of(&out)
    );
    assert_eq!(tree(&tmp.path().join("pulled")), tree(&src));
    let by_digest = registry.image(&format!("demo/bundle@{digest}"));
    let out = opkit(tmp.path(), &["bundle", "pull", &by_digest, "by-digest"]);
    stdout_of(&out);
    assert_eq!(tree(&tmp.path().join("by-digest")), tree(&src));
    let out = opkit(tmp.path(), &["bundle", "validate", "pulled"]);
    assert!(stdout_of(&out).contains("All validation tests have completed successfully"));

    // A bundle image is no catalog image, and a pull never writes over a directory's files.
    let out = opkit(tmp.path(), &["catalog", "pull", &image, "as-catalog"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a catalog image: its config has no label operators.operatorframework.io.index.configs.v1"),
        "{stderr}"
    );
    assert!(!tmp.path().join("as-catalog").exists());
    let out = opkit(tmp.path(), &["bundle", "pull", &image, "pulled"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pulled is not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_pulled_catalog_image_serves_what_its_source_directory_serves() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_catalog(&tmp.path().join("catalog"));
    std::fs::create_dir_all(tmp.path().join("catalog/extra")).unwrap();
    std::fs::write(
        tmp.path().join("catalog/extra/deprecations.json"),
        r#"{"schema":"olm.deprecations","package":"demo","entries":[{"reference":{"schema":"olm.bundle","name":"demo.v1.0.0"},"message":"use 2.0.0"}]}"#,
    )
    .unwrap();
    let image = registry.image("demo/catalog:latest");
    let first = pushed_digest(&opkit(tmp.path(), &["catalog", "push", "catalog", &image]));
    let second = pushed_digest(&opkit(tmp.path(), &["catalog", "push", "catalog", &image]));
    assert_eq!(first, second, "the same catalog pushed twice");

    let out = opkit(tmp.path(), &["catalog", "pull", &image, "pulled"]);
    assert!(stdout_of(&out).contains("into pulled: 2 files"));
    assert_eq!(
        tree(&tmp.path().join("pulled")),
        tree(&tmp.path().join("catalog"))
    );
    let (_server, addr, _) = serve_catalogs(tmp.path(), &["src=catalog", "back=pulled"]);
    for query in ["/api/v1/all", "/api/v1/metas?schema=olm.bundle"] {
        let (status, source) = http_get(&addr, &format!("/catalogs/src{query}"));
        assert_eq!(status, 200);
        let (status, pulled) = http_get(&addr, &format!("/catalogs/back{query}"));
        assert_eq!(status, 200);
        assert!(source.contains("demo.v2.0.0"), "{source}");
        assert_eq!(pulled, source, "{query}");
    }
}

#[test]
fn push_refuses_an_invalid_bundle_or_catalog_before_any_network_call() {
    let tmp = tempfile::tempdir().unwrap();
    write_bundle(tmp.path(), "bad", "1.0.0", "", "Gadget");
    // Nothing listens on port 1: a push that got as far as the network would say so.
    let out = opkit(
        tmp.path(),
        &["bundle", "push", "bad", "127.0.0.1:1/demo/bundle:v1"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR: manifests/demo.clusterserviceversion.yaml: spec.customresourcedefinitions.owned[0]: owned CRD Gadget (demo.example.com/v1) not found in the bundle"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: bundle demo.v1.0.0 is invalid"),
        "{stderr}"
    );
    assert!(!stderr.contains("unreachable"), "{stderr}");

    let cat = tmp.path().join("catalog");
    std::fs::create_dir_all(&cat).unwrap();
    std::fs::write(
        cat.join("index.yaml"),
        "schema: olm.package\nname: demo\ndefaultChannel: nope\n",
    )
    .unwrap();
    let out = opkit(
        tmp.path(),
        &["catalog", "push", "catalog", "127.0.0.1:1/demo/catalog:v1"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: catalog catalog is invalid"),
        "{stderr}"
    );
    assert!(!stderr.contains("unreachable"), "{stderr}");
}

#[test]
fn pull_names_the_reference_of_a_missing_image_and_an_unreachable_registry() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let missing = registry.image("demo/nothing:v9");
    let out = opkit(tmp.path(), &["bundle", "pull", &missing, "out"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "error: cannot pull {missing}: no such image (unknown repository or tag)"
        )),
        "{stderr}"
    );
    assert!(!tmp.path().join("out").exists());

    let out = opkit(
        tmp.path(),
        &["catalog", "pull", "127.0.0.1:1/demo/catalog:v1", "out"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: cannot pull 127.0.0.1:1/demo/catalog:v1: the registry 127.0.0.1:1 is unreachable"),
        "{stderr}"
    );
}

// ---- `opkit up --olm`: the ClusterCatalog controller, against a real registry ----

/// A ClusterCatalog named `name` of image `image`.
fn cluster_catalog(name: &str, image: &str) -> String {
    format!(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata:\n  name: {name}\nspec:\n  source:\n    type: Image\n    image:\n      ref: {image}\n"
    )
}

/// The object `kind`/`name` of `namespace` as JSON.
fn get_in(cp: &common::ControlPlane, namespace: &str, kind: &str, name: &str) -> serde_json::Value {
    let text = cp.kubectl_ok(&["get", kind, name, "-n", namespace, "-o", "json"]);
    serde_json::from_str(&text).expect("kubectl prints JSON")
}

/// The object `kind`/`name` as JSON.
fn get_object(cp: &common::ControlPlane, kind: &str, name: &str) -> serde_json::Value {
    let text = cp.kubectl_ok(&["get", kind, name, "-o", "json"]);
    serde_json::from_str(&text).expect("kubectl prints JSON")
}

/// The condition `type_` of ClusterCatalog `catalog`, as (status, reason, message).
fn catalog_condition(catalog: &serde_json::Value, type_: &str) -> Option<(String, String, String)> {
    let conditions = catalog["status"]["conditions"].as_array()?;
    let c = conditions.iter().find(|c| c["type"] == type_)?;
    let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((field("status"), field("reason"), field("message")))
}

/// Waits until ClusterCatalog `name`'s condition `type_` has `status` and `reason`; the
/// catalog then.
fn wait_for_catalog(
    cp: &common::ControlPlane,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> serde_json::Value {
    wait_for_condition(cp, "clustercatalog", name, type_, status, reason)
}

/// Waits until `kind`/`name`'s condition `type_` has `status` and `reason`; the object then.
fn wait_for_condition(
    cp: &common::ControlPlane,
    kind: &str,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> serde_json::Value {
    common::eventually(&format!("{kind} {name}: {type_}={status}/{reason}"), || {
        let object = get_object(cp, kind, name);
        match catalog_condition(&object, type_) {
            Some((s, r, _)) if s == status && r == reason => Ok(object),
            _ => Err(object["status"].to_string()),
        }
    })
}

/// `http://ADDR/PATH` split into the address and the path.
fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (addr, path) = rest.split_once('/').expect("a path");
    (addr.to_string(), format!("/{path}"))
}

#[test]
fn a_cluster_catalog_serves_its_image_as_catalog_serve_serves_the_source_until_made_unavailable() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_catalog(&tmp.path().join("catalog"));
    let image = registry.image("demo/catalog:v1");
    let digest = pushed_digest(&opkit(tmp.path(), &["catalog", "push", "catalog", &image]));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &image));
    assert!(out.success(), "{out}");

    let catalog = wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    assert_eq!(
        catalog_condition(&catalog, "Progressing").map(|c| (c.0, c.1)),
        Some(("True".into(), "Succeeded".into()))
    );
    let status = &catalog["status"];
    assert_eq!(
        status["resolvedSource"]["image"]["ref"],
        registry.image(&format!("demo/catalog@{digest}"))
    );
    assert!(status["lastUnpacked"].is_string(), "{status}");
    let base = status["urls"]["base"]
        .as_str()
        .expect("urls.base")
        .to_string();
    assert!(base.ends_with("/catalogs/ops"), "{base}");
    let (addr, path) = split_url(&base);

    let (_serve, serve_addr, _) = serve_catalogs(tmp.path(), &["src=catalog"]);
    for query in [
        "/api/v1/all",
        "/api/v1/metas?schema=olm.bundle&name=demo.v2.0.0",
    ] {
        let (status, served) = http_get(&addr, &format!("{path}{query}"));
        assert_eq!(status, 200, "{served}");
        let (_, source) = http_get(&serve_addr, &format!("/catalogs/src{query}"));
        assert!(source.contains("demo.v2.0.0"), "{source}");
        assert_eq!(served, source, "{query}");
    }

    let out = cp.kubectl(&[
        "patch",
        "clustercatalog",
        "ops",
        "--type=merge",
        "-p",
        r#"{"spec":{"availabilityMode":"Unavailable"}}"#,
    ]);
    assert!(out.success(), "{out}");
    let catalog = wait_for_catalog(&cp, "ops", "Serving", "False", "UserSpecifiedUnavailable");
    assert!(catalog["status"]["urls"].is_null(), "{}", catalog["status"]);
    assert_eq!(http_get(&addr, &format!("{path}/api/v1/all")).0, 404);

    // Available again, then deleted: deletion (under the finalizer) stops serving.
    let out = cp.kubectl(&[
        "patch",
        "clustercatalog",
        "ops",
        "--type=merge",
        "-p",
        r#"{"spec":{"availabilityMode":"Available"}}"#,
    ]);
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    assert_eq!(http_get(&addr, &format!("{path}/api/v1/all")).0, 200);
    cp.kubectl_ok(&["delete", "clustercatalog", "ops", "--wait=true"]);
    assert_eq!(http_get(&addr, &format!("{path}/api/v1/all")).0, 404);
}

#[test]
fn a_cluster_catalog_with_a_bad_ref_retries_naming_it_and_keeps_serving_the_last_good_content() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_catalog(&tmp.path().join("catalog"));
    let image = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(tmp.path(), &["catalog", "push", "catalog", &image]));
    let cp = common::ControlPlane::start_with(&["--olm"]);

    // A digest never changes: polling one is refused at admission.
    let pinned = format!(
        "{}      pollIntervalMinutes: 5\n",
        cluster_catalog("pinned", &registry.image("demo/catalog@sha256:0123"))
    );
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &pinned);
    assert!(
        !out.success()
            && out
                .stderr
                .contains("pollIntervalMinutes is for tag references"),
        "{out}"
    );

    // Never pulled: not served.
    let missing = registry.image("demo/nothing:v9");
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("missing", &missing));
    assert!(out.success(), "{out}");
    let catalog = wait_for_catalog(&cp, "missing", "Progressing", "True", "Retrying");
    let (_, _, message) = catalog_condition(&catalog, "Progressing").unwrap();
    assert!(
        message.starts_with(&format!("cannot unpack {missing}: "))
            && message.contains("no such image"),
        "{message}"
    );
    assert_eq!(
        catalog_condition(&catalog, "Serving").map(|c| (c.0, c.1)),
        Some(("False".into(), "Unavailable".into()))
    );
    assert!(catalog["status"]["urls"].is_null(), "{}", catalog["status"]);

    // Served, then pointed at an image that is not a catalog: the old content stays served.
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &image));
    assert!(out.success(), "{out}");
    let catalog = wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    let base = catalog["status"]["urls"]["base"]
        .as_str()
        .unwrap()
        .to_string();
    let (addr, path) = split_url(&base);
    let (_, before) = http_get(&addr, &format!("{path}/api/v1/all"));
    write_bundle(tmp.path(), "b1", "1.0.0", "", "Widget");
    let bundle = registry.image("demo/bundle:v1");
    pushed_digest(&opkit(tmp.path(), &["bundle", "push", "b1", &bundle]));
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &bundle));
    assert!(out.success(), "{out}");
    let catalog = wait_for_catalog(&cp, "ops", "Progressing", "True", "Retrying");
    let (_, _, message) = catalog_condition(&catalog, "Progressing").unwrap();
    assert!(
        message.starts_with(&format!("cannot unpack {bundle}: "))
            && message.contains("not a catalog image"),
        "{message}"
    );
    assert_eq!(
        catalog_condition(&catalog, "Serving").map(|c| (c.0, c.1)),
        Some(("True".into(), "Available".into()))
    );
    assert_eq!(
        http_get(&addr, &format!("{path}/api/v1/all")),
        (200, before)
    );
}

/// A ClusterExtension installing package `package` (in range `version`) into `demo-system`.
fn cluster_extension(name: &str, package: &str, version: &str) -> String {
    format!(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata:\n  name: {name}\nspec:\n  namespace: demo-system\n  serviceAccount:\n    name: installer\n  source:\n    sourceType: Catalog\n    catalog:\n      packageName: {package}\n      version: \"{version}\"\n"
    )
}

/// Writes bundles `b1` (demo 1.0.0) and `b2` (2.0.0, replacing it) under `root`, with
/// Deployments whose selector matches their pods, as an install needs.
fn write_installable_bundles(root: &Path) {
    for (dir, version, replaces) in [("b1", "1.0.0", ""), ("b2", "2.0.0", "demo.v1.0.0")] {
        let bundle = write_bundle(root, dir, version, replaces, "Widget");
        let csv = bundle.join("manifests/demo.clusterserviceversion.yaml");
        let text = std::fs::read_to_string(&csv).unwrap().replace(
            "        spec:\n          template:\n            spec:\n",
            "        spec:\n          selector:\n            matchLabels:\n              app: demo\n          template:\n            metadata:\n              labels:\n                app: demo\n            spec:\n",
        );
        std::fs::write(&csv, text).unwrap();
    }
}

#[test]
fn a_cluster_extension_installs_the_highest_matching_bundle_then_upgrades_one_hop_and_prunes() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    // Only 1.0.0 ships this ConfigMap: the upgrade deletes it.
    std::fs::write(
        tmp.path().join("b1/manifests/settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-settings\ndata:\n  level: info\n",
    )
    .unwrap();
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp.path(), &["bundle", "push", dir, &image]));
    }
    write_catalog_of(&tmp.path().join("catalog"), |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));

    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");

    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", "<2"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    assert_eq!(
        ext["status"]["install"]["bundle"],
        serde_json::json!({"name": "demo.v1.0.0", "version": "1.0.0"})
    );
    assert_eq!(
        catalog_condition(&ext, "Progressing").map(|c| (c.0, c.1)),
        Some(("True".into(), "Succeeded".into()))
    );
    let crd = get_object(&cp, "crd", "widgets.demo.example.com");
    assert_eq!(
        crd["metadata"]["labels"]["olm.operatorframework.io/owner-name"],
        "demo"
    );
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/demo:v1.0.0"
    );
    get_in(&cp, "demo-system", "configmap", "demo-settings");

    // A wider range: one hop along the graph to 2.0.0, which has no ConfigMap.
    let out = cp.kubectl(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"source":{"catalog":{"version":">=1.0.0"}}}}"#,
    ]);
    assert!(out.success(), "{out}");
    common::eventually("ClusterExtension demo to install 2.0.0", || {
        let ext = get_object(&cp, "clusterextension", "demo");
        match ext["status"]["install"]["bundle"]["version"].as_str() {
            Some("2.0.0") => Ok(()),
            _ => Err(ext["status"].to_string()),
        }
    });
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/demo:v2.0.0"
    );
    let out = cp.kubectl(&["get", "configmap", "demo-settings", "-n", "demo-system"]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");
}

#[test]
fn a_cluster_extension_for_a_missing_package_retries_naming_it() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_catalog(&tmp.path().join("catalog"));
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");

    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("ghost", "nothing-here", "1.0.0"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "ghost",
        "Progressing",
        "True",
        "Retrying",
    );
    let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
    assert_eq!(
        message,
        "cannot resolve: no served catalog has package \"nothing-here\""
    );
    assert_eq!(
        catalog_condition(&ext, "Installed").map(|c| (c.0, c.1)),
        Some(("False".into(), "Failed".into()))
    );

    // The package exists but no bundle is in the range: the message names both.
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("too-new", "demo", ">=9"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "too-new",
        "Progressing",
        "True",
        "Retrying",
    );
    let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
    assert_eq!(
        message,
        "cannot resolve: package \"demo\" has no bundle in version range \">=9\""
    );

    // Nothing installed: the uninstall finalizer lets them go at once.
    cp.kubectl_ok(&[
        "delete",
        "clusterextension",
        "ghost",
        "too-new",
        "--timeout=20s",
    ]);
}

/// A registry serving bundle demo 1.0.0 (its CSV changed by `edit`) and a catalog of it, and
/// a control plane with the lifecycle controllers, namespace `demo-system` and the catalog
/// `ops` serving.
fn serve_one_bundle(
    edit: impl Fn(String) -> String,
) -> (Registry, tempfile::TempDir, common::ControlPlane) {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    let csv = tmp
        .path()
        .join("b1/manifests/demo.clusterserviceversion.yaml");
    std::fs::write(&csv, edit(std::fs::read_to_string(&csv).unwrap())).unwrap();
    let image = registry.image("demo/bundle:v1.0.0");
    pushed_digest(&opkit(tmp.path(), &["bundle", "push", "b1", &image]));
    write_catalog_of(&tmp.path().join("catalog"), |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    (registry, tmp, cp)
}

#[test]
fn a_cluster_extension_watching_one_namespace_gets_its_roles_there_and_a_missing_watch_namespace_is_invalid()
 {
    // Namespaced modes only, and a permission for the operator's account.
    let (_registry, _tmp, cp) = serve_one_bundle(|csv| {
        csv.replace(
            "  - type: OwnNamespace\n    supported: true\n  - type: AllNamespaces\n    supported: true\n",
            "  - type: OwnNamespace\n    supported: true\n  - type: SingleNamespace\n    supported: true\n  - type: AllNamespaces\n    supported: false\n",
        ) + "      permissions:\n      - serviceAccountName: demo-sa\n        rules:\n        - apiGroups: [\"\"]\n          resources: [configmaps]\n          verbs: [get, list, watch]\n"
    });
    cp.kubectl_ok(&["create", "namespace", "team-a"]);
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", "1.0.0"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Progressing",
        "False",
        "InvalidConfiguration",
    );
    assert_eq!(
        catalog_condition(&ext, "Progressing").unwrap().2,
        "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
    );
    assert_eq!(
        catalog_condition(&ext, "Installed").map(|c| (c.0, c.1)),
        Some(("False".into(), "Failed".into()))
    );

    // SingleNamespace: the operator runs in demo-system, its Role is in team-a.
    let watch = |ns: &str| {
        let patch = format!(
            r#"{{"spec":{{"config":{{"configType":"Inline","inline":{{"watchNamespace":"{ns}"}}}}}}}}"#
        );
        let out = cp.kubectl(&[
            "patch",
            "clusterextension",
            "demo",
            "--type=merge",
            "-p",
            &patch,
        ]);
        assert!(out.success(), "{out}");
    };
    watch("team-a");
    wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    let role = get_in(&cp, "team-a", "role", "demo.v1.0.0-demo-sa");
    assert_eq!(
        role["rules"][0]["resources"],
        serde_json::json!(["configmaps"])
    );
    let binding = get_in(&cp, "team-a", "rolebinding", "demo.v1.0.0-demo-sa");
    assert_eq!(
        binding["subjects"][0],
        serde_json::json!({"kind": "ServiceAccount", "name": "demo-sa", "namespace": "demo-system"})
    );
    get_in(&cp, "demo-system", "serviceaccount", "demo-sa");
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["olm.targetNamespaces"], "team-a");
    assert_eq!(annotations["olm.operatorNamespace"], "demo-system");
    let out = cp.kubectl(&["get", "role", "demo.v1.0.0-demo-sa", "-n", "demo-system"]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");

    // OwnNamespace: the Role moves to the install namespace and the one in team-a goes.
    watch("demo-system");
    common::eventually("the Role to move to demo-system", || {
        let out = cp.kubectl(&["get", "role", "demo.v1.0.0-demo-sa", "-n", "team-a"]);
        let gone = !out.success() && out.stderr.contains("NotFound");
        let here = cp
            .kubectl(&["get", "role", "demo.v1.0.0-demo-sa", "-n", "demo-system"])
            .success();
        if gone && here {
            Ok(())
        } else {
            Err(format!("team-a gone: {gone}, demo-system: {here}"))
        }
    });
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        "demo-system"
    );
}

#[test]
fn an_installed_bundles_webhooks_are_served_through_a_service_whose_self_managed_certificate_the_ca_bundle_verifies()
 {
    let (_registry, tmp, cp) = serve_one_bundle(|csv| {
        csv.replace(
            "  - type: OwnNamespace\n    supported: true\n",
            // A conversion webhook needs an AllNamespaces-only bundle.
            "  - type: OwnNamespace\n    supported: false\n",
        )
        .replace(
            "  install:\n",
            "  webhookdefinitions:\n  - type: ValidatingAdmissionWebhook\n    generateName: vwidget.demo.example.com\n    deploymentName: demo-controller\n    containerPort: 443\n    targetPort: 9443\n    webhookPath: /validate-demo-example-com-v1-widget\n    sideEffects: None\n    failurePolicy: Ignore\n    admissionReviewVersions: [v1]\n    rules:\n    - operations: [CREATE, UPDATE]\n      apiGroups: [demo.example.com]\n      apiVersions: [v1]\n      resources: [widgets]\n  - type: ConversionWebhook\n    generateName: cwidget.demo.example.com\n    deploymentName: demo-controller\n    containerPort: 443\n    targetPort: 9443\n    webhookPath: /convert\n    admissionReviewVersions: [v1]\n    conversionCRDs: [widgets.demo.example.com]\n  install:\n",
        )
    });
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", "1.0.0"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );

    let service = get_in(&cp, "demo-system", "service", "demo-controller-service");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 9443);
    assert_eq!(
        service["spec"]["selector"],
        serde_json::json!({"app": "demo"})
    );
    let config = get_object(
        &cp,
        "validatingwebhookconfiguration",
        "vwidget.demo.example.com",
    );
    let webhook = &config["webhooks"][0];
    assert_eq!(
        webhook["clientConfig"]["service"],
        serde_json::json!({"namespace": "demo-system", "name": "demo-controller-service", "port": 443, "path": "/validate-demo-example-com-v1-widget"})
    );
    let crd = get_object(&cp, "crd", "widgets.demo.example.com");
    let conversion = &crd["spec"]["conversion"]["webhook"]["clientConfig"];
    assert_eq!(conversion["service"]["path"], "/convert");
    let ca_bundle = webhook["clientConfig"]["caBundle"]
        .as_str()
        .expect("a caBundle");
    assert_eq!(conversion["caBundle"], ca_bundle);

    // The Secret the deployment mounts, owned by the extension, holds a serving certificate
    // for the Service that the published CA verifies.
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        "demo-controller-service-cert"
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        "/tmp/k8s-webhook-server/serving-certs"
    );
    let secret = get_in(&cp, "demo-system", "secret", "demo-controller-service-cert");
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"],
        ext["metadata"]["uid"]
    );
    let decode = |b64: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    };
    let dir = tmp.path();
    std::fs::write(dir.join("ca.pem"), decode(ca_bundle)).unwrap();
    std::fs::write(
        dir.join("tls.crt"),
        decode(secret["data"]["tls.crt"].as_str().unwrap()),
    )
    .unwrap();
    let verify = Command::new("openssl")
        .args(["verify", "-CAfile", "ca.pem", "-verify_hostname"])
        .arg("demo-controller-service.demo-system.svc")
        .arg("tls.crt")
        .current_dir(dir)
        .output()
        .expect("openssl runs (Debian's openssl package)");
    assert_eq!(
        String::from_utf8_lossy(&verify.stdout).trim(),
        "tls.crt: OK",
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    // Another service name does not verify: the check above can fail.
    let other = Command::new("openssl")
        .args([
            "verify",
            "-CAfile",
            "ca.pem",
            "-verify_hostname",
            "other.demo-system.svc",
            "tls.crt",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(!other.status.success());

    // Uninstalled, the configuration goes with it.
    cp.kubectl_ok(&["delete", "clusterextension", "demo", "--timeout=30s"]);
    let out = cp.kubectl(&[
        "get",
        "validatingwebhookconfiguration",
        "vwidget.demo.example.com",
    ]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");
}

#[test]
fn a_failed_cluster_extension_installs_when_a_catalog_offers_its_package_and_upgrades_when_it_changes()
 {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp.path(), &["bundle", "push", dir, &image]));
    }
    // v1 of the catalog has 1.0.0 only; v2 adds 2.0.0 (replacing it) and deprecates the package.
    let bundle_image = |v: &str| registry.image(&format!("demo/bundle:v{v}"));
    write_catalog_of(&tmp.path().join("v2"), bundle_image);
    let full = std::fs::read_to_string(tmp.path().join("v2/index.yaml")).unwrap();
    let first = full
        .split("---\n")
        .filter(|doc| !(doc.starts_with("schema: olm.bundle") && doc.contains("demo.v2.0.0")))
        .collect::<Vec<_>>()
        .join("---\n")
        .replace("- name: demo.v2.0.0\n  replaces: demo.v1.0.0\n", "");
    std::fs::create_dir_all(tmp.path().join("v1")).unwrap();
    std::fs::write(tmp.path().join("v1/index.yaml"), first).unwrap();
    std::fs::write(
        tmp.path().join("v2/index.yaml"),
        format!("{full}---\nschema: olm.deprecations\npackage: demo\nentries:\n- reference:\n    schema: olm.package\n  message: demo moves to demo2\n"),
    )
    .unwrap();

    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", ">=1.0.0"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Progressing",
        "True",
        "Retrying",
    );
    let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
    assert_eq!(
        message,
        "cannot resolve: no served catalog has package \"demo\""
    );

    // A catalog with the package appears: the extension installs, its spec untouched (a
    // resolution failure waits for a catalog change, not for a retry timer).
    let v1 = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(tmp.path(), &["catalog", "push", "v1", &v1]));
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &v1));
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    assert_eq!(ext["status"]["install"]["bundle"]["version"], "1.0.0");
    assert_eq!(ext["metadata"]["generation"], 1, "the spec was not edited");
    assert_eq!(
        catalog_condition(&ext, "PackageDeprecated").map(|c| (c.0, c.1)),
        Some(("False".into(), "NotDeprecated".into()))
    );

    // The catalog moves to content with a successor and a deprecation: one hop up, and the
    // deprecation shows, again without an edit of the extension.
    let v2 = registry.image("demo/catalog:v2");
    pushed_digest(&opkit(tmp.path(), &["catalog", "push", "v2", &v2]));
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &v2));
    assert!(out.success(), "{out}");
    let ext = common::eventually("ClusterExtension demo to install 2.0.0", || {
        let ext = get_object(&cp, "clusterextension", "demo");
        match ext["status"]["install"]["bundle"]["version"].as_str() {
            Some("2.0.0") => Ok(ext),
            _ => Err(ext["status"].to_string()),
        }
    });
    assert_eq!(ext["metadata"]["generation"], 1, "the spec was not edited");
    let deprecated = catalog_condition(&ext, "PackageDeprecated").unwrap();
    assert_eq!(
        (
            deprecated.0.as_str(),
            deprecated.1.as_str(),
            deprecated.2.as_str()
        ),
        ("True", "Deprecated", "demo moves to demo2")
    );
}

/// [`cluster_extension`] with `selector` (YAML lines at the selector's indentation).
fn cluster_extension_selecting(name: &str, selector: &str) -> String {
    format!(
        "{}      selector:\n{selector}",
        cluster_extension(name, "demo", ">=1.0.0")
    )
}

#[test]
fn a_catalog_selector_picks_catalogs_by_labels_and_name_and_a_label_change_resolves_again() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp.path(), &["bundle", "push", dir, &image]));
    }
    write_catalog_of(&tmp.path().join("catalog"), |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    // catalogd's name label, as OLM v1 sets it.
    let labelled = cp.kubectl_ok(&[
        "get",
        "clustercatalog",
        "-l",
        "olm.operatorframework.io/metadata.name=ops",
        "-o",
        "name",
    ]);
    assert_eq!(
        labelled.trim(),
        "clustercatalog.olm.operatorframework.io/ops"
    );

    // By name and by an expression over a label the catalog does not have yet.
    let prod_ops = cluster_extension_selecting(
        "prod-ops",
        "        matchLabels:\n          olm.operatorframework.io/metadata.name: ops\n        matchExpressions:\n        - key: tier\n          operator: In\n          values: [prod]\n",
    );
    let elsewhere = cluster_extension_selecting(
        "elsewhere",
        "        matchLabels:\n          olm.operatorframework.io/metadata.name: elsewhere\n",
    );
    let bad = cluster_extension_selecting(
        "bad",
        "        matchExpressions:\n        - key: tier\n          operator: Near\n",
    );
    for ext in [&prod_ops, &elsewhere, &bad] {
        let out = cp.kubectl_stdin(&["apply", "-f", "-"], ext);
        assert!(out.success(), "{out}");
    }
    for name in ["prod-ops", "elsewhere"] {
        let ext = wait_for_condition(
            &cp,
            "clusterextension",
            name,
            "Progressing",
            "True",
            "Retrying",
        );
        let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
        assert_eq!(
            message,
            "cannot resolve: no served catalog has package \"demo\" (of the catalogs spec.source.catalog.selector selects: none is served)"
        );
    }
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "bad",
        "Progressing",
        "False",
        "Blocked",
    );
    let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
    assert!(
        message.starts_with("spec.source.catalog.selector is not a label selector: ")
            && message.contains("Near"),
        "{message}"
    );

    // The catalog gets the label: the extension that now selects it installs, untouched.
    cp.kubectl_ok(&["label", "clustercatalog", "ops", "tier=prod"]);
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "prod-ops",
        "Installed",
        "True",
        "Succeeded",
    );
    assert_eq!(ext["status"]["install"]["bundle"]["version"], "2.0.0");
    assert_eq!(ext["metadata"]["generation"], 1);
    let ext = get_object(&cp, "clusterextension", "elsewhere");
    assert_eq!(
        catalog_condition(&ext, "Installed").map(|c| (c.0, c.1)),
        Some(("False".into(), "Failed".into()))
    );
}

#[test]
fn a_cluster_extension_upgrade_removing_a_crd_field_is_blocked_until_enforcement_none_and_deprecations_show()
 {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    // 1.0.0's Widget has spec.size; 2.0.0 drops it, which existing Widgets may rely on.
    let widgets = tmp.path().join("b1/manifests/widgets.yaml");
    let text = std::fs::read_to_string(&widgets).unwrap().replace(
        "        type: object\n",
        "        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size:\n                type: integer\n",
    );
    std::fs::write(&widgets, text).unwrap();
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp.path(), &["bundle", "push", dir, &image]));
    }
    let catalog_dir = tmp.path().join("catalog");
    write_catalog_of(&catalog_dir, |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    let mut index = std::fs::read_to_string(catalog_dir.join("index.yaml")).unwrap();
    index.push_str("---\nschema: olm.deprecations\npackage: demo\nentries:\n- reference:\n    schema: olm.package\n  message: demo is replaced by demo2\n- reference:\n    schema: olm.bundle\n    name: demo.v1.0.0\n  message: demo 1.0.0 leaks memory\n- reference:\n    schema: olm.channel\n    name: stable\n  message: stable is frozen\n");
    std::fs::write(catalog_dir.join("index.yaml"), index).unwrap();
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));

    let cp = common::ControlPlane::start_with(&["--olm"]);
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", "<2"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    // No channel asked for: the channel's deprecation does not apply.
    let deprecation = |ext: &serde_json::Value, t: &str| catalog_condition(ext, t).unwrap();
    assert_eq!(
        deprecation(&ext, "Deprecated"),
        (
            "True".into(),
            "Deprecated".into(),
            "demo is replaced by demo2\ndemo 1.0.0 leaks memory".into()
        )
    );
    assert_eq!(
        deprecation(&ext, "PackageDeprecated"),
        (
            "True".into(),
            "Deprecated".into(),
            "demo is replaced by demo2".into()
        )
    );
    assert_eq!(
        deprecation(&ext, "ChannelDeprecated"),
        ("False".into(), "NotDeprecated".into(), String::new())
    );
    assert_eq!(
        deprecation(&ext, "BundleDeprecated"),
        (
            "True".into(),
            "Deprecated".into(),
            "demo 1.0.0 leaks memory".into()
        )
    );

    // 2.0.0 drops spec and spec.size: the preflight refuses with every failed check (the
    // change rules give up on a version whose fields went), nothing of 2.0.0 is applied.
    let out = cp.kubectl(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"source":{"catalog":{"version":">=1.0.0"}}}}"#,
    ]);
    assert!(out.success(), "{out}");
    let message = common::eventually("the upgrade to 2.0.0 to be refused", || {
        let ext = get_object(&cp, "clusterextension", "demo");
        match catalog_condition(&ext, "Progressing") {
            Some((s, r, m)) if s == "True" && r == "Retrying" && m.contains("preflight") => Ok(m),
            _ => Err(ext["status"].to_string()),
        }
    });
    assert_eq!(
        message,
        "cannot upgrade to bundle demo.v2.0.0 2.0.0: CRD upgrade safety preflight failed:\nCustomResourceDefinition widgets.demo.example.com failed upgrade safety validation. \"NoExistingFieldRemoved\" validation failed: crd/widgets.demo.example.com version/v1 field/^.spec may not be removed\n\
         CustomResourceDefinition widgets.demo.example.com failed upgrade safety validation. \"NoExistingFieldRemoved\" validation failed: crd/widgets.demo.example.com version/v1 field/^.spec.size may not be removed\n\
         CustomResourceDefinition widgets.demo.example.com failed upgrade safety validation. \"ChangeValidator\" validation failed: calculating schema diff for CRD version \"v1\""
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    assert_eq!(ext["status"]["install"]["bundle"]["version"], "1.0.0");
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/demo:v1.0.0"
    );

    // Enforcement None skips the check: 2.0.0 installs, and is not a deprecated bundle.
    let out = cp.kubectl(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"install":{"preflight":{"crdUpgradeSafety":{"enforcement":"None"}}}}}"#,
    ]);
    assert!(out.success(), "{out}");
    let ext = common::eventually("ClusterExtension demo to install 2.0.0", || {
        let ext = get_object(&cp, "clusterextension", "demo");
        match ext["status"]["install"]["bundle"]["version"].as_str() {
            Some("2.0.0") => Ok(ext),
            _ => Err(ext["status"].to_string()),
        }
    });
    assert_eq!(
        deprecation(&ext, "BundleDeprecated"),
        ("False".into(), "NotDeprecated".into(), String::new())
    );
    let crd = get_object(&cp, "crd", "widgets.demo.example.com");
    assert!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].is_null(),
        "{crd}"
    );
}

// ---- `opkit operator …`: revisions, rollback, manual approval, uninstall ----

/// Runs `opkit operator ARGS` against `cp`.
fn operator(cp: &common::ControlPlane, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
        .arg("operator")
        .args(args)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .args(["--timeout", "30s"])
        .output()
        .expect("opkit runs")
}

/// `opkit operator ARGS`' standard output; fails the test when it fails.
fn operator_ok(cp: &common::ControlPlane, args: &[&str]) -> String {
    let out = operator(cp, args);
    assert!(
        out.status.success(),
        "opkit operator {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `opkit operator ARGS`' standard error; fails the test when it succeeds.
fn operator_fails(cp: &common::ControlPlane, args: &[&str]) -> String {
    let out = operator(cp, args);
    assert!(
        !out.status.success(),
        "opkit operator {args:?} succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// Pushes the installable bundles (after `prepare` changed them) and their catalog to
/// `registry`, starts `opkit up --olm` and serves the catalog as ClusterCatalog `ops`.
fn plane_serving_demo(
    registry: &Registry,
    tmp: &Path,
    prepare: impl FnOnce(&Path),
) -> common::ControlPlane {
    plane_with_flags_serving_demo(registry, tmp, prepare, &["--olm"])
}

/// As [`plane_serving_demo`], with `opkit up FLAGS`.
fn plane_with_flags_serving_demo(
    registry: &Registry,
    tmp: &Path,
    prepare: impl FnOnce(&Path),
    flags: &[&str],
) -> common::ControlPlane {
    write_installable_bundles(tmp);
    prepare(tmp);
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp, &["bundle", "push", dir, &image]));
    }
    write_catalog_of(&tmp.join("catalog"), |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(tmp, &["catalog", "push", "catalog", &catalog]));
    let cp = common::ControlPlane::start_with(flags);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    cp
}

/// Gives bundle `dir`'s Widget CRD an integer `spec.size` of at most `maximum`.
fn widget_size_at_most(root: &Path, dir: &str, maximum: u32) {
    let widgets = root.join(dir).join("manifests/widgets.yaml");
    let text = std::fs::read_to_string(&widgets).unwrap().replace(
        "        type: object\n",
        &format!("        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size:\n                type: integer\n                maximum: {maximum}\n"),
    );
    std::fs::write(&widgets, text).unwrap();
}

/// A Widget `name` of `size` in demo-system.
fn widget(name: &str, size: u32) -> String {
    format!(
        "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: demo-system\nspec:\n  size: {size}\n"
    )
}

#[test]
fn every_install_is_a_kept_revision_and_rollback_is_refused_by_crd_safety_and_invalid_objects_until_safe()
 {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    // 2.0.0 allows bigger Widgets than 1.0.0: going back tightens `maximum`.
    let cp = plane_serving_demo(&registry, tmp.path(), |root| {
        widget_size_at_most(root, "b1", 10);
        widget_size_at_most(root, "b2", 100);
    });

    let out = operator_ok(
        &cp,
        &["install", "demo", "--version", "<2", "-n", "demo-system"],
    );
    assert_eq!(
        out,
        "Installed demo: demo.v1.0.0 1.0.0 (revision 1) is installed.\n"
    );
    let secret = get_in(&cp, "demo-system", "secret", "opkit.extension.demo.v1");
    assert_eq!(secret["type"], "opkit.dev/extension-revision");
    assert_eq!(
        secret["metadata"]["labels"],
        serde_json::json!({"opkit.dev/extension": "demo", "opkit.dev/revision": "1"})
    );
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["name"], "demo",
        "{secret}"
    );

    let out = operator_ok(&cp, &["upgrade", "demo", "--version", ">=1.0.0"]);
    assert_eq!(
        out,
        "Upgraded demo: demo.v2.0.0 2.0.0 (revision 2) is installed.\n"
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    assert_eq!(ext["status"]["install"]["revision"], 2);
    assert_eq!(
        operator_ok(&cp, &["list"]),
        "NAME   PACKAGE   VERSION   REVISION   STATE\ndemo   demo      2.0.0     2          Installed\n"
    );

    // A Widget only 2.0.0's schema admits.
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &widget("big", 50));
    assert!(out.success(), "{out}");
    let err = operator_fails(&cp, &["rollback", "demo"]);
    assert_eq!(
        err,
        "error: cannot roll back demo to revision 1 (demo.v1.0.0 1.0.0): CRD upgrade safety preflight failed:\n\
         CustomResourceDefinition widgets.demo.example.com failed upgrade safety validation. \"ChangeValidator\" validation failed: \
         version \"v1\", field \"^.spec.size\": maximum: constraint decreased from 100 to 10\n"
    );
    // Refused: nothing changed.
    let ext = get_object(&cp, "clusterextension", "demo");
    assert_eq!(ext["spec"]["source"]["catalog"]["version"], ">=1.0.0");

    // Without the CRD check, the Widget itself stops the downgrade.
    let out = cp.kubectl(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"install":{"preflight":{"crdUpgradeSafety":{"enforcement":"None"}}}}}"#,
    ]);
    assert!(out.success(), "{out}");
    let err = operator_fails(&cp, &["rollback", "demo", "--to-revision", "1"]);
    assert!(
        err.starts_with(
            "error: cannot roll back demo to revision 1 (demo.v1.0.0 1.0.0): existing Widget demo-system/big would not validate against the bundle's CustomResourceDefinition widgets.demo.example.com version v1: spec.size: "
        ) && err.contains("10"),
        "{err}"
    );

    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &widget("big", 5));
    assert!(out.success(), "{out}");
    let out = operator_ok(&cp, &["rollback", "demo"]);
    assert_eq!(
        out,
        "Rolled back to revision 1: demo: demo.v1.0.0 1.0.0 (revision 3) is installed.\n"
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    assert_eq!(
        ext["spec"]["source"]["catalog"],
        serde_json::json!({"packageName": "demo", "version": "1.0.0", "upgradeConstraintPolicy": "SelfCertified"})
    );
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/demo:v1.0.0"
    );
    let crd = get_object(&cp, "crd", "widgets.demo.example.com");
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["maximum"],
        10
    );
    get_in(&cp, "demo-system", "secret", "opkit.extension.demo.v3");

    // Back to the catalog's graph: one hop up from 1.0.0 again, as revision 4.
    let out = operator_ok(
        &cp,
        &[
            "upgrade",
            "demo",
            "--version",
            ">=1.0.0",
            "--upgrade-constraint-policy",
            "CatalogProvided",
        ],
    );
    assert_eq!(
        out,
        "Upgraded demo: demo.v2.0.0 2.0.0 (revision 4) is installed.\n"
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    assert_eq!(
        ext["spec"]["source"]["catalog"]["upgradeConstraintPolicy"],
        "CatalogProvided"
    );
}

#[test]
fn a_manual_approval_extension_shows_the_pending_upgrade_and_its_changes_until_approved() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let cp = plane_serving_demo(&registry, tmp.path(), |root| {
        // Only 1.0.0 ships this ConfigMap: the upgrade would delete it.
        std::fs::write(
            root.join("b1/manifests/settings.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-settings\ndata:\n  level: info\n",
        )
        .unwrap();
    });
    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let manual = format!(
        "{}  install:\n    approval: Manual\n",
        cluster_extension("demo", "demo", "<2")
    );
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &manual);
    assert!(out.success(), "{out}");
    // The first install does not wait.
    wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );

    let out = operator_ok(&cp, &["upgrade", "demo", "--version", ">=1.0.0"]);
    assert!(
        out.starts_with("demo: the upgrade to demo.v2.0.0 2.0.0 waits for approval (installed: demo.v1.0.0 1.0.0 (revision 1)); it adds [], removes [ConfigMap demo-system/demo-settings], changes [Deployment demo-system/demo-controller]")
            && out.ends_with("]. Run `opkit operator approve demo`.\n"),
        "{out}"
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    let pending = &ext["status"]["pendingUpgrade"];
    assert_eq!(
        pending["bundle"],
        serde_json::json!({"name": "demo.v2.0.0", "version": "2.0.0"})
    );
    assert_eq!(
        pending["removed"],
        serde_json::json!(["ConfigMap demo-system/demo-settings"])
    );
    assert!(
        pending["changed"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("Deployment demo-system/demo-controller")),
        "{pending}"
    );
    assert_eq!(
        catalog_condition(&ext, "UpgradePending"),
        Some((
            "True".into(),
            "AwaitingApproval".into(),
            "the upgrade to bundle demo.v2.0.0 2.0.0 waits for approval: run `opkit operator approve demo`".into()
        ))
    );
    assert_eq!(
        catalog_condition(&ext, "Progressing").map(|c| (c.0, c.1)),
        Some(("False".into(), "Blocked".into()))
    );
    let deployment = get_in(&cp, "demo-system", "deployment", "demo-controller");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/demo:v1.0.0"
    );
    assert!(
        operator_ok(&cp, &["list"])
            .ends_with("demo   demo      1.0.0     1          UpgradePending 2.0.0\n")
    );

    let out = operator_ok(&cp, &["approve", "demo"]);
    assert_eq!(
        out,
        "Approved demo.v2.0.0: demo: demo.v2.0.0 2.0.0 (revision 2) is installed.\n"
    );
    let ext = get_object(&cp, "clusterextension", "demo");
    assert!(
        ext["status"]["pendingUpgrade"].is_null(),
        "{}",
        ext["status"]
    );
    assert_eq!(
        catalog_condition(&ext, "UpgradePending").map(|c| (c.0, c.1)),
        Some(("False".into(), "NoPendingUpgrade".into()))
    );
    let out = cp.kubectl(&["get", "configmap", "demo-settings", "-n", "demo-system"]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");
    let err = operator_fails(&cp, &["approve", "demo"]);
    assert_eq!(
        err,
        "error: ClusterExtension demo has no upgrade waiting for approval (installed: demo.v2.0.0 2.0.0 (revision 2))\n"
    );
}

#[test]
fn uninstall_keeps_the_crds_and_their_resources_and_lists_them_unless_purged() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let cp = plane_serving_demo(&registry, tmp.path(), |root| {
        widget_size_at_most(root, "b1", 10)
    });
    let install = ["install", "demo", "--version", "1.0.0", "-n", "demo-system"];
    operator_ok(&cp, &install);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &widget("w1", 1));
    assert!(out.success(), "{out}");

    let out = operator_ok(&cp, &["uninstall", "demo"]);
    assert_eq!(
        out,
        "Uninstalled demo (demo.v1.0.0 1.0.0 (revision 1)).\n\
         These remain (uninstall with --purge, or delete them, to remove them):\n  \
         CustomResourceDefinition widgets.demo.example.com (1 custom resource)\n"
    );
    let out = cp.kubectl(&["get", "deployment", "demo-controller", "-n", "demo-system"]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");
    let out = cp.kubectl(&[
        "get",
        "secret",
        "opkit.extension.demo.v1",
        "-n",
        "demo-system",
    ]);
    assert!(!out.success() && out.stderr.contains("NotFound"), "{out}");
    let crd = get_object(&cp, "crd", "widgets.demo.example.com");
    assert!(crd["metadata"]["ownerReferences"].is_null(), "{crd}");
    assert!(
        crd["metadata"]["labels"]["olm.operatorframework.io/owner-name"].is_null(),
        "{crd}"
    );
    get_in(&cp, "demo-system", "widget", "w1");

    // Installed again, it takes the CRD back; --purge removes it and the Widget with it.
    operator_ok(&cp, &install);
    let out = operator_ok(&cp, &["uninstall", "demo", "--purge"]);
    assert_eq!(
        out,
        "Uninstalled demo (demo.v1.0.0 1.0.0 (revision 1)).\nDeleted with it:\n  \
         CustomResourceDefinition widgets.demo.example.com (1 custom resource)\n"
    );
    common::eventually("the Widget CRD to be gone", || {
        let out = cp.kubectl(&["get", "crd", "widgets.demo.example.com"]);
        if !out.success() && out.stderr.contains("NotFound") {
            Ok(())
        } else {
            Err(format!("{out}"))
        }
    });
    let err = operator_fails(&cp, &["uninstall", "demo"]);
    assert_eq!(
        err,
        "error: there is no ClusterExtension \"demo\": `opkit operator list` shows the installed ones\n"
    );
}

#[test]
fn kept_revisions_outlive_a_restart_of_the_control_plane_and_its_lifecycle_controllers() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let flags = ["--olm", "--data-dir", data.to_str().unwrap()];
    let cp = plane_with_flags_serving_demo(&registry, tmp.path(), |_| {}, &flags);
    operator_ok(
        &cp,
        &["install", "demo", "--version", "<2", "-n", "demo-system"],
    );
    operator_ok(&cp, &["upgrade", "demo", "--version", ">=1.0.0"]);

    // Killed and started again on the same data: the controllers remember nothing but
    // what the cluster holds.
    drop(cp);
    let cp = common::ControlPlane::start_with(&flags);
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    let out = operator_ok(&cp, &["rollback", "demo"]);
    assert_eq!(
        out,
        "Rolled back to revision 1: demo: demo.v1.0.0 1.0.0 (revision 3) is installed.\n"
    );
}

// ---- The OperatorHub page of `opkit up --olm`, in headless Chromium ----

/// Where Debian's chromium package puts the browser.
const CHROMIUM_BIN: &str = "/usr/bin/chromium";

/// The browser, or a failure saying how to install it.
fn chromium() -> Command {
    assert!(
        Path::new(CHROMIUM_BIN).is_file(),
        "{CHROMIUM_BIN} is missing: run `scripts/install-chromium.sh` at the repository root (installs Debian's chromium package)"
    );
    let mut cmd = Command::new(CHROMIUM_BIN);
    // Tests run as root on CI, where Chromium's sandbox cannot start.
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
    ]);
    cmd
}

/// The DOM of `url` after it loaded, as headless Chromium serializes it.
fn dump_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = chromium()
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium --dump-dom {url} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The URL `opkit up` printed for the OperatorHub page.
fn hub_url(cp: &common::ControlPlane) -> String {
    let log = cp.server_log();
    log.lines()
        .find_map(|l| l.strip_prefix("[stdout] serving the OperatorHub page at "))
        .unwrap_or_else(|| panic!("no OperatorHub line in the output of opkit up:\n{log}"))
        .to_string()
}

/// Writes the installable bundles with a Markdown description (and HTML that must show as
/// text), pushes them, renders their catalog with `olm.csv.metadata` as opm does, pushes it,
/// starts `opkit up --olm` and serves the catalog as ClusterCatalog `ops`.
fn plane_serving_rendered_demo(registry: &Registry, tmp: &Path) -> common::ControlPlane {
    write_installable_bundles(tmp);
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let csv = tmp
            .join(dir)
            .join("manifests/demo.clusterserviceversion.yaml");
        let text = std::fs::read_to_string(&csv).unwrap().replace(
            "  description: A demo operator.\n",
            "  description: |\n    A demo operator.\n\n    ## Usage\n\n    Create a *Widget*. <script>alert(1)</script>\n",
        ).replace(
            "    capabilities: Basic Install\n",
            "    capabilities: Basic Install\n    categories: Developer Tools, Storage\n",
        );
        std::fs::write(&csv, text).unwrap();
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp, &["bundle", "push", dir, &image]));
    }
    let template = format!("{}/demo/bundle:v{{{{.Version}}}}", registry.addr);
    let rendered = stdout_of(&opkit(
        tmp,
        &[
            "catalog",
            "render",
            "b1",
            "b2",
            "-o",
            "yaml",
            "--image-ref-template",
            &template,
            "--migrate-level",
            "bundle-object-to-csv-metadata",
        ],
    ));
    assert!(rendered.starts_with("---\n"), "{rendered}");
    let catalog_dir = tmp.join("catalog");
    std::fs::create_dir_all(&catalog_dir).unwrap();
    std::fs::write(
        catalog_dir.join("index.yaml"),
        format!(
            "schema: olm.package\nname: demo\ndefaultChannel: stable\nicon:\n  base64data: PHN2Zy8+\n  mediatype: image/svg+xml\n---\nschema: olm.channel\npackage: demo\nname: stable\nentries:\n- name: demo.v1.0.0\n- name: demo.v2.0.0\n  replaces: demo.v1.0.0\n{rendered}"
        ),
    )
    .unwrap();
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(tmp, &["catalog", "push", "catalog", &catalog]));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");
    cp
}

/// A headless Chromium driven over the Chrome DevTools Protocol: one page's websocket.
struct Browser {
    _process: Kill,
    _profile: tempfile::TempDir,
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next_id: u64,
    /// Events received while waiting for answers, oldest first.
    events: Vec<serde_json::Value>,
}

impl Browser {
    /// Starts Chromium with a debugging port and connects to its first page.
    async fn start() -> Browser {
        use std::io::BufRead;
        let profile = tempfile::tempdir().unwrap();
        let mut process = Kill(
            chromium()
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .args(["--remote-debugging-port=0", "about:blank"])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("chromium starts"),
        );
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
        let stderr = process.0.stderr.take().unwrap();
        let mut lines = std::io::BufReader::new(stderr).lines();
        let browser_ws = loop {
            let line = lines
                .next()
                .expect("chromium prints its DevTools address")
                .unwrap();
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                break url.trim().to_string();
            }
        };
        // Keep reading stderr, so the browser never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let addr = browser_ws
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let targets: serde_json::Value = common::eventually("chromium's page target", || {
            let (status, body) = devtools_get(&addr, "/json/list")?;
            let targets: serde_json::Value =
                serde_json::from_str(&body).map_err(|e| format!("{status} {e}: {body}"))?;
            match targets.as_array() {
                Some(list) if list.iter().any(|t| t["type"] == "page") => Ok(targets),
                _ => Err(body),
            }
        });
        let page = targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .unwrap();
        let ws = page["webSocketDebuggerUrl"].as_str().unwrap();
        let (socket, _) = tokio_tungstenite::connect_async(ws)
            .await
            .expect("the page's DevTools websocket accepts");
        let mut browser = Browser {
            _process: process,
            _profile: profile,
            socket,
            next_id: 0,
            events: Vec::new(),
        };
        browser.call("Page.enable", serde_json::json!({})).await;
        // The hub's pages forbid scripts; the test's own evaluations must still run.
        browser
            .call("Page.setBypassCSP", serde_json::json!({"enabled": true}))
            .await;
        browser
    }

    /// Sends one command and returns its result (events meanwhile are kept).
    async fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use futures::SinkExt;
        use tokio_tungstenite::tungstenite::Message;
        self.next_id += 1;
        let id = self.next_id;
        let request = serde_json::json!({"id": id, "method": method, "params": params});
        self.socket
            .send(Message::text(request.to_string()))
            .await
            .expect("the DevTools websocket takes a command");
        loop {
            let message = self.next_message().await;
            if message["id"] == id {
                assert!(message["error"].is_null(), "{method} failed: {message}");
                return message["result"].clone();
            }
            self.events.push(message);
        }
    }

    /// Waits for the event `method` (one already received counts), up to `timeout`.
    async fn event(&mut self, method: &str, timeout: std::time::Duration) -> serde_json::Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(i);
        }
        let wait = async {
            loop {
                let message = self.next_message().await;
                if message["method"] == method {
                    return message;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or_else(|_| panic!("no {method} event within {timeout:?}"))
    }

    async fn next_message(&mut self) -> serde_json::Value {
        use futures::StreamExt;
        use tokio_tungstenite::tungstenite::Message;
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).unwrap(),
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("the DevTools websocket failed: {e}"),
                None => panic!("chromium closed the DevTools websocket"),
            }
        }
    }

    /// Opens `url` and waits until it has loaded.
    async fn open(&mut self, url: &str) {
        self.events.clear();
        self.call("Page.navigate", serde_json::json!({"url": url}))
            .await;
        self.event("Page.loadEventFired", std::time::Duration::from_secs(30))
            .await;
    }

    /// The value of JavaScript `expression` in the page.
    async fn eval(&mut self, expression: &str) -> serde_json::Value {
        let result = self
            .call(
                "Runtime.evaluate",
                serde_json::json!({"expression": expression, "returnByValue": true}),
            )
            .await;
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression} threw: {result}"
        );
        result["result"]["value"].clone()
    }
}

#[test]
fn the_hub_page_lists_a_served_package_and_its_install_button_installs_it_in_chromium() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    let cp = plane_serving_rendered_demo(&registry, tmp.path());
    let hub = hub_url(&cp);
    assert!(
        hub.starts_with("http://127.0.0.1:") && hub.ends_with("/hub/"),
        "{hub}"
    );

    // The package list, as the browser renders it.
    let dom = dump_dom(&hub);
    for expected in [
        "data-package=\"demo\"",
        "<h3>Demo</h3>",
        "A demo operator.",
        "Basic Install",
        "<span class=\"tag\">Storage</span>",
        "opkit · 2.0.0 · catalog ops",
        "stable: 2.0.0, 1.0.0",
        "src=\"data:image/svg+xml;base64,PHN2Zy8+\"",
        "None yet",
    ] {
        assert!(
            dom.contains(expected),
            "no {expected:?} in the hub's DOM:\n{dom}"
        );
    }

    // The package page: the CSV's Markdown rendered, its HTML shown as text, the examples.
    let package = format!("{hub}packages/ops/demo");
    let dom = dump_dom(&package);
    assert!(dom.contains("<h2>Usage</h2>"), "{dom}");
    assert!(dom.contains("<em>Widget</em>"), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !dom.contains("<script>"),
        "{dom}"
    );
    assert!(dom.contains("\"kind\": \"Widget\""), "{dom}");
    assert!(
        dom.contains("<td>stable (default)</td><td>2.0.0, 1.0.0</td>"),
        "{dom}"
    );

    // Click Install on the package page; the hub answers when the controller has acted.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let message = runtime.block_on(async {
        let mut browser = Browser::start().await;
        browser.open(&package).await;
        browser
            .eval("document.querySelector('#install input[name=namespace]').value = 'demo-system'")
            .await;
        browser
            .eval("document.querySelector('#install button').click(); 'clicked'")
            .await;
        browser
            .event("Page.loadEventFired", std::time::Duration::from_secs(60))
            .await;
        browser
            .eval("document.getElementById('message').textContent")
            .await
    });
    assert_eq!(
        message,
        "Installed demo: demo.v2.0.0 2.0.0 (revision 1) is installed. (It created namespace demo-system.)"
    );
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    assert_eq!(
        ext["spec"]["source"]["catalog"]["channels"],
        serde_json::json!(["stable"])
    );
    let dom = dump_dom(&hub);
    assert!(
        dom.contains("<tr data-extension=\"demo\"><td>demo</td><td>demo</td><td>2.0.0</td><td>1</td><td class=\"state\">Installed</td>"),
        "{dom}"
    );

    // A form from elsewhere (no token) changes nothing.
    let (addr, _) = split_url(&hub);
    let (status, body) = http_post(&addr, "/hub/uninstall", "name=demo");
    assert_eq!(status, 403, "{body}");
    get_object(&cp, "clusterextension", "demo");
}

/// One HTTP/1.1 form POST over a plain socket; the status and the body.
fn http_post(addr: &str, path: &str, form: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    (status, body.to_string())
}

// ---- Dependencies: `olm.package.required`, `olm.gvk.required` ----

#[test]
fn a_bundle_whose_required_package_or_api_is_missing_is_not_installed_and_says_which() {
    let registry = Registry::start();
    let tmp = tempfile::tempdir().unwrap();
    write_installable_bundles(tmp.path());
    for (dir, version) in [("b1", "1.0.0"), ("b2", "2.0.0")] {
        let image = registry.image(&format!("demo/bundle:v{version}"));
        pushed_digest(&opkit(tmp.path(), &["bundle", "push", dir, &image]));
    }
    let catalog_dir = tmp.path().join("catalog");
    write_catalog_of(&catalog_dir, |v| {
        registry.image(&format!("demo/bundle:v{v}"))
    });
    // demo 1.0.0 needs package base (>=1.0.0) and the Gadget API.
    let index = catalog_dir.join("index.yaml");
    let text = std::fs::read_to_string(&index).unwrap().replacen(
        "    packageName: demo\n    version: 1.0.0\n",
        "    packageName: demo\n    version: 1.0.0\n- type: olm.package.required\n  value:\n    packageName: base\n    versionRange: '>=1.0.0'\n- type: olm.gvk.required\n  value:\n    group: gadgets.example.com\n    kind: Gadget\n    version: v1\n",
        1,
    );
    std::fs::write(&index, text).unwrap();
    let catalog = registry.image("demo/catalog:v1");
    pushed_digest(&opkit(
        tmp.path(),
        &["catalog", "push", "catalog", &catalog],
    ));
    let cp = common::ControlPlane::start_with(&["--olm"]);
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cluster_catalog("ops", &catalog));
    assert!(out.success(), "{out}");
    wait_for_catalog(&cp, "ops", "Serving", "True", "Available");

    cp.kubectl_ok(&["create", "namespace", "demo-system"]);
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &cluster_extension("demo", "demo", "1.0.0"),
    );
    assert!(out.success(), "{out}");
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Progressing",
        "True",
        "Retrying",
    );
    let (_, _, message) = catalog_condition(&ext, "Progressing").unwrap();
    assert_eq!(
        message,
        "bundle demo.v1.0.0 requires package \"base\" in range \">=1.0.0\" (no ClusterExtension has it installed) and API gadgets.example.com/v1 Gadget (the cluster does not serve it): install what it needs first (opkit installs no dependencies)"
    );
    let out = cp.kubectl(&["get", "deployment", "demo-controller", "-n", "demo-system"]);
    assert!(!out.success(), "nothing of the bundle is applied: {out}");

    // The API arrives: the next attempt names only the package.
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.gadgets.example.com\nspec:\n  group: gadgets.example.com\n  scope: Namespaced\n  names:\n    kind: Gadget\n    plural: gadgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n",
    );
    assert!(out.success(), "{out}");
    cp.kubectl_ok(&[
        "wait",
        "crd/gadgets.gadgets.example.com",
        "--for=condition=Established",
    ]);
    // A spec change (the same bundle in another range) resolves again at once.
    cp.kubectl_ok(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"source":{"catalog":{"version":"<2"}}}}"#,
    ]);
    common::eventually("the refusal to name only the package", || {
        let ext = get_object(&cp, "clusterextension", "demo");
        match catalog_condition(&ext, "Progressing") {
            Some((_, _, m))
                if m == "bundle demo.v1.0.0 requires package \"base\" in range \">=1.0.0\" (no ClusterExtension has it installed): install what it needs first (opkit installs no dependencies)" =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    });

    // 2.0.0 requires nothing: it installs.
    cp.kubectl_ok(&[
        "patch",
        "clusterextension",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"source":{"catalog":{"version":"2.0.0"}}}}"#,
    ]);
    let ext = wait_for_condition(
        &cp,
        "clusterextension",
        "demo",
        "Installed",
        "True",
        "Succeeded",
    );
    assert_eq!(ext["status"]["install"]["bundle"]["version"], "2.0.0");
}

/// A GET of Chromium's DevTools HTTP endpoint, which keeps the connection open: the body is
/// read up to its Content-Length.
fn devtools_get(addr: &str, path: &str) -> Result<(u16, String), String> {
    use std::io::{BufRead, Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::new(stream);
    let mut status = 0;
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(code) = line.strip_prefix("HTTP/1.1 ") {
            status = code
                .split(' ')
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().map_err(|e| format!("{e}"))?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
