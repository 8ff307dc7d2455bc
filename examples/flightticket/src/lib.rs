//! The FlightTicket operator: the design brief's example, built on opkit.
//!
//! A `FlightTicket` (`flights.com/v1`, short name `ft`) asks for `number` seats from `from` to
//! `to`. The operator books it: the booking is a ConfigMap `<name>-booking` holding the
//! itinerary, server-side applied with a controller owner reference and the controller's
//! field manager, so a spec change rewrites it and an edit or deletion by anyone else is undone
//! on the next reconcile (the controller [`owns`](opkit::Controller::owns) ConfigMaps). The
//! ticket's status then says `phase: Booked`, carries the booking reference and a `Ready`
//! condition computed from the generation it observed.
//!
//! Cancelling is explicit: the ticket carries the finalizer [`FINALIZER`], so on deletion the
//! operator records a `Cancelled` event and deletes the booking *before* the API server lets
//! the ticket go. The owner reference alone would have the garbage collector delete the
//! booking eventually, but only after the ticket is gone and without a record of the
//! cancellation — a real booking system would call an airline here, which no garbage
//! collector can do.
//!
//! The package's binary (`src/main.rs`) is [`app`]`().main()`: opkit's standard operator command
//! line, which runs the controller against any cluster (`run`, the default) and prints the CRD
//! (`print-crds`) and the ClusterRole derived from the controller (`print-rbac`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DeleteParams;
use opkit::finalizer::{self, FinalizerError};
use opkit::prelude::*;
use opkit::{App, ControllerDef, ManagerBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The controller's name: its field manager, event reporter and metrics label.
pub const CONTROLLER_NAME: &str = "flightticket";
/// The finalizer that makes deletion wait for the cancellation.
pub const FINALIZER: &str = "flights.com/cancel-booking";
/// The operator's name: its leader-election Lease, and the ClusterRole `print-rbac` prints and
/// its service account is bound to.
pub const NAME: &str = "flightticket-operator";
/// The ClusterRole `print-rbac` prints and the operator's service account is bound to.
pub const CLUSTER_ROLE: &str = NAME;
/// The leader-election Lease.
pub const LEASE_NAME: &str = NAME;
/// `status.phase` once the booking exists and matches the spec.
pub const PHASE_BOOKED: &str = "Booked";
/// The condition type the operator maintains.
pub const READY: &str = "Ready";

/// A flight ticket: `number` seats from `from` to `to`.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "flights.com",
    version = "v1",
    kind = "FlightTicket",
    namespaced,
    shortname = "ft",
    status = "FlightTicketStatus",
    printcolumn = r#"{"name": "From", "type": "string", "jsonPath": ".spec.from"}"#,
    printcolumn = r#"{"name": "To", "type": "string", "jsonPath": ".spec.to"}"#,
    printcolumn = r#"{"name": "Number", "type": "integer", "jsonPath": ".spec.number"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct FlightTicketSpec {
    /// Departure airport or city.
    pub from: String,
    /// Destination airport or city.
    pub to: String,
    /// How many seats (1 to 10).
    #[schemars(range(min = 1, max = 10))]
    pub number: i64,
}

/// What the operator reports about a ticket.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlightTicketStatus {
    /// `Booked` once the booking matches the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The booking's reference, stable for the ticket's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub booking_reference: Option<String>,
    /// The `.metadata.generation` the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: the booking matches the spec.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// What the cancellation or booking code can fail at.
#[derive(Debug, thiserror::Error)]
pub enum BookingError {
    /// An opkit helper (apply, status, event) failed.
    #[error(transparent)]
    Opkit(#[from] opkit::Error),
    /// Deleting the booking ConfigMap during cancellation failed.
    #[error("deleting booking {name}: {source}")]
    Cancel {
        /// The ConfigMap's name.
        name: String,
        /// The cause.
        source: kube::Error,
    },
}

/// Why a reconcile failed (it is retried with the key's backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Booking, cancelling, or the finalizer bookkeeping around them failed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError<BookingError>),
}

/// The booking ConfigMap's name for ticket `ticket`.
pub fn booking_name(ticket: &str) -> String {
    format!("{ticket}-booking")
}

/// The booking reference of a ticket: `FT-` and the first eight hex digits of its UID, so it
/// is stable across reconciles and restarts without storing anything.
pub fn booking_reference(ticket: &FlightTicket) -> String {
    let hex: String = ticket
        .uid()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_hexdigit())
        .take(8)
        .collect();
    format!("FT-{}", hex.to_ascii_uppercase())
}

/// The desired booking ConfigMap for `ticket` (owner reference added when applied).
pub fn booking(ticket: &FlightTicket) -> ConfigMap {
    let spec = &ticket.spec;
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(booking_name(&ticket.name_any()));
    cm.metadata.namespace = ticket.namespace();
    cm.metadata.labels = Some(BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_string(),
            CLUSTER_ROLE.to_string(),
        ),
        ("flights.com/ticket".to_string(), ticket.name_any()),
    ]));
    let seats = if spec.number == 1 { "seat" } else { "seats" };
    cm.data = Some(BTreeMap::from([
        ("from".to_string(), spec.from.clone()),
        ("to".to_string(), spec.to.clone()),
        ("number".to_string(), spec.number.to_string()),
        ("bookingReference".to_string(), booking_reference(ticket)),
        (
            "itinerary".to_string(),
            format!("{} {seats} from {} to {}", spec.number, spec.from, spec.to),
        ),
    ]));
    cm
}

async fn book(ticket: Arc<FlightTicket>, ctx: &Context<()>) -> Result<Action, BookingError> {
    ctx.apply_owned(ticket.as_ref(), booking(&ticket)).await?;
    let generation = ticket.metadata.generation;
    let current = ticket.status.clone().unwrap_or_default();
    let mut desired = current.clone();
    desired.phase = Some(PHASE_BOOKED.to_string());
    desired.booking_reference = Some(booking_reference(&ticket));
    desired.observed_generation = generation;
    conditions::set(
        &mut desired.conditions,
        conditions::of(READY, true)
            .reason("Booked")
            .message(format!(
                "booking {} holds {} seat(s) from {} to {}",
                booking_name(&ticket.name_any()),
                ticket.spec.number,
                ticket.spec.from,
                ticket.spec.to
            ))
            .observed(ticket.as_ref()),
    );
    if desired != current {
        ctx.patch_status(ticket.as_ref(), &desired).await?;
        let (reason, note) = if current.phase.as_deref() == Some(PHASE_BOOKED) {
            ("Rebooked", "booking updated to the new spec")
        } else {
            ("Booked", "booking created")
        };
        ctx.event(ticket.as_ref())
            .reason(reason)
            .note(format!("{note}: {}", booking_reference(&ticket)))
            .publish()
            .await?;
    }
    Ok(Action::await_change())
}

async fn cancel(ticket: Arc<FlightTicket>, ctx: &Context<()>) -> Result<Action, BookingError> {
    let name = booking_name(&ticket.name_any());
    let namespace = ticket.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), &namespace);
    if let Err(source) = api
        .delete(&name, &DeleteParams::default())
        .await
        .ignore_not_found()
    {
        return Err(BookingError::Cancel { name, source });
    }
    ctx.event(ticket.as_ref())
        .reason("Cancelled")
        .note(format!("booking {} cancelled", booking_reference(&ticket)))
        .publish()
        .await?;
    Ok(Action::await_change())
}

/// One reconcile: book (or re-book) a live ticket, cancel a deleted one.
pub async fn reconcile(ticket: Arc<FlightTicket>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    let action = ctx
        .finalize(ticket, |event| async {
            match event {
                finalizer::Event::Apply(t) => book(t, &ctx).await,
                finalizer::Event::Cleanup(t) => cancel(t, &ctx).await,
            }
        })
        .await?;
    Ok(action)
}

/// The FlightTicket controller: owns the booking ConfigMaps, manages [`FINALIZER`].
pub fn controller() -> ControllerDef {
    Controller::<FlightTicket>::new(CONTROLLER_NAME)
        .owns::<ConfigMap>()
        .finalizer(FINALIZER)
        .build(reconcile, ())
}

/// The operator's command line: `run` (the default), `print-crds`, `print-rbac`; see
/// [`opkit::app`].
pub fn app() -> App {
    App::new(NAME)
        .crd::<FlightTicket>()
        .controller(|_| controller())
}

/// A manager from `builder` running the FlightTicket controller.
pub fn manager(builder: ManagerBuilder) -> Manager {
    let mut manager = builder.build();
    manager.add(controller());
    manager
}

/// The CustomResourceDefinition as YAML.
pub fn crd_yaml() -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(&FlightTicket::crd())
}

/// The ClusterRole the operator needs (derived from the controller, leader election on), as
/// YAML named [`CLUSTER_ROLE`].
pub fn cluster_role_yaml() -> opkit::Result<String> {
    app().cluster_role_yaml(CLUSTER_ROLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(number: i64) -> FlightTicket {
        let mut t = FlightTicket::new(
            "trip",
            FlightTicketSpec {
                from: "AMS".into(),
                to: "SFO".into(),
                number,
            },
        );
        t.metadata.namespace = Some("travel".into());
        t.metadata.uid = Some("0a1b2c3d-4e5f-6789-abcd-ef0123456789".into());
        t
    }

    #[test]
    fn booking_reference_comes_from_the_uid() {
        assert_eq!(booking_reference(&ticket(1)), "FT-0A1B2C3D");
    }

    #[test]
    fn booking_holds_the_itinerary_in_the_ticket_namespace() {
        let cm = booking(&ticket(2));
        assert_eq!(cm.metadata.name.as_deref(), Some("trip-booking"));
        assert_eq!(cm.metadata.namespace.as_deref(), Some("travel"));
        let data = cm.data.unwrap_or_default();
        assert_eq!(data["itinerary"], "2 seats from AMS to SFO");
        assert_eq!(data["number"], "2");
        assert_eq!(data["bookingReference"], "FT-0A1B2C3D");
        let one = booking(&ticket(1)).data.unwrap_or_default();
        assert_eq!(one["itinerary"], "1 seat from AMS to SFO");
    }

    #[test]
    fn crd_has_short_name_bounds_and_printer_columns() {
        let crd = FlightTicket::crd();
        assert_eq!(crd.spec.group, "flights.com");
        assert_eq!(crd.spec.names.short_names, Some(vec!["ft".to_string()]));
        let version = &crd.spec.versions[0];
        let columns: Vec<_> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(columns, ["From", "To", "Number", "Phase", "Age"]);
        let schema = serde_json::to_value(&version.schema).unwrap_or_default();
        let number = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["number"];
        assert_eq!(number["minimum"], 1.0);
        assert_eq!(number["maximum"], 10.0);
    }

    #[test]
    fn printed_rbac_covers_tickets_bookings_events_and_the_lease() {
        let yaml = cluster_role_yaml().unwrap_or_default();
        for needle in [
            "flighttickets/finalizers",
            "flighttickets/status",
            "configmaps",
            "events.k8s.io",
            "leases",
        ] {
            assert!(yaml.contains(needle), "{needle} missing from\n{yaml}");
        }
    }
}
