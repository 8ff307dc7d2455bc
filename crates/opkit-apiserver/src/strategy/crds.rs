//! CustomResourceDefinitions: validation and defaulting, and serving their resources.
//!
//! When a CRD is stored its served versions are (re)registered with compiled schemas; when it
//! is removed they are no longer served. A deleted CRD keeps the cleanup finalizer until the
//! CRD controllers have removed every custom resource of it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Strategy, crd_versions};
use crate::api::Api;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::registry::{ALL_VERBS, CustomVersion, Origin, Registry, Resource, ScalePaths};
use crate::request::Part;
use crate::webhook_config::Conversion;

/// The finalizer that holds a deleted CRD until its objects are gone.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn cause(field: &str, message: impl Into<String>) -> Cause {
    Cause::new("FieldValueInvalid", field, message)
}

fn required(field: &str) -> Cause {
    Cause::new("FieldValueRequired", field, "Required value")
}

fn is_dns_label(s: &str) -> bool {
    opkit_apimachinery::validation::is_dns1123_label(s).is_empty()
}

/// Defaults and validates a CRD before it is stored (create, and update with the stored
/// `old`).
fn prepare(crd: &mut Value, old: Option<&Value>) -> ApiResult<()> {
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
                causes.extend(errors.iter().map(Cause::from_field_error));
            }
        }
    }
    causes.extend(crd_versions::validate_conversion(crd, old));
    if old.is_some() {
        // (A new CRD's one stored version is its storage version: `initial_status`.)
        causes.extend(crd_versions::validate_stored_versions(crd));
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
pub(crate) fn resources(crd: &Value, terminating: bool) -> Vec<Arc<Resource>> {
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
    let conversion = Conversion::of(crd);
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
            conversion: conversion.clone(),
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

/// CustomResourceDefinitions: checked and defaulted when written, served (or no longer) as
/// soon as they are stored or removed. Their status (`Established`, `NamesAccepted`) and the
/// removal of their objects when they are deleted are the CRD controllers' work
/// (`opkit-controllers`), as in upstream's apiextensions-apiserver.
pub(crate) struct Crds;

impl Strategy for Crds {
    fn initial_status(&self, obj: &Value) -> Option<Value> {
        crd_versions::initial_status(obj)
    }

    fn prepare_create(&self, obj: &mut Value) -> ApiResult<()> {
        prepare(obj, None)
    }

    fn prepare_update(&self, part: Part, current: &Value, new: &mut Value) -> ApiResult<()> {
        match part {
            Part::Main => {
                crd_versions::record_storage_version(new);
                prepare(new, Some(current))
            }
            Part::Status | Part::Finalize => Ok(()),
        }
    }

    fn deletion_finalizers(&self) -> &'static [&'static str] {
        &[CLEANUP_FINALIZER]
    }

    fn committed(&self, api: &Api, obj: &Value, deleted: bool) {
        register(&api.registry, obj, deleted);
    }
}

/// Serves the versions of a stored CRD (marked terminating while it is being deleted), or
/// stops serving them once it is removed.
pub(crate) fn register(registry: &Registry, crd: &Value, deleted: bool) {
    let name = object::name(crd);
    if deleted {
        registry.remove_custom(name);
    } else {
        registry.set_custom(name, resources(crd, object::is_deleting(crd)));
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
        prepare(&mut crd, None).unwrap();
        assert_eq!(crd["spec"]["names"]["listKind"], "FlightTicketList");
        assert_eq!(crd["spec"]["names"]["singular"], "flightticket");
    }

    #[test]
    fn name_must_be_plural_dot_group() {
        let mut crd = flight_crd();
        crd["metadata"]["name"] = json!("tickets.flights.com");
        let err = prepare(&mut crd, None).unwrap_err();
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
        let err = prepare(&mut crd, None).unwrap_err();
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
        prepare(&mut crd, None).unwrap();
        let rs = resources(&crd, false);
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].short_names, vec!["ft"]);
        assert!(rs[0].namespaced);
        assert_eq!(
            crate::storage::key(&rs[0], Some("default"), "t"),
            "/flights.com/flighttickets/default/t"
        );
    }
}
