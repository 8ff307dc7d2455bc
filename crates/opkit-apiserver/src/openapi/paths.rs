//! The operations the server publishes for a resource, rendered as OpenAPI v3 or Swagger 2.0.
//!
//! One description ([`Operation`]) feeds both renderers, so the two documents list the same
//! verbs, parameters and bodies. The shapes follow kube-apiserver's: the query parameters that
//! clients probe for (`fieldValidation` on PATCH is how kubectl decides to let the server
//! validate), the patch content types (the presence of `strategic-merge-patch+json` is how
//! kubectl's `apply` decides to compute a strategic merge patch from these schemas), and the
//! `x-kubernetes-action` / `x-kubernetes-group-version-kind` extensions.

use serde_json::{Map, Value, json};

use super::builtin::{V2_PREFIX, V3_PREFIX, names};
use crate::registry::Resource;

/// A parameter of an operation.
#[derive(Debug)]
pub struct Param {
    name: &'static str,
    location: &'static str,
    ty: &'static str,
    description: &'static str,
}

const fn q(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: "query",
        ty,
        description,
    }
}

static PRETTY: Param = q(
    "pretty",
    "string",
    "If 'true', the output is pretty printed.",
);
static NAME: Param = Param {
    name: "name",
    location: "path",
    ty: "string",
    description: "name of the object",
};
static NAMESPACE: Param = Param {
    name: "namespace",
    location: "path",
    ty: "string",
    description: "object name and auth scope, such as for teams and projects",
};
static DRY_RUN: Param = q(
    "dryRun",
    "string",
    "When present, modifications are not persisted. Valid value: All (every dry-run stage is processed).",
);
static FIELD_MANAGER: Param = q(
    "fieldManager",
    "string",
    "The name of the actor or entity making these changes, recorded in managedFields.",
);
static FIELD_VALIDATION: Param = q(
    "fieldValidation",
    "string",
    "How the server treats unknown or duplicate fields in the request body: Ignore, Warn (the default, answered as Warning headers) or Strict (the request fails).",
);
static FORCE: Param = q(
    "force",
    "boolean",
    "Force an apply request: take over fields owned by other managers. Only valid for apply patches.",
);
static ALLOW_WATCH_BOOKMARKS: Param = q(
    "allowWatchBookmarks",
    "boolean",
    "Ask for BOOKMARK watch events. Ignored by non-watch requests.",
);
static CONTINUE: Param = q(
    "continue",
    "string",
    "The continue token of a previous paged list, to fetch the next page.",
);
static FIELD_SELECTOR: Param = q(
    "fieldSelector",
    "string",
    "Restrict the returned objects by their fields.",
);
static LABEL_SELECTOR: Param = q(
    "labelSelector",
    "string",
    "Restrict the returned objects by their labels.",
);
static LIMIT: Param = q(
    "limit",
    "integer",
    "The maximum number of objects to return in one page; the list carries a continue token when more remain.",
);
static RESOURCE_VERSION: Param = q(
    "resourceVersion",
    "string",
    "Constrains the resource versions a request may be served from.",
);
static RESOURCE_VERSION_MATCH: Param = q(
    "resourceVersionMatch",
    "string",
    "How resourceVersion applies to a list: NotOlderThan or Exact.",
);
static SEND_INITIAL_EVENTS: Param = q(
    "sendInitialEvents",
    "boolean",
    "With watch=true, start the stream with the current state, then a BOOKMARK marking its end.",
);
static TIMEOUT_SECONDS: Param = q(
    "timeoutSeconds",
    "integer",
    "Timeout for the list/watch call, regardless of activity.",
);
static WATCH: Param = q(
    "watch",
    "boolean",
    "Watch for changes to the described resources and return them as a stream of add, update and remove notifications.",
);
static GRACE_PERIOD: Param = q(
    "gracePeriodSeconds",
    "integer",
    "The duration in seconds before the object should be deleted.",
);
static ORPHAN_DEPENDENTS: Param = q(
    "orphanDependents",
    "boolean",
    "Deprecated: use propagationPolicy. Whether dependents are orphaned.",
);
static PROPAGATION_POLICY: Param = q(
    "propagationPolicy",
    "string",
    "Whether and how garbage collection is performed: Orphan, Background or Foreground.",
);

static LIST_PARAMS: &[&Param] = &[
    &ALLOW_WATCH_BOOKMARKS,
    &CONTINUE,
    &FIELD_SELECTOR,
    &LABEL_SELECTOR,
    &LIMIT,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
    &WATCH,
];
static WRITE_PARAMS: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION];
static PATCH_PARAMS: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE];
static DELETE_PARAMS: &[&Param] = &[
    &DRY_RUN,
    &GRACE_PERIOD,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
];
static DELETE_COLLECTION_PARAMS: &[&Param] = &[
    &CONTINUE,
    &DRY_RUN,
    &FIELD_SELECTOR,
    &GRACE_PERIOD,
    &LABEL_SELECTOR,
    &LIMIT,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
];

const OBJECT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const CUSTOM_OBJECT_TYPES: &[&str] = &["application/json", "application/yaml"];
const WATCH_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const CUSTOM_WATCH_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json;stream=watch",
];
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];

/// One operation on one path.
#[derive(Debug)]
pub struct Operation {
    method: &'static str,
    action: &'static str,
    id: String,
    description: String,
    tag: String,
    gvk: (String, String, String),
    params: &'static [&'static Param],
    /// Request body: definition name, accepted media types.
    body: Option<(String, &'static [&'static str])>,
    /// Success responses: code, definition name.
    responses: Vec<(u16, String)>,
    produces: &'static [&'static str],
}

/// The operations of one path, with the parameters every operation shares.
#[derive(Debug)]
pub struct PathItem {
    /// The path (`/apis/apps/v1/namespaces/{namespace}/deployments/{name}`).
    pub path: String,
    params: Vec<&'static Param>,
    ops: Vec<Operation>,
}

/// `api/v1` or `apis/G/V` (no leading slash).
pub fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Upstream's operation-id infix for a group version: `CoreV1`, `AppsV1`,
/// `RbacAuthorizationV1`, `FlightsComV1`.
fn id_infix(group: &str, version: &str) -> (String, String) {
    let group = if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    };
    let words: Vec<&str> = group.split(['.', '-']).filter(|w| !w.is_empty()).collect();
    let title = |w: &str| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    let camel: String = words.iter().map(|w| title(w)).collect();
    let tag_group: String = words
        .iter()
        .enumerate()
        .map(|(i, w)| if i == 0 { w.to_string() } else { title(w) })
        .collect();
    (
        format!("{camel}{}", title(version)),
        format!("{tag_group}_{version}"),
    )
}

/// Every path of one served resource (collection, object, subresources, watch paths).
pub fn resource_paths(res: &Resource, kind_schema: &str) -> Vec<PathItem> {
    let custom = res.is_custom();
    let (infix, tag) = id_infix(&res.group, &res.version);
    let base = format!("/{}", gv_path(&res.group, &res.version));
    let scoped = if res.namespaced { "Namespaced" } else { "" };
    let kind = &res.kind;
    let list_schema = format!("{kind_schema}List");
    let objects = if custom {
        CUSTOM_OBJECT_TYPES
    } else {
        OBJECT_TYPES
    };
    let watches = if custom {
        CUSTOM_WATCH_TYPES
    } else {
        WATCH_TYPES
    };
    let patches = if custom {
        CUSTOM_PATCH_TYPES
    } else {
        PATCH_TYPES
    };
    let gvk = (res.group.clone(), res.version.clone(), kind.clone());
    let op = |method: &'static str,
              action: &'static str,
              verb: &str,
              suffix: &str,
              description: String,
              params: &'static [&'static Param],
              body: Option<(String, &'static [&'static str])>,
              responses: Vec<(u16, String)>,
              produces: &'static [&'static str]| Operation {
        method,
        action,
        id: format!("{verb}{infix}{scoped}{kind}{suffix}"),
        description,
        tag: tag.clone(),
        gvk: gvk.clone(),
        params,
        body,
        responses,
        produces,
    };
    let ns_params: Vec<&'static Param> = if res.namespaced {
        vec![&NAMESPACE, &PRETTY]
    } else {
        vec![&PRETTY]
    };
    let item_params: Vec<&'static Param> = if res.namespaced {
        vec![&NAME, &NAMESPACE, &PRETTY]
    } else {
        vec![&NAME, &PRETTY]
    };
    let scope = if res.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let plural = &res.plural;
    let collection = format!("{base}{scope}/{plural}");
    let item = format!("{collection}/{{name}}");
    let mut out = vec![
        PathItem {
            path: collection,
            params: ns_params.clone(),
            ops: vec![
                op(
                    "get",
                    "list",
                    "list",
                    "",
                    format!("list or watch objects of kind {kind}"),
                    LIST_PARAMS,
                    None,
                    vec![(200, list_schema.clone())],
                    watches,
                ),
                op(
                    "post",
                    "post",
                    "create",
                    "",
                    format!("create a {kind}"),
                    WRITE_PARAMS,
                    Some((kind_schema.to_string(), objects)),
                    vec![
                        (200, kind_schema.to_string()),
                        (201, kind_schema.to_string()),
                        (202, kind_schema.to_string()),
                    ],
                    objects,
                ),
                op(
                    "delete",
                    "deletecollection",
                    "delete",
                    "",
                    format!("delete collection of {kind}"),
                    DELETE_COLLECTION_PARAMS,
                    Some((names::DELETE_OPTIONS.to_string(), objects)),
                    vec![(200, names::STATUS.to_string())],
                    objects,
                ),
            ],
        },
        PathItem {
            path: item.clone(),
            params: item_params.clone(),
            ops: vec![
                op(
                    "get",
                    "get",
                    "read",
                    "",
                    format!("read the specified {kind}"),
                    &[],
                    None,
                    vec![(200, kind_schema.to_string())],
                    objects,
                ),
                op(
                    "put",
                    "put",
                    "replace",
                    "",
                    format!("replace the specified {kind}"),
                    WRITE_PARAMS,
                    Some((kind_schema.to_string(), objects)),
                    vec![
                        (200, kind_schema.to_string()),
                        (201, kind_schema.to_string()),
                    ],
                    objects,
                ),
                op(
                    "patch",
                    "patch",
                    "patch",
                    "",
                    format!("partially update the specified {kind}"),
                    PATCH_PARAMS,
                    Some((names::PATCH.to_string(), patches)),
                    vec![
                        (200, kind_schema.to_string()),
                        (201, kind_schema.to_string()),
                    ],
                    objects,
                ),
                op(
                    "delete",
                    "delete",
                    "delete",
                    "",
                    format!("delete a {kind}"),
                    DELETE_PARAMS,
                    Some((names::DELETE_OPTIONS.to_string(), objects)),
                    vec![
                        (200, kind_schema.to_string()),
                        (202, kind_schema.to_string()),
                    ],
                    objects,
                ),
            ],
        },
    ];
    let sub = |name: &str, schema: &str, sub_gvk: (String, String, String), label: &str| {
        let mut ops = Vec::new();
        for (method, action, verb, what, params, body) in [
            (
                "get",
                "get",
                "read",
                "read",
                &[] as &'static [&'static Param],
                false,
            ),
            ("put", "put", "replace", "replace", WRITE_PARAMS, true),
            (
                "patch",
                "patch",
                "patch",
                "partially update",
                PATCH_PARAMS,
                true,
            ),
        ] {
            let body = body.then(|| {
                if method == "patch" {
                    (names::PATCH.to_string(), patches)
                } else {
                    (schema.to_string(), objects)
                }
            });
            let mut o = op(
                method,
                action,
                verb,
                label,
                format!("{what} {name} of the specified {kind}"),
                params,
                body,
                if method == "get" {
                    vec![(200, schema.to_string())]
                } else {
                    vec![(200, schema.to_string()), (201, schema.to_string())]
                },
                objects,
            );
            o.gvk = sub_gvk.clone();
            ops.push(o);
        }
        PathItem {
            path: format!("{item}/{name}"),
            params: item_params.clone(),
            ops,
        }
    };
    if res.status {
        out.push(sub("status", kind_schema, gvk.clone(), "Status"));
    }
    if res.scale.is_some() {
        out.push(sub(
            "scale",
            names::SCALE,
            ("autoscaling".into(), "v1".into(), "Scale".into()),
            "Scale",
        ));
    }
    let watch_event = names::WATCH_EVENT.to_string();
    let watch_base = format!("{base}/watch{scope}/{plural}");
    out.push(PathItem {
        path: watch_base.clone(),
        params: ns_params
            .iter()
            .copied()
            .chain(LIST_PARAMS.iter().copied())
            .collect(),
        ops: vec![op(
            "get",
            "watchlist",
            "watch",
            "List",
            format!("watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."),
            &[],
            None,
            vec![(200, watch_event.clone())],
            watches,
        )],
    });
    out.push(PathItem {
        path: format!("{watch_base}/{{name}}"),
        params: item_params
            .iter()
            .copied()
            .chain(LIST_PARAMS.iter().copied())
            .collect(),
        ops: vec![op(
            "get",
            "watch",
            "watch",
            "",
            format!("watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."),
            &[],
            None,
            vec![(200, watch_event.clone())],
            watches,
        )],
    });
    if res.namespaced {
        let all = |verb: &str, suffix: &str| format!("{verb}{infix}{kind}{suffix}ForAllNamespaces");
        let mut list = op(
            "get",
            "list",
            "list",
            "",
            format!("list or watch objects of kind {kind}"),
            &[],
            None,
            vec![(200, list_schema.clone())],
            watches,
        );
        list.id = all("list", "");
        let mut watch = op(
            "get",
            "watchlist",
            "watch",
            "",
            format!(
                "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
            ),
            &[],
            None,
            vec![(200, watch_event)],
            watches,
        );
        watch.id = all("watch", "List");
        let all_params: Vec<&'static Param> = std::iter::once(&PRETTY)
            .chain(LIST_PARAMS.iter().copied())
            .collect();
        out.push(PathItem {
            path: format!("{base}/{plural}"),
            params: all_params.clone(),
            ops: vec![list],
        });
        out.push(PathItem {
            path: format!("{base}/watch/{plural}"),
            params: all_params,
            ops: vec![watch],
        });
    }
    out
}

/// The `/apis/G/V/` path: the group version's APIResourceList.
pub fn resources_path(group: &str, version: &str) -> (String, Value, Value) {
    let (infix, tag) = id_infix(group, version);
    let path = format!("/{}/", gv_path(group, version));
    let id = format!("get{infix}APIResources");
    let description = "get available resources";
    let types = OBJECT_TYPES;
    let v3 = json!({"get": {
        "tags": [tag],
        "description": description,
        "operationId": id,
        "responses": {
            "200": {"description": "OK", "content": content(types, names::API_RESOURCE_LIST)},
            "401": {"description": "Unauthorized"},
        },
    }});
    let v2 = json!({"get": {
        "consumes": types,
        "description": description,
        "operationId": id,
        "produces": types,
        "responses": {
            "200": {"description": "OK", "schema": {"$ref": format!("{V2_PREFIX}{}", names::API_RESOURCE_LIST)}},
            "401": {"description": "Unauthorized"},
        },
        "schemes": ["https"],
        "tags": [tag],
    }});
    (path, v3, v2)
}

fn content(types: &[&str], schema: &str) -> Value {
    let reference = json!({"schema": {"$ref": format!("{V3_PREFIX}{schema}")}});
    Value::Object(
        types
            .iter()
            .map(|t| ((*t).to_string(), reference.clone()))
            .collect(),
    )
}

fn param_v3(p: &Param) -> Value {
    let mut v = json!({
        "name": p.name,
        "in": p.location,
        "description": p.description,
        "schema": {"type": p.ty, "uniqueItems": true},
    });
    if p.location == "path" {
        v["required"] = true.into();
    }
    v
}

fn param_v2(p: &Param) -> Value {
    let mut v = json!({
        "name": p.name,
        "in": p.location,
        "description": p.description,
        "type": p.ty,
        "uniqueItems": true,
    });
    if p.location == "path" {
        v["required"] = true.into();
    }
    v
}

fn gvk_value(gvk: &(String, String, String)) -> Value {
    json!({"group": gvk.0, "kind": gvk.2, "version": gvk.1})
}

impl PathItem {
    /// The OpenAPI v3 path item.
    pub fn v3(&self) -> Value {
        let mut item = Map::new();
        for op in &self.ops {
            let mut responses = Map::new();
            for (code, schema) in &op.responses {
                responses.insert(
                    code.to_string(),
                    json!({"description": status_text(*code), "content": content(op.produces, schema)}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            let mut o = json!({
                "tags": [op.tag],
                "description": op.description,
                "operationId": op.id,
                "responses": responses,
                "x-kubernetes-action": op.action,
                "x-kubernetes-group-version-kind": gvk_value(&op.gvk),
            });
            if !op.params.is_empty() {
                o["parameters"] = op.params.iter().map(|p| param_v3(p)).collect();
            }
            if let Some((schema, types)) = &op.body {
                o["requestBody"] =
                    json!({"content": content(types, schema), "required": op.method != "delete"});
            }
            item.insert(op.method.into(), o);
        }
        item.insert(
            "parameters".into(),
            self.params.iter().map(|p| param_v3(p)).collect(),
        );
        Value::Object(item)
    }

    /// The Swagger 2.0 path item.
    pub fn v2(&self) -> Value {
        let mut item = Map::new();
        for op in &self.ops {
            let mut responses = Map::new();
            for (code, schema) in &op.responses {
                responses.insert(
                    code.to_string(),
                    json!({"description": status_text(*code), "schema": {"$ref": format!("{V2_PREFIX}{schema}")}}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            let mut params: Vec<Value> = Vec::new();
            let consumes: &[&str] = match &op.body {
                Some((schema, types)) => {
                    params.push(json!({
                        "name": "body",
                        "in": "body",
                        "required": op.method != "delete",
                        "schema": {"$ref": format!("{V2_PREFIX}{schema}")},
                    }));
                    types
                }
                None => &["*/*"],
            };
            params.extend(op.params.iter().map(|p| param_v2(p)));
            let mut o = json!({
                "consumes": consumes,
                "description": op.description,
                "operationId": op.id,
                "produces": op.produces,
                "responses": responses,
                "schemes": ["https"],
                "tags": [op.tag],
                "x-kubernetes-action": op.action,
                "x-kubernetes-group-version-kind": gvk_value(&op.gvk),
            });
            if !params.is_empty() {
                o["parameters"] = params.into();
            }
            item.insert(op.method.into(), o);
        }
        item.insert(
            "parameters".into(),
            self.params.iter().map(|p| param_v2(p)).collect(),
        );
        Value::Object(item)
    }
}

fn status_text(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_follow_upstream_naming() {
        assert_eq!(id_infix("", "v1").0, "CoreV1");
        assert_eq!(id_infix("apps", "v1").0, "AppsV1");
        assert_eq!(
            id_infix("rbac.authorization.k8s.io", "v1"),
            (
                "RbacAuthorizationV1".to_string(),
                "rbacAuthorization_v1".to_string()
            )
        );
        assert_eq!(id_infix("flights.com", "v1beta1").0, "FlightsComV1beta1");
    }
}
