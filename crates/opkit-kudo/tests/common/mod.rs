//! Shared harness of the KUDO manager's tests: a real control plane (`TestEnv`) with KUDO's
//! CRDs, the manager running in-process, operators written in the test, and waits on
//! positive signals (`eventually`).
#![allow(dead_code)]

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use opkit_kudo::api::{Operator, OperatorSpec};
use opkit_kudo::{ExecutionStatus, Instance, OperatorVersion, PlanStatus};
use opkit_testenv::{TestEnv, eventually};

pub const NS: &str = "default";

/// The Service the API server calls the manager's admission webhook through.
pub const WEBHOOK_SERVICE: &str = "kudo-manager-webhook";

/// A control plane with KUDO's CRDs and a running manager.
pub struct Kudo {
    pub env: TestEnv,
    pub manager: Option<opkit::Running>,
    /// The manager serves its admission webhook.
    pub webhook: bool,
}

impl Kudo {
    pub async fn start() -> Kudo {
        Kudo::start_with(false).await
    }

    /// A manager that also serves KUDO's instance admission webhook, with self-managed
    /// certificates, behind [`WEBHOOK_SERVICE`] routed to its local port.
    pub async fn start_with_webhook() -> Kudo {
        Kudo::start_with(true).await
    }

    async fn start_with(webhook: bool) -> Kudo {
        let env = TestEnv::start()
            .await
            .expect("the test control plane starts");
        for crd in opkit_kudo::api::crds() {
            env.install_crd(crd).await.expect("KUDO's CRDs install");
        }
        let mut k = Kudo {
            env,
            manager: None,
            webhook,
        };
        k.start_manager().await;
        k
    }

    pub async fn start_manager(&mut self) {
        let mut options = opkit_kudo::ManagerOptions::default();
        if self.webhook {
            let mut webhook = opkit_kudo::WebhookOptions::new(WEBHOOK_SERVICE, NS);
            webhook.addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            options.webhook = Some(webhook);
        }
        let running = opkit_kudo::manager::start(self.client(), options)
            .await
            .expect("the manager starts");
        if let Some(addr) = running.webhook_addr() {
            opkit_testenv::webhooks::route_service(
                &self.client(),
                NS,
                WEBHOOK_SERVICE,
                addr.port(),
            )
            .await
            .expect("the webhook Service is routed to the manager");
        }
        self.manager = Some(running);
    }

    pub async fn stop_manager(&mut self) {
        if let Some(m) = self.manager.take() {
            m.shutdown().await.expect("the manager stops cleanly");
        }
    }

    pub fn client(&self) -> Client {
        self.env.client()
    }

    pub fn instances(&self) -> Api<Instance> {
        Api::namespaced(self.client(), NS)
    }

    pub fn operator_versions(&self) -> Api<OperatorVersion> {
        Api::namespaced(self.client(), NS)
    }

    /// Creates the Operator (if missing) and the OperatorVersion read from `yaml` (its
    /// `metadata.name` and `spec.operator.name` are filled in from `operator`/`version`).
    pub async fn operator_version(&self, operator: &str, version: &str, yaml: &str) -> String {
        let ops: Api<Operator> = Api::namespaced(self.client(), NS);
        if ops.get_opt(operator).await.unwrap().is_none() {
            ops.create(
                &PostParams::default(),
                &Operator::new(operator, OperatorSpec::default()),
            )
            .await
            .unwrap();
        }
        let spec = serde_yaml::from_str(yaml).expect("the test's OperatorVersion spec reads");
        let name = opkit_kudo::api::operator_version_name(operator, "", version);
        let mut ov = OperatorVersion::new(&name, spec);
        ov.spec.operator.name = Some(operator.into());
        ov.spec.operator.kind = Some("Operator".into());
        ov.spec.version = version.into();
        self.operator_versions()
            .create(&PostParams::default(), &ov)
            .await
            .expect("the OperatorVersion is created");
        name
    }

    /// Replaces the spec of an OperatorVersion (e.g. to fix a failing task).
    pub async fn edit_operator_version(&self, name: &str, yaml: &str) {
        let spec: serde_json::Value = serde_yaml::from_str(yaml).unwrap();
        self.operator_versions()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": spec})),
            )
            .await
            .expect("the OperatorVersion is patched");
    }

    /// Creates an instance of `ov` with `params`, as the CLI does.
    pub async fn install(&self, name: &str, ov: &str, params: &[(&str, &str)]) -> Instance {
        self.try_install(name, ov, params)
            .await
            .expect("the Instance is created")
    }

    /// [`Kudo::install`], returning the API's answer.
    pub async fn try_install(
        &self,
        name: &str,
        ov: &str,
        params: &[(&str, &str)],
    ) -> Result<Instance, kube::Error> {
        let spec = serde_json::json!({
            "operatorVersion": {"name": ov},
            "parameters": params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<std::collections::BTreeMap<_, _>>(),
        });
        let inst: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }))
        .unwrap();
        self.instances().create(&PostParams::default(), &inst).await
    }

    /// Merge-patches the instance's spec (`kubectl kudo update`, `plan trigger`, upgrade).
    pub async fn patch_spec(&self, name: &str, spec: serde_json::Value) {
        self.try_patch_spec(name, spec, false)
            .await
            .expect("the Instance is patched");
    }

    /// [`Kudo::patch_spec`], returning the API's answer (`dry_run`: nothing is stored).
    pub async fn try_patch_spec(
        &self,
        name: &str,
        spec: serde_json::Value,
        dry_run: bool,
    ) -> Result<Instance, kube::Error> {
        let params = PatchParams {
            dry_run,
            ..Default::default()
        };
        self.instances()
            .patch(
                name,
                &params,
                &Patch::Merge(serde_json::json!({"spec": spec})),
            )
            .await
    }

    pub async fn annotate(&self, name: &str, key: &str, value: &str) {
        self.instances()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"metadata": {"annotations": {key: value}}})),
            )
            .await
            .expect("the Instance is annotated");
    }

    pub async fn delete(&self, name: &str) {
        self.instances()
            .delete(name, &DeleteParams::default())
            .await
            .expect("the Instance is deleted");
    }

    pub async fn get(&self, name: &str) -> Instance {
        self.instances()
            .get(name)
            .await
            .expect("the Instance exists")
    }

    /// The status of `plan` on `name`, once `check` accepts it.
    pub async fn wait_plan(
        &self,
        name: &str,
        plan: &str,
        what: &str,
        check: impl Fn(&PlanStatus) -> bool,
    ) -> PlanStatus {
        let api = self.instances();
        eventually(&format!("{name}: plan {plan} {what}"), || async {
            let i = api.get_opt(name).await.ok().flatten()?;
            let ps = i.status?.plan_status.get(plan)?.clone();
            check(&ps).then_some(ps)
        })
        .await
    }

    /// Waits for `plan` on `name` to reach `status`.
    pub async fn wait_status(&self, name: &str, plan: &str, status: ExecutionStatus) -> PlanStatus {
        self.wait_plan(name, plan, &format!("is {status}"), |p| p.status == status)
            .await
    }

    /// Waits for a run of `plan` other than `not_uid` to reach `status`.
    pub async fn wait_new_run(
        &self,
        name: &str,
        plan: &str,
        not_uid: &str,
        status: ExecutionStatus,
    ) -> PlanStatus {
        self.wait_plan(name, plan, &format!("runs again to {status}"), |p| {
            p.status == status && p.uid != not_uid
        })
        .await
    }

    /// The events about instance `name`: (type, reason, note).
    pub async fn events(&self, name: &str) -> Vec<(String, String, String)> {
        let api: Api<Event> = Api::namespaced(self.client(), NS);
        let list = api.list(&Default::default()).await.expect("events list");
        list.items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .map(|e| {
                (
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.note.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Waits for an event about `name` with `reason` whose note contains `note`.
    pub async fn wait_event(&self, name: &str, reason: &str, note: &str) {
        eventually(&format!("{name}: event {reason} '{note}'"), || async {
            self.events(name)
                .await
                .iter()
                .any(|(_, r, n)| r == reason && n.contains(note))
        })
        .await
    }

    /// Waits until the instance is gone.
    pub async fn wait_gone(&self, name: &str) {
        let api = self.instances();
        eventually(&format!("{name} gone"), || async {
            matches!(api.get_opt(name).await, Ok(None))
        })
        .await
    }
}

/// The statuses of every phase and step, `phase=S`, `phase.step=S`.
pub fn tree(ps: &PlanStatus) -> Vec<String> {
    let mut v = Vec::new();
    for p in &ps.phases {
        v.push(format!("{}={}", p.name, p.status));
        for s in &p.steps {
            v.push(format!("{}.{}={}", p.name, s.name, s.status));
        }
    }
    v
}

pub fn has_finalizer(i: &Instance) -> bool {
    i.finalizers()
        .iter()
        .any(|f| f == "kudo.dev.instance.cleanup")
}
