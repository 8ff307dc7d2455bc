//! The patch metadata of the built-in kinds, from a static table.
//!
//! Upstream reads `patchStrategy` / `patchMergeKey` from the Go struct tags of the typed object
//! (`k8s.io/api`). The table in `table.rs` holds those tags for every kind of `k8s.io/api`
//! v0.35 (Kubernetes 1.35), plus `CustomResourceDefinition` and `APIService`, but only along the
//! paths that lead to a field with metadata: `Pod → spec → containers (merge by name) → env
//! (merge by name)`, `Deployment → spec → template → …`, `ObjectMeta → finalizers (set)`. A field
//! missing from the table has no metadata (maps merge, lists are replaced), which is what its tags
//! say upstream too.

use std::borrow::Cow;

use crate::StrategicError;
use crate::meta::{FieldMeta, ListType, NoPatchMeta, PatchMeta, PatchStrategy};

#[rustfmt::skip]
mod table;

/// One Go struct: the fields that have patch metadata or lead to some.
#[derive(Debug)]
pub(crate) struct TypeDef {
    name: &'static str,
    fields: &'static [FieldDef],
}

/// One field of a [`TypeDef`].
#[derive(Debug)]
pub(crate) struct FieldDef {
    name: &'static str,
    strategy: PatchStrategy,
    retain_keys: bool,
    merge_key: Option<&'static str>,
    list_type: Option<ListType>,
    list_map_keys: &'static [&'static str],
    /// The type of the value (of the items, for a list), when it has fields with metadata.
    ty: Option<&'static TypeDef>,
}

/// A `patchStrategy` tag.
#[derive(Clone, Copy)]
struct Strategy(PatchStrategy, bool);

const DEFAULT: Strategy = Strategy(PatchStrategy::Default, false);
const MERGE: Strategy = Strategy(PatchStrategy::Merge, false);
const MERGE_RETAIN: Strategy = Strategy(PatchStrategy::Merge, true);
const REPLACE: Strategy = Strategy(PatchStrategy::Replace, false);
const RETAIN: Strategy = Strategy(PatchStrategy::Default, true);
const NONE: Option<ListType> = None;
const ATOMIC: Option<ListType> = Some(ListType::Atomic);
const SET: Option<ListType> = Some(ListType::Set);
const MAP: Option<ListType> = Some(ListType::Map);

/// The table's compact field constructor.
const fn f(
    name: &'static str,
    strategy: Strategy,
    merge_key: Option<&'static str>,
    list_type: Option<ListType>,
    list_map_keys: &'static [&'static str],
    ty: Option<&'static TypeDef>,
) -> FieldDef {
    FieldDef {
        name,
        strategy: strategy.0,
        retain_keys: strategy.1,
        merge_key,
        list_type,
        list_map_keys,
        ty,
    }
}

/// The patch metadata of a built-in type (a kind, or a type nested in one), from a static table
/// of upstream's struct tags. Cheap to copy.
///
/// ```
/// use opkit_strategic::{BuiltinPatchMeta, PatchMeta, PatchStrategy};
/// let pod = BuiltinPatchMeta::for_kind("", "v1", "Pod").unwrap();
/// let spec = pod.field("spec").unwrap().value;
/// let containers = spec.field("containers").unwrap();
/// assert_eq!(containers.strategy, PatchStrategy::Merge);
/// assert_eq!(containers.merge_keys, ["name"]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BuiltinPatchMeta {
    ty: &'static TypeDef,
}

impl BuiltinPatchMeta {
    /// The metadata of a built-in kind, or `None` when `group`/`version`/`kind` is not one (a
    /// custom resource, for which upstream answers 415 to a strategic merge patch). The core
    /// group is `""` (`"core"` is accepted too).
    pub fn for_kind(group: &str, version: &str, kind: &str) -> Option<BuiltinPatchMeta> {
        let group = if group == "core" { "" } else { group };
        table::KINDS
            .iter()
            .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)
            .map(|(_, _, _, ty)| BuiltinPatchMeta { ty })
    }

    /// Like [`BuiltinPatchMeta::for_kind`], from an object's `apiVersion` (`v1`, `apps/v1`).
    pub fn for_api_version(api_version: &str, kind: &str) -> Option<BuiltinPatchMeta> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Self::for_kind(group, version, kind)
    }

    /// The metadata of `ObjectMeta` (`metadata` of every object): `finalizers` is a set,
    /// `ownerReferences` merge by `uid`.
    pub fn object_meta() -> BuiltinPatchMeta {
        BuiltinPatchMeta {
            ty: &table::META_V1_OBJECT_META,
        }
    }

    /// Every built-in kind in the table, as `(group, version, kind)`.
    pub fn kinds() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
        table::KINDS.iter().map(|(g, v, k, _)| (*g, *v, *k))
    }

    /// The Go type name (`Pod`, `PodSpec`, `Container`).
    pub fn name(&self) -> &'static str {
        self.ty.name
    }
}

impl PatchMeta for BuiltinPatchMeta {
    fn field(&self, name: &str) -> Result<FieldMeta<'_>, StrategicError> {
        let Some(def) = self.ty.fields.iter().find(|f| f.name == name) else {
            return Ok(FieldMeta::plain());
        };
        let value: Box<dyn PatchMeta> = match def.ty {
            Some(ty) => Box::new(BuiltinPatchMeta { ty }),
            None => Box::new(NoPatchMeta),
        };
        Ok(FieldMeta {
            strategy: def.strategy,
            retain_keys: def.retain_keys,
            merge_keys: def.merge_key.map(Cow::Borrowed).into_iter().collect(),
            list_type: def.list_type,
            list_map_keys: def
                .list_map_keys
                .iter()
                .map(|k| Cow::Borrowed(*k))
                .collect(),
            value,
        })
    }

    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.ty.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (strategy, merge keys, retainKeys) of the field at `path`.
    fn walk(meta: &dyn PatchMeta, path: &[&str]) -> (PatchStrategy, Vec<String>, bool) {
        let f = meta.field(path[0]).unwrap();
        if path.len() == 1 {
            let keys = f.merge_keys.iter().map(|k| k.to_string()).collect();
            return (f.strategy, keys, f.retain_keys);
        }
        walk(&*f.value, &path[1..])
    }

    fn kind(gv: &str, kind: &str) -> BuiltinPatchMeta {
        BuiltinPatchMeta::for_api_version(gv, kind).unwrap()
    }

    #[test]
    fn every_kind_resolves_and_has_object_meta() {
        let mut n = 0;
        for (g, v, k) in BuiltinPatchMeta::kinds() {
            let meta = BuiltinPatchMeta::for_kind(g, v, k).unwrap();
            let (s, keys, _) = walk(&meta, &["metadata", "finalizers"]);
            assert_eq!((s, keys.len()), (PatchStrategy::Merge, 0), "{g}/{v} {k}");
            let (s, keys, _) = walk(&meta, &["metadata", "ownerReferences"]);
            assert_eq!((s, keys), (PatchStrategy::Merge, vec!["uid".to_string()]));
            n += 1;
        }
        assert!(n > 100, "{n} kinds");
        assert!(BuiltinPatchMeta::for_kind("example.com", "v1", "Foo").is_none());
        assert!(BuiltinPatchMeta::for_kind("core", "v1", "Secret").is_some());
        assert!(BuiltinPatchMeta::for_api_version("v1", "ConfigMap").is_some());
        assert!(
            BuiltinPatchMeta::for_api_version(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition"
            )
            .is_some()
        );
    }

    #[test]
    fn pod_spec_lists_merge_by_their_upstream_keys() {
        let merge = |k: &str| (PatchStrategy::Merge, vec![k.to_string()], false);
        let atomic = (PatchStrategy::Default, vec![], false);
        for (gv, k, prefix) in [
            ("v1", "Pod", &["spec"][..]),
            ("v1", "PodTemplate", &["template", "spec"][..]),
            ("apps/v1", "Deployment", &["spec", "template", "spec"][..]),
            ("apps/v1", "StatefulSet", &["spec", "template", "spec"][..]),
            ("apps/v1", "DaemonSet", &["spec", "template", "spec"][..]),
            ("apps/v1", "ReplicaSet", &["spec", "template", "spec"][..]),
            (
                "v1",
                "ReplicationController",
                &["spec", "template", "spec"][..],
            ),
            ("batch/v1", "Job", &["spec", "template", "spec"][..]),
            (
                "batch/v1",
                "CronJob",
                &["spec", "jobTemplate", "spec", "template", "spec"][..],
            ),
        ] {
            let meta = kind(gv, k);
            let at = |rest: &[&str]| walk(&meta, &[prefix, rest].concat());
            assert_eq!(at(&["containers"]), merge("name"), "{k}");
            assert_eq!(at(&["initContainers"]), merge("name"));
            assert_eq!(at(&["ephemeralContainers"]), merge("name"));
            assert_eq!(at(&["containers", "ports"]), merge("containerPort"));
            assert_eq!(at(&["containers", "env"]), merge("name"));
            assert_eq!(at(&["containers", "envFrom"]), atomic);
            assert_eq!(at(&["containers", "args"]), atomic);
            assert_eq!(at(&["containers", "volumeMounts"]), merge("mountPath"));
            assert_eq!(at(&["containers", "volumeDevices"]), merge("devicePath"));
            assert_eq!(at(&["ephemeralContainers", "env"]), merge("name"));
            assert_eq!(
                at(&["volumes"]),
                (PatchStrategy::Merge, vec!["name".into()], true)
            );
            assert_eq!(at(&["imagePullSecrets"]), merge("name"));
            assert_eq!(at(&["tolerations"]), atomic);
            assert_eq!(at(&["readinessGates"]), atomic);
            assert_eq!(at(&["hostAliases"]), merge("ip"));
            assert_eq!(at(&["topologySpreadConstraints"]), merge("topologyKey"));
            assert_eq!(at(&["schedulingGates"]), merge("name"));
            assert_eq!(
                at(&["resourceClaims"]),
                (PatchStrategy::Merge, vec!["name".into()], true)
            );
        }
        // Server-side apply's keys are kept alongside.
        let pod = kind("v1", "Pod");
        let spec = pod.field("spec").unwrap();
        let containers = spec.value.field("containers").unwrap();
        let ports = containers.value.field("ports").unwrap();
        assert_eq!(ports.list_map_keys, ["containerPort", "protocol"]);
        assert_eq!(ports.list_type, Some(ListType::Map));
    }

    #[test]
    fn other_kinds_carry_their_tags() {
        let merge = |k: &str| (PatchStrategy::Merge, vec![k.to_string()], false);
        assert_eq!(
            walk(&kind("v1", "Service"), &["spec", "ports"]),
            merge("port")
        );
        assert_eq!(
            walk(&kind("v1", "Node"), &["status", "addresses"]),
            merge("type")
        );
        assert_eq!(
            walk(&kind("v1", "Node"), &["status", "conditions"]),
            merge("type")
        );
        assert_eq!(
            walk(&kind("v1", "Node"), &["spec", "taints"]),
            (PatchStrategy::Default, vec![], false)
        );
        assert_eq!(
            walk(&kind("v1", "Node"), &["spec", "podCIDRs"]),
            (PatchStrategy::Merge, vec![], false)
        );
        assert_eq!(
            walk(&kind("v1", "Pod"), &["status", "conditions"]),
            merge("type")
        );
        assert_eq!(
            walk(&kind("apps/v1", "Deployment"), &["status", "conditions"]),
            merge("type")
        );
        assert_eq!(
            walk(&kind("apps/v1", "Deployment"), &["spec", "strategy"]),
            (PatchStrategy::Default, vec![], true)
        );
        assert_eq!(
            walk(
                &kind("rbac.authorization.k8s.io/v1", "ClusterRole"),
                &["rules"]
            ),
            (PatchStrategy::Default, vec![], false)
        );
        assert_eq!(
            walk(
                &kind("policy/v1", "PodDisruptionBudget"),
                &["spec", "selector"]
            ),
            (PatchStrategy::Replace, vec![], false)
        );
        assert_eq!(
            walk(&kind("v1", "ServiceAccount"), &["secrets"]),
            merge("name")
        );
        assert_eq!(
            walk(
                &kind("apiregistration.k8s.io/v1", "APIService"),
                &["status", "conditions"]
            ),
            merge("type")
        );
        let sts = kind("apps/v1", "StatefulSet");
        assert_eq!(
            walk(&sts, &["spec", "volumeClaimTemplates"]),
            (PatchStrategy::Default, vec![], false)
        );
        assert_eq!(
            walk(
                &sts,
                &["spec", "volumeClaimTemplates", "metadata", "finalizers"]
            )
            .0,
            PatchStrategy::Merge
        );
        assert_eq!(kind("v1", "ConfigMap").name(), "ConfigMap");
        assert_eq!(
            walk(&kind("v1", "ConfigMap"), &["data"]),
            (PatchStrategy::Default, vec![], false)
        );
    }
}
