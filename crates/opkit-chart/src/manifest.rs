//! Rendered files to release manifests, as Helm's `releaseutil` does it: each file split
//! into YAML documents, every document's head (`apiVersion`, `kind`, `metadata.name`,
//! `metadata.annotations`) read, hooks (`helm.sh/hook`) set apart, and both lists put in
//! Helm's install order. `helm template` prints exactly these lists, so the split, the
//! trimming and the (stable) sort must be Helm's to the byte.

use std::collections::BTreeMap;

use opkit_template::Value;

/// The kinds in the order Helm installs them (`releaseutil.InstallOrder`); other kinds
/// come after these, sorted by name.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// The annotation that makes a document a hook.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";

/// The hook events Helm knows (`test-success` is Helm 2's name for `test`).
const HOOK_EVENTS: &[(&str, &str)] = &[
    ("pre-install", "pre-install"),
    ("post-install", "post-install"),
    ("pre-delete", "pre-delete"),
    ("post-delete", "post-delete"),
    ("pre-upgrade", "pre-upgrade"),
    ("post-upgrade", "post-upgrade"),
    ("pre-rollback", "pre-rollback"),
    ("post-rollback", "post-rollback"),
    ("test", "test"),
    ("test-success", "test"),
];

/// The head of a manifest (Helm's `SimpleHead`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// One document of a rendered file that is not a hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The template it came from (`CHART/templates/FILE`).
    pub name: String,
    /// The document, trimmed.
    pub content: String,
    /// Its head.
    pub head: Head,
}

/// A document annotated with `helm.sh/hook` (Helm's `release.Hook`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// `metadata.name`.
    pub name: String,
    /// `kind`.
    pub kind: String,
    /// The template it came from.
    pub path: String,
    /// The document, trimmed.
    pub manifest: String,
    /// The events it runs on (`pre-install`, `test`, …).
    pub events: Vec<String>,
    /// `helm.sh/hook-weight` (0 when absent or not an integer).
    pub weight: i64,
    /// `helm.sh/hook-delete-policy`, lower-cased.
    pub delete_policies: Vec<String>,
    /// `helm.sh/hook-output-log-policy`, lower-cased.
    pub output_log_policies: Vec<String>,
}

impl Hook {
    /// Whether this is a test hook (`helm template --skip-tests` leaves those out).
    pub fn is_test(&self) -> bool {
        self.events.iter().any(|e| e == "test")
    }
}

/// A rendered document whose head is not valid YAML of the expected shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("YAML parse error on {path}: {message}")]
pub struct ManifestError {
    /// The template the document came from.
    pub path: String,
    /// The parser's message, in Go's words.
    pub message: String,
}

/// Go's `strings.TrimSpace`: Unicode white space at both ends.
pub(crate) fn trim_space(s: &str) -> &str {
    s.trim_matches(char::is_whitespace)
}

/// Splits a stream of YAML documents as Helm's `SplitManifests` does, in stream order:
/// the stream is trimmed, cut at `---` separators, empty pieces dropped and each piece
/// trimmed.
pub fn split_manifests(stream: &str) -> Vec<String> {
    let trimmed = trim_space(stream);
    split_at_separators(trimmed)
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(|d| trim_space(d).to_string())
        .collect()
}

/// Helm's document separator (`releaseutil`'s `sep`, `(?:^|\s*\n)---\s*` with Go's ASCII
/// `\s`) cut out of `s` as Go's `Regexp.Split(s, -1)` cuts: the pieces between matches, an
/// empty first piece when `s` starts with one. Found without a regex (compiling it cost a
/// noticeable part of a one-shot `opkit chart template`): every match but one at the start
/// holds `\n---`, and starts where the run of white space before that `\n` starts.
fn split_at_separators(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return vec![""];
    }
    let b = s.as_bytes();
    let is_space = |c: u8| matches!(c, b'\t' | b'\n' | 0x0C | b'\r' | b' ');
    let space_after = |mut i: usize| {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    // Where the last match ended: the text after it does not start with white space.
    let mut beg = 0;
    if s.starts_with("---") {
        out.push("");
        beg = space_after(3);
    }
    for (k, _) in s.match_indices("\n---") {
        if k < beg {
            continue;
        }
        let mut start = k;
        while start > beg && is_space(b[start - 1]) {
            start -= 1;
        }
        out.push(&s[beg..start]);
        beg = space_after(k + 4);
    }
    out.push(&s[beg..]);
    out
}

/// Splits rendered files into hooks and manifests, both in Helm's install order
/// (`releaseutil.SortManifests` with `InstallOrder`). Files are visited by name; partials
/// (`_*`) and blank files are skipped; a hook with an unknown event is dropped, as Helm does.
pub fn sort_manifests(
    files: &BTreeMap<String, String>,
) -> Result<(Vec<Hook>, Vec<Manifest>), ManifestError> {
    let mut hooks = Vec::new();
    let mut generic = Vec::new();
    let docs: Vec<(&String, String)> = files
        .iter()
        .filter(|(path, content)| {
            let base = path.rsplit('/').next().unwrap_or(path);
            !base.starts_with('_') && !trim_space(content).is_empty()
        })
        .flat_map(|(path, content)| split_manifests(content).into_iter().map(move |d| (path, d)))
        .collect();
    // Reading a head decodes the whole document (a CRD can be a megabyte of YAML): the
    // documents are read on several threads when there is enough text, then taken in order,
    // so the first bad document in order gives the error, as reading them one by one would.
    let heads = opkit_template::parallel::map_in_order(
        docs.iter().map(|(_, d)| d.as_str()).collect(),
        |d| d.len(),
        opkit_template::parallel::MIN_BYTES_PER_THREAD,
        read_head,
    );
    for ((path, doc), head) in docs.into_iter().zip(heads) {
        let head = head.map_err(|message| ManifestError {
            path: path.clone(),
            message,
        })?;
        let Some(hook_types) = head.annotations.get(HOOK_ANNOTATION) else {
            generic.push(Manifest {
                name: path.clone(),
                content: doc,
                head,
            });
            continue;
        };
        let mut events = Vec::new();
        let known = hook_types.split(',').all(|t| {
            let t = t.trim().to_lowercase();
            match HOOK_EVENTS.iter().find(|(name, _)| *name == t) {
                Some((_, event)) => {
                    events.push(event.to_string());
                    true
                }
                None => false,
            }
        });
        if !known {
            continue;
        }
        let policies = |key: &str| -> Vec<String> {
            head.annotations
                .get(key)
                .map(|v| v.split(',').map(|p| p.trim().to_lowercase()).collect())
                .unwrap_or_default()
        };
        hooks.push(Hook {
            weight: go_atoi(
                head.annotations
                    .get(HOOK_WEIGHT_ANNOTATION)
                    .map_or("", String::as_str),
            )
            .unwrap_or(0),
            delete_policies: policies(HOOK_DELETE_ANNOTATION),
            output_log_policies: policies(HOOK_OUTPUT_LOG_ANNOTATION),
            name: head.name,
            kind: head.kind,
            path: path.clone(),
            manifest: doc,
            events,
        });
    }
    hooks.sort_by(|a, b| kind_order(&a.kind, &b.kind));
    generic.sort_by(|a, b| kind_order(&a.head.kind, &b.head.kind));
    Ok((hooks, generic))
}

/// Helm's `lessByKind` as an ordering for a stable sort: known kinds in install order,
/// then unknown kinds by name.
fn kind_order(a: &str, b: &str) -> std::cmp::Ordering {
    let pos = |k: &str| INSTALL_ORDER.iter().position(|o| *o == k);
    match (pos(a), pos(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits that fit an `int`.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Reads a document's head as Helm does (`sigs.k8s.io/yaml`: YAML to JSON guided by the
/// target type, so numbers and booleans become strings where `SimpleHead` has strings; then
/// `encoding/json`), with Go's error texts for the shapes it refuses.
fn read_head(doc: &str) -> Result<Head, String> {
    let value = opkit_template::yaml::from_yaml(doc).map_err(|e| e.to_string())?;
    let refuse = |v: &Value, target: &str| {
        format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into {target}",
            json_kind(v)
        )
    };
    let string = |v: Option<Value>, field: &str| match v {
        None | Some(Value::Nil) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(Value::Int(i) | Value::Int64(i)) => Ok(i.to_string()),
        Some(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 1e15 => Ok(format!("{f:.0}")),
        Some(Value::Float(f)) => Ok(format!("{}", f as f32)),
        Some(other) => Err(refuse(
            &other,
            &format!("Go struct field {field} of type string"),
        )),
    };
    let mut head = Head::default();
    let obj = match &value {
        Value::Nil => return Ok(head),
        Value::Map(o) => o,
        other => return Err(refuse(other, "Go value of type util.SimpleHead")),
    };
    head.api_version = string(obj.get("apiVersion"), "SimpleHead.apiVersion")?;
    head.kind = string(obj.get("kind"), "SimpleHead.kind")?;
    let meta = match obj.get("metadata") {
        None | Some(Value::Nil) => return Ok(head),
        Some(Value::Map(meta)) => meta,
        Some(other) => {
            return Err(refuse(
                &other,
                "Go struct field SimpleHead.metadata of type struct { Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }",
            ));
        }
    };
    head.name = string(meta.get("name"), ".metadata.name")?;
    match meta.get("annotations") {
        None | Some(Value::Nil) => {}
        Some(Value::Map(ann)) => {
            for (k, v) in ann.entries() {
                let v = string(Some(v), ".metadata.annotations")?;
                head.annotations.insert(k, v);
            }
        }
        Some(other) => {
            return Err(refuse(
                &other,
                "Go struct field .metadata.annotations of type map[string]string",
            ));
        }
    }
    Ok(head)
}

/// How Go's `encoding/json` names a JSON value's kind in its errors.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Float(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "array",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn split_drops_empty_documents_and_trims_each() {
        let docs = split_manifests("\n---\nkind: A  \n\n---\nkind: B\n---\n");
        assert_eq!(docs, vec!["kind: A", "kind: B"]);
        // Go's greedy `---\s*` eats the line break a following `---` would need, so the
        // second separator stays in the document (checked with helm 4.1.4).
        let docs = split_manifests("kind: A  \n\n---\n\n---\nkind: B\n");
        assert_eq!(docs, vec!["kind: A", "---\nkind: B"]);
    }

    proptest::proptest! {
        /// The separator is found without a regex; Helm's regex (with Go's ASCII `\s`) and
        /// Go's `Split` are the oracle.
        #[test]
        fn separators_are_cut_where_helms_regex_cuts(s in "[-\n\t\r\x0C a]{0,24}") {
            let re = regex::Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*").unwrap();
            let mut want = Vec::new();
            let (mut beg, mut end) = (0, 0);
            for m in re.find_iter(&s) {
                end = m.start();
                want.push(&s[beg..end]);
                beg = m.end();
            }
            if s.is_empty() || end != s.len() {
                want.push(&s[beg..]);
            }
            proptest::prop_assert_eq!(split_at_separators(&s), want);
        }
    }

    #[test]
    fn split_keeps_a_comment_only_document() {
        let docs = split_manifests("# just a comment\n---\nkind: A");
        assert_eq!(docs, vec!["# just a comment", "kind: A"]);
    }

    #[test]
    fn manifests_sort_by_install_order_then_unknown_kinds_by_name_stably() {
        let f = files(&[
            (
                "c/templates/a.yaml",
                "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Zed\n---\nkind: Alpha",
            ),
            (
                "c/templates/b.yaml",
                "kind: Service\n---\nkind: Namespace\n---\nkind: Deployment\nmetadata:\n  name: e",
            ),
        ]);
        let (_, m) = sort_manifests(&f).unwrap();
        let kinds: Vec<_> = m
            .iter()
            .map(|m| format!("{}/{}", m.head.kind, m.head.name))
            .collect();
        assert_eq!(
            kinds,
            [
                "Namespace/",
                "Service/",
                "Deployment/d",
                "Deployment/e",
                "Alpha/",
                "Zed/"
            ]
        );
    }

    #[test]
    fn hooks_are_set_apart_with_weight_and_policies_and_unknown_events_dropped() {
        let f = files(&[(
            "c/templates/h.yaml",
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: Pre-Install, test-success\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: before-hook-creation,Hook-Succeeded\n---\nkind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: pre-nothing\n---\nkind: Pod\nmetadata:\n  annotations:\n    other: x",
        )]);
        let (h, m) = sort_manifests(&f).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].events, ["pre-install", "test"]);
        assert_eq!(h[0].weight, -5);
        assert_eq!(
            h[0].delete_policies,
            ["before-hook-creation", "hook-succeeded"]
        );
        assert!(h[0].is_test());
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].head.kind, "Pod");
    }

    #[test]
    fn partials_and_blank_files_are_skipped() {
        let f = files(&[
            ("c/templates/_helpers.tpl", "kind: Pod"),
            ("c/templates/blank.yaml", " \n\n"),
        ]);
        let (h, m) = sort_manifests(&f).unwrap();
        assert!(h.is_empty() && m.is_empty());
    }

    #[test]
    fn a_list_kind_fails_with_go_json_text_and_a_number_kind_is_a_string() {
        let f = files(&[("c/templates/a.yaml", "kind: [1]")]);
        let err = sort_manifests(&f).unwrap_err();
        assert_eq!(
            err.to_string(),
            "YAML parse error on c/templates/a.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field SimpleHead.kind of type string"
        );
        let f = files(&[(
            "c/templates/a.yaml",
            "kind: 3\nmetadata:\n  name: true\n  annotations:\n    helm.sh/hook-weight: 1.5",
        )]);
        let (_, m) = sort_manifests(&f).unwrap();
        assert_eq!(
            (m[0].head.kind.as_str(), m[0].head.name.as_str()),
            ("3", "true")
        );
        assert_eq!(m[0].head.annotations["helm.sh/hook-weight"], "1.5");
    }

    #[test]
    fn go_atoi_takes_signs_and_digits_only() {
        assert_eq!(go_atoi("-5"), Some(-5));
        assert_eq!(go_atoi("+7"), Some(7));
        assert_eq!(go_atoi("5.0"), None);
        assert_eq!(go_atoi(""), None);
        assert_eq!(go_atoi("99999999999999999999"), None);
    }
}
