//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`), as
//! kube-apiserver applies it.
//!
//! # Why
//!
//! It is the patch kubectl sends for the built-in kinds: client-side `kubectl apply`,
//! `kubectl edit`, `kubectl set image`, `kubectl label`, `kubectl patch` (default type). Unlike a
//! JSON merge patch, which replaces lists wholesale, it merges the lists that the API declares
//! mergeable: containers by `name`, ports by `containerPort`, volume mounts by `mountPath`,
//! finalizers as a set. It also carries directives: `$patch: replace | delete | merge`,
//! `$deleteFromPrimitiveList/<list>`, `$setElementOrder/<list>` and `$retainKeys`. A server that
//! gets the order of a merged list wrong makes `kubectl apply` report changes on every run, so
//! the ordering rules are upstream's too.
//!
//! # How
//!
//! * [`strategic_merge`] applies a patch to an object, asking a [`PatchMeta`] field by field how
//!   the value merges (upstream: `strategicpatch.StrategicMergeMapPatch`).
//! * [`BuiltinPatchMeta::for_kind`] gives that metadata for every built-in kind, from a static
//!   table of upstream's `patchStrategy` / `patchMergeKey` struct tags (`k8s.io/api` v0.35);
//!   `None` means "not a built-in kind", for which upstream answers 415.
//! * [`SchemaPatchMeta`] reads it from an OpenAPI v3 schema: the `x-kubernetes-patch-*`
//!   extensions, or for CRD schemas `x-kubernetes-list-type` / `x-kubernetes-list-map-keys`.
//! * [`StrategicError`] carries upstream's messages and [`StrategicError::http_status`] the
//!   status code kube-apiserver answers with.
//!
//! The crate is pure (no I/O) and never panics on user input: nesting is bounded by
//! [`MAX_DEPTH`], list merging is hash-based (no quadratic blow-up on long lists).
//!
//! ```
//! use opkit_strategic::{BuiltinPatchMeta, strategic_merge};
//! use serde_json::json;
//!
//! let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"]},
//!     "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}]}});
//! let patch = json!({"metadata": {"finalizers": ["b"]},
//!     "spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}});
//! let meta = BuiltinPatchMeta::for_kind("", "v1", "Pod").unwrap();
//! let out = strategic_merge(&pod, &patch, &meta).unwrap();
//! assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
//! assert_eq!(out["spec"]["containers"][0]["env"], json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]));
//! ```
//!
//! # Differences from upstream
//!
//! Every patch upstream applies gives the same result here (its own test cases pass, merged
//! list order included), except where upstream leaves leftovers for its typed decoding to drop:
//! values taken from the patch are cleaned of `null`s and directives here. Beyond that, this
//! crate is more lenient where upstream fails or panics: `$patch: merge` is accepted (upstream
//! rejects it, though its design doc lists it); scalar lists mixing types (`["a", 1]`, `1` and
//! `1.5`) or holding `null` merge; a `$setElementOrder` of a list without the `merge` strategy
//! is ignored; `$patch: replace` on a map the object lacks sets it (upstream drops it). It is
//! stricter in two places: unknown `$patch` values are errors everywhere (upstream silently
//! drops them inside new values), and a `$deleteFromPrimitiveList` holding maps or lists is
//! refused. `$deleteFromPrimitiveList` runs after the rest of its map (upstream: in Go's random
//! map order). Fields unknown to the metadata merge like fields without metadata; upstream
//! reports them later, when it decodes the result into the typed object — the server's
//! validation plays that part here.

mod builtin;
mod error;
mod merge;
mod meta;
mod schema;

pub use builtin::BuiltinPatchMeta;
pub use error::StrategicError;
pub use merge::{MAX_DEPTH, strategic_merge, strategic_merge_owned};
pub use meta::{FieldMeta, ListType, NoPatchMeta, PatchMeta, PatchStrategy};
pub use schema::SchemaPatchMeta;
