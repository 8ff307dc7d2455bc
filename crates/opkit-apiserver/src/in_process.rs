//! An in-process transport: a `tower::Service` (a `kube::Client` takes one) whose requests are
//! served by [`ApiServer::serve`] directly, without TCP or TLS.
//!
//! The built-in controllers use it, so their writes take the same path as any client's
//! (authentication, routing, admission, store, watch fan-out) at the cost of a function call
//! instead of a round trip through the network stack.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderValue, Request, Response, header};

use crate::response::ResponseBody;
use crate::server::ApiServer;

/// A `tower::Service` that hands each request to an [`ApiServer`] in the same process.
#[derive(Clone)]
pub struct InProcess {
    server: Arc<ApiServer>,
    authorization: HeaderValue,
    user_agent: HeaderValue,
}

impl InProcess {
    /// A transport that authenticates with `token` and identifies itself as `user_agent`.
    pub fn new(server: Arc<ApiServer>, token: &str, user_agent: &str) -> InProcess {
        let authorization = HeaderValue::from_str(&format!("Bearer {token}"))
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        let user_agent =
            HeaderValue::from_str(user_agent).unwrap_or_else(|_| HeaderValue::from_static("opkit"));
        InProcess {
            server,
            authorization,
            user_agent,
        }
    }
}

impl<B> tower::Service<Request<B>> for InProcess
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let headers = req.headers_mut();
        headers.insert(header::AUTHORIZATION, self.authorization.clone());
        if !headers.contains_key(header::USER_AGENT) {
            headers.insert(header::USER_AGENT, self.user_agent.clone());
        }
        let server = self.server.clone();
        Box::pin(async move { Ok(server.serve(req).await) })
    }
}
