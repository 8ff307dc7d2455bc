//! The static schema table: one [`Message`] per protobuf message of the supported API groups,
//! and one [`KindEntry`] per top-level kind.
//!
//! The table itself (`generated.rs`) is produced by `examples/gen_schema.rs` from k8s-pb's
//! prost code (wire layout) and the Kubernetes Go types (JSON names, inlining, omitempty); see
//! that file for how to regenerate it. Everything here is `static`: no per-call table building.

#[rustfmt::skip]
mod generated;

/// Scalar or message type of a field (for a map field: of its values; keys are always strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// `string`, UTF-8, length-delimited.
    String,
    /// `bool`, varint.
    Bool,
    /// `int32`, varint (negative values sign-extended to 10 bytes).
    Int32,
    /// `int64`, varint.
    Int64,
    /// `double`, fixed64.
    Double,
    /// `bytes`, length-delimited; base64 in JSON.
    Bytes,
    /// A message: index into [`MESSAGES`].
    Message(u16),
}

/// Cardinality of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    /// proto2 `optional`: emitted when present.
    Optional,
    /// `repeated`: a JSON array, omitted when empty.
    Repeated,
    /// `map<string, ty>`: a JSON object, omitted when empty.
    Map,
}

/// Messages whose JSON form is not a plain JSON object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// A plain message ↔ JSON object.
    None,
    /// `meta.v1.Time` {seconds=1, nanos=2} ↔ RFC 3339 with second precision; zero ↔ `null`.
    Time,
    /// `meta.v1.MicroTime` ↔ RFC 3339 with 6 fractional digits.
    MicroTime,
    /// `meta.v1.Duration` {duration=1 ns} ↔ Go duration string.
    Duration,
    /// `intstr.IntOrString` {type=1, intVal=2, strVal=3} ↔ JSON number or string.
    IntOrString,
    /// `resource.Quantity` {string=1} ↔ JSON string.
    Quantity,
    /// `RawExtension`, `FieldsV1`, apiextensions `JSON`: {raw=1 bytes holding JSON} ↔ that JSON.
    RawJson,
    /// A Go named slice (`Verbs`, `ExtraValue`): {items=1 repeated} ↔ JSON array.
    ItemsList,
    /// `JSONSchemaPropsOrArray` {schema=1, jSONSchemas=2} ↔ schema object or array of schemas.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool` {allows=1, schema=2} ↔ bool or schema object.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray` {schema=1, property=2} ↔ schema object or string array.
    SchemaOrStringArray,
}

/// The field's message is a Go embedded struct (`json:",inline"`): its fields live in the
/// parent's JSON object.
pub(crate) const INLINE: u8 = 1;
/// kube-apiserver's JSON omits this field's zero value (Go non-pointer with `omitempty`, or
/// `omitzero`), so a zero value read from protobuf is not emitted.
pub(crate) const OMIT_ZERO: u8 = 2;

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    /// Protobuf field number.
    pub tag: u32,
    /// JSON name (empty for inline fields).
    pub json: &'static str,
    /// Type (of the values, for maps).
    pub ty: Ty,
    /// Cardinality.
    pub label: Label,
    /// [`INLINE`] | [`OMIT_ZERO`].
    pub flags: u8,
}

impl Field {
    /// True for a Go embedded struct whose fields are flattened into the parent.
    pub(crate) fn inline(&self) -> bool {
        self.flags & INLINE != 0
    }

    /// True if a zero value is left out of JSON output.
    pub(crate) fn omit_zero(&self) -> bool {
        self.flags & OMIT_ZERO != 0
    }
}

/// One protobuf message.
#[derive(Debug)]
pub(crate) struct Message {
    /// Full proto name, e.g. `k8s.io.api.core.v1.ConfigMap`.
    pub name: &'static str,
    /// Non-object JSON form, if any.
    pub special: Special,
    /// The Go type embeds `TypeMeta`: `apiVersion`/`kind` keys are accepted (and dropped).
    pub type_meta: bool,
    /// Fields sorted by tag.
    pub fields: &'static [Field],
}

impl Message {
    /// The field with protobuf number `tag`.
    pub(crate) fn field_by_tag(&self, tag: u32) -> Option<&'static Field> {
        // Tags are usually dense (1..=n): try the direct slot first.
        let fields = self.fields;
        if let Some(f) = fields.get((tag as usize).wrapping_sub(1))
            && f.tag == tag
        {
            return Some(f);
        }
        fields
            .binary_search_by_key(&tag, |f| f.tag)
            .ok()
            .and_then(|i| fields.get(i))
    }

    /// The (non-inline) field whose JSON name is `name`.
    pub(crate) fn field_by_json(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.json == name && !f.inline())
    }
}

/// A top-level kind.
#[derive(Debug)]
pub(crate) struct KindEntry {
    /// `v1`, `apps/v1`, `meta.k8s.io/v1`…
    pub api_version: &'static str,
    /// `ConfigMap`, `DeploymentList`…
    pub kind: &'static str,
    /// Index into [`MESSAGES`].
    pub message: u16,
}

pub(crate) use generated::{KINDS, MESSAGES};

/// Table constructor for a field (keeps `generated.rs` short).
pub(crate) const fn f(tag: u32, json: &'static str, ty: Ty, label: Label, flags: u8) -> Field {
    Field {
        tag,
        json,
        ty,
        label,
        flags,
    }
}

/// Table constructor for a message.
pub(crate) const fn m(
    name: &'static str,
    special: Special,
    type_meta: bool,
    fields: &'static [Field],
) -> Message {
    Message {
        name,
        special,
        type_meta,
        fields,
    }
}

/// Table constructor for a kind.
pub(crate) const fn k(api_version: &'static str, kind: &'static str, message: u16) -> KindEntry {
    KindEntry {
        api_version,
        kind,
        message,
    }
}

/// The message at `index` (indices in the table are valid by construction; the check keeps
/// the codec panic-free even so).
pub(crate) fn message(index: u16) -> Option<&'static Message> {
    MESSAGES.get(index as usize)
}

/// Meta kinds that every API group version registers (`metav1.AddToGroupVersion`), so they
/// are accepted with any known `apiVersion`.
const UNIVERSAL_META_KINDS: &[&str] = &[
    "CreateOptions",
    "DeleteOptions",
    "GetOptions",
    "ListOptions",
    "PatchOptions",
    "Status",
    "UpdateOptions",
    "WatchEvent",
];

/// The message of the top-level kind (`api_version`, `kind`).
pub(crate) fn lookup_kind(api_version: &str, kind: &str) -> Option<&'static Message> {
    let find = |av: &str, kind: &str| {
        KINDS
            .binary_search_by(|e| (e.api_version, e.kind).cmp(&(av, kind)))
            .ok()
            .and_then(|i| KINDS.get(i))
            .and_then(|e| message(e.message))
    };
    if let Some(m) = find(api_version, kind) {
        return Some(m);
    }
    // Meta kinds: served as "v1" (Status, APIVersions…) as well as "meta.k8s.io/v1".
    if api_version == "v1"
        && let Some(m) = find("meta.k8s.io/v1", kind)
    {
        return Some(m);
    }
    if UNIVERSAL_META_KINDS.contains(&kind) && known_api_version(api_version) {
        return find("meta.k8s.io/v1", kind);
    }
    None
}

/// True if some kind of the table has this `apiVersion`.
fn known_api_version(api_version: &str) -> bool {
    let i = KINDS.partition_point(|e| e.api_version < api_version);
    KINDS.get(i).is_some_and(|e| e.api_version == api_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_sorted_and_unique() {
        for w in KINDS.windows(2) {
            assert!(
                (w[0].api_version, w[0].kind) < (w[1].api_version, w[1].kind),
                "{}/{} then {}/{}",
                w[0].api_version,
                w[0].kind,
                w[1].api_version,
                w[1].kind
            );
        }
    }

    #[test]
    fn message_references_and_tags_are_valid() {
        for m in MESSAGES.iter() {
            for w in m.fields.windows(2) {
                assert!(w[0].tag < w[1].tag, "{} tags not sorted", m.name);
            }
            for f in m.fields {
                if let Ty::Message(i) = f.ty {
                    assert!(message(i).is_some(), "{}.{} dangling", m.name, f.json);
                }
                assert!(m.field_by_tag(f.tag).is_some());
                if f.inline() {
                    assert!(matches!(f.ty, Ty::Message(_)), "{} inline scalar", m.name);
                }
            }
        }
    }

    fn by_name(name: &str) -> &'static Message {
        MESSAGES
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    }

    #[test]
    fn special_messages_have_the_expected_layout() {
        let shape = |name: &str| -> Vec<(u32, Ty, Label)> {
            by_name(name)
                .fields
                .iter()
                .map(|f| (f.tag, f.ty, f.label))
                .collect()
        };
        use Label::*;
        let meta = "k8s.io.apimachinery.pkg.apis.meta.v1.";
        for t in ["Time", "MicroTime"] {
            let name = format!("{meta}{t}");
            let expected = if t == "Time" {
                Special::Time
            } else {
                Special::MicroTime
            };
            assert_eq!(by_name(&name).special, expected);
            assert_eq!(
                shape(&name),
                vec![(1, Ty::Int64, Optional), (2, Ty::Int32, Optional)]
            );
        }
        assert_eq!(
            shape(&format!("{meta}Duration")),
            vec![(1, Ty::Int64, Optional)]
        );
        assert_eq!(
            shape("k8s.io.apimachinery.pkg.util.intstr.IntOrString"),
            vec![
                (1, Ty::Int64, Optional),
                (2, Ty::Int32, Optional),
                (3, Ty::String, Optional)
            ]
        );
        assert_eq!(
            shape("k8s.io.apimachinery.pkg.api.resource.Quantity"),
            vec![(1, Ty::String, Optional)]
        );
        for raw in [
            "k8s.io.apimachinery.pkg.runtime.RawExtension",
            "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
            "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
        ] {
            assert_eq!(by_name(raw).special, Special::RawJson);
            assert_eq!(shape(raw), vec![(1, Ty::Bytes, Optional)]);
        }
        let verbs = by_name(&format!("{meta}Verbs"));
        assert_eq!(verbs.special, Special::ItemsList);
        let ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
        let schema = by_name(&format!("{ext}JSONSchemaProps")) as *const Message;
        let is_schema = |ty: Ty| match ty {
            Ty::Message(i) => message(i).is_some_and(|m| std::ptr::eq(m, schema)),
            _ => false,
        };
        let or_array = by_name(&format!("{ext}JSONSchemaPropsOrArray"));
        assert_eq!(or_array.special, Special::SchemaOrArray);
        assert!(is_schema(or_array.fields[0].ty) && or_array.fields[0].tag == 1);
        assert!(is_schema(or_array.fields[1].ty) && or_array.fields[1].label == Repeated);
        let or_bool = by_name(&format!("{ext}JSONSchemaPropsOrBool"));
        assert_eq!(or_bool.special, Special::SchemaOrBool);
        assert_eq!((or_bool.fields[0].tag, or_bool.fields[0].ty), (1, Ty::Bool));
        assert!(is_schema(or_bool.fields[1].ty) && or_bool.fields[1].tag == 2);
        let or_strings = by_name(&format!("{ext}JSONSchemaPropsOrStringArray"));
        assert_eq!(or_strings.special, Special::SchemaOrStringArray);
        assert!(is_schema(or_strings.fields[0].ty) && or_strings.fields[0].tag == 1);
        assert_eq!(
            (
                or_strings.fields[1].tag,
                or_strings.fields[1].ty,
                or_strings.fields[1].label
            ),
            (2, Ty::String, Repeated)
        );
    }

    #[test]
    fn json_names_come_from_go_tags() {
        let pod_status = by_name("k8s.io.api.core.v1.PodStatus");
        assert!(pod_status.field_by_json("hostIP").is_some());
        assert!(pod_status.field_by_json("podIPs").is_some());
        let probe = by_name("k8s.io.api.core.v1.Probe");
        assert!(probe.fields[0].inline());
        let meta = by_name("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert!(meta.field_by_json("generateName").is_some());
        // Non-pointer `omitempty` strings are omitted when empty; pointers are not.
        assert!(
            meta.field_by_json("namespace")
                .is_some_and(Field::omit_zero)
        );
        let spec = by_name("k8s.io.api.apps.v1.DeploymentSpec");
        assert!(
            spec.field_by_json("replicas")
                .is_some_and(|f| !f.omit_zero())
        );
        let schema =
            by_name("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps");
        assert!(schema.field_by_json("$ref").is_some());
        assert!(
            schema
                .field_by_json("x-kubernetes-preserve-unknown-fields")
                .is_some()
        );
    }

    #[test]
    fn kinds_resolve() {
        assert!(lookup_kind("v1", "ConfigMap").is_some());
        assert!(lookup_kind("apps/v1", "DeploymentList").is_some());
        assert!(lookup_kind("v1", "Status").is_some());
        assert!(lookup_kind("meta.k8s.io/v1", "Status").is_some());
        assert!(lookup_kind("apps/v1", "DeleteOptions").is_some());
        assert!(lookup_kind("authentication.k8s.io/v1", "TokenRequest").is_some());
        assert!(lookup_kind("authorization.k8s.io/v1", "SelfSubjectAccessReview").is_some());
        assert!(lookup_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition").is_some());
        assert!(lookup_kind("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList").is_some());
        assert!(lookup_kind("autoscaling/v1", "Scale").is_some());
        assert!(lookup_kind("example.com/v1", "Foo").is_none());
        assert!(lookup_kind("example.com/v1", "DeleteOptions").is_none());
        assert!(lookup_kind("v1", "Nope").is_none());
    }
}
