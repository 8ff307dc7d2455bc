//! The task kinds against a real control plane (`opkit-testenv`'s in-process TestEnv with
//! its simulated workloads), with a Context built from an OperatorVersion as the engine
//! builds it; and every corpus package's objects, converted and enhanced, accepted by the
//! server.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use kube::{CustomResourceExt, ResourceExt};
use opkit_template::Value;
use opkit_template::kudo::Variables;
use opkit_testenv::{TestEnv, eventually};
use serde_json::{Value as Json, json};

use crate::api::{
    Instance, InstanceSpec, Operator, OperatorVersion, OperatorVersionSpec, PipeSpec, Task,
    TaskSpec,
};
use crate::task::{Context, Progress, TaskError, apply, delete, pipe, toggle};

async fn env() -> TestEnv {
    TestEnv::builder()
        .crd_object(Instance::crd())
        .crd_object(OperatorVersion::crd())
        .crd_object(Operator::crd())
        .start()
        .await
        .expect("test env starts")
}

/// An instance `inst` in `default` with an operator version holding `templates`.
async fn context(env: &TestEnv, templates: &[(&str, &str)], params: &[(&str, &str)]) -> Context {
    context_in(env, "default", templates, params).await
}

/// An instance `inst` in `namespace` (created when missing).
async fn context_in(
    env: &TestEnv,
    namespace: &str,
    templates: &[(&str, &str)],
    params: &[(&str, &str)],
) -> Context {
    let client = env.client();
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    if namespaces.get_opt(namespace).await.unwrap().is_none() {
        let ns = serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let ov = OperatorVersion::new(
        "demo-0.1.0",
        OperatorVersionSpec {
            version: "0.1.0".into(),
            templates: templates
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
    );
    let mut inst = Instance::new("inst", InstanceSpec::default());
    inst.metadata.namespace = Some(namespace.into());
    inst.spec.plan_execution.plan_name = "deploy".into();
    inst.spec.plan_execution.uid = "uid-1".into();
    let inst = Api::<Instance>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &inst)
        .await
        .expect("instance created");
    Context {
        recorder: opkit::events::Recorder::new(client.clone(), "kudo-manager", "test"),
        client,
        instance: inst,
        operator_version: ov,
        operator: Operator::new("demo", Default::default()),
        variables: Variables {
            operator_name: "demo".into(),
            name: "inst".into(),
            namespace: namespace.into(),
            operator_version: "0.1.0".into(),
            plan_name: "deploy".into(),
            phase_name: "main".into(),
            step_name: "everything".into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect(),
            ..Default::default()
        },
    }
}

fn task(kind: &str, resources: &[&str]) -> Task {
    Task {
        name: "t".into(),
        kind: kind.into(),
        spec: TaskSpec {
            resources: resources.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
    }
}

async fn until_done(ctx: &Context, t: &Task) {
    eventually(&format!("{} task done", t.kind), || async {
        match run(ctx, t).await {
            Ok(Progress::Done) => Some(()),
            Ok(Progress::Waiting(_)) => None,
            Err(e) => panic!("{} task failed: {e}", t.kind),
        }
    })
    .await
}

async fn run(ctx: &Context, t: &Task) -> Result<Progress, TaskError> {
    match t.kind.as_str() {
        "Apply" => apply::run(ctx, t).await,
        "Delete" => delete::run(ctx, t).await,
        "Toggle" => toggle::run(ctx, t).await,
        "Pipe" => pipe::run(ctx, t).await,
        k => panic!("no task kind {k}"),
    }
}

const CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  greeting: {{ .Params.GREETING }}\n";
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
      volumes:
      - name: config
        configMap:
          name: {{ .Name }}-config
"#;

#[tokio::test]
async fn apply_creates_enhanced_owned_objects_and_is_done_once_they_are_healthy() {
    let env = env().await;
    let mut ctx = context(
        &env,
        &[("config.yaml", CONFIG), ("web.yaml", DEPLOYMENT)],
        &[("GREETING", "hello")],
    )
    .await;
    let t = task("Apply", &["config.yaml", "web.yaml"]);
    let first = apply::run(&ctx, &t).await.expect("first pass");
    assert!(
        matches!(&first, Progress::Waiting(m) if m.contains("is NOT healthy")),
        "{first:?}"
    );
    until_done(&ctx, &t).await;
    let d = Api::<Deployment>::namespaced(env.client(), "default")
        .get("inst-web")
        .await
        .unwrap();
    let labels = d.labels();
    assert_eq!(labels.get("heritage").map(String::as_str), Some("kudo"));
    assert_eq!(
        labels.get("kudo.dev/instance").map(String::as_str),
        Some("inst")
    );
    assert_eq!(
        d.annotations()
            .get("kudo.dev/last-plan-execution-uid")
            .map(String::as_str),
        Some("uid-1")
    );
    let owner = &d.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Instance", ctx.instance.uid().unwrap().as_str())
    );
    let template = d.spec.as_ref().unwrap().template.metadata.as_ref().unwrap();
    let hash = template.annotations.as_ref().unwrap()["kudo.dev/dependencies-hash"].clone();
    assert_eq!(
        template.labels.as_ref().unwrap()["kudo.dev/operator"],
        "demo"
    );
    // A changed ConfigMap changes the hash, which rolls the pods.
    ctx.variables
        .params
        .insert("GREETING".into(), Value::from("bonjour"));
    let _ = apply::run(&ctx, &t).await.expect("second apply");
    let d = Api::<Deployment>::namespaced(env.client(), "default")
        .get("inst-web")
        .await
        .unwrap();
    let new_hash = d
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .unwrap()["kudo.dev/dependencies-hash"]
        .clone();
    assert_ne!(hash, new_hash);
    let cm = Api::<ConfigMap>::namespaced(env.client(), "default")
        .get("inst-config")
        .await
        .unwrap();
    assert_eq!(cm.data.unwrap()["greeting"], "bonjour");
}

#[tokio::test]
async fn a_failed_job_fails_the_apply_fatally_with_its_message() {
    let env = env().await;
    let job = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: init
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {sim.opkit.dev/behavior: fail}
    spec:
      restartPolicy: Never
      containers: [{name: init, image: busybox}]
"#;
    let ctx = context(&env, &[("job.yaml", job)], &[]).await;
    let t = task("Apply", &["job.yaml"]);
    let err = eventually("the Job to fail", || async {
        match apply::run(&ctx, &t).await {
            Err(e) => Some(e),
            Ok(Progress::Waiting(_)) => None,
            Ok(Progress::Done) => panic!("a failing Job is not healthy"),
        }
    })
    .await;
    let TaskError::Fatal(m) = err else {
        panic!("expected a fatal error, got {err:?}")
    };
    assert!(
        m.starts_with("default/inst failed in deploy.main.everything.t: "),
        "{m}"
    );
    assert!(m.contains("job \"init\" has failed terminally"), "{m}");
}

#[tokio::test]
async fn render_errors_and_missing_templates_are_fatal_with_kudos_wording() {
    let env = env().await;
    let ctx = context(&env, &[("bad.yaml", "x: {{ .Params.MISSING }}")], &[]).await;
    let err = apply::run(&ctx, &task("Apply", &["bad.yaml"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TaskError::Fatal(m) if m.contains("error expanding template bad.yaml: error rendering template:") && m.contains("MISSING")),
        "{err:?}"
    );
    let err = apply::run(&ctx, &task("Apply", &["absent.yaml"]))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("error finding resource named absent.yaml"),
        "{err}"
    );
    let err = apply::run(&ctx, &task("Apply", &[])).await.unwrap_err();
    assert!(
        err.to_string().contains("has an empty resource list"),
        "{err}"
    );
}

#[tokio::test]
async fn removed_api_versions_are_converted_reported_and_cluster_scoped_objects_removed_on_uninstall()
 {
    let env = env().await;
    let objs = r#"apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: pdb
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: rbac.authorization.k8s.io/v1beta1
kind: ClusterRole
metadata:
  name: {{ .Namespace }}-{{ .Name }}-reader
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
"#;
    let ctx = context(&env, &[("objs.yaml", objs)], &[]).await;
    until_done(&ctx, &task("Apply", &["objs.yaml"])).await;
    let role = Api::<ClusterRole>::all(env.client())
        .get("default-inst-reader")
        .await
        .unwrap();
    assert!(role.owner_references().is_empty());
    assert_eq!(
        role.labels()["kudo.opkit.dev/instance-namespace"],
        "default"
    );
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(env.client(), "default");
    let notes = eventually("the conversion events", || async {
        let list = events.list(&Default::default()).await.ok()?;
        let notes: Vec<String> = list
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("APIVersionConverted"))
            .filter_map(|e| e.note)
            .collect();
        (notes.len() == 2).then_some(notes)
    })
    .await;
    assert!(notes.iter().any(|n| n == "PodDisruptionBudget pdb converted from removed API version policy/v1beta1 to policy/v1"), "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("ClusterRole default-inst-reader converted")),
        "{notes:?}"
    );
    let inst = Api::<Instance>::namespaced(env.client(), "default")
        .get("inst")
        .await
        .unwrap();
    assert_eq!(
        crate::leftovers::recorded(&inst)
            .into_iter()
            .collect::<Vec<_>>(),
        ["rbac.authorization.k8s.io/v1/ClusterRole"]
    );
    eventually("the cluster-scoped objects removed", || async {
        crate::leftovers::remove(&env.client(), &inst)
            .await
            .unwrap()
            == Progress::Done
    })
    .await;
    assert!(
        Api::<ClusterRole>::all(env.client())
            .get_opt("default-inst-reader")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn delete_removes_objects_and_absent_objects_or_unknown_kinds_are_fine() {
    let env = env().await;
    let unknown = "apiVersion: example.com/v1\nkind: Nothing\nmetadata:\n  name: nothing\n";
    let ctx = context(
        &env,
        &[("config.yaml", CONFIG), ("unknown.yaml", unknown)],
        &[("GREETING", "hi")],
    )
    .await;
    until_done(&ctx, &task("Apply", &["config.yaml"])).await;
    let d = task("Delete", &["config.yaml", "unknown.yaml"]);
    until_done(&ctx, &d).await;
    assert!(
        Api::<ConfigMap>::namespaced(env.client(), "default")
            .get_opt("inst-config")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        delete::run(&ctx, &d).await.unwrap(),
        Progress::Done,
        "deleting again is fine"
    );
}

#[tokio::test]
async fn toggle_applies_or_deletes_by_its_boolean_parameter() {
    let env = env().await;
    let mut ctx = context(
        &env,
        &[("config.yaml", CONFIG)],
        &[("GREETING", "hi"), ("ON", "true")],
    )
    .await;
    let mut t = task("Toggle", &["config.yaml"]);
    t.spec.parameter = "ON".into();
    until_done(&ctx, &t).await;
    let cms = Api::<ConfigMap>::namespaced(env.client(), "default");
    assert!(cms.get_opt("inst-config").await.unwrap().is_some());
    ctx.variables
        .params
        .insert("ON".into(), Value::from("False"));
    until_done(&ctx, &t).await;
    assert!(cms.get_opt("inst-config").await.unwrap().is_none());
    ctx.variables
        .params
        .insert("ON".into(), Value::from("maybe"));
    let err = toggle::run(&ctx, &t).await.unwrap_err();
    assert!(
        matches!(&err, TaskError::Fatal(m) if m.ends_with("could not parse value of parameter ON: strconv.ParseBool: parsing \"maybe\": invalid syntax")),
        "{err:?}"
    );
    ctx.variables
        .params
        .insert("ON".into(), Value::list(vec![]));
    assert!(
        toggle::run(&ctx, &t)
            .await
            .unwrap_err()
            .to_string()
            .contains("value of parameter ON isn't a string")
    );
    ctx.variables.params.remove("ON");
    assert!(
        toggle::run(&ctx, &t)
            .await
            .unwrap_err()
            .to_string()
            .contains("no value for parameter ON found")
    );
    t.spec.parameter.clear();
    assert!(
        toggle::run(&ctx, &t)
            .await
            .unwrap_err()
            .to_string()
            .contains("Missing parameter to evaluate the Toggle Task")
    );
}

#[tokio::test]
async fn pipe_runs_its_pod_and_names_the_missing_pods_exec_of_the_embedded_plane() {
    let env = env().await;
    let pod = r#"apiVersion: v1
kind: Pod
spec:
  volumes:
  - name: shared
    emptyDir: {}
  initContainers:
  - name: init
    image: busybox
    command: [sh, -c, "echo hi > /tmp/out.txt"]
    volumeMounts:
    - name: shared
      mountPath: /tmp
"#;
    let ctx = context(&env, &[("pod.yaml", pod)], &[]).await;
    let t = Task {
        name: "gen".into(),
        kind: "Pipe".into(),
        spec: TaskSpec {
            pod: "pod.yaml".into(),
            pipe: Some(vec![PipeSpec {
                file: "/tmp/out.txt".into(),
                kind: "ConfigMap".into(),
                key: "out".into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
    };
    let err = eventually("the pipe pod to run and exec to be tried", || async {
        match pipe::run(&ctx, &t).await {
            Ok(Progress::Waiting(_)) => None,
            Ok(Progress::Done) => panic!("the embedded plane cannot exec"),
            Err(e) => Some(e),
        }
    })
    .await;
    let TaskError::Transient(m) = err else {
        panic!("expected a transient error, got {err:?}")
    };
    assert!(m.contains("the API server does not serve pods/exec"), "{m}");
    // The plane answers with a proper Status: 404 NotFound.
    assert!(m.contains("(404 NotFound: "), "{m}");
    let p = Api::<Pod>::namespaced(env.client(), "default")
        .get("inst.deploy.main.everything.gen.pipepod")
        .await
        .unwrap();
    assert_eq!(p.annotations()["kudo.dev/pipepod"], "true");
    assert_eq!(p.spec.as_ref().unwrap().containers[0].name, "waiter");
    assert_eq!(p.owner_references()[0].kind, "Instance");
}

#[tokio::test]
async fn ready_follows_the_health_of_the_instances_workloads() {
    let env = env().await;
    let never = DEPLOYMENT.replace(
        "labels: {app: web}\n    spec:",
        "labels: {app: web}\n      annotations: {sim.opkit.dev/behavior: never-ready}\n    spec:",
    );
    let mut ctx = context(
        &env,
        &[
            ("config.yaml", CONFIG),
            ("web.yaml", DEPLOYMENT),
            ("never.yaml", &never),
        ],
        &[("GREETING", "hi")],
    )
    .await;
    let c = crate::ready::ready(&env.client(), &ctx.instance)
        .await
        .unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("Unknown", "PlanInProgress")
    );
    until_done(&ctx, &task("Apply", &["config.yaml", "web.yaml"])).await;
    ctx.instance.spec.plan_execution = Default::default();
    let c = crate::ready::ready(&env.client(), &ctx.instance)
        .await
        .unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ResourcesReady")
    );
    let _ = apply::run(&ctx, &task("Apply", &["never.yaml"]))
        .await
        .unwrap();
    let c = eventually("Ready to turn False", || async {
        let c = crate::ready::ready(&env.client(), &ctx.instance)
            .await
            .unwrap();
        (c.status == "False").then_some(c)
    })
    .await;
    assert_eq!(c.reason, "ResourceNotReady");
    assert!(c.message.contains("is not healthy"), "{}", c.message);
}

fn corpus() -> Option<std::path::PathBuf> {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/kudo");
    dir.is_dir().then_some(dir)
}

#[tokio::test]
async fn every_corpus_package_object_converted_and_enhanced_is_accepted_by_the_server() {
    let Some(dir) = corpus() else {
        eprintln!(
            "\n!!!!! tasks_it: corpus not found (../shared/corpus/kudo from the project root); the corpus apply run is skipped"
        );
        return;
    };
    let env = env().await;
    let mut files: Vec<_> = std::fs::read_dir(dir.join("render-defaults"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (mut applied, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for path in files {
        let expected: Json =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let pkg = expected["operator"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // A namespace per package: packages use the same object names.
        let mut ctx = context_in(&env, &pkg, &[], &[]).await;
        ctx.variables.operator_name = pkg.clone();
        let operator: serde_yaml::Value = serde_yaml::from_str(
            &std::fs::read_to_string(
                dir.join("operators")
                    .join(&pkg)
                    .join("operator/operator.yaml"),
            )
            .unwrap(),
        )
        .unwrap();
        let tasks: Vec<Task> = serde_yaml::from_value(operator["tasks"].clone()).unwrap();
        // Objects in install order: CRDs first, so custom resources of the package find their kind.
        let mut objs = Vec::new();
        for r in expected["renders"].as_array().unwrap() {
            let Some(out) = r["output"].as_str() else {
                continue;
            };
            let template = r["template"].as_str().unwrap_or_default();
            if let Some(t) = tasks
                .iter()
                .find(|t| t.kind == "Pipe" && t.spec.pod == template)
            {
                // A Pipe task's pod: checked and completed as the task does.
                let pod = opkit_template::yaml::from_yaml(out).unwrap().to_go_json();
                let files = pipe::validate_spec(t).unwrap();
                if let Err(e) = pipe::validate_pod(&pod, files) {
                    failures.push(format!("{pkg}/{template}: {e}"));
                    continue;
                }
                let name = pipe::pipe_name(["inst", "deploy", "p", "s", &t.name], "pipepod");
                objs.push((template.to_string(), pipe::pipe_pod(pod, &name).unwrap()));
                continue;
            }
            match crate::render::parse(out) {
                Ok(o) => objs.extend(o.into_iter().map(|o| (template.to_string(), o))),
                Err(e) => failures.push(format!("{pkg}/{template}: {e}")),
            }
        }
        objs.sort_by_key(|(_, o)| o["kind"] != json!("CustomResourceDefinition"));
        for (template, mut obj) in objs {
            crate::convert::convert(&mut obj);
            let Some(placed) = crate::object::resolve(&ctx.client, &obj).await.unwrap() else {
                skipped.push(format!(
                    "{pkg}/{template}: {} {} (kind not served)",
                    obj["apiVersion"], obj["kind"]
                ));
                continue;
            };
            crate::enhance::add_labels_and_annotations(&mut obj, &apply::metadata(&ctx));
            crate::enhance::set_owner(&mut obj, &ctx.instance, placed.namespaced).unwrap();
            match crate::object::apply(&ctx.client, &placed, &obj).await {
                Ok(_) => applied += 1,
                Err(e) => failures.push(format!("{pkg}/{template}: {e}")),
            }
        }
    }
    if !skipped.is_empty() {
        eprintln!(
            "!!!!! tasks_it: objects of kinds the plane does not serve (CRDs from outside the package):\n{}",
            skipped.join("\n")
        );
    }
    assert!(
        failures.is_empty(),
        "the server refused {} objects:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(applied >= 100, "all corpus objects applied ({applied})");
}
