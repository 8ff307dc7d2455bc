//! Authorization: whether the user may do what the request attempts (RBAC, `crate::authz`);
//! `403 Forbidden` otherwise.

use std::sync::Arc;

use http::{Request, Response};

use super::{Body, Filter, Identity, Info, Next};
use crate::api::Api;
use crate::error::ApiError;
use crate::response::{ResponseBody, error_response};

/// Authorizes every request that reaches it.
pub(crate) struct Authorization(pub(crate) Arc<Api>);

impl Filter for Authorization {
    async fn call(&self, req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let (Some(identity), Some(info)) = (
            req.extensions().get::<Identity>(),
            req.extensions().get::<Info>(),
        ) else {
            return error_response(&ApiError::internal("the request was not authenticated"));
        };
        match self.0.authz.authorize(&identity.user, &info.attrs) {
            Ok(()) => next.run(req).await,
            Err(e) => error_response(&e),
        }
    }
}
