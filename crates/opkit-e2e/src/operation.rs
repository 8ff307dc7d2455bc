//! The operations a step is made of — apply an object, check one is there (assert) or not
//! (error), delete objects and wait, evaluate CEL over referenced objects — each against a
//! [`Cluster`] in a test namespace. kuttl's steps sequence them (`step`); chainsaw's
//! try/catch/finally will sequence the same operations.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::{Applied, Cluster, Resource, gvk_string, is_not_found, message};
use crate::diff::{pretty_diff, resource_id};
use crate::discovery::CelCheck;
use crate::subset::is_subset;
use crate::types::{DeleteRef, ResourceRef};
use crate::yaml;

/// Where operations run.
#[derive(Clone)]
pub(crate) struct Target {
    pub cluster: Cluster,
    pub namespace: String,
}

/// An object created by an apply, to delete when the test ends.
#[derive(Debug, Clone)]
pub(crate) struct Created {
    pub resource: Resource,
    pub namespace: String,
    pub name: String,
}

impl Created {
    /// `<Kind>:<ns>/<name>`.
    pub(crate) fn id(&self) -> String {
        format!(
            "{}:{}/{}",
            self.resource.api.kind, self.namespace, self.name
        )
    }
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Target {
    /// Applies `object` (create or merge-patch); the log line and, when created, the object to
    /// clean up.
    pub(crate) async fn apply(
        &self,
        object: &Value,
        timeout: Duration,
    ) -> Result<(String, Option<Created>), String> {
        let mut object = object.clone();
        let resource = self
            .cluster
            .namespaced(&mut object, &self.namespace)
            .await?;
        let applied = self
            .cluster
            .create_or_update(&resource, &object, timeout)
            .await?;
        let id = resource_id(&object);
        Ok(match applied {
            Applied::Updated => (format!("{id} updated"), None),
            Applied::Created => (
                format!("{id} created"),
                Some(Created {
                    namespace: yaml::meta(&object, "namespace").to_string(),
                    name: yaml::meta(&object, "name").to_string(),
                    resource,
                }),
            ),
        })
    }

    /// The objects an expected object is compared with: the named one, or those of its kind
    /// (with its labels). The expected object gets its namespace.
    /// `Err((true, _))` when the named object is not found.
    async fn candidates(
        &self,
        expected: &mut Value,
    ) -> Result<(Resource, Vec<Value>), (bool, String)> {
        let resource = self
            .cluster
            .namespaced(expected, &self.namespace)
            .await
            .map_err(|e| (false, e))?;
        let ns = yaml::meta(expected, "namespace").to_string();
        let name = yaml::meta(expected, "name");
        if !name.is_empty() {
            let actual = self
                .cluster
                .get(&resource, &ns, name)
                .await
                .map_err(|e| (is_not_found(&e), message(&e)))?;
            return Ok((resource, vec![actual]));
        }
        let items = self
            .cluster
            .list(&resource, &ns, &labels_of(expected))
            .await
            .map_err(|e| (false, message(&e)))?;
        Ok((resource, items))
    }

    /// Whether an object matching `expected` exists; the errors (a diff and a message per
    /// candidate) when none does.
    pub(crate) async fn assert(&self, expected: &Value) -> Vec<String> {
        let mut expected = expected.clone();
        let (resource, items) = match self.candidates(&mut expected).await {
            Ok(c) => c,
            Err((_, e)) => return vec![e],
        };
        if items.is_empty() {
            return vec![format!(
                "no resources matched of kind: {}",
                gvk_string(&resource.api.api_version, &resource.api.kind)
            )];
        }
        let mut errors = Vec::new();
        for actual in &items {
            match is_subset(&expected, actual) {
                Ok(()) => return Vec::new(),
                Err(mismatch) => {
                    errors.push(pretty_diff(&expected, actual));
                    errors.push(format!("resource {}: {mismatch}", resource_id(&expected)));
                }
            }
        }
        errors
    }

    /// The error (if any) that an object matching `expected` exists.
    pub(crate) async fn absent(&self, expected: &Value) -> Option<String> {
        let mut expected = expected.clone();
        let (resource, items) = match self.candidates(&mut expected).await {
            Ok(c) => c,
            Err((true, _)) => return None,
            Err((false, e)) => return Some(e),
        };
        let gvk = gvk_string(&resource.api.api_version, &resource.api.kind);
        let matched: Vec<&Value> = items
            .iter()
            .filter(|a| is_subset(&expected, a).is_ok())
            .collect();
        match matched.as_slice() {
            [] => None,
            [one] => Some(format!(
                "resource {gvk} {} matched error assertion",
                yaml::meta(one, "name")
            )),
            [first, rest @ ..] => Some(format!(
                "resource {gvk} {} (and {} other resources) matched error assertion",
                yaml::meta(first, "name"),
                rest.len()
            )),
        }
    }

    /// Deletes what `refs` name (by name, by labels, or every object of the kind) and waits
    /// until they are gone; log lines go to `log`.
    pub(crate) async fn delete(
        &self,
        refs: &[DeleteRef],
        timeout: Duration,
        log: &mut (dyn FnMut(String) + Send),
    ) -> Result<(), String> {
        let mut deleted: Vec<(Resource, String, String)> = Vec::new();
        for r in refs {
            let resource = self.cluster.resolve(&r.api_version, &r.kind).await?;
            let ns = if !resource.namespaced {
                String::new()
            } else if r.namespace.is_empty() {
                self.namespace.clone()
            } else {
                r.namespace.clone()
            };
            let names: Vec<String> = if r.name.is_empty() {
                self.cluster
                    .list(&resource, &ns, &r.labels)
                    .await
                    .map_err(|e| message(&e))?
                    .iter()
                    .map(|o| yaml::meta(o, "name").to_string())
                    .collect()
            } else {
                vec![r.name.clone()]
            };
            for name in names {
                let gvk = gvk_string(&r.api_version, &resource.api.kind);
                let gone = !self
                    .cluster
                    .delete(&resource, &ns, &name)
                    .await
                    .map_err(|e| format!("deleting {gvk} {name} failed: {}", message(&e)))?;
                let id = format!("{}:{ns}/{name}", resource.api.kind);
                log(if gone {
                    format!("{id} already gone")
                } else {
                    format!("{id} deleted")
                });
                deleted.push((resource.clone(), ns.clone(), name));
            }
        }
        let deadline = std::time::Instant::now() + timeout;
        crate::poll::until(deadline, || async {
            for (resource, ns, name) in &deleted {
                match self.cluster.get(resource, ns, name).await {
                    Err(e) if is_not_found(&e) => {}
                    _ => {
                        return Err(format!(
                            "{} {name} still exists",
                            gvk_string(&resource.api.api_version, &resource.api.kind)
                        ));
                    }
                }
            }
            Ok(())
        })
        .await
        .map_err(|still| {
            format!(
                "timed out waiting for resource deletion (result of last check was: {still:?}): \
                 context deadline exceeded"
            )
        })
    }

    /// Evaluates CEL `assertAll` / `assertAny` over the referenced objects; the errors.
    pub(crate) async fn cel(
        &self,
        refs: &[ResourceRef],
        all: &[CelCheck],
        any: &[CelCheck],
    ) -> Vec<String> {
        let mut bound: Vec<(String, Value)> = Vec::new();
        for r in refs {
            let ns = if r.namespace.is_empty() {
                &self.namespace
            } else {
                &r.namespace
            };
            let got = async {
                let resource = self.cluster.resolve(&r.api_version, &r.kind).await?;
                self.cluster
                    .get(&resource, ns, &r.name)
                    .await
                    .map_err(|e| message(&e))
            }
            .await;
            match got {
                Ok(v) => bound.push((r.reference.clone(), v)),
                Err(e) => {
                    return vec![format!(
                        "failed to get referenced resource '{ns}/{}': {e}",
                        r.name
                    )];
                }
            }
        }
        let vars: Vec<(&str, &Value)> = bound.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let eval = |c: &CelCheck| -> Result<(), String> {
            match c.program.evaluate_json(&vars) {
                Ok(Value::Bool(true)) => Ok(()),
                Ok(v) => Err(format!("expression {:?} evaluated to '{v}'", c.source)),
                Err(e) => Err(format!("failed to evaluate CEL expression: {e}")),
            }
        };
        let mut errors = Vec::new();
        let failed: Vec<String> = all.iter().filter_map(|c| eval(c).err()).collect();
        if !failed.is_empty() {
            errors.push(format!(
                "not all assertAll expressions evaluated to true: {}",
                failed.join("\n")
            ));
        }
        if !any.is_empty() {
            let failed: Vec<String> = any.iter().filter_map(|c| eval(c).err()).collect();
            if failed.len() == any.len() {
                errors.push(format!(
                    "no expression evaluated to true: {}",
                    failed.join("\n")
                ));
            }
        }
        errors
    }
}
