//! Parsing request paths into what they address, as kube-apiserver's RequestInfo does.

/// What a URL path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-checks).
    Health,
    /// `/api`: core API versions.
    CoreVersions,
    /// `/apis`: API groups.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    GroupVersion {
        /// Group (empty = core).
        group: String,
        /// Version.
        version: String,
    },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3` or `/openapi/v3/{path}`.
    OpenApiV3(Option<String>),
    /// A resource, a collection or a subresource.
    Resource(ResourcePath),
    /// A path mounted by the embedding process (`crate::mounts`): the mount's path.
    Mounted(String),
    /// Anything else.
    Unknown,
}

/// Coordinates of a resource request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// Group (empty = core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace, if the path has one.
    pub namespace: Option<String>,
    /// Plural resource.
    pub resource: String,
    /// Object name, if addressed.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`…).
    pub subresource: Option<String>,
    /// Legacy `/watch/` prefix was used.
    pub legacy_watch: bool,
}

/// Parses a URL path (without query).
pub fn parse_path(path: &str) -> Target {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').filter(|s| !s.is_empty()).collect();
    match parts.as_slice() {
        ["version"] => Target::Version,
        ["healthz" | "livez" | "readyz", ..] => Target::Health,
        ["api"] => Target::CoreVersions,
        ["apis"] => Target::Groups,
        ["openapi", "v2"] => Target::OpenApiV2,
        ["openapi", "v3"] => Target::OpenApiV3(None),
        ["openapi", "v3", rest @ ..] => Target::OpenApiV3(Some(rest.join("/"))),
        ["apis", group] => Target::Group((*group).to_string()),
        ["api", version] => Target::GroupVersion {
            group: String::new(),
            version: (*version).to_string(),
        },
        ["apis", group, version] => Target::GroupVersion {
            group: (*group).to_string(),
            version: (*version).to_string(),
        },
        ["api", version, rest @ ..] => resource_path("", version, rest),
        ["apis", group, version, rest @ ..] => resource_path(group, version, rest),
        _ => Target::Unknown,
    }
}

fn resource_path(group: &str, version: &str, rest: &[&str]) -> Target {
    let mut rest = rest;
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    let mut namespace = None;
    if rest.first() == Some(&"namespaces")
        && rest.len() > 2
        && !matches!(rest[2], "status" | "finalize")
    {
        namespace = Some(rest[1].to_string());
        rest = &rest[2..];
    }
    let (resource, name, subresource) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        _ => return Target::Unknown,
    };
    Target::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
        legacy_watch,
    })
}

/// Decoded query parameters (percent-decoding included).
pub fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    let Some(q) = query else { return Vec::new() };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse_path(path) {
            Target::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn namespaced_object_paths_split_into_parts() {
        let r = res("/apis/apps/v1/namespaces/default/deployments/web/scale");
        assert_eq!(r.group, "apps");
        assert_eq!(r.namespace.as_deref(), Some("default"));
        assert_eq!(r.resource, "deployments");
        assert_eq!(r.name.as_deref(), Some("web"));
        assert_eq!(r.subresource.as_deref(), Some("scale"));
    }

    #[test]
    fn namespace_paths_address_the_namespaces_resource() {
        let r = res("/api/v1/namespaces/foo");
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("foo"), None)
        );
        let r = res("/api/v1/namespaces/foo/status");
        assert_eq!(r.subresource.as_deref(), Some("status"));
        assert_eq!(r.name.as_deref(), Some("foo"));
        let r = res("/api/v1/namespaces");
        assert_eq!(r.name, None);
    }

    #[test]
    fn legacy_watch_prefix_is_recognised() {
        let r = res("/api/v1/watch/namespaces/default/pods");
        assert!(r.legacy_watch);
        assert_eq!(r.resource, "pods");
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let q = parse_query(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5"));
        assert_eq!(q[0], ("labelSelector".into(), "app=web,tier in (a)".into()));
        assert_eq!(q[1], ("limit".into(), "5".into()));
        assert_eq!(parse_query(Some("x=%zz%"))[0].1, "%zz%");
    }
}
