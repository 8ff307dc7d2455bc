//! The checks before a bundle's objects replace what an extension has installed — an upgrade,
//! or a downgrade (a rollback): OLM v1's CRD upgrade-safety preflight
//! ([`opkit_olm::crd_safety`], skipped under `enforcement: None`), and opkit's own
//! "existing objects still validate": every custom resource on the cluster of a CRD the
//! bundle changes must validate against the bundle's schema of its version, or the
//! change would strand it. The controller runs them before applying; `opkit operator
//! rollback` runs the same checks first, so a refused rollback changes nothing.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt};
use serde_json::Value;

use crate::api::{ClusterExtension, CrdUpgradeSafetyEnforcement};
use crate::revision::describe;

/// Runs both checks for replacing `ext`'s objects by `objects`; why not, when they fail.
pub async fn check(
    client: &Client,
    ext: &ClusterExtension,
    objects: &[Value],
) -> Result<(), String> {
    let enforcement = ext
        .spec
        .install
        .as_ref()
        .and_then(|i| i.preflight.as_ref())
        .and_then(|p| p.crd_upgrade_safety.as_ref())
        .map(|c| c.enforcement)
        .unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut unsafe_changes = Vec::new();
    for new in objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
    {
        let name = new["metadata"]["name"].as_str().unwrap_or_default();
        let live = api
            .get_opt(name)
            .await
            .map_err(|e| format!("cannot read CustomResourceDefinition {name}: {e}"))?;
        let Some(live) = live else { continue };
        let old = serde_json::to_value(&live)
            .map_err(|e| format!("cannot read CustomResourceDefinition {name}: {e}"))?;
        if enforcement == CrdUpgradeSafetyEnforcement::Strict
            && let Err(unsafe_upgrade) = opkit_olm::crd_safety::check_upgrade(&old, new)
        {
            unsafe_changes.push(unsafe_upgrade.to_string());
            continue;
        }
        existing_objects_validate(client, &live, new).await?;
    }
    if unsafe_changes.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "CRD upgrade safety preflight failed:\n{}",
            unsafe_changes.join("\n")
        ))
    }
}

/// Checks every custom resource of `live`, read at each version `new` serves, validates
/// against `new`'s schema of that version (pruned of unknown fields first, as the API server
/// decodes); names the first that does not.
async fn existing_objects_validate(
    client: &Client,
    live: &CustomResourceDefinition,
    new: &Value,
) -> Result<(), String> {
    let crd = live.name_any();
    let served_live: Vec<&str> = live
        .spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.as_str())
        .collect();
    let empty = Vec::new();
    for version in new["spec"]["versions"].as_array().unwrap_or(&empty) {
        let name = version["name"].as_str().unwrap_or_default();
        let Some(schema) = version["schema"].get("openAPIV3Schema") else {
            continue;
        };
        if !served_live.contains(&name) || version["served"] == false {
            continue;
        }
        let schema = opkit_schema::Schema::compile_lenient(schema).map_err(|e| {
            format!(
                "the bundle's CustomResourceDefinition {crd} version {name} has an unusable schema: {}",
                e.first().map(ToString::to_string).unwrap_or_default()
            )
        })?;
        let names = &live.spec.names;
        let resource = ApiResource {
            group: live.spec.group.clone(),
            version: name.to_string(),
            api_version: format!("{}/{name}", live.spec.group),
            kind: names.kind.clone(),
            plural: names.plural.clone(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list the {} of {crd}: {e}", names.plural))?;
        for object in list {
            let mut value = serde_json::to_value(&object)
                .map_err(|e| format!("cannot read a {}: {e}", names.kind))?;
            value["apiVersion"] = resource.api_version.clone().into();
            value["kind"] = names.kind.clone().into();
            schema.prune(&mut value);
            let errors = schema.validate(&value);
            if let Some(first) = errors.first() {
                return Err(format!(
                    "existing {} would not validate against the bundle's CustomResourceDefinition {crd} version {name}: {first}",
                    describe(&value)
                ));
            }
        }
    }
    Ok(())
}
