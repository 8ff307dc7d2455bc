//! CustomResourceDefinitions: validation, serving their resources, conditions, cleanup.
//!
//! This plays the part of apiextensions-apiserver's controllers: when a CRD is written, its
//! served versions are (re)registered with compiled schemas and the `NamesAccepted` and
//! `Established` conditions are set; when it is deleted, a finalizer keeps it until every
//! custom resource of it is gone (their own finalizers are respected), then it is removed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::registry::{ALL_VERBS, CustomVersion, Origin, Resource, ScalePaths};
use crate::request::Part;
use crate::request::{ObjectRef, Query};
use crate::server::ApiServer;

/// The finalizer that holds a deleted CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether a resource is `customresourcedefinitions.apiextensions.k8s.io`.
pub fn is_crd(res: &Resource) -> bool {
    res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions"
}

fn cause(field: &str, message: impl Into<String>) -> Cause {
    Cause::new("FieldValueInvalid", field, message)
}

fn required(field: &str) -> Cause {
    Cause::new("FieldValueRequired", field, "Required value")
}

fn is_dns_label(s: &str) -> bool {
    opkit_apimachinery::validation::is_dns1123_label(s).is_empty()
}

/// Defaults and validates a CRD before it is stored (create and update).
pub fn prepare(crd: &mut Value) -> ApiResult<()> {
    let name = object::name(crd).to_string();
    let mut causes = Vec::new();
    if let Some(names) = crd
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
    {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            if names
                .get("listKind")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
            if names
                .get("singular")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
        }
    }
    if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut)
        && !spec.contains_key("conversion")
    {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec
        .pointer("/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let singular = spec
        .pointer("/names/singular")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = spec
        .pointer("/names/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    if group.is_empty() {
        causes.push(required("spec.group"));
    } else if !group.contains('.') {
        causes.push(cause(
            "spec.group",
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    } else if !opkit_apimachinery::validation::is_dns1123_subdomain(group).is_empty() {
        causes.push(cause("spec.group", format!("Invalid value: {group:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")));
    }
    if plural.is_empty() {
        causes.push(required("spec.names.plural"));
    } else if !is_dns_label(plural) {
        causes.push(cause("spec.names.plural", format!("Invalid value: {plural:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character")));
    }
    if !singular.is_empty() && !is_dns_label(singular) {
        causes.push(cause("spec.names.singular", format!("Invalid value: {singular:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character")));
    }
    if kind.is_empty() {
        causes.push(required("spec.names.kind"));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(cause(
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced" | "Cluster") => {}
        None | Some("") => causes.push(required("spec.scope")),
        Some(other) => causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""),
        )),
    }
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .count();
        if storage != 1 {
            causes.push(cause(
                "spec.versions",
                format!(
                    "Invalid value: {}: must have exactly one version marked as storage version",
                    json!(
                        versions
                            .iter()
                            .map(|v| v.get("name").cloned().unwrap_or(Value::Null))
                            .collect::<Vec<_>>()
                    )
                ),
            ));
        }
        let mut seen = Vec::new();
        for (i, v) in versions.iter().enumerate() {
            let vname = v.get("name").and_then(Value::as_str).unwrap_or("");
            if vname.is_empty() {
                causes.push(required(&format!("spec.versions[{i}].name")));
            } else if !is_dns_label(vname) {
                causes.push(cause(&format!("spec.versions[{i}].name"), format!("Invalid value: {vname:?}: a DNS-1035 label must consist of lower case alphanumeric characters or '-'")));
            } else if seen.contains(&vname) {
                causes.push(Cause::new(
                    "FieldValueDuplicate",
                    &format!("spec.versions[{i}].name"),
                    format!("Duplicate value: {vname:?}"),
                ));
            }
            seen.push(vname);
            // Upstream validates the internal form of the CRD, where schemas identical in every
            // version are moved to `spec.validation`: error paths follow that.
            let identical = versions.iter().all(|x| x.get("schema") == v.get("schema"));
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema")
                && (!identical || i == 0)
            {
                let prefix = if identical {
                    "spec.validation.openAPIV3Schema".to_string()
                } else {
                    format!("spec.versions[{i}].schema.openAPIV3Schema")
                };
                // CEL rules are compiled only for a valid structural schema, as upstream does.
                let errors = match opkit_schema::Schema::compile(schema, &prefix) {
                    Ok(compiled) => opkit_cel::Validator::compile(&compiled, &prefix)
                        .err()
                        .unwrap_or_default(),
                    Err(errors) => errors,
                };
                for e in errors {
                    let text = e.to_string();
                    let detail = text
                        .strip_prefix(&format!("{}: ", e.field))
                        .unwrap_or(&text)
                        .to_string();
                    causes.push(Cause::new(e.reason(), &e.field, detail));
                }
            }
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            causes,
        ));
    }
    Ok(())
}

/// The served resources of a CRD, one per served version.
pub fn resources(crd: &Value, terminating: bool) -> Vec<Arc<Resource>> {
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let s = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let strings = |p: &str| -> Vec<String> {
        spec.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    let kind = s("/names/kind");
    let mut out = Vec::new();
    for v in &versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let version = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let schema_value = v.pointer("/schema/openAPIV3Schema");
        let schema = schema_value.and_then(|sv| opkit_schema::Schema::compile_lenient(sv).ok());
        // Rules were checked when the CRD was written; stored CRDs are served as they are.
        let cel = schema
            .as_ref()
            .and_then(opkit_cel::Validator::compile_lenient)
            .filter(|v| !v.is_empty())
            .map(Arc::new);
        let preserve = schema_value
            .and_then(|sv| sv.get("x-kubernetes-preserve-unknown-fields"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let scale = v.pointer("/subresources/scale").map(|sc| ScalePaths {
            spec_replicas: sc
                .get("specReplicasPath")
                .and_then(Value::as_str)
                .unwrap_or(".spec.replicas")
                .to_string(),
            status_replicas: sc
                .get("statusReplicasPath")
                .and_then(Value::as_str)
                .unwrap_or(".status.replicas")
                .to_string(),
            label_selector: sc
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        let custom = CustomVersion {
            crd_name: object::name(crd).to_string(),
            crd_uid: object::meta_str(crd, "uid").unwrap_or("").to_string(),
            storage_version: storage_version.clone(),
            schema,
            cel,
            raw_schema: schema_value.cloned(),
            printer_columns: v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            preserve_unknown_fields: preserve,
            selectable_fields,
            terminating,
        };
        out.push(Arc::new(Resource {
            group: s("/group"),
            version,
            plural: s("/names/plural"),
            singular: s("/names/singular"),
            kind: kind.clone(),
            list_kind: {
                let lk = s("/names/listKind");
                if lk.is_empty() {
                    format!("{kind}List")
                } else {
                    lk
                }
            },
            namespaced: s("/scope") != "Cluster",
            short_names: strings("/names/shortNames"),
            categories: strings("/names/categories"),
            status: v.pointer("/subresources/status").is_some(),
            scale,
            verbs: ALL_VERBS,
            tracks_generation: true,
            extra_subresources: &[],
            origin: Origin::Custom(Arc::new(custom)),
            view: None,
        }));
    }
    out
}

fn condition(existing: &[Value], type_: &str, status: &str, reason: &str, message: &str) -> Value {
    let previous = existing
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    let unchanged =
        previous.is_some_and(|p| p.get("status").and_then(Value::as_str) == Some(status));
    let time = match previous
        .and_then(|p| p.get("lastTransitionTime"))
        .filter(|_| unchanged)
    {
        Some(t) => t.clone(),
        None => json!(object::now_rfc3339()),
    };
    json!({"type": type_, "status": status, "lastTransitionTime": time, "reason": reason, "message": message})
}

/// The status the CRD should have.
fn desired_status(crd: &Value, terminating: bool) -> Value {
    let existing: Vec<Value> = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut conditions = vec![
        condition(
            &existing,
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
        ),
        condition(
            &existing,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
    ];
    if terminating {
        conditions.push(condition(
            &existing,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    let mut stored: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(storage) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        && !stored.contains(storage)
    {
        stored.push(storage.clone());
    }
    json!({"acceptedNames": names, "conditions": conditions, "storedVersions": stored})
}

/// Brings the registry and the CRD's status in line with a stored CRD.
pub async fn reconcile(server: &ApiServer, stored: &[u8]) {
    let Ok(crd) = serde_json::from_slice::<Value>(stored) else {
        return;
    };
    let name = object::name(&crd).to_string();
    let terminating = object::is_deleting(&crd);
    server
        .registry
        .set_custom(&name, resources(&crd, terminating));
    let status = desired_status(&crd, terminating);
    if crd.get("status") != Some(&status) {
        let Some(res) = server
            .registry
            .snapshot()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .cloned()
        else {
            return;
        };
        let query = Query::default();
        let target = ObjectRef {
            res: &res,
            ns: None,
            name: &name,
        };
        let update = server.update_with(target, Part::Status, &query, false, |current| {
            let mut next = current.clone();
            next["status"] = desired_status(current, object::is_deleting(current));
            Ok(next)
        });
        if let Err(e) = Box::pin(update).await {
            tracing::warn!(crd = %name, error = %e, "could not update CRD status");
        }
    }
    if terminating {
        server.spawn_crd_cleanup(name);
    }
}

impl ApiServer {
    /// Deletes every object of a terminating CRD (respecting their finalizers), then releases
    /// the CRD's cleanup finalizer.
    pub(crate) fn spawn_crd_cleanup(&self, crd_name: String) {
        let Some(server) = self.handle() else { return };
        if !server
            .cleanups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(crd_name.clone())
        {
            return;
        }
        tokio::spawn(async move {
            let crd_res = server
                .registry
                .snapshot()
                .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                .cloned();
            loop {
                let snapshot = server.registry.snapshot();
                let served = snapshot
                    .resources()
                    .iter()
                    .find(|r| r.custom().is_some_and(|c| c.crd_name == crd_name))
                    .cloned();
                let remaining = match &served {
                    Some(res) => server.delete_all(res).await,
                    None => 0,
                };
                if remaining == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if let Some(crd_res) = crd_res {
                let result = server
                    .update_with(
                        ObjectRef {
                            res: &crd_res,
                            ns: None,
                            name: &crd_name,
                        },
                        Part::Main,
                        &Query::default(),
                        false,
                        |current| {
                            let mut next = current.clone();
                            let kept: Vec<Value> = object::finalizers(current)
                                .into_iter()
                                .filter(|f| *f != CLEANUP_FINALIZER)
                                .map(Value::from)
                                .collect();
                            object::meta_mut(&mut next)
                                .insert("finalizers".into(), Value::Array(kept));
                            Ok(next)
                        },
                    )
                    .await;
                if let Err(e) = result
                    && !e.is_not_found()
                {
                    tracing::warn!(crd = %crd_name, error = %e, "could not finish CRD deletion");
                }
            }
            server
                .cleanups
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&crd_name);
        });
    }

    /// Issues a delete for every object of a resource; returns how many still exist.
    async fn delete_all(&self, res: &Resource) -> usize {
        let Ok(list) = self
            .store
            .list(&res.key_prefix(), &opkit_store::ListOptions::default())
        else {
            return 1;
        };
        let count = list.entries.len();
        for entry in list.entries {
            let Ok(obj) = serde_json::from_slice::<Value>(&entry.value) else {
                continue;
            };
            if object::is_deleting(&obj) {
                continue;
            }
            let ns = object::meta_str(&obj, "namespace").map(str::to_string);
            let name = object::name(&obj).to_string();
            if let Err(e) = self
                .delete(res, ns.as_deref(), &name, &Value::Null, &Query::default())
                .await
                && !e.is_not_found()
            {
                tracing::warn!(object = %name, error = %e, "could not delete custom resource of a deleted CRD");
            }
        }
        count
    }

    /// Registers every stored CRD (at startup) and resumes unfinished deletions.
    pub(crate) async fn load_crds(&self) {
        let Ok(list) = self.store.list(
            "/apiextensions.k8s.io/customresourcedefinitions/",
            &opkit_store::ListOptions::default(),
        ) else {
            return;
        };
        for entry in list.entries {
            reconcile(self, &entry.value).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "flighttickets.flights.com"},
            "spec": {"group": "flights.com", "scope": "Namespaced",
                "names": {"kind": "FlightTicket", "plural": "flighttickets", "shortNames": ["ft"]},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "from": {"type": "string"}, "to": {"type": "string"}, "number": {"type": "integer", "minimum": 1, "maximum": 10}}}}}}}]}
        })
    }

    #[test]
    fn prepare_defaults_list_kind_and_singular() {
        let mut crd = flight_crd();
        prepare(&mut crd).unwrap();
        assert_eq!(crd["spec"]["names"]["listKind"], "FlightTicketList");
        assert_eq!(crd["spec"]["names"]["singular"], "flightticket");
    }

    #[test]
    fn name_must_be_plural_dot_group() {
        let mut crd = flight_crd();
        crd["metadata"]["name"] = json!("tickets.flights.com");
        let err = prepare(&mut crd).unwrap_err();
        assert_eq!(err.code(), 422);
        assert!(
            err.message
                .contains("must be spec.names.plural+\".\"+spec.group"),
            "{}",
            err.message
        );
    }

    #[test]
    fn exactly_one_storage_version_is_required() {
        let mut crd = flight_crd();
        crd["spec"]["versions"][0]["storage"] = json!(false);
        let err = prepare(&mut crd).unwrap_err();
        assert!(
            err.message
                .contains("exactly one version marked as storage version"),
            "{}",
            err.message
        );
    }

    #[test]
    fn served_versions_become_resources_with_short_names() {
        let mut crd = flight_crd();
        prepare(&mut crd).unwrap();
        let rs = resources(&crd, false);
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].short_names, vec!["ft"]);
        assert!(rs[0].namespaced);
        assert_eq!(
            rs[0].key(Some("default"), "t"),
            "/flights.com/flighttickets/default/t"
        );
    }
}
