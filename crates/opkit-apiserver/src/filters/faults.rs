//! Fault injection (`crate::faults`): for the one user under test, records its committed writes
//! and its watches, and applies the fault armed on each (a refusal before the router, a lost
//! response or a crash signal after it, a watch that expires or lags). Last in the chain, so
//! every other filter has passed the request as it would without faults.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response};
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::Frame;

use super::{Body, Filter, Identity, Info, Next};
use crate::api::Api;
use crate::error::{ApiError, qualified};
use crate::faults::{Action, Faults, Notification, TraceEntry};
use crate::request::Attributes;
use crate::response::{ResponseBody, error_response, full};

/// Applies the armed faults to the target's requests.
pub(crate) struct FaultInjection(pub(crate) Faults, pub(crate) Arc<Api>);

impl Filter for FaultInjection {
    async fn call(&self, mut req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let FaultInjection(faults, api) = self;
        let user = match (
            req.extensions().get::<Identity>(),
            req.extensions().get::<Info>(),
        ) {
            (Some(identity), Some(_)) if faults.targets(&identity.user.name) => {
                identity.user.name.clone()
            }
            _ => return next.run(req).await,
        };
        if faults.crashing() {
            // An injected crash fired: the process is being killed, and nothing it sends
            // until then may reach the store (a real crash would have stopped it sooner).
            return error_response(&ApiError::unavailable(
                "the client crashed (a fault injected by opkit) and is being restarted",
            ));
        }
        let Some(info) = req.extensions_mut().get_mut::<Info>() else {
            return next.run(req).await;
        };
        if let Some(revision) = stale_revision(faults, info) {
            info.query = info.query.clone().served_stale_at(revision);
        }
        let Some(mut entry) = entry_of(&info.attrs) else {
            return next.run(req).await;
        };
        if entry.verb == "watch" {
            let resp = next.run(req).await;
            if !resp.status().is_success() {
                return resp;
            }
            entry.code = resp.status().as_u16();
            let resource = entry.resource.clone();
            let namespace = entry.namespace.clone();
            let (watch, fault) = faults.watch_opened(entry);
            let mut watching = Watching {
                faults: faults.clone(),
                watch,
                resource,
                namespace,
                delay: None,
                expire_in: None,
                held: None,
            };
            match fault.map(|f| f.action) {
                Some(Action::ExpireWatch { after_events }) => {
                    watching.expire_in = Some(after_events)
                }
                Some(Action::DelayWatch(delay)) => watching.delay = Some(delay),
                _ => {}
            }
            return observe(resp, watching);
        }
        if let Some(status) = faults.take_refusal(entry.clone()) {
            return error_response(&status.error());
        }
        let revision_before = api.storage.store().current_revision();
        let mut resp = next.run(req).await;
        if !resp.status().is_success() {
            return resp;
        }
        entry.code = resp.status().as_u16();
        entry.revisions = (revision_before, api.storage.store().current_revision());
        if entry.name.is_none() && entry.verb == "create" {
            let (name, named) = created_name(resp).await;
            entry.name = name;
            resp = named;
        }
        match faults.committed(entry, &user).map(|f| f.action) {
            Some(Action::LoseResponse(status)) => error_response(&status.error()),
            Some(Action::Crash | Action::StaleRestart { .. }) => {
                signal_when_sent(resp, faults.clone(), Faults::signal_crash)
            }
            Some(Action::Pause) => signal_when_sent(resp, faults.clone(), Faults::signal_pause),
            _ => resp,
        }
    }
}

/// The older revision a stale view answers this read at: only a get or list of a resource
/// (not a subresource, not a page after the first) that allows any revision
/// (`resourceVersion=0`) or one not older than a given one (`resourceVersion=N`, alone or with
/// `resourceVersionMatch=NotOlderThan`). A read without `resourceVersion` asks for the latest
/// state and is never stale.
fn stale_revision(faults: &Faults, info: &Info) -> Option<u64> {
    let Attributes::Resource {
        verb,
        group,
        resource,
        subresource: None,
        ..
    } = &info.attrs
    else {
        return None;
    };
    let query = &info.query;
    let min = query.get("resourceVersion")?.parse::<u64>().ok()?;
    let not_older = matches!(
        query.get("resourceVersionMatch"),
        None | Some("") | Some("NotOlderThan")
    );
    let first_page = query.get("continue").is_none_or(str::is_empty);
    (matches!(verb.as_str(), "get" | "list") && not_older && first_page)
        .then(|| faults.stale_read(&qualified(group, resource), min))?
}

/// The trace entry of a write or a watch; `None` for anything else (reads, non-resource paths).
fn entry_of(attrs: &Attributes) -> Option<TraceEntry> {
    let Attributes::Resource {
        verb,
        group,
        resource,
        subresource,
        namespace,
        name,
        ..
    } = attrs
    else {
        return None;
    };
    matches!(
        verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection" | "watch"
    )
    .then(|| TraceEntry {
        verb: verb.clone(),
        resource: qualified(group, resource),
        subresource: subresource.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        code: 0,
        revisions: (0, 0),
    })
}

/// The name of the object a create answered with (JSON or protobuf), and the response as it
/// was: the trace names what the target created. Only the target's creates are read so.
async fn created_name(resp: Response<ResponseBody>) -> (Option<String>, Response<ResponseBody>) {
    let (parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let protobuf = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/vnd.kubernetes.protobuf"));
    let object = if protobuf {
        opkit_protobuf::decode(&bytes).ok()
    } else {
        serde_json::from_slice::<serde_json::Value>(&bytes).ok()
    };
    let name = object
        .as_ref()
        .and_then(|o| o.pointer("/metadata/name"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    (name, Response::from_parts(parts, full(bytes)))
}

/// Signals the crash once the answer's body has been handed over (dropped by the transport).
fn signal_when_sent(
    resp: Response<ResponseBody>,
    faults: Faults,
    signal: fn(&Faults),
) -> Response<ResponseBody> {
    struct OnDrop(Faults, fn(&Faults));
    impl Drop for OnDrop {
        fn drop(&mut self) {
            (self.1)(&self.0);
        }
    }
    let guard = OnDrop(faults, signal);
    let (parts, body) = resp.into_parts();
    let body = body.map_frame(move |frame| {
        let _guard = &guard;
        frame
    });
    Response::from_parts(parts, body.boxed())
}

/// What a watch of the target does with its events, decided as they pass.
struct Watching {
    faults: Faults,
    /// Its number in the trace (1-based).
    watch: usize,
    /// Its resource, with the group.
    resource: String,
    /// Its namespace (`None`: all namespaces).
    namespace: Option<String>,
    /// Every frame is held this long.
    delay: Option<Duration>,
    /// Events still delivered before the watch ends with `410 Expired`.
    expire_in: Option<usize>,
    /// The object (namespace, name) whose event was held back: nothing more is delivered
    /// until a later event of it arrives, and then the watch expires.
    held: Option<(Option<String>, String)>,
}

impl Watching {
    /// The frame that ends this watch with `410 Expired`, the end recorded: the client is
    /// to relist and watch again.
    fn expired(&self) -> Frame<Bytes> {
        self.faults
            .watch_ended(&self.resource, self.namespace.as_deref());
        expired_frame()
    }
}

/// An event of an object (a `Table` watch's row too).
struct Event {
    kind: String,
    namespace: Option<String>,
    name: String,
    revision: u64,
}

/// The event of an object a watch frame holds, if it is one.
fn event_of(frame: &[u8]) -> Option<Event> {
    let event: serde_json::Value = serde_json::from_slice(frame).ok()?;
    let kind = event.get("type")?.as_str()?;
    if !matches!(kind, "ADDED" | "MODIFIED" | "DELETED") {
        return None;
    }
    let mut object = event.get("object")?;
    if object.get("kind").and_then(serde_json::Value::as_str) == Some("Table") {
        object = object.pointer("/rows/0/object")?;
    }
    let meta = object.get("metadata")?;
    let name = meta.get("name")?.as_str()?.to_string();
    let namespace = meta
        .get("namespace")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string);
    let revision = meta
        .get("resourceVersion")
        .and_then(serde_json::Value::as_str)
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0);
    Some(Event {
        kind: kind.to_string(),
        namespace,
        name,
        revision,
    })
}

/// The `ERROR` event `410 Expired` a server ends a watch with when the client fell behind.
fn expired_frame() -> Frame<Bytes> {
    let status = ApiError::expired("too old resource version: the watch fell behind").to_status();
    let mut end = serde_json::to_vec(&serde_json::json!({"type": "ERROR", "object": status}))
        .unwrap_or_default();
    end.push(b'\n');
    Frame::data(Bytes::from(end))
}

/// Passes the watch's frames through `watching`: records each change of an object (MODIFIED,
/// DELETED) as a notification of the trace and applies what is armed on it or on the watch. Events are read
/// from JSON watches only; another encoding passes untouched (only a delay applies).
fn observe(resp: Response<ResponseBody>, watching: Watching) -> Response<ResponseBody> {
    let json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let (parts, body) = resp.into_parts();
    let start = (BodyStream::new(body), Some(watching));
    let frames = futures::stream::unfold(start, move |(mut rest, watching)| async move {
        let mut w = watching?;
        loop {
            if w.expire_in == Some(0) {
                // The end comes right after the last event passed, not with the next one.
                return Some((Ok(w.expired()), (rest, None)));
            }
            let Ok(frame) = rest.next().await?;
            if let Some(delay) = w.delay {
                tokio::time::sleep(delay).await;
            }
            let event = frame.data_ref().filter(|_| json).and_then(|d| event_of(d));
            let Some(Event {
                kind,
                namespace,
                name,
                revision,
            }) = event
            else {
                if w.held.is_some() {
                    continue;
                }
                return Some((Ok(frame), (rest, Some(w))));
            };
            if let Some(held) = &w.held {
                if held.0 == namespace && held.1 == name {
                    // Overwritten before the client saw it: it relists, and sees only this.
                    return Some((Ok(w.expired()), (rest, None)));
                }
                continue;
            }
            // An ADDED comes from the watch or, had the client listed a moment later, from
            // its list: not a point of the trace (numbers must not depend on that moment).
            let action = (kind != "ADDED")
                .then(|| {
                    w.faults.notified(Notification {
                        watch: w.watch,
                        event: kind,
                        resource: w.resource.clone(),
                        namespace: namespace.clone(),
                        name: name.clone(),
                        revision,
                    })
                })
                .flatten();
            match action {
                Some(Action::Unobserved) => {
                    w.held = Some((namespace, name));
                    continue;
                }
                Some(Action::Expire) => w.expire_in = Some(1),
                _ => {}
            }
            if let Some(n) = &mut w.expire_in {
                *n = n.saturating_sub(1);
            }
            return Some((Ok::<_, Infallible>(frame), (rest, Some(w))));
        }
    });
    Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
}
