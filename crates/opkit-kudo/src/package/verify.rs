//! `package verify`: KUDO's package verifiers — parameter names, versions, task and plan
//! references, templates that parse and render with the defaults, parameters used but not
//! defined (errors) and defined but not used (warnings) — with KUDO's messages.

use std::collections::{BTreeMap, BTreeSet};

use opkit_template::kudo::{Renderer, Variables, unwrap_param};

use super::convert::{plain, task_templates, wrap};
use super::{PackageFiles, PackageParameter};

/// What [`verify`] found: errors make a package invalid, warnings do not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    /// Problems that make the package invalid.
    pub errors: Vec<String>,
    /// Problems worth a look.
    pub warnings: Vec<String>,
}

impl Verification {
    /// No errors.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn error(&mut self, e: String) {
        self.errors.push(e);
    }

    fn param_error(&mut self, name: &str, reason: &str) {
        self.errors.push(format!("parameter {name:?} {reason}"));
    }
}

/// Runs KUDO's verifiers over a package's files.
pub fn verify(pf: &PackageFiles) -> Verification {
    let mut res = Verification::default();
    parameter_names(pf, &mut res);
    versions(pf, &mut res);
    tasks(pf, &mut res);
    plans(pf, &mut res);
    parameters(pf, &mut res);
    template_references(pf, &mut res);
    render(pf, &mut res);
    res
}

fn parameter_names(pf: &PackageFiles, res: &mut Verification) {
    let mut seen = BTreeSet::new();
    for p in &pf.params.parameters {
        let lower = p.name.to_lowercase();
        if !seen.insert(lower.clone()) {
            res.param_error(&p.name, "has a duplicate");
        }
        for c in lower.chars().filter(|c| ";,".contains(*c)) {
            res.param_error(&p.name, &format!("contains invalid character '{c}'"));
        }
    }
}

fn versions(pf: &PackageFiles, res: &mut Verification) {
    let op = &pf.operator;
    for (value, name, required) in [
        (&op.operator_version, "operatorVersion", true),
        (&op.app_version, "appVersion", false),
        (&op.kubernetes_version, "kubernetesVersion", true),
        (&op.kudo_version, "kudoVersion", false),
    ] {
        let v = value.trim();
        if v.is_empty() {
            if required {
                res.error(format!("{name:?} is required and must be semver"));
            }
        } else if !is_semver(v) {
            res.error(format!(
                "unable to parse {name:?}: Invalid Semantic Version"
            ));
        }
    }
}

/// KUDO's lenient semantic versions: an optional `v`, one to three numbers, then an
/// optional `-pre` and `+build`.
fn is_semver(v: &str) -> bool {
    let v = v.strip_prefix('v').unwrap_or(v);
    let core = v.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    (1..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn used_tasks(pf: &PackageFiles) -> BTreeSet<&str> {
    pf.operator
        .plans
        .values()
        .flat_map(|plan| &plan.phases)
        .flat_map(|phase| &phase.steps)
        .flat_map(|step| &step.tasks)
        .map(String::as_str)
        .collect()
}

fn tasks(pf: &PackageFiles, res: &mut Verification) {
    for t in &pf.operator.tasks {
        match t.kind.as_str() {
            "KudoOperator" if t.spec.package.is_empty() => res.error(format!(
                "task validation error: kudo operator task '{}' has an empty package name",
                t.name
            )),
            "Apply" | "Delete" | "Toggle" | "Pipe" | "KudoOperator" | "Dummy" => {}
            other => res.error(format!("task validation error: unknown task kind {other}")),
        }
    }
    let defined: BTreeSet<&str> = pf.operator.tasks.iter().map(|t| t.name.as_str()).collect();
    for (plan_name, plan) in &pf.operator.plans {
        for task in plan
            .phases
            .iter()
            .flat_map(|p| &p.steps)
            .flat_map(|s| &s.tasks)
        {
            if !defined.contains(task.as_str()) {
                res.error(format!(
                    "task {task:?} in plan {plan_name:?} is not defined"
                ));
            }
        }
    }
    let used = used_tasks(pf);
    for t in &pf.operator.tasks {
        if !used.contains(t.name.as_str()) {
            res.warnings
                .push(format!("task {:?} defined but not used", t.name));
        }
    }
}

fn plans(pf: &PackageFiles, res: &mut Verification) {
    for p in &pf.params.parameters {
        if !p.trigger.is_empty() && !pf.operator.plans.contains_key(&p.trigger) {
            res.error(format!(
                "plan {:?} used in parameter {:?} is not defined",
                p.trigger, p.name
            ));
        }
    }
    if !pf.operator.plans.contains_key(crate::api::DEPLOY_PLAN) {
        res.error("an operator is required to have 'deploy' plan".to_string());
    }
}

/// The parameters each template uses (`.Params.<name>` inside its actions).
fn template_params(pf: &PackageFiles) -> BTreeMap<&str, BTreeSet<String>> {
    pf.templates
        .iter()
        .map(|(name, text)| (name.as_str(), params_in(text)))
        .collect()
}

/// The names after `.Params.` inside `{{ }}` actions of a template's text.
pub(crate) fn params_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after.find("}}").unwrap_or(after.len());
        let action = &after[..close];
        let mut scan = action;
        while let Some(i) = scan.find(".Params.") {
            let tail = &scan[i + ".Params.".len()..];
            let ident: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !ident.is_empty() {
                found.insert(ident);
            }
            scan = tail;
        }
        rest = &after[close.min(after.len())..];
    }
    found
}

fn parameters(pf: &PackageFiles, res: &mut Verification) {
    let defined: BTreeSet<&str> = pf
        .params
        .parameters
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (template, params) in template_params(pf) {
        for p in params {
            if !defined.contains(p.as_str()) {
                res.error(format!(
                    "parameter {p:?} in template {template} is not defined"
                ));
            }
            used.insert(p);
        }
    }
    for t in pf.operator.tasks.iter().filter(|t| t.kind == "Toggle") {
        if !t.spec.parameter.is_empty() && !defined.contains(t.spec.parameter.as_str()) {
            res.error(format!(
                "parameter {:?} in ToggleTask {} is not defined",
                t.spec.parameter, t.name
            ));
        }
        used.insert(t.spec.parameter.clone());
    }
    for p in &pf.params.parameters {
        if !used.contains(&p.name) && p.trigger.is_empty() {
            res.warnings
                .push(format!("parameter {:?} defined but not used.", p.name));
        }
        parameter_rules(p, res);
    }
    let groups: BTreeSet<&str> = pf.params.groups.iter().map(|g| g.name.as_str()).collect();
    let mut seen = BTreeSet::new();
    for g in &pf.params.groups {
        if g.name.contains('/') {
            res.error(format!(
                "parameter group {:?} contains invalid character '/'",
                g.name
            ));
        }
        if !seen.insert(g.name.as_str()) {
            res.error(format!("parameter group {:?} is duplicated", g.name));
        }
    }
    for p in &pf.params.parameters {
        if !p.group.is_empty() && !groups.contains(p.group.as_str()) {
            res.param_error(
                &p.name,
                &format!(
                    "has a group {:?} that is not defined in the group section",
                    p.group
                ),
            );
        }
    }
}

fn parameter_rules(p: &PackageParameter, res: &mut Verification) {
    let required = p.required.unwrap_or(true);
    if p.immutable == Some(true) && p.default.is_none() && !required {
        res.param_error(
            &p.name,
            "is immutable but is not marked as required or has a default value",
        );
    }
    if let Some(values) = &p.enum_values {
        if values.is_empty() {
            res.param_error(&p.name, "is an enum but has no allowed values");
        }
        for v in values {
            if let Err(e) = crate::params::check_type(p.kind(), &plain(v)) {
                res.param_error(&p.name, &format!("has an invalid enum value: {e}"));
            }
        }
    }
    if let Some(d) = &p.default {
        let text = wrap(d, p.kind()).ok().flatten().unwrap_or_default();
        let invalid =
            |e: String| format!("parameter {:?} has an invalid default value: {e}", p.name);
        if let Err(e) = crate::params::check_type(p.kind(), &text) {
            res.error(invalid(e));
        } else if let Some(values) = &p.enum_values
            && !values.iter().any(|v| v == d)
        {
            let allowed: Vec<String> = values.iter().map(plain).collect();
            res.error(invalid(format!(
                "value is {:?}, but only allowed values are [{}]",
                plain(d),
                allowed.join(" ")
            )));
        }
    }
    if !p.group.is_empty() && p.group.contains('/') {
        res.param_error(&p.name, "has a group with invalid character '/'");
    }
    if p.advanced == Some(true) && p.default.is_none() && required {
        res.param_error(
            &p.name,
            "is marked as advanced, but also as required and has no default. An advanced \
             parameter must either be optional or have a default value",
        );
    }
}

fn template_references(pf: &PackageFiles, res: &mut Verification) {
    let mut required = BTreeSet::new();
    for t in &pf.operator.tasks {
        for r in task_templates(t) {
            required.insert(r);
            if !pf.templates.contains_key(r) {
                res.error(format!(
                    "template {r:?} required by {} but is not defined",
                    t.name
                ));
            }
        }
    }
    for name in pf.templates.keys() {
        if *name != pf.operator.namespace_manifest && !required.contains(name.as_str()) {
            res.warnings
                .push(format!("template {name:?} is not referenced from any task"));
        }
    }
}

/// Renders every template with the parameters' defaults and checks the result is YAML
/// (parameter files of `KudoOperator` tasks are only rendered).
fn render(pf: &PackageFiles, res: &mut Verification) {
    let mut params = BTreeMap::new();
    for p in &pf.params.parameters {
        let text = p
            .default
            .as_ref()
            .and_then(|d| wrap(d, p.kind()).ok().flatten());
        let kind = p.kind().render_kind();
        match unwrap_param(text.as_deref(), kind) {
            Ok(v) => {
                params.insert(p.name.clone(), v);
            }
            Err(e) => {
                res.error(format!("parameter {:?}: {e}", p.name));
                return;
            }
        }
    }
    let pipes = pf
        .operator
        .tasks
        .iter()
        .filter(|t| t.kind == "Pipe")
        .flat_map(|t| t.spec.pipe.iter().flatten())
        .map(|pipe| (pipe.key.clone(), format!("instance-{}", pipe.key)))
        .collect();
    let vars = Variables {
        operator_name: pf.operator.name.clone(),
        name: "instance".to_string(),
        namespace: "namespace".to_string(),
        app_version: pf.operator.app_version.clone(),
        operator_version: pf.operator.operator_version.clone(),
        plan_name: "plan".to_string(),
        phase_name: "phase".to_string(),
        step_name: "step".to_string(),
        params,
        pipes,
    };
    let parameter_files: BTreeSet<&str> = pf
        .operator
        .tasks
        .iter()
        .filter(|t| t.kind == "KudoOperator")
        .map(|t| t.spec.parameter_file.as_str())
        .collect();
    let renderer = Renderer::new();
    for (name, text) in &pf.templates {
        let rendered = match renderer.render(name, text, &vars) {
            Ok(r) => r,
            Err(e) => {
                res.error(e.to_string());
                continue;
            }
        };
        if parameter_files.contains(name.as_str()) {
            continue;
        }
        for doc in serde_yaml::Deserializer::from_str(&rendered) {
            if let Err(e) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) {
                res.error(format!("parsing rendered YAML from {name} failed: {e}"));
                break;
            }
        }
    }
}
