//! Impersonation: the `Impersonate-User`, `-Group`, `-Uid` and `-Extra-*` headers, applied when
//! the authenticated user may impersonate what they name (`impersonate` on users, groups,
//! uids and `userextras`).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{HeaderMap, Request, Response};

use super::{Body, Filter, Identity, Next};
use crate::api::Api;
use crate::authz::Authorizer;
use crate::error::{ApiError, ApiResult};
use crate::request::{Attributes, User};
use crate::response::{ResponseBody, error_response};

/// Applies impersonation headers.
pub(crate) struct Impersonation(pub(crate) Arc<Api>);

impl Filter for Impersonation {
    async fn call(&self, mut req: Request<Body>, next: Next) -> Response<ResponseBody> {
        let Some(authenticated) = req.extensions().get::<Identity>().cloned() else {
            return error_response(&ApiError::internal("the request was not authenticated"));
        };
        let user = match impersonate(&self.0.authz, authenticated.user.clone(), req.headers()) {
            Ok(user) => user,
            Err(e) => return error_response(&e),
        };
        let identity = Identity {
            impersonator: (!Arc::ptr_eq(&authenticated.user, &user)).then_some(authenticated.user),
            user,
        };
        req.extensions_mut().insert(identity.clone());
        let mut resp = next.run(req).await;
        resp.extensions_mut().insert(identity);
        resp
    }
}

/// Applies the `Impersonate-*` headers: checks that `user` may impersonate what they ask
/// for and returns the impersonated user (or `user` when nothing is asked).
fn impersonate(authz: &Authorizer, user: Arc<User>, headers: &HeaderMap) -> ApiResult<Arc<User>> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            .collect()
    };
    let name = values("impersonate-user").into_iter().next();
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (header, value) in headers {
        if let Some(key) = header.as_str().strip_prefix("impersonate-extra-")
            && let Ok(v) = value.to_str()
        {
            let key = percent_decode(key);
            extra.entry(key).or_default().push(v.trim().to_string());
        }
    }
    let Some(name) = name else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(user);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups, a uid or extra fields without impersonating a user",
        ));
    };
    let check = |attrs: Attributes| authz.authorize(&user, &attrs);
    let mut target = User {
        name: name.clone(),
        ..User::default()
    };
    if let Some((ns, sa)) = opkit_rbac::parse_service_account_username(&name) {
        check(Attributes::resource(
            "impersonate",
            "",
            "serviceaccounts",
            Some(ns),
            Some(sa),
        ))?;
        if groups.is_empty() {
            target.groups = opkit_rbac::service_account_groups(ns);
        }
    } else {
        check(Attributes::resource(
            "impersonate",
            "",
            "users",
            None,
            Some(&name),
        ))?;
    }
    for group in &groups {
        check(Attributes::resource(
            "impersonate",
            "",
            "groups",
            None,
            Some(group),
        ))?;
        if !target.groups.contains(group) {
            target.groups.push(group.clone());
        }
    }
    if let Some(uid) = uid {
        check(Attributes::resource(
            "impersonate",
            "authentication.k8s.io",
            "uids",
            None,
            Some(&uid),
        ))?;
        target.uid = uid;
    }
    for (key, vals) in &extra {
        for v in vals {
            let mut attrs = Attributes::resource(
                "impersonate",
                "authentication.k8s.io",
                "userextras",
                None,
                Some(v),
            );
            if let Attributes::Resource { subresource, .. } = &mut attrs {
                *subresource = Some(key.clone());
            }
            check(attrs)?;
        }
    }
    target.extra = extra;
    if target.name != opkit_rbac::ANONYMOUS_USER && !target.in_group(opkit_rbac::ALL_AUTHENTICATED)
    {
        target
            .groups
            .push(opkit_rbac::ALL_AUTHENTICATED.to_string());
    }
    Ok(Arc::new(target))
}

/// Decodes `%XX` escapes of an `Impersonate-Extra-` header key.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_decoded() {
        assert_eq!(percent_decode("scopes"), "scopes");
        assert_eq!(percent_decode("example.com%2fteam"), "example.com/team");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("%é"), "%é");
    }
}
