//! What the manager's caches hold: which objects, and how much of each.
//!
//! By default a manager watches every kind its controllers name across the whole cluster, which
//! needs a ClusterRole. An operator that should only manage some namespaces (a team's operator,
//! one tenant of several) or only labelled objects narrows its caches with [`CacheOptions`], as
//! controller-runtime's `cache.Options{DefaultNamespaces, DefaultLabelSelector,
//! DefaultFieldSelector, ByObject}`: defaults for the whole manager
//! ([`ManagerBuilder::cache`](crate::ManagerBuilder::cache) and its conveniences
//! [`namespaces`](crate::ManagerBuilder::namespaces),
//! [`label_selector`](crate::ManagerBuilder::label_selector),
//! [`field_selector`](crate::ManagerBuilder::field_selector)), overridden per kind with
//! [`ManagerBuilder::cache_for`](crate::ManagerBuilder::cache_for). A namespace-scoped manager
//! opens one watch per namespace (all feeding the kind's one cache) and derives Roles instead
//! of a ClusterRole ([`Manager::rbac_yaml`](crate::Manager::rbac_yaml)), so it runs under
//! namespaced RBAC.
//!
//! Caches also drop what reconciles never read: `metadata.managedFields` and the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation are stripped before an object
//! is cached (controller-runtime's `TransformStripManagedFields`). They are often the larger
//! half of an object, and server-side apply does not need them on the client — the server
//! keeps them. [`CacheOptions::keep_managed_fields`] keeps them for a controller that reads
//! them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;

use crate::informer::Object;

/// The annotation `kubectl apply` (client-side) stores the whole applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Which objects a cache holds and what of them it keeps; see the [module docs](self).
///
/// Every setting is optional: an unset one falls back to the manager's default (for a
/// per-kind [`cache_for`](crate::ManagerBuilder::cache_for)) or to "everything" (for the
/// manager's defaults). A default label or field selector applies to every kind — the primary
/// kind and the owned kinds alike — so the objects an operator creates must carry the labels
/// it selects on, or be exempted with `cache_for::<Kind>(CacheOptions::new().label_selector(""))`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheOptions {
    namespaces: Option<Vec<String>>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    keep_managed_fields: Option<bool>,
}

impl CacheOptions {
    /// Options that set nothing (everything falls back to the defaults).
    pub fn new() -> CacheOptions {
        CacheOptions::default()
    }

    /// Watch namespaced kinds in these namespaces only (one watch per namespace); an empty
    /// list means every namespace. Cluster-scoped kinds ignore it. Scoping to namespaces is
    /// what lets the operator run under Roles in those namespaces instead of a ClusterRole.
    pub fn namespaces(mut self, namespaces: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut list: Vec<String> = namespaces.into_iter().map(Into::into).collect();
        list.sort();
        list.dedup();
        self.namespaces = Some(list);
        self
    }

    /// Watch every namespace, whatever the manager's default: for a kind that must be seen
    /// cluster-wide by an otherwise namespace-scoped manager (its rules then go into the
    /// ClusterRole).
    pub fn all_namespaces(mut self) -> Self {
        self.namespaces = Some(Vec::new());
        self
    }

    /// Cache only objects matching this label selector (`app=web,tier!=cache`); `""` selects
    /// everything (to exempt one kind from a manager-wide selector). The server filters, so
    /// objects outside the selector cost neither memory nor bandwidth; an object whose labels
    /// stop matching leaves the cache as if deleted.
    pub fn label_selector(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    /// Cache only objects matching this field selector (`metadata.name=x`,
    /// `status.phase=Running`; which fields are selectable depends on the kind); `""` selects
    /// everything.
    pub fn field_selector(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }

    /// Keep `metadata.managedFields` and the `last-applied-configuration` annotation in the
    /// cached objects (stripped by default: they are large and reconciles rarely read them).
    ///
    /// Writing back a cached object is safe for `managedFields` (an update without them
    /// keeps the stored ones, on Kubernetes as here) but not for the annotation: a full update
    /// (`Api::replace`) of a stripped copy removes `last-applied-configuration` from the
    /// stored object, and the next `kubectl apply` of it cannot compute deletions. Patches and
    /// server-side apply — what opkit's helpers send — leave it alone. A controller that
    /// replaces whole objects of a kind users `kubectl apply` should keep them for that kind.
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.keep_managed_fields = Some(keep);
        self
    }

    /// These options, with every unset setting taken from `defaults`.
    fn or(&self, defaults: &CacheOptions) -> CacheOptions {
        CacheOptions {
            namespaces: self
                .namespaces
                .clone()
                .or_else(|| defaults.namespaces.clone()),
            label_selector: self
                .label_selector
                .clone()
                .or_else(|| defaults.label_selector.clone()),
            field_selector: self
                .field_selector
                .clone()
                .or_else(|| defaults.field_selector.clone()),
            keep_managed_fields: self.keep_managed_fields.or(defaults.keep_managed_fields),
        }
    }
}

/// One kind's cache settings, with the defaults applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KindCache {
    /// The namespaces to watch (empty: all, or the kind is cluster-scoped).
    pub namespaces: Vec<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    keep_managed_fields: bool,
}

impl KindCache {
    /// The list/watch parameters.
    pub(crate) fn watcher_config(&self) -> watcher::Config {
        watcher::Config {
            label_selector: self.label_selector.clone().filter(|s| !s.is_empty()),
            field_selector: self.field_selector.clone().filter(|s| !s.is_empty()),
            ..watcher::Config::default()
        }
    }

    /// Drops what the cache does not keep from an object about to be cached.
    pub(crate) fn trim(&self, meta: &mut ObjectMeta) {
        if self.keep_managed_fields {
            return;
        }
        meta.managed_fields = None;
        if let Some(annotations) = meta.annotations.as_mut() {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                meta.annotations = None;
            }
        }
    }
}

/// A manager's cache settings: its defaults and the per-kind overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CacheConfig {
    pub defaults: CacheOptions,
    /// By (API group, kind): a per-kind override covers the kind's full and metadata-only
    /// caches alike.
    pub by_kind: BTreeMap<(String, String), CacheOptions>,
}

impl CacheConfig {
    pub(crate) fn set_for<K: Object>(&mut self, options: CacheOptions) {
        self.by_kind.insert(
            (K::group(&()).into_owned(), K::kind(&()).into_owned()),
            options,
        );
    }

    /// The settings of kind `kind` in API group `group`, namespaced or not.
    pub(crate) fn resolve(&self, group: &str, kind: &str, namespaced: bool) -> KindCache {
        let options = match self.by_kind.get(&(group.to_string(), kind.to_string())) {
            Some(o) => o.or(&self.defaults),
            None => self.defaults.clone(),
        };
        KindCache {
            namespaces: if namespaced {
                options.namespaces.unwrap_or_default()
            } else {
                Vec::new()
            },
            label_selector: options.label_selector,
            field_selector: options.field_selector,
            keep_managed_fields: options.keep_managed_fields.unwrap_or(false),
        }
    }

    /// Whether some namespaced kind is watched in only some namespaces (by default or by an
    /// override).
    pub(crate) fn is_scoped(&self) -> bool {
        self.defaults
            .namespaces
            .as_ref()
            .is_some_and(|n| !n.is_empty())
            || self
                .by_kind
                .values()
                .any(|o| o.namespaces.as_ref().is_some_and(|n| !n.is_empty()))
    }

    /// The manager's default namespaces (empty: all).
    pub(crate) fn default_namespaces(&self) -> &[String] {
        self.defaults.namespaces.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    fn scoped() -> CacheConfig {
        let mut c = CacheConfig {
            defaults: CacheOptions::new()
                .namespaces(["b", "a", "b"])
                .label_selector("team=x"),
            ..CacheConfig::default()
        };
        c.set_for::<ConfigMap>(CacheOptions::new().all_namespaces().label_selector(""));
        c.set_for::<Deployment>(CacheOptions::new().keep_managed_fields(true));
        c
    }

    #[test]
    fn per_kind_options_override_only_what_they_set() {
        let c = scoped();
        let pods = c.resolve("", "Pod", true);
        assert_eq!(pods.namespaces, ["a", "b"]);
        assert_eq!(
            pods.watcher_config().label_selector.as_deref(),
            Some("team=x")
        );
        let cms = c.resolve("", "ConfigMap", true);
        assert!(cms.namespaces.is_empty());
        assert_eq!(cms.watcher_config().label_selector, None);
        let deployments = c.resolve("apps", "Deployment", true);
        assert_eq!(deployments.namespaces, ["a", "b"]);
        assert!(deployments.keep_managed_fields);
        assert!(!pods.keep_managed_fields);
    }

    #[test]
    fn cluster_scoped_kinds_ignore_namespaces() {
        let c = scoped();
        let ns = c.resolve("", "Namespace", false);
        assert!(ns.namespaces.is_empty());
        assert_eq!(
            ns.watcher_config().label_selector.as_deref(),
            Some("team=x")
        );
    }

    #[test]
    fn scoping_is_known_from_defaults_or_overrides() {
        assert!(scoped().is_scoped());
        assert!(!CacheConfig::default().is_scoped());
        let mut c = CacheConfig::default();
        c.set_for::<ConfigMap>(CacheOptions::new().namespaces(["x"]));
        assert!(c.is_scoped());
        assert!(c.default_namespaces().is_empty());
    }

    #[test]
    fn managed_fields_and_last_applied_are_stripped_unless_kept() {
        let meta = || ObjectMeta {
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            annotations: Some(
                [
                    (LAST_APPLIED.to_string(), "{}".to_string()),
                    ("keep".to_string(), "me".to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        };
        let mut m = meta();
        KindCache::default().trim(&mut m);
        assert_eq!(m.managed_fields, None);
        assert_eq!(
            m.annotations,
            Some([("keep".to_string(), "me".to_string())].into())
        );
        let mut m = meta();
        CacheConfig {
            defaults: CacheOptions::new().keep_managed_fields(true),
            ..CacheConfig::default()
        }
        .resolve("", "ConfigMap", true)
        .trim(&mut m);
        assert_eq!(m, meta());
    }
}
