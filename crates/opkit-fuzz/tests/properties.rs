//! Every fuzz target on generated inputs, on stable, in CI.
//!
//! Two kinds of generators per target: raw bytes (the exact input the fuzzers get, decoded by
//! the target) and structured values (JSON of bounded depth, strings from the grammars'
//! meaningful tokens, patches built from real objects) fed to the structured entry points.
//! Case counts are explicit and small so that the whole file stays well under a minute in a
//! debug build on two slow cores; the long runs belong to `fuzz/` (see its README).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use opkit_fuzz::input::Input;
use opkit_fuzz::kudo_values;
use opkit_fuzz::{ApplyKind, MetaChoice, fixtures};
use opkit_template::kudo::ParamKind;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Cases for the cheap, pure targets.
const CHEAP: u32 = 256;
/// Cases for the merge, schema and apply targets.
const MEDIUM: u32 = 96;
/// Cases for CEL (an interpreter per rule) and whole requests (a store write each).
const COSTLY: u32 = 48;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Raw fuzzer-like input.
fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// A string of up to `max` tokens.
fn tokens(alphabet: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(alphabet), 0..max).prop_map(|t| t.concat())
}

/// Tokens of the label-selector grammar (keys with prefixes, operators, sets, separators) and a
/// few characters it must refuse.
const SELECTOR_TOKENS: &[&str] = &[
    "a",
    "b",
    "app",
    "x",
    "1",
    "-",
    "_",
    ".",
    "example.com/",
    "k8s.io/",
    "/",
    "=",
    "==",
    "!=",
    "!",
    " in ",
    " notin ",
    "in",
    "notin",
    " ",
    "(",
    ")",
    ",",
    "<",
    ">",
    "gt",
    "lt",
    "-5",
    "\t",
    "'",
    "é",
    "\\",
    "\0",
    "a=b",
    "x in (a,b)",
    "!f",
    "",
    "@",
];

/// Tokens of the field-selector grammar.
const FIELD_TOKENS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "status.phase",
    "spec.host",
    "a",
    "=",
    "==",
    "!=",
    "!",
    ",",
    "\\",
    "\\,",
    "\\=",
    "\\\\",
    "x",
    " ",
    "é",
    "Running",
    "",
];

/// Characters of names, label keys and label values, and ones they must refuse.
const NAME_TOKENS: &[&str] = &[
    "a",
    "z",
    "0",
    "9",
    "-",
    ".",
    "_",
    "/",
    "A",
    "Z",
    "example.com",
    "abcdefghij",
    " ",
    "é",
    "\0",
    "..",
    "--",
];

/// Tokens of client-go's JSONPath dialect.
const JSONPATH_TOKENS: &[&str] = &[
    "{",
    "}",
    ".",
    "..",
    "[",
    "]",
    "*",
    "a",
    "0",
    "1",
    "-1",
    ":",
    "?(@.a==1)",
    "@",
    "range",
    "end",
    "{range .items[*]}",
    "{end}",
    "'",
    "\"",
    "\\",
    " ",
    ",",
    "$",
    "text",
    "==",
    "<",
];

/// A JSON value of bounded depth whose keys and strings come from a small meaningful set.
fn json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-4i64..4).prop_map(Value::from),
        proptest::sample::select(opkit_fuzz::input::STRINGS).prop_map(Value::from),
    ];
    leaf.prop_recursive(depth, 48, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(
                (proptest::sample::select(opkit_fuzz::input::KEYS), inner),
                0..4
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect::<Map<_, _>>()
            )),
        ]
    })
}

/// A real object with one field replaced by a generated value: patches and configurations
/// that look like what clients send.
fn edited(base: Value) -> impl Strategy<Value = Value> {
    let pointers = opkit_fuzz::pointers(&base);
    (proptest::sample::select(pointers), json(2), any::<bool>()).prop_map(
        move |(ptr, value, remove)| {
            let mut out = base.clone();
            if ptr.is_empty() {
                return out;
            }
            let (parent, last) = ptr.rsplit_once('/').unwrap_or(("", ""));
            let key = last.replace("~1", "/").replace("~0", "~");
            match out.pointer_mut(parent) {
                Some(Value::Object(map)) if remove => {
                    map.remove(&key);
                }
                Some(Value::Array(items)) if remove => {
                    if let Ok(i) = key.parse::<usize>()
                        && i < items.len()
                    {
                        items.remove(i);
                    }
                }
                _ => {
                    if let Some(slot) = out.pointer_mut(&ptr) {
                        *slot = value;
                    }
                }
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(config(CHEAP))]

    #[test]
    fn label_selector_from_bytes(data in bytes(64)) {
        opkit_fuzz::label_selector(&data);
    }

    #[test]
    fn label_selector_from_grammar_tokens(s in tokens(SELECTOR_TOKENS, 12)) {
        opkit_fuzz::label_selector_str(&s);
    }

    #[test]
    fn field_selector_from_bytes(data in bytes(64)) {
        opkit_fuzz::field_selector(&data);
    }

    #[test]
    fn field_selector_from_grammar_tokens(s in tokens(FIELD_TOKENS, 10)) {
        opkit_fuzz::field_selector_str(&s);
    }

    #[test]
    fn names_and_labels_from_bytes(data in bytes(80)) {
        opkit_fuzz::names_and_labels(&data);
    }

    #[test]
    fn names_and_labels_from_name_tokens(s in tokens(NAME_TOKENS, 40)) {
        opkit_fuzz::names_and_labels_str(&s);
    }

    #[test]
    fn jsonpath_from_bytes(data in bytes(64)) {
        opkit_fuzz::jsonpath(&data);
    }

    #[test]
    fn jsonpath_from_template_tokens(t in tokens(JSONPATH_TOKENS, 12), data in json(3)) {
        opkit_fuzz::jsonpath_str(&t, &data);
    }

    #[test]
    fn json_patch_from_bytes(data in bytes(128)) {
        opkit_fuzz::json_patch(&data);
    }

    #[test]
    fn json_patch_diff_between_generated_documents_applies(a in json(4), b in json(4)) {
        opkit_fuzz::json_patch_diff(&a, &b);
    }

    #[test]
    fn json_patch_diff_between_edited_deployments_applies(b in edited(fixtures::deployment())) {
        opkit_fuzz::json_patch_diff(&fixtures::deployment(), &b);
    }

    #[test]
    fn merge_patch_from_bytes(data in bytes(128)) {
        opkit_fuzz::merge_patch(&data);
    }

    #[test]
    fn merge_patch_of_generated_documents(doc in json(4), patch in json(4)) {
        opkit_fuzz::merge_patch_values(&doc, &patch);
    }
}

proptest! {
    #![proptest_config(config(MEDIUM))]

    #[test]
    fn strategic_merge_from_bytes(data in bytes(256)) {
        opkit_fuzz::strategic_merge(&data);
    }

    #[test]
    fn strategic_merge_deployment_with_edited_copy(patch in edited(fixtures::deployment())) {
        opkit_fuzz::strategic_merge_values(MetaChoice::Deployment, &fixtures::deployment(), &patch);
    }

    #[test]
    fn strategic_merge_pod_with_generated_patch(patch in json(5)) {
        opkit_fuzz::strategic_merge_values(MetaChoice::Pod, &fixtures::pod(), &patch);
    }

    #[test]
    fn strategic_merge_custom_resource_with_edited_copy(patch in edited(fixtures::custom_resource())) {
        opkit_fuzz::strategic_merge_values(MetaChoice::Schema, &fixtures::custom_resource(), &patch);
    }

    #[test]
    fn apply_from_bytes(data in bytes(256)) {
        opkit_fuzz::apply(&data);
    }

    #[test]
    fn apply_edited_deployments_by_two_managers(
        first in edited(fixtures::deployment()),
        second in edited(fixtures::deployment()),
        edit in edited(fixtures::deployment()),
        force in any::<bool>(),
    ) {
        opkit_fuzz::apply_values(ApplyKind::Deployment, &Value::Object(Map::new()), &first, &second, force, &edit);
    }

    #[test]
    fn apply_edited_custom_resources_by_two_managers(
        first in edited(fixtures::custom_resource()),
        second in edited(fixtures::custom_resource()),
        edit in edited(fixtures::custom_resource()),
        force in any::<bool>(),
    ) {
        opkit_fuzz::apply_values(ApplyKind::Custom, &fixtures::custom_resource(), &first, &second, force, &edit);
    }

    #[test]
    fn schema_from_bytes(data in bytes(256)) {
        opkit_fuzz::schema(&data);
    }

    #[test]
    fn schema_fixture_on_edited_objects(obj in edited(fixtures::custom_resource())) {
        opkit_fuzz::schema_values(&fixtures::crd_schema(), &obj);
    }

    #[test]
    fn schema_generated_json_as_schema(schema in json(4), obj in json(4)) {
        opkit_fuzz::schema_values(&schema, &obj);
    }
}

proptest! {
    #![proptest_config(config(COSTLY))]

    #[test]
    fn cel_from_bytes(data in bytes(128)) {
        opkit_fuzz::cel(&data);
    }

    #[test]
    fn cel_rules_from_tokens(rule in tokens(opkit_fuzz::RULE_TOKENS, 16), spec in json(3)) {
        opkit_fuzz::cel_values(&rule, None, &spec, None);
    }

    #[test]
    fn request_from_bytes(data in bytes(256)) {
        opkit_fuzz::request(&data);
    }
}

/// Cases for templates (a template set with Sprig per case, two executions).
const TEMPLATES: u32 = 256;
/// Cases for whole corpus charts with edited values (every template of a chart executed).
const CHARTS: u32 = 24;

/// A chart of the shared corpus: every file under a `templates/` directory (its own and its
/// subcharts', named by their path from the chart's parent, as Helm names them) and its
/// `values.yaml` as JSON.
struct CorpusChart {
    name: String,
    files: Vec<(String, String)>,
    values: Value,
}

/// The corpus charts (`../shared/corpus/helm/charts`, read at test time; empty, with a loud
/// note, when the corpus is absent).
fn corpus_charts() -> &'static [CorpusChart] {
    static CHARTS: OnceLock<Vec<CorpusChart>> = OnceLock::new();
    CHARTS.get_or_init(|| {
        let root =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm/charts");
        let Ok(dir) = std::fs::read_dir(&root) else {
            eprintln!(
                "\n!!!!! opkit-fuzz: ../shared/corpus/helm not found; corpus charts skipped\n"
            );
            return Vec::new();
        };
        let mut charts: Vec<CorpusChart> = dir
            .flatten()
            .filter(|e| e.path().join("Chart.yaml").is_file())
            .map(|e| load_chart(&root, &e.path()))
            .collect();
        charts.sort_by(|a, b| a.name.cmp(&b.name));
        charts
    })
}

fn load_chart(root: &Path, dir: &Path) -> CorpusChart {
    let mut files = Vec::new();
    collect_templates(root, dir, false, &mut files);
    files.sort();
    let text = std::fs::read_to_string(dir.join("values.yaml")).unwrap_or_default();
    let values = opkit_template::yaml::from_yaml_map(&text).expect("corpus values.yaml reads");
    let json = opkit_template::formats::functions()["mustToJson"]
        .call(&[values])
        .expect("corpus values encode");
    let values = serde_json::from_str(json.as_str().unwrap_or_default()).expect("JSON");
    let name = dir
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    CorpusChart {
        name,
        files,
        values,
    }
}

fn collect_templates(root: &Path, dir: &Path, in_templates: bool, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let templates = in_templates || entry.file_name() == "templates";
        if path.is_dir() {
            collect_templates(root, &path, templates, out);
        } else if in_templates && let Ok(text) = std::fs::read_to_string(&path) {
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            out.push((name, text));
        }
    }
}

/// Every corpus chart with its own values, numbers as values files give them and as `--set`
/// does: no panic, bounded, errors in Go's form; and most templates render (the harness has no
/// `.Files`, `.Capabilities.APIVersions` or subchart scoping, so some fail cleanly).
#[test]
fn corpus_charts_render_with_their_own_values_or_fail_cleanly() {
    for chart in corpus_charts() {
        let templates = chart
            .files
            .iter()
            .filter(|(name, _)| !name.rsplit('/').next().unwrap_or(name).starts_with('_'))
            .count();
        for set_ints in [false, true] {
            let rendered = opkit_fuzz::chart_values(&chart.files, &chart.values, set_ints);
            assert!(
                rendered * 2 >= templates,
                "{}: only {rendered} of {templates} templates render with the chart's values",
                chart.name
            );
        }
    }
}

#[test]
fn seed_templates_render_with_no_values() {
    for seed in opkit_fuzz::SEED_TEMPLATES {
        opkit_fuzz::template_values(seed, &Value::Null, false);
    }
}

proptest! {
    #![proptest_config(config(TEMPLATES))]

    #[test]
    fn template_from_bytes(data in bytes(256)) {
        opkit_fuzz::template(&data);
    }

    #[test]
    fn template_from_tokens_with_generated_values(
        text in tokens(opkit_fuzz::TEMPLATE_TOKENS, 40),
        values in json(3),
        set_ints in any::<bool>(),
    ) {
        opkit_fuzz::template_values(&text, &values, set_ints);
    }

    #[test]
    fn edited_seed_templates_with_generated_values(
        seed in proptest::sample::select(opkit_fuzz::SEED_TEMPLATES),
        edits in bytes(48),
        values in json(3),
        set_ints in any::<bool>(),
    ) {
        let text = opkit_fuzz::edit(&mut Input::new(&edits), seed, 6);
        opkit_fuzz::template_values(&text, &values, set_ints);
    }

    #[test]
    fn yaml_from_bytes(data in bytes(128)) {
        opkit_fuzz::yaml(&data);
    }

    #[test]
    fn yaml_from_tokens(text in tokens(opkit_fuzz::YAML_TOKENS, 40)) {
        opkit_fuzz::yaml_str(&text);
    }

    #[test]
    fn json_toml_from_bytes(data in bytes(128)) {
        opkit_fuzz::json_toml(&data);
    }

    #[test]
    fn json_toml_from_tokens(text in tokens(opkit_fuzz::DOC_TOKENS, 32)) {
        opkit_fuzz::json_toml_str(&text);
    }

    #[test]
    fn kudo_from_bytes(data in bytes(256)) {
        opkit_fuzz::kudo(&data);
    }

    #[test]
    fn kudo_edited_seed_with_generated_parameters(
        edits in bytes(48),
        params in proptest::collection::vec(
            (proptest::sample::select(&["a", "name", "items"][..]),
             proptest::sample::select(&[ParamKind::String, ParamKind::Array, ParamKind::Map][..]),
             json(3)),
            0..4,
        ),
    ) {
        let text = opkit_fuzz::edit(&mut Input::new(&edits), opkit_fuzz::KUDO_SEED, 6);
        let params: Vec<_> = params.into_iter().map(|(n, k, v)| (n.to_owned(), k, v)).collect();
        kudo_values(&text, &params);
    }
}

proptest! {
    #![proptest_config(config(CHARTS))]

    #[test]
    fn corpus_charts_with_edited_values_and_one_edited_template(
        pick in any::<usize>(),
        edits in bytes(64),
        set_ints in any::<bool>(),
    ) {
        let charts = corpus_charts();
        if charts.is_empty() {
            return Ok(());
        }
        let chart = &charts[pick % charts.len()];
        let mut input = Input::new(&edits);
        let mut values = chart.values.clone();
        input.mutate(&mut values, 4);
        let mut files = chart.files.clone();
        if !files.is_empty() {
            let i = input.below(files.len());
            files[i].1 = opkit_fuzz::edit(&mut input, &files[i].1, 4);
        }
        opkit_fuzz::chart_values(&files, &values, set_ints);
    }
}
