//! Property tests of the YAML layer: whatever `toYaml` writes, `fromYaml` reads back as the
//! same data (the JSON value with numbers as `float64`, as Helm's pair behaves); KUDO's
//! `toYaml` output reads back the same way; and reading arbitrary text gives data or an
//! error, never a panic.

use std::collections::BTreeMap;

use opkit_template::Value;
use opkit_template::yaml::{from_yaml, to_yaml};
use proptest::prelude::*;

/// Characters that exercise every quoting decision of go-yaml's writer. (Not NEL, U+0085:
/// Helm's JSON step leaves it raw and go-yaml folds it into a space, so it does not come
/// back; `nel_in_a_string_folds_into_a_space_as_in_helm` checks that.)
fn nasty_string() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "Z",
        "é",
        "😀",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\u{2028}",
        "\u{a0}",
        "\u{feff}",
        "\u{7}",
        "\u{0}",
        "'",
        "\"",
        "\\",
        ":",
        ": ",
        "#",
        " #",
        "-",
        "- ",
        "?",
        "? ",
        ",",
        "[",
        "]",
        "{",
        "}",
        "&",
        "*",
        "!",
        "|",
        ">",
        "%",
        "@",
        "`",
        "~",
        "yes",
        "no",
        "on",
        "Off",
        "null",
        "true",
        "1",
        "0x1F",
        "1_000",
        ".5",
        "+1",
        "1e3",
        "08",
        "1:20",
        "2001-12-14",
        "---",
        "...",
        "<<",
        "=",
    ]);
    prop::collection::vec(pieces, 0..8).prop_map(|v| v.concat())
}

fn long_string() -> impl Strategy<Value = String> {
    (prop::collection::vec(prop::sample::select(vec!["word", " ", "  ", "x"]), 20..60))
        .prop_map(|v| v.concat())
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<i32>().prop_map(f64::from),
        any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()),
        prop::sample::select(vec![0.0, -0.0, 0.5, 1e6, 1e21, 1e-7, 1e20, 1.5e300]),
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        number().prop_map(|f| serde_json::json!(f)),
        nasty_string().prop_map(serde_json::Value::String),
        long_string().prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(prop_oneof![nasty_string(), long_string()], inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn without_negative_zero(j: serde_json::Value) -> serde_json::Value {
    match j {
        serde_json::Value::Number(n) if n.as_f64() == Some(0.0) => serde_json::json!(0),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(without_negative_zero).collect())
        }
        serde_json::Value::Object(o) => serde_json::Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, without_negative_zero(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Go's `toJson` of a value: the canonical form to compare data by.
fn canonical(v: &Value) -> String {
    let mut t = opkit_template::Templates::new("t");
    t.add_funcs(opkit_template::formats::functions());
    t.parse("t", "{{ mustToJson . }}").expect("parses");
    t.execute("t", v).expect("encodes")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn to_yaml_then_from_yaml_gives_back_the_data(j in json_value()) {
        // Go's JSON writes the float -0 as `-0`, which go-yaml reads as the int 0.
        let v = Value::from_json(&without_negative_zero(j));
        let text = to_yaml(&v).expect("JSON data always writes");
        let back = from_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(canonical(&back), canonical(&v), "yaml was:\n{}", text);
    }

    #[test]
    fn kudo_to_yaml_reads_back_as_the_same_data(j in json_value()) {
        // go-yaml writes the float -0 as `-0`, which it reads as the int 0.
        let v = Value::from_json(&without_negative_zero(j));
        let r = opkit_template::kudo::Renderer::new();
        let vars = opkit_template::kudo::Variables {
            params: BTreeMap::from([("P".to_string(), v.clone())]),
            ..Default::default()
        };
        let text = r.render("t", "{{ toYaml .Params.P }}", &vars).expect("renders");
        let back = from_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(canonical(&back), canonical(&v), "yaml was:\n{}", text);
    }

    #[test]
    fn reading_any_text_gives_data_or_an_error(s in "\\PC{0,200}") {
        let _ = from_yaml(&s);
    }

    #[test]
    fn reading_yaml_like_text_gives_data_or_an_error(
        s in prop::collection::vec(
            prop::sample::select(vec![
                "a", ":", " ", "\n", "- ", "[", "]", "{", "}", ",", "&x ", "*x", "<<: ", "!!str ",
                "!!int ", "!!binary ", "'", "\"", "|", ">", "#", "---\n", "? ", "\t", "~", "1",
            ]),
            0..40,
        )
    ) {
        let _ = from_yaml(&s.concat());
    }
}

#[test]
fn nel_in_a_string_folds_into_a_space_as_in_helm() {
    let v = Value::from("a\u{85}b");
    assert_eq!(to_yaml(&v).expect("writes"), "a b\n");
}

#[test]
fn kudo_to_yaml_keeps_ints_and_the_final_line_break() {
    let r = opkit_template::kudo::Renderer::new();
    let vars = opkit_template::kudo::Variables::default();
    let out = r
        .render(
            "t",
            r#"{{ toYaml (dict "n" 1000000 "f" 1000000.0 "l" (list)) }}"#,
            &vars,
        )
        .expect("renders");
    assert_eq!(out, "f: 1e+06\nl: []\n\"n\": 1000000\n");
}

#[test]
fn self_referencing_anchor_fails_with_go_yaml_text() {
    let err = from_yaml("a: &x [*x]").expect_err("an anchor that contains itself");
    assert_eq!(
        err.to_string(),
        "error converting YAML to JSON: yaml: anchor 'x' value contains itself"
    );
}

#[test]
fn alias_bomb_is_refused() {
    let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        doc.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = from_yaml(&doc).expect_err("a billion laughs");
    assert!(err.to_string().contains("excessive aliasing"), "{err}");
}

#[test]
fn deep_nesting_reads_or_fails_without_overflowing() {
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let err = from_yaml(&deep).expect_err("deeper than go-yaml allows");
    assert!(err.to_string().contains("exceeded max depth"), "{err}");
    let ok = format!("{}1{}", "[".repeat(5_000), "]".repeat(5_000));
    assert!(from_yaml(&ok).is_ok());
}
