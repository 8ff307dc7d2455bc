//! `Chart.yaml` (and `requirements.yaml`) read as `sigs.k8s.io/yaml.Unmarshal` reads them into
//! Helm's Go structs: go-yaml v2 typing (`yes` is a bool), a scalar bound for a string field
//! becomes its string form (`version: 1.0` is `"1"`, `appVersion: 1.10` is `"1.1"`), field
//! names match case-insensitively, unknown fields are ignored, and a value of the wrong kind
//! fails with `encoding/json`'s text (`json: cannot unmarshal string into Go struct field
//! Metadata.deprecated of type bool`), the first such error in key order.

use opkit_template::Value;
use opkit_template::yaml::{YamlError, from_yaml};

use crate::chart::Metadata;

/// A Go field type the decoder fills.
enum Shape {
    Str,
    Bool,
    /// `[]string`.
    Strs,
    /// `map[string]string`.
    StrMap,
    /// `[]interface{}`: taken as it is.
    Any,
    /// `[]*T`: a list of structs whose `null` elements are kept as nulls.
    Structs(&'static StructShape),
}

struct StructShape {
    /// The struct's name in Go's errors (`Metadata`).
    name: &'static str,
    /// The type's name in Go's errors (`v2.Maintainer`).
    go_type: &'static str,
    fields: &'static [(&'static str, Shape)],
}

const MAINTAINER: StructShape = StructShape {
    name: "Maintainer",
    go_type: "v2.Maintainer",
    fields: &[
        ("name", Shape::Str),
        ("email", Shape::Str),
        ("url", Shape::Str),
    ],
};

const DEPENDENCY: StructShape = StructShape {
    name: "Dependency",
    go_type: "v2.Dependency",
    fields: &[
        ("name", Shape::Str),
        ("version", Shape::Str),
        ("repository", Shape::Str),
        ("condition", Shape::Str),
        ("tags", Shape::Strs),
        ("enabled", Shape::Bool),
        ("import-values", Shape::Any),
        ("alias", Shape::Str),
    ],
};

const METADATA: StructShape = StructShape {
    name: "Metadata",
    go_type: "v2.Metadata",
    fields: &[
        ("name", Shape::Str),
        ("home", Shape::Str),
        ("sources", Shape::Strs),
        ("version", Shape::Str),
        ("description", Shape::Str),
        ("keywords", Shape::Strs),
        ("maintainers", Shape::Structs(&MAINTAINER)),
        ("icon", Shape::Str),
        ("apiVersion", Shape::Str),
        ("condition", Shape::Str),
        ("tags", Shape::Str),
        ("appVersion", Shape::Str),
        ("deprecated", Shape::Bool),
        ("annotations", Shape::StrMap),
        ("kubeVersion", Shape::Str),
        ("dependencies", Shape::Structs(&DEPENDENCY)),
        ("type", Shape::Str),
    ],
};

/// Helm's `loader.chartBase`, read first to pick the chart loader by `apiVersion`.
const CHART_BASE: StructShape = StructShape {
    name: "chartBase",
    go_type: "loader.chartBase",
    fields: &[("apiVersion", Shape::Str)],
};

/// A decoded `Chart.yaml`, with what Helm's validation later reports about `null` list items.
pub(crate) struct ChartFile {
    pub(crate) metadata: Metadata,
    pub(crate) null_maintainer: bool,
    pub(crate) null_dependency: bool,
}

/// Why a chart file could not be decoded: sigs.k8s.io/yaml's text.
pub(crate) fn yaml_error(e: YamlError) -> String {
    e.to_string()
}

fn decode_error(msg: String) -> String {
    format!("error unmarshaling JSON: while decoding JSON: json: {msg}")
}

/// The `apiVersion` of a `Chart.yaml` (Helm's `chartBase` read).
pub(crate) fn api_version(data: &[u8]) -> Result<String, String> {
    let v = from_yaml(&crate::chart::text(data)).map_err(yaml_error)?;
    let json = decode_struct(&v, &CHART_BASE, "", &mut Nulls::default())?;
    Ok(json
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string())
}

/// Reads `Chart.yaml` into [`Metadata`] (Helm's `yaml.Unmarshal(data, c.Metadata)`); `base`
/// is what an earlier document (for `requirements.yaml`, the chart's metadata) already set.
pub(crate) fn read_metadata(data: &[u8], base: Option<&Metadata>) -> Result<ChartFile, String> {
    let v = from_yaml(&crate::chart::text(data)).map_err(yaml_error)?;
    let mut nulls = Nulls::default();
    let json = decode_struct(&v, &METADATA, "", &mut nulls)?;
    let mut merged = match base {
        Some(b) => serde_json::to_value(b).map_err(|e| e.to_string())?,
        None => serde_json::Value::Object(Default::default()),
    };
    if let (Some(m), serde_json::Value::Object(new)) = (merged.as_object_mut(), json) {
        m.extend(new);
    }
    let metadata = serde_json::from_value(merged).map_err(|e| e.to_string())?;
    Ok(ChartFile {
        metadata,
        null_maintainer: nulls.maintainer,
        null_dependency: nulls.dependency,
    })
}

#[derive(Default)]
struct Nulls {
    maintainer: bool,
    dependency: bool,
}

/// Go's name for a JSON value's kind in `cannot unmarshal KIND`.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::List(_) => "array",
        Value::Map(_) => "object",
        _ => "number",
    }
}

fn type_error(v: &Value, st: &StructShape, path: &str, go_type: &str) -> String {
    if path.is_empty() {
        decode_error(format!(
            "cannot unmarshal {} into Go value of type {go_type}",
            kind(v)
        ))
    } else {
        decode_error(format!(
            "cannot unmarshal {} into Go struct field {}.{path} of type {go_type}",
            kind(v),
            st.name
        ))
    }
}

/// Decodes a map into a struct's fields (JSON with the canonical field names).
fn decode_struct(
    v: &Value,
    st: &StructShape,
    path: &str,
    nulls: &mut Nulls,
) -> Result<serde_json::Value, String> {
    let mut out = serde_json::Map::new();
    let entries = match v {
        Value::Nil => return Ok(serde_json::Value::Object(out)),
        Value::Map(d) => d.entries(),
        other => return Err(type_error(other, st, path, st.go_type)),
    };
    let mut first_err: Option<String> = None;
    // Go decodes the keys in sorted order (sigs.k8s.io/yaml writes JSON from a Go map), a
    // later key overwriting an earlier one of the same field; the first type error wins.
    for (key, val) in entries {
        let field = st
            .fields
            .iter()
            .find(|(n, _)| *n == key)
            .or_else(|| st.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(&key)));
        let Some((name, shape)) = field else { continue };
        let fpath = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        };
        match decode_field(&val, shape, st, &fpath, nulls) {
            Ok(Some(j)) => {
                out.insert(name.to_string(), j);
            }
            Ok(None) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(serde_json::Value::Object(out)),
    }
}

/// A scalar as sigs.k8s.io/yaml turns it into a string for a string field.
fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Int(i) | Value::Int64(i) => Some(i.to_string()),
        Value::Float(f) => Some(float_string(*f)),
        _ => None,
    }
}

/// go-yaml's integers print as `strconv.FormatInt`, its floats as `FormatFloat(f, 'g', -1,
/// 32)`; both arrive here as `float64`, so an integral value is taken for an integer.
fn float_string(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    // A float64 beyond float32's range is an infinity once narrowed, as in Go.
    if f.is_infinite() || (f as f32).is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f.fract() == 0.0 && f.abs() < 1e18 {
        return format!("{}", f as i64);
    }
    // Go's FormatFloat(f, 'g', -1, 32): the shortest float32 digits, with an exponent when
    // it is below -4 or at least 6.
    let e = format!("{:e}", f as f32);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if mant.starts_with('-') { "-" } else { "" };
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    if !(-4..6).contains(&exp) {
        let frac = &digits[1..];
        let dot = if frac.is_empty() {
            String::new()
        } else {
            format!(".{frac}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{}{dot}e{esign}{:02}", &digits[..1], exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = (exp + 1) as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

fn decode_field(
    v: &Value,
    shape: &Shape,
    st: &StructShape,
    path: &str,
    nulls: &mut Nulls,
) -> Result<Option<serde_json::Value>, String> {
    if v.is_nil() {
        return Ok(None);
    }
    let string = |v: &Value| -> Result<serde_json::Value, String> {
        scalar_string(v)
            .map(serde_json::Value::String)
            .ok_or_else(|| type_error(v, st, path, "string"))
    };
    Ok(Some(match shape {
        Shape::Str => string(v)?,
        Shape::Bool => match v {
            Value::Bool(b) => serde_json::Value::Bool(*b),
            other => return Err(type_error(other, st, path, "bool")),
        },
        Shape::Strs => match v {
            Value::List(items) => serde_json::Value::Array(
                items
                    .iter()
                    .map(|i| {
                        if i.is_nil() {
                            Ok(serde_json::Value::String(String::new()))
                        } else {
                            string(i)
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => return Err(type_error(other, st, path, "[]string")),
        },
        Shape::StrMap => match v {
            Value::Map(d) => serde_json::Value::Object(
                d.entries()
                    .into_iter()
                    .map(|(k, i)| {
                        let s = if i.is_nil() {
                            serde_json::Value::String(String::new())
                        } else {
                            string(&i)?
                        };
                        Ok((k, s))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            other => return Err(type_error(other, st, path, "map[string]string")),
        },
        Shape::Any => match v {
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(crate::values::to_json).collect())
            }
            other => return Err(type_error(other, st, path, "[]interface {}")),
        },
        Shape::Structs(inner) => match v {
            Value::List(items) => {
                let mut out = Vec::new();
                for item in items.iter() {
                    if item.is_nil() {
                        if inner.name == "Maintainer" {
                            nulls.maintainer = true;
                        } else {
                            nulls.dependency = true;
                        }
                        continue;
                    }
                    if !matches!(item, Value::Map(_)) {
                        return Err(type_error(item, st, path, inner.go_type));
                    }
                    out.push(decode_struct(item, inner, path, nulls)?);
                }
                serde_json::Value::Array(out)
            }
            other => {
                let star = format!("[]*{}", inner.go_type);
                return Err(type_error(other, st, path, &star));
            }
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Result<Metadata, String> {
        read_metadata(text.as_bytes(), None).map(|c| c.metadata)
    }

    #[test]
    fn scalars_for_string_fields_become_strings_as_sigs_yaml_makes_them() {
        let m =
            md("name: 1\nversion: 1.0\nappVersion: 1.10\ndescription: yes\nkeywords: [1, on]\n")
                .unwrap();
        assert_eq!(m.name, "1");
        assert_eq!(m.version, "1");
        assert_eq!(m.app_version, "1.1");
        assert_eq!(m.description, "true");
        assert_eq!(m.keywords, ["1", "true"]);
    }

    #[test]
    fn field_names_match_case_insensitively_and_unknown_fields_are_ignored() {
        let m = md("Name: x\nAPIVERSION: v2\nunknown: 1\n").unwrap();
        assert_eq!(m.name, "x");
        assert_eq!(m.api_version, "v2");
    }

    #[test]
    fn wrong_kinds_fail_with_encoding_json_texts() {
        let pre = "error unmarshaling JSON: while decoding JSON: json: ";
        assert_eq!(
            md("deprecated: x\n").unwrap_err(),
            format!(
                "{pre}cannot unmarshal string into Go struct field Metadata.deprecated of type bool"
            )
        );
        assert_eq!(
            md("keywords: x\n").unwrap_err(),
            format!(
                "{pre}cannot unmarshal string into Go struct field Metadata.keywords of type []string"
            )
        );
        assert_eq!(
            md("maintainers:\n- name: [1]\n").unwrap_err(),
            format!(
                "{pre}cannot unmarshal array into Go struct field Maintainer.maintainers.name of type string"
            )
        );
        assert_eq!(
            md("maintainers:\n- x\n").unwrap_err(),
            format!(
                "{pre}cannot unmarshal string into Go struct field Metadata.maintainers of type v2.Maintainer"
            )
        );
        assert_eq!(
            md("dependencies:\n- name: a\n  tags: x\n").unwrap_err(),
            format!(
                "{pre}cannot unmarshal string into Go struct field Dependency.dependencies.tags of type []string"
            )
        );
        assert_eq!(
            api_version(b"- a\n").unwrap_err(),
            format!("{pre}cannot unmarshal array into Go value of type loader.chartBase")
        );
    }

    #[test]
    fn null_list_items_are_noted_for_validation() {
        let c = read_metadata(b"maintainers:\n- null\n", None).unwrap();
        assert!(c.null_maintainer);
        assert!(c.metadata.maintainers.is_empty());
    }

    #[test]
    fn floats_print_as_go_formats_float32() {
        for (f, s) in [
            (1.0, "1"),
            (1.1, "1.1"),
            (1e-6, "1e-06"),
            (0.0001, "0.0001"),
            (123456.5, "123456.5"),
            (1234567.5, "1.2345675e+06"),
            (-2.5, "-2.5"),
            (1e300, ".inf"),
            (-1e300, "-.inf"),
            (1e20, "1e+20"),
            (1e-50, "0"),
        ] {
            assert_eq!(float_string(f), s, "{f}");
        }
    }
}
