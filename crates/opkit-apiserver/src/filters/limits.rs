//! Limits: the in-flight caps (mutating and read-only requests apart), the per-user watch cap,
//! the request timeout (`?timeout=`, at most the server's) and the request body size. Members
//! of `system:masters` are exempt from the caps, as upstream's priority levels exempt them.

use std::sync::Arc;

use http::{Request, Response};
use http_body_util::{BodyExt, Full};

use super::{Body, Filter, Identity, Info, Next};
use crate::error::ApiError;
use crate::limits::Gates;
use crate::request::read_body;
use crate::response::{ResponseBody, error_response, hold_while_streaming};

/// Applies the limits.
pub(crate) struct RequestLimits(pub(crate) Arc<Gates>);

impl Filter for RequestLimits {
    async fn call(&self, req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let gates = &self.0;
        let (Some(identity), Some(info)) = (
            req.extensions().get::<Identity>(),
            req.extensions().get::<Info>(),
        ) else {
            return error_response(&ApiError::internal("the request was not authenticated"));
        };
        let exempt = identity.user.in_group(opkit_rbac::SYSTEM_MASTERS);
        let watch = info.attrs.is_watch();
        let (_in_flight, watch_slot) = if watch {
            match gates.admit_watch(&identity.user.name, exempt) {
                Ok(slot) => (None, slot),
                Err(e) => return error_response(&e),
            }
        } else {
            match gates.admit(info.attrs.is_mutating(), exempt) {
                Ok(permit) => (Some(permit), None),
                Err(e) => return error_response(&e),
            }
        };
        let requested = info.query.get("timeout").map(|t| {
            // A Go duration (`30s`, `1m30s`); negative ones are refused.
            opkit_apimachinery::Duration::parse(t.trim())
                .ok()
                .and_then(|d| d.to_std().ok())
        });
        let timeout = match requested {
            Some(Some(t)) => t.min(gates.limits().request_timeout),
            Some(None) => {
                return error_response(&ApiError::bad_request(
                    "invalid timeout: use a duration such as 30s or 1m",
                ));
            }
            None => gates.limits().request_timeout,
        };
        let work = async {
            let (parts, body) = req.into_parts();
            let body = match read_body(body).await {
                Ok(body) => body,
                Err(e) => return error_response(&e),
            };
            let body = Full::new(body)
                .map_err(|never| match never {})
                .boxed_unsync();
            next.run(Request::from_parts(parts, body)).await
        };
        if watch {
            let resp = work.await;
            return match watch_slot {
                Some(slot) => hold_while_streaming(resp, slot),
                None => resp,
            };
        }
        match tokio::time::timeout(timeout, work).await {
            Ok(resp) => resp,
            Err(_) => error_response(&ApiError::timeout(
                "Timeout: request did not complete within the allotted timeout",
            )),
        }
    }
}
