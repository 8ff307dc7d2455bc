//! The KUDO manager against a real control plane: plans chosen and run as KUDO runs them,
//! with operator versions written here (Dummy and KudoOperator tasks).

mod common;

use common::{Kudo, has_finalizer, tree};
use kube::ResourceExt;
use opkit_kudo::ExecutionStatus::{Complete, Error, FatalError, InProgress, NeverRun};
use opkit_testenv::eventually;

/// Deploy: a serial plan of a parallel phase and a serial phase; `update` and `scale`
/// plans; `A` triggers `scale`, `B` has no trigger, `C` triggers `tune`.
const OPERATOR: &str = r#"
tasks:
- {name: ok, kind: Dummy, spec: {done: true}}
- {name: ok2, kind: Dummy, spec: {done: true}}
parameters:
- {name: A, trigger: scale, default: "1"}
- {name: B, default: "1"}
- {name: C, trigger: tune, default: "1"}
plans:
  deploy:
    strategy: serial
    phases:
    - name: first
      strategy: parallel
      steps:
      - {name: one, tasks: [ok]}
      - {name: two, tasks: [ok, ok2]}
    - name: second
      strategy: serial
      steps:
      - {name: three, tasks: [ok]}
      - {name: four, tasks: [ok2]}
  update:
    phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]
  scale:
    phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]
  tune:
    phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]
  backup:
    phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]
"#;

#[tokio::test]
async fn deploy_runs_to_complete_with_serial_and_parallel_strategies_and_events() {
    let k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", OPERATOR).await;
    k.install("inst", &ov, &[]).await;
    let deploy = k.wait_status("inst", "deploy", Complete).await;
    assert_eq!(
        tree(&deploy),
        [
            "first=COMPLETE",
            "first.one=COMPLETE",
            "first.two=COMPLETE",
            "second=COMPLETE",
            "second.three=COMPLETE",
            "second.four=COMPLETE"
        ]
    );
    assert!(!deploy.uid.is_empty());
    assert!(deploy.last_updated_timestamp.is_some());
    k.wait_event("inst", "PlanStarted", "Execution of plan deploy started")
        .await;
    k.wait_event(
        "inst",
        "PlanFinished",
        "Execution of plan deploy finished with status COMPLETE",
    )
    .await;
    let i = k.get("inst").await;
    let st = i.status.clone().unwrap();
    // Every plan has a status; those that never ran say so.
    assert_eq!(st.plan_status["update"].status, NeverRun);
    assert_eq!(st.plan_status["backup"].status, NeverRun);
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "ResourcesReady")
    );
    // The plan ended: nothing is scheduled. The finalizer is there without a cleanup plan
    // too: uninstall removes the cluster-scoped objects the instance's tasks created.
    assert!(i.spec.plan_execution.plan_name.is_empty());
    assert!(has_finalizer(&i));
    // The accepted spec and the step times are remembered on the instance.
    let ann = i.metadata.annotations.clone().unwrap();
    assert!(ann.contains_key(opkit_kudo::SNAPSHOT_ANNOTATION));
    let times = opkit_kudo::timing::parse(
        ann.get(opkit_kudo::STEP_TIMES_ANNOTATION)
            .map(String::as_str),
    );
    let run = &times["deploy"];
    assert_eq!(run.uid, deploy.uid);
    assert!(
        run.steps["second/four"].started.is_some() && run.steps["second/four"].finished.is_some()
    );
    // Without a cleanup plan, deleting lets the instance go once its leftovers are gone.
    k.delete("inst").await;
    k.wait_gone("inst").await;
}

#[tokio::test]
async fn parameter_change_runs_its_trigger_plan_else_update() {
    let k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", OPERATOR).await;
    k.install("inst", &ov, &[("A", "1")]).await;
    k.wait_status("inst", "deploy", Complete).await;

    k.patch_spec("inst", serde_json::json!({"parameters": {"A": "2"}}))
        .await;
    let scale = k.wait_status("inst", "scale", Complete).await;
    k.wait_event("inst", "PlanStarted", "Execution of plan scale started")
        .await;

    k.patch_spec("inst", serde_json::json!({"parameters": {"B": "2"}}))
        .await;
    k.wait_status("inst", "update", Complete).await;
    let i = k.get("inst").await;
    let st = i.status.unwrap();
    assert_eq!(
        st.plan_status["scale"].uid, scale.uid,
        "scale did not run again"
    );
    assert_eq!(st.plan_status["tune"].status, NeverRun);
}

#[tokio::test]
async fn change_triggering_two_plans_is_refused_with_a_message_naming_both() {
    let k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", OPERATOR).await;
    k.install("inst", &ov, &[]).await;
    k.wait_status("inst", "deploy", Complete).await;
    k.patch_spec(
        "inst",
        serde_json::json!({"parameters": {"A": "2", "C": "2"}}),
    )
    .await;
    k.wait_event(
        "inst",
        "UpdateRefused",
        "failed to update Instance default/inst: triggering multiple plans: [[scale tune]] at once is not allowed (A triggers 'scale'; C triggers 'tune')",
    )
    .await;
    let st = k.get("inst").await.status.unwrap();
    assert_eq!(st.plan_status["scale"].status, NeverRun);
    assert_eq!(st.plan_status["tune"].status, NeverRun);
    // Undoing one of the two changes lets the other run.
    k.patch_spec("inst", serde_json::json!({"parameters": {"C": null}}))
        .await;
    k.wait_status("inst", "scale", Complete).await;
}

#[tokio::test]
async fn immutable_parameter_change_is_refused() {
    let k = Kudo::start().await;
    let ov = k
        .operator_version(
            "op",
            "0.1.0",
            r#"
tasks: [{name: ok, kind: Dummy, spec: {done: true}}]
parameters: [{name: I, immutable: true, default: "a"}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#,
        )
        .await;
    k.install("inst", &ov, &[]).await;
    let deploy = k.wait_status("inst", "deploy", Complete).await;
    k.patch_spec("inst", serde_json::json!({"parameters": {"I": "b"}}))
        .await;
    k.wait_event(
        "inst",
        "UpdateRefused",
        "parameter 'I' is immutable but was changed from 'a' to 'b'",
    )
    .await;
    assert_eq!(
        k.get("inst").await.status.unwrap().plan_status["deploy"].uid,
        deploy.uid
    );
}

#[tokio::test]
async fn operator_version_change_runs_upgrade() {
    let k = Kudo::start().await;
    let v1 = k.operator_version("op", "0.1.0", OPERATOR).await;
    k.install("inst", &v1, &[]).await;
    k.wait_status("inst", "deploy", Complete).await;
    let upgraded = format!(
        "{OPERATOR}  upgrade:\n    phases: [{{name: main, steps: [{{name: s, tasks: [ok]}}]}}]\n"
    );
    let v2 = k.operator_version("op", "0.2.0", &upgraded).await;
    k.patch_spec("inst", serde_json::json!({"operatorVersion": {"name": v2}}))
        .await;
    k.wait_status("inst", "upgrade", Complete).await;
    let st = k.get("inst").await.status.unwrap();
    assert_eq!(st.plan_status["update"].status, NeverRun);
}

#[tokio::test]
async fn manual_trigger_runs_the_plan_with_the_users_uid() {
    let k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", OPERATOR).await;
    k.install("inst", &ov, &[]).await;
    k.wait_status("inst", "deploy", Complete).await;
    k.patch_spec(
        "inst",
        serde_json::json!({"planExecution": {"planName": "backup", "uid": "11111111-2222-4333-8444-555555555555"}}),
    )
    .await;
    let backup = k.wait_status("inst", "backup", Complete).await;
    assert_eq!(backup.uid, "11111111-2222-4333-8444-555555555555");
    eventually("the plan execution cleared", || async {
        k.get("inst").await.spec.plan_execution.plan_name.is_empty()
    })
    .await;
    // A plan that does not exist is refused.
    k.patch_spec(
        "inst",
        serde_json::json!({"planExecution": {"planName": "nope", "uid": "u-2"}}),
    )
    .await;
    k.wait_event("inst", "UpdateRefused", "plan nope does not exist")
        .await;
}

/// A plan stuck on a task that is never done.
const STUCK: &str = r#"
tasks:
- {name: wait, kind: Dummy, spec: {done: false}}
- {name: ok, kind: Dummy, spec: {done: true}}
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [wait]}]}]}
  backup: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#;

#[tokio::test]
async fn abandon_ends_a_stuck_plan_and_the_instance_takes_a_new_one() {
    let k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", STUCK).await;
    k.install("inst", &ov, &[]).await;
    let deploy = k.wait_status("inst", "deploy", InProgress).await;
    // Another plan is refused while deploy runs, with KUDO's message.
    k.patch_spec(
        "inst",
        serde_json::json!({"planExecution": {"planName": "backup", "uid": "b-1"}}),
    )
    .await;
    k.wait_event(
        "inst",
        "UpdateRefused",
        "overriding currently scheduled (or running) plan 'deploy' with 'backup' is not supported",
    )
    .await;
    k.annotate("inst", opkit_kudo::ABANDON_ANNOTATION, &deploy.uid)
        .await;
    let ended = k.wait_status("inst", "deploy", FatalError).await;
    assert_eq!(ended.message, "plan abandoned by user");
    assert_eq!(ended.uid, deploy.uid);
    k.wait_event(
        "inst",
        "PlanAbandoned",
        "Execution of plan deploy abandoned by user",
    )
    .await;
    // The refused request, still in the spec, runs once deploy has ended.
    let backup = k.wait_status("inst", "backup", Complete).await;
    assert_eq!(backup.uid, "b-1");
    let i = k.get("inst").await;
    assert!(
        !i.annotations().contains_key(opkit_kudo::ABANDON_ANNOTATION),
        "the abandon annotation is removed"
    );
}

#[tokio::test]
async fn fatal_dummy_ends_the_plan_in_fatal_error_and_retry_reruns_it() {
    let k = Kudo::start().await;
    let failing = r#"
tasks: [{name: boom, kind: Dummy, spec: {wantErr: true, fatal: true}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [boom]}]}]}
"#;
    let ov = k.operator_version("op", "0.1.0", failing).await;
    k.install("inst", &ov, &[]).await;
    let failed = k.wait_status("inst", "deploy", FatalError).await;
    let msg = "fatal error: default/inst failed in deploy.main.s.boom: dummy error";
    assert_eq!(failed.message, msg);
    assert_eq!(failed.phases[0].steps[0].status, FatalError);
    assert_eq!(failed.phases[0].steps[0].message, msg);
    k.wait_event(
        "inst",
        "PlanFinished",
        "Execution of plan deploy finished with status FATAL_ERROR",
    )
    .await;
    k.wait_event("inst", "PlanFailed", msg).await;
    let i = k.get("inst").await;
    let ready = i
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("Unknown", "PlanInFatalError")
    );
    // Fix the package, then `plan retry`: a manual trigger of the failed plan, new uid.
    k.edit_operator_version(
        &ov,
        r#"{tasks: [{name: boom, kind: Dummy, spec: {done: true}}]}"#,
    )
    .await;
    k.patch_spec(
        "inst",
        serde_json::json!({"planExecution": {"planName": "deploy", "uid": "retry-1"}}),
    )
    .await;
    let retried = k.wait_status("inst", "deploy", Complete).await;
    assert_eq!(retried.uid, "retry-1");
    k.wait_event(
        "inst",
        "PlanFinished",
        "Execution of plan deploy finished with status COMPLETE",
    )
    .await;
}

#[tokio::test]
async fn transient_dummy_error_is_error_with_kudos_message_and_retried_in_the_same_run() {
    let k = Kudo::start().await;
    let flaky = r#"
tasks: [{name: flaky, kind: Dummy, spec: {wantErr: true}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [flaky]}]}]}
"#;
    let ov = k.operator_version("op", "0.1.0", flaky).await;
    k.install("inst", &ov, &[]).await;
    let erring = k.wait_status("inst", "deploy", Error).await;
    let msg = "A transient error when executing task deploy.main.s.flaky. Will retry. dummy error";
    assert_eq!(erring.phases[0].steps[0].status, Error);
    assert_eq!(erring.phases[0].steps[0].message, msg);
    assert_eq!(erring.message, msg);
    k.edit_operator_version(
        &ov,
        r#"{tasks: [{name: flaky, kind: Dummy, spec: {done: true}}]}"#,
    )
    .await;
    let done = k.wait_status("inst", "deploy", Complete).await;
    assert_eq!(done.uid, erring.uid, "the same run went on");
}

#[tokio::test]
async fn deletion_runs_the_cleanup_plan_then_the_instance_goes() {
    let k = Kudo::start().await;
    let ov = k
        .operator_version(
            "op",
            "0.1.0",
            r#"
tasks: [{name: ok, kind: Dummy, spec: {done: true}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
  cleanup: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#,
        )
        .await;
    k.install("inst", &ov, &[]).await;
    k.wait_status("inst", "deploy", Complete).await;
    assert!(
        has_finalizer(&k.get("inst").await),
        "the cleanup finalizer is on"
    );
    k.delete("inst").await;
    k.wait_gone("inst").await;
    k.wait_event(
        "inst",
        "PlanFinished",
        "Execution of plan cleanup finished with status COMPLETE",
    )
    .await;
}

#[tokio::test]
async fn kudo_operator_tasks_build_a_dependency_tree_that_completes() {
    let k = Kudo::start().await;
    let grandchild = k
        .operator_version(
            "grandchild",
            "1.0.0",
            r#"
tasks: [{name: ok, kind: Dummy, spec: {done: true}}]
parameters: [{name: GREETING, default: "none"}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#,
        )
        .await;
    // An older version: the task names no version, so the newest is taken.
    k.operator_version(
        "grandchild",
        "0.9.0",
        r#"
tasks: [{name: bad, kind: Dummy, spec: {wantErr: true, fatal: true}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [bad]}]}]}
"#,
    )
    .await;
    k.operator_version(
        "child",
        "1.0.0",
        r#"
tasks:
- {name: dep, kind: KudoOperator, spec: {package: grandchild, parameterFile: gc-params.yaml}}
templates:
  gc-params.yaml: |
    GREETING: hello {{ .Params.WHO }} from {{ .Name }}
parameters: [{name: WHO, default: "nobody"}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [dep]}]}]}
"#,
    )
    .await;
    let parent = k
        .operator_version(
            "parent",
            "1.0.0",
            r#"
tasks:
- {name: dep, kind: KudoOperator, spec: {package: child, operatorVersion: "1.0.0", parameterFile: child-params.yaml}}
templates:
  child-params.yaml: |
    WHO: {{ .Params.NAME }}
parameters: [{name: NAME, default: "x"}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [dep]}]}]}
"#,
        )
        .await;
    k.install("top", &parent, &[("NAME", "world")]).await;
    k.wait_status("top", "deploy", Complete).await;
    let child = k.get("top-child").await;
    assert_eq!(child.spec.parameters["WHO"], "world");
    assert_eq!(child.labels()["kudo.dev/operator"], "child");
    let owner = &child.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Instance", "top")
    );
    let gc = k.get("top-child-grandchild").await;
    assert_eq!(
        gc.spec.operator_version.name.as_deref(),
        Some(grandchild.as_str())
    );
    assert_eq!(gc.spec.parameters["GREETING"], "hello world from top-child");
    assert_eq!(gc.status.unwrap().plan_status["deploy"].status, Complete);
}

#[tokio::test]
async fn kudo_operator_dependency_cycle_is_fatal() {
    let k = Kudo::start().await;
    k.operator_version(
        "b",
        "1.0.0",
        r#"
tasks: [{name: dep, kind: KudoOperator, spec: {package: a, operatorVersion: "1.0.0"}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [dep]}]}]}
"#,
    )
    .await;
    let a = k
        .operator_version(
            "a",
            "1.0.0",
            r#"
tasks: [{name: dep, kind: KudoOperator, spec: {package: b, operatorVersion: "1.0.0"}}]
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [dep]}]}]}
"#,
        )
        .await;
    k.install("top", &a, &[]).await;
    let failed = k.wait_status("top-b", "deploy", FatalError).await;
    assert!(
        failed
            .message
            .contains("cyclic package dependency: a -> b -> a"),
        "{}",
        failed.message
    );
    // The parent fails with its child.
    let top = k.wait_status("top", "deploy", FatalError).await;
    assert!(
        top.message
            .contains("instance default/top-b plan deploy failed"),
        "{}",
        top.message
    );
}

#[tokio::test]
async fn manager_stopped_mid_plan_resumes_the_same_run_when_started_again() {
    let mut k = Kudo::start().await;
    let ov = k.operator_version("op", "0.1.0", STUCK).await;
    k.install("inst", &ov, &[]).await;
    let running = k.wait_status("inst", "deploy", InProgress).await;
    k.stop_manager().await;
    // While no manager runs, the package is fixed.
    k.edit_operator_version(&ov, r#"{tasks: [{name: wait, kind: Dummy, spec: {done: true}}, {name: ok, kind: Dummy, spec: {done: true}}]}"#)
        .await;
    k.start_manager().await;
    let done = k.wait_status("inst", "deploy", Complete).await;
    assert_eq!(done.uid, running.uid, "the same run resumed");
    let started = k
        .events("inst")
        .await
        .into_iter()
        .filter(|(_, reason, _)| reason == "PlanStarted")
        .count();
    assert_eq!(started, 1, "the plan started once");
}

/// Parameters the admission webhook guards: `A` and `C` trigger different plans, `I` is
/// immutable, `N` an integer.
const GUARDED: &str = r#"
tasks:
- {name: ok, kind: Dummy, spec: {done: true}}
parameters:
- {name: A, trigger: scale, default: "1"}
- {name: C, trigger: tune, default: "1"}
- {name: I, immutable: true, default: "a"}
- {name: N, value-type: integer, default: "1"}
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
  scale: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
  tune: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#;

/// A deploy plan that never ends, and a parameter triggering another plan.
const BUSY: &str = r#"
tasks:
- {name: wait, kind: Dummy, spec: {done: false}}
- {name: ok, kind: Dummy, spec: {done: true}}
parameters:
- {name: A, trigger: scale, default: "1"}
plans:
  deploy: {phases: [{name: main, steps: [{name: s, tasks: [wait]}]}]}
  scale: {phases: [{name: main, steps: [{name: s, tasks: [ok]}]}]}
"#;

/// The API server's message for a write the webhook refused (fails the test otherwise).
fn refusal<T: std::fmt::Debug>(answer: Result<T, kube::Error>) -> String {
    match answer {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected the API server to refuse the write, got {other:?}"),
    }
}

const DENIED: &str = "admission webhook \"instance-validation.kudo.dev\" denied the request: ";

/// Waits until the webhook judges writes to `name` with its operator version (the manager's
/// cache holds it): a dry run of `spec` is refused with `message`.
async fn wait_refused(k: &Kudo, name: &str, spec: serde_json::Value, message: &str) {
    eventually(&format!("the webhook refuses {spec} on {name}"), || async {
        matches!(
            k.try_patch_spec(name, spec.clone(), true).await,
            Err(kube::Error::Api(s)) if s.message == format!("{DENIED}{message}")
        )
    })
    .await;
}

#[tokio::test]
async fn webhook_refuses_what_the_manager_would_at_write_time_and_keeps_its_certificate() {
    let mut k = Kudo::start_with_webhook().await;
    let ov = k.operator_version("op", "0.1.0", GUARDED).await;
    k.install("inst", &ov, &[]).await;
    let deploy = k.wait_status("inst", "deploy", Complete).await;

    // Two parameters triggering different plans: refused by the API server, nothing stored.
    let two = serde_json::json!({"parameters": {"A": "2", "C": "2"}});
    let message = "failed to update Instance default/inst: triggering multiple plans: [[scale tune]] at once is not allowed (A triggers 'scale'; C triggers 'tune')";
    wait_refused(&k, "inst", two.clone(), message).await;
    assert_eq!(
        refusal(k.try_patch_spec("inst", two, false).await),
        format!("{DENIED}{message}")
    );
    let stored = k.get("inst").await;
    assert!(stored.spec.parameters.is_empty(), "{:?}", stored.spec);
    // An immutable parameter, a value of the wrong type, a plan that does not exist.
    for (spec, message) in [
        (
            serde_json::json!({"parameters": {"I": "b"}}),
            "failed to check immutable parameters for Instance default/inst: parameter 'I' is immutable but was changed from 'a' to 'b'",
        ),
        (
            serde_json::json!({"parameters": {"N": "three"}}),
            "failed to validate parameters for Instance default/inst: parameter \"N\" has an invalid value \"three\": type is \"integer\" but format of \"three\" is invalid: invalid digit found in string (expected a whole number)",
        ),
        (
            serde_json::json!({"planExecution": {"planName": "nope", "uid": "u-1"}}),
            "plan nope does not exist",
        ),
    ] {
        assert_eq!(
            refusal(k.try_patch_spec("inst", spec, false).await),
            format!("{DENIED}{message}")
        );
    }
    assert_eq!(
        k.get("inst").await.spec,
        stored.spec,
        "nothing refused was stored"
    );
    assert_eq!(
        refusal(k.try_install("bad", &ov, &[("N", "x")]).await),
        format!(
            "{DENIED}failed to create an Instance default/bad: parameters are not valid: parameter \"N\" has an invalid value \"x\": type is \"integer\" but format of \"x\" is invalid: invalid digit found in string (expected a whole number)"
        )
    );

    // A change the manager takes is accepted and runs its plan.
    k.patch_spec("inst", serde_json::json!({"parameters": {"A": "2"}}))
        .await;
    k.wait_status("inst", "scale", Complete).await;

    // While a plan runs, a change triggering another one is refused (KUDO's rule).
    let busy = k.operator_version("busy", "0.1.0", BUSY).await;
    k.install("busy", &busy, &[]).await;
    k.wait_status("busy", "deploy", InProgress).await;
    wait_refused(
        &k,
        "busy",
        serde_json::json!({"parameters": {"A": "2"}}),
        "failed to update Instance default/busy: plan 'deploy' is scheduled (or running) and an update would trigger a different plan 'scale'",
    )
    .await;

    // Restarted, the manager serves the certificate it keeps in its Secret.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(k.client(), common::NS);
    let configs: kube::Api<
        k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
    > = kube::Api::all(k.client());
    let cert = |s: k8s_openapi::api::core::v1::Secret| s.data.unwrap()["tls.crt"].clone();
    let ca_bundle =
        |c: k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration| {
            c.webhooks.unwrap()[0].client_config.ca_bundle.clone()
        };
    let secret_name = format!("{}-cert", common::WEBHOOK_SERVICE);
    let before = cert(secrets.get(&secret_name).await.unwrap());
    let bundle = ca_bundle(
        configs
            .get(opkit_kudo::admission::CONFIGURATION_NAME)
            .await
            .unwrap(),
    );
    assert!(bundle.is_some(), "the CA is published");
    k.stop_manager().await;
    k.start_manager().await;
    assert_eq!(cert(secrets.get(&secret_name).await.unwrap()), before);
    assert_eq!(
        ca_bundle(
            configs
                .get(opkit_kudo::admission::CONFIGURATION_NAME)
                .await
                .unwrap()
        ),
        bundle
    );
    wait_refused(
        &k,
        "inst",
        serde_json::json!({"parameters": {"I": "c"}}),
        "failed to check immutable parameters for Instance default/inst: parameter 'I' is immutable but was changed from 'a' to 'c'",
    )
    .await;
    k.patch_spec("inst", serde_json::json!({"parameters": {"C": "2"}}))
        .await;
    k.wait_status("inst", "tune", Complete).await;
    // The manager never saw a refused change: no deferred refusal was reported.
    let refused = k
        .events("inst")
        .await
        .into_iter()
        .filter(|(_, reason, _)| reason == "UpdateRefused")
        .count();
    assert_eq!(refused, 0);
    assert_eq!(
        k.get("inst").await.status.unwrap().plan_status["deploy"].uid,
        deploy.uid
    );
}
