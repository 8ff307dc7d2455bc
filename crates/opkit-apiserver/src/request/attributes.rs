//! What a request attempts (upstream's authorizer attributes): the input of authorization,
//! the limits and audit.

use http::Method;
use opkit_rbac::Request as RbacRequest;

use super::{Query, Target, User};
use crate::error::ApiError;

/// What a request attempts, with owned strings (the [`RbacRequest`] borrows from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attributes {
    /// An API resource.
    Resource {
        verb: String,
        group: String,
        version: String,
        resource: String,
        subresource: Option<String>,
        namespace: Option<String>,
        name: Option<String>,
    },
    /// Any other path.
    NonResource { verb: String, path: String },
}

impl Attributes {
    /// The attributes of an HTTP request, as upstream's RequestInfo derives them.
    pub(crate) fn of(method: &Method, path: &str, target: &Target, query: &Query) -> Attributes {
        let Target::Resource(p) = target else {
            return Attributes::NonResource {
                verb: method.as_str().to_ascii_lowercase(),
                path: path.to_string(),
            };
        };
        let watch = p.legacy_watch || query.flag("watch");
        let verb = match (method, p.name.is_some()) {
            (&Method::GET | &Method::HEAD, _) if watch => "watch",
            (&Method::GET | &Method::HEAD, true) => "get",
            (&Method::GET | &Method::HEAD, false) => "list",
            (&Method::POST, _) => "create",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, true) => "delete",
            (&Method::DELETE, false) => "deletecollection",
            (m, _) => {
                return Attributes::Resource {
                    verb: m.as_str().to_ascii_lowercase(),
                    group: p.group.clone(),
                    version: p.version.clone(),
                    resource: p.resource.clone(),
                    subresource: p.subresource.clone(),
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                };
            }
        };
        // A watch of one object (`/watch/.../NAME` or `?fieldSelector=metadata.name=NAME`) is
        // a watch of that name.
        let mut name = p.name.clone();
        if watch
            && name.is_none()
            && let Some(sel) = query.get("fieldSelector")
            && let Some(n) = sel
                .strip_prefix("metadata.name=")
                .filter(|n| !n.contains(','))
        {
            name = Some(n.to_string());
        }
        Attributes::Resource {
            verb: verb.to_string(),
            group: p.group.clone(),
            version: p.version.clone(),
            resource: p.resource.clone(),
            subresource: p.subresource.clone(),
            namespace: p.namespace.clone(),
            name,
        }
    }

    /// A resource request with the given verb.
    pub(crate) fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Attributes {
        Attributes::Resource {
            verb: verb.to_string(),
            group: group.to_string(),
            version: String::new(),
            resource: resource.to_string(),
            subresource: None,
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
        }
    }

    /// The verb.
    pub(crate) fn verb(&self) -> &str {
        match self {
            Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
        }
    }

    /// Whether the request is long-running (a watch): exempt from the request timeout and the
    /// in-flight limits, counted by the watch cap instead.
    pub(crate) fn is_watch(&self) -> bool {
        self.verb() == "watch"
    }

    /// Whether the request changes state.
    pub(crate) fn is_mutating(&self) -> bool {
        !matches!(self.verb(), "get" | "list" | "watch" | "head" | "options")
    }

    /// The borrowed form the policy engine takes.
    pub(crate) fn as_request(&self) -> RbacRequest<'_> {
        match self {
            Attributes::Resource {
                verb,
                group,
                version,
                resource,
                subresource,
                namespace,
                name,
            } => RbacRequest::Resource {
                verb,
                group,
                version,
                resource,
                subresource: subresource.as_deref(),
                namespace: namespace.as_deref(),
                name: name.as_deref(),
            },
            Attributes::NonResource { verb, path } => RbacRequest::NonResource { verb, path },
        }
    }

    pub(crate) fn forbidden(&self, user: &User, reason: &str) -> ApiError {
        let message = opkit_rbac::forbidden_message(user, &self.as_request(), reason);
        match self {
            Attributes::Resource {
                group,
                resource,
                subresource,
                name,
                ..
            } => {
                let kind = match subresource {
                    Some(sub) => format!("{resource}/{sub}"),
                    None => resource.clone(),
                };
                ApiError::forbidden_request(group, &kind, name.as_deref().unwrap_or(""), message)
            }
            Attributes::NonResource { .. } => ApiError::forbidden_request("", "", "", message),
        }
    }
}
