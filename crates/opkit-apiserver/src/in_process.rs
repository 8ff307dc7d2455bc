//! An in-process transport: a [`kube::Client`] whose requests are served by [`ApiServer::serve`]
//! directly, without TCP or TLS.
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

use crate::server::{ApiServer, ResponseBody};

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

impl tower::Service<Request<kube::client::Body>> for InProcess {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<kube::client::Body>) -> Self::Future {
        let headers = req.headers_mut();
        headers.insert(header::AUTHORIZATION, self.authorization.clone());
        if !headers.contains_key(header::USER_AGENT) {
            headers.insert(header::USER_AGENT, self.user_agent.clone());
        }
        let server = self.server.clone();
        Box::pin(async move { Ok(server.serve(req).await) })
    }
}

impl ApiServer {
    /// A kube-rs client served in-process by this server, acting as the admin.
    /// `user_agent` names the caller (it becomes the default field manager of its writes).
    pub fn in_process_client(self: &Arc<Self>, user_agent: &str) -> kube::Client {
        let service = InProcess::new(self.clone(), self.token(), user_agent);
        kube::Client::new(service, "default")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, ListParams, PostParams};

    async fn server() -> Arc<ApiServer> {
        let store = opkit_store::Store::open(opkit_store::StoreConfig::ephemeral()).unwrap();
        let server = ApiServer::new(store, "t0ken".into(), "127.0.0.1:0".into());
        server.bootstrap().await.unwrap();
        server
    }

    #[tokio::test]
    async fn in_process_client_reads_and_writes_through_the_api() {
        let server = server().await;
        let client = server.in_process_client("test-agent");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let names: Vec<String> = namespaces
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        assert!(names.contains(&"kube-system".to_string()), "{names:?}");

        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("c1".into());
        let created = cms.create(&PostParams::default(), &cm).await.unwrap();
        assert!(created.metadata.resource_version.is_some());
        let err = cms.create(&PostParams::default(), &cm).await.unwrap_err();
        assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
    }
}
