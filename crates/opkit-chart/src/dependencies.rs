//! Dependency processing as Helm's `ProcessDependencies` does it (`chart/v2/util/
//! dependencies.go`): each `Chart.yaml` dependency is matched to a loaded subchart by name and
//! version range, renamed by its `alias`, enabled or disabled by `tags` and `condition` paths
//! read from the coalesced values (bad paths and non-bool values only warn), disabled ones are
//! dropped, and `import-values` (the `exports.X` string form and the `child`/`parent` map form)
//! copy subchart values into the parent's defaults.

use opkit_template::{Dict, Value};

use crate::chart::{Chart, Dependency};
use crate::load::is_compatible_range;
use crate::values::{
    ValuesError, Warnings, coalesce_values, deep_copy_dict, merge_tables, merge_values, path_value,
    table,
};

/// Helm's `ProcessDependencies` with import values merged (what `helm install` and
/// `helm template` run): changes `chart` in place.
pub(crate) fn process_dependencies(
    chart: &mut Chart,
    vals: &Value,
    warn: &mut Warnings,
) -> Result<(), ValuesError> {
    process_enabled(chart, vals, "", warn)?;
    process_import_values_tree(chart, warn)
}

fn process_enabled(
    chart: &mut Chart,
    vals: &Value,
    path: &str,
    warn: &mut Warnings,
) -> Result<(), ValuesError> {
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    // Subcharts no dependency names stay as they are; each dependency takes the first
    // subchart it names (Helm's `getAliasDependency`), renamed to its alias. A subchart is
    // copied only when several dependencies take it (one chart under two aliases).
    let loaded = std::mem::take(&mut chart.dependencies);
    let reqs = &mut chart.metadata.dependencies;
    let names = |c: &Chart, req: &Dependency| {
        c.name() == req.name && is_compatible_range(&req.version, &c.metadata.version)
    };
    let picks: Vec<Option<usize>> = reqs
        .iter()
        .map(|req| loaded.iter().position(|c| names(c, req)))
        .collect();
    let mut takers = vec![0usize; loaded.len()];
    picks.iter().flatten().for_each(|&i| takers[i] += 1);
    let named: Vec<bool> = loaded
        .iter()
        .map(|c| reqs.iter().any(|req| names(c, req)))
        .collect();
    let mut slots: Vec<Option<Chart>> = loaded.into_iter().map(Some).collect();
    let mut kept: Vec<Chart> = named
        .iter()
        .zip(&mut slots)
        .filter(|(named, _)| !**named)
        .filter_map(|(_, slot)| slot.take())
        .collect();
    for (req, pick) in reqs.iter_mut().zip(picks) {
        if let Some(i) = pick {
            takers[i] -= 1;
            let taken = if takers[i] == 0 {
                slots[i].take()
            } else {
                slots[i].clone()
            };
            if let Some(mut c) = taken {
                if !req.alias.is_empty() {
                    c.metadata.name = req.alias.clone();
                }
                kept.push(c);
            }
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    chart.dependencies = kept;
    for req in &mut chart.metadata.dependencies {
        req.enabled = true;
    }
    let cvals = coalesce_values(chart, vals, warn)?;
    process_tags(&mut chart.metadata.dependencies, &cvals, warn);
    process_conditions(&mut chart.metadata.dependencies, &cvals, path, warn);
    let disabled: Vec<String> = chart
        .metadata
        .dependencies
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    chart
        .dependencies
        .retain(|c| !disabled.iter().any(|d| d == c.name()));
    chart
        .metadata
        .dependencies
        .retain(|r| !disabled.contains(&r.name));
    let cvals = Value::Map(cvals);
    for sub in &mut chart.dependencies {
        let sub_path = format!("{path}{}.", sub.name());
        process_enabled(sub, &cvals, &sub_path, warn)?;
    }
    Ok(())
}

/// Helm's `processDependencyTags`: a dependency with a `true` tag is enabled; one with only
/// `false` tags is disabled.
fn process_tags(reqs: &mut [Dependency], cvals: &Dict, warn: &mut Warnings) {
    let Ok(tags) = table(cvals, "tags") else {
        return;
    };
    for r in reqs {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            match tags.get(k) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                Some(_) => warn.push(format!("returned non-bool value tag={k} chart={}", r.name)),
                None => {}
            }
        }
        // Only `false` tags disable; a `true` tag or no known tag enables.
        r.enabled = has_true || !has_false;
    }
}

/// Helm's `processDependencyConditions`: the first condition path that holds a bool decides.
fn process_conditions(reqs: &mut [Dependency], cvals: &Dict, path: &str, warn: &mut Warnings) {
    for r in reqs {
        for c in r.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            match path_value(cvals, &format!("{path}{c}")) {
                Ok(Value::Bool(b)) => {
                    r.enabled = b;
                    break;
                }
                Ok(_) => warn.push(format!("returned non-bool value path={c} chart={}", r.name)),
                // A missing value leaves the dependency as the tags left it.
                Err(_) => {}
            }
        }
    }
}

fn process_import_values_tree(chart: &mut Chart, warn: &mut Warnings) -> Result<(), ValuesError> {
    for sub in &mut chart.dependencies {
        process_import_values_tree(sub, warn)?;
    }
    process_import_values(chart, warn)
}

/// Helm's `pathToMap`: `data` nested under the dotted `path` (`.` is the top).
fn path_to_map(path: &str, data: Dict) -> Dict {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for part in path.split('.').rev() {
        cur = Dict::new([(part.to_string(), Value::Map(cur))].into_iter().collect());
    }
    cur
}

/// Helm's `processImportValues` (merge form): the imported tables go beneath the chart's own
/// defaults, which win.
fn process_import_values(chart: &mut Chart, warn: &mut Warnings) -> Result<(), ValuesError> {
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let cvals = merge_values(chart, &crate::values::empty_map(), warn)?;
    let b = Dict::default();
    for r in &mut chart.metadata.dependencies {
        let mut out = Vec::new();
        for iv in &r.import_values {
            match iv {
                serde_json::Value::Object(m) => {
                    let shown = |k: &str| match m.get(k) {
                        None => "<nil>".to_string(),
                        Some(v) => Value::from_json(v).to_string(),
                    };
                    let (child, parent) = (shown("child"), shown("parent"));
                    out.push(serde_json::json!({"child": child, "parent": parent}));
                    match table(&cvals, &format!("{}.{child}", r.name)) {
                        Ok(vv) => merge_tables(&b, &path_to_map(&parent, vv), warn),
                        Err(e) => warn.push(format!(
                            "ImportValues missing table from chart chart={} error={e}",
                            r.name
                        )),
                    }
                }
                serde_json::Value::String(s) => {
                    let child = format!("exports.{s}");
                    out.push(serde_json::json!({"child": child, "parent": "."}));
                    match table(&cvals, &format!("{}.{child}", r.name)) {
                        Ok(vm) => merge_tables(&b, &vm, warn),
                        Err(e) => warn.push(format!("ImportValues missing table error={e}")),
                    }
                }
                _ => {}
            }
        }
        r.import_values = out;
    }
    // Helm merges `b` into a deep copy of `cvals`, since `b`'s tables are `cvals`' own and
    // merging changes its source. Here `cvals` is already a copy of its own and a chart's
    // values are only ever read or copied, so copying `b` (usually empty) is the same.
    merge_tables(&cvals, &deep_copy_dict(&b), warn);
    chart.values = Value::Map(cvals);
    Ok(())
}

/// Helm's `CheckDependencies`: every dependency in `Chart.yaml` must be in `charts/`.
pub(crate) fn missing_dependencies(chart: &Chart) -> Vec<String> {
    chart
        .metadata
        .dependencies
        .iter()
        .filter(|r| !chart.dependencies.iter().any(|d| d.name() == r.name))
        .map(|r| r.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;

    fn chart(name: &str, version: &str, values: serde_json::Value) -> Chart {
        Chart {
            metadata: Metadata {
                api_version: "v2".into(),
                name: name.into(),
                version: version.into(),
                ..Metadata::default()
            },
            templates: vec![],
            values: Value::from_json(&values),
            schema: None,
            files: vec![],
            dependencies: vec![],
            lock: None,
        }
    }

    fn dep(name: &str, f: impl FnOnce(&mut Dependency)) -> Dependency {
        let mut d = Dependency {
            name: name.into(),
            version: "1.x".into(),
            ..Dependency::default()
        };
        f(&mut d);
        d
    }

    fn names(c: &Chart) -> Vec<&str> {
        c.dependencies.iter().map(Chart::name).collect()
    }

    fn run(c: &mut Chart, user: serde_json::Value) -> Vec<String> {
        let mut w = Warnings::default();
        process_dependencies(c, &Value::from_json(&user), &mut w).unwrap();
        w.0
    }

    #[test]
    fn conditions_and_tags_enable_and_disable_subcharts() {
        let mut top = chart(
            "top",
            "1.0.0",
            serde_json::json!({"a": {"enabled": false}, "tags": {"front": true, "back": false}}),
        );
        top.dependencies = vec![
            chart("a", "1.0.0", serde_json::json!({})),
            chart("b", "1.0.0", serde_json::json!({})),
            chart("c", "1.0.0", serde_json::json!({})),
            chart("d", "1.0.0", serde_json::json!({})),
        ];
        top.metadata.dependencies = vec![
            dep("a", |d| d.condition = "a.enabled".into()),
            dep("b", |d| d.tags = vec!["back".into()]),
            dep("c", |d| d.tags = vec!["back".into(), "front".into()]),
            dep("d", |d| {
                d.tags = vec!["back".into()];
                d.condition = "nope.enabled,d.on".into();
            }),
        ];
        let warnings = run(&mut top, serde_json::json!({"d": {"on": true}}));
        assert_eq!(names(&top), ["c", "d"]);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_non_bool_condition_warns_and_leaves_the_dependency_enabled() {
        let mut top = chart("top", "1.0.0", serde_json::json!({"a": {"enabled": "no"}}));
        top.dependencies = vec![chart("a", "1.0.0", serde_json::json!({}))];
        top.metadata.dependencies = vec![dep("a", |d| d.condition = "a.enabled".into())];
        let warnings = run(&mut top, serde_json::json!({}));
        assert_eq!(names(&top), ["a"]);
        assert_eq!(warnings, ["returned non-bool value path=a.enabled chart=a"]);
    }

    #[test]
    fn aliases_copy_a_subchart_under_new_names() {
        let mut top = chart("top", "1.0.0", serde_json::json!({}));
        top.dependencies = vec![chart("sub", "1.2.0", serde_json::json!({"x": 1}))];
        top.metadata.dependencies = vec![
            dep("sub", |d| d.alias = "one".into()),
            dep("sub", |d| d.alias = "two".into()),
        ];
        run(&mut top, serde_json::json!({}));
        assert_eq!(names(&top), ["one", "two"]);
        assert_eq!(top.metadata.dependencies[0].name, "one");
    }

    #[test]
    fn an_incompatible_version_keeps_the_subchart_unaliased() {
        let mut top = chart("top", "1.0.0", serde_json::json!({}));
        top.dependencies = vec![chart("sub", "2.0.0", serde_json::json!({}))];
        top.metadata.dependencies = vec![dep("sub", |d| d.alias = "one".into())];
        run(&mut top, serde_json::json!({}));
        assert_eq!(names(&top), ["sub"]);
    }

    #[test]
    fn import_values_copy_exports_and_child_tables_under_the_parents_defaults() {
        let mut top = chart("top", "1.0.0", serde_json::json!({"keep": "parent"}));
        top.dependencies = vec![chart(
            "sub",
            "1.0.0",
            serde_json::json!({
                "exports": {"data": {"keep": "child", "new": 1}},
                "deep": {"t": {"v": 2}}
            }),
        )];
        top.metadata.dependencies = vec![dep("sub", |d| {
            d.import_values = vec![
                serde_json::json!("data"),
                serde_json::json!({"child": "deep.t", "parent": "imported.here"}),
                serde_json::json!("missing"),
            ]
        })];
        let warnings = run(&mut top, serde_json::json!({}));
        let Value::Map(v) = &top.values else {
            unreachable!()
        };
        assert_eq!(v.get("keep").unwrap().to_string(), "parent");
        assert_eq!(v.get("new").unwrap().to_string(), "1");
        assert_eq!(v.get("imported").unwrap().to_string(), "map[here:map[v:2]]");
        assert_eq!(
            top.metadata.dependencies[0].import_values[1],
            serde_json::json!({"child": "deep.t", "parent": "imported.here"})
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
