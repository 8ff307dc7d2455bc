//! The Memcached operator of the operator-sdk tutorial, built on opkit.
//!
//! A `Memcached` (`cache.example.com/v1alpha1`) asks for `size` memcached servers. The
//! operator keeps one Deployment of that name running `memcached:1.6` with `size` replicas,
//! server-side applied with a controller owner reference and the controller's field manager,
//! and reports what the Deployment reports as three conditions on the Memcached:
//!
//! - `Available`: all `size` replicas of the current spec are available;
//! - `Progressing`: a scale or rollout is under way (`False` once it completed, or once the
//!   Deployment's progress deadline passed);
//! - `Degraded`: the Deployment cannot get there — its progress deadline passed
//!   (`ProgressDeadlineExceeded`) or its ReplicaSet cannot create pods (`ReplicaFailure`);
//!   the message is the Deployment's.
//!
//! The controller [`owns`](opkit::Controller::owns_metadata) Deployments, so a Deployment's
//! status changes re-reconcile its Memcached, and someone scaling, editing or deleting the
//! Deployment is undone at once: the forced apply takes back every field the operator sets.
//! It caches only the Deployments' metadata: the reconcile reads the status from the
//! Deployment its apply returns, which is fresher than any cache.
//!
//! Deletion needs no finalizer: everything the operator creates lives in the cluster and
//! carries an owner reference, so the garbage collector deletes the Deployment (and through
//! it the ReplicaSets and pods) when the Memcached goes. A finalizer would add a write per
//! object and block deletion whenever the operator is down, for nothing to clean up.
//!
//! Events mark transitions only — `Available` when the Memcached becomes available, a
//! `Warning` when it becomes degraded — with notes that stay true when an event repeats (a
//! repeated event keeps its first note, see [`opkit::events`]); the figures ("2/3 replicas
//! available") live in the conditions' messages.
//!
//! [`app`] is the operator's command line (`opkit::App` with the [`Flags`] below); the binary
//! is `memcached::app().main()`.
//!
//! [`sync`] is the reconcile's work as a plain function of a client, so the benchmark runs the
//! very same work under kube-runtime's `Controller` to compare the runtimes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Client;
use opkit::prelude::*;
use opkit::{App, ControllerDef, ManagerBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The controller's name: its field manager, event reporter and metrics label.
pub const CONTROLLER_NAME: &str = "memcached";
/// The operator's name: its leader-election Lease, and the ClusterRole `print-rbac` prints and
/// its service account is bound to.
pub const NAME: &str = "memcached-operator";
/// The ClusterRole `print-rbac` prints and the operator's service account is bound to.
pub const CLUSTER_ROLE: &str = NAME;
/// The leader-election Lease.
pub const LEASE_NAME: &str = NAME;
/// The image the tutorial runs.
pub const DEFAULT_IMAGE: &str = "memcached:1.6";
/// Condition: all replicas available.
pub const AVAILABLE: &str = "Available";
/// Condition: a scale or rollout is under way.
pub const PROGRESSING: &str = "Progressing";
/// Condition: the Deployment cannot reach the desired state.
pub const DEGRADED: &str = "Degraded";

/// A memcached cluster of `size` servers.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    namespaced,
    status = "MemcachedStatus",
    printcolumn = r#"{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}"#,
    printcolumn = r#"{"name": "Available", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
pub struct MemcachedSpec {
    /// How many memcached servers (0 to 100).
    #[schemars(range(min = 0, max = 100))]
    pub size: i32,
}

/// What the operator reports about a Memcached.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct MemcachedStatus {
    /// `Available`, `Progressing` and `Degraded`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Operator-wide settings (flags of the binary).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The memcached image (the tutorial's `MEMCACHED_IMAGE`).
    pub image: String,
    /// Annotations added to the pod template of every Deployment (e.g. the simulated
    /// cluster's failure injection, `sim.opkit.dev/behavior: never-ready`).
    pub pod_annotations: BTreeMap<String, String>,
    /// The Deployments' `progressDeadlineSeconds` (the API server's default, 600, if unset):
    /// how long a rollout may make no progress before the Memcached is `Degraded`.
    pub progress_deadline_seconds: Option<i32>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            image: DEFAULT_IMAGE.to_string(),
            pod_annotations: BTreeMap::new(),
            progress_deadline_seconds: None,
        }
    }
}

/// The operator's own flags (next to `App`'s standard ones).
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Flags {
    /// The memcached image.
    #[arg(long, env = "MEMCACHED_IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// An annotation for the pods' template, `KEY=VALUE` (repeatable).
    #[arg(long = "pod-annotation", value_name = "KEY=VALUE", value_parser = parse_annotation)]
    pub pod_annotations: Vec<(String, String)>,
    /// The Deployments' `progressDeadlineSeconds` (the cluster's default, 600, if unset).
    #[arg(long, value_name = "SECONDS")]
    pub progress_deadline_seconds: Option<i32>,
}

impl Flags {
    /// The settings these flags ask for.
    pub fn settings(&self) -> Settings {
        Settings {
            image: self.image.clone(),
            pod_annotations: self.pod_annotations.iter().cloned().collect(),
            progress_deadline_seconds: self.progress_deadline_seconds,
        }
    }
}

fn parse_annotation(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// The operator's command line: `run` (the default), `print-crds`, `print-rbac`, with
/// [`Flags`]; see [`opkit::app`].
pub fn app() -> App<Flags> {
    App::new(NAME)
        .crd::<Memcached>()
        .flags::<Flags>()
        .controller(|flags: &Flags| controller(flags.settings()))
}

/// Why a reconcile failed (it is retried with the key's backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Applying the Deployment or writing the status failed.
    #[error(transparent)]
    Opkit(#[from] opkit::Error),
}

/// The labels of a Memcached's Deployment and pods (also the Deployment's selector).
pub fn labels(memcached: &Memcached) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "memcached".to_string(),
        ),
        (
            "app.kubernetes.io/instance".to_string(),
            memcached.name_any(),
        ),
        (
            "app.kubernetes.io/managed-by".to_string(),
            CLUSTER_ROLE.to_string(),
        ),
    ])
}

/// The desired Deployment for `memcached` (owner reference added when applied): the
/// tutorial's container (`memcached -m=64 -o modern -v`, port 11211, restricted security
/// context) with `size` replicas.
pub fn deployment(memcached: &Memcached, settings: &Settings) -> Deployment {
    let labels = labels(memcached);
    let annotations =
        (!settings.pod_annotations.is_empty()).then(|| settings.pod_annotations.clone());
    Deployment {
        metadata: ObjectMeta {
            name: Some(memcached.name_any()),
            namespace: memcached.namespace(),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(memcached.spec.size),
            progress_deadline_seconds: settings.progress_deadline_seconds,
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations,
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_string(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![Container {
                        name: "memcached".to_string(),
                        image: Some(settings.image.clone()),
                        image_pull_policy: Some("IfNotPresent".to_string()),
                        command: Some(
                            ["memcached", "-m=64", "-o", "modern", "-v"]
                                .map(String::from)
                                .to_vec(),
                        ),
                        ports: Some(vec![ContainerPort {
                            container_port: 11211,
                            name: Some("memcached".to_string()),
                            ..ContainerPort::default()
                        }]),
                        security_context: Some(SecurityContext {
                            run_as_non_root: Some(true),
                            run_as_user: Some(1001),
                            allow_privilege_escalation: Some(false),
                            capabilities: Some(Capabilities {
                                drop: Some(vec!["ALL".to_string()]),
                                ..Capabilities::default()
                            }),
                            ..SecurityContext::default()
                        }),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

fn deployment_condition<'a>(
    deployment: &'a Deployment,
    type_: &str,
) -> Option<&'a k8s_openapi::api::apps::v1::DeploymentCondition> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The Memcached's conditions as `deployment` (the stored Deployment, with its status)
/// implies, merged into `current` (so `lastTransitionTime` only moves when a status flips).
pub fn conditions_for(
    memcached: &Memcached,
    deployment: &Deployment,
    current: &[Condition],
) -> Vec<Condition> {
    let size = memcached.spec.size;
    let generation = memcached.metadata.generation;
    let status = deployment.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0)
        >= deployment.metadata.generation.unwrap_or(0)
        && status.observed_generation.is_some();
    let available = status.available_replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let deadline = deployment_condition(deployment, "Progressing")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
    let replica_failure =
        deployment_condition(deployment, "ReplicaFailure").filter(|c| c.status == "True");
    let complete = observed && updated == size && available == size && total == size;

    let mut out = current.to_vec();
    let counts = format!("{available}/{size} replicas available");
    let is_available = observed && available >= size;
    conditions::set(
        &mut out,
        conditions::of(AVAILABLE, is_available)
            .reason(if is_available {
                "ReplicasAvailable"
            } else {
                "ReplicasUnavailable"
            })
            .message(counts.clone())
            .observed_generation(generation),
    );
    let progress = format!("{updated}/{size} replicas updated, {counts}");
    conditions::set(
        &mut out,
        match (complete, deadline) {
            (true, _) => conditions::of(PROGRESSING, false)
                .reason("RolloutComplete")
                .message(progress),
            (false, Some(c)) => conditions::of(PROGRESSING, false)
                .reason("ProgressDeadlineExceeded")
                .message(c.message.clone().unwrap_or(progress)),
            (false, None) => conditions::of(PROGRESSING, true)
                .reason("RollingOut")
                .message(progress),
        }
        .observed_generation(generation),
    );
    let degraded = match (deadline, replica_failure) {
        (Some(c), _) => Some(("ProgressDeadlineExceeded", c.message.clone())),
        (None, Some(c)) => Some(("ReplicaFailure", c.message.clone())),
        (None, None) => None,
    };
    conditions::set(
        &mut out,
        match degraded {
            Some((reason, message)) => {
                conditions::of(DEGRADED, true)
                    .reason(reason)
                    .message(format!(
                        "{}; {counts}",
                        message.unwrap_or_else(|| "the Deployment reports a failure".to_string())
                    ))
            }
            None => conditions::of(DEGRADED, false)
                .reason("AsExpected")
                .message("no failure reported"),
        }
        .observed_generation(generation),
    );
    out
}

/// What one [`sync`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Synced {
    /// The conditions now on the Memcached.
    pub conditions: Vec<Condition>,
    /// Whether the status was written (false when unchanged, or when the Memcached turned
    /// out to be gone already).
    pub status_written: bool,
    /// Events worth recording about the transition (see [`notices`]).
    pub notices: Vec<Notice>,
}

/// An event to record about a Memcached.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// The event's reason.
    pub reason: String,
    /// The event's note.
    pub note: String,
}

/// The events a change of conditions from `before` to `after` deserves: a `Warning` (with
/// the `Degraded` condition's reason) when the Memcached becomes degraded, a `Normal`
/// `Available` when it becomes available. Unchanged conditions deserve none, so a reconcile
/// that changes nothing records nothing. The notes carry no figures: a repeated event keeps
/// its first note, and the figures are in the conditions.
pub fn notices(before: &[Condition], after: &[Condition]) -> Vec<Notice> {
    let mut out = Vec::new();
    if !conditions::is_true(before, DEGRADED)
        && let Some(c) = conditions::find(after, DEGRADED).filter(|c| c.status == conditions::TRUE)
    {
        out.push(Notice {
            type_: EventType::Warning,
            reason: c.reason.clone(),
            note: "the Deployment cannot reach the requested size; see the Degraded condition"
                .to_string(),
        });
    }
    if !conditions::is_true(before, AVAILABLE) && conditions::is_true(after, AVAILABLE) {
        out.push(Notice {
            type_: EventType::Normal,
            reason: AVAILABLE.to_string(),
            note: "all requested replicas are available".to_string(),
        });
    }
    out
}

/// The reconcile's work on `memcached`: server-side apply its Deployment as `field_manager`,
/// then write the conditions the Deployment's status implies (only if they changed). The
/// caller records the returned [`Synced::notices`] as events.
pub async fn sync(
    client: &Client,
    field_manager: &str,
    memcached: &Memcached,
    settings: &Settings,
) -> Result<Synced, Error> {
    let stored = opkit::apply::apply_owned(
        client,
        field_manager,
        memcached,
        deployment(memcached, settings),
    )
    .await?;
    let current = memcached
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let conditions = conditions_for(memcached, &stored, current);
    let mut status_written = conditions != current;
    if status_written {
        let status = MemcachedStatus {
            conditions: conditions.clone(),
        };
        match opkit::apply::patch_status(client, memcached, &status).await {
            Ok(_) => {}
            // A stale cached copy of a Memcached deleted meanwhile: the garbage collector
            // removes the Deployment just applied (its owner's UID no longer exists).
            Err(e) if e.is_not_found() => status_written = false,
            Err(e) => return Err(e.into()),
        }
    }
    let notices = if status_written {
        notices(current, &conditions)
    } else {
        Vec::new()
    };
    Ok(Synced {
        conditions,
        status_written,
        notices,
    })
}

/// One reconcile: bring the Deployment and the status in line with the Memcached. Objects
/// being deleted are left to the garbage collector.
pub async fn reconcile(
    memcached: Arc<Memcached>,
    ctx: Arc<Context<Settings>>,
) -> Result<Action, Error> {
    if memcached.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let synced = sync(ctx.client(), ctx.field_manager(), &memcached, ctx.data()).await?;
    for notice in synced.notices {
        let event = ctx.event(memcached.as_ref());
        let event = match notice.type_ {
            EventType::Warning => event.warning(),
            EventType::Normal => event,
        };
        event
            .reason(notice.reason)
            .note(notice.note)
            .publish()
            .await?;
    }
    // Deployment status changes re-trigger the reconcile through `owns`.
    Ok(Action::await_change())
}

/// The Memcached controller (owns Deployments) with `settings`.
pub fn controller(settings: Settings) -> ControllerDef {
    controller_with(settings, 1)
}

/// As [`controller`], reconciling up to `workers` Memcacheds at once.
pub fn controller_with(settings: Settings, workers: usize) -> ControllerDef {
    Controller::<Memcached>::new(CONTROLLER_NAME)
        .owns_metadata::<Deployment>()
        .max_concurrent_reconciles(workers)
        .build(reconcile, settings)
}

/// A manager from `builder` running the Memcached controller.
pub fn manager(builder: ManagerBuilder, settings: Settings) -> Manager {
    let mut manager = builder.build();
    manager.add(controller(settings));
    manager
}

/// The CustomResourceDefinition as YAML.
pub fn crd_yaml() -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(&Memcached::crd())
}

/// The ClusterRole the operator needs (derived from the controller, leader election on), as
/// YAML named [`CLUSTER_ROLE`] — what `memcached print-rbac --role-name memcached-operator`
/// prints.
pub fn cluster_role_yaml() -> opkit::Result<String> {
    app().cluster_role_yaml(CLUSTER_ROLE)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};

    use super::*;

    fn memcached(size: i32) -> Memcached {
        let mut m = Memcached::new("cache", MemcachedSpec { size });
        m.metadata.namespace = Some("web".into());
        m.metadata.generation = Some(3);
        m
    }

    fn stored(status: DeploymentStatus) -> Deployment {
        let mut d = deployment(&memcached(2), &Settings::default());
        d.metadata.generation = Some(4);
        d.status = Some(status);
        d
    }

    #[test]
    fn deployment_runs_the_tutorial_container_with_size_replicas() {
        let d = deployment(&memcached(3), &Settings::default());
        assert_eq!(d.metadata.namespace.as_deref(), Some("web"));
        let spec = d.spec.unwrap_or_default();
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(
            spec.selector.match_labels,
            spec.template.metadata.clone().unwrap_or_default().labels
        );
        let pod = spec.template.spec.unwrap_or_default();
        let c = &pod.containers[0];
        assert_eq!(c.image.as_deref(), Some("memcached:1.6"));
        assert_eq!(
            c.command.clone().unwrap_or_default(),
            ["memcached", "-m=64", "-o", "modern", "-v"]
        );
        assert_eq!(c.ports.clone().unwrap_or_default()[0].container_port, 11211);
        assert!(
            spec.template
                .metadata
                .unwrap_or_default()
                .annotations
                .is_none()
        );
    }

    #[test]
    fn all_replicas_available_is_available_and_complete() {
        let d = stored(DeploymentStatus {
            observed_generation: Some(4),
            replicas: Some(2),
            updated_replicas: Some(2),
            available_replicas: Some(2),
            ready_replicas: Some(2),
            ..DeploymentStatus::default()
        });
        let c = conditions_for(&memcached(2), &d, &[]);
        assert!(conditions::is_true_for(&c, AVAILABLE, Some(3)));
        assert!(conditions::is_false(&c, PROGRESSING));
        assert!(conditions::is_false(&c, DEGRADED));
        assert_eq!(
            conditions::find(&c, AVAILABLE).map(|c| c.message.as_str()),
            Some("2/2 replicas available")
        );
    }

    #[test]
    fn an_unobserved_deployment_is_progressing_not_available() {
        let d = stored(DeploymentStatus {
            observed_generation: Some(3),
            replicas: Some(2),
            updated_replicas: Some(2),
            available_replicas: Some(2),
            ..DeploymentStatus::default()
        });
        let c = conditions_for(&memcached(2), &d, &[]);
        assert!(conditions::is_false(&c, AVAILABLE));
        assert!(conditions::is_true(&c, PROGRESSING));
    }

    #[test]
    fn a_passed_progress_deadline_is_degraded_with_the_deployments_message() {
        let d = stored(DeploymentStatus {
            observed_generation: Some(4),
            replicas: Some(2),
            updated_replicas: Some(2),
            available_replicas: Some(0),
            conditions: Some(vec![DeploymentCondition {
                type_: "Progressing".into(),
                status: "False".into(),
                reason: Some("ProgressDeadlineExceeded".into()),
                message: Some("ReplicaSet \"cache-1\" has timed out progressing.".into()),
                ..DeploymentCondition::default()
            }]),
            ..DeploymentStatus::default()
        });
        let c = conditions_for(&memcached(2), &d, &[]);
        let Some(degraded) = conditions::find(&c, DEGRADED) else {
            panic!("no Degraded condition in {c:?}");
        };
        assert_eq!(degraded.status, "True");
        assert_eq!(degraded.reason, "ProgressDeadlineExceeded");
        assert!(
            degraded.message.contains("timed out progressing"),
            "{}",
            degraded.message
        );
        assert!(
            degraded.message.contains("0/2 replicas available"),
            "{}",
            degraded.message
        );
        assert!(conditions::is_false(&c, AVAILABLE));
        assert!(conditions::is_false(&c, PROGRESSING));
    }

    #[test]
    fn only_transitions_to_degraded_or_available_are_noticed() {
        let ok = |t, s| {
            Condition::from(
                conditions::of(t, s)
                    .reason("R")
                    .message("m")
                    .observed_generation(Some(1)),
            )
        };
        let healthy = vec![ok(AVAILABLE, true), ok(DEGRADED, false)];
        let starting = vec![ok(AVAILABLE, false), ok(DEGRADED, false)];
        let broken = vec![ok(AVAILABLE, false), ok(DEGRADED, true)];
        let reasons = |n: Vec<Notice>| n.into_iter().map(|n| n.reason).collect::<Vec<_>>();
        assert_eq!(reasons(notices(&starting, &healthy)), ["Available"]);
        assert_eq!(reasons(notices(&[], &healthy)), ["Available"]);
        assert!(notices(&healthy, &healthy).is_empty());
        assert_eq!(reasons(notices(&starting, &broken)), ["R"]);
        assert_eq!(notices(&starting, &broken)[0].type_, EventType::Warning);
        assert!(notices(&broken, &broken).is_empty());
    }

    #[test]
    fn size_bounds_are_in_the_schema() {
        let crd = Memcached::crd();
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap_or_default();
        let size = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"];
        assert_eq!(size["minimum"], 0.0);
        assert_eq!(size["maximum"], 100.0);
        assert_eq!(size["format"], "int32");
    }
}
