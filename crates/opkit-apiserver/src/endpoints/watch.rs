//! WATCH: a stream of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events.
//!
//! Events come from the store's shared event log: each watcher filters by key prefix and
//! selectors and frames the already-serialized object bytes (for JSON, no re-serialization).
//! Selector transitions follow upstream: an object that stops matching is sent as DELETED, one
//! that starts matching as ADDED. A watch from a compacted revision answers HTTP 200 and one
//! ERROR event carrying a 410 `Status`, as kube-apiserver does; an event that cannot be encoded
//! (for a Table or protobuf stream) ends the watch with an ERROR carrying a 500 `Status`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::selectors::Selectors;
use super::{Api, forbidden_list_option};
use crate::error::{ApiError, ApiResult};
use crate::negotiate::{Encoding, Output};
use crate::registry::Resource;
use crate::request::Query;
use crate::response::convert_version;
use crate::storage;

/// How often a BOOKMARK is sent when the client allows them.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);

/// How frames are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Json,
    Protobuf,
    Table,
}

/// Why a watch event could not be written in the stream's encoding.
#[derive(Debug, thiserror::Error)]
enum EncodeError {
    /// The stored object (or a Status) is not JSON.
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The object does not fit its kind's protobuf message.
    #[error("no protobuf encoding: {0}")]
    Protobuf(#[from] opkit_protobuf::ProtobufError),
}

struct Framer {
    framing: Framing,
    res: Arc<Resource>,
    first_table: bool,
}

impl Framer {
    fn frame(&mut self, event_type: &str, object: &Bytes) -> Result<Bytes, EncodeError> {
        match self.framing {
            Framing::Json => {
                let object = convert_version(&self.res, object.clone());
                let mut out = Vec::with_capacity(object.len() + 32);
                out.extend_from_slice(b"{\"type\":\"");
                out.extend_from_slice(event_type.as_bytes());
                out.extend_from_slice(b"\",\"object\":");
                out.extend_from_slice(&object);
                out.extend_from_slice(b"}\n");
                Ok(Bytes::from(out))
            }
            Framing::Protobuf => {
                let value: Value = serde_json::from_slice(object)?;
                let value = self.res.shown(value);
                Ok(Bytes::from(opkit_protobuf::encode_watch_event(
                    event_type, &value,
                )?))
            }
            Framing::Table => {
                let value: Value = serde_json::from_slice(object)?;
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
                let mut out = serde_json::to_vec(&json!({"type": event_type, "object": table}))?;
                out.push(b'\n');
                Ok(Bytes::from(out))
            }
        }
    }

    fn frame_value(&mut self, event_type: &str, value: &Value) -> Result<Bytes, EncodeError> {
        let bytes = Bytes::from(serde_json::to_vec(value)?);
        if self.framing == Framing::Table {
            let mut out = serde_json::to_vec(&json!({"type": event_type, "object": value}))?;
            out.push(b'\n');
            return Ok(Bytes::from(out));
        }
        self.frame(event_type, &bytes)
    }

    /// The ERROR event that ends a watch on `status`; `None` (after logging) when even that
    /// cannot be encoded, so the stream just ends.
    fn error_event(&mut self, status: &Value) -> Option<Bytes> {
        match self.frame_value("ERROR", status) {
            Ok(frame) => Some(frame),
            Err(e) => {
                tracing::error!(
                    resource = %self.res.plural,
                    error = %e,
                    "a watch ERROR event could not be encoded; ending the watch without it"
                );
                None
            }
        }
    }

    /// The last event of a watch whose `event_type` event could not be encoded: an ERROR
    /// carrying a 500 `Status`, so the client sees why its watch ended instead of missing an
    /// event without a trace.
    fn encode_failure(&mut self, event_type: &str, error: &EncodeError) -> Option<Bytes> {
        tracing::error!(
            resource = %self.res.plural,
            event = event_type,
            %error,
            "a watch event could not be encoded; ending the watch"
        );
        let status = encode_failure_status(event_type, error);
        self.error_event(&status)
    }
}

/// The `Status` of a watch ended by an event that could not be encoded (500 InternalError).
fn encode_failure_status(event_type: &str, error: &EncodeError) -> Value {
    ApiError::internal(format!(
        "the watch ended: its {event_type} event could not be encoded: {error}"
    ))
    .to_status()
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

/// Starts a watch. Errors before the stream starts are ordinary `Status` answers.
pub(crate) fn watch(
    api: &Api,
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
    let rv = match query.get("resourceVersion") {
        None | Some("") => None,
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))?,
        ),
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
            return Err(forbidden_list_option(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
            ));
        }
        if send_initial == Some(true) && !bookmarks {
            return Err(forbidden_list_option(
                "allowWatchBookmarks",
                "allowWatchBookmarks required when sendInitialEvents is true",
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
    let prefix = storage::prefix(&res, ns.as_deref());
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
    // Snapshot (for initial events) and the event subscription, taken consistently. The
    // initial events are converted (custom resources, one conversion for all) and framed in
    // the stream's task; one that cannot be converted or encoded ends the watch with an ERROR.
    let mut initial_objects = Vec::new();
    let start_rev;
    if initial {
        let list = api
            .storage
            .store()
            .list(&prefix, &opkit_store::ListOptions::default())?;
        start_rev = list.revision;
        initial_objects = list
            .entries
            .into_iter()
            .filter(|entry| selectors.matches_bytes(&entry.value))
            .map(|entry| entry.value)
            .collect();
    } else {
        start_rev = match (send_initial, rv) {
            (Some(false), None) | (Some(false), Some(0)) => api.storage.store().current_revision(),
            (_, Some(v)) => v,
            _ => api.storage.store().current_revision(),
        };
    }
    let initial_end = initial && send_initial == Some(true);
    let converter = api.converter.clone();
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let watcher = api.storage.store().watch(&prefix, start_rev);
    tokio::spawn(async move {
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                let status = ApiError::from(e).to_status();
                if let Some(f) = framer.error_event(&status) {
                    let _ = tx.send(Ok(f)).await;
                }
                return;
            }
        };
        let initial_objects = match converter.stored(&framer.res, initial_objects, true).await {
            Ok(objects) => objects,
            Err(e) => {
                if let Some(f) = framer.error_event(&e.to_status()) {
                    let _ = tx.send(Ok(f)).await;
                }
                return;
            }
        };
        let mut initial_frames = Vec::with_capacity(initial_objects.len() + 1);
        let mut failed = false;
        for object in &initial_objects {
            match framer.frame("ADDED", object) {
                Ok(f) => initial_frames.push(f),
                Err(e) => {
                    initial_frames.extend(framer.encode_failure("ADDED", &e));
                    failed = true;
                    break;
                }
            }
        }
        if initial_end && !failed {
            match framer.frame_value("BOOKMARK", &bookmark(&framer.res, start_rev, true)) {
                Ok(f) => initial_frames.push(f),
                Err(e) => {
                    initial_frames.extend(framer.encode_failure("BOOKMARK", &e));
                    failed = true;
                }
            }
        }
        for f in initial_frames {
            if tx.send(Ok(f)).await.is_err() {
                return;
            }
        }
        if failed {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        let mut last_rev = start_rev;
        loop {
            let (event_type, frame) = tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    let b = bookmark(&framer.res, last_rev, false);
                    ("BOOKMARK", framer.frame_value("BOOKMARK", &b).map(Some))
                }
                next = watcher.next() => match next {
                    None => return,
                    Some(Err(e)) => {
                        let status = ApiError::from(e).to_status();
                        if let Some(f) = framer.error_event(&status) {
                            let _ = tx.send(Ok(f)).await;
                        }
                        return;
                    }
                    Some(Ok(event)) => {
                        last_rev = event.revision;
                        let Some(event_type) = event_type(&selectors, &event) else {
                            continue;
                        };
                        let object = converter
                            .stored(&framer.res, vec![event.value.clone()], false)
                            .await
                            .map(|mut objects| objects.pop().unwrap_or_default());
                        match object {
                            Ok(object) => (event_type, framer.frame(event_type, &object).map(Some)),
                            Err(e) => {
                                if let Some(f) = framer.error_event(&e.to_status()) {
                                    let _ = tx.send(Ok(f)).await;
                                }
                                return;
                            }
                        }
                    }
                }
            };
            match frame {
                Ok(None) => {}
                Ok(Some(f)) => {
                    if tx.send(Ok(f)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    if let Some(f) = framer.encode_failure(event_type, &e) {
                        let _ = tx.send(Ok(f)).await;
                    }
                    return;
                }
            }
        }
    });
    Ok(WatchResponse {
        content_type,
        frames: rx,
    })
}
/// The type of the event a store event is sent as; `None` when the selectors leave it out.
/// Selector transitions follow upstream: an object that stops matching is sent as DELETED,
/// one that starts matching as ADDED.
fn event_type(selectors: &Selectors, event: &opkit_store::Event) -> Option<&'static str> {
    use opkit_store::EventKind;
    if selectors.is_empty() {
        return Some(match event.kind {
            EventKind::Delete => "DELETED",
            EventKind::Put if event.created => "ADDED",
            EventKind::Put => "MODIFIED",
        });
    }
    let now = selectors.matches_bytes(&event.value);
    let before = event
        .prev
        .as_ref()
        .is_some_and(|p| selectors.matches_bytes(p));
    match event.kind {
        EventKind::Delete if before || now => Some("DELETED"),
        EventKind::Delete => None,
        EventKind::Put => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored configmap that is not JSON: nothing written through the API can be, but a
    /// Table (or protobuf) watch must still say why it cannot carry it.
    async fn put_unreadable(api: &Api, res: &Resource, name: &str) {
        let key = storage::key(res, Some("default"), name);
        api.storage
            .store()
            .transact(|txn| {
                txn.put(&key, Bytes::from_static(b"{not json"));
                Ok::<_, ApiError>(())
            })
            .await
            .unwrap();
    }

    /// The next frame, or `None` when the watch ended; fails the test after 10 s of silence.
    async fn next(frames: &mut mpsc::Receiver<Result<Bytes, Infallible>>) -> Option<Bytes> {
        tokio::time::timeout(Duration::from_secs(10), frames.recv())
            .await
            .expect("the watch says something in time")
            .map(|f| f.unwrap())
    }

    async fn assert_ends_with_encode_error(mut watch: WatchResponse, event_type: &str) {
        let frame = next(&mut watch.frames).await.expect("an event");
        let event: Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(event["type"], "ERROR", "{event}");
        let status = &event["object"];
        assert_eq!(
            (status["code"].as_u64(), status["reason"].as_str()),
            (Some(500), Some("InternalError")),
            "{event}"
        );
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "Internal error occurred: the watch ended: its {event_type} event could not be encoded: not valid JSON"
            )),
            "{message}"
        );
        assert!(
            next(&mut watch.frames).await.is_none(),
            "the watch ends after it"
        );
    }

    #[tokio::test]
    async fn an_event_that_cannot_be_encoded_ends_the_watch_with_a_500_error_event() {
        let store = opkit_store::Store::open(opkit_store::StoreConfig::ephemeral()).unwrap();
        let tokens = crate::auth::tokens::TokenSigner::load_or_create(None).unwrap();
        let api = Api::new(
            crate::storage::Storage::new(store),
            "t0ken".into(),
            tokens,
            "127.0.0.1:0".into(),
            Vec::new(),
        );
        let res = api
            .registry
            .snapshot()
            .get("", "v1", "configmaps")
            .cloned()
            .unwrap();
        let from_now = Query::new(vec![(
            "resourceVersion".into(),
            api.storage.store().current_revision().to_string(),
        )]);
        let from_now_watch = watch(
            &api,
            res.clone(),
            Some("default".into()),
            &from_now,
            &Output::Table,
        )
        .unwrap();
        put_unreadable(&api, &res, "later").await;
        assert_ends_with_encode_error(from_now_watch, "ADDED").await;
        // In the initial events too.
        let initial = watch(
            &api,
            res.clone(),
            Some("default".into()),
            &Query::default(),
            &Output::Table,
        )
        .unwrap();
        assert_ends_with_encode_error(initial, "ADDED").await;
    }
}
