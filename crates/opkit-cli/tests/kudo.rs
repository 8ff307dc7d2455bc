//! `opkit kudo ...` and the `kubectl-kudo` plugin against `opkit up`, checked with the real
//! kubectl: install creates the Operator, OperatorVersion and Instance KUDO would (and
//! nothing when a parameter is refused), update and upgrade patch the instance, plan
//! trigger/abandon/retry write the CLI/manager protocol's fields, `plan status` draws KUDO's
//! tree for a status written through the API, and `kubectl kudo ...` runs the plugin; with an
//! `opkit kudo manager` process running, `install`, `update` and `plan trigger` with
//! `--wait` end when the manager has run their plans, and `uninstall --wait` when it let the
//! instance go; the manager's admission webhook refuses a conflicting `update` at write time;
//! a package served over HTTP (python3's `http.server`) is searched for and
//! installed by name, and `diagnostics collect` writes KUDO's tree; `package add` edits a
//! package written by the test.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{COMMAND_TIMEOUT, ControlPlane, Output, run};

const OPERATOR: &str = r#"apiVersion: kudo.dev/v1beta1
name: demo
operatorVersion: VERSION
appVersion: 1.0.0
kubernetesVersion: 1.16.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [deployment.yaml]
  - name: noop
    kind: Dummy
    spec: {done: true}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: parallel
        steps:
          - name: everything
            tasks: [app]
  backup:
    strategy: serial
    phases:
      - name: save
        strategy: serial
        steps:
          - name: noop
            tasks: [noop]
"#;

const PARAMS: &str = r#"apiVersion: kudo.dev/v1beta1
parameters:
  - name: REPLICAS
    description: how many pods
    default: 1
    type: integer
    trigger: deploy
  - name: MODE
    default: fast
    enum: [fast, slow]
    trigger: backup
  - name: LABELS
    type: map
    default: {tier: web}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: {{ .Params.REPLICAS }}
  selector:
    matchLabels: {app: {{ .Name }}}
  template:
    metadata:
      labels:
        app: {{ .Name }}
        mode: {{ .Params.MODE }}
{{ range $k, $v := .Params.LABELS }}        {{ $k }}: {{ $v }}
{{ end }}    spec:
      containers:
        - name: app
          image: nginx
"#;

fn write_package(dir: &Path, version: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("operator.yaml"),
        OPERATOR.replace("VERSION", version),
    )
    .unwrap();
    std::fs::write(dir.join("params.yaml"), PARAMS).unwrap();
    std::fs::write(dir.join("templates/deployment.yaml"), DEPLOYMENT).unwrap();
    dir.to_path_buf()
}

fn kudo(cp: &ControlPlane, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.arg("kudo")
        .args(args)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .current_dir(cp.dir())
        .env("KUDO_HOME", cp.dir().join("kudo-home"))
        .env_remove("KUBECONFIG");
    run(cmd, None, COMMAND_TIMEOUT)
}

fn kudo_ok(cp: &ControlPlane, args: &[&str]) -> String {
    let out = kudo(cp, args);
    assert!(out.success(), "kudo should have succeeded\n{out}");
    out.stdout
}

fn kudo_fails(cp: &ControlPlane, args: &[&str]) -> Output {
    let out = kudo(cp, args);
    assert_eq!(
        out.code,
        Some(1),
        "kudo should have failed with exit code 1\n{out}"
    );
    out
}

/// `python3 -m http.server` serving `dir` on a free loopback port, and its URL. Fails loudly
/// when python3 is missing.
fn serve_http(dir: &Path) -> (common::Streaming, String) {
    let found = Command::new("python3").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "this test needs python3 (for `python3 -m http.server`) on PATH"
    );
    let mut cmd = Command::new("python3");
    cmd.args([
        "-u",
        "-m",
        "http.server",
        "0",
        "--bind",
        "127.0.0.1",
        "--directory",
    ])
    .arg(dir);
    let mut server = common::Streaming::spawn(cmd);
    let line = server.wait_for_line("python3's http.server to listen", COMMAND_TIMEOUT, |l| {
        l.starts_with("Serving HTTP on")
    });
    // "Serving HTTP on 127.0.0.1 port 41235 (http://127.0.0.1:41235/) ..."
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .unwrap_or_else(|| panic!("no port in {line:?}"))
        .to_string();
    (server, format!("http://127.0.0.1:{port}"))
}

fn jsonpath(cp: &ControlPlane, object: &str, path: &str) -> String {
    cp.kubectl_ok(&["get", object, "-o", &format!("jsonpath={{{path}}}")])
}

#[test]
fn install_update_upgrade_and_the_plan_protocol_write_kudos_objects() {
    let cp = ControlPlane::start();
    let dry = kudo_ok(
        &cp,
        &[
            "init",
            "--dry-run",
            "-o",
            "yaml",
            "--kudo-image",
            "example.com/opkit:test",
        ],
    );
    assert!(
        dry.starts_with(
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        ),
        "{dry}"
    );
    assert!(
        dry.contains("image: example.com/opkit:test") && dry.ends_with("...\n"),
        "{dry}"
    );
    assert_eq!(
        cp.kubectl_ok(&["get", "crd", "-o", "name"])
            .matches("kudo.dev")
            .count(),
        0,
        "dry run"
    );
    kudo_ok(&cp, &["init", "--crd-only"]);
    cp.kubectl_ok(&[
        "get",
        "crd",
        "instances.kudo.dev",
        "operatorversions.kudo.dev",
        "operators.kudo.dev",
    ]);
    assert!(
        cp.kubectl(&["get", "namespace", "kudo-system"])
            .stderr
            .contains("NotFound")
    );
    kudo_ok(
        &cp,
        &["init", "--kudo-image", "example.com/opkit:test", "--wait"],
    );
    assert_eq!(
        cp.kubectl_ok(&[
            "-n", "kudo-system", "get", "deployment", "kudo-controller-manager", "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.serviceAccountName} {.status.availableReplicas}",
        ]),
        "example.com/opkit:test kudo-manager 1"
    );
    let v1 = write_package(&cp.dir().join("demo-v1"), "0.1.0");
    let v2 = write_package(&cp.dir().join("demo-v2"), "0.2.0");
    let v1 = v1.to_str().unwrap();
    let v2 = v2.to_str().unwrap();

    // A refused parameter creates nothing.
    let out = kudo_fails(
        &cp,
        &["install", v1, "--instance", "demo", "-p", "REPLICAS=three"],
    );
    assert!(
        out.stderr
            .contains(r#"parameter "REPLICAS" has an invalid value "three": type is "integer""#),
        "{out}"
    );
    let out = kudo_fails(&cp, &["install", v1, "-p", "MODE=medium", "-p", "NOPE=1"]);
    assert!(
        out.stderr
            .contains(r#"only allowed values are [fast slow]"#),
        "{out}"
    );
    assert!(
        out.stderr.contains(r#"parameter "NOPE" is not defined"#),
        "{out}"
    );
    for kind in [
        "operators.kudo.dev",
        "operatorversions.kudo.dev",
        "instances.kudo.dev",
    ] {
        assert_eq!(cp.kubectl_ok(&["get", kind, "-o", "name"]), "", "{kind}");
    }

    let out = kudo_ok(
        &cp,
        &["install", v1, "--instance", "demo", "-p", "REPLICAS=3"],
    );
    assert_eq!(
        out,
        "operator default/demo created\noperatorversion default/demo-1.0.0-0.1.0 created\ninstance default/demo created\n"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo", ".spec.operatorVersion.name"),
        "demo-1.0.0-0.1.0"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo", ".spec.parameters"),
        r#"{"REPLICAS":"3"}"#
    );
    assert_eq!(
        jsonpath(
            &cp,
            "instance.kudo.dev/demo",
            ".metadata.labels.kudo\\.dev/operator"
        ),
        "demo"
    );
    assert_eq!(
        jsonpath(
            &cp,
            "operatorversion.kudo.dev/demo-1.0.0-0.1.0",
            ".spec.operator.name"
        ),
        "demo"
    );
    assert_eq!(
        jsonpath(
            &cp,
            "operatorversion.kudo.dev/demo-1.0.0-0.1.0",
            ".spec.parameters[2].default"
        ),
        "tier: web\n"
    );
    let out = kudo_fails(&cp, &["install", v1, "--instance", "demo"]);
    assert!(out.stderr.contains("cannot install instance 'demo' because an instance of that name already exists in namespace default"), "{out}");
    // A second instance reuses the operator and its version.
    let out = kudo_ok(&cp, &["install", v1, "--instance", "demo2"]);
    assert_eq!(
        out,
        "operatorversion default/demo-1.0.0-0.1.0 already installed\ninstance default/demo2 created\n"
    );

    // update: a merge patch of the parameters, after validation.
    assert_eq!(
        kudo_ok(&cp, &["update", "--instance", "demo", "-p", "MODE=slow"]),
        "Instance demo was updated.\n"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo", ".spec.parameters"),
        r#"{"MODE":"slow","REPLICAS":"3"}"#
    );
    let out = kudo_fails(&cp, &["update", "--instance", "demo", "-p", "REPLICAS=x"]);
    assert!(
        out.stderr
            .contains(r#"parameter "REPLICAS" has an invalid value "x""#),
        "{out}"
    );

    // get: KUDO's trees.
    assert_eq!(
        kudo_ok(&cp, &["get", "instances"]),
        "List of current installed instances in namespace \"default\":\n.\n├── demo\n└── demo2\n\n"
    );
    assert_eq!(
        kudo_ok(&cp, &["get", "all"]),
        "List of current installed operators including versions and instances in namespace \"default\":\n.\n└── demo\n    └── demo-1.0.0-0.1.0\n        ├── demo\n        └── demo2\n\n"
    );

    // plan trigger: spec.planExecution = {planName, uid}.
    assert_eq!(
        kudo_ok(
            &cp,
            &["plan", "trigger", "--name", "backup", "--instance", "demo"]
        ),
        "Triggered backup plan for default/demo instance\n"
    );
    assert_eq!(
        jsonpath(
            &cp,
            "instance.kudo.dev/demo",
            ".spec.planExecution.planName"
        ),
        "backup"
    );
    let uid = jsonpath(&cp, "instance.kudo.dev/demo", ".spec.planExecution.uid");
    assert_eq!(uid.len(), 36, "a uuid: {uid}");
    let out = kudo_fails(
        &cp,
        &["plan", "trigger", "--name", "nope", "--instance", "demo"],
    );
    assert!(out.stderr.contains("plan nope does not exist"), "{out}");

    // plan abandon: the annotation names the running plan's uid.
    kudo_ok(&cp, &["plan", "abandon", "--instance", "demo"]);
    assert_eq!(
        jsonpath(
            &cp,
            "instance.kudo.dev/demo",
            ".metadata.annotations.kudo\\.opkit\\.dev/abandon"
        ),
        uid
    );

    // What the manager would write: the backup plan abandoned, deploy failed earlier.
    cp.kubectl_ok(&["patch", "instance.kudo.dev/demo", "--type=merge", "-p", r#"{"spec":{"planExecution":null},"metadata":{"annotations":{"kudo.opkit.dev/abandon":null}}}"#]);
    cp.kubectl_ok(&[
        "patch", "instance.kudo.dev/demo", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"planStatus":{
          "deploy":{"name":"deploy","status":"FATAL_ERROR","uid":"run-1","message":"step failed","lastUpdatedTimestamp":"2026-01-02T03:04:05Z",
            "phases":[{"name":"main","status":"FATAL_ERROR","steps":[{"name":"everything","status":"FATAL_ERROR","message":"Job failed: backoff limit"}]}]},
          "backup":{"name":"backup","status":"NEVER_RUN"}}}}"#,
    ]);
    assert_eq!(
        kudo_ok(&cp, &["plan", "status", "--instance", "demo"]),
        "Plan(s) for \"demo\" in namespace \"default\":\n.\n└── demo (Operator-Version: \"demo-1.0.0-0.1.0\" Active-Plan: \"deploy\")\n    \
         ├── Plan backup (serial strategy) [NOT ACTIVE]\n    │\u{a0}\u{a0} └── Phase save (serial strategy) [NOT ACTIVE]\n    │\u{a0}\u{a0}     └── Step noop [NOT ACTIVE]\n    \
         └── Plan deploy (serial strategy) [FATAL_ERROR] (step failed), last updated 2026-01-02 03:04:05\n        \
         └── Phase main (parallel strategy) [FATAL_ERROR]\n            └── Step everything [FATAL_ERROR] (Job failed: backoff limit)\n\n"
    );
    let wide = kudo_ok(&cp, &["plan", "status", "--instance", "demo", "--wide"]);
    assert!(
        wide.contains("last updated 2026-01-02 03:04:05 ("),
        "{wide}"
    );
    assert!(wide.contains(" uid run-1"), "{wide}");
    assert_eq!(
        kudo_ok(&cp, &["plan", "history", "--instance", "demo"]),
        ".\n├── backup (never run)\n└── deploy (last finished run at 2026-01-02T03:04:05 (FATAL_ERROR))\n\n"
    );

    // plan retry: only a FATAL_ERROR plan, as a manual trigger with a new uid.
    let out = kudo_fails(
        &cp,
        &["plan", "retry", "--instance", "demo", "--name", "backup"],
    );
    assert!(
        out.stderr.contains("never ran") || out.stderr.contains("not FATAL_ERROR"),
        "{out}"
    );
    assert_eq!(
        kudo_ok(&cp, &["plan", "retry", "--instance", "demo"]),
        "Retrying deploy plan for default/demo instance\n"
    );
    assert_eq!(
        jsonpath(
            &cp,
            "instance.kudo.dev/demo",
            ".spec.planExecution.planName"
        ),
        "deploy"
    );
    let retry_uid = jsonpath(&cp, "instance.kudo.dev/demo", ".spec.planExecution.uid");
    assert!(retry_uid.len() == 36 && retry_uid != "run-1", "{retry_uid}");

    // upgrade: a greater version only; the instance moves to the new operator version.
    let out = kudo_fails(&cp, &["upgrade", v1, "--instance", "demo"]);
    assert!(out.stderr.contains("upgraded version 0.1.0 is the same or smaller as current version 0.1.0 -> not upgrading"), "{out}");
    assert_eq!(
        kudo_ok(
            &cp,
            &["upgrade", v2, "--instance", "demo", "-p", "REPLICAS=4"]
        ),
        "operatorversion default/demo-1.0.0-0.2.0 created\ninstance default/demo updated\n"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo", ".spec.operatorVersion.name"),
        "demo-1.0.0-0.2.0"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo", ".spec.parameters.REPLICAS"),
        "4"
    );

    // The plugin: kubectl finds kubectl-kudo on PATH.
    let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-kudo"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = cp.tool_command("kubectl");
    cmd.args(["kudo", "version"]).env("PATH", &path);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(
        out.success()
            && out
                .stdout
                .starts_with("KUDO Version: version.Info{GitVersion:"),
        "{out}"
    );
    let mut cmd = cp.tool_command("kubectl");
    cmd.args(["kudo", "get", "instances"])
        .env("PATH", &path)
        .env("KUBECONFIG", &cp.kubeconfig);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(out.success(), "{out}");
    assert!(out.stdout.contains("├── demo\n└── demo2\n"), "{out}");

    // uninstall deletes the instance (no manager here, so no cleanup finalizer holds it).
    assert_eq!(
        kudo_ok(&cp, &["uninstall", "--instance", "demo2", "--wait"]),
        "instance.kudo.dev/v1beta1/demo2 deleted\n"
    );
    assert_eq!(
        cp.kubectl_ok(&["get", "instances.kudo.dev", "-o", "name"]),
        "instance.kudo.dev/demo\n"
    );
    let out = kudo_fails(&cp, &["uninstall", "--instance", "demo2"]);
    assert!(
        out.stderr
            .contains("instance demo2 in namespace default does not exist in the cluster"),
        "{out}"
    );

    // A package by name from a local repository.
    let repo_dir = cp.dir().join("repo");
    std::fs::create_dir_all(&repo_dir).unwrap();
    let r = repo_dir.to_str().unwrap();
    kudo_ok(&cp, &["package", "create", v2, "--destination", r]);
    let url = format!("file://{r}");
    kudo_ok(&cp, &["repo", "index", r, "--url", &url]);
    kudo_ok(&cp, &["repo", "add", "local", &url]);
    assert_eq!(
        kudo_ok(
            &cp,
            &["install", "demo", "--repo", "local", "--instance", "demo3"]
        ),
        "operatorversion default/demo-1.0.0-0.2.0 already installed\ninstance default/demo3 created\n"
    );
    assert_eq!(
        jsonpath(&cp, "instance.kudo.dev/demo3", ".spec.operatorVersion.name"),
        "demo-1.0.0-0.2.0"
    );

    // A corpus package installs with KUDO's names.
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/kudo/operators/zookeeper/operator");
    if corpus.exists() {
        kudo_ok(
            &cp,
            &[
                "install",
                corpus.to_str().unwrap(),
                "-n",
                "default",
                "-p",
                "NODE_COUNT=1",
            ],
        );
        assert_eq!(
            jsonpath(
                &cp,
                "instance.kudo.dev/zookeeper-instance",
                ".spec.operatorVersion.name"
            ),
            jsonpath(
                &cp,
                "operatorversions.kudo.dev",
                ".items[?(@.spec.operator.name==\"zookeeper\")].metadata.name"
            )
        );
        assert_eq!(
            jsonpath(
                &cp,
                "instance.kudo.dev/zookeeper-instance",
                ".spec.parameters"
            ),
            r#"{"NODE_COUNT":"1"}"#
        );
    } else {
        eprintln!(
            "SKIPPED the corpus install: no KUDO corpus at {}",
            corpus.display()
        );
    }
}

#[test]
fn package_create_verify_and_list_work_on_a_package_written_by_the_test() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = write_package(&dir.path().join("demo"), "0.1.0");
    let opkit = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.arg("kudo")
            .args(args)
            .current_dir(dir.path())
            .env("KUDO_HOME", dir.path().join("kudo-home"));
        run(cmd, None, COMMAND_TIMEOUT)
    };
    let p = pkg.to_str().unwrap();
    let out = opkit(&[
        "package",
        "create",
        p,
        "--destination",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.success(), "{out}");
    let tgz = dir.path().join("demo-1.0.0_0.1.0.tgz");
    assert_eq!(out.stdout, format!("Package created: {}\n", tgz.display()));
    let out = opkit(&["package", "verify", tgz.to_str().unwrap()]);
    assert!(out.success(), "{out}");
    assert_eq!(out.stdout, "package is valid\n");
    let out = opkit(&["package", "list", "parameters", p]);
    assert_eq!(
        out.stdout,
        "Name    \tDefault   \tRequired\tImmutable\nLABELS  \ttier: web\n\ttrue    \tfalse    \nMODE    \tfast      \ttrue    \tfalse    \nREPLICAS\t1         \ttrue    \tfalse    \n",
        "{out}"
    );
    let out = opkit(&["package", "list", "tasks", p]);
    assert!(
        out.stdout
            .starts_with("Name\tKind \tResources        \napp \tApply\t[deployment.yaml]\n"),
        "{out}"
    );

    // A local repository: an index over a folder of packages, searched by name.
    let repo_dir = dir.path().join("repo");
    std::fs::create_dir_all(&repo_dir).unwrap();
    let r = repo_dir.to_str().unwrap();
    assert!(opkit(&["package", "create", p, "--destination", r]).success());
    let url = format!("file://{r}");
    let out = opkit(&["repo", "index", r, "--url", &url]);
    assert_eq!(
        out.stdout,
        format!("index {r}/index.yaml created.\n"),
        "{out}"
    );
    let index = std::fs::read_to_string(repo_dir.join("index.yaml")).unwrap();
    assert!(index.contains("  - appVersion: 1.0.0\n"), "{index}");
    assert!(
        index.contains(&format!("    urls:\n    - {url}/demo-1.0.0_0.1.0.tgz\n")),
        "{index}"
    );
    let out = opkit(&["repo", "add", "local", &url]);
    assert_eq!(
        out.stdout, "\"local\" has been added to your repositories\n",
        "{out}"
    );
    assert!(opkit(&["repo", "context", "local"]).success());
    let out = opkit(&["repo", "list"]);
    assert!(out.stdout.contains(&format!("*local   \t{url}")), "{out}");
    let out = opkit(&["search", "dem"]);
    assert_eq!(
        out.stdout, "Name\tOperator Version\tApp Version\ndemo\t0.1.0           \t1.0.0      \n",
        "{out}"
    );
    assert_eq!(opkit(&["search", "zzz"]).stdout, "no operators found\n");

    std::fs::write(
        pkg.join("templates/extra.yaml"),
        "x: {{ .Params.MISSING }}\n",
    )
    .unwrap();
    let out = opkit(&["package", "verify", p]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout
            .contains("template \"extra.yaml\" is not referenced from any task"),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("parameter \"MISSING\" in template extra.yaml is not defined"),
        "{out}"
    );
    assert!(out.stderr.contains("package verification errors"), "{out}");
}

/// An instance no operator version backs, for a server-side dry run.
const PROBE_INSTANCE: &str = r#"apiVersion: kudo.dev/v1beta1
kind: Instance
metadata: {name: probe, namespace: default}
spec: {operatorVersion: {name: none}}
"#;

/// The whole loop through processes: `opkit kudo manager` (with its admission webhook, routed
/// locally) runs against `opkit up`, the CLI's `--wait` ends when the plans it started are
/// complete, and a conflicting update is refused by the API server with KUDO's message.
#[test]
fn the_manager_process_runs_the_plans_the_cli_waits_for() {
    let cp = ControlPlane::start();
    kudo_ok(&cp, &["init", "--crd-only"]);
    let port = common::free_port().to_string();
    let mut manager = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.args(["kudo", "manager", "--metrics-bind-address", "0"])
            .args(["--health-probe-bind-address", "0", "--kubeconfig"])
            .arg(&cp.kubeconfig)
            .args(["--webhook-service", "kudo-manager-webhook"])
            .args(["--webhook-namespace", "kudo-system", "--webhook-local"])
            .args(["--webhook-port", &port])
            .env_remove("KUBECONFIG");
        common::Streaming::spawn(cmd)
    };
    // The webhook is configured and answers (under failurePolicy Fail, instance writes fail
    // until it does).
    let probe = cp.write_file("probe.yaml", PROBE_INSTANCE);
    common::eventually("the manager's webhook answers", || {
        let config = cp.kubectl(&[
            "get",
            "validatingwebhookconfiguration",
            "kudo-manager-instance-validation",
            "-o",
            "jsonpath={.webhooks[0].clientConfig.caBundle}",
        ]);
        if !config.success() || config.stdout.is_empty() {
            return Err(format!("no configuration with a caBundle yet\n{config}"));
        }
        let out = cp.kubectl(&["create", "--dry-run=server", "-f", probe.to_str().unwrap()]);
        if out.success() {
            Ok(())
        } else {
            Err(out.to_string())
        }
    });
    let pkg = write_package(&cp.dir().join("pkg"), "0.1.0");
    let pkg = pkg.to_str().unwrap();
    let out = kudo(
        &cp,
        &[
            "install",
            pkg,
            "--instance",
            "live",
            "-p",
            "REPLICAS=2",
            "--wait",
        ],
    );
    // The progress of `--wait` goes to stderr.
    assert!(
        out.success() && out.stderr.contains("plan deploy COMPLETE"),
        "{out}"
    );
    assert_eq!(jsonpath(&cp, "deployment/live", ".spec.replicas"), "2");
    assert_eq!(
        jsonpath(&cp, "deployment/live", ".metadata.labels.heritage"),
        "kudo"
    );
    let status = kudo_ok(&cp, &["plan", "status", "--instance", "live", "--wide"]);
    assert!(
        status.contains("Plan deploy (serial strategy) [COMPLETE]") && status.contains("(took "),
        "{status}"
    );

    kudo_ok(
        &cp,
        &["update", "--instance", "live", "-p", "REPLICAS=3", "--wait"],
    );
    assert_eq!(jsonpath(&cp, "deployment/live", ".spec.replicas"), "3");
    // Two parameters triggering different plans: refused at write time, nothing stored.
    let out = kudo_fails(
        &cp,
        &[
            "update",
            "--instance",
            "live",
            "-p",
            "REPLICAS=4",
            "-p",
            "MODE=slow",
        ],
    );
    assert!(
        out.stderr.contains(
            "admission webhook \"instance-validation.kudo.dev\" denied the request: failed to \
             update Instance default/live: triggering multiple plans: [[backup deploy]] at once \
             is not allowed (MODE triggers 'backup'; REPLICAS triggers 'deploy')"
        ),
        "{out}"
    );
    assert_eq!(
        jsonpath(&cp, "instance/live", ".spec.parameters"),
        r#"{"REPLICAS":"3"}"#
    );
    kudo_ok(
        &cp,
        &[
            "plan",
            "trigger",
            "--name",
            "backup",
            "--instance",
            "live",
            "--wait",
        ],
    );
    assert_eq!(
        jsonpath(&cp, "instance/live", ".status.planStatus.backup.status"),
        "COMPLETE"
    );

    // A remote repository: version 0.2.0 served over HTTP, searched and installed by name.
    let web = cp.dir().join("web");
    std::fs::create_dir_all(&web).unwrap();
    let (mut http, url) = serve_http(&web);
    let pkg2 = write_package(&cp.dir().join("pkg2"), "0.2.0");
    let w = web.to_str().unwrap();
    kudo_ok(
        &cp,
        &[
            "package",
            "create",
            pkg2.to_str().unwrap(),
            "--destination",
            w,
        ],
    );
    kudo_ok(&cp, &["repo", "index", w, "--url", &url]);
    kudo_ok(&cp, &["repo", "add", "web", &url]);
    let found = kudo_ok(&cp, &["search", "demo", "--repo", "web"]);
    assert_eq!(
        found, "Name\tOperator Version\tApp Version\ndemo\t0.2.0           \t1.0.0      \n",
        "{found}"
    );
    let missing = format!("{url}/missing");
    let out = kudo_fails(&cp, &["repo", "add", "broken", &missing]);
    assert!(
        out.stderr.contains(&format!(
            "looks like \"{missing}\" is not a valid operator repository or cannot be reached: \
             could not download repository index file: failed to fetch {missing}/index.yaml : 404 Not Found"
        )),
        "{out}"
    );
    assert!(!kudo_ok(&cp, &["repo", "list"]).contains("broken"));
    kudo_ok(
        &cp,
        &[
            "install",
            "demo",
            "--repo",
            "web",
            "--instance",
            "web-demo",
            "--wait",
        ],
    );
    assert_eq!(
        jsonpath(&cp, "instance/web-demo", ".spec.operatorVersion.name"),
        "demo-1.0.0-0.2.0"
    );
    http.terminate();

    // Diagnostics: KUDO's tree, the objects the instance owns and its events.
    let out = kudo_ok(
        &cp,
        &[
            "diagnostics",
            "collect",
            "--instance",
            "web-demo",
            "-O",
            "diag",
        ],
    );
    assert_eq!(
        out, "diagnostics of instance web-demo written to diag\n",
        "{out}"
    );
    let diag = cp.dir().join("diag");
    let read = |rel: &str| {
        std::fs::read_to_string(diag.join(rel))
            .unwrap_or_else(|e| panic!("diag/{rel} should have been written: {e}"))
    };
    assert!(read("version.yaml").contains("gitVersion"));
    assert!(read("operator_demo/demo.yaml").contains("kind: Operator"));
    let ov = read("operator_demo/operatorversion_demo-1.0.0-0.2.0/demo-1.0.0-0.2.0.yaml");
    assert!(ov.contains("kind: OperatorVersion"), "{ov}");
    let instance = read("operator_demo/instance_web-demo/web-demo.yaml");
    assert!(instance.contains("status: COMPLETE"), "{instance}");
    let deployments = read("operator_demo/instance_web-demo/deploymentlist.yaml");
    assert!(
        deployments.contains("kind: DeploymentList") && deployments.contains("name: web-demo"),
        "{deployments}"
    );
    let events = read("operator_demo/instance_web-demo/eventlist.yaml");
    assert!(events.contains("reason: PlanFinished"), "{events}");
    let out = kudo_fails(
        &cp,
        &[
            "diagnostics",
            "collect",
            "--instance",
            "web-demo",
            "-O",
            "diag",
        ],
    );
    assert!(
        out.stderr.contains("target directory diag already exists"),
        "{out}"
    );

    kudo_ok(&cp, &["uninstall", "--instance", "live", "--wait"]);
    let gone = cp.kubectl(&["get", "instance/live"]);
    assert!(
        !gone.success() && gone.stderr.contains("NotFound"),
        "{gone}"
    );
    manager.terminate();
}

/// `package add`: maintainers, parameters, tasks and plans appended to the package in the
/// working directory's only sub-folder, from arguments or answers on stdin, everything else
/// in the files kept.
#[test]
fn package_add_appends_to_the_package_and_keeps_what_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = write_package(&dir.path().join("op"), "0.1.0");
    let add = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.args(["kudo", "package", "add"])
            .args(args)
            .current_dir(dir.path());
        run(cmd, stdin, COMMAND_TIMEOUT)
    };
    let operator = || std::fs::read_to_string(pkg.join("operator.yaml")).unwrap();
    let params = || std::fs::read_to_string(pkg.join("params.yaml")).unwrap();

    assert!(add(&["maintainer", "Ann", "ann@example.com"], None).success());
    let out = add(&["maintainer", "Ann"], None);
    assert!(
        !out.success()
            && out
                .stderr
                .contains("expecting two arguments - name and email address"),
        "{out}"
    );
    assert!(add(&["maintainer"], Some("Bob\nbob@example.com\n")).success());
    let out = add(&["maintainer"], Some("Eve\nnot-an-address\n"));
    assert!(
        !out.success()
            && out
                .stderr
                .contains("Maintainer Email: maintainer email must be valid email address"),
        "{out}"
    );
    let op = operator();
    assert!(
        op.contains("maintainers:\n- name: Ann\n  email: ann@example.com\n- name: Bob\n  email: bob@example.com\n"),
        "{op}"
    );

    // Name, default, display name, description, required, trigger?, trigger plan.
    let out = add(
        &["parameter"],
        Some("SIZE\n10\n\nhow big\ntrue\ny\nbackup\n"),
    );
    assert!(out.success(), "{out}");
    let p = params();
    assert!(
        p.contains("- name: SIZE\n  default: '10'\n  description: how big\n  required: true\n  trigger: backup\n"),
        "{p}"
    );
    assert!(
        p.contains("- name: REPLICAS\n  description: how many pods\n"),
        "{p}"
    );
    let out = add(&["parameter"], Some("SIZE\n"));
    assert!(
        !out.success() && out.stderr.contains("parameter name must be unique"),
        "{out}"
    );

    // Name, kind, resource, another?
    let out = add(&["task"], Some("restart\nApply\nrestart\nn\n"));
    assert!(out.success(), "{out}");
    assert!(pkg.join("templates/restart.yaml").is_file());
    // Plan name, strategy, phase name and strategy, step name, task, another task/step/phase?
    let out = add(
        &["plan"],
        Some("restart\nserial\nmain\nparallel\nonce\nrestart\nn\nn\nn\n"),
    );
    assert!(out.success(), "{out}");
    let op = operator();
    assert!(
        op.contains(
            "- name: restart\n  kind: Apply\n  spec:\n    resources:\n    - restart.yaml\n"
        ),
        "{op}"
    );
    assert!(op.contains("  restart:\n    strategy: serial\n    phases:\n    - name: main\n      strategy: parallel\n      steps:\n      - name: once\n        tasks:\n        - restart\n"), "{op}");
    assert!(
        op.contains("  backup:\n") && op.contains("kubernetesVersion: 1.16.0"),
        "{op}"
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["kudo", "package", "list", "plans"]).arg(&pkg);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(out.success() && out.stdout.contains("restart"), "{out}");
}
