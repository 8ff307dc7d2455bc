//! Target for KUDO's rendering mode (`opkit_template::kudo`): operator packages' templates
//! with parameters as KUDO stores and types them.
//!
//! KUDO packages come from operator authors and their parameters from whoever creates an
//! instance; the controller renders them. Any template with any parameters must render or
//! fail with KUDO's wording (bounded, see [`crate::template`]), and array and map
//! parameters must survive being stored as text and read back.

use std::collections::BTreeMap;

use opkit_template::Value;
use opkit_template::kudo::{ParamKind, RenderError, Renderer, Variables, unwrap_param, wrap_param};
use serde_json::Value as Json;

use crate::formats::go_json;
use crate::input::Input;
use crate::template::{MAX_OUTPUT, MAX_STEPS, TEMPLATE_TOKENS, edit};

/// KUDO's variables and idioms, added to the template tokens.
pub const KUDO_TOKENS: &[&str] = &[
    ".Params",
    ".Params.a",
    ".Params.name",
    ".Params.items",
    ".Name",
    ".Namespace",
    ".OperatorName",
    ".Pipes.p",
    "{{ .Params.a }}",
    "{{ range .Params.items }}{{ . }}{{ end }}",
    "{{ toYaml .Params | indent 2 }}",
    "{{ .Params.missing }}",
];

/// A KUDO-style template to start edits from.
pub const KUDO_SEED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n\
  namespace: {{ .Namespace }}\ndata:\n  a: {{ .Params.a | quote }}\n\
{{- range $i, $e := .Params.items }}\n  i{{ $i }}: {{ $e | toString | quote }}\n{{- end }}\n\
  all: |\n{{ toYaml .Params | indent 4 }}\n";

/// KUDO target from raw bytes: three parameters (any kind, each stored as KUDO stores it and
/// read back), then a template of tokens, an edited seed or raw text.
pub fn kudo(data: &[u8]) {
    let mut input = Input::new(data);
    let mut params = Vec::new();
    for name in ["a", "name", "items"] {
        let kind = input.pick(&[ParamKind::String, ParamKind::Array, ParamKind::Map]);
        params.push((name.to_owned(), kind, input.json(3)));
    }
    let text = match input.below(4) {
        0 => String::from_utf8_lossy(input.rest()).into_owned(),
        1 => edit(&mut input, KUDO_SEED, 6),
        _ => {
            let mut tokens = TEMPLATE_TOKENS.to_vec();
            tokens.extend_from_slice(KUDO_TOKENS);
            input.tokens(&tokens, 40)
        }
    };
    kudo_values(&text, &params);
}

/// KUDO properties: each parameter is stored as text ([`wrap_param`]) and read back
/// ([`unwrap_param`]); an array or map parameter reads back as the same data (arrays when it
/// is a list); rendering the template gives output within the bounds or an error in KUDO's
/// wording wrapped around Go's.
pub fn kudo_values(text: &str, params: &[(String, ParamKind, Json)]) {
    let mut vars = Variables {
        operator_name: "op".into(),
        name: "inst".into(),
        namespace: "default".into(),
        pipes: BTreeMap::from([("p".to_owned(), "inst-p".to_owned())]),
        ..Default::default()
    };
    for (name, kind, json) in params {
        let value = Value::from_json(json);
        let stored = match wrap_param(&value, *kind) {
            Ok(stored) => stored,
            Err(e) => panic!("parameter {json} does not store as {kind:?}: {e}"),
        };
        let read = unwrap_param(stored.as_deref(), *kind);
        let round_trips = match kind {
            ParamKind::Map => true,
            ParamKind::Array => json.is_array() || json.is_null(),
            ParamKind::String => false,
        };
        if round_trips {
            let read = read
                .as_ref()
                .unwrap_or_else(|e| panic!("{json} stored as {stored:?} does not read: {e}"));
            let expected = if json.is_null() && *kind == ParamKind::Array {
                Value::list(Vec::new())
            } else {
                value
            };
            assert_eq!(
                go_json(Some(read)),
                go_json(Some(&expected)),
                "{json} stored as {stored:?} reads back differently"
            );
        }
        if let Ok(v) = read {
            vars.params.insert(name.clone(), v);
        }
    }
    let mut renderer = Renderer::new();
    renderer.set_bounds(Some(MAX_STEPS), Some(MAX_OUTPUT));
    match renderer.render("t.yaml", text, &vars) {
        Ok(out) => assert!(
            out.len() <= MAX_OUTPUT,
            "{} bytes past the bound",
            out.len()
        ),
        Err(RenderError::Parse(e)) | Err(RenderError::Render(e)) => assert!(
            e.message().starts_with("template: "),
            "{text:?}: error not in Go's form: {e}"
        ),
    }
}
