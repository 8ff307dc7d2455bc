//! Values as Helm combines them (`pkg/chart/common/util/coalesce.go`, `common/values.go`,
//! `loader.LoadValues`/`MergeMaps`): reading values YAML, coalescing a chart's defaults under
//! the user's values (a user `null` deletes a default, subchart defaults go under the
//! subchart's name, `global` flows down), and the table/path lookups dependency processing
//! uses. Values are opkit-template [`Value`]s whose maps are shared and mutable like Go maps,
//! so the Go algorithms are followed step by step, copies where Helm copies.

use std::collections::BTreeMap;

use opkit_template::{Dict, Value};

use crate::chart::Chart;

/// The key whose table every chart and subchart sees (`.Values.global`).
pub(crate) const GLOBAL_KEY: &str = "global";

/// Why values could not be combined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValuesError {
    /// A subchart's section of the values is not a map (Helm's text, with Go's `%t`).
    #[error("type mismatch on {name}: {shown}")]
    TypeMismatch {
        /// The subchart's name.
        name: String,
        /// The value as Go's `%t` prints it.
        shown: String,
    },
}

/// Collects the warnings Helm logs while combining values (they never fail a render).
#[derive(Debug, Default)]
pub(crate) struct Warnings(pub(crate) Vec<String>);

impl Warnings {
    pub(crate) fn push(&mut self, msg: String) {
        self.0.push(msg);
    }
}

/// An empty map value.
pub(crate) fn empty_map() -> Value {
    Value::map(BTreeMap::new())
}

/// The map inside `v`, when `v` is one (Helm's `istable`).
pub(crate) fn as_table(v: &Value) -> Option<&Dict> {
    match v {
        Value::Map(d) => Some(d),
        _ => None,
    }
}

/// Values as JSON: Go ints stay integers, floats stay floats (for schemas, `import-values`
/// entries and `Chart.lock`).
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Nil => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::List(l) => serde_json::Value::Array(l.iter().map(to_json).collect()),
        Value::Map(d) => serde_json::Value::Object(
            d.entries()
                .into_iter()
                .map(|(k, v)| (k, to_json(&v)))
                .collect(),
        ),
        Value::Object(_) | Value::Func(_) => serde_json::Value::String(v.to_string()),
    }
}

/// A deep copy (Helm's `copystructure.Copy`): maps and lists are new, so changing the copy
/// leaves the original alone.
pub(crate) fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Map(d) => Value::Map(deep_copy_dict(d)),
        Value::List(l) => Value::list(l.iter().map(deep_copy).collect()),
        other => other.clone(),
    }
}

/// A deep copy of a map.
pub(crate) fn deep_copy_dict(d: &Dict) -> Dict {
    // A clone of the sorted map, not a rebuild: no key is compared again.
    let mut entries = d.to_map();
    for v in entries.values_mut() {
        if matches!(v, Value::Map(_) | Value::List(_)) {
            *v = deep_copy(v);
        }
    }
    Dict::new(entries)
}

/// Reads values YAML as Helm's `loader.LoadValues` does: the stream is split into documents
/// as Kubernetes' `YAMLReader` splits it (at lines starting with `---`), each is read as
/// `sigs.k8s.io/yaml` reads a map (go-yaml v2 typing, numbers `float64`), and the documents
/// are merged, later ones winning.
pub(crate) fn read_values(data: &[u8]) -> Result<Value, String> {
    let text = crate::chart::text(data);
    let mut merged = empty_map();
    for doc in split_documents(&text)? {
        let current = opkit_template::yaml::from_yaml_map(doc)
            .map_err(|e| format!("cannot unmarshal yaml document: {e}"))?;
        merged = merge_maps(&merged, &current);
    }
    Ok(merged)
}

/// Kubernetes' `YAMLReader.Read` over a whole stream: the non-empty documents.
fn split_documents(text: &str) -> Result<Vec<&str>, String> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..end];
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(format!(
                    "error reading yaml document: invalid Yaml document separator: {trimmed}"
                ));
            }
            if pos > start {
                docs.push(&text[start..pos]);
            }
            start = end;
        }
        pos = end;
    }
    if text.len() > start {
        docs.push(&text[start..]);
    }
    Ok(docs)
}

/// Helm's `loader.MergeMaps`: `b` over `a`, maps merged recursively, anything else replaced;
/// a new top-level map (inner maps of `a` that `b` does not touch are shared). The rule of
/// `-f` files over each other, and of operator-sdk's override values over a custom resource's
/// spec.
pub fn merge_maps(a: &Value, b: &Value) -> Value {
    let mut out = as_table(a).map(Dict::to_map).unwrap_or_default();
    if let Some(b) = as_table(b) {
        for (k, v) in b.entries() {
            if as_table(&v).is_some()
                && let Some(existing) = out.get(&k)
                && as_table(existing).is_some()
            {
                let merged = merge_maps(existing, &v);
                out.insert(k, merged);
                continue;
            }
            out.insert(k, v);
        }
    }
    Value::map(out)
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Helm's `CoalesceValues`: the chart's defaults (and its subcharts', under their names)
/// beneath a copy of `vals`; a `null` in `vals` deletes the default.
pub(crate) fn coalesce_values(
    chart: &Chart,
    vals: &Value,
    warn: &mut Warnings,
) -> Result<Dict, ValuesError> {
    let copy = as_table(vals).map(deep_copy_dict).unwrap_or_default();
    coalesce(chart, copy, "", false, warn)
}

/// Helm's `MergeValues`: like [`coalesce_values`] but `null`s are kept.
pub(crate) fn merge_values(
    chart: &Chart,
    vals: &Value,
    warn: &mut Warnings,
) -> Result<Dict, ValuesError> {
    let copy = as_table(vals).map(deep_copy_dict).unwrap_or_default();
    coalesce(chart, copy, "", true, warn)
}

fn coalesce(
    chart: &Chart,
    dest: Dict,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) -> Result<Dict, ValuesError> {
    coalesce_chart_values(chart, &dest, prefix, merge, warn);
    coalesce_deps(chart, dest, prefix, merge, warn)
}

fn coalesce_deps(
    chart: &Chart,
    dest: Dict,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) -> Result<Dict, ValuesError> {
    for sub in &chart.dependencies {
        let name = sub.name();
        let dv = match dest.get(name) {
            None => {
                let d = Dict::default();
                dest.insert(name, Value::Map(d.clone()));
                d
            }
            Some(Value::Map(d)) => d,
            Some(other) => {
                return Err(ValuesError::TypeMismatch {
                    name: name.to_string(),
                    shown: opkit_template::sprintf("%t", &[other]),
                });
            }
        };
        let sub_prefix = concat_prefix(prefix, chart.name());
        coalesce_globals(&dv, &dest, &sub_prefix, warn);
        let out = coalesce(sub, dv, &sub_prefix, merge, warn)?;
        dest.insert(name, Value::Map(out));
    }
    Ok(dest)
}

/// Copies the parent's `global` table into a subchart's values (`dest`), the subchart's own
/// entries winning only inside maps, as Helm's `coalesceGlobals` does.
fn coalesce_globals(dest: &Dict, src: &Dict, prefix: &str, warn: &mut Warnings) {
    let dg = match dest.get(GLOBAL_KEY) {
        None => Dict::default(),
        Some(Value::Map(d)) => d,
        Some(_) => {
            warn.push(format!(
                "warning: skipping globals because destination {GLOBAL_KEY} is not a table."
            ));
            return;
        }
    };
    let sg = match src.get(GLOBAL_KEY) {
        None => Dict::default(),
        Some(Value::Map(d)) => d,
        Some(_) => {
            warn.push(format!(
                "warning: skipping globals because source {GLOBAL_KEY} is not a table."
            ));
            return;
        }
    };
    for (key, val) in sg.entries() {
        if let Some(table) = as_table(&val) {
            // A shallow copy, as Helm's `copyMap`: nested maps stay shared.
            let vv = Dict::new(table.to_map());
            match dg.get(&key) {
                None => dg.insert(key, Value::Map(vv)),
                Some(Value::Map(destv)) => {
                    coalesce_tables_full_key(&vv, &destv, &concat_prefix(prefix, &key), true, warn);
                    dg.insert(key, Value::Map(vv));
                }
                Some(_) => warn.push(format!(
                    "Conflict: cannot merge map onto non-map for {key:?}. Skipping."
                )),
            }
        } else if dg.get(&key).as_ref().and_then(as_table).is_some() {
            warn.push(format!("key {key} is table. Skipping"));
        } else {
            dg.insert(key, val);
        }
    }
    dest.insert(GLOBAL_KEY, Value::Map(dg));
}

/// Puts a copy of the chart's default values beneath `v` (Helm's `coalesceValues`).
fn coalesce_chart_values(chart: &Chart, v: &Dict, prefix: &str, merge: bool, warn: &mut Warnings) {
    let sub_prefix = concat_prefix(prefix, chart.name());
    let Value::Map(defaults) = deep_copy(&chart.values) else {
        return;
    };
    for (key, val) in defaults.entries() {
        match v.get(&key) {
            Some(value) if value.is_nil() && !merge => {
                v.remove(&key);
            }
            Some(Value::Map(dest)) => match &val {
                Value::Map(src) => {
                    let merge = merge || chart.dependencies.iter().any(|d| d.name() == key);
                    coalesce_tables_full_key(
                        &dest,
                        src,
                        &concat_prefix(&sub_prefix, &key),
                        merge,
                        warn,
                    );
                }
                Value::Nil => {}
                _ => warn.push(format!(
                    "warning: skipped value for {sub_prefix}.{key}: Not a table."
                )),
            },
            Some(_) => {}
            None => v.insert(key, val),
        }
    }
}

/// Helm's `MergeTables`: `src`'s entries beneath `dst` (`dst` wins, `null`s are kept).
pub(crate) fn merge_tables(dst: &Dict, src: &Dict, warn: &mut Warnings) {
    coalesce_tables_full_key(dst, src, "", true, warn);
}

fn coalesce_tables_full_key(
    dst: &Dict,
    src: &Dict,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) {
    if dst.same(src) {
        // Merging a map into itself changes nothing.
        return;
    }
    // A `null` in `dst` is copied into `src` first (so that it survives in `dst`); where
    // `src` held a value there instead, coalescing deletes the key from `dst`.
    let mut nulled_over = Vec::new();
    for (key, val) in dst.entries() {
        if val.is_nil() {
            if !merge && src.get(&key).is_some_and(|v| !v.is_nil()) {
                nulled_over.push(key.clone());
            }
            src.insert(key, Value::Nil);
        }
    }
    for (key, val) in src.entries() {
        match dst.get(&key) {
            Some(dv) if dv.is_nil() && nulled_over.contains(&key) => {
                dst.remove(&key);
            }
            None => dst.insert(key, val),
            Some(dv) => {
                if let Some(val_table) = as_table(&val) {
                    let full_key = concat_prefix(prefix, &key);
                    if let Some(dv_table) = as_table(&dv) {
                        coalesce_tables_full_key(dv_table, val_table, &full_key, merge, warn);
                    } else {
                        warn.push(format!(
                            "warning: cannot overwrite table with non table for {full_key} ({val})"
                        ));
                    }
                } else if as_table(&dv).is_some() && !val.is_nil() {
                    let full_key = concat_prefix(prefix, &key);
                    warn.push(format!(
                        "warning: destination for {full_key} is a table. Ignoring non-table value ({val})"
                    ));
                }
            }
        }
    }
}

/// Why a table or path lookup found nothing (Helm's `ErrNoTable`, `ErrNoValue`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LookupError {
    #[error("{0:?} is not a table")]
    NoTable(String),
    #[error("{0:?} is not a value")]
    NoValue(String),
}

/// Helm's `Values.Table`: the map at the dotted path `name`.
pub(crate) fn table(v: &Dict, name: &str) -> Result<Dict, LookupError> {
    let mut t = v.clone();
    for part in name.split('.') {
        match t.get(part) {
            Some(Value::Map(d)) => t = d,
            _ => return Err(LookupError::NoTable(part.to_string())),
        }
    }
    Ok(t)
}

/// Helm's `Values.PathValue`: the non-map value at the dotted path `path`.
pub(crate) fn path_value(v: &Dict, path: &str) -> Result<Value, LookupError> {
    let (parent, key) = match path.rsplit_once('.') {
        Some((parent, key)) => (Some(parent), key),
        None => (None, path),
    };
    let t = match parent {
        None => v.clone(),
        Some(p) => table(v, p).map_err(|_| LookupError::NoValue(key.to_string()))?,
    };
    match t.get(key) {
        Some(found) if as_table(&found).is_none() => Ok(found),
        _ => Err(LookupError::NoValue(key.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;

    fn json(v: serde_json::Value) -> Value {
        Value::from_json(&v)
    }

    fn chart(name: &str, values: serde_json::Value, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                ..Metadata::default()
            },
            templates: vec![],
            values: json(values),
            schema: None,
            files: vec![],
            dependencies: deps,
            lock: None,
        }
    }

    fn show(d: Dict) -> String {
        Value::Map(d).to_string()
    }

    #[test]
    fn read_values_merges_documents_and_reads_numbers_as_float64() {
        let v = read_values(b"a: 1\nb: {c: 2}\n---\nb: {d: 3}\n---\n").unwrap();
        assert_eq!(v.to_string(), "map[a:1 b:map[c:2 d:3]]");
        assert!(matches!(
            as_table(&v).unwrap().get("a"),
            Some(Value::Float(_))
        ));
        let err = read_values(b"- a\n").unwrap_err();
        assert!(
            err.contains("cannot unmarshal array into Go value"),
            "{err}"
        );
    }

    #[test]
    fn user_values_win_and_null_deletes_a_default() {
        let c = chart(
            "top",
            serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}, "e": "x"}),
            vec![],
        );
        let user = json(serde_json::json!({"a": 5, "b": {"c": null}, "e": null}));
        let mut w = Warnings::default();
        let out = coalesce_values(&c, &user, &mut w).unwrap();
        assert_eq!(show(out), "map[a:5 b:map[d:3]]");
        // The user's values are copied, not changed.
        assert_eq!(user.to_string(), "map[a:5 b:map[c:<nil>] e:<nil>]");
    }

    #[test]
    fn subchart_defaults_go_under_its_name_and_globals_flow_down() {
        let sub = chart(
            "sub",
            serde_json::json!({"x": 1, "global": {"g": "sub", "h": "sub"}}),
            vec![],
        );
        let c = chart(
            "top",
            serde_json::json!({"global": {"g": "top"}, "sub": {"x": 2}}),
            vec![sub],
        );
        let mut w = Warnings::default();
        let out = coalesce_values(&c, &empty_map(), &mut w).unwrap();
        assert_eq!(
            show(out),
            "map[global:map[g:top] sub:map[global:map[g:top h:sub] x:2]]"
        );
    }

    #[test]
    fn a_subchart_section_that_is_not_a_map_fails_with_helms_text() {
        let c = chart(
            "top",
            serde_json::json!({}),
            vec![chart("sub", serde_json::json!({}), vec![])],
        );
        let mut w = Warnings::default();
        let err = coalesce_values(&c, &json(serde_json::json!({"sub": "x"})), &mut w)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "type mismatch on sub: %!t(string=x)");
    }

    #[test]
    fn a_type_mismatch_warns_and_keeps_the_users_value() {
        let c = chart("top", serde_json::json!({"a": {"b": 1}, "s": "x"}), vec![]);
        let mut w = Warnings::default();
        let out = coalesce_values(
            &c,
            &json(serde_json::json!({"a": 3, "s": {"t": 1}})),
            &mut w,
        )
        .unwrap();
        assert_eq!(show(out), "map[a:3 s:map[t:1]]");
        assert_eq!(
            w.0,
            vec!["warning: skipped value for top.s: Not a table.".to_string()]
        );
    }

    #[test]
    fn merge_keeps_nulls_and_coalesce_tables_deletes_them() {
        let c = chart("top", serde_json::json!({"a": 1, "n": null}), vec![]);
        let mut w = Warnings::default();
        let out = merge_values(&c, &json(serde_json::json!({"a": null})), &mut w).unwrap();
        assert_eq!(show(out), "map[a:<nil> n:<nil>]");
        let dst = Dict::new(BTreeMap::from([("a".to_string(), Value::Nil)]));
        let src = Dict::new(BTreeMap::from([("a".to_string(), Value::Int(1))]));
        coalesce_tables_full_key(&dst, &src, "", false, &mut w);
        assert!(dst.is_empty());
    }

    #[test]
    fn merge_maps_merges_maps_and_replaces_the_rest() {
        let a = json(serde_json::json!({"a": {"b": 1, "c": 2}, "l": [1]}));
        let b = json(serde_json::json!({"a": {"b": 3}, "l": [2, 3]}));
        assert_eq!(
            merge_maps(&a, &b).to_string(),
            "map[a:map[b:3 c:2] l:[2 3]]"
        );
    }

    #[test]
    fn lookups_follow_helms_table_and_path_rules() {
        let Value::Map(d) = json(serde_json::json!({"a": {"b": {"c": true}}, "t": 1})) else {
            unreachable!()
        };
        assert_eq!(path_value(&d, "a.b.c").unwrap().to_string(), "true");
        assert_eq!(path_value(&d, "t").unwrap().to_string(), "1");
        assert_eq!(
            path_value(&d, "a.b").unwrap_err().to_string(),
            "\"b\" is not a value"
        );
        assert_eq!(
            path_value(&d, "x.y").unwrap_err().to_string(),
            "\"y\" is not a value"
        );
        assert_eq!(
            table(&d, "a.x").err().unwrap().to_string(),
            "\"x\" is not a table"
        );
    }
}
