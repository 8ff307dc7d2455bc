//! What a `ClusterCatalog` (OLM v1's catalogd, `olm.operatorframework.io/v1`) says about
//! itself, as pure functions: its two conditions from the outcome of the last attempt to
//! unpack its image, and when a tag reference is polled again. The controller that pulls and
//! serves (opkit-lifecycle's `catalogd`) only does the I/O around these, so every rule of the
//! status is tested here without a registry or a server.
//!
//! The vocabulary is catalogd's: `Serving` is `True/Available` while content is served,
//! `False/Unavailable` before any is, `False/UserSpecifiedUnavailable` under
//! `availabilityMode: Unavailable`; `Progressing` is `True/Succeeded` once the wanted content
//! is served, `True/Retrying` while a failure may pass (the last good content stays served),
//! `False/Blocked` when only an edit of the spec can help.

use std::time::{Duration, SystemTime};

/// The condition saying whether the catalog's content is served.
pub const TYPE_SERVING: &str = "Serving";
/// The condition saying whether the catalog moves towards its spec.
pub const TYPE_PROGRESSING: &str = "Progressing";
/// `Serving=True`: the content is served.
pub const REASON_AVAILABLE: &str = "Available";
/// `Serving=False`: no content has been unpacked yet.
pub const REASON_UNAVAILABLE: &str = "Unavailable";
/// `Serving=False`: `availabilityMode: Unavailable`.
pub const REASON_USER_SPECIFIED_UNAVAILABLE: &str = "UserSpecifiedUnavailable";
/// `Progressing=True`: the spec is reached.
pub const REASON_SUCCEEDED: &str = "Succeeded";
/// `Progressing=True`: a failure that a later attempt may get past.
pub const REASON_RETRYING: &str = "Retrying";
/// `Progressing=False`: a failure only an edit of the spec can fix.
pub const REASON_BLOCKED: &str = "Blocked";

/// One condition as the controller writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionState {
    /// [`TYPE_SERVING`] or [`TYPE_PROGRESSING`].
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: bool,
    /// One of the `REASON_*` constants.
    pub reason: &'static str,
    /// For people.
    pub message: String,
}

/// What the last reconcile of a catalog came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The image `resolved_ref` (digest-pinned) is unpacked, valid and served.
    Serving {
        /// The reference with the digest that was pulled.
        resolved_ref: String,
    },
    /// Pulling, unpacking, loading or validating `reference` failed with `cause`.
    Failed {
        /// The spec's image reference.
        reference: String,
        /// Why, in full.
        cause: String,
        /// Whether earlier content is still served.
        still_serving: bool,
    },
    /// The spec cannot work as written (only an edit helps).
    Blocked {
        /// What is wrong with the spec.
        message: String,
    },
    /// `availabilityMode: Unavailable`: nothing is served.
    UserUnavailable,
}

/// The `Serving` and `Progressing` conditions for `outcome`.
pub fn conditions(outcome: &Outcome) -> [ConditionState; 2] {
    let c = |type_, status, reason, message: String| ConditionState {
        type_,
        status,
        reason,
        message,
    };
    let not_served = || {
        c(
            TYPE_SERVING,
            false,
            REASON_UNAVAILABLE,
            "the catalog's content has not been unpacked yet".into(),
        )
    };
    match outcome {
        Outcome::Serving { resolved_ref } => [
            c(
                TYPE_SERVING,
                true,
                REASON_AVAILABLE,
                format!("serving the content of {resolved_ref}"),
            ),
            c(
                TYPE_PROGRESSING,
                true,
                REASON_SUCCEEDED,
                format!("unpacked {resolved_ref}"),
            ),
        ],
        Outcome::Failed {
            reference,
            cause,
            still_serving,
        } => {
            let serving = if *still_serving {
                c(
                    TYPE_SERVING,
                    true,
                    REASON_AVAILABLE,
                    "serving the last content unpacked".into(),
                )
            } else {
                not_served()
            };
            let progressing = c(
                TYPE_PROGRESSING,
                true,
                REASON_RETRYING,
                format!("cannot unpack {reference}: {cause}"),
            );
            [serving, progressing]
        }
        Outcome::Blocked { message } => [
            not_served(),
            c(TYPE_PROGRESSING, false, REASON_BLOCKED, message.clone()),
        ],
        Outcome::UserUnavailable => [
            c(
                TYPE_SERVING,
                false,
                REASON_USER_SPECIFIED_UNAVAILABLE,
                "availabilityMode is Unavailable: the catalog's content is not served".into(),
            ),
            c(
                TYPE_PROGRESSING,
                true,
                REASON_SUCCEEDED,
                "the catalog is unavailable, as asked".into(),
            ),
        ],
    }
}

/// Whether `reference` names its image by digest (`…@sha256:…`): such an image never
/// changes, so it is never polled.
pub fn is_digest_ref(reference: &str) -> bool {
    reference.contains('@')
}

/// How long until the image of a catalog unpacked at `last_unpacked` is pulled again: never
/// (`None`) for a digest reference or without `pollIntervalMinutes`; zero when due.
pub fn next_poll(
    reference: &str,
    poll_interval_minutes: Option<u32>,
    last_unpacked: SystemTime,
    now: SystemTime,
) -> Option<Duration> {
    if is_digest_ref(reference) {
        return None;
    }
    let interval = Duration::from_secs(u64::from(poll_interval_minutes?) * 60);
    let elapsed = now.duration_since(last_unpacked).unwrap_or_default();
    Some(interval.saturating_sub(elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(outcome: &Outcome) -> Vec<(&'static str, bool, &'static str)> {
        conditions(outcome)
            .iter()
            .map(|c| (c.type_, c.status, c.reason))
            .collect()
    }

    #[test]
    fn a_served_catalog_is_serving_available_and_progressing_succeeded() {
        let outcome = Outcome::Serving {
            resolved_ref: "r.io/cat@sha256:ab".into(),
        };
        assert_eq!(
            summary(&outcome),
            [
                ("Serving", true, "Available"),
                ("Progressing", true, "Succeeded")
            ]
        );
        assert!(
            conditions(&outcome)[0]
                .message
                .contains("r.io/cat@sha256:ab")
        );
    }

    #[test]
    fn a_failure_retries_naming_the_reference_and_keeps_earlier_content_served() {
        let failed = |still_serving| Outcome::Failed {
            reference: "r.io/cat:v1".into(),
            cause: "no such image".into(),
            still_serving,
        };
        let [serving, progressing] = conditions(&failed(false));
        assert_eq!((serving.status, serving.reason), (false, "Unavailable"));
        assert_eq!((progressing.status, progressing.reason), (true, "Retrying"));
        assert_eq!(
            progressing.message,
            "cannot unpack r.io/cat:v1: no such image"
        );
        let [serving, _] = conditions(&failed(true));
        assert_eq!((serving.status, serving.reason), (true, "Available"));
    }

    #[test]
    fn blocked_and_user_unavailable_catalogs_serve_nothing() {
        let blocked = Outcome::Blocked {
            message: "source.type Git".into(),
        };
        assert_eq!(
            summary(&blocked),
            [
                ("Serving", false, "Unavailable"),
                ("Progressing", false, "Blocked")
            ]
        );
        assert_eq!(
            summary(&Outcome::UserUnavailable),
            [
                ("Serving", false, "UserSpecifiedUnavailable"),
                ("Progressing", true, "Succeeded")
            ]
        );
    }

    #[test]
    fn only_tag_references_with_an_interval_are_polled() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let later = |s| t0 + Duration::from_secs(s);
        assert_eq!(next_poll("r.io/c:v1", None, t0, later(10)), None);
        assert_eq!(next_poll("r.io/c@sha256:ab", Some(5), t0, later(10)), None);
        assert_eq!(
            next_poll("r.io/c:v1", Some(5), t0, later(60)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(
            next_poll("r.io/c:v1", Some(5), t0, later(301)),
            Some(Duration::ZERO)
        );
        // A clock that went back counts as no time elapsed.
        assert_eq!(
            next_poll("r.io/c:v1", Some(1), t0, t0 - Duration::from_secs(5)),
            Some(Duration::from_secs(60))
        );
    }
}
