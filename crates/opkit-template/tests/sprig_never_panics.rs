//! Property test: every Sprig function, called with any mix of argument kinds and counts,
//! gives output or an error — never a panic — and huge requests fail instead of allocating.

use opkit_template::{Templates, Value};
use proptest::prelude::*;

/// Literal arguments of every kind Sprig meets, including edge values.
const ARGS: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "7",
    "-99999",
    "99999",
    "9223372036854775807",
    "1.5",
    "-0.5",
    "true",
    "false",
    "nil",
    "\"\"",
    "\"a,b\"",
    "\"é🙂x\"",
    "\"  a b \"",
    "\"1.2.3\"",
    "\">=1.0 || <0.1-0\"",
    "\"(\"",
    "\"a*\"",
    "\"aGk=\"",
    "\"$HOME ${x} $\"",
    "(list)",
    "(list 1 \"x\" nil 2.5)",
    "(dict)",
    "(dict \"a\" 1 \"b\" (dict \"c\" 2))",
    "(semver \"1.0.0\")",
    "(semver \"1.0.0\").IncMajor",
    "now",
    "(toDate \"2006\" \"2020\")",
];

/// Every Sprig function but `getHostByName`, which would send random names to the
/// system's DNS resolver (its edges are among the helm-checked cases in `sprig_helm.rs`).
fn sprig_names() -> Vec<String> {
    opkit_template::sprig::functions()
        .into_keys()
        .filter(|n| n != "getHostByName")
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn sprig_calls_give_output_or_error(
        f in 0usize..1000,
        args in prop::collection::vec(0usize..ARGS.len(), 0..5),
        piped in any::<bool>(),
    ) {
        let names = sprig_names();
        let name = &names[f % names.len()];
        let args: Vec<&str> = args.iter().map(|i| ARGS[*i]).collect();
        let text = match (piped, args.split_last()) {
            (true, Some((last, rest))) => format!("{{{{ {last} | {name} {} }}}}", rest.join(" ")),
            _ => format!("{{{{ {name} {} }}}}", args.join(" ")),
        };
        let mut t = Templates::new("t");
        t.add_funcs(opkit_template::sprig::functions());
        t.set_max_output(Some(1 << 20));
        if t.parse("t", &text).is_ok() {
            let _ = t.execute("t", &Value::Nil);
        }
    }
}

#[test]
fn huge_requests_fail_instead_of_allocating() {
    let mut t = Templates::new("t");
    t.add_funcs(opkit_template::sprig::functions());
    for text in [
        r#"{{ repeat 9000000000 "xy" }}"#,
        r#"{{ randAlphaNum 9000000000 }}"#,
        r#"{{ randBytes 9000000000 }}"#,
        r#"{{ until 9000000000 }}"#,
        r#"{{ seq 9000000000 }}"#,
        r#"{{ indent 9000000000 "x" }}"#,
    ] {
        t.parse("t", text).expect("parses");
        let err = t.execute("t", &Value::Nil).expect_err(text).to_string();
        assert!(err.contains("exceeds the"), "{text}: {err}");
    }
}

#[test]
fn a_map_that_holds_itself_gives_output_or_error() {
    for body in [
        "{{ $d }}",
        "{{ toJson $d }}",
        "{{ deepCopy $d | len }}",
        "{{ deepEqual $d $d }}",
        "{{ merge (dict \"d\" (dict)) $d | len }}",
        "{{ printf \"%#v\" $d }}",
    ] {
        let text = format!("{{{{ $d := dict }}}}{{{{ $_ := set $d \"d\" $d }}}}{body}");
        let mut t = Templates::new("t");
        t.add_funcs(opkit_template::sprig::functions());
        t.set_max_output(Some(1 << 20));
        t.parse("t", &text).expect("parses");
        let _ = t.execute("t", &Value::Nil);
    }
}
