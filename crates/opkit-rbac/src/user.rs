//! Who is asking: the authenticated user, and the well-known names Kubernetes gives to users and
//! groups.
//!
//! RBAC never sees tokens or certificates, only the `user.Info` authentication produced. The
//! names here are the ones upstream hard-codes (`k8s.io/apiserver/pkg/authentication/user` and
//! `.../serviceaccount`); they must match exactly, since bindings written for real clusters name
//! them.

use std::collections::BTreeMap;

/// The group whose members may do anything; upstream's authorization chain allows them before
/// RBAC runs, and the RBAC registry lets them grant anything.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of anonymous requests.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user name of anonymous requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group every service account is in.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of the per-namespace service account group, `system:serviceaccounts:NS`.
pub const SERVICE_ACCOUNTS_GROUP_PREFIX: &str = "system:serviceaccounts:";
/// The prefix of service account user names, `system:serviceaccount:NS:NAME`.
pub const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";

/// An authenticated user, as authentication hands it to authorization (upstream `user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name; for service accounts `system:serviceaccount:NS:NAME`.
    pub name: String,
    /// A unique id, if the authenticator knows one (unused by RBAC).
    pub uid: String,
    /// The groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes from the authenticator (unused by RBAC).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups, no uid and no extra attributes.
    pub fn new(
        name: impl Into<String>,
        groups: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        UserInfo {
            name: name.into(),
            groups: groups.into_iter().map(Into::into).collect(),
            ..UserInfo::default()
        }
    }

    /// The user a service account token authenticates as: its user name and the groups
    /// `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        let mut groups = service_account_groups(namespace);
        groups.push(ALL_AUTHENTICATED.to_owned());
        UserInfo::new(service_account_username(namespace, name), groups)
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The user name of a service account: `system:serviceaccount:NS:NAME`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

/// The groups of a service account in `namespace`: `system:serviceaccounts` and
/// `system:serviceaccounts:NS`.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS_GROUP.to_owned(),
        format!("{SERVICE_ACCOUNTS_GROUP_PREFIX}{namespace}"),
    ]
}

/// Splits a service account user name into `(namespace, name)`.
///
/// Like upstream's `SplitUsername`, it requires the prefix, exactly two `:`-separated parts, a
/// namespace that is a DNS-1123 label and a name that is a DNS-1123 subdomain; anything else is
/// not a service account.
pub fn parse_service_account_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    if name.contains(':') || !is_dns1123_label(namespace) || !is_dns1123_subdomain(name) {
        return None;
    }
    Some((namespace, name))
}

/// Whether `username` is the user name of service account `namespace/name`, without allocating
/// (upstream `MatchesUsername`).
pub fn is_service_account_username(username: &str, namespace: &str, name: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        == Some(name)
}

fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_username_round_trips() {
        let user = service_account_username("kube-system", "default");
        assert_eq!(user, "system:serviceaccount:kube-system:default");
        assert_eq!(
            parse_service_account_username(&user),
            Some(("kube-system", "default"))
        );
        assert!(is_service_account_username(&user, "kube-system", "default"));
        assert!(!is_service_account_username(
            &user,
            "kube",
            "system:default"
        ));
        assert!(!is_service_account_username(&user, "kube-system", "def"));
    }

    #[test]
    fn parse_rejects_non_service_account_names() {
        assert_eq!(parse_service_account_username("alice"), None);
        assert_eq!(
            parse_service_account_username("system:serviceaccount:ns"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount:ns:a:b"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount::a"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount:NS:a"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount:ns:build.bot"),
            Some(("ns", "build.bot"))
        );
    }

    #[test]
    fn service_account_user_has_upstream_groups() {
        let user = UserInfo::service_account("team-a", "builder");
        assert_eq!(user.name, "system:serviceaccount:team-a:builder");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                "system:authenticated"
            ]
        );
        assert!(user.in_group(SERVICE_ACCOUNTS_GROUP));
        assert!(!user.in_group(SYSTEM_MASTERS));
    }
}
