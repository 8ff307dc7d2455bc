//! Service-account tokens: signed JWTs (ES256) issued through the TokenRequest API
//! (`serviceaccounts/NAME/token`) and verified on every request that presents one.
//!
//! The claims follow upstream's bound tokens (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti`,
//! and `kubernetes.io` naming the namespace, the service account with its uid and any bound
//! object), so tools that decode tokens see what they expect. A token is only as good as the
//! service account behind it: verification checks the signature, the expiry, the audience, and
//! that the service account (and the bound object, if any) still exists with the same uid.
//! Verified signatures are cached for a few seconds, so that a busy client pays for one
//! signature check, not one per request; the service account's existence is checked on every
//! request by the caller.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::User;

/// The issuer and default audience of the tokens, as upstream's default `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// How long a verified token is trusted before it is checked again.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// At most this many verified tokens are remembered.
const CACHE_CAPACITY: usize = 4096;

/// Why a token could not be issued or was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The signing key could not be read, written or parsed.
    #[error("service-account signing key {path}: {reason}")]
    Key {
        /// The key file (or "memory").
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The token is malformed, badly signed, expired or meant for someone else.
    #[error("invalid bearer token: {0}")]
    Invalid(String),
}

/// The `kubernetes.io` claim: who the token speaks for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KubernetesClaims {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub serviceaccount: ObjectClaim,
    /// The pod the token is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectClaim>,
    /// The secret the token is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectClaim>,
}

/// A name and uid.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectClaim {
    /// Name.
    pub name: String,
    /// Uid.
    pub uid: String,
}

/// The claims of a service-account token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// Unique id.
    pub jti: String,
    /// Namespace, service account and bound object.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

impl Claims {
    /// The user the token authenticates: the service account's name, uid and groups.
    pub fn user(&self) -> User {
        let mut user = User::service_account(
            &self.kubernetes.namespace,
            &self.kubernetes.serviceaccount.name,
        );
        user.uid = self.kubernetes.serviceaccount.uid.clone();
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={}", self.jti)],
        );
        if let Some(pod) = &self.kubernetes.pod {
            user.extra.insert(
                "authentication.kubernetes.io/pod-name".into(),
                vec![pod.name.clone()],
            );
            user.extra.insert(
                "authentication.kubernetes.io/pod-uid".into(),
                vec![pod.uid.clone()],
            );
        }
        user
    }
}

/// Signs and verifies service-account tokens with one ECDSA P-256 key.
pub struct TokenSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
    cache: Mutex<HashMap<String, (Claims, Instant)>>,
}

impl TokenSigner {
    /// Loads the signing key from `dir/sa.key` (creating it on first start), or makes a fresh
    /// one in memory when `dir` is `None`.
    pub fn load_or_create(dir: Option<&Path>) -> Result<TokenSigner, TokenError> {
        let key_err = |path: &str, reason: String| TokenError::Key {
            path: path.to_string(),
            reason,
        };
        let pem = match dir {
            None => rcgen::KeyPair::generate()
                .map_err(|e| key_err("memory", e.to_string()))?
                .serialize_pem(),
            Some(dir) => {
                let path = dir.join("sa.key");
                let shown = path.display().to_string();
                if path.exists() {
                    fs::read_to_string(&path).map_err(|e| key_err(&shown, e.to_string()))?
                } else {
                    let pem = rcgen::KeyPair::generate()
                        .map_err(|e| key_err(&shown, e.to_string()))?
                        .serialize_pem();
                    crate::tls::write_private(&path, &pem)
                        .map_err(|e| key_err(&shown, e.to_string()))?;
                    pem
                }
            }
        };
        Self::from_pem(&pem).map_err(|reason| key_err("sa.key", reason))
    }

    fn from_pem(pem: &str) -> Result<TokenSigner, String> {
        let pair = rcgen::KeyPair::from_pem(pem).map_err(|e| e.to_string())?;
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
        let public = pair.public_key_pem();
        let decoding = DecodingKey::from_ec_pem(public.as_bytes()).map_err(|e| e.to_string())?;
        // A stable key id (as upstream's `kid`): a digest of the public key.
        let digest = ring::digest::digest(&ring::digest::SHA256, pair.public_key_raw());
        let key_id = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            &digest.as_ref()[..16],
        );
        Ok(TokenSigner {
            encoding,
            decoding,
            key_id,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Signs `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| TokenError::Invalid(e.to_string()))
    }

    /// Checks the signature, expiry and audience of `token` and returns its claims. Does not
    /// check that the service account still exists; the caller does (see
    /// [`TokenSigner::remember`] and [`TokenSigner::cached`]).
    pub fn verify(&self, token: &str, audience: &str) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&[audience]);
        validation.set_issuer(&[ISSUER]);
        validation.validate_nbf = true;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| TokenError::Invalid(e.to_string()))
    }

    /// The claims of a token verified less than a few seconds ago, still unexpired.
    pub fn cached(&self, token: &str) -> Option<Claims> {
        let cache = self.cache.lock().ok()?;
        let (claims, at) = cache.get(token)?;
        (at.elapsed() < CACHE_TTL && claims.exp > now_unix()).then(|| claims.clone())
    }

    /// Remembers a token whose signature, expiry and audience were verified.
    pub fn remember(&self, token: &str, claims: &Claims) {
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_CAPACITY {
                cache.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
                if cache.len() >= CACHE_CAPACITY {
                    cache.clear();
                }
            }
            cache.insert(token.to_string(), (claims.clone(), Instant::now()));
        }
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Whether a bearer token looks like a JWT (three base64url parts).
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("eyJ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp_in: i64, aud: &str) -> Claims {
        let now = now_unix();
        Claims {
            iss: ISSUER.into(),
            sub: "system:serviceaccount:ns1:robot".into(),
            aud: vec![aud.into()],
            exp: now + exp_in,
            iat: now,
            nbf: now,
            jti: "j1".into(),
            kubernetes: KubernetesClaims {
                namespace: "ns1".into(),
                serviceaccount: ObjectClaim {
                    name: "robot".into(),
                    uid: "u1".into(),
                },
                pod: None,
                secret: None,
            },
        }
    }

    #[test]
    fn signed_tokens_verify_and_name_the_service_account() {
        let signer = TokenSigner::load_or_create(None).unwrap();
        let token = signer.sign(&claims(600, ISSUER)).unwrap();
        assert!(looks_like_jwt(&token));
        let back = signer.verify(&token, ISSUER).unwrap();
        let user = back.user();
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.uid, "u1");
        assert!(
            user.groups
                .contains(&"system:serviceaccounts:ns1".to_string())
        );
    }

    #[test]
    fn expired_foreign_audience_and_foreign_key_tokens_are_rejected() {
        let signer = TokenSigner::load_or_create(None).unwrap();
        let expired = signer.sign(&claims(-5, ISSUER)).unwrap();
        assert!(signer.verify(&expired, ISSUER).is_err());
        let other_aud = signer.sign(&claims(600, "vault")).unwrap();
        assert!(signer.verify(&other_aud, ISSUER).is_err());
        let stranger = TokenSigner::load_or_create(None).unwrap();
        let forged = stranger.sign(&claims(600, ISSUER)).unwrap();
        assert!(signer.verify(&forged, ISSUER).is_err());
        let mut tampered = signer.sign(&claims(600, ISSUER)).unwrap();
        tampered.insert(tampered.len() / 2, 'x');
        assert!(signer.verify(&tampered, ISSUER).is_err());
    }

    #[test]
    fn the_key_persists_in_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenSigner::load_or_create(Some(dir.path())).unwrap();
        let token = a.sign(&claims(600, ISSUER)).unwrap();
        let b = TokenSigner::load_or_create(Some(dir.path())).unwrap();
        assert!(b.verify(&token, ISSUER).is_ok());
    }
}
