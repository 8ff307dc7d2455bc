//! The schemas of the built-in kinds, generated once from k8s-openapi's `schemars` impls.
//!
//! k8s-openapi already carries upstream's definition names (`io.k8s.api.apps.v1.Deployment`)
//! and descriptions, so a generator run over the served kinds yields upstream's definitions.
//! What it lacks is added here: `x-kubernetes-group-version-kind` on the kinds, the patch and
//! list extensions (`x-kubernetes-patch-merge-key`, `-patch-strategy`, `-list-type`,
//! `-list-map-keys`) from [`opkit_strategic::BuiltinPatchMeta`] (the same table the strategic
//! merge uses, so what clients read is what the server does), upstream's forms of `IntOrString`
//! and `Quantity`, and the `…List` kinds. Generation takes tens of milliseconds, so it runs once
//! per process ([`schemas`]) and every document borrows from the result.

use std::collections::HashSet;
use std::sync::OnceLock;

use k8s_openapi::schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use opkit_strategic::{BuiltinPatchMeta, ListType, PatchMeta, PatchStrategy};
use serde_json::{Map, Value, json};

/// Where component schemas live in an OpenAPI v3 document (the canonical form kept here).
pub const V3_PREFIX: &str = "#/components/schemas/";
/// Where definitions live in a Swagger 2.0 document.
pub const V2_PREFIX: &str = "#/definitions/";

/// Definition names of the meta types the published paths use.
pub mod names {
    /// `DeleteOptions`, the body of DELETE.
    pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
    /// `Status`, the answer of DELETE and of every error.
    pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    /// `Patch`, the body of PATCH.
    pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
    /// `WatchEvent`, one frame of a watch.
    pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
    /// `APIResourceList`, the answer of `/apis/G/V`.
    pub const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
    /// `ObjectMeta`, every object's `metadata`.
    pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    /// `ListMeta`, every list's `metadata`.
    pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
    /// `autoscaling/v1 Scale`, the body of the `scale` subresource.
    pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
    /// `IntOrString`.
    pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
    /// `Quantity`.
    pub const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
}

/// One built-in kind with a typed schema.
#[derive(Debug, Clone)]
pub struct BuiltinKind {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Its definition name (`io.k8s.api.apps.v1.Deployment`).
    pub name: String,
}

impl BuiltinKind {
    /// The definition name of its list kind (`io.k8s.api.apps.v1.DeploymentList`).
    pub fn list_name(&self) -> String {
        format!("{}List", self.name)
    }
}

/// Every built-in definition, in both document forms.
pub struct BuiltinSchemas {
    /// The kinds with typed schemas.
    pub kinds: Vec<BuiltinKind>,
    /// OpenAPI v3 component schemas (`$ref: #/components/schemas/…`, `allOf` around refs that
    /// carry a description, as upstream).
    pub v3: Map<String, Value>,
    /// Swagger 2.0 definitions (`$ref: #/definitions/…`, no `oneOf`).
    pub v2: Map<String, Value>,
}

impl BuiltinSchemas {
    /// The typed kind for a group/version/kind, if there is one.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&BuiltinKind> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
    }
}

/// The built-in schemas, generated at first use.
pub fn schemas() -> &'static BuiltinSchemas {
    static SCHEMAS: OnceLock<BuiltinSchemas> = OnceLock::new();
    SCHEMAS.get_or_init(generate)
}

fn add<T: k8s_openapi::Resource + JsonSchema>(
    generator: &mut SchemaGenerator,
    out: &mut Vec<BuiltinKind>,
) {
    generator.subschema_for::<T>();
    out.push(BuiltinKind {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        name: T::schema_name().into_owned(),
    });
}

/// Runs the generator over every served built-in kind and the meta types.
fn generate() -> BuiltinSchemas {
    use k8s_openapi::api::{
        admissionregistration::v1 as admreg, apps::v1 as apps, autoscaling::v1 as autoscaling_v1,
        autoscaling::v2 as autoscaling, batch::v1 as batch, coordination::v1 as coordination,
        core::v1 as core, discovery::v1 as discovery, events::v1 as events,
        networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut kinds = Vec::new();
    let k = &mut kinds;
    add::<core::Namespace>(&mut generator, k);
    add::<core::ConfigMap>(&mut generator, k);
    add::<core::Secret>(&mut generator, k);
    add::<core::Service>(&mut generator, k);
    add::<core::ServiceAccount>(&mut generator, k);
    add::<core::Pod>(&mut generator, k);
    add::<core::Node>(&mut generator, k);
    add::<core::Event>(&mut generator, k);
    add::<core::Endpoints>(&mut generator, k);
    add::<core::PersistentVolumeClaim>(&mut generator, k);
    add::<apps::Deployment>(&mut generator, k);
    add::<apps::ReplicaSet>(&mut generator, k);
    add::<apps::StatefulSet>(&mut generator, k);
    add::<apps::DaemonSet>(&mut generator, k);
    add::<apps::ControllerRevision>(&mut generator, k);
    add::<batch::Job>(&mut generator, k);
    add::<batch::CronJob>(&mut generator, k);
    add::<autoscaling::HorizontalPodAutoscaler>(&mut generator, k);
    add::<coordination::Lease>(&mut generator, k);
    add::<discovery::EndpointSlice>(&mut generator, k);
    add::<events::Event>(&mut generator, k);
    add::<networking::Ingress>(&mut generator, k);
    add::<policy::PodDisruptionBudget>(&mut generator, k);
    add::<rbac::Role>(&mut generator, k);
    add::<rbac::ClusterRole>(&mut generator, k);
    add::<rbac::RoleBinding>(&mut generator, k);
    add::<rbac::ClusterRoleBinding>(&mut generator, k);
    add::<admreg::MutatingWebhookConfiguration>(&mut generator, k);
    add::<admreg::ValidatingWebhookConfiguration>(&mut generator, k);
    add::<admreg::ValidatingAdmissionPolicy>(&mut generator, k);
    add::<admreg::ValidatingAdmissionPolicyBinding>(&mut generator, k);
    add::<apiext::CustomResourceDefinition>(&mut generator, k);
    generator.subschema_for::<autoscaling_v1::Scale>();
    generator.subschema_for::<meta::DeleteOptions>();
    generator.subschema_for::<meta::Status>();
    generator.subschema_for::<meta::Patch>();
    generator.subschema_for::<meta::WatchEvent<core::Pod>>();
    generator.subschema_for::<meta::APIResourceList>();
    generator.subschema_for::<meta::ListMeta>();
    let mut defs = generator.take_definitions(false);

    let mut patched = HashSet::new();
    for kind in &kinds {
        if let Some(schema) = defs.get_mut(&kind.name).and_then(Value::as_object_mut) {
            // k8s-openapi marks `metadata` required (it is not an `Option` in Rust);
            // upstream does not.
            if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r != "metadata");
                if required.is_empty() {
                    schema.remove("required");
                }
            }
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                gvk_list(&[(kind.group, kind.version, kind.kind)]),
            );
        }
        if let Some(meta) = BuiltinPatchMeta::for_kind(kind.group, kind.version, kind.kind) {
            annotate(&mut defs, &kind.name, &meta, &mut patched);
        }
        defs.insert(kind.list_name(), list_schema(kind));
    }
    let gvs: Vec<(&str, &str)> = {
        let mut v: Vec<(&str, &str)> = kinds.iter().map(|k| (k.group, k.version)).collect();
        v.dedup();
        v.sort();
        v.dedup();
        v
    };
    for (name, kind) in [
        (names::DELETE_OPTIONS, "DeleteOptions"),
        (names::WATCH_EVENT, "WatchEvent"),
    ] {
        let list: Vec<(&str, &str, &str)> = gvs.iter().map(|(g, v)| (*g, *v, kind)).collect();
        set_ext(&mut defs, name, gvk_list(&list));
    }
    set_ext(&mut defs, names::STATUS, gvk_list(&[("", "v1", "Status")]));
    set_ext(
        &mut defs,
        names::SCALE,
        gvk_list(&[("autoscaling", "v1", "Scale")]),
    );

    let mut v2 = Map::new();
    let mut v3 = Map::new();
    for (name, schema) in defs {
        let (s2, s3) = match name.as_str() {
            names::INT_OR_STRING => (
                json!({"description": schema["description"], "type": "string", "format": "int-or-string"}),
                json!({"description": schema["description"], "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}),
            ),
            names::QUANTITY => (
                json!({"description": schema["description"], "type": "string"}),
                json!({"description": schema["description"], "oneOf": [{"type": "string"}, {"type": "number"}], "x-kubernetes-int-or-string": true}),
            ),
            _ => (to_v2(&schema), to_v3(schema)),
        };
        v2.insert(name.clone(), s2);
        v3.insert(name, s3);
    }
    BuiltinSchemas { kinds, v3, v2 }
}

fn set_ext(defs: &mut Map<String, Value>, name: &str, gvk: Value) {
    if let Some(schema) = defs.get_mut(name).and_then(Value::as_object_mut) {
        schema.insert("x-kubernetes-group-version-kind".into(), gvk);
    }
}

/// `x-kubernetes-group-version-kind` of a schema.
pub fn gvk_list(gvks: &[(&str, &str, &str)]) -> Value {
    Value::Array(
        gvks.iter()
            .map(|(g, v, k)| json!({"group": g, "kind": k, "version": v}))
            .collect(),
    )
}

fn list_schema(kind: &BuiltinKind) -> Value {
    json!({
        "description": format!("{}List is a list of {} objects.", kind.kind, kind.kind),
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": format!("The {} objects.", kind.kind), "type": "array", "items": {"$ref": format!("{V3_PREFIX}{}", kind.name)}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"$ref": format!("{V3_PREFIX}{}", names::LIST_META), "description": "Standard list metadata."},
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": gvk_list(&[(kind.group, kind.version, &format!("{}List", kind.kind))]),
    })
}

/// The definition a property leads to: its own `$ref`, or its items' (lists), or its values'
/// (maps).
fn ref_target(prop: &Value) -> Option<String> {
    [
        prop.get("$ref"),
        prop.get("items").and_then(|i| i.get("$ref")),
        prop.get("additionalProperties").and_then(|i| i.get("$ref")),
    ]
    .into_iter()
    .flatten()
    .find_map(|r| r.as_str()?.strip_prefix(V3_PREFIX).map(str::to_string))
}

/// Writes the patch and list extensions of `meta` onto the properties of definition `name`,
/// then follows every property into the definition it references. Each definition is a Go
/// type upstream, and its tags do not depend on the path it was reached by, so each is
/// annotated once.
fn annotate(
    defs: &mut Map<String, Value>,
    name: &str,
    meta: &dyn PatchMeta,
    done: &mut HashSet<String>,
) {
    if !done.insert(name.to_string()) {
        return;
    }
    let Some(props) = defs
        .get_mut(name)
        .and_then(|d| d.get_mut("properties"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut next = Vec::new();
    for (field, prop) in props.iter_mut() {
        let Ok(fm) = meta.field(field) else { continue };
        let Some(obj) = prop.as_object_mut() else {
            continue;
        };
        let mut strategy: Vec<&str> = match fm.strategy {
            PatchStrategy::Default => vec![],
            PatchStrategy::Merge => vec!["merge"],
            PatchStrategy::Replace => vec!["replace"],
        };
        if fm.retain_keys {
            strategy.push("retainKeys");
        }
        if !strategy.is_empty() {
            obj.insert(
                "x-kubernetes-patch-strategy".into(),
                strategy.join(",").into(),
            );
        }
        if let Some(key) = fm.merge_keys.first() {
            obj.insert("x-kubernetes-patch-merge-key".into(), key.as_ref().into());
        }
        if let Some(list_type) = fm.list_type {
            let t = match list_type {
                ListType::Atomic => "atomic",
                ListType::Set => "set",
                ListType::Map => "map",
            };
            obj.insert("x-kubernetes-list-type".into(), t.into());
        }
        if !fm.list_map_keys.is_empty() {
            let keys: Vec<Value> = fm
                .list_map_keys
                .iter()
                .map(|k| Value::from(k.as_ref()))
                .collect();
            obj.insert("x-kubernetes-list-map-keys".into(), keys.into());
        }
        // A field whose value has no metadata answers with the default type name; nothing
        // below it needs annotating.
        if fm.value.type_name() != "object"
            && let Some(target) = ref_target(prop)
        {
            next.push((target, fm.value));
        }
    }
    for (target, value) in next {
        annotate(defs, &target, &*value, done);
    }
}

/// Keywords whose value is a map of subschemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "definitions", "$defs"];
/// Keywords whose value is a subschema or an array of them.
const SCHEMA_VALUES: &[&str] = &[
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
];

/// The subschemas directly below a schema. Only schema keywords are followed: property names
/// are data (`JSONSchemaProps` has properties called `$ref`, `default` and `enum`).
fn subschemas(obj: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    obj.iter().flat_map(|(k, child)| {
        let children: Box<dyn Iterator<Item = &Value>> = match child {
            Value::Object(m) if SCHEMA_MAPS.contains(&k.as_str()) => Box::new(m.values()),
            Value::Array(a) if SCHEMA_VALUES.contains(&k.as_str()) => Box::new(a.iter()),
            Value::Object(_) if SCHEMA_VALUES.contains(&k.as_str()) => {
                Box::new(std::iter::once(child))
            }
            _ => Box::new(std::iter::empty()),
        };
        children
    })
}

/// Mutable [`subschemas`].
fn subschemas_mut(obj: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut out = Vec::new();
    for (k, child) in obj.iter_mut() {
        let key = k.as_str();
        if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(m) = child {
                out.extend(m.values_mut());
            }
        } else if SCHEMA_VALUES.contains(&key) {
            if child.is_object() {
                out.push(child);
            } else if let Value::Array(a) = child {
                out.extend(a.iter_mut());
            }
        }
    }
    out
}

/// Upstream's v3 form: a `$ref` with siblings (a description) becomes `allOf: [{$ref}]`.
fn to_v3(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        let Value::Object(obj) = v else { return };
        if obj.len() > 1
            && obj.get("$ref").is_some_and(Value::is_string)
            && let Some(r) = obj.remove("$ref")
        {
            obj.insert("allOf".into(), json!([{"$ref": r}]));
        }
        for child in subschemas_mut(obj) {
            walk(child);
        }
    }
    walk(&mut schema);
    schema
}

/// Swagger 2.0 form: refs point into `#/definitions/`.
pub fn to_v2(schema: &Value) -> Value {
    fn walk(v: &mut Value) {
        let Value::Object(obj) = v else { return };
        if let Some(Value::String(r)) = obj.get_mut("$ref")
            && let Some(name) = r.strip_prefix(V3_PREFIX)
        {
            *r = format!("{V2_PREFIX}{name}");
        }
        for child in subschemas_mut(obj) {
            walk(child);
        }
    }
    let mut out = schema.clone();
    walk(&mut out);
    out
}

/// Adds to `out` the definition names `schema` and its subschemas reference.
pub fn refs_of(schema: &Value, prefix: &str, out: &mut Vec<String>) {
    let Value::Object(obj) = schema else { return };
    if let Some(name) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(prefix))
    {
        out.push(name.to_string());
    }
    for child in subschemas(obj) {
        refs_of(child, prefix, out);
    }
}

/// Every `$ref` string anywhere in a document (paths included), for checks.
#[cfg(test)]
pub fn refs_in_document(doc: &Value, prefix: &str, out: &mut Vec<String>) {
    match doc {
        Value::Object(obj) => {
            for (k, child) in obj {
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(prefix) {
                            out.push(name.to_string());
                        }
                    }
                    _ => refs_in_document(child, prefix, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| refs_in_document(i, prefix, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_merge_by_name_in_both_forms() {
        let s = schemas();
        for defs in [&s.v3, &s.v2] {
            let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
            assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
            assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
            assert_eq!(containers["x-kubernetes-list-type"], "map");
            assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        }
        let volumes = &s.v3["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
        assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
        let ports = &s.v3["io.k8s.api.core.v1.Container"]["properties"]["ports"];
        assert_eq!(
            ports["x-kubernetes-list-map-keys"],
            json!(["containerPort", "protocol"])
        );
        let finalizers = &s.v3[names::OBJECT_META]["properties"]["finalizers"];
        assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    }

    #[test]
    fn kinds_carry_group_version_kind_and_do_not_require_metadata() {
        let s = schemas();
        let d = &s.v3["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert!(d.get("required").is_none());
        assert_eq!(
            s.v3["io.k8s.api.apps.v1.DeploymentList"]["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(s.kinds.len(), 32);
    }

    #[test]
    fn refs_with_descriptions_use_all_of_in_v3_and_plain_refs_in_v2() {
        let s = schemas();
        let spec3 = &s.v3["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"];
        assert_eq!(
            spec3["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert!(spec3["description"].is_string());
        let spec2 = &s.v2["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"];
        assert_eq!(
            spec2["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
    }

    #[test]
    fn properties_named_like_keywords_stay_properties() {
        let s = schemas();
        let name = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        for defs in [&s.v3, &s.v2] {
            let props = &defs[name]["properties"];
            assert_eq!(props["$ref"]["type"], "string");
            assert!(props.get("allOf").is_some_and(|a| a["type"] == "array"));
            assert!(props["default"].is_object());
        }
    }

    #[test]
    fn int_or_string_follows_upstream_forms() {
        let s = schemas();
        assert_eq!(s.v2[names::INT_OR_STRING]["format"], "int-or-string");
        assert_eq!(s.v2[names::INT_OR_STRING]["type"], "string");
        assert_eq!(
            s.v3[names::INT_OR_STRING]["x-kubernetes-int-or-string"],
            true
        );
        assert_eq!(s.v3[names::INT_OR_STRING]["format"], "int-or-string");
    }

    #[test]
    fn every_reference_resolves() {
        let s = schemas();
        for (defs, prefix) in [(&s.v3, V3_PREFIX), (&s.v2, V2_PREFIX)] {
            for (name, schema) in defs.iter() {
                let mut refs = Vec::new();
                refs_in_document(schema, prefix, &mut refs);
                for r in refs {
                    assert!(defs.contains_key(&r), "{name} references missing {r}");
                }
            }
        }
    }
}
