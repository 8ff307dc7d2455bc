//! A resource request's query parameters and who makes it.

use std::sync::Arc;

use super::fields::{BodyFields, FieldCheck, FieldValidation};
use crate::error::{ApiError, ApiResult};

/// The authenticated user of a request (upstream's `user.Info`).
pub(crate) type User = opkit_rbac::UserInfo;

/// Who makes a request. Every request that came through the API is a user's; the server's
/// own writes (bootstrap, CRD cleanup) are the system's. Writes of RBAC objects are checked
/// against what the user may grant (escalation prevention); the system grants nothing it
/// does not already hold, so it is not checked.
#[derive(Debug, Default, Clone)]
pub enum Actor {
    /// The server itself.
    #[default]
    System,
    /// An authenticated (possibly impersonated) user.
    User {
        /// Who.
        user: Arc<User>,
        /// The request's `User-Agent` (empty when the header is absent): the default field
        /// manager of the user's writes.
        user_agent: String,
    },
}

/// Query parameters of a resource request, with who makes it.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pairs: Vec<(String, String)>,
    actor: Actor,
    body_fields: Arc<BodyFields>,
    /// An older revision to serve this read from (a stale-state fault, `crate::faults`).
    stale_at: Option<u64>,
}

impl Query {
    /// From decoded pairs, as the system.
    pub fn new(pairs: Vec<(String, String)>) -> Query {
        Query {
            pairs,
            actor: Actor::System,
            body_fields: Arc::default(),
            stale_at: None,
        }
    }

    /// The same request (actor, body) with other parameters.
    pub fn with_pairs(&self, pairs: Vec<(String, String)>) -> Query {
        Query {
            pairs,
            actor: self.actor.clone(),
            body_fields: self.body_fields.clone(),
            stale_at: self.stale_at,
        }
    }

    /// What the request body says about its own fields (duplicates found while decoding it)
    /// and how a `fieldValidation=Strict` refusal of this write is worded.
    pub fn with_body_fields(mut self, fields: BodyFields) -> Query {
        self.body_fields = Arc::new(fields);
        self
    }

    /// Made by `user`, whose client sent `user_agent`.
    pub fn by_user(mut self, user: Arc<User>, user_agent: Option<&str>) -> Query {
        self.actor = Actor::User {
            user,
            user_agent: user_agent.unwrap_or("").to_string(),
        };
        self
    }

    /// Served from the older `revision` (the request allows it: a stale-state fault).
    pub(crate) fn served_stale_at(mut self, revision: u64) -> Query {
        self.stale_at = Some(revision);
        self
    }

    /// The older revision a stale-state fault serves this read from, if any.
    pub(crate) fn stale_at(&self) -> Option<u64> {
        self.stale_at
    }

    /// Who makes the request.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The user making the request, `None` for the system's own.
    pub fn user(&self) -> Option<&User> {
        match &self.actor {
            Actor::User { user, .. } => Some(user),
            Actor::System => None,
        }
    }

    /// The request's `User-Agent`, `None` for the system's own requests.
    pub fn user_agent(&self) -> Option<&str> {
        match &self.actor {
            Actor::User { user_agent, .. } => Some(user_agent),
            Actor::System => None,
        }
    }

    /// The first value of a parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// All pairs.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// A boolean parameter (`true`, `1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }

    pub(crate) fn dry_run(&self) -> ApiResult<bool> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            ))),
        }
    }

    pub(crate) fn field_check(&self) -> ApiResult<FieldCheck> {
        Ok(FieldCheck {
            validation: FieldValidation::parse(self.get("fieldValidation"))?,
            body: (*self.body_fields).clone(),
        })
    }
}
