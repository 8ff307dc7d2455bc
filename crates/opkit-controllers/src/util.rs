//! Small pieces the built-in controllers share: discovery of the served resources (the
//! garbage collector watches every collectable one, the namespace controller empties every
//! namespaced one) and API error checks. Work queues and backoff are the runtime's
//! ([`opkit::workqueue`]).

use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope, verbs};

/// One served resource, as discovery describes it.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// Group, version, kind, plural (the group's preferred version).
    pub ar: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// Its verbs.
    pub verbs: Vec<String>,
}

impl Served {
    /// Whether the resource supports `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// Every served resource (subresources excluded) at its group's preferred version: one
/// aggregated-discovery round trip, falling back to per-group discovery.
pub(crate) async fn discover(client: &kube::Client) -> Result<Vec<Served>, kube::Error> {
    let discovery = match Discovery::new(client.clone()).run_aggregated().await {
        Ok(d) => d,
        Err(_) => Discovery::new(client.clone()).run().await?,
    };
    let mut out = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            out.push(served(ar, &caps));
        }
    }
    Ok(out)
}

fn served(ar: ApiResource, caps: &ApiCapabilities) -> Served {
    Served {
        ar,
        namespaced: caps.scope == Scope::Namespaced,
        verbs: caps.operations.clone(),
    }
}

/// Whether a resource can be listed, watched and deleted (what the garbage collector needs).
pub(crate) fn collectable(s: &Served) -> bool {
    s.supports(verbs::LIST) && s.supports(verbs::WATCH) && s.supports(verbs::DELETE)
}

/// The group of an `apiVersion` (`""` for the core group).
pub(crate) fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// Whether a kube error is an API error with `code`.
pub(crate) fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_of_core_and_named_groups() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
    }
}
