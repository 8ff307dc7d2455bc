//! chainsaw's operations, run against a [`Target`] with a scope of bindings and timeouts:
//! resource writes (`apply`, `create`, `update`, `patch`) with `expect` checks, `assert` and
//! `error` polled until they hold or time out, `delete` (waiting until gone), `command` and
//! `script` with `check`, `sleep`, and the kubectl-backed helpers (`wait`, `events`,
//! `podLogs`, `describe`, `get`), as chainsaw runs them with kubectl too.
//!
//! The write and lookup parts reuse kuttl's [`Target`] (discovery, namespace defaulting,
//! create-or-patch, delete-and-wait); matching is chainsaw's own ([`tree`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

use crate::chainsaw::expr::{self, Bindings};
use crate::chainsaw::model::{
    Action, Binding, Collector, CommandOp, DeleteOp, Expectation, Operation, Resolved, ResourceOp,
    ScriptOp, go_duration,
};
use crate::chainsaw::process::{self, Spawn};
use crate::chainsaw::tree::{self, Mismatch};
use crate::cluster::{Resource, is_not_found, message};
use crate::diff::{pretty_diff, resource_id};
use crate::log::Log;
use crate::operation::{Created, Target};
use crate::types::DeleteRef;
use crate::yaml;

/// Where and with what an operation runs.
#[derive(Clone)]
pub(crate) struct Scope<'a> {
    pub target: &'a Target,
    pub test_dir: &'a Path,
    pub kubeconfig: &'a Path,
    pub cwd: &'a Path,
    pub log: &'a Log,
    /// `test/step` for log lines.
    pub prefix: String,
    pub timeouts: Resolved,
    pub template: bool,
    pub bindings: Bindings,
}

fn own_timeout(t: &Option<String>, default: Duration) -> Result<Duration, String> {
    t.as_deref().map_or(Ok(default), go_duration)
}

/// Runs one operation; objects it created are added to `created` (for cleanup).
pub(crate) async fn run(
    op: &Operation,
    scope: &Scope<'_>,
    created: &mut Vec<Created>,
) -> Result<(), String> {
    let result = match &op.action {
        Action::Apply(o) => write(Write::Apply, o, scope, created).await,
        Action::Create(o) => write(Write::Create, o, scope, created).await,
        Action::Update(o) => write(Write::Update, o, scope, created).await,
        Action::Patch(o) => write(Write::Patch, o, scope, created).await,
        Action::Assert(o) => check_resources(true, o, scope).await,
        Action::Error(o) => check_resources(false, o, scope).await,
        Action::Delete(o) => delete(o, scope).await,
        Action::Command(o) => command(o, scope).await,
        Action::Script(o) => script(o, scope).await,
        Action::Sleep(o) => match go_duration(&o.duration) {
            Ok(d) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Err(e) => Err(e),
        },
        Action::Wait(c)
        | Action::Events(c)
        | Action::PodLogs(c)
        | Action::Describe(c)
        | Action::Get(c) => collect(op.action.name(), c, scope).await,
    };
    let status = if result.is_ok() { "DONE" } else { "ERROR" };
    scope.log.log(
        &scope.prefix,
        &format!("{:<9} {status}", op.action.name().to_uppercase()),
    );
    result.map_err(|e| format!("{} failed: {e}", op.action.name()))
}

/// The objects of `file` (a path or glob relative to the test dir) or the inline `resource`.
fn resources(
    file: &str,
    inline: &Option<Value>,
    scope: &Scope<'_>,
    bindings: &Bindings,
) -> Result<Vec<Value>, String> {
    match (file.is_empty(), inline) {
        (true, Some(r)) => Ok(vec![yaml::normalize(r.clone())]),
        (false, None) => {
            let file = expr::string(file, bindings)?;
            let mut out = Vec::new();
            for path in files(&scope.test_dir.join(&file))? {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                out.extend(
                    yaml::load_documents(&text)
                        .map_err(|e| format!("cannot load {}: {e}", path.display()))?,
                );
            }
            Ok(out)
        }
        (false, Some(_)) => Err("give either file or resource, not both".into()),
        (true, None) => Err("a file or a resource is required".into()),
    }
}

/// The files a path names: itself, or the matches of a glob in its last part.
fn files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?', '[']) {
        return Ok(vec![path.to_path_buf()]);
    }
    let glob = crate::discovery::Glob::new(&name)
        .map_err(|_| format!("invalid file pattern {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .filter(|e| glob.matches(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(format!("no file matches {}", path.display()));
    }
    Ok(out)
}

fn scoped(scope: &Scope<'_>, bindings: &[Binding]) -> Result<Bindings, String> {
    scope.bindings.with_all(bindings)
}

/// Renders mismatches as chainsaw's `* path: message` lines.
fn bullets(mismatches: &[Mismatch]) -> String {
    mismatches
        .iter()
        .map(|m| format!("* {m}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Applies the `expect` entries whose `match` holds for `resource`, with `$error` bound; without
/// a matching entry the operation's own error stands.
fn expectations(
    expect: &[Expectation],
    resource: &Value,
    error: Option<String>,
    bindings: &Bindings,
) -> Result<(), String> {
    if expect.is_empty() {
        return error.map_or(Ok(()), Err);
    }
    let b = bindings.with("error", error.clone().map_or(Value::Null, Value::String));
    let mut matched = false;
    let mut failed = Vec::new();
    for e in expect {
        if let Some(m) = &e.match_
            && !tree::check(m, resource, &b)?.is_empty()
        {
            continue;
        }
        matched = true;
        failed.extend(tree::check(&e.check, resource, &b)?);
    }
    if !matched {
        return error.map_or(Ok(()), Err);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: expectation failed\n{}",
            resource_id(resource),
            bullets(&failed)
        ))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    Apply,
    Create,
    Update,
    Patch,
}

async fn write(
    how: Write,
    op: &ResourceOp,
    scope: &Scope<'_>,
    created: &mut Vec<Created>,
) -> Result<(), String> {
    let bindings = scoped(scope, &op.bindings)?;
    let timeout = own_timeout(&op.timeout, scope.timeouts.apply)?;
    let template = op.template.unwrap_or(scope.template);
    for object in resources(&op.file, &op.resource, scope, &bindings)? {
        let object = if template {
            expr::template(&object, &bindings)?
        } else {
            object
        };
        let result = write_one(how, &object, scope, timeout).await;
        let error = match result {
            Ok((line, made)) => {
                scope.log.log(&scope.prefix, &line);
                created.extend(made);
                None
            }
            Err(e) => Some(e),
        };
        expectations(&op.expect, &object, error, &bindings)?;
    }
    Ok(())
}

async fn write_one(
    how: Write,
    object: &Value,
    scope: &Scope<'_>,
    timeout: Duration,
) -> Result<(String, Option<Created>), String> {
    let target = scope.target;
    if how == Write::Apply {
        return target.apply(object, timeout).await;
    }
    let mut object = object.clone();
    let resource = target
        .cluster
        .namespaced(&mut object, &target.namespace)
        .await?;
    let ns = yaml::meta(&object, "namespace").to_string();
    let name = yaml::meta(&object, "name").to_string();
    let id = resource_id(&object);
    let api = target.cluster.api(&resource, &ns);
    let body = |o: &Value| -> Result<DynamicObject, String> {
        serde_json::from_value(o.clone()).map_err(|e| format!("{id}: {e}"))
    };
    let call = async {
        match how {
            Write::Create => api
                .create(&PostParams::default(), &body(&object)?)
                .await
                .map(|_| {
                    (
                        format!("{id} created"),
                        Some(Created {
                            resource: resource.clone(),
                            namespace: ns.clone(),
                            name: name.clone(),
                        }),
                    )
                })
                .map_err(|e| format!("{id}: {}", message(&e))),
            Write::Update => {
                let existing = api
                    .get(&name)
                    .await
                    .map_err(|e| format!("{id}: {}", message(&e)))?;
                let mut o = object.clone();
                if yaml::meta(&o, "resourceVersion").is_empty()
                    && let (Some(rv), Some(meta)) = (
                        existing.metadata.resource_version,
                        o.get_mut("metadata").and_then(Value::as_object_mut),
                    )
                {
                    meta.insert("resourceVersion".into(), Value::String(rv));
                }
                api.replace(&name, &PostParams::default(), &body(&o)?)
                    .await
                    .map(|_| (format!("{id} updated"), None))
                    .map_err(|e| format!("{id}: {}", message(&e)))
            }
            Write::Patch => api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&object))
                .await
                .map(|_| (format!("{id} patched"), None))
                .map_err(|e| format!("{id}: {}", message(&e))),
            Write::Apply => unreachable!("apply is handled above"),
        }
    };
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| format!("{id}: timed out after {timeout:?}"))?
}

/// The objects an assertion tree is compared with, and the tree's namespaced copy for diffs.
async fn candidates(
    tree_obj: &Value,
    scope: &Scope<'_>,
    bindings: &Bindings,
    template: bool,
) -> Result<(Resource, Vec<Value>, Value), String> {
    // Only the lookup fields are templated (the rest of the tree is an assertion).
    let field = |v: Option<&Value>| -> Result<String, String> {
        let s = v.and_then(Value::as_str).unwrap_or("");
        if template {
            expr::string(s, bindings)
        } else {
            Ok(s.to_string())
        }
    };
    let meta = tree_obj.get("metadata");
    let mut lookup = serde_json::json!({
        "apiVersion": field(tree_obj.get("apiVersion"))?,
        "kind": field(tree_obj.get("kind"))?,
        "metadata": {},
    });
    let name = field(meta.and_then(|m| m.get("name")))?;
    let namespace = field(meta.and_then(|m| m.get("namespace")))?;
    if !namespace.is_empty() {
        lookup["metadata"]["namespace"] = Value::String(namespace);
    }
    let mut labels = BTreeMap::new();
    if let Some(map) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (k, v) in map {
            labels.insert(k.clone(), field(Some(v))?);
        }
    }
    let resource = scope
        .target
        .cluster
        .namespaced(&mut lookup, &scope.target.namespace)
        .await?;
    let ns = yaml::meta(&lookup, "namespace").to_string();
    let mut shown = tree_obj.clone();
    if let Some(m) = shown.get_mut("metadata").and_then(Value::as_object_mut) {
        if !ns.is_empty() {
            m.insert("namespace".into(), Value::String(ns.clone()));
        }
        if !name.is_empty() {
            m.insert("name".into(), Value::String(name.clone()));
        }
    }
    let items = if name.is_empty() {
        scope
            .target
            .cluster
            .list(&resource, &ns, &labels)
            .await
            .map_err(|e| message(&e))?
    } else {
        match scope.target.cluster.get(&resource, &ns, &name).await {
            Ok(v) => vec![v],
            Err(e) if is_not_found(&e) => Vec::new(),
            Err(e) => return Err(message(&e)),
        }
    };
    Ok((resource, items, shown))
}

/// One look: for `assert`, Ok when a candidate matches (else why none does); for `error`, Ok
/// when none does.
async fn look(
    assert: bool,
    tree_obj: &Value,
    scope: &Scope<'_>,
    bindings: &Bindings,
    template: bool,
) -> Result<(), String> {
    let (resource, items, shown) = candidates(tree_obj, scope, bindings, template).await?;
    let mut reports = Vec::new();
    let mut matching = Vec::new();
    for actual in &items {
        let mismatches = tree::check(tree_obj, actual, bindings)?;
        if mismatches.is_empty() {
            matching.push(resource_id(actual));
        } else {
            reports.push(format!(
                "{}\n{}\n\n{}",
                resource_id(actual),
                bullets(&mismatches),
                pretty_diff(&shown, actual).trim_end()
            ));
        }
    }
    let kind = format!("{}/{}", resource.api.api_version, resource.api.kind);
    match (assert, matching.is_empty()) {
        (true, false) | (false, true) => Ok(()),
        (true, true) if items.is_empty() => Err(format!(
            "actual resource not found: {kind} {}",
            resource_id(&shown)
        )),
        (true, true) => Err(reports.join("\n")),
        (false, false) => Err(format!(
            "resource {} matched the error assertion ({kind})",
            matching.join(", ")
        )),
    }
}

async fn check_resources(assert: bool, op: &ResourceOp, scope: &Scope<'_>) -> Result<(), String> {
    if !op.expect.is_empty() {
        return Err("expect is not part of assert and error operations".into());
    }
    let bindings = scoped(scope, &op.bindings)?;
    let default = if assert {
        scope.timeouts.assert
    } else {
        scope.timeouts.error
    };
    let timeout = own_timeout(&op.timeout, default)?;
    let template = op.template.unwrap_or(scope.template);
    let deadline = std::time::Instant::now() + timeout;
    for object in resources(&op.file, &op.resource, scope, &bindings)? {
        crate::poll::until(deadline, || {
            look(assert, &object, scope, &bindings, template)
        })
        .await
        .map_err(|e| format!("{e}\n(gave up after {timeout:?})"))?;
    }
    Ok(())
}

async fn delete(op: &DeleteOp, scope: &Scope<'_>) -> Result<(), String> {
    let bindings = scoped(scope, &op.bindings)?;
    let timeout = own_timeout(&op.timeout, scope.timeouts.delete)?;
    let template = op.template.unwrap_or(scope.template);
    let objects = match &op.reference {
        Some(r) if op.file.is_empty() && op.resource.is_none() => {
            let r = expr::template(r, &bindings)?;
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let mut metadata =
                serde_json::json!({"name": text("name"), "namespace": text("namespace")});
            if let Some(l) = r.get("labels") {
                metadata["labels"] = l.clone();
            }
            vec![
                serde_json::json!({"apiVersion": text("apiVersion"), "kind": text("kind"), "metadata": metadata}),
            ]
        }
        Some(_) => return Err("give either ref, file or resource".into()),
        None => resources(&op.file, &op.resource, scope, &bindings)?
            .into_iter()
            .map(|o| {
                if template {
                    expr::template(&o, &bindings)
                } else {
                    Ok(o)
                }
            })
            .collect::<Result<_, _>>()?,
    };
    for object in objects {
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let reference = DeleteRef {
            api_version: object
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            kind: yaml::kind(&object).to_string(),
            name: yaml::meta(&object, "name").to_string(),
            namespace: yaml::meta(&object, "namespace").to_string(),
            labels,
        };
        let log = scope.log.clone();
        let prefix = scope.prefix.clone();
        let result = scope
            .target
            .delete(
                std::slice::from_ref(&reference),
                timeout,
                &mut |l: String| log.log(&prefix, &l),
            )
            .await;
        expectations(&op.expect, &object, result.err(), &bindings)?;
    }
    Ok(())
}

/// The process environment of a command or script: the base one plus `env` (templated).
fn environment(
    env: &[Binding],
    scope: &Scope<'_>,
    bindings: &Bindings,
) -> Result<HashMap<String, String>, String> {
    let mut vars = process::base_env(&scope.target.namespace, scope.kubeconfig, scope.cwd);
    for e in env {
        let value = match expr::template(&e.value, bindings)? {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        vars.insert(e.name.clone(), value);
    }
    Ok(vars)
}

fn workdir(scope: &Scope<'_>, own: &Option<String>) -> PathBuf {
    match own {
        Some(d) => scope.test_dir.join(d),
        None => scope.test_dir.to_path_buf(),
    }
}

/// Runs a process; with `check`, the check decides (`$stdout`, `$stderr`, `$error` bound),
/// else a failure is the error.
#[allow(clippy::too_many_arguments)]
async fn execute(
    argv: Vec<String>,
    env: HashMap<String, String>,
    dir: PathBuf,
    timeout: Duration,
    check: &Option<Value>,
    bindings: &Bindings,
    scope: &Scope<'_>,
    quiet: (bool, bool),
) -> Result<(), String> {
    let done = process::run(Spawn {
        argv,
        env,
        workdir: dir,
        timeout,
        log: scope.log,
        prefix: &scope.prefix,
        log_command: !quiet.0,
        log_output: !quiet.1,
    })
    .await;
    let Some(check) = check else {
        return match done.error {
            None => Ok(()),
            Some(e) if done.stderr.trim().is_empty() => Err(e),
            Some(e) => Err(format!("{e}\n{}", done.stderr.trim_end())),
        };
    };
    let b = bindings
        .with("stdout", Value::String(done.stdout))
        .with("stderr", Value::String(done.stderr))
        .with("error", done.error.map_or(Value::Null, Value::String));
    let failed = tree::check(check, &expr::no_node(), &b)?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("check failed\n{}", bullets(&failed)))
    }
}

async fn command(op: &CommandOp, scope: &Scope<'_>) -> Result<(), String> {
    let bindings = scoped(scope, &op.bindings)?;
    let env = environment(&op.env, scope, &bindings)?;
    let timeout = own_timeout(&op.timeout, scope.timeouts.exec)?;
    if op.entrypoint.is_empty() {
        return Err("entrypoint is required".into());
    }
    let mut argv = vec![crate::command::expand(&op.entrypoint, &env)];
    argv.extend(op.args.iter().map(|a| crate::command::expand(a, &env)));
    let dir = workdir(scope, &op.work_dir);
    execute(
        argv,
        env,
        dir,
        timeout,
        &op.check,
        &bindings,
        scope,
        (op.skip_command_output, op.skip_log_output),
    )
    .await
}

async fn script(op: &ScriptOp, scope: &Scope<'_>) -> Result<(), String> {
    let bindings = scoped(scope, &op.bindings)?;
    let env = environment(&op.env, scope, &bindings)?;
    let timeout = own_timeout(&op.timeout, scope.timeouts.exec)?;
    let mut argv = vec![op.shell.clone().unwrap_or_else(|| "sh".into())];
    if op.shell_args.is_empty() {
        argv.push("-c".into());
    } else {
        argv.extend(op.shell_args.iter().cloned());
    }
    argv.push(op.content.clone());
    let dir = workdir(scope, &op.work_dir);
    execute(
        argv,
        env,
        dir,
        timeout,
        &op.check,
        &bindings,
        scope,
        (op.skip_command_output, op.skip_log_output),
    )
    .await
}

/// kubectl's name for a kind: `configmap`, `deployment.v1.apps`.
fn kubectl_resource(api_version: &str, kind: &str) -> String {
    let kind = kind.to_ascii_lowercase();
    match api_version.split_once('/') {
        Some((group, version)) => format!("{kind}.{version}.{group}"),
        None => kind,
    }
}

/// The kubectl command line of a collector or `wait`.
fn kubectl_argv(
    what: &str,
    c: &Collector,
    namespace: &str,
    timeout: Duration,
    b: &Bindings,
) -> Result<Vec<String>, String> {
    let s = |v: &str| expr::string(v, b);
    let (name, selector) = (s(&c.name)?, s(&c.selector)?);
    let mut argv: Vec<String> = vec!["kubectl".into()];
    let resource = || -> Result<String, String> {
        if c.kind.is_empty() {
            return Err(format!("{what} needs a kind"));
        }
        Ok(kubectl_resource(&s(&c.api_version)?, &s(&c.kind)?))
    };
    match what {
        "events" => argv.extend(["get".into(), "events".into()]),
        "get" => argv.extend(["get".into(), resource()?]),
        "describe" => argv.extend(["describe".into(), resource()?]),
        "wait" => argv.extend(["wait".into(), resource()?]),
        "podLogs" => {
            argv.extend(["logs".into(), "--prefix".into()]);
            if name.is_empty() && selector.is_empty() {
                return Err("podLogs needs a name or a selector".into());
            }
            match s(&c.container)?.as_str() {
                "" => argv.push("--all-containers".into()),
                container => argv.extend(["--container".into(), container.into()]),
            }
            if let Some(t) = c.tail {
                argv.push(format!("--tail={t}"));
            }
        }
        other => return Err(format!("{other} is not a collector")),
    }
    if !name.is_empty() {
        argv.push(name.clone());
    } else if !selector.is_empty() {
        argv.extend(["--selector".into(), selector]);
    } else if what == "wait" {
        argv.push("--all".into());
    }
    if namespace == "*" {
        argv.push("--all-namespaces".into());
    } else {
        argv.extend(["--namespace".into(), namespace.into()]);
    }
    if let Some(show) = c.show_events.filter(|_| what == "describe") {
        argv.push(format!("--show-events={show}"));
    }
    if !c.format.is_empty() && matches!(what, "get" | "events") {
        argv.extend(["--output".into(), s(&c.format)?]);
    }
    if what == "wait" {
        let f = c.wait_for.as_ref().ok_or("wait needs `for`")?;
        let cond = match (&f.creation, &f.deletion, &f.condition, &f.json_path) {
            (Some(_), None, None, None) => "create".to_string(),
            (None, Some(_), None, None) => "delete".to_string(),
            (None, None, Some(w), None) => match &w.value {
                Some(v) => format!("condition={}={}", s(&w.name)?, s(v.as_str())?),
                None => format!("condition={}", s(&w.name)?),
            },
            (None, None, None, Some(p)) => match &p.value {
                Some(v) => format!("jsonpath={}={}", s(&p.path)?, s(v.as_str())?),
                None => format!("jsonpath={}", s(&p.path)?),
            },
            _ => {
                return Err(
                    "wait.for needs exactly one of creation, deletion, condition, jsonPath".into(),
                );
            }
        };
        argv.push(format!("--for={cond}"));
        argv.push(format!("--timeout={}s", timeout.as_secs().max(1)));
    }
    Ok(argv)
}

async fn collect(what: &str, c: &Collector, scope: &Scope<'_>) -> Result<(), String> {
    let b = &scope.bindings;
    let default = if what == "wait" {
        scope.timeouts.assert
    } else {
        scope.timeouts.exec
    };
    let timeout = own_timeout(&c.timeout, default)?;
    let namespace = match expr::string(&c.namespace, b)?.as_str() {
        "" => scope.target.namespace.clone(),
        ns => ns.to_string(),
    };
    let argv = kubectl_argv(what, c, &namespace, timeout, b)?;
    let env = process::base_env(&scope.target.namespace, scope.kubeconfig, scope.cwd);
    // kubectl enforces a wait's timeout itself; the process gets some slack on top.
    let limit = if what == "wait" {
        timeout + scope.timeouts.exec
    } else {
        timeout
    };
    execute(
        argv,
        env,
        scope.test_dir.to_path_buf(),
        limit,
        &None,
        b,
        scope,
        (false, false),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chainsaw::model::{WaitFor, WaitValue};
    use serde_json::json;

    #[test]
    fn expectations_decide_on_a_matching_entry_and_bind_the_error() {
        let b = Bindings::default();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let expect = |m: Value, c: Value| Expectation {
            match_: Some(m),
            check: c,
        };
        let failing = Some("already exists".to_string());
        let wanted = [expect(
            json!({"kind": "ConfigMap"}),
            json!({"($error != null)": true}),
        )];
        assert!(expectations(&wanted, &cm, failing.clone(), &b).is_ok());
        let e = expectations(&wanted, &cm, None, &b).unwrap_err();
        assert!(
            e.contains("* ($error != null): Invalid value: false: Expected value: true"),
            "{e}"
        );
        let other = [expect(
            json!({"kind": "Secret"}),
            json!({"($error != null)": true}),
        )];
        assert_eq!(
            expectations(&other, &cm, failing.clone(), &b),
            Err("already exists".into())
        );
        assert_eq!(
            expectations(&[], &cm, failing, &b),
            Err("already exists".into())
        );
    }

    #[test]
    fn collectors_become_kubectl_commands() {
        let b = Bindings::default().with("n", json!("web"));
        let c = Collector {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "($n)".into(),
            wait_for: Some(WaitFor {
                condition: Some(WaitValue {
                    name: "Available".into(),
                    value: Some("true".into()),
                }),
                ..WaitFor::default()
            }),
            ..Collector::default()
        };
        assert_eq!(
            kubectl_argv("wait", &c, "ns", Duration::from_secs(30), &b)
                .unwrap()
                .join(" "),
            "kubectl wait deployment.v1.apps web --namespace ns --for=condition=Available=true --timeout=30s"
        );
        let logs = Collector {
            selector: "app=web".into(),
            tail: Some(5),
            ..Collector::default()
        };
        assert_eq!(
            kubectl_argv("podLogs", &logs, "*", Duration::ZERO, &b)
                .unwrap()
                .join(" "),
            "kubectl logs --prefix --all-containers --tail=5 --selector app=web --all-namespaces"
        );
        let events = Collector::default();
        assert_eq!(
            kubectl_argv("events", &events, "ns", Duration::ZERO, &b)
                .unwrap()
                .join(" "),
            "kubectl get events --namespace ns"
        );
        assert!(kubectl_argv("podLogs", &events, "ns", Duration::ZERO, &b).is_err());
    }
}
