//! The FlightTicket operator end to end on `TestEnv`: booking, re-booking, drift repair,
//! schema validation, cancellation through the finalizer, and running under exactly the
//! ClusterRole it prints.
//!
//! The control planes run without built-in controllers: no garbage collector, so a booking
//! that disappears on deletion can only have been deleted by the operator's finalizer.

use opkit_testenv::eventually;
use std::time::Duration;

use flightticket::{FINALIZER, FlightTicket, FlightTicketSpec, READY};
use opkit::Running;
use opkit::k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use opkit::k8s_openapi::api::events::v1::Event as K8sEvent;
use opkit::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use opkit::kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use opkit::kube::config::{KubeConfigOptions, Kubeconfig};
use opkit::prelude::*;
use opkit_testenv::TestEnv;
use serde_json::json;

const NS: &str = "default";

async fn env() -> TestEnv {
    TestEnv::builder()
        .crd::<FlightTicket>()
        .controllers("")
        .start()
        .await
        .expect("control plane starts")
}

/// The operator as `flightticket run` starts it (leader election on), without the metrics
/// and probe servers (tests run in parallel; ports would clash).
async fn start_operator(client: Client) -> Running {
    // Reconcile errors are logged; nextest shows them for failing tests.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let running = flightticket::manager(
        Manager::builder().leader_election(LeaderElection::new(flightticket::LEASE_NAME, NS)),
    )
    .start(client)
    .await
    .expect("manager starts");
    eventually("caches synced", || async { running.caches_synced() }).await;
    running
}

fn ticket(name: &str, from: &str, to: &str, number: i64) -> FlightTicket {
    FlightTicket::new(
        name,
        FlightTicketSpec {
            from: from.into(),
            to: to.into(),
            number,
        },
    )
}

async fn booking_data(cms: &Api<ConfigMap>, name: &str, key: &str) -> Option<String> {
    cms.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|cm| cm.data)
        .and_then(|d| d.get(key).cloned())
}

async fn booked(tickets: &Api<FlightTicket>, name: &str, generation: i64) -> bool {
    tickets
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|t| t.status)
        .is_some_and(|s| {
            s.phase.as_deref() == Some(flightticket::PHASE_BOOKED)
                && s.observed_generation == Some(generation)
                && conditions::is_true_for(&s.conditions, READY, Some(generation))
        })
}

async fn event_reasons(client: &Client, ticket: &str) -> Vec<String> {
    let events: Api<K8sEvent> = Api::namespaced(client.clone(), NS);
    events
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(ticket))
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn booking_creates_an_owned_configmap_and_reports_booked() {
    let env = env().await;
    let running = start_operator(env.client()).await;
    let tickets: Api<FlightTicket> = Api::namespaced(env.client(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    tickets
        .create(&PostParams::default(), &ticket("trip", "AMS", "SFO", 2))
        .await
        .expect("ticket created");

    eventually("ticket Booked with Ready=True", || {
        booked(&tickets, "trip", 1)
    })
    .await;
    let t = tickets.get("trip").await.expect("ticket");
    let status = t.status.clone().expect("status");
    let reference = flightticket::booking_reference(&t);
    assert_eq!(
        status.booking_reference.as_deref(),
        Some(reference.as_str())
    );
    assert!(t.finalizers().iter().any(|f| f == FINALIZER));

    let cm = cms.get("trip-booking").await.expect("booking exists");
    let owner = &cm.owner_references()[0];
    assert_eq!(owner.kind, "FlightTicket");
    assert_eq!(owner.uid, t.uid().unwrap_or_default());
    assert_eq!(owner.controller, Some(true));
    let managers: Vec<_> = cm
        .managed_fields()
        .iter()
        .filter_map(|m| Some((m.manager.clone()?, m.operation.clone()?)))
        .collect();
    assert!(
        managers.contains(&("flightticket".to_string(), "Apply".to_string())),
        "{managers:?}"
    );
    let data = cm.data.unwrap_or_default();
    assert_eq!(data["itinerary"], "2 seats from AMS to SFO");
    assert_eq!(data["bookingReference"], reference);
    eventually("a Booked event", || async {
        event_reasons(&env.client(), "trip")
            .await
            .contains(&"Booked".to_string())
    })
    .await;
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_spec_change_rebooks() {
    let env = env().await;
    let running = start_operator(env.client()).await;
    let tickets: Api<FlightTicket> = Api::namespaced(env.client(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    tickets
        .create(&PostParams::default(), &ticket("trip", "AMS", "SFO", 2))
        .await
        .expect("ticket created");
    eventually("booked", || booked(&tickets, "trip", 1)).await;

    tickets
        .patch(
            "trip",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"to": "JFK", "number": 5}})),
        )
        .await
        .expect("spec patched");
    eventually("booking rewritten", || async {
        booking_data(&cms, "trip-booking", "itinerary")
            .await
            .as_deref()
            == Some("5 seats from AMS to JFK")
    })
    .await;
    eventually("status observed generation 2", || {
        booked(&tickets, "trip", 2)
    })
    .await;
    eventually("a Rebooked event", || async {
        event_reasons(&env.client(), "trip")
            .await
            .contains(&"Rebooked".to_string())
    })
    .await;
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_edited_or_deleted_booking_is_restored() {
    let env = env().await;
    let running = start_operator(env.client()).await;
    let tickets: Api<FlightTicket> = Api::namespaced(env.client(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    tickets
        .create(&PostParams::default(), &ticket("trip", "AMS", "SFO", 3))
        .await
        .expect("ticket created");
    eventually("booked", || booked(&tickets, "trip", 1)).await;

    // Someone edits the itinerary by hand: the operator's forced apply takes it back.
    cms.patch(
        "trip-booking",
        &PatchParams::apply("someone").force(),
        &Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "data": {"itinerary": "1 seat from AMS to NOWHERE"}
        })),
    )
    .await
    .expect("booking edited");
    eventually("edit undone", || async {
        booking_data(&cms, "trip-booking", "itinerary")
            .await
            .as_deref()
            == Some("3 seats from AMS to SFO")
    })
    .await;

    // Someone deletes it: the operator books again.
    let before = cms.get("trip-booking").await.expect("booking").uid();
    cms.delete("trip-booking", &DeleteParams::default())
        .await
        .expect("booking deleted");
    eventually("booking recreated", || async {
        let now = cms.get_opt("trip-booking").await.ok().flatten();
        now.is_some_and(|cm| cm.uid() != before)
    })
    .await;
    assert_eq!(
        booking_data(&cms, "trip-booking", "number")
            .await
            .as_deref(),
        Some("3")
    );
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn the_schema_rejects_invalid_tickets_with_422() {
    let env = env().await;
    let tickets: Api<FlightTicket> = Api::namespaced(env.client(), NS);
    for (name, number) in [("none", 0), ("too-many", 11), ("negative", -1)] {
        let err = tickets
            .create(&PostParams::default(), &ticket(name, "AMS", "SFO", number))
            .await
            .expect_err("out-of-range number rejected");
        match err {
            opkit::kube::Error::Api(s) => {
                assert_eq!(s.code, 422, "{s:?}");
                assert!(s.message.contains("spec.number"), "{}", s.message);
            }
            other => panic!("expected 422, got {other:?}"),
        }
    }
    // `to` is required.
    let raw: Api<opkit::kube::api::DynamicObject> = Api::namespaced_with(
        env.client(),
        NS,
        &opkit::kube::api::ApiResource::erase::<FlightTicket>(&()),
    );
    let missing = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1", "kind": "FlightTicket",
        "metadata": {"name": "nowhere"},
        "spec": {"from": "AMS", "number": 1}
    }))
    .expect("object");
    let err = raw
        .create(&PostParams::default(), &missing)
        .await
        .expect_err("missing `to` rejected");
    assert!(
        matches!(&err, opkit::kube::Error::Api(s) if s.code == 422 && s.message.contains("spec.to")),
        "{err:?}"
    );
    assert!(
        tickets
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn deleting_a_ticket_cancels_the_booking_before_the_ticket_goes() {
    let env = env().await;
    let running = start_operator(env.client()).await;
    let tickets: Api<FlightTicket> = Api::namespaced(env.client(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    tickets
        .create(&PostParams::default(), &ticket("trip", "AMS", "SFO", 1))
        .await
        .expect("ticket created");
    eventually("booked", || booked(&tickets, "trip", 1)).await;

    tickets
        .delete("trip", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("ticket gone", || async {
        matches!(tickets.get_opt("trip").await, Ok(None))
    })
    .await;
    // No garbage collector runs here: only the finalizer can have deleted the booking.
    assert!(cms.get_opt("trip-booking").await.expect("get").is_none());
    assert!(
        event_reasons(&env.client(), "trip")
            .await
            .contains(&"Cancelled".to_string())
    );
    running.shutdown().await.expect("clean shutdown");
}

async fn client_from(kubeconfig: &str) -> Client {
    opkit::install_crypto_provider();
    let kc = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let config = opkit::kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client")
}

fn is_forbidden<T: std::fmt::Debug>(r: &Result<T, opkit::kube::Error>) -> bool {
    matches!(r, Err(opkit::kube::Error::Api(s)) if s.code == 403)
}

#[tokio::test]
async fn the_operator_runs_as_its_service_account_with_only_the_printed_rbac() {
    const SA_NS: &str = "flights-system";
    const SA: &str = "flightticket-operator";
    let env = env().await;
    let admin = env.client();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(SA_NS.into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some(SA.into());
    Api::<ServiceAccount>::namespaced(admin.clone(), SA_NS)
        .create(&PostParams::default(), &sa)
        .await
        .expect("service account");
    let kubeconfig = env
        .control_plane()
        .service_account_kubeconfig(SA_NS, SA, Duration::from_secs(3600))
        .expect("token issued");
    let operator = client_from(&kubeconfig).await;

    // Unbound, the account can do none of what the operator does.
    let tickets_as_sa: Api<FlightTicket> = Api::all(operator.clone());
    assert!(is_forbidden(
        &tickets_as_sa.list(&ListParams::default()).await
    ));
    let cms_as_sa: Api<ConfigMap> = Api::namespaced(operator.clone(), NS);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("probe".into());
    assert!(is_forbidden(
        &cms_as_sa.create(&PostParams::default(), &cm).await
    ));

    // Bind exactly what `flightticket print-rbac` prints.
    let role: ClusterRole =
        serde_yaml::from_str(&flightticket::cluster_role_yaml().expect("rbac renders"))
            .expect("ClusterRole parses");
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("ClusterRole created");
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(SA.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: flightticket::CLUSTER_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: SA.into(),
            namespace: Some(SA_NS.into()),
            ..Subject::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");

    let running = start_operator(operator).await;
    let tickets: Api<FlightTicket> = Api::namespaced(admin.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), NS);
    tickets
        .create(&PostParams::default(), &ticket("trip", "AMS", "SFO", 2))
        .await
        .expect("ticket created");
    eventually("booked by the service account", || {
        booked(&tickets, "trip", 1)
    })
    .await;
    assert!(running.is_leader());
    tickets
        .patch(
            "trip",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"number": 4}})),
        )
        .await
        .expect("spec patched");
    eventually("rebooked", || booked(&tickets, "trip", 2)).await;
    assert_eq!(
        booking_data(&cms, "trip-booking", "number")
            .await
            .as_deref(),
        Some("4")
    );
    tickets
        .delete("trip", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("cancelled and gone", || async {
        matches!(tickets.get_opt("trip").await, Ok(None))
            && matches!(cms.get_opt("trip-booking").await, Ok(None))
    })
    .await;
    let metrics = running.metrics().render();
    assert!(
        metrics
            .contains(r#"controller_runtime_reconcile_errors_total{controller="flightticket"} 0"#),
        "a forbidden call would have failed a reconcile:\n{metrics}"
    );
    running.shutdown().await.expect("clean shutdown");
}
