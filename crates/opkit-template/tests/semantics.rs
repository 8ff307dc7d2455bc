//! Behaviour the Go corpus does not cover: `missingkey` modes, number kinds, `printf`
//! through templates, shared `define`s, host objects with methods, and the recursion bound.
//! Expected texts are Go's (checked against Go's `text/template` source and behaviour).

use std::collections::BTreeMap;
use std::sync::Arc;

use opkit_template::{
    Error, FuncError, Function, Member, MissingKey, Object, ParamType, Templates, Value,
};
use serde_json::json;

fn render(t: &str, data: serde_json::Value) -> Result<String, Error> {
    render_with(Templates::new("test"), t, data)
}

fn render_with(mut set: Templates, t: &str, data: serde_json::Value) -> Result<String, Error> {
    set.parse("t", t)?;
    set.execute("t", &Value::from(data))
}

fn err_text(r: Result<String, Error>) -> String {
    match r {
        Ok(out) => panic!("expected an error, got output {out:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_key_default_prints_no_value_and_nested_missing_is_nil() {
    assert_eq!(
        render("{{.a}}|{{.a.b}}", json!({})).unwrap(),
        "<no value>|<no value>"
    );
}

#[test]
fn missing_key_zero_fails_on_a_field_of_the_zero_value_like_helm() {
    let mut set = Templates::new("test");
    set.option("missingkey=zero").unwrap();
    assert_eq!(
        render_with(set.clone(), "{{.a}}", json!({})).unwrap(),
        "<no value>"
    );
    assert_eq!(
        err_text(render_with(set, "{{.a.b}}", json!({}))),
        "template: t:1:4: executing \"t\" at <.a.b>: nil pointer evaluating interface {}.b"
    );
}

#[test]
fn missing_key_error_names_the_key() {
    let mut set = Templates::new("test");
    set.set_missing_key(MissingKey::Error);
    assert_eq!(
        err_text(render_with(set, "x{{.a}}", json!({"b": 1}))),
        "template: t:1:3: executing \"t\" at <.a>: map has no entry for key \"a\""
    );
}

#[test]
fn unknown_option_is_an_error() {
    let mut set = Templates::new("test");
    assert_eq!(
        set.option("missingkey=maybe").err().map(|e| e.to_string()),
        Some("unrecognized option: missingkey=maybe".to_string())
    );
}

#[test]
fn field_of_a_null_value_fails_but_field_of_a_missing_one_does_not() {
    assert_eq!(
        err_text(render("{{.a.b}}", json!({"a": null}))),
        "template: t:1:4: executing \"t\" at <.a.b>: nil pointer evaluating interface {}.b"
    );
    assert_eq!(
        render("{{range .l}}{{.x}}{{end}}", json!({"l": [{"x": 1}]})).unwrap(),
        "1"
    );
}

#[test]
fn field_of_a_map_entry_names_the_interface_type_like_go() {
    assert_eq!(
        err_text(render("{{.a.b}}", json!({"a": "str"}))),
        "template: t:1:4: executing \"t\" at <.a.b>: can't evaluate field b in type interface {}"
    );
    assert_eq!(
        err_text(render("{{.b}}", json!("str"))),
        "template: t:1:2: executing \"t\" at <.b>: can't evaluate field b in type string"
    );
    assert_eq!(
        err_text(render("{{range .l}}{{.b}}{{end}}", json!({"l": [1]}))),
        "template: t:1:14: executing \"t\" at <.b>: can't evaluate field b in type interface {}"
    );
}

#[test]
fn json_numbers_are_float64_and_literals_are_int() {
    assert_eq!(
        render(
            "{{.n}} {{.f}} {{.big}} {{printf \"%T %T\" .n 3}}",
            json!({"n": 1000000, "f": 3.5, "big": 1e21})
        )
        .unwrap(),
        "1e+06 3.5 1e+21 float64 int"
    );
    assert_eq!(
        err_text(render("{{if eq .n 3}}x{{end}}", json!({"n": 3}))),
        "template: t:1:5: executing \"t\" at <eq .n 3>: error calling eq: incompatible types for comparison"
    );
    assert_eq!(
        render("{{eq .n 3.0}} {{lt 1 2}} {{eq 1 2 1}}", json!({"n": 3})).unwrap(),
        "true true true"
    );
}

#[test]
fn int64_values_compare_with_ints_and_print_their_type() {
    let mut set = Templates::new("test");
    set.parse("t", "{{eq . 5}} {{printf \"%T %d\" . .}}")
        .unwrap();
    assert_eq!(set.execute("t", &Value::Int64(5)).unwrap(), "true int64 5");
}

#[test]
fn printf_through_templates_follows_go_fmt() {
    assert_eq!(
        render(
            r#"{{printf "%5.2f|%-4s|%03d|%q|%v|%x" 3.14159 "ab" 7 "hi" .m "hi"}}"#,
            json!({"m": {"b": 2, "a": [1, "x", null]}})
        )
        .unwrap(),
        r#" 3.14|ab  |007|"hi"|map[a:[1 x <nil>] b:2]|6869"#
    );
    assert_eq!(
        render(r#"{{printf "%d" "x"}}"#, json!(null)).unwrap(),
        "%!d(string=x)"
    );
    assert_eq!(
        render(r#"{{printf "%s" 1 2}}"#, json!(null)).unwrap(),
        "%!s(int=1)%!(EXTRA int=2)"
    );
}

#[test]
fn and_or_return_the_deciding_value_and_short_circuit() {
    let mut set = Templates::new("test");
    set.add_func("boom", Function::new(&[], |_| Err(FuncError::new("boom"))));
    assert_eq!(
        render_with(
            set,
            r#"{{or .a "dflt"}} {{and .b (boom)}} {{or 0 "" .c}}"#,
            json!({"b": 0, "c": [1]})
        )
        .unwrap(),
        "dflt 0 [1]"
    );
}

#[test]
fn whitespace_trimming_and_comments() {
    assert_eq!(
        render(
            "a  {{- /* c */ -}}  b {{- 1 }} \n{{- 2 -}}\n c",
            json!(null)
        )
        .unwrap(),
        "ab12c"
    );
}

#[test]
fn variables_scope_to_their_block_and_assignments_reach_outer_ones() {
    let t = "{{$x := 1}}{{range .l}}{{$x = .}}{{$y := .}}{{end}}{{$x}}";
    assert_eq!(render(t, json!({"l": [1, 2]})).unwrap(), "2");
    assert_eq!(
        err_text(render("{{range .l}}{{$y := .}}{{end}}{{$y}}", json!({}))),
        "template: t:1: undefined variable \"$y\""
    );
}

#[test]
fn range_over_map_is_sorted_and_supports_break_continue_else() {
    let t = "{{range $k, $v := .m}}{{if eq $k \"c\"}}{{continue}}{{end}}{{if eq $k \"d\"}}{{break}}{{end}}{{$k}}={{$v}};{{end}}|{{range .e}}x{{else}}empty{{end}}";
    assert_eq!(
        render(
            t,
            json!({"m": {"d": 4, "b": 2, "a": 1, "c": 3, "e": 5}, "e": []})
        )
        .unwrap(),
        "a=1;b=2;|empty"
    );
    assert_eq!(
        err_text(render("{{range 5}}{{end}}", json!(null))),
        "template: t:1:8: executing \"t\" at <5>: range can't iterate over 5"
    );
}

#[test]
fn else_with_chains_like_newer_go() {
    assert_eq!(
        render(
            "{{with .a}}A{{else with .b}}{{.}}{{else}}none{{end}}",
            json!({"b": "B"})
        )
        .unwrap(),
        "B"
    );
}

#[test]
fn defines_are_shared_across_files_and_later_ones_win() {
    let mut set = Templates::new("gotpl");
    set.parse("_helpers.tpl", r#"{{define "name"}}first{{end}}"#)
        .unwrap();
    set.parse("other.tpl", r#"{{define "name"}}second{{end}}"#)
        .unwrap();
    set.parse("empty.tpl", r#"{{define "name"}}{{end}}"#)
        .unwrap();
    set.parse(
        "main.yaml",
        r#"name: {{template "name" .}}{{block "b" .}} block{{end}}"#,
    )
    .unwrap();
    assert_eq!(
        set.execute("main.yaml", &Value::Nil).unwrap(),
        "name: second block"
    );
    assert_eq!(set.execute("_helpers.tpl", &Value::Nil).unwrap(), "");
    assert_eq!(
        set.execute("nope", &Value::Nil).unwrap_err().to_string(),
        "template: no template \"nope\" associated with template \"gotpl\""
    );
    let dup = set.parse("dup", r#"{{define "x"}}1{{end}}{{define "x"}}2{{end}}"#);
    assert_eq!(
        dup.err().map(|e| e.to_string()),
        Some("template: dup:1: template: multiple definition of template \"x\"".to_string())
    );
}

#[test]
fn parse_errors_use_go_texts() {
    for (t, want) in [
        ("{{if}}", "template: t:1: missing value for if"),
        ("{{.a", "template: t:1: unclosed action"),
        ("{{end}}", "template: t:1: unexpected {{end}}"),
        ("{{range .x}}", "template: t:1: unexpected EOF"),
        ("{{nope 1}}", "template: t:1: function \"nope\" not defined"),
        ("{{break}}", "template: t:1: {{break}} outside {{range}}"),
        ("a\n{{\"x}}", "template: t:2: unterminated quoted string"),
        (
            "{{3 | 4}}",
            "template: t:1: non executable command in pipeline stage 2",
        ),
        ("{{1.a}}", "template: t:1: bad number syntax: \"1.a\""),
    ] {
        assert_eq!(err_text(render(t, json!(null))), want, "{t}");
    }
}

#[test]
fn exec_errors_report_line_and_column() {
    assert_eq!(
        err_text(render("line1\n  {{index .l 5}}", json!({"l": [1]}))),
        "template: t:2:4: executing \"t\" at <index .l 5>: error calling index: index out of range: 5"
    );
}

/// A host object like Helm's `.Capabilities`, whose `APIVersions` is a list with a `Has` method.
struct Caps;
struct ApiVersions(Vec<&'static str>);

impl Object for Caps {
    fn type_name(&self) -> String {
        "*chartutil.Capabilities".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "APIVersions" => Some(Member::Field(Value::Object(Arc::new(ApiVersions(vec![
                "v1", "apps/v1",
            ]))))),
            "KubeVersion" => Some(Member::Field(Value::map(BTreeMap::from([(
                "Version".to_string(),
                Value::from("v1.35.0"),
            )])))),
            _ => None,
        }
    }
    fn format(&self) -> String {
        "&{...}".into()
    }
}

impl Object for ApiVersions {
    fn type_name(&self) -> String {
        "chartutil.VersionSet".into()
    }
    fn member(&self, name: &str) -> Option<Member> {
        let set = self.0.clone();
        (name == "Has").then(|| {
            Member::Method(Function::new(&[ParamType::String], move |a| {
                Ok(Value::Bool(
                    set.contains(&a[0].as_str().unwrap_or_default()),
                ))
            }))
        })
    }
    fn format(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn underlying(&self) -> Option<Value> {
        Some(Value::list(
            self.0.iter().map(|s| Value::from(*s)).collect(),
        ))
    }
}

#[test]
fn objects_expose_fields_and_methods() {
    let mut set = Templates::new("test");
    set.parse(
        "t",
        r#"{{.C.APIVersions.Has "apps/v1"}} {{.C.APIVersions.Has "x/v1"}} {{.C.KubeVersion.Version}} {{len .C.APIVersions}} {{.C.APIVersions}}"#,
    )
    .unwrap();
    let data = Value::map(BTreeMap::from([(
        "C".to_string(),
        Value::Object(Arc::new(Caps)),
    )]));
    assert_eq!(
        set.execute("t", &data).unwrap(),
        "true false v1.35.0 2 [v1 apps/v1]"
    );
    set.parse("u", "{{.C.Nope}}").unwrap();
    assert_eq!(
        set.execute("u", &data).unwrap_err().to_string(),
        "template: u:1:4: executing \"u\" at <.C.Nope>: can't evaluate field Nope in type interface {}"
    );
    set.parse("w", "{{.Nope}}").unwrap();
    assert_eq!(
        set.execute("w", &Value::Object(Arc::new(Caps)))
            .unwrap_err()
            .to_string(),
        "template: w:1:2: executing \"w\" at <.Nope>: can't evaluate field Nope in type *chartutil.Capabilities"
    );
    set.parse("v", "{{.C.APIVersions.Has 1}}").unwrap();
    assert_eq!(
        set.execute("v", &data).unwrap_err().to_string(),
        "template: v:1:21: executing \"v\" at <1>: expected string; found 1"
    );
}

#[test]
fn typed_function_arguments_are_checked_like_go() {
    let mut set = Templates::new("test");
    set.add_func(
        "upper",
        Function::new(&[ParamType::String], |a| {
            Ok(Value::from(
                a[0].as_str().unwrap_or_default().to_uppercase(),
            ))
        }),
    );
    assert_eq!(
        render_with(set.clone(), "{{.s | upper}}", json!({"s": "ab"})).unwrap(),
        "AB"
    );
    assert_eq!(
        err_text(render_with(set.clone(), "{{.n | upper}}", json!({"n": 1}))),
        "template: t:1:7: executing \"t\" at <upper>: wrong type for value; expected string; got float64"
    );
    assert_eq!(
        err_text(render_with(set, "{{upper .missing}}", json!({}))),
        "template: t:1:8: executing \"t\" at <.missing>: invalid value; expected string"
    );
}

#[test]
fn template_recursion_is_bounded() {
    let mut set = Templates::new("test");
    set.set_max_depth(500);
    set.parse(
        "t",
        r#"{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}"#,
    )
    .unwrap();
    assert_eq!(
        set.execute("t", &Value::Nil).unwrap_err().to_string(),
        "template: t:1:25: executing \"r\" at <{{template \"r\" .}}>: exceeded maximum template depth (500)"
    );
}

#[test]
fn infinite_recursion_stops_at_go_depth_without_overflowing_the_stack() {
    let mut set = Templates::new("test");
    set.parse(
        "t",
        r#"{{define "r"}}{{if true}}{{template "r" .}}{{end}}{{end}}{{template "r" .}}"#,
    )
    .unwrap();
    let err = set.execute("t", &Value::Nil).unwrap_err().to_string();
    assert!(
        err.ends_with("exceeded maximum template depth (100000)"),
        "{err}"
    );
}

#[test]
fn output_can_be_capped() {
    let mut set = Templates::new("test");
    set.set_max_output(Some(10));
    set.parse("t", "{{range .l}}abcd{{end}}").unwrap();
    let data = Value::from(json!({"l": [1, 2, 3, 4]}));
    assert_eq!(
        set.execute("t", &data).unwrap_err().to_string(),
        "template: t:1:12: executing \"t\" at <abcd>: output exceeds 10 bytes"
    );
}

#[test]
fn deep_recursion_through_every_construct_stays_on_the_stack_budget() {
    let mut set = Templates::new("test");
    set.set_max_depth(3000);
    set.parse(
        "t",
        r#"{{define "r"}}{{with .}}{{range $i, $e := .}}{{if (and (or 1 (print (len (slice $e)))) 1)}}{{template "r" $}}{{end}}{{end}}{{end}}{{end}}{{template "r" .}}"#,
    )
    .unwrap();
    let err = set
        .execute("t", &Value::from(json!([1])))
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("exceeded maximum template depth (3000)"),
        "{err}"
    );
}

/// An `include` like Helm's: runs a named template and returns its output.
fn with_include(mut set: Templates) -> Templates {
    set.add_func(
        "include",
        Function::with_context(&[ParamType::String, ParamType::Any], None, |ctx, a| {
            ctx.execute_template(a[0].as_str().unwrap_or_default(), &a[1])
                .map(Value::from)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    set
}

#[test]
fn context_functions_run_other_templates() {
    let mut set = with_include(Templates::new("gotpl"));
    set.parse(
        "h",
        r#"{{define "name"}}{{.n}}-x{{end}}{{define "bad"}}{{.a.b.c}}{{end}}"#,
    )
    .unwrap();
    set.parse("t", r#"{{include "name" . | printf "%q"}}"#)
        .unwrap();
    assert_eq!(
        set.execute("t", &Value::from(json!({"n": "a"}))).unwrap(),
        "\"a-x\""
    );
    set.set_missing_key(MissingKey::Zero);
    set.parse("u", r#"{{include "bad" .}}"#).unwrap();
    assert_eq!(
        set.execute("u", &Value::from(json!({})))
            .unwrap_err()
            .to_string(),
        "template: u:1:2: executing \"u\" at <include \"bad\" .>: error calling include: template: h:1:52: executing \"bad\" at <.a.b.c>: nil pointer evaluating interface {}.b"
    );
}

#[test]
fn context_functions_run_freshly_parsed_templates_like_helm_tpl() {
    let mut set = Templates::new("gotpl");
    set.add_func(
        "tpl",
        Function::with_context(&[ParamType::String, ParamType::Any], None, |ctx, a| {
            let mut derived = ctx.templates().clone();
            let name = ctx.template_name().to_string();
            derived
                .parse(&name, a[0].as_str().unwrap_or_default())
                .map_err(|e| FuncError::new(e.to_string()))?;
            ctx.execute(&derived, &name, &a[1])
                .map(Value::from)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    set.parse("h", r#"{{define "x"}}X{{end}}"#).unwrap();
    set.parse("t", r#"{{tpl .s .}}|{{tpl "{{ .v | len }}" .}}"#)
        .unwrap();
    let data = Value::from(json!({"s": "{{template \"x\"}}{{.v}}", "v": "abc"}));
    assert_eq!(set.execute("t", &data).unwrap(), "Xabc|3");
}

#[test]
fn context_functions_cannot_run_outside_a_template() {
    let f = Function::with_context(&[], None, |_, _| Ok(Value::Nil));
    assert_eq!(
        f.call(&[]).unwrap_err().to_string(),
        "this function runs only inside a template execution"
    );
}

#[test]
fn endless_include_recursion_is_bounded() {
    let mut set = with_include(Templates::new("gotpl"));
    set.set_max_depth(1000);
    set.parse(
        "t",
        r#"{{define "a"}}{{include "a" .}}{{end}}{{include "a" .}}"#,
    )
    .unwrap();
    let err = set.execute("t", &Value::Nil).unwrap_err().to_string();
    assert!(
        err.ends_with("exceeded maximum template depth (1000)"),
        "{err}"
    );
}

#[test]
fn parse_all_on_many_threads_builds_the_set_parsing_in_order_builds() {
    // Enough text to be parsed on several threads; later files redefine earlier ones.
    let filler = "x".repeat(40 * 1024);
    let files: Vec<(String, String)> = (0..8)
        .map(|i| {
            (
                format!("f{i}"),
                format!(
                    r#"{filler}{{{{define "shared"}}}}{i}{{{{end}}}}[{{{{template "shared"}}}}]"#
                ),
            )
        })
        .collect();
    let mut in_order = Templates::new("set");
    for (name, text) in &files {
        in_order.parse(name, text).unwrap();
    }
    let mut all = Templates::new("set");
    all.parse_all(files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .unwrap();
    assert_eq!(all.names(), in_order.names());
    for (name, _) in &files {
        let out = all.execute(name, &Value::Nil).unwrap();
        assert_eq!(out, in_order.execute(name, &Value::Nil).unwrap());
        assert!(
            out.ends_with("[7]"),
            "the last definition wins: {}",
            &out[out.len() - 3..]
        );
    }

    // The first broken file in order gives the error; the files before it are in the set.
    let mut broken = files.clone();
    broken[5].1.push_str("{{ end }}");
    broken[6].1.push_str("{{ if }}");
    let mut set = Templates::new("set");
    let (at, e) = set
        .parse_all(broken.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .unwrap_err();
    assert_eq!(at, 5);
    assert!(e.to_string().contains("f5"), "{e}");
    assert!(set.contains("f4") && !set.contains("f5") && !set.contains("f6"));
}
