//! The project workflow end to end, as a new user runs it: `opkit init`, two `create api`,
//! the generated project built against this checkout and its generated tests run, manifests
//! generated twice without a diff, the CRDs accepted by a control plane (`opkit install`), the
//! whole of `config/default` deployed (`opkit deploy`, as `kubectl kustomize` renders it), and
//! the operator binary running under the generated RBAC only — a service account's token — and
//! making its objects Ready. Then `opkit run --up` on an embedded control plane, and `opkit test`
//! running the kuttl tests `create api` scaffolded against the operator (and failing, with the
//! diff, on a broken assert).
//!
//! One test, because building the generated project is the expensive part and every later step
//! needs it. The project is built in this workspace's target directory with opkit's own
//! `Cargo.lock`, so it reuses what the workspace build compiled.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    ControlPlane, Output, Streaming, eventually, eventually_within, free_port,
    kubeconfig_with_token, run,
};

/// Building and testing the generated project may compile a few crates anew.
const BUILD_TIMEOUT: Duration = Duration::from_secs(1200);

/// The target directory this test binary was built in.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_opkit"))
        .parent()
        .and_then(Path::parent)
        .expect("the opkit binary lives in <target>/<profile>/")
        .to_path_buf()
}

fn hermetic(mut cmd: Command, dir: &Path) -> Command {
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("KUBECONFIG")
        .env_remove("RUSTFLAGS");
    cmd
}

fn opkit(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(args);
    run(hermetic(cmd, dir), None, BUILD_TIMEOUT)
}

fn opkit_ok(dir: &Path, args: &[&str]) -> Output {
    let out = opkit(dir, args);
    assert!(out.success(), "opkit should have succeeded\n{out}");
    out
}

fn cargo_ok(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(args);
    let out = run(hermetic(cmd, dir), None, BUILD_TIMEOUT);
    assert!(out.success(), "cargo should have succeeded\n{out}");
    out
}

/// Every file under `dir` (except `target/` and `.git/`) with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with("target") || rel.starts_with(".git") || rel.starts_with(".opkit") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `(kind, namespace, name)` of every object `kubectl kustomize` renders.
fn kustomized(cluster: &ControlPlane, dir: &Path) -> Vec<(String, String, String)> {
    let yaml = cluster.kubectl_ok(&["kustomize", dir.to_str().unwrap()]);
    let mut objects = Vec::new();
    for doc in yaml.split("\n---\n") {
        let value: serde_yaml::Value = serde_yaml::from_str(doc).expect("kustomize output");
        let s = |v: &serde_yaml::Value| v.as_str().unwrap_or("").to_string();
        objects.push((
            s(&value["kind"]),
            s(&value["metadata"]["namespace"]),
            s(&value["metadata"]["name"]),
        ));
    }
    objects
}

/// kubectl with a kubeconfig and a private HOME.
struct Kubectl {
    kubeconfig: PathBuf,
    home: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(common::tool_path("kubectl"));
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("HOME", &self.home)
            .env_remove("KUBECONFIG");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        run(self.command(args), None, common::COMMAND_TIMEOUT)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.success(), "kubectl should have succeeded\n{out}");
        out.stdout
    }

    fn run_stdin(&self, args: &[&str], stdin: &str) -> Output {
        run(self.command(args), Some(stdin), common::COMMAND_TIMEOUT)
    }

    fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let out = self.run_stdin(args, stdin);
        assert!(out.success(), "kubectl should have succeeded\n{out}");
        out.stdout
    }

    /// Whether the object's `Ready` condition is `True`.
    fn ready(&self, resource: &str, namespace: Option<&str>, name: &str) -> bool {
        let path = r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#;
        let mut args = vec!["get", resource, name, "-o", path];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        let out = self.run(&args);
        out.success() && out.stdout.trim() == "True"
    }
}

/// `Ok` if the command succeeded, else what it printed (for `eventually`).
fn succeeded(out: Output) -> Result<(), String> {
    if out.success() {
        Ok(())
    } else {
        Err(out.to_string())
    }
}

/// Points the deployed webhook Service at `127.0.0.1:port`: no selector, Endpoints naming the
/// local port (docs/WEBHOOKS.md, "reachability").
fn route_webhook_service(cluster: &ControlPlane, port: u16) {
    let ns = "guestbook-system";
    let service = "guestbook-webhook-service";
    cluster.kubectl_ok(&[
        "patch",
        "service",
        service,
        "-n",
        ns,
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/spec/selector"}]"#,
    ]);
    cluster.kubectl_ok(&[
        "delete",
        "endpoints",
        service,
        "-n",
        ns,
        "--ignore-not-found",
    ]);
    let endpoints = format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {service}\n  namespace: {ns}\n\
         subsets:\n- addresses:\n  - ip: 127.0.0.1\n  ports:\n  - name: https\n    port: {port}\n"
    );
    let out = cluster.kubectl_stdin(&["create", "-f", "-"], &endpoints);
    assert!(out.success(), "{out}");
}

#[test]
fn a_scaffolded_operator_builds_passes_its_tests_deploys_and_runs_under_its_generated_rbac() {
    let work = tempfile::Builder::new()
        .prefix("opkit-scaffold-")
        .tempdir()
        .unwrap();
    let project = work.path().join("guestbook");
    std::fs::create_dir(&project).unwrap();

    // init + two kinds (one namespaced, one cluster-scoped); a kind twice is refused.
    opkit_ok(
        &project,
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "github.com/example/guestbook",
        ],
    );
    let again = opkit(
        &project,
        &["init", "--domain", "example.com", "--repo", "x"],
    );
    assert!(
        !again.success() && again.stderr.contains("is not empty"),
        "{again}"
    );
    opkit_ok(
        &project,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    opkit_ok(
        &project,
        &[
            "create",
            "api",
            "--group",
            "batch",
            "--version",
            "v1alpha1",
            "--kind",
            "CronTask",
            "--namespaced",
            "false",
        ],
    );
    let before = snapshot(&project);
    let twice = opkit(
        &project,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    assert!(
        !twice.success() && twice.stderr.contains("kind Guestbook already exists"),
        "{twice}"
    );
    assert_eq!(
        snapshot(&project),
        before,
        "a refused create api changed files"
    );
    // A second version of Guestbook (a spoke of v1), and webhooks: Guestbook v1 defaulted and
    // validated, CronTask (cluster-scoped) validated, Guestbook v2 converted through v1.
    for args in [
        &[
            "api",
            "--group",
            "webapp",
            "--version",
            "v2",
            "--kind",
            "Guestbook",
        ][..],
        &[
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--defaulting",
            "--programmatic-validation",
        ][..],
        &[
            "webhook",
            "--group",
            "batch",
            "--version",
            "v1alpha1",
            "--kind",
            "CronTask",
            "--programmatic-validation",
        ][..],
        &[
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v2",
            "--kind",
            "Guestbook",
            "--conversion",
        ][..],
    ] {
        let mut command = vec!["create"];
        command.extend(args);
        opkit_ok(&project, &command);
    }

    // The generated code is formatted, builds without warnings, and its tests pass.
    cargo_ok(&project, &["fmt", "--check"]);
    let build = cargo_ok(&project, &["build", "--all-targets"]);
    assert!(
        !build.stderr.contains("warning:"),
        "the scaffolded code has warnings\n{build}"
    );
    // The container image builds and runs the binary cargo just built (tests/init.rs checks
    // the Dockerfile's stages, user and ignores).
    let dockerfile = std::fs::read_to_string(project.join("Dockerfile")).unwrap();
    assert!(
        dockerfile.contains("--bin guestbook")
            && dockerfile.contains(r#"ENTRYPOINT ["/guestbook"]"#),
        "{dockerfile}"
    );
    assert!(target_dir().join("debug/guestbook").is_file());
    assert!(project.join(".dockerignore").is_file());
    let tests = cargo_ok(&project, &["test"]);
    for test in [
        "a_new_guestbook_becomes_ready",
        "a_new_cron_task_becomes_ready",
        "a_guestbook_is_defaulted_and_an_invalid_one_refused_by_its_webhooks",
        "an_invalid_cron_task_is_refused_by_its_webhook",
        "every_guestbook_version_round_trips_through_the_hub",
    ] {
        assert!(
            tests.stdout.contains(&format!("test {test} ... ok")),
            "{test} did not pass\n{tests}"
        );
    }

    // Manifests: generated, then regenerated without a diff.
    opkit_ok(&project, &["generate", "manifests"]);
    let generated = snapshot(&project);
    for file in [
        "config/crd/bases/webapp.example.com_guestbooks.yaml",
        "config/crd/bases/batch.example.com_crontasks.yaml",
        "config/rbac/role.yaml",
        "config/webhook/manifests.yaml",
        "config/webhook/service.yaml",
        "config/samples/webapp_v2_guestbook.yaml",
    ] {
        assert!(generated.contains_key(Path::new(file)), "{file} missing");
    }
    let crd: serde_yaml::Value = serde_yaml::from_slice(
        &generated[Path::new("config/crd/bases/webapp.example.com_guestbooks.yaml")],
    )
    .unwrap();
    let versions: Vec<(String, bool, bool)> = crd["spec"]["versions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["served"].as_bool().unwrap(),
                v["storage"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("v1".to_string(), true, true),
            ("v2".to_string(), true, false)
        ]
    );
    let conversion = &crd["spec"]["conversion"];
    assert_eq!(conversion["strategy"], "Webhook", "{conversion:?}");
    assert_eq!(
        conversion["webhook"]["clientConfig"]["service"]["path"], "/convert",
        "{conversion:?}"
    );
    // The certificate rules come from the operator's print-rbac.
    let role = String::from_utf8(generated[Path::new("config/rbac/role.yaml")].clone()).unwrap();
    for resource in [
        "secrets",
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "customresourcedefinitions",
    ] {
        assert!(role.contains(resource), "{resource} missing:\n{role}");
    }
    opkit_ok(&project, &["generate", "manifests"]);
    assert_eq!(snapshot(&project), generated, "regenerating changed files");

    // The project's OLM bundle: the CSV installs the manager with its bound RBAC, owns both
    // kinds, carries the webhooks (conversion too, so all namespaces only) and the samples.
    let bundle = opkit_ok(
        &project,
        &[
            "bundle",
            "generate",
            "--version",
            "0.1.0",
            "--image",
            "example.com/guestbook:v0.1.0",
        ],
    );
    assert!(
        bundle
            .stdout
            .contains("bundle guestbook.v0.1.0 written to bundle/"),
        "{bundle}"
    );
    let csv: serde_json::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            project.join("bundle/manifests/guestbook.clusterserviceversion.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    let install = &csv["spec"]["install"]["spec"];
    assert_eq!(
        install["deployments"][0]["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.com/guestbook:v0.1.0"
    );
    assert!(
        install["clusterPermissions"][0]["rules"]
            .to_string()
            .contains("guestbooks"),
        "{install}"
    );
    let owned = csv["spec"]["customresourcedefinitions"]["owned"].to_string();
    assert!(
        owned.contains("Guestbook") && owned.contains("CronTask"),
        "{owned}"
    );
    let webhooks = csv["spec"]["webhookdefinitions"].to_string();
    assert!(webhooks.contains("ConversionWebhook"), "{webhooks}");
    assert!(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap()
            .contains("Guestbook")
    );
    opkit_ok(&project, &["bundle", "validate", "bundle"]);

    // The CRDs are accepted; config/default deploys as kubectl kustomize renders it.
    let cluster = ControlPlane::start();
    let kubeconfig = cluster.kubeconfig.to_str().unwrap().to_string();
    opkit_ok(&project, &["install", "--kubeconfig", &kubeconfig]);
    let crds = cluster.kubectl_ok(&["get", "crds", "-o", "name"]);
    assert!(crds.contains("guestbooks.webapp.example.com"), "{crds}");
    assert!(crds.contains("crontasks.batch.example.com"), "{crds}");
    let deploy = opkit_ok(&project, &["deploy", "--kubeconfig", &kubeconfig]);
    assert!(deploy.stderr.contains("1/1 available"), "{deploy}");
    let rendered = kustomized(&cluster, &project.join("config/default"));
    assert!(rendered.len() >= 7, "{rendered:?}");
    for (kind, namespace, name) in &rendered {
        let mut args = vec!["get", kind.as_str(), name.as_str()];
        if !namespace.is_empty() {
            args.extend(["-n", namespace.as_str()]);
        }
        cluster.kubectl_ok(&args);
    }

    // The operator runs as its service account, with nothing but the generated RBAC.
    let token = cluster.kubectl_ok(&[
        "create",
        "token",
        "guestbook-controller-manager",
        "-n",
        "guestbook-system",
    ]);
    let sa_kubeconfig = cluster.write_file(
        "operator-kubeconfig",
        &kubeconfig_with_token(&cluster.kubeconfig, token.trim()),
    );
    let whoami = cluster.kubectl_with(&sa_kubeconfig, &["auth", "whoami", "-o", "name"]);
    assert!(whoami.success(), "{whoami}");
    // Pods are simulated here: the deployed webhook Service is pointed at the operator this
    // test runs (what `opkit run` does on an opkit plane), so writes pass its webhooks.
    let webhook_port = free_port();
    route_webhook_service(&cluster, webhook_port);
    let binary = target_dir().join("debug/guestbook");
    let mut operator = Command::new(&binary);
    let webhook_port_flag = webhook_port.to_string();
    operator
        .args([
            "run",
            "--leader-elect",
            "--leader-election-namespace",
            "guestbook-system",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--webhook-port",
            &webhook_port_flag,
        ])
        .env("KUBECONFIG", &sa_kubeconfig)
        .env("RUST_LOG", "info");
    let mut operator = Streaming::spawn(operator);
    let admin = Kubectl {
        kubeconfig: cluster.kubeconfig.clone(),
        home: cluster.dir().to_path_buf(),
    };
    let samples = project.join("config/samples");
    let samples = samples.to_str().unwrap();
    // Accepted once the operator serves its webhooks (with the CA it published).
    eventually("the samples to pass the operator's webhooks", || {
        succeeded(admin.run(&["apply", "-k", samples]))
    });
    eventually("the samples to become Ready", || {
        admin.ready("guestbooks", Some("default"), "guestbook-sample")
            && admin.ready("crontasks", None, "crontask-sample")
    });
    // The runtime records events.k8s.io/v1 Events; kubectl reads them as core/v1 Events.
    let events = cluster.kubectl_ok(&["get", "events", "-n", "default"]);
    assert!(events.contains("Reconciled"), "{events}");
    let described = admin.ok(&["describe", "guestbook", "guestbook-sample", "-n", "default"]);
    let events_section = described.split("Events:").nth(1).unwrap_or("");
    assert!(events_section.contains("Reconciled"), "{described}");
    let lease = cluster.kubectl_ok(&["get", "lease", "guestbook", "-n", "guestbook-system"]);
    assert!(lease.contains("guestbook"), "{lease}");
    operator.terminate();
    let status = operator.wait(Duration::from_secs(30));
    let log = operator.stderr();
    assert!(
        status.success(),
        "the operator exited with {status:?}\n{log}"
    );
    assert!(
        !log.contains("forbidden"),
        "the operator was refused something\n{log}"
    );

    // undeploy and uninstall remove what deploy and install created.
    opkit_ok(&project, &["undeploy", "--kubeconfig", &kubeconfig]);
    opkit_ok(&project, &["uninstall", "--kubeconfig", &kubeconfig]);
    eventually("the CRDs to be gone", || {
        !cluster
            .kubectl_ok(&["get", "crds", "-o", "name"])
            .contains("example.com")
    });
    eventually("the binding to be gone", || {
        !cluster
            .kubectl(&["get", "clusterrolebinding", "guestbook-manager-rolebinding"])
            .success()
    });
    drop(cluster);

    // The project's own bundle installed the OLM way: pushed to a real registry, listed in a
    // catalog that a ClusterCatalog serves, installed by `opkit operator install` on an
    // embedded plane with the lifecycle controllers.
    let registry = common::Registry::start();
    let bundle_image = registry.image("guestbook/bundle:v0.1.0");
    opkit_ok(&project, &["bundle", "push", "bundle", &bundle_image]);
    let catalog = work.path().join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(
        catalog.join("index.yaml"),
        format!(
            "schema: olm.package\nname: guestbook\ndefaultChannel: alpha\n---\nschema: olm.channel\npackage: guestbook\nname: alpha\nentries:\n- name: guestbook.v0.1.0\n---\nschema: olm.bundle\npackage: guestbook\nname: guestbook.v0.1.0\nimage: {bundle_image}\nproperties:\n- type: olm.package\n  value:\n    packageName: guestbook\n    version: 0.1.0\n"
        ),
    )
    .unwrap();
    let catalog_image = registry.image("guestbook/catalog:v1");
    opkit_ok(work.path(), &["catalog", "push", "catalog", &catalog_image]);
    let olm = ControlPlane::start_with(&["--olm"]);
    let out = olm.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata:\n  name: project\nspec:\n  source:\n    type: Image\n    image:\n      ref: {catalog_image}\n"
        ),
    );
    assert!(out.success(), "{out}");
    eventually("ClusterCatalog project to serve", || {
        olm.kubectl_ok(&[
            "get",
            "clustercatalog",
            "project",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Serving\")].status}",
        ]) == "True"
    });
    olm.kubectl_ok(&["create", "namespace", "guestbook-system"]);
    let olm_kubeconfig = olm.kubeconfig.to_str().unwrap().to_string();
    let installed = opkit_ok(
        work.path(),
        &[
            "operator",
            "install",
            "guestbook",
            "-n",
            "guestbook-system",
            "--kubeconfig",
            &olm_kubeconfig,
            "--timeout",
            "60s",
        ],
    );
    assert!(
        installed
            .stdout
            .contains("guestbook.v0.1.0 0.1.0 (revision 1) is installed"),
        "{installed}"
    );
    let crds = olm.kubectl_ok(&["get", "crds", "-o", "name"]);
    assert!(crds.contains("guestbooks.webapp.example.com"), "{crds}");
    assert!(crds.contains("crontasks.batch.example.com"), "{crds}");
    let image = olm.kubectl_ok(&[
        "get",
        "deployments",
        "-n",
        "guestbook-system",
        "-o",
        "jsonpath={.items[*].spec.template.spec.containers[*].image}",
    ]);
    assert!(image.contains("example.com/guestbook:v0.1.0"), "{image}");
    drop(olm);

    // `opkit run --up`: an embedded control plane, the CRDs installed, the operator running.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args([
        "run",
        "--up",
        "--listen",
        "127.0.0.1:0",
        "--",
        "--health-probe-bind-address",
        "0",
    ]);
    let mut run_up = Streaming::spawn(hermetic(cmd, &project));
    let local_kubeconfig = project.join(".opkit/kubeconfig");
    eventually_within("the operator to start", Duration::from_secs(300), || {
        run_up.stderr().contains("running guestbook")
    });
    let local = Kubectl {
        kubeconfig: local_kubeconfig,
        home: work.path().to_path_buf(),
    };
    eventually(
        "the samples to pass the webhooks under opkit run --up",
        || succeeded(local.run(&["apply", "-k", samples])),
    );
    eventually("the samples to become Ready under opkit run --up", || {
        local.ready("guestbooks", Some("default"), "guestbook-sample")
    });
    // The v2 sample was stored as v1 through the conversion webhook; it reads back as v2.
    let read_as_v2 = local.ok(&[
        "get",
        "guestbooks.v2.webapp.example.com",
        "guestbook-v2-sample",
        "-n",
        "default",
        "-o",
        "jsonpath={.apiVersion} {.spec.foo}",
    ]);
    assert_eq!(read_as_v2, "webapp.example.com/v2 bar");
    // The samples went through the webhooks; so do other writes: a Guestbook without foo is
    // defaulted, an empty foo is refused with the validator's message.
    local.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: webapp.example.com/v1\nkind: Guestbook\nmetadata:\n  name: plain\n  \
         namespace: default\nspec: {}\n",
    );
    let foo = local.ok(&[
        "get",
        "guestbook",
        "plain",
        "-n",
        "default",
        "-o",
        "jsonpath={.spec.foo}",
    ]);
    assert_eq!(foo, "default");
    let refused = local.run_stdin(
        &["apply", "-f", "-"],
        "apiVersion: webapp.example.com/v2\nkind: Guestbook\nmetadata:\n  name: empty\n  \
         namespace: default\nspec:\n  foo: \"\"\n",
    );
    assert!(
        !refused.success()
            && refused.stderr.contains(
                "admission webhook \"vguestbook-v1.webapp.example.com\" denied the request: \
                 spec.foo must not be empty"
            ),
        "{refused}"
    );
    run_up.terminate();
    let status = run_up.wait(Duration::from_secs(30));
    assert!(
        status.success(),
        "opkit run exited with {status:?}\n{}",
        run_up.stderr()
    );

    // `opkit test`: the kuttl test `create api` scaffolded per kind, against the operator that
    // opkit test builds (a no-op build now), installs with only its generated RBAC and starts
    // as its service account on an embedded plane.
    for file in [
        "kuttl-test.yaml",
        "guestbook/00-assert.yaml",
        "crontask/01-errors.yaml",
    ] {
        assert!(project.join("tests/e2e").join(file).is_file(), "{file}");
    }
    let e2e = opkit(&project, &["test", "--report", "junit"]);
    assert!(e2e.success(), "opkit test failed\n{e2e}");
    for kind in ["guestbook", "crontask"] {
        assert!(
            e2e.stdout
                .contains(&format!("--- PASS: kuttl/harness/{kind} (")),
            "{e2e}"
        );
        assert!(
            e2e.stdout.contains(&format!(
                "| {kind}/0-create | test step completed 0-create ("
            )),
            "{e2e}"
        );
        let kept = project.join(format!(".opkit/test/logs/{kind}.log"));
        assert!(kept.is_file(), "{} missing\n{e2e}", kept.display());
    }
    assert!(
        e2e.stderr
            .contains("the operator runs as guestbook-system/guestbook-controller-manager"),
        "{e2e}"
    );
    let junit = std::fs::read_to_string(project.join("tests/e2e/kuttl-report.xml")).unwrap();
    assert!(junit.contains("failures=\"0\""), "{junit}");
    let operator_log = std::fs::read_to_string(project.join(".opkit/test/operator.log")).unwrap();
    assert!(
        !operator_log.contains("forbidden"),
        "the operator was refused something under its generated RBAC\n{operator_log}"
    );

    // Under `--chaos` too: every run of the campaign is a fresh plane on which the suite
    // registers the project's webhooks and routes their Service to the port the operator is
    // told to serve them on; a crash restarts it, and no run is a finding.
    let chaos = opkit(&project, &["test", "--chaos", "crash", "--budget", "90s"]);
    assert!(
        chaos
            .stderr
            .contains("chaos: each run registers the webhooks of ")
            && chaos.stderr.contains(
                " routes Service guestbook-system/guestbook-webhook-service to 127.0.0.1:"
            ),
        "{chaos}"
    );
    assert!(
        chaos.stderr.contains("/guestbook run --webhook-port "),
        "the operator is told the port of its webhooks\n{chaos}"
    );
    assert!(
        chaos.stdout.contains(": ok (restarted 1 times"),
        "a crashed operator was restarted and its test still passed\n{chaos}"
    );
    assert!(chaos.stdout.contains(", 0 findings"), "{chaos}");
    assert!(chaos.success(), "the campaign should pass\n{chaos}");
    let summary = chaos.stdout.lines().find(|l| l.contains(" fault runs in "));
    eprintln!("the webhook project's campaign: {}", summary.unwrap_or("?"));

    // A broken assert fails the run (exit 1) with the diff and the operator's log of the test.
    std::fs::write(
        project.join("tests/e2e/guestbook/00-assert.yaml"),
        "apiVersion: kuttl.dev/v1beta1\nkind: TestAssert\ntimeout: 3\n---\napiVersion: \
         webapp.example.com/v1\nkind: Guestbook\nmetadata:\n  name: guestbook-sample\nstatus:\n  \
         conditions:\n  - type: Ready\n    status: \"True\"\n    reason: Wrong\n",
    )
    .unwrap();
    let broken = opkit(&project, &["test", "--test", "guestbook"]);
    assert_eq!(broken.code, Some(1), "{broken}");
    assert!(
        broken
            .stdout
            .contains("--- FAIL: kuttl/harness/guestbook ("),
        "{broken}"
    );
    assert!(
        broken.stdout.contains(
            ".status.conditions[0].reason: value mismatch, expected: Wrong != actual: Reconciled"
        ),
        "{broken}"
    );
    assert!(
        broken.stdout.contains("+    reason: Reconciled"),
        "{broken}"
    );
    assert!(
        broken.stdout.contains("operator log during guestbook ("),
        "{broken}"
    );
}
