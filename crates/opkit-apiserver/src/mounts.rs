//! Non-resource paths answered by handlers the embedding process mounts ([`ApiServer::mount`]),
//! as kube-apiserver's `NonGoRestfulMux` lets its own components add paths: `opkit up
//! --metering-on-apiserver` serves Metering's `/api/v1/reports/get` on the API server's
//! address this way.
//!
//! A mounted path is an ordinary request as far as the filter chain goes: it is authenticated,
//! audited, may be impersonated, is authorised as a non-resource URL (verb the lower-case
//! method, the path as it came: RBAC's `nonResourceURLs`) and counts against the limits. Only
//! then does the router hand it to the handler, whole (method, URI, headers, body), with the
//! user it acts as in its extensions ([`Caller`]), so the handler can authorise finer (upstream's
//! default `system:discovery` role lets every authenticated user get `/api/*`).
//!
//! A mount may not shadow the server's own documents (`/api`, `/apis/{group}/{version}`,
//! `/version`, `/openapi/…`, health checks): its path must be one the server would otherwise
//! read as a resource path or not know. It wins over a resource of the same path, so it is for
//! paths no resource has (`/api/v1/reports/…`: the core group has no `reports`).
//!
//! [`ApiServer::mount`]: crate::ApiServer::mount

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use http::{Request, Response};

use crate::request::{Target, parse_path};

/// The user a mounted handler's request acts as (after impersonation), in the request's
/// extensions.
pub type Caller = opkit_rbac::UserInfo;

/// What a mounted handler returns.
pub type Answer = Pin<Box<dyn Future<Output = Response<Bytes>> + Send>>;

/// A handler for the requests under a mounted path.
pub type Handler = Arc<dyn Fn(Request<Bytes>) -> Answer + Send + Sync>;

/// Why a path cannot be mounted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MountError {
    /// Not an absolute path, or one ending in `/`.
    #[error("cannot mount {0:?}: a mount path starts with '/' and does not end with one")]
    Malformed(String),
    /// A path the server answers itself.
    #[error("cannot mount {0:?}: the API server serves that path itself")]
    Reserved(String),
    /// Already mounted.
    #[error("cannot mount {0:?}: it is mounted already")]
    Taken(String),
}

/// The mounted paths, longest first.
#[derive(Default)]
pub(crate) struct Mounts(RwLock<Vec<(String, Handler)>>);

impl Mounts {
    pub(crate) fn mount(&self, path: &str, handler: Handler) -> Result<(), MountError> {
        if !path.starts_with('/') || path.ends_with('/') {
            return Err(MountError::Malformed(path.to_owned()));
        }
        if !matches!(parse_path(path), Target::Resource(_) | Target::Unknown) {
            return Err(MountError::Reserved(path.to_owned()));
        }
        let mut mounts = self.0.write().unwrap_or_else(|e| e.into_inner());
        if mounts.iter().any(|(p, _)| p == path) {
            return Err(MountError::Taken(path.to_owned()));
        }
        mounts.push((path.to_owned(), handler));
        mounts.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        Ok(())
    }

    /// The mount serving `path`: the longest mounted path equal to it or a parent of it.
    pub(crate) fn find(&self, path: &str) -> Option<(String, Handler)> {
        let mounts = self.0.read().unwrap_or_else(|e| e.into_inner());
        mounts
            .iter()
            .find(|(p, _)| {
                path.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler(text: &'static str) -> Handler {
        Arc::new(move |_: Request<Bytes>| -> Answer {
            Box::pin(async move { Response::new(Bytes::from(text)) })
        })
    }

    #[test]
    fn a_mount_serves_its_path_and_below_but_not_its_siblings() {
        let mounts = Mounts::default();
        mounts.mount("/api/v1/reports", handler("a")).unwrap();
        mounts.mount("/api/v1/reports/get", handler("b")).unwrap();
        let found = |p: &str| mounts.find(p).map(|(path, _)| path);
        assert_eq!(found("/api/v1/reports").as_deref(), Some("/api/v1/reports"));
        assert_eq!(
            found("/api/v1/reports/get").as_deref(),
            Some("/api/v1/reports/get")
        );
        assert_eq!(
            found("/api/v1/reports/list").as_deref(),
            Some("/api/v1/reports")
        );
        assert_eq!(found("/api/v1/reportsx"), None);
        assert_eq!(found("/api/v1/pods"), None);
    }

    #[test]
    fn the_servers_own_paths_and_malformed_or_taken_ones_are_refused() {
        let mounts = Mounts::default();
        for reserved in [
            "/api",
            "/apis",
            "/api/v1",
            "/apis/x/v1",
            "/version",
            "/readyz",
        ] {
            assert_eq!(
                mounts.mount(reserved, handler("x")),
                Err(MountError::Reserved(reserved.into())),
                "{reserved}"
            );
        }
        assert!(matches!(
            mounts.mount("reports", handler("x")),
            Err(MountError::Malformed(_))
        ));
        assert!(matches!(
            mounts.mount("/reports/", handler("x")),
            Err(MountError::Malformed(_))
        ));
        mounts.mount("/reports", handler("x")).unwrap();
        assert_eq!(
            mounts.mount("/reports", handler("y")),
            Err(MountError::Taken("/reports".into()))
        );
    }
}
