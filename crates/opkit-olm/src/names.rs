//! The name rules bundles and catalogs are checked against: Kubernetes object names (DNS-1123),
//! label values, image references, e-mail addresses and URLs. Small, exact, and in one place.

/// Why a name is not valid.
pub(crate) type NameError = String;

/// A DNS-1123 subdomain: at most 253 characters, lowercase alphanumerics, `-` and `.`,
/// starting and ending alphanumeric.
pub(crate) fn dns1123_subdomain(s: &str) -> Result<(), NameError> {
    if s.is_empty() || s.len() > 253 {
        return Err("must be 1 to 253 characters".into());
    }
    let ok = s.split('.').all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    });
    if ok {
        Ok(())
    } else {
        Err("a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".into())
    }
}

/// A DNS-1123 label: at most 63 characters, lowercase alphanumerics and `-`.
pub(crate) fn dns1123_label(s: &str) -> Result<(), NameError> {
    if s.is_empty() || s.len() > 63 || s.contains('.') {
        return Err("a DNS-1123 label must be 1 to 63 characters without '.'".into());
    }
    dns1123_subdomain(s)
}

/// A label value: at most 63 characters, alphanumerics, `-`, `_` and `.`, starting and ending
/// alphanumeric (empty is allowed).
pub(crate) fn label_value(s: &str) -> Result<(), NameError> {
    if s.len() > 63 {
        return Err("a label value must be no more than 63 characters".into());
    }
    let b = s.as_bytes();
    let inner = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    let ends =
        b.is_empty() || (b[0].is_ascii_alphanumeric() && b[b.len() - 1].is_ascii_alphanumeric());
    if inner && ends {
        Ok(())
    } else {
        Err("a label value must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".into())
    }
}

/// A CSV name: a DNS-1123 subdomain that is also a label value (OLM labels objects with it).
pub(crate) fn csv_name(s: &str) -> Result<(), NameError> {
    dns1123_subdomain(s)?;
    label_value(s)
}

/// An image reference (`[host[:port]/]path[:tag][@digest]`), as the Docker reference grammar
/// has it: a lowercase path, an optional tag of at most 128 characters, an optional digest.
pub(crate) fn image_reference(s: &str) -> Result<(), NameError> {
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    if let Some(d) = digest {
        let (alg, hex) = d.split_once(':').ok_or("a digest is algorithm:hex")?;
        if alg.is_empty() || hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("invalid digest {d:?}"));
        }
    }
    // A tag follows the last ':' after the last '/'.
    let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && t.as_bytes()[0] != b'.'
            && t.as_bytes()[0] != b'-'
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Err(format!("invalid tag {t:?}"));
        }
    }
    if name.is_empty() {
        return Err("the repository name is empty".into());
    }
    let mut parts = name.split('/').collect::<Vec<_>>();
    // The first part is a registry host when it has a '.' or ':' or is localhost.
    if parts.len() > 1 && (parts[0].contains(['.', ':']) || parts[0] == "localhost") {
        let host = parts.remove(0);
        let ok = host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
        if !ok {
            return Err(format!("invalid registry host {host:?}"));
        }
    }
    for p in parts {
        let ok = !p.is_empty()
            && p.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            })
            && p.as_bytes()[0].is_ascii_alphanumeric()
            && p.as_bytes()[p.len() - 1].is_ascii_alphanumeric();
        if !ok {
            return Err(format!(
                "repository name component {p:?} must be lowercase alphanumerics separated by '.', '_' or '-'"
            ));
        }
    }
    Ok(())
}

/// Whether `s` is an e-mail address (`local@domain`, optionally `Name <local@domain>`), as
/// Go's `mail.ParseAddress` accepts the common forms.
pub(crate) fn email(s: &str) -> bool {
    let addr = match (s.rfind('<'), s.rfind('>')) {
        (Some(a), Some(b)) if a < b && b == s.len() - 1 => &s[a + 1..b],
        _ => s.trim(),
    };
    match addr.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !addr.contains(char::is_whitespace)
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// Whether `s` is an absolute URL or an absolute path, as Go's `url.ParseRequestURI` wants.
pub(crate) fn request_uri(s: &str) -> bool {
    if s.contains(char::is_whitespace) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.as_bytes()[0].is_ascii_alphabetic()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_names_are_subdomains_and_label_values() {
        assert!(csv_name("etcdoperator.v0.9.4").is_ok());
        assert!(csv_name("Etcd.v1").is_err());
        assert!(csv_name(&format!("a{}", ".b".repeat(40))).is_err());
    }

    #[test]
    fn image_references_follow_the_docker_grammar() {
        for good in [
            "quay.io/coreos/etcd-operator@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b",
            "gcr.io/kubebuilder/kube-rbac-proxy:v0.5.0",
            "localhost:5000/foo/bar:1",
            "busybox",
        ] {
            assert!(image_reference(good).is_ok(), "{good}");
        }
        for bad in ["Quay.io/Foo", "foo:", "foo@sha256:xyz", "foo//bar"] {
            assert!(image_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn emails_and_urls() {
        assert!(email("bianchidavide12+kubegreen@gmail.com"));
        assert!(email("Jane <jane@example.com>"));
        assert!(!email("jane"));
        assert!(request_uri("https://kube-green.dev"));
        assert!(!request_uri("kube-green.dev"));
    }

    #[test]
    fn labels() {
        assert!(dns1123_label("kube-green").is_ok());
        assert!(dns1123_label("kube.green").is_err());
    }
}
