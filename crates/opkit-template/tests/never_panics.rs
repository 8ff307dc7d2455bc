//! Property tests: any template text, with any of a few data shapes, parses to a tree or a
//! parse error and executes to output or an execution error — never a panic, never a hang
//! (execution work and output are capped; recursion is bounded by the engine itself).

use opkit_template::{Templates, Value};
use proptest::prelude::*;
use serde_json::json;

/// Pieces of template syntax, so that random programs reach deep into the parser and
/// executor rather than stopping at the first bad character.
const FRAGMENTS: &[&str] = &[
    "{{",
    "}}",
    "{{- ",
    " -}}",
    " ",
    "\n",
    "text",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define",
    "template",
    "block",
    "break",
    "continue",
    "\"x\"",
    "`r`",
    "'c'",
    ".",
    ".a",
    ".a.b",
    ".l",
    ".x.y",
    "$",
    "$x",
    "$y",
    "$.a",
    ":=",
    "=",
    ",",
    "|",
    "(",
    ")",
    "1",
    "-2.5",
    "0x1F",
    "1e3",
    "08",
    "nil",
    "true",
    "print",
    "printf",
    "\"%d %s %v %q %5.2f %x %T %!\"",
    "println",
    "len",
    "index",
    "slice",
    "eq",
    "ne",
    "lt",
    "ge",
    "and",
    "or",
    "not",
    "html",
    "js",
    "urlquery",
    "call",
    "/*",
    "*/",
    "{{/* c */}}",
    "{{end}}",
    "{{else}}",
    "{{if .a}}",
    "{{else if .x}}",
    "{{range $i, $e := .l}}",
    "{{range .l}}",
    "{{with .a}}",
    "{{template \"x\" .}}",
    "{{define \"x\"}}",
    "{{block \"x\" .}}",
    "{{$x := .a}}",
    "{{$x = 1}}",
    "{{.l}}",
    "{{break}}",
    "{{continue}}",
    "é",
    "\t",
    "-",
    "}",
    "{",
];

fn data() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Nil),
        Just(Value::from(
            json!({"a": {"b": 1, "c": [1, 2]}, "l": [1, "two", null, {"a": 3}], "x": null})
        )),
        Just(Value::from(json!([1000000, -0.0, "s", true]))),
        Just(Value::from("just a string")),
    ]
}

fn run(text: &str, data: &Value) {
    let mut set = Templates::new("fuzz");
    set.set_max_steps(Some(20_000))
        .set_max_output(Some(1 << 20))
        .set_max_depth(200);
    for opt in ["missingkey=default", "missingkey=zero", "missingkey=error"] {
        set.option(opt).expect("known option");
        if set.parse("t", text).is_ok() {
            let _ = set.execute("t", data);
            let _ = set.execute("x", data);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn random_template_syntax_gives_output_or_error(
        parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40),
        data in data(),
    ) {
        run(&parts.concat(), &data);
    }

    #[test]
    fn arbitrary_text_gives_output_or_error(text in "\\PC{0,60}", data in data()) {
        run(&text, &data);
        run(&format!("{{{{{text}}}}}"), &data);
    }
}

/// Mostly well-formed templates built from the grammar, so that execution (not just the
/// parser) meets every construct.
fn grammar_template() -> impl Strategy<Value = String> {
    let pipe = prop::sample::select(vec![
        ".a",
        ".l",
        ".x",
        ".a.c",
        "$",
        "(len .l)",
        "(eq 1 1)",
        "true",
        ".",
        "(index .l 1)",
        "(slice .l 1)",
        "$.a.b",
        "(or .x .a)",
        "(and .l 0)",
        "(not .x)",
        ".nope.deeper",
    ]);
    let leaf = prop_oneof![
        Just("text ".to_string()),
        Just("\n".to_string()),
        pipe.clone().prop_map(|p| format!("{{{{{p}}}}}")),
        pipe.clone()
            .prop_map(|p| format!("{{{{printf \"%v|%d|%s|%5.1f\" {p} {p} {p} {p}}}}}")),
        pipe.clone()
            .prop_map(|p| format!("{{{{{p} | print | len}}}}")),
        pipe.clone()
            .prop_map(|p| format!("{{{{$v := {p}}}}}{{{{$v}}}}")),
        Just("{{template \"x\" .}}".to_string()),
        Just("{{- 1 -}}".to_string()),
    ];
    leaf.prop_recursive(4, 32, 4, move |inner| {
        let body = prop::collection::vec(inner, 1..4).prop_map(|v| v.concat());
        (pipe.clone(), body.clone(), body, 0..5u8).prop_map(|(p, a, b, kind)| match kind {
            0 => format!("{{{{if {p}}}}}{a}{{{{else}}}}{b}{{{{end}}}}"),
            1 => format!("{{{{range $i, $e := {p}}}}}{a}{{{{if $i}}}}{{{{break}}}}{{{{end}}}}{{{{else}}}}{b}{{{{end}}}}"),
            2 => format!("{{{{with {p}}}}}{a}{{{{else with .a}}}}{b}{{{{end}}}}"),
            3 => format!("{{{{define \"x\"}}}}{a}{{{{end}}}}{b}"),
            _ => format!("{{{{range {p}}}}}{{{{continue}}}}{a}{{{{end}}}}"),
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn well_formed_templates_execute_deterministically(text in grammar_template(), data in data()) {
        let mut set = Templates::new("fuzz");
        set.set_max_steps(Some(50_000)).set_max_output(Some(1 << 20));
        if set.parse("t", &text).is_ok() {
            let first = set.execute("t", &data);
            prop_assert_eq!(first, set.execute("t", &data));
        }
    }
}

#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    let mut set = Templates::new("deep");
    let parens = format!("{{{{{}1{}}}}}", "(".repeat(20_000), ")".repeat(20_000));
    let err = set.parse("p", &parens).expect_err("too deep");
    assert_eq!(
        err.to_string(),
        "template: p:1: max expression depth exceeded"
    );
    let ifs = format!("{}x{}", "{{if 1}}".repeat(20_000), "{{end}}".repeat(20_000));
    assert_eq!(
        set.parse("i", &ifs).expect_err("too deep").to_string(),
        "template: i:1: max expression depth exceeded"
    );
    let ok = format!(
        "{}{{{{{}1{}}}}}{}",
        "{{if 1}}".repeat(9_999),
        "(".repeat(10_000),
        ")".repeat(10_000),
        "{{end}}".repeat(9_999)
    );
    set.parse("ok", &ok)
        .expect("Go's deepest parens inside 9999 nested ifs parse");
    assert_eq!(set.execute("ok", &Value::Nil).expect("and execute"), "1");
}
