//! Shared harness of the release engine's tests: a real control plane (`TestEnv`), a chart
//! written to a temporary directory, clients that fail on purpose (the operator "dies" after
//! its Nth API call) and count writes, and the real `helm` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use opkit_chart::Chart;
use opkit_template::Value;
use opkit_testenv::TestEnv;

/// A control plane for one test.
pub async fn env() -> TestEnv {
    TestEnv::start()
        .await
        .expect("the test control plane starts")
}

/// Counts the requests a client sends and, once `budget` requests went through, fails every
/// further one, or leaves it unanswered: "the operator died after its Nth API call".
#[derive(Clone)]
pub struct Faults {
    budget: Option<usize>,
    /// Past the budget, requests wait on this gate (closed by [`Faults::release`], then they
    /// fail) instead of failing at once.
    hang: Option<Arc<tokio::sync::Semaphore>>,
    /// Signalled when the first request past the budget arrives.
    reached: Arc<tokio::sync::Notify>,
    requests: Arc<AtomicUsize>,
    writes: Arc<AtomicUsize>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            budget: None,
            hang: None,
            reached: Arc::new(tokio::sync::Notify::new()),
            requests: Arc::default(),
            writes: Arc::default(),
        }
    }
}

impl Faults {
    /// Lets every request through and counts them.
    pub fn counting() -> Faults {
        Faults::default()
    }

    /// Lets `n` requests through, then fails every request.
    pub fn dying_after(n: usize) -> Faults {
        Faults {
            budget: Some(n),
            ..Faults::default()
        }
    }

    /// Lets `n` requests through, then answers none (until [`Faults::release`]).
    pub fn hanging_after(n: usize) -> Faults {
        Faults {
            budget: Some(n),
            hang: Some(Arc::new(tokio::sync::Semaphore::new(0))),
            ..Faults::default()
        }
    }

    /// Resolves once a request went past the budget (the operator is stuck or dead there).
    pub async fn reached(&self) {
        self.reached.notified().await
    }

    /// Fails every unanswered request and every later one (the dead process is gone).
    pub fn release(&self) {
        if let Some(gate) = &self.hang {
            gate.close();
        }
    }

    /// Requests sent so far (failed ones included).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Writes (POST, PUT, PATCH, DELETE) that reached the server.
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// Whether the budget ran out (some request was refused).
    pub fn died(&self) -> bool {
        self.budget.is_some_and(|b| self.requests() > b)
    }
}

/// The tower layer that applies [`Faults`] to a client's requests.
pub struct FaultLayer(pub Faults);

impl<S> tower::Layer<S> for FaultLayer {
    type Service = FaultService<S>;
    fn layer(&self, inner: S) -> FaultService<S> {
        FaultService {
            inner,
            faults: self.0.clone(),
        }
    }
}

/// A service failing requests past the budget.
#[derive(Clone)]
pub struct FaultService<S> {
    inner: S,
    faults: Faults,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B> tower::Service<http::Request<B>> for FaultService<S>
where
    S: tower::Service<http::Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let n = self.faults.requests.fetch_add(1, Ordering::SeqCst) + 1;
        if self.faults.budget.is_some_and(|b| n > b) {
            let msg = format!("injected fault: the operator died after API call {}", n - 1);
            return Box::pin(async move { Err(msg.into()) });
        }
        if req.method() != http::Method::GET {
            self.faults.writes.fetch_add(1, Ordering::SeqCst);
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// A client of `env` whose requests go through `faults`.
pub async fn client_with(env: &TestEnv, faults: &Faults) -> kube::Client {
    let kc = Kubeconfig::from_yaml(env.kubeconfig()).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig is usable");
    ClientBuilder::try_from(config)
        .expect("a client builder")
        .with_layer(&FaultLayer(faults.clone()))
        .build()
}

/// Writes `files` (path, text) into a new directory and loads it as a chart.
pub fn chart_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, Chart) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("create the directory");
        std::fs::write(&p, text).expect("write a chart file");
    }
    let chart = Chart::load(dir.path()).expect("the chart loads");
    (dir, chart)
}

/// The chart most tests deploy: a ConfigMap reading the cluster through `lookup`, a
/// Deployment with resource quantities the server may canonicalize, a Service, an optional
/// ConfigMap (`extra`), one kept on uninstall, a pre-install/pre-upgrade hook Job and a
/// pre-delete one.
pub const APP_CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    ),
    (
        "values.yaml",
        "replicas: 1\nmessage: hello\nextra: true\nhook: true\n",
    ),
    (
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  message: {{ .Values.message | quote }}\n  namespace: {{ (lookup \"v1\" \"Namespace\" \"\" .Release.Namespace).metadata.name | quote }}\n  served: {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" | quote }}\n",
    ),
    (
        "templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\n  labels:\n    app: web\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n        resources:\n          requests:\n            cpu: 500m\n            memory: 64Mi\n          limits:\n            cpu: \"1\"\n            memory: 0.5Gi\n",
    ),
    (
        "templates/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 80\n",
    ),
    (
        "templates/extra.yaml",
        "{{- if .Values.extra }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  on: \"yes\"\n{{- end }}\n",
    ),
    (
        "templates/keep.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-keep\n  annotations:\n    helm.sh/resource-policy: keep\ndata:\n  kept: \"true\"\n",
    ),
    (
        "templates/hook.yaml",
        "{{- if .Values.hook }}\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: \"-1\"\n    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\nspec:\n  template:\n    metadata:\n      annotations:\n        sim.opkit.dev/ready-after: 0s\n        sim.opkit.dev/complete-after: 0s\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: migrate\n        image: busybox\n{{- end }}\n",
    ),
    (
        "templates/backup.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-backup\n  annotations:\n    helm.sh/hook: pre-delete\n    helm.sh/hook-delete-policy: hook-succeeded\nspec:\n  template:\n    metadata:\n      annotations:\n        sim.opkit.dev/ready-after: 0s\n        sim.opkit.dev/complete-after: 0s\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: backup\n        image: busybox\n",
    ),
    (
        "templates/NOTES.txt",
        "Release {{ .Release.Name }} revision {{ .Release.Revision }}.\n",
    ),
];

/// User values from JSON.
pub fn values(json: serde_json::Value) -> Value {
    Value::from_json(&json)
}

/// The `helm` binary `scripts/install-tools.sh` installs; fails the test when it is missing.
pub fn helm_path() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(".tools/bin/helm");
    assert!(
        path.is_file(),
        "helm is not installed at {}: run `scripts/install-tools.sh` at the repository root \
         to install the real helm these tests check compatibility with",
        path.display()
    );
    path
}

/// Runs the real helm against `env` (its kubeconfig written to `dir`); returns (ok, stdout,
/// stderr).
pub fn helm(env: &TestEnv, dir: &Path, args: &[&str]) -> (bool, String, String) {
    let kubeconfig = dir.join("kubeconfig");
    if !kubeconfig.exists() {
        std::fs::write(&kubeconfig, env.kubeconfig()).expect("write the kubeconfig");
    }
    let mut cmd = Command::new(helm_path());
    cmd.args(args)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("HOME", dir)
        .env("HELM_CACHE_HOME", dir.join("cache"))
        .env("HELM_CONFIG_HOME", dir.join("config"))
        .env("HELM_DATA_HOME", dir.join("data"))
        .env_remove("KUBECONFIG");
    // The control plane runs on this runtime: let its other workers serve helm meanwhile.
    let out = tokio::task::block_in_place(|| cmd.output()).expect("helm runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs helm and returns its stdout, failing the test when helm fails.
pub fn helm_ok(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = helm(env, dir, args);
    assert!(ok, "helm {args:?} failed:\n{stderr}\n{stdout}");
    stdout
}
