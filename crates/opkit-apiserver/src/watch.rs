//! WATCH: a stream of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events.
//!
//! Events come from the store's shared event log: each watcher filters by key prefix and
//! selectors and frames the already-serialized object bytes (for JSON, no re-serialization).
//! Selector transitions follow upstream: an object that stops matching is sent as DELETED, one
//! that starts matching as ADDED. A watch from a compacted revision answers HTTP 200 and one
//! ERROR event carrying a 410 `Status`, as kube-apiserver does.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::{ApiError, ApiResult};
use crate::handlers::{Query, Selectors, convert_version};
use crate::negotiate::{Encoding, Output};
use crate::registry::Resource;
use crate::server::ApiServer;

/// How often a BOOKMARK is sent when the client allows them.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);

/// How frames are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Json,
    Protobuf,
    Table,
}

struct Framer {
    framing: Framing,
    res: Arc<Resource>,
    first_table: bool,
}

impl Framer {
    fn frame(&mut self, event_type: &str, object: &Bytes) -> Option<Bytes> {
        match self.framing {
            Framing::Json => {
                let object = convert_version(&self.res, object.clone());
                let mut out = Vec::with_capacity(object.len() + 32);
                out.extend_from_slice(b"{\"type\":\"");
                out.extend_from_slice(event_type.as_bytes());
                out.extend_from_slice(b"\",\"object\":");
                out.extend_from_slice(&object);
                out.extend_from_slice(b"}\n");
                Some(Bytes::from(out))
            }
            Framing::Protobuf => {
                let value: Value = serde_json::from_slice(object).ok()?;
                let value = self.res.shown(value);
                opkit_protobuf::encode_watch_event(event_type, &value)
                    .ok()
                    .map(Bytes::from)
            }
            Framing::Table => {
                let value: Value = serde_json::from_slice(object).ok()?;
                let value = self.res.shown(value);
                let table = if event_type == "BOOKMARK" || event_type == "ERROR" {
                    value
                } else {
                    let t = crate::tables::table_for(
                        &self.res,
                        &value,
                        false,
                        "Metadata",
                        self.first_table,
                    );
                    self.first_table = false;
                    t
                };
                let mut out =
                    serde_json::to_vec(&json!({"type": event_type, "object": table})).ok()?;
                out.push(b'\n');
                Some(Bytes::from(out))
            }
        }
    }

    fn frame_value(&mut self, event_type: &str, value: &Value) -> Option<Bytes> {
        let bytes = Bytes::from(serde_json::to_vec(value).ok()?);
        if self.framing == Framing::Table {
            let mut out = serde_json::to_vec(&json!({"type": event_type, "object": value})).ok()?;
            out.push(b'\n');
            return Some(Bytes::from(out));
        }
        self.frame(event_type, &bytes)
    }
}

/// A running watch: its content type and the frames.
pub struct WatchResponse {
    /// `Content-Type` of the stream.
    pub content_type: &'static str,
    /// Frames, ending when the watch ends.
    pub frames: mpsc::Receiver<Result<Bytes, Infallible>>,
}

fn bookmark(res: &Resource, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": meta})
}

impl ApiServer {
    /// Starts a watch. Errors before the stream starts are ordinary `Status` answers.
    pub fn watch(
        self: &Arc<Self>,
        res: Arc<Resource>,
        ns: Option<String>,
        query: &Query,
        output: &Output,
    ) -> ApiResult<WatchResponse> {
        let selectors = Selectors::parse(&res, query)?;
        let (framing, content_type) = match output {
            Output::Object(Encoding::Protobuf) => (
                Framing::Protobuf,
                "application/vnd.kubernetes.protobuf;stream=watch",
            ),
            Output::Table => (Framing::Table, "application/json"),
            _ => (Framing::Json, "application/json"),
        };
        let rv =
            match query.get("resourceVersion") {
                None | Some("") => None,
                Some(s) => Some(s.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {s:?}"))
                })?),
            };
        let bookmarks = query.flag("allowWatchBookmarks");
        let send_initial = match query.get("sendInitialEvents") {
            None | Some("") => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "invalid sendInitialEvents: {other:?}"
                )));
            }
        };
        if send_initial.is_some() {
            if query.get("resourceVersionMatch") != Some("NotOlderThan") {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "ListOptions",
                    "",
                    vec![crate::error::Cause::new(
                        "FieldValueForbidden",
                        "sendInitialEvents",
                        "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
                    )],
                ));
            }
            if send_initial == Some(true) && !bookmarks {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "ListOptions",
                    "",
                    vec![crate::error::Cause::new(
                        "FieldValueForbidden",
                        "allowWatchBookmarks",
                        "Forbidden: allowWatchBookmarks required when sendInitialEvents is true",
                    )],
                ));
            }
        }
        let timeout = match query.get("timeoutSeconds") {
            Some(s) if !s.is_empty() => Duration::from_secs(
                s.parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {s:?}")))?,
            ),
            _ => Duration::from_secs(1800 + rand::random::<u64>() % 1800),
        };
        let prefix = res.namespace_prefix(ns.as_deref());
        let initial = match (send_initial, rv) {
            (Some(true), _) => true,
            (Some(false), _) => false,
            (None, None) | (None, Some(0)) => true,
            (None, Some(_)) => false,
        };
        let mut framer = Framer {
            framing,
            res: res.clone(),
            first_table: true,
        };
        // Snapshot (for initial events) and the event subscription, taken consistently.
        let mut initial_frames = Vec::new();
        let start_rev;
        if initial {
            let list = self
                .store
                .list(&prefix, &opkit_store::ListOptions::default())?;
            start_rev = list.revision;
            for entry in list.entries {
                if selectors.matches_bytes(&entry.value)
                    && let Some(f) = framer.frame("ADDED", &entry.value)
                {
                    initial_frames.push(f);
                }
            }
            if send_initial == Some(true)
                && let Some(f) = framer.frame_value("BOOKMARK", &bookmark(&res, start_rev, true))
            {
                initial_frames.push(f);
            }
        } else {
            start_rev = match (send_initial, rv) {
                (Some(false), None) | (Some(false), Some(0)) => self.store.current_revision(),
                (_, Some(v)) => v,
                _ => self.store.current_revision(),
            };
        }
        let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
        let watcher = self.store.watch(&prefix, start_rev);
        tokio::spawn(async move {
            let mut watcher = match watcher {
                Ok(w) => w,
                Err(e) => {
                    let status = ApiError::from(e).to_status();
                    if let Some(f) = framer.frame_value("ERROR", &status) {
                        let _ = tx.send(Ok(f)).await;
                    }
                    return;
                }
            };
            for f in initial_frames {
                if tx.send(Ok(f)).await.is_err() {
                    return;
                }
            }
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
            ticker.tick().await;
            let mut last_rev = start_rev;
            loop {
                let frame = tokio::select! {
                    _ = &mut deadline => return,
                    _ = tx.closed() => return,
                    _ = ticker.tick(), if bookmarks => {
                        framer.frame_value("BOOKMARK", &bookmark(&framer.res, last_rev, false))
                    }
                    next = watcher.next() => match next {
                        None => return,
                        Some(Err(e)) => {
                            let status = ApiError::from(e).to_status();
                            if let Some(f) = framer.frame_value("ERROR", &status) {
                                let _ = tx.send(Ok(f)).await;
                            }
                            return;
                        }
                        Some(Ok(event)) => {
                            last_rev = event.revision;
                            event_frame(&mut framer, &selectors, &event)
                        }
                    }
                };
                if let Some(f) = frame
                    && tx.send(Ok(f)).await.is_err()
                {
                    return;
                }
            }
        });
        Ok(WatchResponse {
            content_type,
            frames: rx,
        })
    }
}

fn event_frame(
    framer: &mut Framer,
    selectors: &Selectors,
    event: &opkit_store::Event,
) -> Option<Bytes> {
    use opkit_store::EventKind;
    if selectors.is_empty() {
        let t = match event.kind {
            EventKind::Delete => "DELETED",
            EventKind::Put if event.created => "ADDED",
            EventKind::Put => "MODIFIED",
        };
        return framer.frame(t, &event.value);
    }
    let now = selectors.matches_bytes(&event.value);
    let before = event
        .prev
        .as_ref()
        .is_some_and(|p| selectors.matches_bytes(p));
    let t = match event.kind {
        EventKind::Delete if before || now => "DELETED",
        EventKind::Delete => return None,
        EventKind::Put => match (before, now) {
            (true, true) => "MODIFIED",
            (false, true) => "ADDED",
            (true, false) => "DELETED",
            (false, false) => return None,
        },
    };
    framer.frame(t, &event.value)
}
