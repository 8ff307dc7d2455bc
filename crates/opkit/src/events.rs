//! Kubernetes events (`events.k8s.io/v1`) from reconcilers.
//!
//! A thin layer over kube-runtime's [`kube::runtime::events::Recorder`], bound to one
//! controller: the reporting controller is the controller's name and the reporting instance
//! the manager's identity, so `kubectl events` tells operators and replicas apart. Events are
//! built with named parts — [`Recorder::event`] or [`Context::event`](crate::Context::event):
//!
//! ```no_run
//! # async fn f(ctx: &opkit::Context<()>, obj: &opkit::k8s_openapi::api::core::v1::ConfigMap)
//! # -> opkit::Result<()> {
//! ctx.event(obj).reason("Booked").note("booking created").publish().await?;
//! ctx.event(obj).warning().reason("QuotaExceeded").note("no seats left").publish().await?;
//! # Ok(()) }
//! ```
//!
//! # Series: why a repeated event's note must not carry figures
//!
//! Publishing the same event again — same type, reason, action, object and related object,
//! from the same controller instance, within six minutes of the last one — does not create a
//! new Event: the existing one becomes a series and its count goes up (client-go's recorder
//! and kube-runtime's do the same, to keep a flapping controller from flooding the API
//! server). The series keeps the **first note**. An event `Available` with the note "1/1
//! replicas available", repeated after a scale to 3, therefore still says "1/1" with count 3.
//! So write notes that stay true when repeated ("all replicas are available") and put the
//! figures in a status condition's message, which is rewritten every time.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{self, EventType, Reporter};
use kube::{Client, Resource};

use crate::error::Result;
use crate::informer::Object;

/// Publishes events about objects on behalf of one controller.
#[derive(Clone)]
pub struct Recorder {
    inner: events::Recorder,
    controller: String,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder reporting as `controller`, instance `instance`.
    pub fn new(client: Client, controller: &str, instance: &str) -> Recorder {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: Some(instance.to_string()),
        };
        Recorder {
            inner: events::Recorder::new(client, reporter),
            controller: controller.to_string(),
        }
    }

    /// Starts an event about `obj`: `Normal`, action `Reconcile`, until the builder says
    /// otherwise. Nothing is sent before [`EventBuilder::publish`].
    pub fn event<'a, K: Object>(&'a self, obj: &K) -> EventBuilder<'a> {
        self.event_with(obj, &())
    }

    /// As [`Recorder::event`], for an object of a kind learned at run time (`dt` is its
    /// dynamic type, e.g. the [`ApiResource`](kube::api::ApiResource) of a
    /// [`DynamicObject`](kube::api::DynamicObject)).
    pub fn event_with<'a, K: Resource>(&'a self, obj: &K, dt: &K::DynamicType) -> EventBuilder<'a> {
        EventBuilder {
            recorder: self,
            regarding: obj.object_ref(dt),
            related: None,
            type_: EventType::Normal,
            reason: String::new(),
            action: "Reconcile".to_string(),
            note: None,
        }
    }
}

/// An event under construction; see [`Recorder::event`].
#[derive(Debug)]
#[must_use = "an event is only sent by `publish().await`"]
pub struct EventBuilder<'a> {
    recorder: &'a Recorder,
    regarding: ObjectReference,
    related: Option<ObjectReference>,
    type_: EventType,
    reason: String,
    action: String,
    note: Option<String>,
}

impl EventBuilder<'_> {
    /// A `Warning` instead of a `Normal` event: something an operator of the cluster should
    /// look at.
    pub fn warning(mut self) -> Self {
        self.type_ = EventType::Warning;
        self
    }

    /// The short CamelCase cause (`Booked`, `ReconcileFailed`), what `kubectl events` groups
    /// by. Required: an event without one is refused by `publish`.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// What the controller did or failed to do (default `Reconcile`).
    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = action.into();
        self
    }

    /// The human-readable text. Kept from the first event of a series (see the
    /// [module docs](self)), so no changing figures here.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// A second object the event involves (the child created, the Secret read).
    pub fn related<R: Object>(mut self, obj: &R) -> Self {
        self.related = Some(obj.object_ref(&()));
        self
    }

    /// Sends the event (or counts it into its series).
    pub async fn publish(self) -> Result<()> {
        if self.reason.is_empty() {
            return Err(crate::Error::EventWithoutReason);
        }
        let event = events::Event {
            type_: self.type_,
            reason: self.reason,
            note: self.note,
            action: self.action,
            secondary: self.related,
        };
        self.recorder.inner.publish(&event, &self.regarding).await?;
        Ok(())
    }
}
