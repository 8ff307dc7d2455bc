//! The filter chain every request passes through before it reaches the router, as
//! kube-apiserver's handler chain. [`chain`] composes it in one place, outermost first:
//!
//! 1. [`info`]: what the request addresses and attempts (path, query, authorizer attributes);
//!    `/healthz`, `/livez`, `/readyz` and `/version` are answered here, unauthenticated.
//! 2. [`authentication`]: who sends it (admin token, service-account token, client
//!    certificate); `401` otherwise.
//! 3. [`audit`]: records the outcome of every authenticated request, refused ones included —
//!    so it sits right after authentication, as upstream's does.
//! 4. [`impersonation`]: the `Impersonate-*` headers, if the user may use them.
//! 5. [`authorization`]: RBAC; `403` otherwise.
//! 6. [`limits`]: in-flight and watch caps, the request timeout and the body size limit.
//! 7. [`faults`]: for the one user under test, if any, the faults armed on its writes and
//!    watches (`crate::faults`).
//!
//! Then `crate::router` serves it (a mounted path, `crate::mounts`, goes to its handler). Each filter is a tower layer; filters hand what they
//! learned to the ones after them as request extensions ([`Info`], [`Identity`]), and
//! [`Identity`] also travels back on the response for the audit.

mod audit;
mod authentication;
mod authorization;
mod faults;
mod impersonation;
mod info;
mod limits;

pub(crate) use info::Info;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use tower::{Layer, Service, ServiceBuilder};

use crate::api::Api;
use crate::audit::AuditLog;
use crate::faults::Faults;
use crate::limits::Gates;
use crate::request::User;
use crate::response::ResponseBody;

/// The error type of a request body in the chain.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A request body in the chain (the TLS listener's and the in-process transport's alike).
pub(crate) type Body = UnsyncBoxBody<Bytes, BodyError>;

/// Who a request is from, once authentication and impersonation have run.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    /// The user the request acts as.
    pub(crate) user: Arc<User>,
    /// The authenticated user, when it impersonates `user`.
    pub(crate) impersonator: Option<Arc<User>>,
}

/// What a stage of the chain returns.
type Answering = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

/// A service of the chain, called through a shared reference: each call clones the service
/// (an `Arc` or two), as tower's services are meant to be used, without cloning the chain
/// behind it.
trait Stage: Send + Sync {
    fn call(&self, req: Request<Body>) -> Answering;
}

/// A tower service as a [`Stage`].
struct Erased<S>(S);

impl<S> Stage for Erased<S>
where
    S: Service<
            Request<Body>,
            Response = Response<ResponseBody>,
            Error = Infallible,
            Future = Answering,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    fn call(&self, req: Request<Body>) -> Answering {
        let mut service = self.0.clone();
        // Every stage is always ready (admission control is the limits filter's, per
        // request), so readiness is settled without waiting.
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match service.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => service.call(req),
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => unreachable!("the filter chain's stages are always ready"),
        }
    }
}

/// The rest of the chain after a filter (for the server: the whole chain).
#[derive(Clone)]
pub(crate) struct Next(Arc<dyn Stage>);

impl Next {
    /// Passes the request on and returns its response.
    pub(crate) async fn run(self, req: Request<Body>) -> Response<ResponseBody> {
        match self.0.call(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    }
}

/// One stage of the chain: answers the request itself or passes it on to `next`.
pub(crate) trait Filter: Send + Sync + 'static {
    /// Handles one request.
    fn call(
        &self,
        req: Request<Body>,
        next: Next,
    ) -> impl Future<Output = Response<ResponseBody>> + Send;
}

/// A [`Filter`] as a tower layer.
struct FilterLayer<F>(Arc<F>);

impl<F, S> Layer<S> for FilterLayer<F>
where
    S: Service<
            Request<Body>,
            Response = Response<ResponseBody>,
            Error = Infallible,
            Future = Answering,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    type Service = FilterService<F>;

    fn layer(&self, inner: S) -> FilterService<F> {
        FilterService {
            filter: self.0.clone(),
            next: Next(Arc::new(Erased(inner))),
        }
    }
}

/// A [`Filter`] in front of the rest of the chain.
struct FilterService<F> {
    filter: Arc<F>,
    next: Next,
}

impl<F> Clone for FilterService<F> {
    fn clone(&self) -> Self {
        FilterService {
            filter: self.filter.clone(),
            next: self.next.clone(),
        }
    }
}

impl<F: Filter> Service<Request<Body>> for FilterService<F> {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let filter = self.filter.clone();
        let next = self.next.clone();
        Box::pin(async move { Ok(filter.call(req, next).await) })
    }
}

fn filter<F: Filter>(f: F) -> FilterLayer<F> {
    FilterLayer(Arc::new(f))
}

/// The chain in front of the router, outermost first.
pub(crate) fn chain(
    api: Arc<Api>,
    gates: Arc<Gates>,
    audit: Option<Arc<AuditLog>>,
    faults: Faults,
) -> Next {
    let service = ServiceBuilder::new()
        .layer(filter(info::RequestInfo(api.clone())))
        .layer(filter(authentication::Authentication(api.clone())))
        .layer(filter(audit::Audit(audit)))
        .layer(filter(impersonation::Impersonation(api.clone())))
        .layer(filter(authorization::Authorization(api.clone())))
        .layer(filter(limits::RequestLimits(gates)))
        .layer(filter(faults::FaultInjection(faults, api.clone())))
        .service(crate::router::Router(api));
    Next(Arc::new(Erased(service)))
}
