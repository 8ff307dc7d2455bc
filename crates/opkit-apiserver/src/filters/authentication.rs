//! Authentication: who sends the request (`crate::auth`); `401 Unauthorized` otherwise.

use std::sync::Arc;

use http::{Request, Response};

use super::{Body, Filter, Identity, Next};
use crate::api::Api;
use crate::response::{ResponseBody, error_response};

/// Authenticates every request that reaches it.
pub(crate) struct Authentication(pub(crate) Arc<Api>);

impl Filter for Authentication {
    async fn call(&self, mut req: Request<Body>, next: Next) -> Response<ResponseBody> {
        match self.0.authn.authenticate(req.headers(), req.extensions()) {
            Ok(user) => {
                req.extensions_mut().insert(Identity {
                    user,
                    impersonator: None,
                });
                next.run(req).await
            }
            Err(e) => error_response(&e),
        }
    }
}
