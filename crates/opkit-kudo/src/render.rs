//! Rendering a task's templates into objects, as KUDO's `render` and `convert`: each named
//! template of the operator version is rendered with KUDO's engine and the plan's variables,
//! then split into YAML documents at `\n---` (documents that are only whitespace or
//! comments are skipped) and read the way `sigs.k8s.io/yaml` reads them. Every failure here
//! is fatal: only a change to the package or the parameters can fix it.

use std::sync::OnceLock;

use opkit_template::kudo::Renderer;
use serde_json::Value as Json;

use crate::api::Task;
use crate::object::text;
use crate::task::{Context, TaskError};

/// KUDO's document separator.
const YAML_SEPARATOR: &str = "\n---";

/// Bounds on one render: a controller renders packages it did not write.
const MAX_STEPS: u64 = 50_000_000;
const MAX_OUTPUT: usize = 16 << 20;

fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Renderer::new();
        r.set_bounds(Some(MAX_STEPS), Some(MAX_OUTPUT));
        r
    })
}

/// KUDO's fatal execution error: `<ns>/<instance> failed in <plan>.<phase>.<step>.<task>: <cause>`.
pub(crate) fn fatal(ctx: &Context, task: &Task, cause: impl std::fmt::Display) -> TaskError {
    let v = &ctx.variables;
    TaskError::Fatal(format!(
        "{}/{} failed in {}.{}.{}.{}: {cause}",
        v.namespace, v.name, v.plan_name, v.phase_name, v.step_name, task.name
    ))
}

/// Renders the templates `names` of the operator version with the context's variables.
/// Returns (template name, rendered text) in the order given.
pub(crate) fn render_texts(
    ctx: &Context,
    task: &Task,
    names: &[String],
) -> Result<Vec<(String, String)>, TaskError> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let Some(template) = ctx.operator_version.spec.templates.get(name) else {
            return Err(fatal(
                ctx,
                task,
                format!("error finding resource named {name}"),
            ));
        };
        let rendered = renderer()
            .render(name, template, &ctx.variables)
            .map_err(|e| fatal(ctx, task, format!("error expanding template {name}: {e}")))?;
        out.push((name.clone(), rendered));
    }
    Ok(out)
}

/// Renders the templates `names` and reads every object they hold.
pub(crate) fn render(ctx: &Context, task: &Task, names: &[String]) -> Result<Vec<Json>, TaskError> {
    let mut objects = Vec::new();
    for (name, text) in render_texts(ctx, task, names)? {
        let parsed =
            parse(&text).map_err(|e| fatal(ctx, task, format!("parsing YAML from {name}: {e}")))?;
        objects.extend(parsed);
    }
    Ok(objects)
}

/// Splits rendered YAML into objects as KUDO's `YamlToObject`: documents at `\n---`, empty
/// ones (whitespace or comments) skipped. Each object needs `apiVersion`, `kind` and
/// `metadata.name`.
pub(crate) fn parse(yaml: &str) -> Result<Vec<Json>, String> {
    let mut objects = Vec::new();
    for (i, chunk) in yaml.split(YAML_SEPARATOR).enumerate() {
        if chunk.trim().is_empty() {
            continue;
        }
        // A separator line may carry a comment after `---`; KUDO's split leaves it at the
        // start of the next chunk, where the document marker put back keeps it a comment.
        let doc = if i == 0 {
            chunk.to_string()
        } else {
            format!("---{chunk}")
        };
        let value = opkit_template::yaml::from_yaml(&doc)
            .map_err(|e| format!("decoding chunk {chunk:?} failed: {e}"))?;
        let obj = value.to_go_json();
        match &obj {
            Json::Null => continue,
            Json::Object(m) if m.is_empty() => continue,
            Json::Object(_) => {}
            other => {
                return Err(format!(
                    "decoding chunk {chunk:?} failed: expected an object, found {other}"
                ));
            }
        }
        for field in ["/apiVersion", "/kind", "/metadata/name"] {
            if text(&obj, field).is_empty() {
                return Err(format!(
                    "object has no {}: {chunk:?}",
                    field.trim_start_matches('/').replace('/', ".")
                ));
            }
        }
        objects.push(obj);
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_at_separators_and_empty_ones_are_skipped() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  count: 1\n---\n# only a comment\n---\n\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n";
        let objs = parse(yaml).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0]["data"]["count"], 1);
        assert_eq!(objs[1]["kind"], "Service");
    }

    #[test]
    fn a_leading_separator_and_yaml_1_1_booleans_read_as_go_reads_them() {
        let objs =
            parse("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nx: yes\n").unwrap();
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0]["metadata"]["name"], "a");
    }

    #[test]
    fn broken_yaml_and_objects_without_identity_are_errors() {
        let err = parse("apiVersion: v1\nkind: [\n").unwrap_err();
        assert!(err.starts_with("decoding chunk"), "{err}");
        let err = parse("apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
        assert!(err.contains("no metadata.name"), "{err}");
        let err = parse("- a\n- b\n").unwrap_err();
        assert!(err.contains("expected an object"), "{err}");
    }
}
