//! Audit: one record per authenticated request, with its outcome (`crate::audit`).

use std::sync::Arc;

use http::{Request, Response, StatusCode, header};

use super::{Body, Filter, Identity, Info, Next};
use crate::audit::{AuditLog, AuditRecord};
use crate::request::ConnectionInfo;
use crate::response::ResponseBody;

/// Records requests in the audit log, if there is one.
pub(crate) struct Audit(pub(crate) Option<Arc<AuditLog>>);

impl Filter for Audit {
    async fn call(&self, req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let Some(log) = &self.0 else {
            return next.run(req).await;
        };
        let info = req.extensions().get::<Info>().cloned();
        let authenticated = req.extensions().get::<Identity>().cloned();
        let request_uri = req
            .uri()
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
        let user_agent = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let source = req.extensions().get::<ConnectionInfo>().map(|c| c.peer);
        let resp = next.run(req).await;
        let (Some(info), Some(authenticated)) = (info, authenticated) else {
            return resp;
        };
        // Impersonation, further in, hands back whom the request acted as.
        let identity = resp
            .extensions()
            .get::<Identity>()
            .cloned()
            .unwrap_or(authenticated);
        log.record(AuditRecord {
            user: &identity.user,
            impersonator: identity.impersonator.as_deref(),
            attrs: &info.attrs,
            request_uri: &request_uri,
            user_agent: user_agent.as_deref(),
            source,
            code: resp.status().as_u16(),
            received: info.received,
            decision: if resp.status() == StatusCode::FORBIDDEN {
                "forbid"
            } else {
                "allow"
            },
        });
        resp
    }
}
