//! Authentication: who is making a request.
//!
//! Three kinds of credentials are accepted, as on a real cluster: the admin bearer token
//! (user `opkit-admin` in `system:masters`), service-account tokens issued through the
//! TokenRequest API ([`tokens`]), and client certificates signed by the control plane's CA
//! (CN = user, O = groups; read once per connection in [`identity_from_certificate`]).
//! Requests with none of them are anonymous and get 401, except the health and version
//! endpoints, which the server answers before authenticating. Every authenticated user is in
//! `system:authenticated`.
//!
//! This module also serves the authentication APIs: `serviceaccounts/NAME/token`
//! (TokenRequest), TokenReview and SelfSubjectReview (`kubectl auth whoami`).

pub mod tokens;

use std::sync::Arc;

use http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Registry;
use crate::request::ObjectRef;
use crate::storage::Storage;
use tokens::TokenSigner;

pub use opkit_rbac::UserInfo as User;
use opkit_rbac::{ALL_AUTHENTICATED, SYSTEM_MASTERS};

/// The user the admin token authenticates.
pub const ADMIN_USER: &str = "opkit-admin";

/// The admin user: everything is allowed.
pub fn admin() -> User {
    User {
        name: ADMIN_USER.to_string(),
        groups: vec![SYSTEM_MASTERS.to_string(), ALL_AUTHENTICATED.to_string()],
        ..User::default()
    }
}

/// The identity a TLS client proved with its certificate, attached to each request of the
/// connection as an extension.
#[derive(Clone)]
pub struct ClientCertIdentity(pub Arc<User>);

/// The user a client certificate names: CN = user, each O = a group. `None` without a CN.
/// The certificate's chain was verified by the TLS layer against the CA.
pub fn identity_from_certificate(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    if !groups.iter().any(|g| g == ALL_AUTHENTICATED) {
        groups.push(ALL_AUTHENTICATED.to_string());
    }
    Some(User {
        name,
        groups,
        ..User::default()
    })
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The authenticator: who a request's bearer token or client certificate names.
pub(crate) struct Authenticator {
    token: String,
    admin: Arc<User>,
    pub(crate) tokens: TokenSigner,
    storage: Arc<Storage>,
    registry: Arc<Registry>,
}

impl Authenticator {
    /// An authenticator accepting the admin `token`, service-account tokens `tokens` signed
    /// (for service accounts that exist in `storage`) and client certificates.
    pub(crate) fn new(
        token: String,
        tokens: TokenSigner,
        storage: Arc<Storage>,
        registry: Arc<Registry>,
    ) -> Authenticator {
        Authenticator {
            token,
            admin: Arc::new(admin()),
            tokens,
            storage,
            registry,
        }
    }

    /// The user behind a request, from its bearer token or client certificate; 401 when it
    /// presents none or a bad one.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> ApiResult<Arc<User>> {
        if let Some(token) = bearer_token(headers) {
            if constant_time_eq(token.as_bytes(), self.token.as_bytes()) {
                return Ok(self.admin.clone());
            }
            if tokens::looks_like_jwt(token)
                && let Some(user) = self.service_account_token_user(token)
            {
                return Ok(Arc::new(user));
            }
            // A bad token is refused even when a certificate came with it, as upstream does.
            return Err(ApiError::unauthorized());
        }
        if let Some(ClientCertIdentity(user)) = extensions.get::<ClientCertIdentity>() {
            return Ok(user.clone());
        }
        Err(ApiError::unauthorized())
    }

    /// The service account a token speaks for, if the token is valid and the service account
    /// (and any bound object) still exists with the uid the token names.
    fn service_account_token_user(&self, token: &str) -> Option<User> {
        // The signature check is what costs; it is cached. Whether the service account still
        // exists is checked on every request, so deleting it revokes its tokens at once.
        let claims = match self.tokens.cached(token) {
            Some(claims) => claims,
            None => {
                let claims = self.tokens.verify(token, tokens::ISSUER).ok()?;
                self.tokens.remember(token, &claims);
                claims
            }
        };
        let k = &claims.kubernetes;
        let live_uid = |plural: &str, name: &str| -> Option<String> {
            let snapshot = self.registry.snapshot();
            let res = snapshot.get("", "v1", plural)?;
            let entry = self.storage.get(ObjectRef {
                res,
                ns: Some(&k.namespace),
                name,
            })?;
            let obj: Value = serde_json::from_slice(&entry.value).ok()?;
            if object::is_deleting(&obj) {
                return None;
            }
            object::meta_str(&obj, "uid").map(str::to_string)
        };
        if live_uid("serviceaccounts", &k.serviceaccount.name)? != k.serviceaccount.uid {
            return None;
        }
        for (plural, bound) in [("pods", &k.pod), ("secrets", &k.secret)] {
            if let Some(bound) = bound
                && live_uid(plural, &bound.name)? != bound.uid
            {
                return None;
            }
        }
        Some(claims.user())
    }

    /// Issues a token for a service account (the TokenRequest API). `spec` is the
    /// TokenRequest's spec; returns the TokenRequest with its status filled in.
    pub(crate) fn token_request(
        &self,
        namespace: &str,
        name: &str,
        request: &Value,
    ) -> ApiResult<Value> {
        let snapshot = self.registry.snapshot();
        let lookup = |plural: &str, obj_name: &str| -> ApiResult<Value> {
            let res = snapshot
                .get("", "v1", plural)
                .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))?;
            let entry = self
                .storage
                .get(ObjectRef {
                    res,
                    ns: Some(namespace),
                    name: obj_name,
                })
                .ok_or_else(|| ApiError::not_found("", plural, obj_name))?;
            serde_json::from_slice(&entry.value).map_err(ApiError::internal)
        };
        let sa = lookup("serviceaccounts", name)?;
        let sa_uid = object::meta_str(&sa, "uid").unwrap_or_default().to_string();
        let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
        let invalid = |field: &str, message: String| {
            ApiError::invalid(
                "authentication.k8s.io",
                "TokenRequest",
                name,
                vec![crate::error::Cause::new(
                    "FieldValueInvalid",
                    field,
                    &message,
                )],
            )
        };
        let expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => 3600,
            Some(v) => v.as_i64().ok_or_else(|| {
                invalid(
                    "spec.expirationSeconds",
                    format!("Invalid value: {v}: must be an integer"),
                )
            })?,
        };
        if expiration < 600 {
            return Err(invalid(
                "spec.expirationSeconds",
                "may not specify a duration less than 10 minutes".into(),
            ));
        }
        if expiration > 1 << 32 {
            return Err(invalid(
                "spec.expirationSeconds",
                "may not specify a duration larger than 2^32 seconds".into(),
            ));
        }
        let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => vec![tokens::ISSUER.to_string()],
        };
        let mut kubernetes = tokens::KubernetesClaims {
            namespace: namespace.to_string(),
            serviceaccount: tokens::ObjectClaim {
                name: name.to_string(),
                uid: sa_uid,
            },
            pod: None,
            secret: None,
        };
        let bound = spec.get("boundObjectRef").filter(|b| !b.is_null());
        if let Some(bound) = bound {
            let kind = bound.get("kind").and_then(Value::as_str).unwrap_or("");
            let obj_name = bound.get("name").and_then(Value::as_str).unwrap_or("");
            let plural = match kind {
                "Pod" => "pods",
                "Secret" => "secrets",
                other => {
                    return Err(invalid(
                        "spec.boundObjectRef.kind",
                        format!(
                            "Unsupported value: \"{other}\": supported values: \"Pod\", \"Secret\""
                        ),
                    ));
                }
            };
            let obj = lookup(plural, obj_name)?;
            let uid = object::meta_str(&obj, "uid")
                .unwrap_or_default()
                .to_string();
            if let Some(want) = bound.get("uid").and_then(Value::as_str)
                && !want.is_empty()
                && want != uid
            {
                return Err(ApiError::conflict_msg(format!(
                    "the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
                )));
            }
            let claim = Some(tokens::ObjectClaim {
                name: obj_name.to_string(),
                uid,
            });
            if kind == "Pod" {
                kubernetes.pod = claim;
            } else {
                kubernetes.secret = claim;
            }
        }
        let now = tokens::now_unix();
        let claims = tokens::Claims {
            iss: tokens::ISSUER.to_string(),
            sub: opkit_rbac::service_account_username(namespace, name),
            aud: audiences.clone(),
            exp: now + expiration,
            iat: now,
            nbf: now,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes,
        };
        let token = self
            .tokens
            .sign(&claims)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let expires = jiff::Timestamp::from_second(claims.exp)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        let mut out_spec = json!({"audiences": audiences, "expirationSeconds": expiration});
        if let Some(bound) = bound {
            out_spec["boundObjectRef"] = bound.clone();
        }
        Ok(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": object::now_rfc3339()},
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": expires},
        }))
    }

    /// TokenReview: whether a token authenticates, and as whom.
    pub(crate) fn token_review(&self, review: &Value) -> Value {
        let token = review
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or("");
        let wanted: Vec<String> = review
            .pointer("/spec/audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let accepted_audience = wanted.is_empty() || wanted.iter().any(|a| a == tokens::ISSUER);
        let user = if constant_time_eq(token.as_bytes(), self.token.as_bytes()) {
            Some((*self.admin).clone())
        } else if tokens::looks_like_jwt(token) {
            self.service_account_token_user(token)
        } else {
            None
        };
        let status = match user {
            Some(user) if accepted_audience => json!({
                "authenticated": true,
                "user": user_info_json(&user),
                "audiences": [tokens::ISSUER],
            }),
            Some(_) => json!({"authenticated": false, "error": "token audiences not accepted"}),
            None => json!({"authenticated": false, "error": "invalid bearer token"}),
        };
        let mut out = review.clone();
        out["apiVersion"] = json!("authentication.k8s.io/v1");
        out["kind"] = json!("TokenReview");
        out["status"] = status;
        out
    }

    /// SelfSubjectReview: who the requester is.
    pub(crate) fn self_subject_review(&self, user: &User) -> Value {
        json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": {"creationTimestamp": object::now_rfc3339()},
            "status": {"userInfo": user_info_json(user)},
        })
    }
}

/// `authentication.k8s.io/v1 UserInfo` of a user.
pub fn user_info_json(user: &User) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificates_name_the_user_and_groups() {
        let ca = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let cert = crate::tls::issue_client_certificate(
            &ca,
            "alice",
            &["dev".to_string(), "ops".to_string()],
            std::time::Duration::from_secs(3600),
        )
        .unwrap();
        use rustls::pki_types::pem::PemObject;
        let der =
            rustls::pki_types::CertificateDer::from_pem_slice(cert.cert_pem.as_bytes()).unwrap();
        let user = identity_from_certificate(&der).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", "ops", ALL_AUTHENTICATED]);
    }

    #[test]
    fn bearer_tokens_are_read_case_insensitively() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
    }
}
