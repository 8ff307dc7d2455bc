//! Request info (upstream's `WithRequestInfo`): what the request addresses and attempts,
//! parsed once for every filter after it. Health checks and `/version` are answered here,
//! before authentication, as kube-apiserver lets anyone read them.

use std::sync::Arc;

use http::{Request, Response};

use super::{Body, Filter, Next};
use crate::api::Api;
use crate::discovery;
use crate::request::{self, Attributes, Query, Target};
use crate::response::{ResponseBody, bytes_response, json_response};

/// What the request addresses and attempts.
#[derive(Clone, Debug)]
pub(crate) struct Info {
    /// What the path addresses.
    pub(crate) target: Target,
    /// The query parameters (the actor is set once authentication and impersonation ran).
    pub(crate) query: Query,
    /// What the request attempts (the authorizer's input).
    pub(crate) attrs: Attributes,
    /// When it arrived.
    pub(crate) received: jiff::Timestamp,
}

/// Parses the request info; a path under a mount (`crate::mounts`) addresses the mount.
pub(crate) struct RequestInfo(pub(crate) Arc<Api>);

impl Filter for RequestInfo {
    async fn call(&self, mut req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let received = jiff::Timestamp::now();
        let path = req.uri().path();
        let target = match self.0.mounts.find(path) {
            Some((mounted, _)) => Target::Mounted(mounted),
            None => request::parse_path(path),
        };
        match target {
            Target::Health => {
                return bytes_response(200, b"ok".to_vec(), "text/plain; charset=utf-8", &[]);
            }
            Target::Version => return json_response(&discovery::version()),
            _ => {}
        }
        let query = Query::new(request::parse_query(req.uri().query()));
        let attrs = Attributes::of(req.method(), req.uri().path(), &target, &query);
        req.extensions_mut().insert(Info {
            target,
            query,
            attrs,
            received,
        });
        next.run(req).await
    }
}
