//! Targets for the data formats charts read and write (`opkit_template::yaml` and Helm's
//! format functions): YAML, JSON and TOML text from anywhere (values files, `fromYaml` of a
//! value, manifests) is read into data or refused, and what is written reads back.
//!
//! Values files and strings passed to `fromYaml`/`fromJson`/`fromToml` are user input; the
//! readers must refuse bad text with Go's error texts and never panic, and the writers must
//! write any data they read so that reading it again gives the same data.

use std::collections::BTreeMap;

use opkit_template::yaml::{YamlError, from_yaml, from_yaml_array, from_yaml_map, to_yaml};
use opkit_template::{Function, Value};

use crate::input::Input;

/// Pieces of YAML syntax: indicators, anchors and aliases, tags, block scalars, YAML 1.1
/// words and numbers, flow collections.
pub const YAML_TOKENS: &[&str] = &[
    "a",
    "b",
    ":",
    ": ",
    " ",
    "  ",
    "\n",
    "- ",
    "-",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&x ",
    "*x",
    "&y ",
    "*y",
    "<<: ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!binary ",
    "!!map ",
    "!!seq ",
    "!!null ",
    "!t ",
    "'",
    "\"",
    "\\",
    "|",
    "|-",
    ">",
    ">+",
    "#",
    "---\n",
    "...\n",
    "? ",
    "\t",
    "~",
    "1",
    "0x1F",
    "0o17",
    "017",
    "1e3",
    ".inf",
    "-.nan",
    "1:20",
    "1_000",
    "yes",
    "on",
    "Off",
    "null",
    "2001-12-14",
    "é",
    "\u{85}",
    "\u{feff}",
    "%YAML 1.1\n",
    "=",
];

/// Pieces of JSON and TOML syntax.
pub const DOC_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"a\"",
    "\"b\"",
    "\"\\u00e9\"",
    "\"\\ud800\"",
    "\"",
    "\\",
    "1",
    "-0",
    "1e999",
    "1.5",
    "9223372036854775808",
    "true",
    "null",
    " ",
    "\n",
    "a",
    "=",
    "a = 1\n",
    "[t]\n",
    "[[t]]\n",
    "[t.u]\n",
    "a.b = 2\n",
    "x = [1, \"s\"]\n",
    "d = 1979-05-27T07:32:00Z\n",
    "i = { k = 1 }\n",
    "'''",
    "\"\"\"",
    "#",
    "é",
];

/// YAML target from raw bytes: the text is raw (lossy UTF-8) or a token string.
pub fn yaml(data: &[u8]) {
    let mut input = Input::new(data);
    let text = if input.flag() {
        input.tokens(YAML_TOKENS, 40)
    } else {
        String::from_utf8_lossy(input.rest()).into_owned()
    };
    yaml_str(&text);
}

/// YAML properties for one text: reading it gives data or an error in `sigs.k8s.io/yaml`'s
/// form; data that reads also reads as a map (or a list) exactly when it is one (or null);
/// data read writes back as YAML (unless it holds a NaN or infinity, which JSON cannot
/// hold), that YAML reads back to the same data, and writing that gives the same YAML.
pub fn yaml_str(text: &str) {
    let value = match from_yaml(text) {
        Ok(v) => v,
        Err(e) => {
            assert!(
                matches!(e, YamlError::Convert(_)),
                "{text:?}: reading into interface{{}} failed with {e:?}"
            );
            let _ = from_yaml_map(text).expect_err("reads as a map but not as data");
            let _ = from_yaml_array(text).expect_err("reads as a list but not as data");
            return;
        }
    };
    let as_map = from_yaml_map(text);
    let as_list = from_yaml_array(text);
    match &value {
        Value::Map(_) => assert_eq!(
            go_json(as_map.as_ref().ok()),
            go_json(Some(&value)),
            "{text:?}"
        ),
        Value::List(_) => assert_eq!(
            go_json(as_list.as_ref().ok()),
            go_json(Some(&value)),
            "{text:?}"
        ),
        Value::Nil => assert!(as_map.is_ok() && as_list.is_ok(), "{text:?}: null document"),
        _ => assert!(as_map.is_err() && as_list.is_err(), "{text:?}: a scalar"),
    }
    let written = match to_yaml(&value) {
        Ok(w) => w,
        Err(YamlError::Marshal(e)) => {
            assert!(e.contains("unsupported value"), "{text:?}: {e}");
            return;
        }
        Err(e) => panic!("{text:?}: data read from YAML does not write: {e}"),
    };
    let back = from_yaml(&written)
        .unwrap_or_else(|e| panic!("{text:?} wrote {written:?}, which does not read: {e}"));
    assert_eq!(
        go_json(Some(&back)),
        go_json(Some(&value)),
        "{text:?} → {written:?} reads back differently"
    );
    assert_eq!(
        to_yaml(&back).ok().as_deref(),
        Some(written.as_str()),
        "{text:?}: writing is not a fixed point"
    );
}

/// Go's JSON of data (`mustToJson`), the form data is compared in; `None` when absent or
/// not encodable.
pub(crate) fn go_json(v: Option<&Value>) -> Option<String> {
    let v = v?;
    helm_function("mustToJson")
        .call(std::slice::from_ref(v))
        .ok()
        .and_then(|j| j.as_str().map(str::to_owned))
}

/// One of Helm's format functions.
fn helm_function(name: &str) -> Function {
    let mut funcs: BTreeMap<String, Function> = opkit_template::formats::functions();
    match funcs.remove(name) {
        Some(f) => f,
        None => panic!("Helm's format functions lack {name}"),
    }
}

/// JSON and TOML target from raw bytes: a token string or raw text.
pub fn json_toml(data: &[u8]) {
    let mut input = Input::new(data);
    let text = if input.flag() {
        input.tokens(DOC_TOKENS, 32)
    } else {
        String::from_utf8_lossy(input.rest()).into_owned()
    };
    json_toml_str(&text);
}

/// JSON and TOML properties for one text: `fromJson`, `fromJsonArray` and `fromToml` give
/// data or Helm's in-band error (a map with an `Error` key, a one-element list); a map
/// `fromJson` read writes with `mustToJson` to JSON that reads back to the same text; a
/// table `fromToml` read writes with `toToml` to text whose reading writes the same again.
pub fn json_toml_str(text: &str) {
    let arg = [Value::from(text)];
    let from_json = helm_function("fromJson")
        .call(&arg)
        .expect("fromJson is total");
    assert!(
        matches!(from_json, Value::Map(_)),
        "{text:?}: fromJson gave {from_json:?}"
    );
    let _ = helm_function("fromJsonArray")
        .call(&arg)
        .expect("fromJsonArray is total");
    let is_error = |v: &Value| matches!(v, Value::Map(m) if m.contains_key("Error"));
    if let Some(encoded) = go_json(Some(&from_json)).filter(|_| !is_error(&from_json)) {
        let again = helm_function("fromJson")
            .call(&[Value::from(encoded.as_str())])
            .expect("fromJson is total");
        assert_eq!(
            go_json(Some(&again)),
            Some(encoded.clone()),
            "{text:?} → {encoded:?} reads back differently"
        );
    }
    let from_toml = helm_function("fromToml")
        .call(&arg)
        .expect("fromToml is total");
    if is_error(&from_toml) {
        return;
    }
    let to_toml = helm_function("toToml");
    let written = to_toml.call(&[from_toml]).expect("toToml is total");
    let reread = helm_function("fromToml")
        .call(std::slice::from_ref(&written))
        .expect("fromToml is total");
    assert!(
        !is_error(&reread),
        "{text:?}: toToml wrote {written:?}, which does not read: {reread:?}"
    );
    let rewritten = to_toml.call(&[reread]).expect("toToml is total");
    assert_eq!(
        rewritten.as_str(),
        written.as_str(),
        "{text:?}: TOML writing is not a fixed point"
    );
}
