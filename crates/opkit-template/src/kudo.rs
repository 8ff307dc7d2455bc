//! KUDO's rendering mode (KUDO 0.19's `pkg/engine/renderer`), for the declarative-operator
//! engine: each template is parsed in a fresh set named `gotpl` with
//! `missingkey=error` (a missing key fails instead of printing `<no value>`, and nothing is
//! stripped from the output), KUDO's function map (Sprig's text functions minus `env`,
//! `expandenv`, `base`, `dir`, `clean`, `ext`, `isAbs`, plus `toYaml`, which is go-yaml
//! v2.3.0's `Marshal` of the value itself: it keeps its final line break and, unlike later
//! go-yaml v2 releases, does not fold long strings) and KUDO's variables
//! (`.OperatorName`, `.Name`, `.Namespace`, `.AppVersion`, `.OperatorVersion`,
//! `.PlanName`, `.PhaseName`, `.StepName`, `.Params`, `.Pipes`).
//!
//! Parameters are typed as KUDO types them ([`wrap_param`], [`unwrap_param`]): a string
//! parameter is the default printed with `%v` (a `params.yaml` number is a `float64`, so
//! `1000000` becomes `1e+06`); an array or map parameter is YAML text decoded with
//! `sigs.k8s.io/yaml` (numbers `float64`).
//!
//! KUDO was built with Sprig 3.2.3, which lacks `sha512sum`; this map leaves it out too.
//! Sprig 3.2.3 converts numbers with spf13/cast 1.3.1, which does not read `"3.0"` as the
//! int 3 (cast 1.4+ trims a zero decimal part, so Helm's `int "3.0"` is 3): the functions
//! that convert with it (`int`, `int64`, `add`, `add1`, `sub`, `mul`, `div`, `mod`, `max`,
//! `biggest`, `min`, `slice`, `mustSlice`) see such a string as 0 here, as in KUDO.
//! Other differences of Sprig 3.2.3's dependencies (mergo 0.3.11's `merge`,
//! semver 3.2.0's prerelease rules, xstrings 1.3.3) are not reproduced.

use std::collections::BTreeMap;

use crate::ParamType::Any;
use crate::yaml::{Target, YamlError};
use crate::{Error, FuncError, Function, MissingKey, Templates, Value};

/// Functions KUDO removes from Sprig's map so templates cannot reach the controller's
/// environment, plus `sha512sum`, which Sprig 3.2.3 does not have.
const REMOVED: &[&str] = &[
    "env",
    "expandenv",
    "base",
    "dir",
    "clean",
    "ext",
    "isAbs",
    "sha512sum",
];

/// Sprig functions whose arguments Sprig 3.2.3 converts with spf13/cast 1.3.1.
const CAST_1_3_FUNCTIONS: &[&str] = &[
    "int",
    "int64",
    "add",
    "add1",
    "sub",
    "mul",
    "div",
    "mod",
    "max",
    "biggest",
    "min",
    "slice",
    "mustSlice",
];

/// The argument as spf13/cast 1.3.1 sees it: a string that only cast 1.4+ reads as an int
/// (`"3.0"`) fails to convert, which cast turns into 0.
fn cast_1_3_arg(v: &Value) -> Value {
    match v.as_str() {
        Some(s)
            if crate::sprig::parse_int(s, 0).is_none()
                && crate::sprig::parse_int(crate::sprig::trim_zero_decimal(s), 0).is_some() =>
        {
            Value::Int(0)
        }
        _ => v.clone(),
    }
}

/// `f` with its arguments converted as cast 1.3.1 converts them.
fn with_cast_1_3(f: Function) -> Function {
    let params = f.params().to_vec();
    let variadic = f.variadic_param();
    let call = move |a: &[Value]| {
        let args: Vec<Value> = a.iter().map(cast_1_3_arg).collect();
        f.call(&args)
    };
    match variadic {
        Some(v) => Function::variadic(&params, v, call),
        None => Function::new(&params, call),
    }
}

/// Why a KUDO template did not render, with KUDO's wording.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The template does not parse (`error parsing template: template: NAME:L: …`).
    #[error("error parsing template: {0}")]
    Parse(Error),
    /// Execution failed, e.g. a missing key (`error rendering template: … map has no entry for key "X"`).
    #[error("error rendering template: {0}")]
    Render(Error),
}

/// The type a KUDO parameter declares in `params.yaml` (`type:`; `string` when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ParamKind {
    /// `string`: the value as text.
    #[default]
    String,
    /// `array`: YAML text holding a list.
    Array,
    /// `map`: YAML text holding any YAML value.
    Map,
}

impl ParamKind {
    /// The kind named by `params.yaml`'s `type:` (`None` when the name is unknown).
    pub fn from_name(name: &str) -> Option<ParamKind> {
        match name {
            "string" => Some(ParamKind::String),
            "array" => Some(ParamKind::Array),
            "map" => Some(ParamKind::Map),
            _ => None,
        }
    }
}

/// KUDO's `WrapParamValue`: a parameter value as the text an `OperatorVersion` stores
/// (`None` for a missing string value). Arrays and maps are written as YAML (by
/// `sigs.k8s.io/yaml` over go-yaml v2.3.0: long strings are not folded).
pub fn wrap_param(v: &Value, kind: ParamKind) -> Result<Option<String>, YamlError> {
    match kind {
        ParamKind::Array | ParamKind::Map => crate::yaml::to_yaml_unfolded(v).map(Some),
        ParamKind::String if v.is_nil() => Ok(None),
        ParamKind::String => Ok(Some(crate::sprig::strval(v))),
    }
}

/// KUDO's `UnwrapParamValue`: the template value of a stored parameter text (`None` when
/// unset): a string as is; an array or map decoded from YAML (a missing or `null` array
/// is an empty list, a missing map is nil).
pub fn unwrap_param(raw: Option<&str>, kind: ParamKind) -> Result<Value, YamlError> {
    let text = raw.unwrap_or_default();
    match kind {
        ParamKind::String => Ok(Value::from(text)),
        ParamKind::Array => crate::yaml::read(text, Target::List),
        ParamKind::Map => crate::yaml::read(text, Target::Any),
    }
}

/// The variables a KUDO template sees.
#[derive(Clone, Debug, Default)]
pub struct Variables {
    /// `.OperatorName`.
    pub operator_name: String,
    /// `.Name`: the instance's name.
    pub name: String,
    /// `.Namespace`: the instance's namespace.
    pub namespace: String,
    /// `.AppVersion`.
    pub app_version: String,
    /// `.OperatorVersion`.
    pub operator_version: String,
    /// `.PlanName`.
    pub plan_name: String,
    /// `.PhaseName`.
    pub phase_name: String,
    /// `.StepName`.
    pub step_name: String,
    /// `.Params`: parameter name → value (see [`unwrap_param`]).
    pub params: BTreeMap<String, Value>,
    /// `.Pipes`: pipe key → the name of the artifact (ConfigMap or Secret) holding it.
    pub pipes: BTreeMap<String, String>,
}

impl Variables {
    /// The data map a template executes with.
    pub fn to_value(&self) -> Value {
        let s = |x: &String| Value::from(x.as_str());
        let pipes = self
            .pipes
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        Value::map(BTreeMap::from([
            ("OperatorName".to_string(), s(&self.operator_name)),
            ("Name".to_string(), s(&self.name)),
            ("Namespace".to_string(), s(&self.namespace)),
            ("AppVersion".to_string(), s(&self.app_version)),
            ("OperatorVersion".to_string(), s(&self.operator_version)),
            ("PlanName".to_string(), s(&self.plan_name)),
            ("PhaseName".to_string(), s(&self.phase_name)),
            ("StepName".to_string(), s(&self.step_name)),
            ("Params".to_string(), Value::map(self.params.clone())),
            ("Pipes".to_string(), Value::map(pipes)),
        ]))
    }
}

/// KUDO's template engine: its function map, ready to render templates.
///
/// ```
/// use opkit_template::kudo::{Renderer, Variables};
/// let r = Renderer::new();
/// let vars = Variables { name: "inst".into(), ..Default::default() };
/// assert_eq!(r.render("a.yaml", "name: {{ .Name | upper }}", &vars).unwrap(), "name: INST");
/// let err = r.render("a.yaml", "{{ .Params.MISSING }}", &vars).unwrap_err();
/// assert!(err.to_string().contains(r#"map has no entry for key "MISSING""#));
/// ```
#[derive(Clone)]
pub struct Renderer {
    funcs: BTreeMap<String, Function>,
    max_steps: Option<u64>,
    max_output: Option<usize>,
}

impl Default for Renderer {
    fn default() -> Self {
        Renderer::new()
    }
}

impl Renderer {
    /// An engine with KUDO's function map.
    pub fn new() -> Renderer {
        let mut funcs = crate::sprig::functions();
        for name in REMOVED {
            funcs.remove(*name);
        }
        for name in CAST_1_3_FUNCTIONS {
            if let Some(f) = funcs.remove(*name) {
                funcs.insert(name.to_string(), with_cast_1_3(f));
            }
        }
        funcs.insert(
            "toYaml".to_string(),
            Function::new(&[Any], |a| {
                crate::yaml::marshal_go(&a[0])
                    .map(Value::from)
                    .map_err(|e| FuncError::new(e.to_string()))
            }),
        );
        Renderer {
            funcs,
            max_steps: None,
            max_output: None,
        }
    }

    /// Bounds each render's work (template nodes visited) and output, as
    /// [`Templates::set_max_steps`] and [`Templates::set_max_output`] do; KUDO has no bounds
    /// (the default), but a controller rendering packages it did not write needs them.
    pub fn set_bounds(&mut self, max_steps: Option<u64>, max_output: Option<usize>) -> &mut Self {
        self.max_steps = max_steps;
        self.max_output = max_output;
        self
    }

    /// Whether a function is in KUDO's map.
    pub fn has_function(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// Renders template `name` (its text `text`) with `vars`, as KUDO's `Engine.Render`.
    pub fn render(&self, name: &str, text: &str, vars: &Variables) -> Result<String, RenderError> {
        let mut t = Templates::new("gotpl");
        t.set_missing_key(MissingKey::Error)
            .set_max_steps(self.max_steps)
            .set_max_output(self.max_output);
        t.add_funcs(self.funcs.clone());
        t.parse(name, text).map_err(RenderError::Parse)?;
        t.execute(name, &vars.to_value())
            .map_err(RenderError::Render)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        crate::yaml::from_yaml(text).expect("test YAML reads")
    }

    #[test]
    fn string_parameters_are_their_default_printed_with_percent_v() {
        let wrap = |v: Value| wrap_param(&v, ParamKind::String).expect("wraps");
        assert_eq!(wrap(yaml("1000000")).as_deref(), Some("1e+06"));
        assert_eq!(wrap(yaml("3")).as_deref(), Some("3"));
        assert_eq!(wrap(yaml("true")).as_deref(), Some("true"));
        assert_eq!(wrap(yaml("[1, a]")).as_deref(), Some("[1 a]"));
        assert_eq!(wrap(Value::Nil), None);
        let v = unwrap_param(None, ParamKind::String).expect("unwraps");
        assert_eq!(v.as_str(), Some(""));
    }

    #[test]
    fn array_and_map_parameters_round_trip_through_yaml() {
        let list = yaml("[{name: a, port: 80}, yes]");
        let text = wrap_param(&list, ParamKind::Array).expect("wraps");
        assert_eq!(text.as_deref(), Some("- name: a\n  port: 80\n- true\n"));
        let back = unwrap_param(text.as_deref(), ParamKind::Array).expect("unwraps");
        assert_eq!(back.to_string(), "[map[name:a port:80] true]");
        let none = unwrap_param(Some("null\n"), ParamKind::Array).expect("unwraps");
        assert_eq!(none.to_string(), "[]");
        assert!(
            unwrap_param(None, ParamKind::Map)
                .expect("unwraps")
                .is_nil()
        );
        let err = unwrap_param(Some("a: 1"), ParamKind::Array).expect_err("not a list");
        assert!(err.to_string().contains("cannot unmarshal object"), "{err}");
    }

    #[test]
    fn to_yaml_does_not_fold_long_strings_as_go_yaml_2_3_did() {
        let r = Renderer::new();
        let words = "word ".repeat(30);
        let vars = Variables {
            params: BTreeMap::from([("W".to_string(), Value::from(words.trim()))]),
            ..Default::default()
        };
        let out = r
            .render("t", "{{ toYaml .Params }}", &vars)
            .expect("renders");
        assert_eq!(out, format!("W: {}\n", words.trim()));
    }

    #[test]
    fn numbers_convert_as_sprig_3_2_3_with_cast_1_3_does() {
        let r = Renderer::new();
        let vars = Variables::default();
        let out = r
            .render(
                "t",
                r#"{{ int "3.0" }} {{ int64 "3.00" }} {{ add "1.0" 2 }} {{ int "3" }} {{ int "0x1F" }} {{ int "3.5" }} {{ max "5.0" 1 }} {{ slice (list 1 2 3) "1.0" }}"#,
                &vars,
            )
            .expect("renders");
        assert_eq!(out, "0 0 2 3 31 0 1 [1 2 3]");
        assert_eq!(crate::sprig::trim_zero_decimal("10.00"), "10");
        assert_eq!(crate::sprig::trim_zero_decimal("10.50"), "10.50");
        assert_eq!(crate::sprig::trim_zero_decimal("100"), "100");
    }

    #[test]
    fn missing_keys_and_removed_functions_fail_with_kudo_wording() {
        let r = Renderer::new();
        let vars = Variables::default();
        let err = r.render("t.yaml", "{{ .Nope }}", &vars).unwrap_err();
        assert_eq!(
            err.to_string(),
            "error rendering template: template: t.yaml:1:3: executing \"t.yaml\" at <.Nope>: \
             map has no entry for key \"Nope\""
        );
        for f in REMOVED {
            assert!(!r.has_function(f), "{f}");
        }
        let err = r.render("t.yaml", "{{ env \"HOME\" }}", &vars).unwrap_err();
        assert!(
            err.to_string().starts_with("error parsing template: "),
            "{err}"
        );
        assert!(r.has_function("toYaml") && r.has_function("sha256sum"));
    }
}
