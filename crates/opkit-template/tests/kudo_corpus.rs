//! Conformance with KUDO 0.19's renderer: every template of the 11 KUDO packages in
//! `../shared/corpus/kudo` rendered with default parameters (instance `inst`, namespace
//! `default`, the plan/phase/step the template is used in, the Pipe artifact names) must be
//! byte-identical to `render-defaults/<package>.json`. The packages are read as KUDO reads
//! them: `operator.yaml` and `params.yaml` with opkit's YAML reader, each default wrapped
//! and unwrapped by its declared type. The corpus lives outside the repository; without it
//! the test says so loudly and passes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use opkit_template::Value;
use opkit_template::kudo::{ParamKind, Renderer, Variables, unwrap_param, wrap_param};

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/kudo");
    dir.is_dir().then_some(dir)
}

/// The non-nil value under `key` of a map.
fn field(v: &Value, key: &str) -> Option<Value> {
    match v {
        Value::Map(m) => m.get(key).filter(|x| !x.is_nil()),
        _ => None,
    }
}

fn text_of(v: &Value, key: &str) -> String {
    field(v, key)
        .map(|x| opkit_template::sprint(&[x]))
        .unwrap_or_default()
}

/// `.Params` of a package with its defaults, typed as KUDO types them.
fn default_params(params_yaml: &str) -> BTreeMap<String, Value> {
    let file = opkit_template::yaml::from_yaml(params_yaml).expect("params.yaml reads");
    let Some(Value::List(list)) = field(&file, "parameters") else {
        panic!("params.yaml has no parameters list");
    };
    let mut out = BTreeMap::new();
    for p in list.iter() {
        let name = text_of(p, "name");
        let kind = match field(p, "type") {
            Some(t) => ParamKind::from_name(&t.to_string())
                .unwrap_or_else(|| panic!("parameter {name}: unknown type {t}")),
            None => ParamKind::String,
        };
        let default = field(p, "default").unwrap_or_default();
        let wrapped = wrap_param(&default, kind).expect("default wraps");
        let value = unwrap_param(wrapped.as_deref(), kind).expect("default unwraps");
        out.insert(name, value);
    }
    out
}

#[test]
fn kudo_corpus_templates_render_byte_for_byte() {
    let Some(dir) = corpus() else {
        eprintln!(
            "\n!!!!! kudo_corpus: corpus not found (../shared/corpus/kudo from the project root); \
             the KUDO conformance run is skipped"
        );
        return;
    };
    let renderer = Renderer::new();
    let mut cases = 0;
    let mut failures = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir.join("render-defaults"))
        .expect("render-defaults dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 11, "11 KUDO packages in the corpus");
    for path in files {
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("json")).expect("json");
        let pkg = expected["operator"].as_str().expect("operator name");
        let op_dir = dir.join("operators").join(pkg).join("operator");
        let operator = opkit_template::yaml::from_yaml(
            &std::fs::read_to_string(op_dir.join("operator.yaml")).expect("operator.yaml"),
        )
        .expect("operator.yaml reads");
        let params = default_params(
            &std::fs::read_to_string(op_dir.join("params.yaml")).expect("params.yaml"),
        );
        let pipes = expected["pipes"]
            .as_object()
            .expect("pipes")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        for r in expected["renders"].as_array().expect("renders") {
            let template = r["template"].as_str().expect("template name");
            let used_in: Vec<&str> = r["used_in"]
                .as_str()
                .unwrap_or_default()
                .split('/')
                .collect();
            let vars = Variables {
                operator_name: pkg.to_string(),
                name: expected["instance"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                namespace: expected["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                app_version: text_of(&operator, "appVersion"),
                operator_version: expected["operatorVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                plan_name: used_in.first().unwrap_or(&"").to_string(),
                phase_name: used_in.get(1).unwrap_or(&"").to_string(),
                step_name: used_in.get(2).unwrap_or(&"").to_string(),
                params: params.clone(),
                pipes: BTreeMap::clone(&pipes),
            };
            let text = std::fs::read_to_string(op_dir.join("templates").join(template))
                .expect("template file");
            cases += 1;
            let want = r["output"].as_str();
            match (renderer.render(template, &text, &vars), want) {
                (Ok(got), Some(want)) if got == want => {}
                (Ok(got), Some(want)) => {
                    let line = got
                        .lines()
                        .zip(want.lines())
                        .position(|(g, w)| g != w)
                        .unwrap_or(0);
                    failures.push(format!(
                        "{pkg}/{template}: first difference at line {}:\n  kudo:  {:?}\n  opkit: {:?}",
                        line + 1,
                        want.lines().nth(line),
                        got.lines().nth(line)
                    ));
                }
                (Err(e), _) => failures.push(format!("{pkg}/{template}: opkit failed: {e}")),
                (Ok(_), None) => failures.push(format!(
                    "{pkg}/{template}: KUDO failed ({}) but opkit rendered",
                    r["error"]
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} KUDO templates differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cases >= 95, "all corpus templates were rendered ({cases})");
}
