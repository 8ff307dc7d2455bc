//! The helm plugin of the project workflow, with the real `helm` and `kubectl`: `opkit init
//! --plugins helm` and `opkit create api` from a chart directory, a `.tgz` archive and without a
//! chart (a new chart that renders what `helm create`'s renders), the files they write
//! (watches.yaml, an open CRD, RBAC covering what the chart renders, a sample whose spec is
//! the chart's values), the refusals that change nothing, `opkit deploy` of the result on an
//! `opkit up` control plane, and operator-sdk's e2e flow through `opkit run --up`: the sample
//! becomes a release helm lists, and deleting it uninstalls the release.
//!
//! The ansible plugin too: `opkit init --plugins ansible` and `opkit create api
//! --generate-role`/`--generate-playbook` write operator-sdk's files, and the e2e suite they
//! generate passes with `opkit test` (the real Ansible venv of `.tools/ansible`, the operator
//! run as its service account with the generated RBAC), and `opkit test --chaos crash` runs
//! a campaign on it — as it does on a helm project's suite, with the chart operator.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    COMMAND_TIMEOUT, ControlPlane, Output, Streaming, eventually, eventually_within,
    kubeconfig_with_token, run, tool_path,
};
use serde_yaml::Value;

fn opkit(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env("HOME", dir);
    run(cmd, None, COMMAND_TIMEOUT)
}

fn opkit_ok(dir: &Path, args: &[&str]) -> Output {
    let out = opkit(dir, args);
    assert!(out.success(), "opkit should have succeeded\n{out}");
    out
}

/// The real helm in `dir`, with a private HOME.
fn helm_ok(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(tool_path("helm"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("KUBECONFIG")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME");
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(out.success(), "helm should have succeeded\n{out}");
    out.stdout
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(dir: &Path, rel: &str) -> Value {
    serde_yaml::from_str(&read(dir, rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    common::files_under(dir)
}

/// A new directory under `parent` named `name`.
fn subdir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The objects of a multi-document YAML stream (empty documents left out).
fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// `(apiGroup, resource) → verbs` of a ClusterRole.
fn grants(role: &Value) -> BTreeMap<(String, String), Vec<String>> {
    let mut out = BTreeMap::new();
    for rule in role["rules"].as_sequence().expect("rules") {
        let list = |key: &str| -> Vec<String> {
            rule[key]
                .as_sequence()
                .map(|s| s.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        for group in list("apiGroups") {
            for resource in list("resources") {
                out.insert((group.clone(), resource), list("verbs"));
            }
        }
    }
    out
}

/// A chart `helm create` wrote, plus a pre-install hook (a Job) and a ConfigMap, so the RBAC
/// has a hook's kind and a kind the `helm create` chart lacks to cover.
fn chart_with_a_hook(dir: &Path, name: &str) -> PathBuf {
    helm_ok(dir, &["create", name]);
    let chart = dir.join(name);
    std::fs::write(
        chart.join("templates/migrate.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  \
         annotations:\n    \"helm.sh/hook\": pre-install\nspec:\n  template:\n    spec:\n      \
         restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n\
         data:\n  greeting: {{ .Values.greeting | default \"hello\" | quote }}\n",
    )
    .unwrap();
    chart
}

#[test]
fn a_new_chart_has_helm_creates_files_and_renders_the_same_objects() {
    let tmp = tempfile::tempdir().unwrap();
    helm_ok(tmp.path(), &["create", "guestbook"]);
    let project = subdir(tmp.path(), "project");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    let theirs = tmp.path().join("guestbook");
    let ours = project.join("helm-charts/guestbook");
    let names = |dir: &Path| files(dir).into_keys().collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs), "the files of the chart");
    for rel in ["Chart.yaml", "values.yaml"] {
        assert_eq!(yaml(&ours, rel), yaml(&theirs, rel), "{rel}");
    }

    // Every optional part switched on, and a few off, through a values file.
    let variants = [
        "",
        "ingress:\n  enabled: true\n  className: nginx\n  annotations: {a: b}\n  tls:\n  - \
         secretName: tls\n    hosts: [x.example]\nautoscaling:\n  enabled: true\n  \
         targetMemoryUtilizationPercentage: 70\nhttpRoute:\n  enabled: true\n  annotations: \
         {r: s}\n  rules:\n  - matches:\n    - path: {type: PathPrefix, value: /a}\n    \
         filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        \
         remove: [X]\n",
        "serviceAccount:\n  create: false\n  annotations: {x: y}\npodAnnotations: {p: q}\n\
         podLabels: {l: m}\nimagePullSecrets: [{name: reg}]\npodSecurityContext: {fsGroup: \
         2000}\nsecurityContext: {runAsNonRoot: true}\nresources: {limits: {cpu: 100m}}\n\
         volumes: [{name: v, emptyDir: {}}]\nvolumeMounts: [{name: v, mountPath: /v}]\n\
         nodeSelector: {disk: ssd}\ntolerations: [{key: k, operator: Exists}]\naffinity: \
         {podAntiAffinity: {}}\nfullnameOverride: other\nservice: {type: NodePort, port: \
         8080}\nimage: {tag: \"1.27\"}\nlivenessProbe: null\n",
        "nameOverride: web\nautoscaling: {enabled: true, targetCPUUtilizationPercentage: null}\n",
    ];
    for (i, values) in variants.iter().enumerate() {
        let file = tmp.path().join(format!("values-{i}.yaml"));
        std::fs::write(&file, values).unwrap();
        let render = |chart: &Path| {
            documents(&helm_ok(
                tmp.path(),
                &[
                    "template",
                    "my-guestbook",
                    chart.to_str().unwrap(),
                    "-f",
                    file.to_str().unwrap(),
                ],
            ))
        };
        let (ours_rendered, theirs_rendered) = (render(&ours), render(&theirs));
        assert!(!theirs_rendered.is_empty());
        assert_eq!(ours_rendered, theirs_rendered, "values:\n{values}");
    }
}

#[test]
fn a_chart_directory_becomes_a_kind_with_its_watch_crd_rbac_and_sample_and_deploys() {
    let tmp = tempfile::tempdir().unwrap();
    let chart = chart_with_a_hook(tmp.path(), "web-shop");
    let project = subdir(tmp.path(), "shop-operator");
    let out = opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--helm-chart",
            chart.to_str().unwrap(),
        ],
    );
    assert!(
        out.stdout.contains("charts.example.com/v1alpha1 WebShop"),
        "{out}"
    );

    // The chart, copied as it is.
    assert_eq!(files(&project.join("helm-charts/web-shop")), files(&chart));

    // PROJECT records the plugin and the kind's chart; operator-sdk's defaults for a chart.
    let project_file = yaml(&project, "PROJECT");
    assert_eq!(project_file["plugin"], "helm");
    let resource = &project_file["resources"][0];
    assert_eq!(resource["kind"], "WebShop");
    assert_eq!(resource["group"], "charts");
    assert_eq!(resource["version"], "v1alpha1");
    assert_eq!(resource["chart"], "helm-charts/web-shop");

    // watches.yaml, operator-sdk's schema.
    let watches = yaml(&project, "watches.yaml");
    assert_eq!(
        watches,
        serde_yaml::from_str::<Value>(
            "- {group: charts.example.com, version: v1alpha1, kind: WebShop, chart: \
             helm-charts/web-shop}"
        )
        .unwrap()
    );

    // The CRD: an open spec and status, the status subresource.
    let crd = yaml(
        &project,
        "config/crd/bases/charts.example.com_webshops.yaml",
    );
    assert_eq!(crd["spec"]["names"]["kind"], "WebShop");
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    let schema = &version["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(schema["spec"]["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        schema["status"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert!(version["subresources"]["status"].is_mapping());

    // RBAC: every kind the chart renders (the hook's too), the CR with status and
    // finalizers, release Secrets, events and the Lease.
    let role = grants(&yaml(&project, "config/rbac/role.yaml"));
    let all = [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    for (group, resource) in [
        ("apps", "deployments"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "configmaps"),
        ("", "pods"),
        ("batch", "jobs"),
        ("", "secrets"),
        ("charts.example.com", "webshops"),
    ] {
        assert_eq!(
            role.get(&(group.to_string(), resource.to_string()))
                .map(Vec::as_slice),
            Some(&all.map(String::from)[..]),
            "{group}/{resource} in {role:?}"
        );
    }
    for (group, resource, verb) in [
        ("charts.example.com", "webshops/status", "update"),
        ("charts.example.com", "webshops/finalizers", "update"),
        ("coordination.k8s.io", "leases", "create"),
        ("", "events", "create"),
        ("events.k8s.io", "events", "create"),
    ] {
        let verbs = role
            .get(&(group.to_string(), resource.to_string()))
            .unwrap_or_else(|| panic!("no rule on {group}/{resource} in {role:?}"));
        assert!(verbs.iter().any(|v| v == verb), "{group}/{resource}");
    }
    // Kinds the default values leave out get no rule (an HPA, an Ingress).
    assert!(
        !role
            .keys()
            .any(|(g, _)| g == "autoscaling" || g == "networking.k8s.io")
    );

    // The sample's spec is the chart's values.
    let sample = yaml(&project, "config/samples/charts_v1alpha1_webshop.yaml");
    assert_eq!(sample["apiVersion"], "charts.example.com/v1alpha1");
    assert_eq!(sample["metadata"]["name"], "webshop-sample");
    assert_eq!(sample["spec"], yaml(&chart, "values.yaml"));

    // The manager runs the generic chart operator; the image carries the charts.
    let manager = read(&project, "config/manager/manager.yaml");
    for arg in [
        "- helm-operator\n",
        "- run\n",
        "- --watches-file=/watches.yaml\n",
        "- --leader-elect\n",
        "- --leader-election-id=shop-operator\n",
    ] {
        assert!(manager.contains(arg), "{arg} in\n{manager}");
    }
    let dockerfile = read(&project, "Dockerfile");
    for line in [
        "COPY watches.yaml /watches.yaml",
        "COPY helm-charts /helm-charts",
        "ENTRYPOINT [\"/opkit\"]",
    ] {
        assert!(dockerfile.contains(line), "{line} in\n{dockerfile}");
    }

    // Regenerating changes nothing; an edited sample is kept.
    let before = files(&project);
    opkit_ok(&project, &["generate", "manifests"]);
    assert_eq!(files(&project), before, "a second generate changed files");

    // config/default deploys; the CRD accepts the sample with all its values.
    let cp = ControlPlane::start();
    let kubeconfig = cp.kubeconfig.to_str().unwrap();
    opkit_ok(&project, &["deploy", "--kubeconfig", kubeconfig]);
    cp.kubectl_ok(&[
        "-n",
        "shop-operator-system",
        "get",
        "deployment/shop-operator-controller-manager",
        "serviceaccount/shop-operator-controller-manager",
    ]);
    let sample_path = project.join("config/samples/charts_v1alpha1_webshop.yaml");
    cp.kubectl_ok(&["apply", "-f", sample_path.to_str().unwrap()]);
    let stored: serde_json::Value =
        serde_json::from_str(&cp.kubectl_ok(&["get", "webshop", "webshop-sample", "-o", "json"]))
            .unwrap();
    assert_eq!(stored["spec"]["image"]["repository"], "nginx");
    assert_eq!(stored["spec"]["service"]["port"], 80);

    // The manager's command, with nothing but the generated RBAC (a token of its service
    // account): the sample's release is installed (hook included) and uninstalled again.
    let namespace = "shop-operator-system";
    let token = cp.kubectl_ok(&[
        "-n",
        namespace,
        "create",
        "token",
        "shop-operator-controller-manager",
    ]);
    let sa_kubeconfig = cp.write_file(
        "manager-kubeconfig",
        &kubeconfig_with_token(&cp.kubeconfig, token.trim()),
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["helm-operator", "run", "--watches-file"])
        .arg(project.join("watches.yaml"))
        .arg("--kubeconfig")
        .arg(&sa_kubeconfig)
        .args([
            "--leader-elect",
            "--leader-election-id=shop-operator",
            "--leader-election-namespace",
            namespace,
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ])
        .current_dir(&project)
        .env_remove("KUBECONFIG");
    let mut manager = Streaming::spawn(cmd);
    let tools = Tools {
        kubeconfig: cp.kubeconfig.clone(),
        home: cp.dir().to_path_buf(),
    };
    eventually("the sample to be Deployed under the generated RBAC", || {
        let cr = tools.json(
            "kubectl",
            &["get", "webshop", "webshop-sample", "-o", "json"],
        )?;
        match condition(&cr, "Deployed") {
            Some((status, _)) if status == "True" => Ok(()),
            other => Err(format!("Deployed: {other:?}\n{cr:#}\n{}", manager.stderr())),
        }
    });
    cp.kubectl_ok(&[
        "get",
        "deployment/webshop-sample-web-shop",
        "configmap/webshop-sample-config",
    ]);
    cp.kubectl_ok(&["delete", "webshop", "webshop-sample"]);
    eventually("the release to be uninstalled", || {
        let left = cp.kubectl_ok(&["get", "deployments,configmaps", "-o", "name"]);
        !left.contains("webshop-sample")
    });
    manager.terminate();
    manager.wait(COMMAND_TIMEOUT);
    let log = manager.stderr();
    assert!(
        !log.to_ascii_lowercase().contains("forbidden"),
        "the manager was refused something the generated RBAC should grant:\n{log}"
    );
}

#[test]
fn a_chart_archive_is_unpacked_and_its_version_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let chart = chart_with_a_hook(tmp.path(), "store");
    helm_ok(tmp.path(), &["package", chart.to_str().unwrap()]);
    let archive = tmp.path().join("store-0.1.0.tgz");
    assert!(archive.is_file());
    let project = subdir(tmp.path(), "ops");
    opkit_ok(
        &project,
        &["init", "--plugins", "helm", "--domain", "example.org"],
    );
    let before = files(&project);
    let out = opkit(
        &project,
        &[
            "create",
            "api",
            "--helm-chart",
            archive.to_str().unwrap(),
            "--helm-chart-version",
            "0.2.0",
        ],
    );
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr
            .contains("is store version 0.1.0, not --helm-chart-version 0.2.0"),
        "{out}"
    );
    assert_eq!(files(&project), before, "a refused create api wrote files");

    opkit_ok(
        &project,
        &[
            "create",
            "api",
            "--plugins",
            "helm",
            "--group",
            "shop",
            "--version",
            "v1",
            "--kind",
            "Store",
            "--helm-chart",
            archive.to_str().unwrap(),
            "--helm-chart-version",
            "0.1.0",
        ],
    );
    // The archive's files (`helm package` rewrote Chart.yaml from the chart's metadata).
    let unpacked = project.join("helm-charts/store");
    assert_eq!(yaml(&unpacked, "Chart.yaml"), yaml(&chart, "Chart.yaml"));
    for rel in [
        "values.yaml",
        "templates/deployment.yaml",
        "templates/migrate.yaml",
        "templates/tests/test-connection.yaml",
    ] {
        assert_eq!(read(&unpacked, rel), read(&chart, rel), "{rel}");
    }
    let watches = yaml(&project, "watches.yaml");
    assert_eq!(watches[0]["group"], "shop.example.org");
    assert_eq!(watches[0]["kind"], "Store");
    assert_eq!(watches[0]["chart"], "helm-charts/store");
    let role = grants(&yaml(&project, "config/rbac/role.yaml"));
    assert!(
        role.contains_key(&("batch".into(), "jobs".into())),
        "{role:?}"
    );
    assert!(role.contains_key(&("shop.example.org".into(), "stores".into())));
    assert!(
        project
            .join("config/crd/bases/shop.example.org_stores.yaml")
            .is_file()
    );

    // A second kind with a new chart: its own watch, CRD and rules next to the first.
    opkit_ok(
        &project,
        &[
            "create",
            "api",
            "--group",
            "shop",
            "--version",
            "v1",
            "--kind",
            "Cart",
        ],
    );
    let watches = yaml(&project, "watches.yaml");
    assert_eq!(watches.as_sequence().unwrap().len(), 2);
    assert_eq!(watches[1]["chart"], "helm-charts/cart");
    let crds = yaml(&project, "config/crd/kustomization.yaml");
    assert_eq!(
        crds["resources"],
        serde_yaml::from_str::<Value>(
            "[bases/shop.example.org_stores.yaml, bases/shop.example.org_carts.yaml]"
        )
        .unwrap()
    );
    let role = grants(&yaml(&project, "config/rbac/role.yaml"));
    assert!(role.contains_key(&("shop.example.org".into(), "carts/status".into())));
}

#[test]
fn bad_plugins_charts_and_kinds_are_refused_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fails = |dir: &Path, args: &[&str], needles: &[&str]| {
        let before = files(dir);
        let out = opkit(dir, args);
        assert!(!out.success(), "should have failed\n{out}");
        for needle in needles {
            assert!(out.stderr.contains(needle), "{needle:?} not in\n{out}");
        }
        assert_eq!(files(dir), before, "a refused command changed files\n{out}");
    };

    let empty = subdir(tmp.path(), "empty");
    fails(
        &empty,
        &["init", "--plugins", "go", "--domain", "example.com"],
        &["unknown plugin \"go\"", "rust", "helm", "ansible"],
    );
    fails(
        &empty,
        &["init", "--plugins", "helm"],
        &["--domain <DOMAIN>"],
    );
    fails(
        &empty,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--helm-chart",
            "no/such/chart",
        ],
        &["no chart at no/such/chart", "helm pull"],
    );
    fails(
        &empty,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--kind",
            "Shop",
            "--helm-chart-version",
            "1.0.0",
        ],
        &["--helm-chart-version can only be used with --helm-chart"],
    );
    fails(
        &empty,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--group",
            "web",
        ],
        &["either --kind or --helm-chart need to be provided"],
    );

    let project = subdir(tmp.path(), "shop");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Shop",
        ],
    );
    fails(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v2",
            "--kind",
            "Shop",
        ],
        &[
            "kind Shop already exists",
            "the API resource already exists",
        ],
    );
    fails(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "SHOP",
        ],
        &["kind Shop already exists"],
    );
    fails(
        &project,
        &[
            "create",
            "api",
            "--plugins",
            "rust",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Cart",
        ],
        &["this is a helm project"],
    );
    fails(
        &project,
        &["create", "api", "--version", "v1", "--kind", "Cart"],
        &["--group is required"],
    );
    fails(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Cart",
            "--namespaced",
            "false",
        ],
        &["the kinds of a helm project are namespaced"],
    );
    fails(
        &project,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "cart",
        ],
        &["kind \"cart\" is not valid"],
    );
    // A chart whose templates do not parse is refused with Helm's loader or renderer text.
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("Chart.yaml"), "apiVersion: v2\nname: broken\n").unwrap();
    fails(
        &project,
        &["create", "api", "--helm-chart", broken.to_str().unwrap()],
        &["is not a chart Helm can load", "version"],
    );

    // generate manifests reads watches.yaml as the operator does.
    std::fs::write(
        project.join("watches.yaml"),
        "- {group: web.example.com, version: v1, kind: Shop, chart: helm-charts/gone}\n",
    )
    .unwrap();
    fails(
        &project,
        &["generate", "manifests"],
        &[
            "watches.yaml is not usable by the chart operator",
            "helm-charts/gone",
        ],
    );

    // The helm flags in a Rust project.
    let rust = subdir(tmp.path(), "rusty");
    opkit_ok(
        &rust,
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "github.com/example/rusty",
        ],
    );
    fails(
        &rust,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Cart",
            "--helm-chart",
            "x",
        ],
        &["--helm-chart is for helm projects"],
    );
    fails(
        &rust,
        &[
            "create",
            "api",
            "--plugins",
            "helm",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Cart",
        ],
        &["this is a rust project"],
    );
}

/// kubectl and helm against the control plane of `opkit run --up` in `project`.
struct Tools {
    kubeconfig: PathBuf,
    home: PathBuf,
}

impl Tools {
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new(tool_path(tool));
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env_remove("KUBECONFIG")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME");
        run(cmd, None, COMMAND_TIMEOUT)
    }

    fn ok(&self, tool: &str, args: &[&str]) -> String {
        let out = self.run(tool, args);
        assert!(out.success(), "{tool} should have succeeded\n{out}");
        out.stdout
    }

    fn json(&self, tool: &str, args: &[&str]) -> Result<serde_json::Value, String> {
        let out = self.run(tool, args);
        if !out.success() {
            return Err(out.to_string());
        }
        serde_json::from_str(&out.stdout).map_err(|e| format!("{e}: {out}"))
    }
}

/// The condition `type` of an object's status, as `(status, reason)`.
fn condition(object: &serde_json::Value, type_: &str) -> Option<(String, String)> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
            )
        })
}

#[test]
fn run_up_deploys_the_sample_as_a_helm_release_and_uninstalls_it_on_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let project = subdir(tmp.path(), "memcached-operator");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
        ],
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["run", "--up", "--listen", "127.0.0.1:0"])
        .current_dir(&project)
        .env("HOME", tmp.path())
        .env_remove("KUBECONFIG");
    let mut run_up = Streaming::spawn(cmd);
    eventually_within(
        "the chart operator to start under opkit run --up",
        Duration::from_secs(120),
        || run_up.stderr().contains("running memcached-operator"),
    );
    let tools = Tools {
        kubeconfig: project.join(".opkit/kubeconfig"),
        home: tmp.path().to_path_buf(),
    };
    let sample = project.join("config/samples/cache_v1alpha1_memcached.yaml");
    tools.ok("kubectl", &["apply", "-f", sample.to_str().unwrap()]);

    // Deployed=True with operator-sdk's reason, the release named after the object.
    let cr = eventually("the sample to be Deployed", || {
        let cr = tools.json(
            "kubectl",
            &["get", "memcached", "memcached-sample", "-o", "json"],
        )?;
        match condition(&cr, "Deployed") {
            Some((status, _)) if status == "True" => Ok(cr),
            other => Err(format!("Deployed: {other:?}\n{cr:#}\n{}", run_up.stderr())),
        }
    });
    assert_eq!(
        condition(&cr, "Deployed").unwrap().1,
        "InstallSuccessful",
        "{cr:#}"
    );
    assert_eq!(cr["status"]["deployedRelease"]["name"], "memcached-sample");

    // The chart's Deployment, owned by the custom resource.
    let deployment = tools
        .json(
            "kubectl",
            &["get", "deployment", "memcached-sample", "-o", "json"],
        )
        .unwrap();
    assert_eq!(
        deployment["metadata"]["ownerReferences"][0]["kind"], "Memcached",
        "{deployment:#}"
    );

    // The real helm reads the release.
    let list = tools.json("helm", &["list", "-o", "json"]).unwrap();
    assert_eq!(list[0]["name"], "memcached-sample", "{list:#}");
    assert_eq!(list[0]["status"], "deployed", "{list:#}");
    assert_eq!(list[0]["chart"], "memcached-0.1.0", "{list:#}");
    let history = tools
        .json("helm", &["history", "memcached-sample", "-o", "json"])
        .unwrap();
    assert_eq!(history[0]["revision"], 1, "{history:#}");
    assert_eq!(history[0]["status"], "deployed", "{history:#}");

    // Deleting the custom resource uninstalls the release.
    tools.ok("kubectl", &["delete", "memcached", "memcached-sample"]);
    eventually("the release's objects to be gone", || {
        let left = tools.ok(
            "kubectl",
            &[
                "get",
                "deployments,services,serviceaccounts,secrets",
                "-l",
                "app.kubernetes.io/instance=memcached-sample",
                "-o",
                "name",
            ],
        );
        left.trim().is_empty()
    });
    eventually("helm list to be empty", || {
        tools.ok("helm", &["list", "-q"]).trim().is_empty()
    });
    // SIGTERM stops the operator and the control plane gracefully.
    run_up.terminate();
    let status = run_up.wait(COMMAND_TIMEOUT);
    assert!(status.success(), "{status:?}\n{}", run_up.stderr());
}

/// `opkit test --chaos crash` in a helm project: its suite (written here: `opkit init` writes
/// none for helm) runs with `opkit helm-operator run` on the project's watches.yaml as the
/// operator under test, the CRDs `generate manifests` writes installed on each run's plane;
/// every crash run restarts it and the release still ends up installed.
#[test]
fn helm_chaos_crash_campaign_runs_the_chart_operator_on_the_projects_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let project = subdir(tmp.path(), "memcached-operator");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "helm",
            "--domain",
            "example.com",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
        ],
    );
    let test = project.join("tests/e2e/memcached");
    std::fs::create_dir_all(&test).unwrap();
    std::fs::copy(
        project.join("config/samples/cache_v1alpha1_memcached.yaml"),
        test.join("00-install.yaml"),
    )
    .unwrap();
    std::fs::write(
        test.join("00-assert.yaml"),
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: \
         memcached-sample\nstatus:\n  deployedRelease:\n    name: memcached-sample\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: memcached-sample\nspec:\n  \
         replicas: 1\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["test", "--chaos", "crash", "--budget", "60s"])
        .current_dir(&project)
        .env_remove("KUBECONFIG")
        .env("HOME", &project);
    let out = run(cmd, None, Duration::from_secs(300));
    assert!(
        out.stderr
            .contains("chaos: the suite starts memcached-operator's operator: ")
            && out.stderr.contains(" helm-operator run --watches-file "),
        "the suite starts the chart operator as its background command\n{out}"
    );
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with("chaos: ") && l.contains(" fault runs in "))
        .unwrap_or_else(|| panic!("no campaign summary\n{out}"));
    let runs: usize = summary["chaos: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(runs >= 1, "at least one crash run: {summary}");
    assert!(
        out.stdout.contains(": ok (restarted 1 times"),
        "a crashed chart operator was restarted and the release still installed\n{out}"
    );
    assert!(summary.contains(", 0 findings"), "{out}");
    assert!(out.success(), "the campaign should pass\n{out}");
}

/// The Ansible venv `scripts/install-tools.sh` makes; a test that needs it fails without it.
fn ansible_venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/ansible");
    assert!(
        venv.join("bin/ansible-runner").is_file(),
        "{} is missing: run scripts/install-tools.sh (the Ansible operator needs its venv)",
        venv.display()
    );
    venv
}

#[test]
fn ansible_init_and_create_api_write_operator_sdks_files_and_the_generated_suite_passes() {
    let venv = ansible_venv();
    let tmp = tempfile::tempdir().unwrap();
    let project = subdir(tmp.path(), "memcached-operator");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "ansible",
            "--domain",
            "example.com",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--generate-role",
        ],
    );
    // A second kind backed by a playbook alone, created in the project.
    opkit_ok(
        &project,
        &[
            "create",
            "api",
            "--plugins",
            "ansible",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Site",
            "--generate-playbook",
        ],
    );

    assert_eq!(yaml(&project, "PROJECT")["plugin"], "ansible");
    let watches = yaml(&project, "watches.yaml");
    assert_eq!(watches[0]["group"], "cache.example.com");
    assert_eq!(watches[0]["kind"], "Memcached");
    assert_eq!(watches[0]["role"], "memcached");
    assert_eq!(watches[1]["playbook"], "playbooks/site.yml");
    for dir in ["tasks", "defaults", "handlers", "meta", "vars"] {
        yaml(&project, &format!("roles/memcached/{dir}/main.yml"));
    }
    assert!(project.join("roles/memcached/README.md").is_file());
    assert!(
        !project.join("roles/site").exists(),
        "a playbook alone has no role"
    );
    let tasks = yaml(&project, "roles/memcached/tasks/main.yml");
    let k8s = &tasks[0]["kubernetes.core.k8s"];
    assert_eq!(k8s["definition"]["kind"], "ConfigMap");
    assert_eq!(
        k8s["definition"]["metadata"]["name"],
        "{{ ansible_operator_meta.name }}"
    );
    let playbook = yaml(&project, "playbooks/site.yml");
    assert_eq!(playbook[0]["hosts"], "localhost");
    assert!(playbook[0]["tasks"][0]["kubernetes.core.k8s"].is_mapping());
    assert_eq!(
        yaml(&project, "requirements.yml")["collections"][0]["name"],
        "kubernetes.core"
    );

    let crd = yaml(
        &project,
        "config/crd/bases/cache.example.com_memcacheds.yaml",
    );
    let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    for field in ["spec", "status"] {
        assert_eq!(props[field]["x-kubernetes-preserve-unknown-fields"], true);
    }
    let grants = grants(&yaml(&project, "config/rbac/role.yaml"));
    for resource in ["memcacheds", "memcacheds/status", "memcacheds/finalizers"] {
        assert!(
            grants.contains_key(&("cache.example.com".into(), resource.into())),
            "{resource}: {grants:?}"
        );
    }
    assert!(grants.contains_key(&("web.example.com".into(), "sites".into())));
    assert!(grants.contains_key(&("".into(), "configmaps".into())));
    let manager = documents(&read(&project, "config/manager/manager.yaml"));
    let args = &manager[1]["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(args[0], "ansible-operator");
    assert_eq!(args[2], "--watches-file=/opt/ansible/watches.yaml");
    assert_eq!(
        yaml(&project, "tests/e2e/memcached/00-create.yaml")["spec"]["foo"],
        "bar"
    );

    // The proof: both generated tests pass against the operator run as its service account.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.arg("test")
        .current_dir(&project)
        .env_remove("KUBECONFIG")
        .env("HOME", &project)
        .env("OPKIT_ANSIBLE_VENV", &venv);
    let out = run(cmd, None, Duration::from_secs(400));
    let log = std::fs::read_to_string(project.join(".opkit/test/operator.log")).unwrap_or_default();
    assert!(
        out.success(),
        "the generated suite should pass\n{out}\noperator log:\n{log}"
    );
    for test in ["memcached", "site"] {
        assert!(
            out.stdout
                .contains(&format!("--- PASS: kuttl/harness/{test}")),
            "{test} did not pass\n{out}"
        );
    }
}

#[test]
fn ansible_chaos_crash_campaign_on_the_generated_suite_runs_and_passes() {
    let venv = ansible_venv();
    let tmp = tempfile::tempdir().unwrap();
    let project = subdir(tmp.path(), "memcached-operator");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "ansible",
            "--domain",
            "example.com",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--generate-role",
        ],
    );
    // The two fault-free reference runs take 20–40 s here (more on a busy machine) and the
    // role's three writes plan three crash runs of 10–20 s each: the budget lets the campaign
    // start at least one of them even when the reference runs are slow.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["test", "--chaos", "crash", "--budget", "60s"])
        .current_dir(&project)
        .env_remove("KUBECONFIG")
        .env("HOME", &project)
        .env("OPKIT_ANSIBLE_VENV", &venv);
    let out = run(cmd, None, Duration::from_secs(300));
    assert!(out.success(), "the campaign should pass\n{out}");
    assert!(
        out.stderr.contains("ansible-operator run --watches-file"),
        "the suite starts the Ansible operator as its background command\n{out}"
    );
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with("chaos: ") && l.contains(" fault runs in "))
        .unwrap_or_else(|| panic!("no campaign summary\n{out}"));
    let runs: usize = summary["chaos: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(runs >= 1, "at least one crash run: {summary}");
    assert!(summary.contains(", 0 findings"), "{out}");
    assert!(
        out.stdout.contains(": ok (restarted 1 times"),
        "a crashed operator was restarted and the test still passed\n{out}"
    );
    assert!(out.stdout.trim_end().ends_with("PASS"), "{out}");
}

#[test]
fn ansible_flags_that_do_not_fit_are_refused_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fails = |dir: &Path, args: &[&str], needles: &[&str]| {
        let before = files(dir);
        let out = opkit(dir, args);
        assert!(!out.success(), "should have failed\n{out}");
        for needle in needles {
            assert!(out.stderr.contains(needle), "{needle:?} not in\n{out}");
        }
        assert_eq!(files(dir), before, "a refused command changed files\n{out}");
    };
    let init = ["init", "--plugins", "ansible", "--domain", "example.com"];
    let empty = subdir(tmp.path(), "empty");
    fails(
        &empty,
        &[&init[..], &["--repo", "github.com/x/y"]].concat(),
        &["--repo", "leave out --repo"],
    );
    fails(
        &empty,
        &[&init[..], &["--generate-role"]].concat(),
        &["--group is required"],
    );
    fails(
        &empty,
        &[&init[..], &["--kind", "Shop", "--helm-chart", "x"]].concat(),
        &["--helm-chart is for helm projects"],
    );
    fails(
        &empty,
        &[
            "init",
            "--domain",
            "example.com",
            "--repo",
            "github.com/x/y",
            "--generate-role",
        ],
        &["--plugins helm or ansible"],
    );

    let project = subdir(tmp.path(), "shop");
    opkit_ok(&project, &init);
    let api = [
        "create",
        "api",
        "--group",
        "shop",
        "--version",
        "v1",
        "--kind",
    ];
    opkit_ok(&project, &[&api[..], &["Cart", "--generate-role"]].concat());
    fails(
        &project,
        &[&api[..], &["Cart", "--generate-playbook"]].concat(),
        &["kind Cart already exists"],
    );
    fails(
        &project,
        &[&api[..], &["Order", "--namespaced", "false"]].concat(),
        &["namespaced"],
    );
    fails(
        &project,
        &[&api[..], &["Order", "--plugins", "helm"]].concat(),
        &["ansible project (PROJECT says so)"],
    );
    // A playbook or role already on disk is never overwritten.
    std::fs::write(project.join("playbooks/order.yml"), "# mine\n").unwrap();
    fails(
        &project,
        &[&api[..], &["Order", "--generate-playbook"]].concat(),
        &["playbooks/order.yml already exists"],
    );

    let helm = subdir(tmp.path(), "charts");
    opkit_ok(
        &helm,
        &["init", "--plugins", "helm", "--domain", "example.com"],
    );
    fails(
        &helm,
        &[&api[..], &["Cart", "--generate-role"]].concat(),
        &["--generate-role is for ansible projects"],
    );
}

#[test]
fn ansible_run_up_runs_the_role_for_the_sample_and_deploy_applies_the_manager() {
    let venv = ansible_venv();
    let tmp = tempfile::tempdir().unwrap();
    let project = subdir(tmp.path(), "memcached-operator");
    opkit_ok(
        &project,
        &[
            "init",
            "--plugins",
            "ansible",
            "--domain",
            "example.com",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--generate-role",
            "--generate-playbook",
        ],
    );
    assert_eq!(
        yaml(&project, "watches.yaml")[0]["playbook"],
        "playbooks/memcached.yml"
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["run", "--up", "--listen", "127.0.0.1:0"])
        .current_dir(&project)
        .env("HOME", tmp.path())
        .env("OPKIT_ANSIBLE_VENV", &venv)
        .env_remove("KUBECONFIG");
    let mut run_up = Streaming::spawn(cmd);
    eventually_within(
        "the Ansible operator to start under opkit run --up",
        Duration::from_secs(120),
        || run_up.stderr().contains("running memcached-operator"),
    );
    let tools = Tools {
        kubeconfig: project.join(".opkit/kubeconfig"),
        home: tmp.path().to_path_buf(),
    };
    let samples = project.join("config/samples");
    tools.ok("kubectl", &["apply", "-k", samples.to_str().unwrap()]);

    // The playbook ran the role: Successful, and the role's ConfigMap holds the spec's foo.
    eventually("the sample's run to succeed", || {
        let cr = tools.json(
            "kubectl",
            &["get", "memcached", "memcached-sample", "-o", "json"],
        )?;
        match condition(&cr, "Successful") {
            Some((status, _)) if status == "True" => Ok(()),
            other => Err(format!(
                "Successful: {other:?}\n{cr:#}\n{}",
                run_up.stderr()
            )),
        }
    });
    let configmap = tools
        .json(
            "kubectl",
            &["get", "configmap", "memcached-sample", "-o", "json"],
        )
        .unwrap();
    assert_eq!(configmap["data"]["foo"], "bar", "{configmap:#}");

    // config/default deploys the manager running the Ansible operator on watches.yaml.
    let kubeconfig = project.join(".opkit/kubeconfig");
    opkit_ok(
        &project,
        &["deploy", "--kubeconfig", kubeconfig.to_str().unwrap()],
    );
    let deployment = tools
        .json(
            "kubectl",
            &[
                "-n",
                "memcached-operator-system",
                "get",
                "deployment/memcached-operator-controller-manager",
                "-o",
                "json",
            ],
        )
        .unwrap();
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(args[0], "ansible-operator", "{deployment:#}");
    assert_eq!(args[2], "--watches-file=/opt/ansible/watches.yaml");
    // Ansible writes under /tmp on the read-only root filesystem.
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/tmp");
    assert!(pod["volumes"][0]["emptyDir"].is_object(), "{deployment:#}");

    run_up.terminate();
    let status = run_up.wait(COMMAND_TIMEOUT);
    assert!(status.success(), "{status:?}\n{}", run_up.stderr());
}
