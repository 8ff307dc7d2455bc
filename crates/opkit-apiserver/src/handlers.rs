//! Request handling: one function per verb, from a parsed request to a response.
//!
//! Reads come straight from the store's bytes (a GET or LIST in JSON never re-serializes an
//! object); writes go through admission, then a compare-and-swap transaction that embeds the
//! new revision as `metadata.resourceVersion`, and are answered once durable.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::{Actor, ObjectRef, Part, Query};
use crate::response::{Answer, Payload};
use crate::server::ApiServer;
use opkit_apimachinery::fields::FieldSelector;
use opkit_apimachinery::labels::LabelSelector;

/// Label and field selectors of a list or watch.
pub struct Selectors {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    /// Objects are stored events: fields are read with [`crate::events::field_value`].
    events: bool,
}

impl Selectors {
    /// Parses `labelSelector` and `fieldSelector`, checking fields are supported for the resource.
    pub fn parse(res: &Resource, query: &Query) -> ApiResult<Selectors> {
        let labels = match query.get("labelSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match query.get("fieldSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                let bad = |e: opkit_apimachinery::fields::FieldSelectorError| {
                    ApiError::bad_request(e.to_string())
                };
                let sel = FieldSelector::parse(s).map_err(bad)?;
                let checked = match (res.custom(), res.view) {
                    (Some(c), _) => sel.for_custom_resource(res.namespaced, &c.selectable_fields),
                    (None, Some(view)) => view_selector(&sel, view)
                        .map_err(bad)?
                        .for_resource(view.storage_group, view.storage_plural),
                    (None, None) => sel.for_resource(&res.group, &res.plural),
                };
                Some(checked.map_err(bad)?)
            }
            None => None,
        };
        Ok(Selectors {
            labels,
            fields,
            events: crate::events::stores_events(res),
        })
    }

    /// No selector at all.
    pub fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether an object (as JSON bytes) matches.
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.matches(&v),
            Err(_) => false,
        }
    }

    /// Whether an object matches.
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels
            && !l.matches(object::labels(obj))
        {
            return false;
        }
        if let Some(f) = &self.fields {
            let matched = if self.events {
                f.matches(|field| crate::events::field_value(obj, field))
            } else {
                f.matches_object(obj)
            };
            if !matched {
                return false;
            }
        }
        true
    }
}

/// A view's field selector in the labels of the resource it is a view of (upstream's field
/// label conversion), or upstream's error for the first label the view does not support.
fn view_selector(
    sel: &FieldSelector,
    view: &crate::registry::View,
) -> Result<FieldSelector, opkit_apimachinery::fields::FieldSelectorError> {
    use opkit_apimachinery::fields::{FieldSelectorError, escape_value};
    let mut terms = Vec::with_capacity(sel.requirements().len());
    for r in sel.requirements() {
        let Some(label) = (view.field_label)(&r.field) else {
            return Err(FieldSelectorError::Unsupported {
                field: r.field.clone(),
                message: format!("field label not supported: {}", r.field),
            });
        };
        terms.push(format!(
            "{label}{}{}",
            r.op.as_str(),
            escape_value(&r.value)
        ));
    }
    FieldSelector::parse(&terms.join(","))
}

/// Parsed `resourceVersion` semantics of a read.
fn parse_rv(query: &Query) -> ApiResult<Option<u64>> {
    match query.get("resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}"))),
    }
}

fn continue_token(rv: u64, last_key: &str) -> String {
    use base64::Engine;
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn parse_continue(token: &str) -> ApiResult<(u64, String)> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}

impl ApiServer {
    /// Waits until the store has reached `rv` (a client asked for a state not older than it).
    async fn wait_for_revision(&self, rv: u64) -> ApiResult<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while self.store.current_revision() < rv {
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::timeout(format!(
                    "Too large resource version: {rv}, current: {}",
                    self.store.current_revision()
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// GET of one object.
    pub async fn get(
        &self,
        res: &Resource,
        ns: Option<&str>,
        name: &str,
        query: &Query,
    ) -> ApiResult<Answer> {
        if let Some(rv) = parse_rv(query)? {
            self.wait_for_revision(rv).await?;
        }
        match self.store.get(&res.key(ns, name)) {
            Some(entry) => Ok(Answer::ok(Payload::Raw(entry.value))),
            None => Err(ApiError::not_found(&res.group, &res.plural, name)),
        }
    }

    /// LIST of a collection (one namespace or all).
    pub async fn list(
        &self,
        res: &Resource,
        ns: Option<&str>,
        query: &Query,
    ) -> ApiResult<(Vec<Bytes>, Value)> {
        let selectors = Selectors::parse(res, query)?;
        let limit = match query.get("limit") {
            None | Some("") | Some("0") => None,
            Some(s) => match s.parse::<usize>() {
                Ok(n) => Some(n),
                Err(_) => return Err(ApiError::bad_request(format!("invalid limit: {s:?}"))),
            },
        };
        let rv = parse_rv(query)?;
        let rv_match = query.get("resourceVersionMatch").filter(|s| !s.is_empty());
        let prefix = res.namespace_prefix(ns);
        let (mut at_revision, mut start_after) = (None, None);
        if let Some(token) = query.get("continue").filter(|s| !s.is_empty()) {
            if rv.is_some_and(|v| v != 0) || rv_match.is_some() {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let (token_rv, start) = parse_continue(token)?;
            at_revision = Some(token_rv);
            start_after = Some(start);
        } else {
            let forbidden = |message: String| {
                ApiError::invalid(
                    "meta.k8s.io",
                    "ListOptions",
                    "",
                    vec![crate::error::Cause::new(
                        "FieldValueForbidden",
                        "resourceVersionMatch",
                        format!("Forbidden: {message}"),
                    )],
                )
            };
            match (rv_match, rv) {
                (Some(_), None) => {
                    return Err(forbidden(
                        "resourceVersionMatch is forbidden unless resourceVersion is provided"
                            .into(),
                    ));
                }
                (Some("Exact"), Some(0)) => {
                    return Err(forbidden(
                        "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\""
                            .into(),
                    ));
                }
                (None | Some("NotOlderThan"), _) => {
                    if let Some(v) = rv.filter(|v| *v > 0) {
                        self.wait_for_revision(v).await?;
                    }
                }
                (Some("Exact"), Some(v)) => {
                    self.wait_for_revision(v).await?;
                    at_revision = Some(v);
                }
                (Some(other), _) => {
                    return Err(ApiError::bad_request(format!(
                        "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                    )));
                }
            }
        }
        let mut items = Vec::new();
        let mut list_rv = None;
        let mut next_token = None;
        let mut remaining = None;
        loop {
            let batch = limit.map(|l| {
                (l - items.len())
                    .max(1)
                    .max(if selectors.is_empty() { 0 } else { 256 })
            });
            let opts = opkit_store::ListOptions {
                start_after: start_after.clone(),
                limit: batch,
                at_revision,
            };
            let result = self.store.list(&prefix, &opts).map_err(|e| match e {
                opkit_store::StoreError::Compacted { .. } if query.get("continue").is_some() => ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ),
                other => other.into(),
            })?;
            let revision = *list_rv.get_or_insert(result.revision);
            at_revision = Some(revision);
            let mut last_key = None;
            let mut stopped_early = false;
            let count = result.entries.len();
            for (i, entry) in result.entries.into_iter().enumerate() {
                last_key = Some(entry.key.clone());
                if selectors.matches_bytes(&entry.value) {
                    items.push(entry.value);
                    if limit.is_some_and(|l| items.len() >= l) {
                        stopped_early = i + 1 < count || result.more;
                        if selectors.is_empty() {
                            remaining = Some(result.remaining + (count - i - 1));
                        }
                        break;
                    }
                }
            }
            if stopped_early {
                if let Some(k) = &last_key {
                    next_token = Some(continue_token(revision, k));
                }
                break;
            }
            if !result.more || last_key.is_none() {
                break;
            }
            start_after = last_key.map(|k| k.to_string());
        }
        let mut meta = json!({"resourceVersion": list_rv.unwrap_or_else(|| self.store.current_revision()).to_string()});
        if let Some(t) = next_token {
            meta["continue"] = json!(t);
            if let Some(r) = remaining.filter(|r| *r > 0) {
                meta["remainingItemCount"] = json!(r);
            }
        }
        Ok((items, meta))
    }

    /// Checks the namespace of a new namespaced object exists and is not terminating.
    fn check_namespace(&self, res: &Resource, ns: Option<&str>, name: &str) -> ApiResult<()> {
        if !res.namespaced {
            return Ok(());
        }
        let Some(ns) = ns else {
            return Err(ApiError::bad_request(
                "the namespace of the object must be set",
            ));
        };
        let key = format!("/core/namespaces/{ns}");
        let Some(entry) = self.store.get(&key) else {
            return Err(ApiError::not_found("", "namespaces", ns));
        };
        if let Ok(v) = serde_json::from_slice::<Value>(&entry.value)
            && (object::is_deleting(&v)
                || v.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating"))
        {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                name,
                format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            ));
        }
        Ok(())
    }

    /// CREATE.
    pub async fn create(
        &self,
        res: &Resource,
        ns: Option<&str>,
        body: Value,
        query: &Query,
    ) -> ApiResult<Answer> {
        self.create_with(res, ns, body, query, true).await
    }

    /// CREATE, recording the request's manager in `managedFields` when `track` (a server-side
    /// apply that creates has recorded its own already).
    pub(crate) async fn create_with(
        &self,
        res: &Resource,
        ns: Option<&str>,
        body: Value,
        query: &Query,
        track: bool,
    ) -> ApiResult<Answer> {
        let manager = track.then(|| crate::patch::managed::update_manager(query));
        let dry_run = query.dry_run()?;
        let fields = query.field_check()?;
        let generated = object::meta_str(&body, "name").is_none_or(str::is_empty);
        let mut attempts = 0;
        loop {
            attempts += 1;
            if let Some(custom) = res.custom()
                && custom.terminating
            {
                return Err(ApiError::method_not_allowed_msg(
                    "create not allowed while custom resource definition is terminating",
                ));
            }
            let (mut obj, warnings) = admission::prepare_create(res, ns, body.clone(), &fields)?;
            let name = object::name(&obj).to_string();
            self.check_namespace(res, ns, &name)?;
            if crate::crd::is_crd(res) {
                crate::crd::prepare(&mut obj)?;
            }
            if let Actor::User { user, .. } = query.actor() {
                self.check_rbac_write(user, res, ns, &obj)?;
            }
            if let Some(m) = &manager {
                crate::patch::managed::track_update(res, Part::Main, None, &mut obj, m);
            }
            // Services get their cluster IP and node ports here, under a lock held until stored.
            let _allocating = if crate::services::is_services(res) {
                let guard = self.services.lock().await;
                crate::services::allocate_create(&self.store, res, &mut obj)?;
                Some(guard)
            } else {
                None
            };
            let obj = res.to_storage(obj).map_err(ApiError::internal)?;
            match self.insert(res, ns, obj, dry_run).await {
                Ok(stored) => {
                    if !dry_run {
                        self.after_write(res, &stored).await;
                    }
                    return Ok(Answer {
                        code: 201,
                        payload: Payload::Raw(stored),
                        warnings,
                    });
                }
                Err(e) if e.is_already_exists() && generated && attempts < 8 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Stores a new object; 409 if it exists. Returns the stored bytes.
    pub(crate) async fn insert(
        &self,
        res: &Resource,
        ns: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> ApiResult<Bytes> {
        let name = object::name(&obj).to_string();
        let key = res.key(ns, &name);
        if dry_run {
            if self.store.get(&key).is_some() {
                return Err(ApiError::already_exists(&res.group, &res.plural, &name));
            }
            return Ok(Bytes::from(
                serde_json::to_vec(&obj).map_err(ApiError::internal)?,
            ));
        }
        let (bytes, _) = self
            .store
            .transact(|txn| {
                if txn.get(&key).is_some() {
                    return Err(ApiError::already_exists(&res.group, &res.plural, &name));
                }
                object::meta_mut(&mut obj).insert(
                    "resourceVersion".into(),
                    Value::from(txn.revision().to_string()),
                );
                let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(ApiError::internal)?);
                txn.put(&key, bytes.clone());
                Ok(bytes)
            })
            .await?;
        if key.starts_with(crate::authz::RBAC_KEY_PREFIX) {
            self.authz.invalidate();
        }
        Ok(bytes)
    }

    /// Compare-and-swap of one stored object: if `key` is still at revision `expected`, stores
    /// `new` (or deletes the key, with `new` as its last state) with the new revision embedded
    /// as `metadata.resourceVersion`. `None` when another write won the race.
    async fn swap(
        &self,
        key: &str,
        expected: u64,
        new: &mut Value,
        delete: bool,
    ) -> ApiResult<Option<Bytes>> {
        let (outcome, _) = self
            .store
            .transact(|txn| {
                match txn.get(key) {
                    Some(e) if e.revision == expected => {}
                    _ => return Ok(None),
                }
                object::meta_mut(new).insert(
                    "resourceVersion".into(),
                    Value::from(txn.revision().to_string()),
                );
                let bytes = Bytes::from(serde_json::to_vec(new).map_err(ApiError::internal)?);
                if delete {
                    txn.delete(key, bytes.clone());
                } else {
                    txn.put(key, bytes.clone());
                }
                Ok::<_, ApiError>(Some(bytes))
            })
            .await?;
        if outcome.is_some() && key.starts_with(crate::authz::RBAC_KEY_PREFIX) {
            self.authz.invalidate();
        }
        Ok(outcome)
    }

    /// Runs the built-in reactions to a committed write (CRD registration).
    async fn after_write(&self, res: &Resource, stored: &Bytes) {
        if crate::crd::is_crd(res) {
            crate::crd::reconcile(self, stored).await;
        }
    }

    /// The read-modify-write loop shared by PUT, PATCH and status/scale writes. `mutate` gets
    /// the current object and returns the desired one (or an error); `expect_rv` is a
    /// precondition the client gave.
    pub(crate) async fn update_with<F>(
        &self,
        target: ObjectRef<'_>,
        part: Part,
        query: &Query,
        require_version: bool,
        mutate: F,
    ) -> ApiResult<Answer>
    where
        F: FnMut(&Value) -> ApiResult<Value>,
    {
        self.update_tracked(target, part, query, require_version, true, mutate)
            .await
    }

    /// [`ApiServer::update_with`], recording the request's manager in `managedFields` when
    /// `track` (a server-side apply has recorded its own already).
    pub(crate) async fn update_tracked<F>(
        &self,
        target: ObjectRef<'_>,
        part: Part,
        query: &Query,
        require_version: bool,
        track: bool,
        mut mutate: F,
    ) -> ApiResult<Answer>
    where
        F: FnMut(&Value) -> ApiResult<Value>,
    {
        let manager = track.then(|| crate::patch::managed::update_manager(query));
        let ObjectRef { res, ns, name } = target;
        let dry_run = query.dry_run()?;
        let fields = query.field_check()?;
        let key = res.key(ns, name);
        for _ in 0..64 {
            let Some(entry) = self.store.get(&key) else {
                return Err(ApiError::not_found(&res.group, &res.plural, name));
            };
            let current: Value =
                serde_json::from_slice(&entry.value).map_err(ApiError::internal)?;
            // Patches, checks and managed fields work in the shape of the request's version.
            let current = res.shown(current);
            let mut desired = mutate(&current)?;
            if part == Part::Main && is_namespaces(res) {
                // Only the `finalize` subresource changes `spec.finalizers` (upstream's strategy).
                keep_namespace_finalizers(&current, &mut desired);
            }
            if let Some(rv) =
                object::meta_str(&desired, "resourceVersion").filter(|s| !s.is_empty())
                && rv != entry.revision.to_string()
            {
                return Err(ApiError::stale(&res.group, &res.plural, name));
            }
            if require_version
                && res.is_custom()
                && part == Part::Main
                && object::meta_str(&desired, "resourceVersion").is_none_or(str::is_empty)
            {
                return Err(ApiError::invalid(
                    &res.group,
                    &res.kind,
                    name,
                    vec![crate::error::Cause::new(
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )],
                ));
            }
            // An apply computed the managed fields already; a status write keeps only `status`
            // of what it is given, so they are carried over.
            let applied_managed = match &manager {
                None => desired.pointer("/metadata/managedFields").cloned(),
                Some(_) => None,
            };
            let (mut new, warnings) =
                admission::prepare_update(res, &current, desired, part, &fields)?;
            let _allocating = if part == Part::Main && crate::services::is_services(res) {
                let guard = self.services.lock().await;
                crate::services::allocate_update(&self.store, res, &key, &current, &mut new)?;
                Some(guard)
            } else {
                None
            };
            if let Some(managed) = applied_managed {
                object::meta_mut(&mut new).insert("managedFields".into(), managed);
            }
            if crate::crd::is_crd(res) && part == Part::Main {
                crate::crd::prepare(&mut new)?;
            }
            if part == Part::Main
                && let Actor::User { user, .. } = query.actor()
            {
                self.check_rbac_write(user, res, ns, &new)?;
            }
            if let Some(m) = &manager {
                crate::patch::managed::track_update(res, part, Some(&current), &mut new, m);
            }
            if object::same_ignoring_version(&current, &new) {
                return Ok(Answer {
                    code: 200,
                    payload: Payload::Raw(entry.value),
                    warnings,
                });
            }
            if dry_run {
                return Ok(Answer {
                    code: 200,
                    payload: Payload::Value(new),
                    warnings,
                });
            }
            let mut new = res.to_storage(new).map_err(ApiError::internal)?;
            let finished = object::is_deleting(&new)
                && object::finalizers(&new).is_empty()
                && namespace_finalized(res, &new);
            let expected = entry.revision;
            let outcome = self.swap(&key, expected, &mut new, finished).await?;
            match outcome {
                Some(bytes) => {
                    if !finished {
                        self.after_write(res, &bytes).await;
                    } else {
                        self.after_delete(res, &new).await;
                    }
                    return Ok(Answer {
                        code: 200,
                        payload: Payload::Raw(bytes),
                        warnings,
                    });
                }
                None => {
                    // Lost a race: if the client pinned a version, that is a conflict; else retry.
                    continue;
                }
            }
        }
        Err(ApiError::stale(&res.group, &res.plural, name))
    }

    /// PUT of the main resource or the status subresource.
    pub async fn replace(
        &self,
        res: &Resource,
        ns: Option<&str>,
        name: &str,
        part: Part,
        body: Value,
        query: &Query,
    ) -> ApiResult<Answer> {
        let body_name = object::meta_str(&body, "name").unwrap_or("");
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        self.update_with(ObjectRef { res, ns, name }, part, query, true, |_| {
            Ok(body.clone())
        })
        .await
    }

    /// DELETE of one object.
    ///
    /// Without finalizers the object goes at once; otherwise it gets a `deletionTimestamp` and
    /// goes when its last finalizer is removed. The garbage collector's finalizers are set from
    /// the delete options as upstream's registry does: `orphan` for `propagationPolicy: Orphan`
    /// (or the legacy `orphanDependents: true`, or the kind's default), `foregroundDeletion` for
    /// `Foreground`. Namespaces have their own life cycle ([`ApiServer::delete_namespace`]).
    pub async fn delete(
        &self,
        res: &Resource,
        ns: Option<&str>,
        name: &str,
        options: &Value,
        query: &Query,
    ) -> ApiResult<Answer> {
        let dry_run = query.dry_run()?;
        let gc = GcOptions::parse(options, query)?;
        if is_namespaces(res) {
            return self
                .delete_namespace(res, name, options, &gc, dry_run)
                .await;
        }
        let mut warnings = Vec::new();
        if gc.is_unset() && default_orphans(res) {
            warnings.push(JOB_DELETE_WARNING.to_string());
        }
        let mut answer = self
            .delete_object(ObjectRef { res, ns, name }, options, &gc, dry_run)
            .await?;
        answer.warnings.extend(warnings);
        Ok(answer)
    }

    /// The generic delete of one object (see [`ApiServer::delete`]).
    async fn delete_object(
        &self,
        target: ObjectRef<'_>,
        options: &Value,
        gc: &GcOptions,
        dry_run: bool,
    ) -> ApiResult<Answer> {
        let ObjectRef { res, ns, name } = target;
        let key = res.key(ns, name);
        for _ in 0..64 {
            let Some(entry) = self.store.get(&key) else {
                return Err(ApiError::not_found(&res.group, &res.plural, name));
            };
            let current: Value =
                serde_json::from_slice(&entry.value).map_err(ApiError::internal)?;
            check_delete_preconditions(res, name, &current, entry.revision, options)?;
            let mut new = current.clone();
            let existing: Vec<String> = object::finalizers(&current)
                .into_iter()
                .map(str::to_string)
                .collect();
            let mut finalizers = gc.finalizers(&existing, default_orphans(res));
            let already_deleting = object::is_deleting(&current);
            if crate::crd::is_crd(res)
                && !finalizers
                    .iter()
                    .any(|f| f == crate::crd::CLEANUP_FINALIZER)
            {
                finalizers.push(crate::crd::CLEANUP_FINALIZER.into());
            }
            let immediate = finalizers.is_empty() && namespace_finalized(res, &current);
            if !immediate {
                let meta = object::meta_mut(&mut new);
                if !already_deleting {
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
                    return Ok(Answer::ok(Payload::Raw(entry.value)));
                }
            }
            if dry_run {
                return Ok(Answer::ok(Payload::Value(new)));
            }
            let expected = entry.revision;
            let outcome = self.swap(&key, expected, &mut new, immediate).await?;
            let Some(bytes) = outcome else { continue };
            if immediate {
                self.after_delete(res, &new).await;
                if res.is_custom()
                    || (res.group.is_empty()
                        && matches!(res.plural.as_str(), "pods" | "namespaces"))
                {
                    return Ok(Answer::ok(Payload::Raw(bytes)));
                }
                let details = json!({
                    "name": name,
                    "group": res.group,
                    "kind": res.plural,
                    "uid": object::meta_str(&new, "uid").unwrap_or(""),
                });
                return Ok(Answer::ok(Payload::Value(json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }))));
            }
            self.after_write(res, &bytes).await;
            return Ok(Answer::ok(Payload::Raw(bytes)));
        }
        Err(ApiError::stale(&res.group, &res.plural, name))
    }

    /// DELETE of a namespace, as upstream's namespace registry: the first delete only marks it
    /// (`deletionTimestamp`, `status.phase: Terminating`, the garbage collector's finalizers
    /// from the options) and answers with the namespace; the namespace controller then empties
    /// it and removes the `kubernetes` finalizer through `finalize`, which removes the
    /// namespace. Later deletes are no-ops while `spec.finalizers` is non-empty.
    async fn delete_namespace(
        &self,
        res: &Resource,
        name: &str,
        options: &Value,
        gc: &GcOptions,
        dry_run: bool,
    ) -> ApiResult<Answer> {
        if IMMORTAL_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                name,
                "this namespace may not be deleted",
            ));
        }
        let key = res.key(None, name);
        for _ in 0..64 {
            let Some(entry) = self.store.get(&key) else {
                return Err(ApiError::not_found(&res.group, &res.plural, name));
            };
            let current: Value =
                serde_json::from_slice(&entry.value).map_err(ApiError::internal)?;
            check_delete_preconditions(res, name, &current, entry.revision, options)?;
            if object::is_deleting(&current) {
                if !namespace_finalized(res, &current) {
                    return Ok(Answer::ok(Payload::Raw(entry.value)));
                }
                return self
                    .delete_object(
                        ObjectRef {
                            res,
                            ns: None,
                            name,
                        },
                        options,
                        gc,
                        dry_run,
                    )
                    .await;
            }
            if namespace_finalized(res, &current) && object::finalizers(&current).is_empty() {
                // Nothing would ever finish it: remove it now rather than leave it terminating.
                return self
                    .delete_object(
                        ObjectRef {
                            res,
                            ns: None,
                            name,
                        },
                        options,
                        gc,
                        dry_run,
                    )
                    .await;
            }
            let mut new = current.clone();
            let existing: Vec<String> = object::finalizers(&current)
                .into_iter()
                .map(str::to_string)
                .collect();
            let finalizers = gc.namespace_finalizers(&existing);
            let meta = object::meta_mut(&mut new);
            meta.insert(
                "deletionTimestamp".into(),
                Value::from(object::now_rfc3339()),
            );
            if finalizers != existing {
                meta.insert("finalizers".into(), json!(finalizers));
            }
            if let Some(map) = new.as_object_mut()
                && let Some(status) = map
                    .entry("status")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            {
                status.insert("phase".into(), Value::from("Terminating"));
            }
            if dry_run {
                return Ok(Answer::ok(Payload::Value(new)));
            }
            let Some(bytes) = self.swap(&key, entry.revision, &mut new, false).await? else {
                continue;
            };
            self.after_write(res, &bytes).await;
            return Ok(Answer::ok(Payload::Raw(bytes)));
        }
        Err(ApiError::stale(&res.group, &res.plural, name))
    }

    /// DELETE of a collection: deletes each matching object as a single delete would.
    pub async fn delete_collection(
        &self,
        res: &Resource,
        ns: Option<&str>,
        options: &Value,
        query: &Query,
    ) -> ApiResult<Answer> {
        let gc = GcOptions::parse(options, query)?;
        let mut warnings = Vec::new();
        if gc.is_unset() && default_orphans(res) {
            warnings.push(JOB_DELETE_WARNING.to_string());
        }
        let (items, meta) = self.list(res, ns, query).await?;
        let mut deleted = Vec::new();
        for bytes in items {
            let Ok(obj) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let name = object::name(&obj).to_string();
            let item_ns = object::meta_str(&obj, "namespace").map(str::to_string);
            match self
                .delete(res, item_ns.as_deref(), &name, options, query)
                .await
            {
                Ok(_) => deleted.push(obj),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Answer {
            code: 200,
            payload: Payload::Value(json!({
                "apiVersion": res.api_version(),
                "kind": res.list_kind,
                "metadata": meta,
                "items": deleted,
            })),
            warnings,
        })
    }

    /// Runs the built-in reactions to an object being removed.
    async fn after_delete(&self, res: &Resource, obj: &Value) {
        if crate::crd::is_crd(res) {
            self.registry.remove_custom(object::name(obj));
        }
    }
}

/// Namespaces that can never be deleted (upstream's NamespaceLifecycle admission).
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer of foreground cascading deletion.
const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizer of orphaning deletion.
const ORPHAN_FINALIZER: &str = "orphan";

/// The warning upstream sends when a batch/v1 Job is deleted without a propagation policy.
const JOB_DELETE_WARNING: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// Whether a resource is the core `namespaces`.
fn is_namespaces(res: &Resource) -> bool {
    res.group.is_empty() && res.plural == "namespaces"
}

/// Whether a resource's default garbage-collection policy orphans dependents. Upstream keeps
/// `OrphanDependents` as the default of batch/v1 Jobs (and of v1 ReplicationControllers, which
/// are not served here) for backward compatibility; everything else deletes dependents in the
/// background.
fn default_orphans(res: &Resource) -> bool {
    res.group == "batch" && res.version == "v1" && res.plural == "jobs"
}

/// Whether nothing in `spec.finalizers` holds a namespace back (always true for other kinds).
fn namespace_finalized(res: &Resource, obj: &Value) -> bool {
    !is_namespaces(res)
        || obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
}

/// Keeps `spec.finalizers` of a namespace as stored: only `finalize` changes them.
fn keep_namespace_finalizers(current: &Value, desired: &mut Value) {
    let kept = current.pointer("/spec/finalizers").cloned();
    let Some(map) = desired.as_object_mut() else {
        return;
    };
    match kept {
        Some(f) => {
            if let Some(spec) = map
                .entry("spec")
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                spec.insert("finalizers".into(), f);
            }
        }
        None => {
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
        }
    }
}

/// Checks `preconditions.uid` and `preconditions.resourceVersion` of DeleteOptions.
fn check_delete_preconditions(
    res: &Resource,
    name: &str,
    current: &Value,
    revision: u64,
    options: &Value,
) -> ApiResult<()> {
    let Some(pre) = options.get("preconditions") else {
        return Ok(());
    };
    let uid = object::meta_str(current, "uid").unwrap_or("");
    if let Some(want) = pre.get("uid").and_then(Value::as_str)
        && want != uid
    {
        return Err(ApiError::conflict(
            &res.group,
            &res.plural,
            name,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(rv) = pre.get("resourceVersion").and_then(Value::as_str)
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
struct GcOptions {
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
    fn parse(options: &Value, query: &Query) -> ApiResult<GcOptions> {
        let propagation = options
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .or(query.get("propagationPolicy"))
            .filter(|p| !p.is_empty())
            .map(Propagation::parse)
            .transpose()?;
        let orphan_dependents = match options.get("orphanDependents") {
            Some(Value::Bool(b)) => Some(*b),
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
                vec![crate::error::Cause::new(
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
    fn is_unset(&self) -> bool {
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
    fn namespace_finalizers(&self, existing: &[String]) -> Vec<String> {
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
