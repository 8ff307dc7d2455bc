//! Helm v4's release record (`helm.sh/helm/v4/pkg/release/v1`), field for field as Helm
//! writes it to JSON, so that the real `helm` reads what the operator stores and the
//! operator reads what `helm install` stored.
//!
//! Go's JSON rules are kept where they show: `omitempty` fields are left out when empty,
//! `[]byte` is base64, times are RFC 3339 with nanoseconds (kept as written, so a record
//! read and written again is unchanged), an empty-string time reads as no time, and the
//! chart carries no subcharts (Helm's `Chart.dependencies` is not serialized).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use opkit_chart::{Chart, File, Lock, Metadata};
use opkit_template::Value;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The state of one revision (Helm's `common.Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Unknown state.
    Unknown,
    /// The revision that is live.
    Deployed,
    /// Uninstalled, history kept.
    Uninstalled,
    /// A revision a newer one replaced.
    Superseded,
    /// The operation of this revision failed.
    Failed,
    /// An uninstall is under way.
    Uninstalling,
    /// An install is under way.
    PendingInstall,
    /// An upgrade is under way.
    PendingUpgrade,
    /// A rollback is under way.
    PendingRollback,
}

impl Status {
    /// The text Helm writes (`deployed`, `pending-install`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    /// Whether an operation on this revision is under way (Helm's `IsPending`).
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Go `time.Time` as Helm writes it (RFC 3339 with nanoseconds), kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Time(String);

impl Time {
    /// The current time, in UTC, as Go's `RFC3339Nano` prints it.
    pub fn now() -> Time {
        Time(jiff::Timestamp::now().to_string())
    }

    /// The time as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Seconds since the Unix epoch (for `createdAt`-style labels); `None` if unparsable.
    pub fn unix_seconds(&self) -> Option<i64> {
        self.0
            .parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_second())
    }
}

/// Reads an optional time the way Helm's custom `UnmarshalJSON` does: `""` is no time.
fn optional_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Time>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    Ok(s.filter(|s| !s.is_empty()).map(Time))
}

/// One revision of a release (Helm's `release.Release`).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Release {
    /// The release name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What happened to this revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    /// The chart it was rendered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<ReleaseChart>,
    /// The user's values (what the chart's defaults were coalesced under).
    #[serde(default, skip_serializing_if = "json_map_is_empty")]
    pub config: serde_json::Map<String, serde_json::Value>,
    /// The rendered manifests, each `---\n# Source: NAME\nDOC\n`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// The hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    /// The revision (1, 2, …).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: u32,
    /// The namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `ssa` (server-side apply) or `csa`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub apply_method: String,
}

fn json_map_is_empty(m: &serde_json::Map<String, serde_json::Value>) -> bool {
    m.is_empty()
}

fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Release {
    /// The revision's status (`unknown` without info).
    pub fn status(&self) -> Status {
        self.info.as_ref().map_or(Status::Unknown, |i| i.status)
    }

    /// Sets the status and description (Helm's `SetStatus`).
    pub fn set_status(&mut self, status: Status, description: impl Into<String>) {
        let info = self.info.get_or_insert_with(Info::default);
        info.status = status;
        info.description = description.into();
    }

    /// The objects of the manifest, as the chart wrote them (`namespace` is `None` when the
    /// chart leaves it to the release; a reconciler watches these to notice drift).
    pub fn resources(&self) -> Result<Vec<ResourceRef>, crate::ActionError> {
        Ok(crate::objects::parse_manifest(&self.manifest)?
            .into_iter()
            .map(|o| ResourceRef {
                api_version: o.api_version,
                kind: o.kind,
                namespace: o.namespace,
                name: o.name,
            })
            .collect())
    }

    /// The user's values as template values.
    pub fn config_value(&self) -> Value {
        Value::from_json(&serde_json::Value::Object(self.config.clone()))
    }
}

/// One object of a release's manifest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResourceRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, when the manifest sets one.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

/// What happened to a revision (Helm's `release.Info`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Info {
    /// When the release was first deployed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_time"
    )]
    pub first_deployed: Option<Time>,
    /// When this revision was deployed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_time"
    )]
    pub last_deployed: Option<Time>,
    /// When the release was deleted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_time"
    )]
    pub deleted: Option<Time>,
    /// A human-readable description (`Install complete`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The status.
    #[serde(default = "unknown")]
    pub status: Status,
    /// The revision a rollback went back to (0: not a rollback).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rollback_revision: u32,
    /// The rendered NOTES.txt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// Helm's `resources` (kept as read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<serde_json::Value>,
}

fn unknown() -> Status {
    Status::Unknown
}

impl Default for Info {
    fn default() -> Self {
        Info {
            first_deployed: None,
            last_deployed: None,
            deleted: None,
            description: String::new(),
            status: Status::Unknown,
            rollback_revision: 0,
            notes: String::new(),
            resources: None,
        }
    }
}

/// A hook of a release (Helm's `release.Hook`).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Hook {
    /// `metadata.name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `kind`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The template it came from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The document.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// The events it runs on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The last execution.
    #[serde(default)]
    pub last_run: HookExecution,
    /// The order among hooks of an event.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    /// `before-hook-creation`, `hook-succeeded`, `hook-failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
    /// When to print the hook's logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_log_policies: Vec<String>,
}

impl From<&opkit_chart::Hook> for Hook {
    fn from(h: &opkit_chart::Hook) -> Hook {
        Hook {
            name: h.name.clone(),
            kind: h.kind.clone(),
            path: h.path.clone(),
            manifest: h.manifest.clone(),
            events: h.events.clone(),
            last_run: HookExecution::default(),
            weight: h.weight,
            delete_policies: h.delete_policies.clone(),
            output_log_policies: h.output_log_policies.clone(),
        }
    }
}

/// One run of a hook (Helm's `release.HookExecution`).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct HookExecution {
    /// When it started.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_time"
    )]
    pub started_at: Option<Time>,
    /// When it completed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_time"
    )]
    pub completed_at: Option<Time>,
    /// `Unknown`, `Running`, `Succeeded`, `Failed`, or empty when it never ran.
    #[serde(default)]
    pub phase: String,
}

/// A chart as a release stores it (Helm's `chart.Chart` in JSON): no subcharts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseChart {
    /// `Chart.yaml`.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// `Chart.lock`, kept as JSON (`generated` is a Go time).
    #[serde(default)]
    pub lock: Option<serde_json::Value>,
    /// The templates.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        serialize_with = "empty_as_null"
    )]
    pub templates: Vec<ChartFile>,
    /// The chart's default values.
    #[serde(default)]
    pub values: Option<serde_json::Map<String, serde_json::Value>>,
    /// `values.schema.json`.
    #[serde(default)]
    pub schema: Option<Bytes>,
    /// When the schema was modified (Go writes the zero time when unset).
    #[serde(default = "zero_time")]
    pub schemamodtime: String,
    /// Every other file.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        serialize_with = "empty_as_null"
    )]
    pub files: Vec<ChartFile>,
    /// When the chart was modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modtime: Option<String>,
}

/// Go's zero `time.Time` in JSON.
const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

fn zero_time() -> String {
    GO_ZERO_TIME.into()
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Go writes a nil slice (what Helm's loader leaves when there are no files) as `null`.
fn empty_as_null<S: Serializer, T: Serialize>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    if v.is_empty() {
        s.serialize_none()
    } else {
        v.serialize(s)
    }
}

/// A file of a stored chart (Helm's `common.File`): data is base64 in JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChartFile {
    /// The path in the chart.
    pub name: String,
    /// The contents.
    #[serde(default)]
    pub data: Bytes,
    /// When the file was modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modtime: Option<String>,
}

/// Go's `[]byte` in JSON: a base64 string (`null` when nil).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        match s {
            None => Ok(Bytes::default()),
            Some(s) => BASE64
                .decode(s.as_bytes())
                .map(Bytes)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl ReleaseChart {
    /// The chart as a release stores it (the top chart; subcharts are not stored).
    pub fn from_chart(chart: &Chart) -> ReleaseChart {
        let file = |f: &File| ChartFile {
            name: f.name.clone(),
            data: Bytes(f.data.clone()),
            modtime: None,
        };
        let values = match go_json(&chart.values) {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        };
        ReleaseChart {
            metadata: Some(chart.metadata.clone()),
            lock: chart.lock.as_ref().map(lock_json),
            templates: chart.templates.iter().map(file).collect(),
            values,
            schema: chart.schema.clone().map(Bytes),
            schemamodtime: zero_time(),
            files: chart.files.iter().map(file).collect(),
            modtime: None,
        }
    }

    /// The stored chart as an [`opkit_chart::Chart`] (without subcharts).
    pub fn to_chart(&self) -> Chart {
        let file = |f: &ChartFile| File {
            name: f.name.clone(),
            data: f.data.0.clone(),
        };
        Chart {
            metadata: self.metadata.clone().unwrap_or_default(),
            templates: self.templates.iter().map(file).collect(),
            values: Value::from_json(&serde_json::Value::Object(
                self.values.clone().unwrap_or_default(),
            )),
            schema: self.schema.as_ref().map(|b| b.0.clone()),
            files: self.files.iter().map(file).collect(),
            dependencies: Vec::new(),
            lock: self
                .lock
                .as_ref()
                .and_then(|l| serde_json::from_value::<Lock>(l.clone()).ok()),
        }
    }

    /// Whether two stored charts have the same content (times aside).
    pub fn same_content(&self, other: &ReleaseChart) -> bool {
        self.metadata == other.metadata
            && self
                .templates
                .iter()
                .map(|f| (&f.name, &f.data))
                .eq(other.templates.iter().map(|f| (&f.name, &f.data)))
            && self.values == other.values
            && self.schema == other.schema
            && self
                .files
                .iter()
                .map(|f| (&f.name, &f.data))
                .eq(other.files.iter().map(|f| (&f.name, &f.data)))
    }
}

/// `Chart.lock` as Helm's JSON (`generated` as written).
fn lock_json(lock: &Lock) -> serde_json::Value {
    serde_json::json!({
        "generated": if lock.generated.is_empty() { GO_ZERO_TIME } else { lock.generated.as_str() },
        "digest": lock.digest,
        "dependencies": lock.dependencies,
    })
}

/// Template values as Go's `encoding/json` writes them: integral floats print without a
/// fraction, maps with sorted keys ([`Value::to_go_json`]).
pub fn go_json(v: &Value) -> serde_json::Value {
    v.to_go_json()
}

/// Sorted newest last, by revision.
pub(crate) fn sort_by_revision(releases: &mut [Release]) {
    releases.sort_by_key(|r| r.version);
}

/// The user's values as they are stored in `config`.
pub(crate) fn config_of(values: &Value) -> serde_json::Map<String, serde_json::Value> {
    match go_json(values) {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_texts_are_helms() {
        assert_eq!(
            serde_json::to_string(&Status::PendingInstall).unwrap(),
            "\"pending-install\""
        );
        assert_eq!(Status::PendingUpgrade.as_str(), "pending-upgrade");
        assert!(Status::PendingRollback.is_pending());
        assert!(!Status::Deployed.is_pending());
    }

    #[test]
    fn empty_times_read_as_no_time_and_are_left_out() {
        let info: Info = serde_json::from_str(
            r#"{"first_deployed":"","last_deployed":"2025-01-02T03:04:05.123Z","status":"deployed"}"#,
        )
        .unwrap();
        assert_eq!(info.first_deployed, None);
        let back = serde_json::to_value(&info).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"last_deployed":"2025-01-02T03:04:05.123Z","status":"deployed"})
        );
    }

    #[test]
    fn chart_files_are_base64_and_integral_values_print_as_go_ints() {
        let chart = Chart {
            metadata: Metadata {
                api_version: "v2".into(),
                name: "demo".into(),
                version: "0.1.0".into(),
                ..Default::default()
            },
            templates: vec![File {
                name: "templates/cm.yaml".into(),
                data: b"kind: ConfigMap\n".to_vec(),
            }],
            values: Value::from_json(&serde_json::json!({"replicas": 1, "ratio": 0.5})),
            schema: None,
            files: Vec::new(),
            dependencies: Vec::new(),
            lock: None,
        };
        let json = serde_json::to_value(ReleaseChart::from_chart(&chart)).unwrap();
        assert_eq!(json["templates"][0]["data"], "a2luZDogQ29uZmlnTWFwCg==");
        assert_eq!(
            json["values"],
            serde_json::json!({"ratio": 0.5, "replicas": 1})
        );
        assert_eq!(json["metadata"]["apiVersion"], "v2");
        assert_eq!(json["schema"], serde_json::Value::Null);
        let back: ReleaseChart = serde_json::from_value(json).unwrap();
        assert_eq!(back.to_chart().templates, chart.templates);
    }
}
