//! Fault injection (`crate::faults`): for the one user under test, records its committed writes
//! and its watches, and applies the fault armed on each (a refusal before the router, a lost
//! response or a crash signal after it, a watch that expires or lags). Last in the chain, so
//! every other filter has passed the request as it would without faults.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response};
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::Frame;

use super::{Body, Filter, Identity, Info, Next};
use crate::error::{ApiError, qualified};
use crate::faults::{Action, Faults, TraceEntry};
use crate::request::Attributes;
use crate::response::{ResponseBody, error_response, full};

/// Applies the armed faults to the target's requests.
pub(crate) struct FaultInjection(pub(crate) Faults);

impl Filter for FaultInjection {
    async fn call(&self, req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let faults = &self.0;
        let entry = match (
            req.extensions().get::<Identity>(),
            req.extensions().get::<Info>(),
        ) {
            (Some(identity), Some(info)) if faults.targets(&identity.user.name) => {
                entry_of(&info.attrs)
            }
            _ => None,
        };
        let Some(mut entry) = entry else {
            return next.run(req).await;
        };
        if entry.verb == "watch" {
            let resp = next.run(req).await;
            if !resp.status().is_success() {
                return resp;
            }
            entry.code = resp.status().as_u16();
            return match faults.watch_opened(entry).map(|f| f.action) {
                Some(Action::ExpireWatch { after_events }) => expire_after(resp, after_events),
                Some(Action::DelayWatch(delay)) => delay_events(resp, delay),
                _ => resp,
            };
        }
        if let Some(status) = faults.take_refusal(entry.clone()) {
            return error_response(&status.error());
        }
        let mut resp = next.run(req).await;
        if !resp.status().is_success() {
            return resp;
        }
        entry.code = resp.status().as_u16();
        if entry.name.is_none() && entry.verb == "create" {
            let (name, named) = created_name(resp).await;
            entry.name = name;
            resp = named;
        }
        match faults.committed(entry).map(|f| f.action) {
            Some(Action::LoseResponse(status)) => error_response(&status.error()),
            Some(Action::Crash) => signal_when_sent(resp, faults.clone()),
            _ => resp,
        }
    }
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
fn signal_when_sent(resp: Response<ResponseBody>, faults: Faults) -> Response<ResponseBody> {
    struct OnDrop(Faults);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.signal_crash();
        }
    }
    let guard = OnDrop(faults);
    let (parts, body) = resp.into_parts();
    let body = body.map_frame(move |frame| {
        let _guard = &guard;
        frame
    });
    Response::from_parts(parts, body.boxed())
}

/// Whether a watch frame is a bookmark (not an event of an object).
fn is_bookmark(frame: &[u8]) -> bool {
    frame.starts_with(br#"{"type":"BOOKMARK""#)
}

/// Passes `after_events` events, then an `ERROR` event `410 Expired`, and ends the watch, as
/// a server does when the client fell behind its watch window. Only JSON watches: another
/// encoding is passed untouched (the fault does not apply).
fn expire_after(resp: Response<ResponseBody>, after_events: usize) -> Response<ResponseBody> {
    let json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if !json {
        return resp;
    }
    let status = ApiError::expired("too old resource version: the watch fell behind").to_status();
    let mut end = serde_json::to_vec(&serde_json::json!({"type": "ERROR", "object": status}))
        .unwrap_or_default();
    end.push(b'\n');
    let (parts, body) = resp.into_parts();
    // (the rest of the watch, events delivered so far, whether the expiry was sent)
    let start = (BodyStream::new(body), 0usize, false);
    let frames = futures::stream::unfold(start, move |(mut rest, mut delivered, ended)| {
        let end = end.clone();
        async move {
            if ended {
                return None;
            }
            if delivered == after_events {
                // The end comes right after the last event passed, not with the next one.
                let expiry: Result<Frame<Bytes>, std::convert::Infallible> =
                    Ok(Frame::data(Bytes::from(end)));
                return Some((expiry, (rest, delivered, true)));
            }
            let Ok(frame) = rest.next().await?;
            let event = frame
                .data_ref()
                .is_some_and(|data| !data.is_empty() && !is_bookmark(data));
            delivered += usize::from(event);
            Some((Ok(frame), (rest, delivered, false)))
        }
    });
    Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
}

/// Holds every frame of the watch `delay` before passing it on.
fn delay_events(resp: Response<ResponseBody>, delay: Duration) -> Response<ResponseBody> {
    let (parts, body) = resp.into_parts();
    let frames = BodyStream::new(body).then(move |frame| async move {
        tokio::time::sleep(delay).await;
        frame
    });
    Response::from_parts(parts, BodyExt::boxed(StreamBody::new(frames)))
}
