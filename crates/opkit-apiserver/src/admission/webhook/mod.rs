//! Admission webhooks (`admissionregistration.k8s.io/v1`): the control plane calls the
//! MutatingWebhookConfigurations' webhooks, then the ValidatingWebhookConfigurations', with
//! upstream's matching, failure policies, timeouts, JSONPatch mutations with reinvocation,
//! warnings and error texts (`k8s.io/apiserver/pkg/admission/plugin/webhook`).
//!
//! `config` keeps the parsed webhooks (refreshed after every configuration write),
//! `matching` decides which webhooks a write reaches, `review` is the wire format;
//! `crate::webhook_client` makes the HTTPS call (conversion webhooks share it).

pub(super) mod config;
pub(super) mod matching;
pub(super) mod review;

use serde_json::{Map, Value, json};

use config::Hook;
pub(crate) use config::Webhooks;
use matching::Attributes;

use crate::admission::{AdmissionRequest, Operation};
use crate::api::Api;
use crate::error::{ApiError, ApiResult};
use crate::registry::Resource;
use crate::request::ObjectRef;

/// The objects of a write as one version of its resource shows them (`Null` where there is
/// none: no object on delete, no old object on create).
pub(in crate::admission) struct Versioned {
    pub(in crate::admission) version: String,
    pub(in crate::admission) object: Value,
    pub(in crate::admission) old: Value,
}

/// One write as the webhooks see it.
pub(crate) struct Write<'a> {
    pub(crate) api: &'a Api,
    pub(crate) res: &'a Resource,
    pub(crate) request: &'a AdmissionRequest<'a>,
}

impl Write<'_> {
    pub(in crate::admission) fn attributes<'o>(
        &'o self,
        object: Option<&'o Value>,
    ) -> Attributes<'o> {
        let r = self.request;
        let namespace_object = r.group.is_empty() && r.resource == "namespaces";
        Attributes {
            operation: r.operation,
            group: r.group,
            version: r.version,
            resource: r.resource,
            subresource: r.subresource.unwrap_or(""),
            namespace: match namespace_object {
                true => r.name,
                false => r.namespace.unwrap_or(""),
            },
            object,
            old: r.old,
        }
    }

    /// The other served versions of this resource (`matchPolicy: Equivalent`).
    pub(in crate::admission) fn other_versions(&self) -> Vec<String> {
        let snapshot = self.api.registry.snapshot();
        snapshot
            .resources()
            .iter()
            .filter(|r| {
                r.group == self.res.group
                    && r.plural == self.res.plural
                    && r.version != self.res.version
            })
            .map(|r| r.version.clone())
            .collect()
    }

    pub(in crate::admission) fn namespace_labels(&self, ns: &str) -> Map<String, Value> {
        self.namespace_object(ns)
            .and_then(|n| n.pointer("/metadata/labels").cloned())
            .and_then(|l| l.as_object().cloned())
            .unwrap_or_default()
    }

    /// The stored Namespace `ns`, if there is one.
    pub(in crate::admission) fn namespace_object(&self, ns: &str) -> Option<Value> {
        let snapshot = self.api.registry.snapshot();
        let res = snapshot.get("", "v1", "namespaces")?;
        let target = ObjectRef {
            res,
            ns: None,
            name: ns,
        };
        self.api
            .storage
            .current(target)
            .ok()
            .map(|c| c.object.clone())
    }

    /// What `hook` is called with, if it is called for this write at all: its rules,
    /// selectors and `matchConditions` decide (the conditions see the objects in the version
    /// the webhook is called with). A condition that cannot be evaluated fails the write
    /// unless the webhook's failure policy ignores that.
    async fn reaches(
        &self,
        hook: &Hook,
        object: Option<&Value>,
        others: &[String],
    ) -> ApiResult<Option<Versioned>> {
        let a = self.attributes(object);
        let Some(version) =
            matching::matched_version(&hook.rules, hook.exact, matching::rule_matches, &a, others)
        else {
            return Ok(None);
        };
        let selected = matching::object_matches(&hook.object_selector, &a)
            && matching::namespace_matches(&hook.namespace_selector, &a, |ns| {
                self.namespace_labels(ns)
            });
        if !selected {
            return Ok(None);
        }
        let versioned = self.versioned(&version, object).await?;
        match self.conditions_hold(hook, &versioned) {
            Ok(true) => Ok(Some(versioned)),
            Ok(false) => Ok(None),
            Err(_) if hook.ignore_failures => Ok(None),
            Err(e) => Err(ApiError::internal(format!(
                "failed calling webhook \"{}\": failed evaluating match conditions: {e}",
                hook.name
            ))),
        }
    }

    /// Upstream's `matchConditions`: any false condition skips the webhook; otherwise an
    /// evaluation error is an error; otherwise (all true) it is called.
    fn conditions_hold(&self, hook: &Hook, versioned: &Versioned) -> Result<bool, String> {
        if hook.conditions.is_empty() {
            return Ok(true);
        }
        let review = self.review("", versioned);
        let request = serde_json::to_value(&review).unwrap_or(Value::Null);
        let variables = [
            ("object", &review.object),
            ("oldObject", &review.old_object),
            ("request", &request),
        ];
        let mut errors = Vec::new();
        for (name, compiled) in &hook.conditions {
            let result = compiled
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|e| e.evaluate_bool(&variables));
            match result {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => errors.push(format!("matchCondition '{name}' error: {e}")),
            }
        }
        match errors.is_empty() {
            true => Ok(true),
            false => Err(errors.join(", ")),
        }
    }

    /// The write's objects as the request's version sees them (no conversion).
    fn as_requested(&self, object: Option<&Value>) -> Versioned {
        Versioned {
            version: self.res.version.clone(),
            object: object.cloned().unwrap_or(Value::Null),
            old: self.request.old.cloned().unwrap_or(Value::Null),
        }
    }

    /// The write's objects as `version` of the resource, converted the way reads convert
    /// them (the CRD's `spec.conversion`: a conversion webhook call for `Webhook`), so that a
    /// webhook matched through `matchPolicy: Equivalent` sees the shape of the version it
    /// registered for, as upstream's dispatchers convert with `ConvertToGVK`.
    pub(in crate::admission) async fn versioned(
        &self,
        version: &str,
        object: Option<&Value>,
    ) -> ApiResult<Versioned> {
        let mut v = self.as_requested(object);
        if version == self.res.version {
            return Ok(v);
        }
        let present: Vec<&mut Value> = [&mut v.object, &mut v.old]
            .into_iter()
            .filter(|o| !o.is_null())
            .collect();
        let originals = present.iter().map(|o| (**o).clone()).collect();
        let converted = self.in_version(version, originals).await?;
        for (slot, object) in present.into_iter().zip(converted) {
            *slot = object;
        }
        v.version = version.to_string();
        Ok(v)
    }

    /// `objects` of the resource in `version`: custom resources through the converter,
    /// built-in kinds (whose served versions share one shape here) by their `apiVersion`.
    async fn in_version(&self, version: &str, objects: Vec<Value>) -> ApiResult<Vec<Value>> {
        if self.res.is_custom() {
            return self
                .api
                .converter
                .convert(self.res, version, objects, false)
                .await;
        }
        let api_version = Value::from(crate::conversion::api_version(&self.res.group, version));
        Ok(objects
            .into_iter()
            .map(|mut o| {
                if let Some(map) = o.as_object_mut() {
                    map.insert("apiVersion".into(), api_version.clone());
                }
                o
            })
            .collect())
    }

    pub(in crate::admission) fn review(&self, uid: &str, v: &Versioned) -> review::Request {
        let r = self.request;
        let version = v.version.as_str();
        let gvk = |version: &str| review::GroupVersionKind {
            group: self.res.group.clone(),
            version: version.to_string(),
            kind: self.res.kind.clone(),
        };
        let gvr = |version: &str| review::GroupVersionResource {
            group: self.res.group.clone(),
            version: version.to_string(),
            resource: self.res.plural.clone(),
        };
        let user = match r.user {
            Some(u) => review::UserInfo {
                username: u.name.clone(),
                uid: u.uid.clone(),
                groups: u.groups.clone(),
                extra: u.extra.clone(),
            },
            None => review::UserInfo {
                username: "system:apiserver".into(),
                uid: String::new(),
                groups: vec!["system:masters".into()],
                extra: Default::default(),
            },
        };
        let (operation, options_kind) = match r.operation {
            Operation::Create => ("CREATE", "CreateOptions"),
            Operation::Update => ("UPDATE", "UpdateOptions"),
            Operation::Delete => ("DELETE", "DeleteOptions"),
        };
        let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind});
        if r.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        let subresource = r.subresource.unwrap_or("").to_string();
        review::Request {
            uid: uid.to_string(),
            kind: gvk(version),
            resource: gvr(version),
            sub_resource: subresource.clone(),
            request_kind: gvk(&self.res.version),
            request_resource: gvr(&self.res.version),
            request_sub_resource: subresource,
            name: r.name.to_string(),
            namespace: r.namespace.unwrap_or("").to_string(),
            operation,
            user_info: user,
            object: v.object.clone(),
            old_object: v.old.clone(),
            dry_run: r.dry_run,
            options,
        }
    }

    /// Calls `hook`; `Ok(None)` when the call failed and its failure policy ignores that.
    async fn call(
        &self,
        hook: &Hook,
        versioned: &Versioned,
        mutating: bool,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Option<review::Verdict>> {
        if self.request.dry_run && !hook.dry_run_safe {
            // Unreachable for v1 configurations (validation allows only None and
            // NoneOnDryRun), kept as upstream's refusal.
            return Err(ApiError::bad_request(format!(
                "admission webhook \"{}\" does not support dry run",
                hook.name
            )));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let request = self.review(&uid, versioned);
        let body = crate::webhook_client::encode(&review::ReviewOut {
            api_version: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            request: &request,
        });
        let answer = self
            .api
            .webhook_client
            .call(&hook.callee, body)
            .await
            .map_err(|e| format!("failed to call webhook: {e}"))
            .and_then(|bytes| {
                review::verify(&bytes, &uid, mutating)
                    .map_err(|e| format!("received invalid webhook response: {e}"))
            });
        let verdict = match answer {
            Ok(verdict) => verdict,
            Err(reason) if hook.ignore_failures => {
                tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, failing open");
                return Ok(None);
            }
            Err(reason) => {
                tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, failing closed");
                return Err(ApiError::internal(format!(
                    "failed calling webhook \"{}\": {reason}",
                    hook.name
                )));
            }
        };
        warnings.extend(verdict.warnings.iter().cloned());
        if !verdict.allowed {
            return Err(denied(&hook.name, verdict.status.unwrap_or_default()));
        }
        Ok(Some(verdict))
    }
}

/// Upstream's `ToStatusErr`: the webhook's own code (at least 400) and message.
fn denied(webhook: &str, status: review::StatusIn) -> ApiError {
    let denied_by = format!("admission webhook \"{webhook}\" denied the request");
    let message = if !status.message.is_empty() {
        format!("{denied_by}: {}", status.message)
    } else if !status.reason.is_empty() {
        format!("{denied_by}: {}", status.reason)
    } else {
        format!("{denied_by} without explanation")
    };
    let code = u16::try_from(status.code).unwrap_or(0).max(400);
    ApiError::with_code(code, message)
}

/// Whether writes of `res` never reach webhooks: upstream exempts the admission
/// configuration kinds, so that a broken webhook can always be reconfigured or removed.
pub(super) fn exempt(res: &Resource) -> bool {
    res.group == "admissionregistration.k8s.io"
        && matches!(
            res.plural.as_str(),
            "mutatingwebhookconfigurations"
                | "validatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// Runs the mutating webhooks over `obj` (`None` for a delete); returns whether any changed
/// it. A webhook with `reinvocationPolicy: IfNeeded` is called once more if a later webhook
/// changed the object after it was called (upstream's reinvocation, one extra round).
pub(crate) async fn mutate(
    write: &Write<'_>,
    obj: Option<&mut Value>,
    warnings: &mut Vec<String>,
) -> ApiResult<bool> {
    let hooks = write
        .api
        .admission
        .webhooks()
        .current(&write.api.storage, &write.api.registry);
    if hooks.mutating.is_empty() || exempt(write.res) {
        return Ok(false);
    }
    let others = write.other_versions();
    let mut none = Value::Null;
    let has_object = obj.is_some();
    let obj = obj.unwrap_or(&mut none);
    // How many changes the object had seen right after each webhook's call.
    let mut changes = 0usize;
    let mut called_at: Vec<Option<usize>> = vec![None; hooks.mutating.len()];
    for (i, hook) in hooks.mutating.iter().enumerate() {
        if let Some(changed) = mutate_one(write, hook, obj, has_object, &others, warnings).await? {
            changes += usize::from(changed);
            called_at[i] = Some(changes);
        }
    }
    let first_round = changes;
    for (hook, at) in hooks.mutating.iter().zip(called_at) {
        if hook.reinvoke && at.is_some_and(|at| at < first_round) {
            let changed = mutate_one(write, hook, obj, has_object, &others, warnings).await?;
            changes += usize::from(changed == Some(true));
        }
    }
    Ok(changes > 0)
}

/// Calls one mutating webhook if it matches and applies its patch. `None`: not called (or
/// its failure ignored); else whether the object changed.
async fn mutate_one(
    write: &Write<'_>,
    hook: &Hook,
    obj: &mut Value,
    has_object: bool,
    others: &[String],
    warnings: &mut Vec<String>,
) -> ApiResult<Option<bool>> {
    let object = has_object.then_some(&*obj);
    let Some(versioned) = write.reaches(hook, object, others).await? else {
        return Ok(None);
    };
    let Some(verdict) = write.call(hook, &versioned, true, warnings).await? else {
        return Ok(None);
    };
    let Some(patch) = verdict.patch else {
        return Ok(Some(false));
    };
    let patch: json_patch::Patch = serde_json::from_slice(&patch).map_err(|e| {
        ApiError::internal(format!(
            "admission webhook \"{}\" returned an undecodable JSON patch: {e}",
            hook.name
        ))
    })?;
    if patch.0.is_empty() {
        return Ok(Some(false));
    }
    if !has_object {
        return Err(ApiError::internal(format!(
            "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    }
    let mut patched = versioned.object;
    json_patch::patch(&mut patched, &patch).map_err(|e| {
        ApiError::internal(format!(
            "admission webhook \"{}\" returned a JSON patch that cannot be applied: {e}",
            hook.name
        ))
    })?;
    // Back to the request's version (upstream converts the patched object back too).
    let version = write.res.version.clone();
    let patched = write
        .in_version(&version, vec![patched])
        .await?
        .pop()
        .ok_or_else(|| ApiError::internal("a conversion lost its object"))?;
    if patched == *obj {
        return Ok(Some(false));
    }
    *obj = patched;
    Ok(Some(true))
}

/// Runs the validating webhooks; the first refusal or failure wins.
pub(crate) async fn validate(
    write: &Write<'_>,
    obj: Option<&Value>,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let hooks = write
        .api
        .admission
        .webhooks()
        .current(&write.api.storage, &write.api.registry);
    if hooks.validating.is_empty() || exempt(write.res) {
        return Ok(());
    }
    let others = write.other_versions();
    for hook in &hooks.validating {
        if let Some(versioned) = write.reaches(hook, obj, &others).await? {
            write.call(hook, &versioned, false, warnings).await?;
        }
    }
    Ok(())
}
