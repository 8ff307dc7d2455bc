//! The objects a chart's templates see besides `.Values`: `.Capabilities` (with
//! `KubeVersion`, `APIVersions.Has`, `HelmVersion`), `.Files` (`Get`, `GetBytes`, `Glob`,
//! `Lines`, `AsConfig`, `AsSecrets`), `.Chart` and `.Release`. They are host objects or maps
//! shaped like Helm's Go values, because templates print them (`%v`), ask their types
//! (`typeOf`) and call their methods; each prints and types as Helm's does.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use opkit_template::{FuncError, Function, Member, Object, ParamType, Value};

use crate::chart::{File, Metadata};

/// The Kubernetes API versions Helm assumes offline (`common.DefaultVersionSet`, from
/// client-go's scheme as Helm v4.1.4 builds it), in Helm's order.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// The Kubernetes version Helm v4.1.4 assumes offline (its client-go minor + 1.0).
pub const DEFAULT_KUBE_VERSION: &str = "v1.35.0";

/// Helm's build information (`version.BuildInfo`) as `helm version` prints it for v4.1.4.
const HELM_BUILD: [(&str, &str); 5] = [
    ("Version", "v4.1.4"),
    ("GitCommit", "05fa37973dc9e42b76e1d2883494c87174b6074f"),
    ("GitTreeState", "clean"),
    ("GoVersion", "go1.25.9"),
    ("KubeClientVersion", "v1.35"),
];

/// A Kubernetes version (`common.KubeVersion`): as given, normalized, major and minor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeVersion {
    /// The full version with a leading `v` (e.g. `v1.33.4-gke.1245000`).
    pub version: String,
    /// The numeric part (e.g. `v1.33.4`), what constraints are checked against.
    pub normalized: String,
    /// The major version.
    pub major: String,
    /// The minor version.
    pub minor: String,
}

/// Why a `--kube-version` did not parse (texts of Kubernetes' `ParseGeneric`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KubeVersionError(String);

impl KubeVersion {
    /// Parses a version the way Helm's `ParseKubeVersion` does (Kubernetes'
    /// `version.ParseGeneric`: `v?N.N[.N…]`, then anything).
    pub fn parse(version: &str) -> Result<KubeVersion, KubeVersionError> {
        let bad = || KubeVersionError(format!("could not parse {version:?} as version"));
        let s = version.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let s = s.strip_prefix('v').unwrap_or(s);
        let numbers_end = {
            // `[0-9]+(\.[0-9]+)*`: digits, then dot-digit groups.
            let b = s.as_bytes();
            let mut i = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == 0 {
                return Err(bad());
            }
            loop {
                let mut j = i;
                if j < b.len() && b[j] == b'.' {
                    j += 1;
                    let start = j;
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    if j > start {
                        i = j;
                        continue;
                    }
                }
                break i;
            }
        };
        let components: Vec<&str> = s[..numbers_end].split('.').collect();
        if components.len() < 2 {
            return Err(KubeVersionError(format!(
                "illegal version string {version:?}"
            )));
        }
        let mut nums = Vec::new();
        for (i, c) in components.iter().enumerate() {
            if i == 0 && c.starts_with('0') && *c != "0" {
                return Err(KubeVersionError(format!(
                    "illegal zero-prefixed version component {c:?} in {version:?}"
                )));
            }
            let n: u64 = c.parse().map_err(|_| {
                KubeVersionError(format!(
                    "illegal non-numeric version component {c:?} in {version:?}: strconv.ParseUint: parsing {c:?}: value out of range"
                ))
            })?;
            nums.push(n);
        }
        let version = if version.starts_with('v') {
            version.to_string()
        } else {
            format!("v{version}")
        };
        Ok(KubeVersion {
            version,
            normalized: format!(
                "v{}",
                nums.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(".")
            ),
            major: nums[0].to_string(),
            minor: nums[1].to_string(),
        })
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion::parse(DEFAULT_KUBE_VERSION).expect("the default version parses")
    }
}

/// What the cluster offers (`common.Capabilities`): `.Capabilities` in templates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The Kubernetes version.
    pub kube_version: KubeVersion,
    /// The API versions (`group/version`, and `group/version/Kind` entries).
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    /// Helm's offline defaults (what `helm template` assumes).
    fn default() -> Self {
        Capabilities {
            kube_version: KubeVersion::default(),
            api_versions: DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Capabilities {
    /// The template value `.Capabilities`.
    pub(crate) fn to_value(&self) -> Value {
        Value::Object(Arc::new(CapsObject(Arc::new(self.clone()))))
    }
}

struct CapsObject(Arc<Capabilities>);
struct KubeVersionObject(KubeVersion);
struct VersionSet(Arc<Vec<String>>);
struct BuildInfo;

fn strings_list(items: &[String]) -> Value {
    Value::list(items.iter().map(|s| Value::string(s.as_str())).collect())
}

impl KubeVersionObject {
    fn struct_text(&self) -> String {
        let k = &self.0;
        format!("{{{} {} {} {}}}", k.version, k.normalized, k.major, k.minor)
    }
}

fn build_info_text() -> String {
    let fields: Vec<&str> = HELM_BUILD.iter().map(|(_, v)| *v).collect();
    format!("{{{}}}", fields.join(" "))
}

/// A method without arguments that returns a fixed value.
fn getter(v: Value) -> Member {
    Member::Method(Function::new(&[], move |_| Ok(v.clone())))
}

impl Object for CapsObject {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        Some(Member::Field(match name {
            "KubeVersion" => {
                Value::Object(Arc::new(KubeVersionObject(self.0.kube_version.clone())))
            }
            "APIVersions" => {
                Value::Object(Arc::new(VersionSet(Arc::new(self.0.api_versions.clone()))))
            }
            "HelmVersion" => Value::Object(Arc::new(BuildInfo)),
            _ => return None,
        }))
    }
    fn format(&self) -> String {
        format!(
            "{{{} [{}] {}}}",
            KubeVersionObject(self.0.kube_version.clone()).struct_text(),
            self.0.api_versions.join(" "),
            build_info_text()
        )
    }
}

impl Object for KubeVersionObject {
    fn type_name(&self) -> String {
        "common.KubeVersion".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        let k = &self.0;
        Some(match name {
            "Version" => Member::Field(Value::string(k.version.as_str())),
            "Major" => Member::Field(Value::string(k.major.as_str())),
            "Minor" => Member::Field(Value::string(k.minor.as_str())),
            "GitVersion" => getter(Value::string(k.version.as_str())),
            "String" => getter(Value::string(k.normalized.as_str())),
            _ => return None,
        })
    }
    /// Go prints it through its `String` method.
    fn format(&self) -> String {
        self.0.normalized.clone()
    }
}

impl Object for VersionSet {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "Has" => {
                let set = self.0.clone();
                Some(Member::Method(Function::new(
                    &[ParamType::String],
                    move |a| {
                        let want = a[0].as_str().unwrap_or_default();
                        Ok(Value::Bool(set.iter().any(|v| v == want)))
                    },
                )))
            }
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn underlying(&self) -> Option<Value> {
        Some(strings_list(&self.0))
    }
}

impl Object for BuildInfo {
    fn type_name(&self) -> String {
        "version.BuildInfo".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        HELM_BUILD
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| Member::Field(Value::string(*v)))
    }
    fn format(&self) -> String {
        build_info_text()
    }
}

/// A Go `[]byte` (what `.Files.GetBytes` returns): prints as Go prints bytes, and is a
/// list of numbers for `len`, `index` and `range`.
struct Bytes(Arc<Vec<u8>>);

impl Object for Bytes {
    fn type_name(&self) -> String {
        "[]uint8".into()
    }
    fn member(&self, _: &str) -> Option<Member> {
        None
    }
    fn format(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(u8::to_string).collect();
        format!("[{}]", parts.join(" "))
    }
    fn underlying(&self) -> Option<Value> {
        Some(Value::list(
            self.0.iter().map(|b| Value::Int(i64::from(*b))).collect(),
        ))
    }
}

/// A chart's files (`engine.files`): `.Files` in templates.
#[derive(Clone)]
pub(crate) struct Files {
    files: Arc<BTreeMap<String, Arc<Vec<u8>>>>,
    /// Helm's `toYaml`, which `AsConfig` and `AsSecrets` print with.
    to_yaml: Option<Function>,
}

impl Files {
    pub(crate) fn new(files: &[File], to_yaml: Option<Function>) -> Files {
        Files {
            files: Arc::new(
                files
                    .iter()
                    .map(|f| (f.name.clone(), Arc::new(f.data.clone())))
                    .collect(),
            ),
            to_yaml,
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        Value::Object(Arc::new(self.clone()))
    }

    fn get(&self, name: &str) -> Arc<Vec<u8>> {
        self.files.get(name).cloned().unwrap_or_default()
    }

    fn glob(&self, pattern: &str) -> Files {
        let matcher = crate::glob::Glob::compile(pattern)
            .unwrap_or_else(|_| crate::glob::Glob::compile("**").expect("`**` compiles"));
        Files {
            files: Arc::new(
                self.files
                    .iter()
                    .filter(|(name, _)| matcher.matches(name))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            to_yaml: self.to_yaml.clone(),
        }
    }

    fn lines(&self, name: &str) -> Vec<String> {
        let data = self.get(name);
        if data.is_empty() {
            return Vec::new();
        }
        let s = crate::chart::text(&data);
        let s = s.strip_suffix('\n').unwrap_or(&s);
        s.split('\n').map(str::to_string).collect()
    }

    /// `AsConfig` / `AsSecrets`: the files by base name (a later path wins), as YAML.
    fn as_yaml(&self, encode: impl Fn(&[u8]) -> String) -> Result<Value, FuncError> {
        let Some(to_yaml) = &self.to_yaml else {
            return Err(FuncError::new(
                "AsConfig and AsSecrets print with toYaml, which this engine does not have",
            ));
        };
        let mut m = BTreeMap::new();
        for (k, v) in self.files.iter() {
            let base = k.rsplit('/').next().unwrap_or(k);
            m.insert(base.to_string(), Value::string(encode(v)));
        }
        to_yaml.call(&[Value::map(m)])
    }
}

impl Object for Files {
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        let this = self.clone();
        let f = match name {
            "Get" => Function::new(&[ParamType::String], move |a| {
                let data = this.get(a[0].as_str().unwrap_or_default());
                Ok(Value::string(crate::chart::text(&data).as_ref()))
            }),
            "GetBytes" => Function::new(&[ParamType::String], move |a| {
                Ok(Value::Object(Arc::new(Bytes(
                    this.get(a[0].as_str().unwrap_or_default()),
                ))))
            }),
            "Glob" => Function::new(&[ParamType::String], move |a| {
                Ok(this.glob(a[0].as_str().unwrap_or_default()).to_value())
            }),
            "Lines" => Function::new(&[ParamType::String], move |a| {
                let lines = this.lines(a[0].as_str().unwrap_or_default());
                Ok(strings_list(&lines))
            }),
            "AsConfig" => Function::new(&[], move |_| {
                this.as_yaml(|d| crate::chart::text(d).into_owned())
            }),
            "AsSecrets" => Function::new(&[], move |_| this.as_yaml(|d| BASE64.encode(d))),
            _ => return None,
        };
        Some(Member::Method(f))
    }
    fn format(&self) -> String {
        let parts: Vec<String> = self
            .files
            .iter()
            .map(|(k, v)| format!("{k}:{}", Bytes(v.clone()).format()))
            .collect();
        format!("map[{}]", parts.join(" "))
    }
    fn underlying(&self) -> Option<Value> {
        Some(Value::map(
            self.files
                .iter()
                .map(|(k, v)| (k.clone(), Value::Object(Arc::new(Bytes(v.clone())))))
                .collect(),
        ))
    }
}

/// `.Chart`: the metadata as a map with Go's field names (Helm v4's `MetadataAsMap`), plus
/// `IsRoot`.
pub(crate) fn chart_value(m: &Metadata, is_root: bool) -> Value {
    let s = |v: &str| Value::string(v);
    let strs = |v: &[String]| strings_list(v);
    let mut out = BTreeMap::new();
    out.insert("Name".into(), s(&m.name));
    out.insert("Home".into(), s(&m.home));
    out.insert("Sources".into(), strs(&m.sources));
    out.insert("Version".into(), s(&m.version));
    out.insert("Description".into(), s(&m.description));
    out.insert("Keywords".into(), strs(&m.keywords));
    out.insert(
        "Maintainers".into(),
        Value::list(
            m.maintainers
                .iter()
                .map(|x| {
                    Value::map(BTreeMap::from([
                        ("Name".to_string(), s(&x.name)),
                        ("Email".to_string(), s(&x.email)),
                        ("URL".to_string(), s(&x.url)),
                    ]))
                })
                .collect(),
        ),
    );
    out.insert("Icon".into(), s(&m.icon));
    out.insert("APIVersion".into(), s(&m.api_version));
    out.insert("Condition".into(), s(&m.condition));
    out.insert("Tags".into(), s(&m.tags));
    out.insert("AppVersion".into(), s(&m.app_version));
    out.insert("Deprecated".into(), Value::Bool(m.deprecated));
    out.insert(
        "Annotations".into(),
        Value::map(
            m.annotations
                .iter()
                .map(|(k, v)| (k.clone(), s(v)))
                .collect(),
        ),
    );
    out.insert("KubeVersion".into(), s(&m.kube_version));
    out.insert(
        "Dependencies".into(),
        Value::list(
            m.dependencies
                .iter()
                .map(|d| {
                    Value::map(BTreeMap::from([
                        ("Name".to_string(), s(&d.name)),
                        ("Version".to_string(), s(&d.version)),
                        ("Repository".to_string(), s(&d.repository)),
                        ("Condition".to_string(), s(&d.condition)),
                        ("Tags".to_string(), strs(&d.tags)),
                        ("Enabled".to_string(), Value::Bool(d.enabled)),
                        (
                            "ImportValues".to_string(),
                            Value::list(d.import_values.iter().map(Value::from_json).collect()),
                        ),
                        ("Alias".to_string(), s(&d.alias)),
                    ]))
                })
                .collect(),
        ),
    );
    out.insert("Type".into(), s(&m.chart_type));
    out.insert("IsRoot".into(), Value::Bool(is_root));
    Value::map(out)
}

/// The release being rendered (Helm's `ReleaseOptions`): `.Release` in templates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseOptions {
    /// The release name.
    pub name: String,
    /// The namespace.
    pub namespace: String,
    /// The revision (1 for an install).
    pub revision: i64,
    /// Whether this is an install.
    pub is_install: bool,
    /// Whether this is an upgrade.
    pub is_upgrade: bool,
}

impl ReleaseOptions {
    /// The template value `.Release`.
    pub(crate) fn to_value(&self) -> Value {
        Value::map(BTreeMap::from([
            ("Name".to_string(), Value::string(self.name.as_str())),
            (
                "Namespace".to_string(),
                Value::string(self.namespace.as_str()),
            ),
            ("IsUpgrade".to_string(), Value::Bool(self.is_upgrade)),
            ("IsInstall".to_string(), Value::Bool(self.is_install)),
            ("Revision".to_string(), Value::Int(self.revision)),
            ("Service".to_string(), Value::string("Helm")),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_version_parses_like_kubernetes_parse_generic() {
        let k = KubeVersion::parse("1.33.4-gke.1245000").unwrap();
        assert_eq!(k.version, "v1.33.4-gke.1245000");
        assert_eq!(k.normalized, "v1.33.4");
        assert_eq!((k.major.as_str(), k.minor.as_str()), ("1", "33"));
        assert_eq!(KubeVersion::parse("v1.30").unwrap().normalized, "v1.30");
        assert_eq!(
            KubeVersion::parse("1").unwrap_err().to_string(),
            "illegal version string \"1\""
        );
        assert_eq!(
            KubeVersion::parse("x1.2").unwrap_err().to_string(),
            "could not parse \"x1.2\" as version"
        );
    }
}
