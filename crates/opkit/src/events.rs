//! Kubernetes events (`events.k8s.io/v1`) from reconcilers.
//!
//! A thin wrapper over kube-runtime's [`kube::runtime::events::Recorder`], which already
//! does what kubectl users expect (series for repeated events, `reportingController`), bound
//! to one controller: the reporting controller is the controller's name and the reporting
//! instance the manager's identity, so `kubectl events` tells operators and replicas apart.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{self, EventType, Reporter};

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

    /// Publishes an event about `obj`: `reason` is a short CamelCase cause (`Created`),
    /// `action` what the controller did or failed to do (`Reconcile`), `note` a human text.
    pub async fn publish<K: Object>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) -> Result<()> {
        let reference: ObjectReference = obj.object_ref(&());
        let event = events::Event {
            type_,
            reason: reason.to_string(),
            note,
            action: action.to_string(),
            secondary: None,
        };
        self.inner.publish(&event, &reference).await?;
        Ok(())
    }

    /// A `Normal` event with action `Reconcile`.
    pub async fn normal<K: Object>(
        &self,
        obj: &K,
        reason: &str,
        note: impl Into<String>,
    ) -> Result<()> {
        self.publish(
            obj,
            EventType::Normal,
            reason,
            "Reconcile",
            Some(note.into()),
        )
        .await
    }

    /// A `Warning` event with action `Reconcile`.
    pub async fn warning<K: Object>(
        &self,
        obj: &K,
        reason: &str,
        note: impl Into<String>,
    ) -> Result<()> {
        self.publish(
            obj,
            EventType::Warning,
            reason,
            "Reconcile",
            Some(note.into()),
        )
        .await
    }
}
