//! DELETE of one object.
//!
//! Without finalizers the object goes at once; otherwise it gets a `deletionTimestamp` and
//! goes when its last finalizer is removed. The garbage collector's finalizers are set from
//! the delete options as upstream's registry does: `orphan` for `propagationPolicy: Orphan`
//! (or the legacy `orphanDependents: true`, or the kind's default), `foregroundDeletion` for
//! `Foreground`. A kind's strategy may handle the first delete itself (namespaces).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde_json::{Value, json};

use super::{Api, admit, committed};
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::registry::Resource;
use crate::request::{ObjectRef, Part, Query};
use crate::response::{Answer, Payload};
use crate::storage::{Current, Outcome, Step};
use crate::strategy::{self, DefaultGc, OnDelete};

/// The finalizer of foreground cascading deletion.
const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizer of orphaning deletion.
const ORPHAN_FINALIZER: &str = "orphan";

/// Deletes one object; see the module documentation.
pub(crate) async fn delete(
    api: &Api,
    target: ObjectRef<'_>,
    options: &DeleteOptions,
    query: &Query,
) -> ApiResult<Answer> {
    let ObjectRef { res, name, .. } = target;
    let strategy = strategy::of(res);
    strategy.check_delete(res, name)?;
    let dry_run = query.dry_run()?;
    let gc = GcOptions::parse(options, query)?;
    let mut warnings = Vec::new();
    let default_orphans = match strategy.default_gc() {
        DefaultGc::Background => false,
        DefaultGc::Orphan { warning } => {
            if gc.is_unset() {
                warnings.push(warning.to_string());
            }
            true
        }
    };
    let admitted_warnings = std::sync::Mutex::new(Vec::new());
    let (gc, admitted_ref) = (&gc, &admitted_warnings);
    let outcome = api
        .storage
        .guaranteed_update(target, |stored: Current| async move {
            // Admission sees the request's version; what is stored stays in the storage one.
            let current = api.converter.to_request(res, stored.object).await?;
            check_preconditions(res, name, &current, stored.revision, options)?;
            let mut new = match strategy.on_delete(&current, gc) {
                OnDelete::Unchanged => return Ok(Step::Done(Payload::Raw(stored.bytes))),
                OnDelete::Mark(mut marked) => {
                    let operation = Operation::Delete;
                    let admitted = admit(
                        api,
                        operation,
                        target,
                        Part::Main,
                        query,
                        Some(&current),
                        &mut marked,
                        dry_run,
                        false,
                    )
                    .await?;
                    *admitted_ref.lock().unwrap_or_else(|p| p.into_inner()) = admitted;
                    if dry_run {
                        return Ok(Step::Done(Payload::Value(marked)));
                    }
                    return Ok(Step::Put(api.converter.to_storage(res, marked).await?));
                }
                OnDelete::Generic => current.clone(),
            };
            let existing: Vec<String> = object::finalizers(&current)
                .into_iter()
                .map(str::to_string)
                .collect();
            let mut finalizers = gc.finalizers(&existing, default_orphans);
            for own in strategy.deletion_finalizers() {
                if !finalizers.iter().any(|f| f == own) {
                    finalizers.push((*own).to_string());
                }
            }
            let immediate = finalizers.is_empty() && strategy.finalized(&current);
            if !immediate {
                let meta = object::meta_mut(&mut new);
                if !object::is_deleting(&current) {
                    meta.insert(
                        "deletionTimestamp".into(),
                        Value::from(object::now_rfc3339()),
                    );
                    meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
                    if res.tracks_generation || res.is_custom() {
                        let g = meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
                        meta.insert("generation".into(), Value::from(g));
                    }
                }
                meta.insert("finalizers".into(), json!(finalizers));
                if object::same_ignoring_version(&current, &new) {
                    return Ok(Step::Done(Payload::Raw(stored.bytes)));
                }
            }
            let admitted = admit(
                api,
                Operation::Delete,
                target,
                Part::Main,
                query,
                Some(&current),
                &mut new,
                dry_run,
                false,
            )
            .await?;
            *admitted_ref.lock().unwrap_or_else(|p| p.into_inner()) = admitted;
            if dry_run {
                return Ok(Step::Done(Payload::Value(new)));
            }
            let new = api.converter.to_storage(res, new).await?;
            Ok(if immediate {
                Step::Delete(new)
            } else {
                Step::Put(new)
            })
        })
        .await?;
    warnings.extend(
        admitted_warnings
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
    );
    committed(api, res, &outcome);
    let payload = match outcome {
        Outcome::Done(payload) => payload,
        Outcome::Put(bytes, _) => Payload::Raw(bytes),
        Outcome::Deleted(bytes, last) => {
            if strategy.delete_returns_object() {
                Payload::Raw(bytes)
            } else {
                Payload::Value(deleted_status(res, name, &last))
            }
        }
    };
    Ok(Answer {
        code: 200,
        payload,
        warnings,
    })
}

/// The `Status` a delete that removed an object answers with (kinds whose strategy does not
/// answer with the object).
fn deleted_status(res: &Resource, name: &str, last: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": name,
            "group": res.group,
            "kind": res.plural,
            "uid": object::meta_str(last, "uid").unwrap_or(""),
        },
    })
}

/// Checks `preconditions.uid` and `preconditions.resourceVersion` of DeleteOptions.
fn check_preconditions(
    res: &Resource,
    name: &str,
    current: &Value,
    revision: u64,
    options: &DeleteOptions,
) -> ApiResult<()> {
    let Some(pre) = &options.preconditions else {
        return Ok(());
    };
    let uid = object::meta_str(current, "uid").unwrap_or("");
    if let Some(want) = pre.uid.as_deref()
        && want != uid
    {
        return Err(ApiError::conflict(
            &res.group,
            &res.plural,
            name,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(rv) = pre.resource_version.as_deref()
        && rv != revision.to_string()
    {
        return Err(ApiError::conflict(
            &res.group,
            &res.plural,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {revision}"
            ),
        ));
    }
    Ok(())
}

/// The garbage-collection part of DeleteOptions: `propagationPolicy` and the legacy
/// `orphanDependents` (from the body, or from query parameters).
#[derive(Debug, Clone, Default)]
pub(crate) struct GcOptions {
    orphan_dependents: Option<bool>,
    propagation: Option<Propagation>,
}

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    /// Dependents lose their owner reference and stay.
    Orphan,
    /// The object goes at once; the garbage collector deletes dependents after.
    Background,
    /// The object stays (`foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    fn parse(text: &str) -> ApiResult<Propagation> {
        match text {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

impl GcOptions {
    pub(crate) fn parse(options: &DeleteOptions, query: &Query) -> ApiResult<GcOptions> {
        let propagation = options
            .propagation_policy
            .as_deref()
            .or(query.get("propagationPolicy"))
            .filter(|p| !p.is_empty())
            .map(Propagation::parse)
            .transpose()?;
        let orphan_dependents = match options.orphan_dependents {
            Some(b) => Some(b),
            _ => match query.get("orphanDependents") {
                Some("true" | "1" | "True") => Some(true),
                Some("false" | "0" | "False") => Some(false),
                _ => None,
            },
        };
        if orphan_dependents.is_some()
            && let Some(p) = &propagation
        {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![Cause::new(
                    "FieldValueInvalid",
                    "propagationPolicy",
                    format!(
                        "Invalid value: {:?}: orphanDependents and deletionPropagation cannot be both set",
                        p.as_str()
                    ),
                )],
            ));
        }
        Ok(GcOptions {
            orphan_dependents,
            propagation,
        })
    }

    /// Neither option was given: the kind's default applies.
    pub(crate) fn is_unset(&self) -> bool {
        self.orphan_dependents.is_none() && self.propagation.is_none()
    }

    /// Upstream's `shouldOrphanDependents`.
    fn should_orphan(&self, existing: &[String], default_orphans: bool) -> bool {
        if let Some(o) = self.orphan_dependents {
            return o;
        }
        if let Some(p) = self.propagation {
            return p == Propagation::Orphan;
        }
        for f in existing {
            match f.as_str() {
                ORPHAN_FINALIZER => return true,
                FOREGROUND_FINALIZER => return false,
                _ => {}
            }
        }
        default_orphans
    }

    /// Upstream's `shouldDeleteDependents`.
    fn should_delete_in_foreground(&self, existing: &[String]) -> bool {
        if self.orphan_dependents.is_some() {
            return false;
        }
        if let Some(p) = self.propagation {
            return p == Propagation::Foreground;
        }
        for f in existing {
            match f.as_str() {
                FOREGROUND_FINALIZER => return true,
                ORPHAN_FINALIZER => return false,
                _ => {}
            }
        }
        false
    }

    /// The finalizers an object gets when deleted with these options (upstream's
    /// `deletionFinalizersForGarbageCollection`); `existing` unchanged when the set is the same.
    fn finalizers(&self, existing: &[String], default_orphans: bool) -> Vec<String> {
        let orphan = self.should_orphan(existing, default_orphans);
        let foreground = self.should_delete_in_foreground(existing);
        with_gc_finalizers(existing, orphan, foreground)
    }

    /// The finalizers a namespace gets on its first delete (upstream's namespace registry:
    /// only explicit options change them).
    pub(crate) fn namespace_finalizers(&self, existing: &[String]) -> Vec<String> {
        let has = |f: &str| existing.iter().any(|e| e == f);
        let (orphan, foreground) = match (self.orphan_dependents, self.propagation) {
            (Some(o), _) => (o, !o),
            (None, Some(p)) => (p == Propagation::Orphan, p == Propagation::Foreground),
            (None, None) => (has(ORPHAN_FINALIZER), has(FOREGROUND_FINALIZER)),
        };
        with_gc_finalizers(existing, orphan, foreground)
    }
}

/// `existing` with the garbage collector's finalizers set to exactly `orphan` and `foreground`
/// (the others kept in order); `existing` unchanged when that is the same set.
fn with_gc_finalizers(existing: &[String], orphan: bool, foreground: bool) -> Vec<String> {
    let mut out: Vec<String> = existing
        .iter()
        .filter(|f| f.as_str() != ORPHAN_FINALIZER && f.as_str() != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN_FINALIZER.into());
    }
    if foreground {
        out.push(FOREGROUND_FINALIZER.into());
    }
    let same = out.len() == existing.len() && out.iter().all(|f| existing.contains(f));
    if same { existing.to_vec() } else { out }
}
