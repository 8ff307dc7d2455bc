//! Instance parameters: `-p NAME=VALUE` and `-P file.yaml` as `kubectl kudo` reads them, and
//! their validation against an operator version's parameters — required ones present, no
//! unknown names, values of the declared type (`integer`, `number`, `boolean`, `array`,
//! `map`) and in the `enum`, immutable ones unchanged on update. KUDO checks types only in
//! `package verify`; opkit refuses bad values at install and update, with messages that name
//! the parameter and say what is expected.

use std::collections::BTreeMap;
use std::path::Path;

use crate::api::{Parameter, ParameterType};

/// Why parameters are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParamsError {
    /// `-p`/`-P` input that does not parse (KUDO's messages, joined by `, `).
    #[error("{}", .0.join(", "))]
    Input(Vec<String>),
    /// Values the operator version refuses (one message per problem, joined by `; `).
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Reads `-p` values and `-P` files into one map (`-p` wins), as KUDO's
/// `GetParameterMap`: file values that are lists or maps are stored as YAML text, other
/// scalars as their text; `null` is refused.
pub fn parameter_map(
    raw: &[String],
    files: &[impl AsRef<Path>],
) -> Result<BTreeMap<String, String>, ParamsError> {
    let mut errors = Vec::new();
    let mut from_cli = BTreeMap::new();
    for a in raw {
        match parse_assignment(a) {
            Ok((k, v)) => {
                from_cli.insert(k, v);
            }
            Err(e) => errors.push(e),
        }
    }
    let mut params = BTreeMap::new();
    for path in files {
        let path = path.as_ref();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if let Err(e) = parse_file(&path.display().to_string(), &text, &mut params) {
                    errors.push(e);
                }
            }
            Err(e) => errors.push(format!(
                "error reading from parameter file {}: {e}",
                path.display()
            )),
        }
    }
    if !errors.is_empty() {
        return Err(ParamsError::Input(errors));
    }
    params.extend(from_cli);
    Ok(params)
}

/// One `-p NAME=VALUE`.
fn parse_assignment(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        None => Err(format!("parameter not set: {raw}")),
        Some(("", _)) => Err(format!("parameter name can not be empty: {raw}")),
        Some((_, "")) => Err(format!("parameter value can not be empty: {raw}")),
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
    }
}

/// A `-P` file's values, added to `params` (KUDO's `GetParametersFromFile`).
pub fn parse_file(
    path: &str,
    text: &str,
    params: &mut BTreeMap<String, String>,
) -> Result<(), String> {
    let data: BTreeMap<String, serde_yaml::Value> = match serde_yaml::from_str(text) {
        Ok(Some(d)) => d,
        Ok(None) => BTreeMap::new(),
        Err(e) => {
            return Err(format!(
                "error unmarshalling content of parameter file {path}: {e}"
            ));
        }
    };
    let mut errors = Vec::new();
    for (key, value) in data {
        let kind = match value {
            serde_yaml::Value::Mapping(_) => ParameterType::Map,
            serde_yaml::Value::Sequence(_) => ParameterType::Array,
            _ => ParameterType::String,
        };
        match crate::package::wrap_value(&value, kind) {
            Ok(Some(text)) => {
                params.insert(key, text);
            }
            Ok(None) => errors.push(format!(
                "{key} has a null value (https://yaml.org/spec/1.2/spec.html#id2803362) which \
                 is currently not supported"
            )),
            Err(e) => errors.push(format!("{key}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "errors while unmarshaling following keys of the parameter file {path}: {}",
            errors.join(", ")
        ))
    }
}

/// Whether `value` (stored text) is of type `kind`; the error says what is expected
/// (KUDO's `ValidateParameterValueForType` wording).
pub fn check_type(kind: ParameterType, value: &str) -> Result<(), String> {
    match kind {
        ParameterType::String => Ok(()),
        ParameterType::Integer => value.parse::<i64>().map(drop).map_err(|e| {
            format!("type is \"integer\" but format of {value:?} is invalid: {e} (expected a whole number)")
        }),
        ParameterType::Number => {
            let ok = value.parse::<f64>().is_ok();
            ok.then_some(()).ok_or_else(|| {
                format!("type is \"number\" but format of {value:?} is invalid (expected a number)")
            })
        }
        ParameterType::Boolean => match value {
            "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false"
            | "False" => Ok(()),
            _ => Err(format!(
                "type is \"boolean\" but format of {value:?} is invalid (expected true or false)"
            )),
        },
        ParameterType::Array => match serde_yaml::from_str::<Option<Vec<serde_yaml::Value>>>(value) {
            Ok(_) => Ok(()),
            Err(_) => Err(format!(
                "type is \"array\", but format of {value} is invalid (expected a YAML list)"
            )),
        },
        ParameterType::Map => {
            match serde_yaml::from_str::<Option<BTreeMap<String, serde_yaml::Value>>>(value) {
                Ok(_) => Ok(()),
                Err(_) => Err(format!(
                    "type is \"map\", but format of {value} is invalid (expected a YAML map)"
                )),
            }
        }
    }
}

/// KUDO's `Parameter.ValidateValue`: type and enum of one given value.
fn check_value(p: &Parameter, value: &str) -> Result<(), String> {
    let invalid = |e: String| format!("parameter {:?} has an invalid value {value:?}: {e}", p.name);
    check_type(p.kind(), value).map_err(invalid)?;
    if let Some(allowed) = &p.r#enum
        && !allowed.iter().any(|a| a == value)
    {
        return Err(invalid(format!(
            "value is {value:?}, but only allowed values are [{}]",
            allowed.join(" ")
        )));
    }
    Ok(())
}

/// The type and enum errors of the `values` the operator version defines (one message per
/// bad value, naming the parameter); the manager's plan decisions refuse changes with them.
pub(crate) fn value_errors(
    defined: &[Parameter],
    values: &BTreeMap<String, String>,
) -> Vec<String> {
    defined
        .iter()
        .filter_map(|p| values.get(&p.name).and_then(|v| check_value(p, v).err()))
        .collect()
}

fn unknown(
    defined: &[Parameter],
    given: &BTreeMap<String, String>,
    operator_version: &str,
) -> Vec<String> {
    given
        .keys()
        .filter(|k| !defined.iter().any(|p| &p.name == *k))
        .map(|k| format!("parameter {k:?} is not defined by operator version {operator_version}"))
        .collect()
}

/// Checks the parameters of a new instance: none unknown, every required one without a
/// default given, every value of its type and in its enum.
pub fn validate_install(
    defined: &[Parameter],
    given: &BTreeMap<String, String>,
    operator_version: &str,
) -> Result<(), ParamsError> {
    let mut errors = unknown(defined, given, operator_version);
    let missing: Vec<&str> = defined
        .iter()
        .filter(|p| p.is_required() && !given.contains_key(&p.name))
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        errors.push(format!(
            "missing required parameters during installation: {}",
            missing.join(",")
        ));
    }
    errors.extend(value_errors(defined, given));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ParamsError::Invalid(errors))
    }
}

/// Checks a parameter update of an instance whose parameters are `current`: none unknown,
/// immutable ones unchanged, every new value of its type and in its enum.
pub fn validate_update(
    defined: &[Parameter],
    current: &BTreeMap<String, String>,
    update: &BTreeMap<String, String>,
    operator_version: &str,
) -> Result<(), ParamsError> {
    let mut errors = unknown(defined, update, operator_version);
    for p in defined {
        let Some(new) = update.get(&p.name) else {
            continue;
        };
        let old = current.get(&p.name).or(p.default.as_ref());
        if p.is_immutable() && old != Some(new) {
            errors.push(format!(
                "parameter '{}' is immutable but was changed from '{}' to '{new}'",
                p.name,
                old.map(String::as_str).unwrap_or("<nil>")
            ));
        }
    }
    errors.extend(value_errors(defined, update));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ParamsError::Invalid(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, kind: ParameterType) -> Parameter {
        Parameter {
            name: name.into(),
            required: Some(true),
            value_type: Some(kind),
            ..Parameter::default()
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn cli_assignments_follow_kudo_and_win_over_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.yaml");
        std::fs::write(&file, "A: from-file\nLIST: [1, two]\nMAP: {x: 1}\nN: 3\n").unwrap();
        let got = parameter_map(&["A=cli".to_string(), "B=x=y".to_string()], &[&file]).unwrap();
        assert_eq!(got["A"], "cli");
        assert_eq!(got["B"], "x=y");
        assert_eq!(got["LIST"], "- 1\n- two\n");
        assert_eq!(got["MAP"], "x: 1\n");
        assert_eq!(got["N"], "3");
        let err = parameter_map(&["A".into(), "=v".into(), "K=".into()], &[] as &[&Path])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "parameter not set: A, parameter name can not be empty: =v, parameter value can not \
             be empty: K="
        );
    }

    #[test]
    fn null_values_in_parameter_files_are_refused() {
        let mut params = BTreeMap::new();
        let err = parse_file("p.yaml", "A: ~\n", &mut params).unwrap_err();
        assert!(err.contains("A has a null value"), "{err}");
    }

    #[test]
    fn install_refuses_unknown_missing_and_mistyped_values_naming_the_parameter() {
        let mut count = param("COUNT", ParameterType::Integer);
        count.default = Some("3".into());
        let mut mode = param("MODE", ParameterType::String);
        mode.r#enum = Some(vec!["a".into(), "b".into()]);
        mode.default = Some("a".into());
        let defined = vec![
            count,
            mode,
            param("NEEDED", ParameterType::String),
            param("ON", ParameterType::Boolean),
            param("LIST", ParameterType::Array),
            param("CFG", ParameterType::Map),
            param("RATIO", ParameterType::Number),
        ];
        let ok = map(&[
            ("NEEDED", "x"),
            ("ON", "true"),
            ("LIST", "[1, 2]"),
            ("CFG", "a: 1"),
            ("RATIO", "0.5"),
            ("COUNT", "5"),
            ("MODE", "b"),
        ]);
        validate_install(&defined, &ok, "op-1").unwrap();
        let ParamsError::Invalid(errors) = validate_install(
            &defined,
            &map(&[
                ("COUNT", "three"),
                ("MODE", "c"),
                ("ON", "yes"),
                ("LIST", "a: 1"),
                ("CFG", "[1]"),
                ("RATIO", "x"),
                ("OTHER", "1"),
            ]),
            "op-1",
        )
        .unwrap_err() else {
            panic!("input error")
        };
        let all = errors.join("\n");
        for needle in [
            "parameter \"OTHER\" is not defined by operator version op-1",
            "missing required parameters during installation: NEEDED",
            "parameter \"COUNT\" has an invalid value \"three\": type is \"integer\"",
            "parameter \"MODE\" has an invalid value \"c\": value is \"c\", but only allowed values are [a b]",
            "parameter \"ON\" has an invalid value \"yes\": type is \"boolean\"",
            "parameter \"LIST\" has an invalid value \"a: 1\": type is \"array\"",
            "parameter \"CFG\" has an invalid value \"[1]\": type is \"map\"",
            "parameter \"RATIO\" has an invalid value \"x\": type is \"number\"",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in\n{all}");
        }
    }

    #[test]
    fn update_refuses_changing_an_immutable_parameter() {
        let mut size = param("SIZE", ParameterType::Integer);
        size.immutable = Some(true);
        size.default = Some("1".into());
        let defined = vec![size, param("N", ParameterType::Integer)];
        let current = map(&[]);
        validate_update(&defined, &current, &map(&[("SIZE", "1"), ("N", "2")]), "op").unwrap();
        let err = validate_update(&defined, &current, &map(&[("SIZE", "2")]), "op")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "parameter 'SIZE' is immutable but was changed from '1' to '2'"
        );
        let err = validate_update(&defined, &current, &map(&[("N", "x")]), "op")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("parameter \"N\" has an invalid value \"x\""),
            "{err}"
        );
    }
}
