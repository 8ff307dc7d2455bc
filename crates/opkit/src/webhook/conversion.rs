//! CRD conversion webhooks in kubebuilder's hub-and-spoke model: ConversionReview v1 in and
//! out at `/convert`, dispatched by each object's group and kind to the typed conversions of
//! that kind.
//!
//! The API server sends a ConversionReview whenever it must hand out (or store) an object in
//! another version than the one it holds. Writing a conversion between every pair of versions
//! grows quadratically, so, as controller-runtime does, one version is the [`Hub`] and every
//! other version (a spoke, [`Convertible`]) converts to and from it only; spoke to spoke goes
//! through the hub. The object's `metadata` is copied from the input onto the output, so a
//! conversion only deals with what differs between versions (the API server refuses
//! conversions that change metadata other than labels and annotations anyway).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::review;

/// kubebuilder's path of the conversion webhook, shared by every kind.
pub const CONVERT_PATH: &str = "/convert";

const API_VERSION: &str = "apiextensions.k8s.io/v1";
const KIND: &str = "ConversionReview";

/// Marker for the version all others convert through (kubebuilder's Hub): usually the
/// storage version. `impl Hub for v2::Widget {}`.
pub trait Hub:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// A non-hub version of the same kind (kubebuilder's Convertible): converts to and from
/// the hub `H`. `metadata` need not be converted: the webhook copies the input's metadata
/// onto the output.
pub trait Convertible<H: Hub>:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// This object as the hub version.
    fn to_hub(&self) -> Result<H, ConversionError>;
    /// The hub object as this version.
    fn from_hub(hub: &H) -> Result<Self, ConversionError>
    where
        Self: Sized;
}

/// Why a conversion failed; its message reaches the API server's client (as
/// `conversion webhook for GROUP/VERSION, Kind=KIND failed: MESSAGE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError {
    message: String,
}

impl ConversionError {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> ConversionError {
        ConversionError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ConversionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConversionError {}

/// A conversion set up wrongly: found when the webhook server starts, never at request time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidConversion {
    /// Two [`Conversion`]s for the same kind (register every spoke on one).
    #[error("conversion of {kind} registered twice: give one Conversion all the kind's spokes")]
    DuplicateKind {
        /// `KIND.GROUP`.
        kind: String,
    },
    /// A spoke of another group or kind than its hub.
    #[error("spoke {spoke} is not a version of its hub {hub}: group and kind must be the hub's")]
    ForeignSpoke {
        /// The hub's `GROUP/VERSION, Kind=KIND`.
        hub: String,
        /// The spoke's `GROUP/VERSION, Kind=KIND`.
        spoke: String,
    },
    /// A version registered twice (the same spoke twice, or a spoke with the hub's version).
    #[error("version {version} of {kind} registered twice (a spoke again, or as the hub)")]
    DuplicateVersion {
        /// `KIND.GROUP`.
        kind: String,
        /// The version.
        version: String,
    },
}

/// The versions of one kind: the hub `H` and its spokes. Give it to
/// [`WebhookServer::conversion`](super::WebhookServer::conversion):
/// `Conversion::<v2::Widget>::new().spoke::<v1::Widget>()`.
pub struct Conversion<H: Hub> {
    spokes: Vec<Spoke<H>>,
}

/// One spoke version, its type erased.
struct Spoke<H> {
    gvk: Gvk,
    to_hub: fn(Value) -> Result<H, String>,
    from_hub: fn(&H) -> Result<Value, String>,
}

impl<H: Hub> Default for Conversion<H> {
    fn default() -> Self {
        Conversion::new()
    }
}

impl<H: Hub> std::fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversion")
            .field("hub", &Gvk::of::<H>().to_string())
            .field(
                "spokes",
                &self
                    .spokes
                    .iter()
                    .map(|s| s.gvk.to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<H: Hub> Conversion<H> {
    /// The hub alone; add each other version with [`spoke`](Self::spoke).
    pub fn new() -> Conversion<H> {
        Conversion { spokes: Vec::new() }
    }

    /// Adds the version `S`, converted to and from the hub.
    pub fn spoke<S: Convertible<H>>(mut self) -> Self {
        self.spokes.push(Spoke {
            gvk: Gvk::of::<S>(),
            to_hub: spoke_to_hub::<H, S>,
            from_hub: hub_to_spoke::<H, S>,
        });
        self
    }

    fn spoke_of(&self, version: &str) -> Option<&Spoke<H>> {
        self.spokes.iter().find(|s| s.gvk.version == version)
    }
}

fn spoke_to_hub<H: Hub, S: Convertible<H>>(object: Value) -> Result<H, String> {
    let spoke: S = decode(object, &Gvk::of::<S>())?;
    spoke.to_hub().map_err(|e| e.message)
}

fn hub_to_spoke<H: Hub, S: Convertible<H>>(hub: &H) -> Result<Value, String> {
    let spoke = S::from_hub(hub).map_err(|e| e.message)?;
    encode(&spoke, &Gvk::of::<S>())
}

fn decode<K: DeserializeOwned>(object: Value, gvk: &Gvk) -> Result<K, String> {
    serde_json::from_value(object).map_err(|e| format!("cannot decode {gvk}: {e}"))
}

fn encode<K: Serialize>(object: &K, gvk: &Gvk) -> Result<Value, String> {
    serde_json::to_value(object).map_err(|e| format!("cannot encode {gvk}: {e}"))
}

/// Group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl Gvk {
    fn of<K: Resource<DynamicType = ()>>() -> Gvk {
        Gvk {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
        }
    }

    /// From an `apiVersion` (`GROUP/VERSION`, or `VERSION` for the core group) and a kind.
    fn parse(api_version: &str, kind: &str) -> Gvk {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `KIND.GROUP`, the kind's name across versions.
    fn group_kind(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }
}

/// apimachinery's `GroupVersionKind.String()`: `GROUP/VERSION, Kind=KIND`.
impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// The conversions of one kind, their types erased.
pub(crate) trait KindConversion: Send + Sync {
    /// The hub's group, version and kind.
    fn hub(&self) -> Gvk;
    /// Spokes of another kind, versions registered twice.
    fn check(&self) -> Result<(), InvalidConversion>;
    /// Whether the kind has version `version`.
    fn has_version(&self, version: &str) -> bool;
    /// Converts `object` from version `from` to version `to` (both versions of the kind).
    fn convert(&self, object: Value, from: &str, to: &str) -> Result<Value, String>;
}

impl<H: Hub> KindConversion for Conversion<H> {
    fn hub(&self) -> Gvk {
        Gvk::of::<H>()
    }

    fn check(&self) -> Result<(), InvalidConversion> {
        let hub = self.hub();
        let mut versions = vec![hub.version.as_str()];
        for spoke in &self.spokes {
            if (&spoke.gvk.group, &spoke.gvk.kind) != (&hub.group, &hub.kind) {
                return Err(InvalidConversion::ForeignSpoke {
                    hub: hub.to_string(),
                    spoke: spoke.gvk.to_string(),
                });
            }
            if versions.contains(&spoke.gvk.version.as_str()) {
                return Err(InvalidConversion::DuplicateVersion {
                    kind: hub.group_kind(),
                    version: spoke.gvk.version.clone(),
                });
            }
            versions.push(&spoke.gvk.version);
        }
        Ok(())
    }

    fn has_version(&self, version: &str) -> bool {
        version == H::version(&()) || self.spoke_of(version).is_some()
    }

    fn convert(&self, object: Value, from: &str, to: &str) -> Result<Value, String> {
        let hub_gvk = self.hub();
        let spoke = |version: &str| {
            self.spoke_of(version).ok_or_else(|| {
                not_registered(
                    &hub_gvk.kind,
                    &Gvk {
                        version: version.into(),
                        ..hub_gvk.clone()
                    },
                )
            })
        };
        if from == to {
            return Ok(object);
        }
        let through_hub = from != hub_gvk.version && to != hub_gvk.version;
        let hub: H = if from == hub_gvk.version {
            decode(object, &hub_gvk)?
        } else {
            let source = spoke(from)?;
            (source.to_hub)(object).map_err(|e| {
                if through_hub {
                    format!(
                        "failed to convert spoke {} to hub {hub_gvk}: {e}",
                        source.gvk
                    )
                } else {
                    e
                }
            })?
        };
        if to == hub_gvk.version {
            return encode(&hub, &hub_gvk);
        }
        let target = spoke(to)?;
        (target.from_hub)(&hub).map_err(|e| {
            if through_hub {
                format!(
                    "failed to convert hub {hub_gvk} to spoke {}: {e}",
                    target.gvk
                )
            } else {
                e
            }
        })
    }
}

/// The API server's text for a version it does not know of a kind.
fn not_registered(kind: &str, gvk: &Gvk) -> String {
    format!(
        "no kind {kind:?} is registered for version {:?}",
        gvk.api_version()
    )
}

/// Every kind's conversions, by group and kind: what `/convert` serves.
pub(crate) struct Conversions {
    kinds: HashMap<(String, String), Arc<dyn KindConversion>>,
}

impl std::fmt::Debug for Conversions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversions")
            .field("kinds", &self.kinds.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The part of a ConversionReview v1 request the webhook uses.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    uid: String,
    #[serde(default, rename = "desiredAPIVersion")]
    desired_api_version: String,
    #[serde(default)]
    objects: Vec<Value>,
}

impl Conversions {
    /// Checks every kind's conversion and indexes them; a kind twice is an error.
    pub(crate) fn new(kinds: &[Arc<dyn KindConversion>]) -> Result<Conversions, InvalidConversion> {
        let mut by_kind = HashMap::new();
        for kind in kinds {
            kind.check()?;
            let hub = kind.hub();
            if by_kind
                .insert((hub.group.clone(), hub.kind.clone()), kind.clone())
                .is_some()
            {
                return Err(InvalidConversion::DuplicateKind {
                    kind: hub.group_kind(),
                });
            }
        }
        Ok(Conversions { kinds: by_kind })
    }

    /// Answers a ConversionReview body: `Ok` is the review to send back (a `Failure` result
    /// when an object cannot be converted), `Err` the message of a 400 (not a review).
    pub(crate) fn review(&self, body: &[u8]) -> Result<Value, String> {
        let request: Request = review::decode_request(body, API_VERSION, KIND)?;
        // A panicking conversion fails the review, as controller-runtime recovers it.
        let outcome = catch_unwind(AssertUnwindSafe(|| self.convert_all(&request)))
            .unwrap_or_else(|_| Err("internal error occurred during conversion".to_string()));
        let response = match outcome {
            Ok(objects) => json!({
                "uid": request.uid, "convertedObjects": objects, "result": {"status": "Success"},
            }),
            Err(message) => {
                tracing::warn!(uid = %request.uid, error = %message, "conversion failed");
                json!({"uid": request.uid, "result": {"status": "Failure", "message": message}})
            }
        };
        Ok(json!({"apiVersion": API_VERSION, "kind": KIND, "response": response}))
    }

    /// Every object in `desiredAPIVersion`, in request order; the first failure fails all.
    fn convert_all(&self, request: &Request) -> Result<Vec<Value>, String> {
        if request.desired_api_version.is_empty() {
            return Err("the request has no desiredAPIVersion".into());
        }
        request
            .objects
            .iter()
            .map(|object| self.convert(object, &request.desired_api_version))
            .collect()
    }

    /// `object` in `desired` (an apiVersion), with the input's metadata.
    fn convert(&self, object: &Value, desired: &str) -> Result<Value, String> {
        let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or("");
        // apimachinery's decoder's texts for an object without a kind or apiVersion.
        let missing = |what: &str| format!("Object '{what}' is missing in '{object}'");
        if field("kind").is_empty() {
            return Err(missing("Kind"));
        }
        if field("apiVersion").is_empty() {
            return Err(missing("apiVersion"));
        }
        let source = Gvk::parse(field("apiVersion"), field("kind"));
        let target = Gvk::parse(desired, &source.kind);
        let kind = self
            .kinds
            .get(&(source.group.clone(), source.kind.clone()))
            .filter(|k| k.has_version(&source.version))
            .ok_or_else(|| not_registered(&source.kind, &source))?;
        if target.group != source.group {
            return Err(format!(
                "{source} and {target} do not belong to the same API group"
            ));
        }
        if !kind.has_version(&target.version) {
            return Err(not_registered(&target.kind, &target));
        }
        let mut converted = kind.convert(object.clone(), &source.version, &target.version)?;
        let Some(out) = converted.as_object_mut() else {
            return Err(format!("the conversion to {target} gave no object"));
        };
        out.insert("apiVersion".into(), json!(target.api_version()));
        out.insert("kind".into(), json!(target.kind));
        match object.get("metadata") {
            Some(metadata) => out.insert("metadata".into(), metadata.clone()),
            None => out.remove("metadata"),
        };
        Ok(converted)
    }
}

/// The answer to a body that is not a review to answer (a 400), with the reason.
pub(crate) fn refused(message: String) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "response": {"uid": "", "result": {"status": "Failure", "message": message}},
    })
}

/// Checks that converting `spoke` to the hub and back, as the webhook does, gives back the
/// same object (as JSON): for unit tests of a spoke's conversions. The error lists what
/// changed.
pub fn check_round_trip<H: Hub, S: Convertible<H>>(spoke: &S) -> Result<(), String> {
    round_trip::<H, S>(spoke, &Gvk::of::<S>(), &Gvk::of::<H>())
}

/// Checks that converting `hub` to the spoke `S` and back, as the webhook does, gives back
/// the same object (as JSON): a hub field the spoke cannot hold is lost this way, unless the
/// spoke keeps it somewhere (e.g. an annotation).
pub fn check_hub_round_trip<H: Hub, S: Convertible<H>>(hub: &H) -> Result<(), String> {
    round_trip::<H, S>(hub, &Gvk::of::<H>(), &Gvk::of::<S>())
}

fn round_trip<H: Hub, S: Convertible<H>>(
    object: &impl Serialize,
    from: &Gvk,
    through: &Gvk,
) -> Result<(), String> {
    let conversion: Arc<dyn KindConversion> = Arc::new(Conversion::<H>::new().spoke::<S>());
    let conversions = Conversions::new(&[conversion]).map_err(|e| e.to_string())?;
    let mut original = encode(object, from)?;
    if let Some(o) = original.as_object_mut() {
        o.insert("apiVersion".into(), json!(from.api_version()));
        o.insert("kind".into(), json!(from.kind));
    }
    let there = conversions.convert(&original, &through.api_version())?;
    let back = conversions.convert(&there, &from.api_version())?;
    let changes = differences(&original, &back);
    if changes.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{from} -> {through} -> {from} does not give back the object: {}",
            changes.join("; ")
        ))
    }
}

/// What differs from `before` to `after`, one entry per JSON pointer.
fn differences(before: &Value, after: &Value) -> Vec<String> {
    use json_patch::PatchOperation;
    let at = |path: &str| before.pointer(path).cloned().unwrap_or(Value::Null);
    json_patch::diff(before, after)
        .0
        .into_iter()
        .map(|op| match op {
            PatchOperation::Add(a) => format!("{} added as {}", a.path, a.value),
            PatchOperation::Remove(r) => format!("{} ({}) lost", r.path, at(r.path.as_str())),
            PatchOperation::Replace(r) => {
                format!(
                    "{} was {}, came back {}",
                    r.path,
                    at(r.path.as_str()),
                    r.value
                )
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    /// v1: a size as a number.
    mod v1 {
        use super::*;
        use kube::CustomResource;

        #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
        #[kube(group = "test.opkit.dev", version = "v1", kind = "Widget", namespaced)]
        pub struct WidgetSpec {
            pub size: i32,
        }
    }

    /// v2, the hub: replicas and a colour v1 cannot hold.
    mod v2 {
        use super::*;
        use kube::CustomResource;

        #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
        #[kube(group = "test.opkit.dev", version = "v2", kind = "Widget", namespaced)]
        pub struct WidgetSpec {
            pub replicas: i32,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub color: Option<String>,
        }
    }

    /// v3: the size as text.
    mod v3 {
        use super::*;
        use kube::CustomResource;

        #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
        #[kube(group = "test.opkit.dev", version = "v3", kind = "Widget", namespaced)]
        pub struct WidgetSpec {
            pub count: String,
        }
    }

    /// Another kind of the same group, one version only besides its hub.
    mod gizmo {
        use super::*;
        use kube::CustomResource;

        #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
        #[kube(group = "test.opkit.dev", version = "v1", kind = "Gizmo", namespaced)]
        pub struct GizmoSpec {
            pub on: bool,
        }
    }

    /// Gizmo's hub.
    mod gizmo2 {
        use super::*;
        use kube::CustomResource;

        #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
        #[kube(group = "test.opkit.dev", version = "v2", kind = "Gizmo", namespaced)]
        pub struct GizmoSpec {
            pub state: String,
        }
    }

    impl Hub for v2::Widget {}
    impl Hub for gizmo2::Gizmo {}

    /// Builds the hub leaving metadata empty: the webhook copies it.
    impl Convertible<v2::Widget> for v1::Widget {
        fn to_hub(&self) -> Result<v2::Widget, ConversionError> {
            if self.spec.size < 0 {
                return Err(ConversionError::new("spec.size must not be negative"));
            }
            Ok(v2::Widget::new(
                "",
                v2::WidgetSpec {
                    replicas: self.spec.size,
                    color: None,
                },
            ))
        }
        fn from_hub(hub: &v2::Widget) -> Result<Self, ConversionError> {
            Ok(v1::Widget::new(
                "renamed-by-a-careless-conversion",
                v1::WidgetSpec {
                    size: hub.spec.replicas,
                },
            ))
        }
    }

    impl Convertible<v2::Widget> for v3::Widget {
        fn to_hub(&self) -> Result<v2::Widget, ConversionError> {
            let replicas = self.spec.count.parse().map_err(|_| {
                ConversionError::new(format!("count {:?} is not a number", self.spec.count))
            })?;
            Ok(v2::Widget::new(
                "",
                v2::WidgetSpec {
                    replicas,
                    color: None,
                },
            ))
        }
        fn from_hub(hub: &v2::Widget) -> Result<Self, ConversionError> {
            if hub.spec.replicas > 1000 {
                panic!("a conversion bug");
            }
            Ok(v3::Widget::new(
                "",
                v3::WidgetSpec {
                    count: hub.spec.replicas.to_string(),
                },
            ))
        }
    }

    impl Convertible<gizmo2::Gizmo> for gizmo::Gizmo {
        fn to_hub(&self) -> Result<gizmo2::Gizmo, ConversionError> {
            let state = if self.spec.on { "On" } else { "Off" };
            Ok(gizmo2::Gizmo::new(
                "",
                gizmo2::GizmoSpec {
                    state: state.into(),
                },
            ))
        }
        fn from_hub(hub: &gizmo2::Gizmo) -> Result<Self, ConversionError> {
            Ok(gizmo::Gizmo::new(
                "",
                gizmo::GizmoSpec {
                    on: hub.spec.state == "On",
                },
            ))
        }
    }

    /// A Gizmo posing as a spoke of Widget: a programming error.
    impl Convertible<v2::Widget> for gizmo::Gizmo {
        fn to_hub(&self) -> Result<v2::Widget, ConversionError> {
            Err(ConversionError::new("never called"))
        }
        fn from_hub(_: &v2::Widget) -> Result<Self, ConversionError> {
            Err(ConversionError::new("never called"))
        }
    }

    fn widgets() -> Conversion<v2::Widget> {
        Conversion::<v2::Widget>::new()
            .spoke::<v1::Widget>()
            .spoke::<v3::Widget>()
    }

    fn conversions() -> Conversions {
        let kinds: Vec<Arc<dyn KindConversion>> = vec![
            Arc::new(widgets()),
            Arc::new(Conversion::<gizmo2::Gizmo>::new().spoke::<gizmo::Gizmo>()),
        ];
        Conversions::new(&kinds).unwrap()
    }

    fn metadata(name: &str) -> Value {
        json!({"name": name, "namespace": "default", "uid": format!("uid-{name}"),
               "resourceVersion": "7", "labels": {"app": name}})
    }

    fn object(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": metadata(name), "spec": spec})
    }

    fn review(desired: &str, objects: Vec<Value>) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "review-1", "desiredAPIVersion": desired, "objects": objects},
        }))
        .unwrap()
    }

    /// The response of a review that must be answered.
    fn answer(desired: &str, objects: Vec<Value>) -> Value {
        let answer = conversions().review(&review(desired, objects)).unwrap();
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(answer["response"]["uid"], "review-1");
        answer["response"].clone()
    }

    fn failure(desired: &str, objects: Vec<Value>) -> String {
        let response = answer(desired, objects);
        assert_eq!(response["result"]["status"], "Failure", "{response}");
        assert!(response.get("convertedObjects").is_none());
        response["result"]["message"].as_str().unwrap().to_string()
    }

    const V1: &str = "test.opkit.dev/v1";
    const V2: &str = "test.opkit.dev/v2";
    const V3: &str = "test.opkit.dev/v3";

    #[test]
    fn spokes_convert_to_the_hub_and_back_and_to_each_other_through_it() {
        let response = answer(
            V2,
            vec![
                object(V1, "Widget", "a", json!({"size": 3})),
                object(V3, "Widget", "b", json!({"count": "4"})),
                object(V2, "Widget", "c", json!({"replicas": 5, "color": "red"})),
            ],
        );
        assert_eq!(response["result"], json!({"status": "Success"}));
        assert_eq!(
            response["convertedObjects"],
            json!([
                object(V2, "Widget", "a", json!({"replicas": 3})),
                object(V2, "Widget", "b", json!({"replicas": 4})),
                object(V2, "Widget", "c", json!({"replicas": 5, "color": "red"})),
            ]),
            "in request order; the one already in v2 passes through untouched"
        );
        let response = answer(V1, vec![object(V2, "Widget", "a", json!({"replicas": 6}))]);
        assert_eq!(
            response["convertedObjects"],
            json!([object(V1, "Widget", "a", json!({"size": 6}))])
        );
        let response = answer(V3, vec![object(V1, "Widget", "a", json!({"size": 7}))]);
        assert_eq!(
            response["convertedObjects"],
            json!([object(V3, "Widget", "a", json!({"count": "7"}))]),
            "v1 -> v2 -> v3"
        );
    }

    #[test]
    fn metadata_comes_back_as_it_was_sent() {
        // v1's from_hub renames the object and both drop labels, uid, resourceVersion.
        let mut sent = object(V2, "Widget", "keep", json!({"replicas": 1}));
        sent["metadata"]["annotations"] = json!({"note": "x"});
        sent["metadata"]["finalizers"] = json!(["test.opkit.dev/f"]);
        let response = answer(V1, vec![sent.clone()]);
        assert_eq!(
            response["convertedObjects"][0]["metadata"],
            sent["metadata"]
        );
    }

    #[test]
    fn several_kinds_share_one_review_dispatched_by_group_and_kind() {
        let response = answer(
            V2,
            vec![
                object(V1, "Gizmo", "g", json!({"on": true})),
                object(V1, "Widget", "w", json!({"size": 2})),
            ],
        );
        assert_eq!(
            response["convertedObjects"],
            json!([
                object(V2, "Gizmo", "g", json!({"state": "On"})),
                object(V2, "Widget", "w", json!({"replicas": 2})),
            ])
        );
    }

    #[test]
    fn a_conversion_error_fails_the_review_with_its_message() {
        let message = failure(
            V2,
            vec![
                object(V1, "Widget", "ok", json!({"size": 1})),
                object(V1, "Widget", "bad", json!({"size": -1})),
            ],
        );
        assert_eq!(message, "spec.size must not be negative");
        let message = failure(
            V1,
            vec![object(V3, "Widget", "bad", json!({"count": "many"}))],
        );
        assert_eq!(
            message,
            "failed to convert spoke test.opkit.dev/v3, Kind=Widget to hub \
             test.opkit.dev/v2, Kind=Widget: count \"many\" is not a number"
        );
    }

    #[test]
    fn unknown_kinds_versions_and_groups_fail_with_the_decoders_text() {
        assert_eq!(
            failure(V2, vec![object(V1, "Thing", "t", json!({}))]),
            "no kind \"Thing\" is registered for version \"test.opkit.dev/v1\""
        );
        assert_eq!(
            failure(
                V2,
                vec![object("test.opkit.dev/v9", "Widget", "w", json!({}))]
            ),
            "no kind \"Widget\" is registered for version \"test.opkit.dev/v9\""
        );
        assert_eq!(
            failure(
                "test.opkit.dev/v4",
                vec![object(V1, "Widget", "w", json!({"size": 1}))]
            ),
            "no kind \"Widget\" is registered for version \"test.opkit.dev/v4\""
        );
        assert_eq!(
            failure(
                "other.dev/v2",
                vec![object(V1, "Widget", "w", json!({"size": 1}))]
            ),
            "test.opkit.dev/v1, Kind=Widget and other.dev/v2, Kind=Widget do not belong to \
             the same API group"
        );
        assert_eq!(
            failure(V2, vec![json!({"apiVersion": V1, "spec": {}})]),
            format!(
                "Object 'Kind' is missing in '{}'",
                json!({"apiVersion": V1, "spec": {}})
            )
        );
        assert!(
            failure(V2, vec![json!({"kind": "Widget"})])
                .starts_with("Object 'apiVersion' is missing in")
        );
        assert_eq!(failure("", vec![]), "the request has no desiredAPIVersion");
    }

    #[test]
    fn an_object_that_does_not_decode_as_its_version_fails_the_review() {
        let message = failure(V2, vec![object(V1, "Widget", "w", json!({"size": "big"}))]);
        assert!(
            message.starts_with("cannot decode test.opkit.dev/v1, Kind=Widget: "),
            "{message}"
        );
    }

    #[test]
    fn a_panicking_conversion_fails_the_review_instead_of_the_connection() {
        let message = failure(
            V3,
            vec![object(V2, "Widget", "w", json!({"replicas": 5000}))],
        );
        assert_eq!(message, "internal error occurred during conversion");
    }

    #[test]
    fn an_empty_review_succeeds_with_no_objects() {
        let response = answer(V2, vec![]);
        assert_eq!(response["convertedObjects"], json!([]));
        assert_eq!(response["result"]["status"], "Success");
    }

    #[test]
    fn bodies_that_are_not_conversion_reviews_are_refused_with_a_reason() {
        let c = conversions();
        assert!(
            c.review(b"nope")
                .unwrap_err()
                .starts_with("the body is not a JSON ConversionReview")
        );
        assert_eq!(
            c.review(br#"{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview"}"#)
                .unwrap_err(),
            "expected apiVersion apiextensions.k8s.io/v1 and kind ConversionReview, got \
             apiextensions.k8s.io/v1beta1 ConversionReview"
        );
        assert_eq!(
            c.review(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#)
                .unwrap_err(),
            "the ConversionReview has no request"
        );
        assert_eq!(
            c.review(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"objects":[]}}"#)
                .unwrap_err(),
            "the ConversionReview's request has no uid"
        );
        let refused = refused("why".into());
        assert_eq!(
            refused["response"]["result"],
            json!({"status": "Failure", "message": "why"})
        );
    }

    #[test]
    fn a_kind_registered_twice_or_a_foreign_spoke_is_refused_at_setup() {
        let twice: Vec<Arc<dyn KindConversion>> = vec![Arc::new(widgets()), Arc::new(widgets())];
        assert_eq!(
            Conversions::new(&twice).unwrap_err(),
            InvalidConversion::DuplicateKind {
                kind: "Widget.test.opkit.dev".into()
            }
        );
        let foreign: Vec<Arc<dyn KindConversion>> =
            vec![Arc::new(widgets().spoke::<gizmo::Gizmo>())];
        let err = Conversions::new(&foreign).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spoke test.opkit.dev/v1, Kind=Gizmo is not a version of its hub \
             test.opkit.dev/v2, Kind=Widget: group and kind must be the hub's"
        );
        let again: Vec<Arc<dyn KindConversion>> = vec![Arc::new(widgets().spoke::<v1::Widget>())];
        assert_eq!(
            Conversions::new(&again).unwrap_err(),
            InvalidConversion::DuplicateVersion {
                kind: "Widget.test.opkit.dev".into(),
                version: "v1".into()
            }
        );
    }

    #[test]
    fn round_trip_checks_report_what_a_version_loses() {
        let v1 = v1::Widget::new("w", v1::WidgetSpec { size: 3 });
        check_round_trip::<v2::Widget, v1::Widget>(&v1).unwrap();
        let plain = v2::Widget::new(
            "w",
            v2::WidgetSpec {
                replicas: 3,
                color: None,
            },
        );
        check_hub_round_trip::<v2::Widget, v1::Widget>(&plain).unwrap();
        let red = v2::Widget::new(
            "w",
            v2::WidgetSpec {
                replicas: 3,
                color: Some("red".into()),
            },
        );
        assert_eq!(
            check_hub_round_trip::<v2::Widget, v1::Widget>(&red).unwrap_err(),
            "test.opkit.dev/v2, Kind=Widget -> test.opkit.dev/v1, Kind=Widget -> \
             test.opkit.dev/v2, Kind=Widget does not give back the object: /spec/color (\"red\") lost"
        );
        let negative = v1::Widget::new("w", v1::WidgetSpec { size: -1 });
        assert_eq!(
            check_round_trip::<v2::Widget, v1::Widget>(&negative).unwrap_err(),
            "spec.size must not be negative"
        );
    }
}
