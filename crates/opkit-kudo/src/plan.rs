//! Which plan runs: KUDO's rules, decided by comparing the instance's spec with the last
//! spec the manager accepted.
//!
//! KUDO 0.19 decides in its (mutating, cert-manager backed) admission webhook, which sees
//! the old and the new object of every write. opkit's manager decides in its reconcile, so it
//! works on a cluster without any webhook: it remembers the last accepted spec itself, in
//! the annotation KUDO used before its webhook existed ([`SNAPSHOT_ANNOTATION`],
//! `kudo.dev/last-applied-instance-state`: the spec's JSON). A restarted manager reads the
//! same annotation and decides the same way. When the manager also serves its validating
//! webhook ([`crate::admission`]), the webhook runs this same [`decide`] on the snapshot and
//! the spec being written, so a change refused here is refused at write time instead.
//!
//! The rules ([`decide`]) are the webhook's `admitUpdate`, with its messages:
//! - install: `deploy` (values of the wrong type or outside their enum refused);
//! - a parameter change: the changed parameters' `trigger` plan (exactly one distinct plan,
//!   else refused), else `update`, else `deploy`; an immutable parameter may not change, a
//!   new value must be of the parameter's type and in its enum;
//! - an operator version change: `upgrade`, else `update`, else `deploy`;
//! - a manual trigger (`spec.planExecution` set by a user): that plan, if it exists;
//! - deletion: `cleanup` (if the operator version has one), overriding a running plan;
//! - while a plan runs, only a change that triggers the same plan is accepted (it restarts
//!   the plan with a new uid); anything else is refused.
//!
//! A refused change the webhook did not stop (no webhook, or an operator version its cache
//! did not hold yet) is not lost: the spec keeps it, the snapshot does not, so it is decided
//! again on the next pass — once the running plan has ended it starts its plan, while a
//! change that is wrong in itself (two trigger plans, an immutable parameter) stays refused
//! until it is undone.

use std::collections::{BTreeMap, BTreeSet};

use crate::api::{
    CLEANUP_PLAN, DEPLOY_PLAN, ExecutionStatus, Instance, InstanceSpec, InstanceStatus,
    OperatorVersion, Parameter, PlanExecution, UPDATE_PLAN, UPGRADE_PLAN,
};
use crate::params;

/// The annotation holding the last spec the manager accepted (JSON), KUDO's name for it.
pub const SNAPSHOT_ANNOTATION: &str = "kudo.dev/last-applied-instance-state";

/// The spec the manager decides against for `instance`: the last one it accepted (its
/// [`SNAPSHOT_ANNOTATION`]); for an instance some other manager ran (no snapshot, but plans
/// ran) the spec as it is; `None` for an instance no plan was decided for yet.
pub(crate) fn accepted_spec(
    instance: &Instance,
) -> Result<Option<InstanceSpec>, serde_json::Error> {
    let snapshot = instance
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SNAPSHOT_ANNOTATION))
        .map(|text| serde_json::from_str(text))
        .transpose()?;
    let ran = instance.status.as_ref().is_some_and(|s| {
        s.plan_status
            .values()
            .any(|p| p.status != ExecutionStatus::NeverRun)
    });
    Ok(snapshot.or_else(|| ran.then(|| instance.spec.clone())))
}

/// Whether the run `accepted` names has already ended (its plan's status is terminal for
/// that uid): it no longer counts as running, and the manager ends it before deciding.
pub(crate) fn run_ended(accepted: &InstanceSpec, status: Option<&InstanceStatus>) -> bool {
    let pe = &accepted.plan_execution;
    !pe.plan_name.is_empty()
        && status
            .and_then(|s| s.plan_status.get(&pe.plan_name))
            .is_some_and(|p| p.uid == pe.uid && p.status.is_terminal())
}

/// Ends the run `running`: the accepted spec no longer names it, and neither does the
/// current one unless a user has put another request there meanwhile.
pub(crate) fn end_run(
    accepted: &mut InstanceSpec,
    current: &mut InstanceSpec,
    running: &PlanExecution,
) {
    accepted.plan_execution = PlanExecution::default();
    if current.plan_execution.uid == running.uid
        && current.plan_execution.plan_name == running.plan_name
    {
        current.plan_execution = PlanExecution::default();
    }
}

/// What the manager knows when it decides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Observed<'a> {
    /// The instance's namespace (for messages).
    pub namespace: &'a str,
    /// The instance's name (for messages).
    pub name: &'a str,
    /// The last accepted spec; `None` for an instance no plan was ever decided for.
    pub accepted: Option<&'a InstanceSpec>,
    /// The spec now.
    pub current: &'a InstanceSpec,
    /// The operator version the current spec names.
    pub operator_version: &'a OperatorVersion,
    /// The operator version the accepted spec names, when it differs and still exists.
    pub previous_operator_version: Option<&'a OperatorVersion>,
    /// Whether the instance is being deleted.
    pub deleting: bool,
    /// The `cleanup` plan's status, if the instance has one.
    pub cleanup_status: Option<ExecutionStatus>,
}

/// What the manager does about the instance's plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing new: the running plan (if any) goes on.
    Keep,
    /// Start `plan` (restart it if it runs), with the given run uid (a user's manual
    /// trigger brings one) or a new one.
    Start {
        /// The plan's name.
        plan: String,
        /// The run's uid, when the user chose it.
        uid: Option<String>,
    },
    /// The change is not accepted (KUDO's admission message); the running plan goes on.
    Refuse(String),
}

impl Decision {
    fn start(plan: &str) -> Decision {
        Decision::Start {
            plan: plan.to_string(),
            uid: None,
        }
    }
}

/// Decides which plan runs; see the [module docs](self).
pub(crate) fn decide(o: &Observed<'_>) -> Decision {
    let ov = o.operator_version;
    if o.deleting {
        let running = o
            .accepted
            .map(|a| a.plan_execution.plan_name.as_str())
            .unwrap_or("");
        let never_ran = o
            .cleanup_status
            .is_none_or(|s| s == ExecutionStatus::NeverRun);
        if has_plan(ov, CLEANUP_PLAN) && never_ran && running != CLEANUP_PLAN {
            return Decision::start(CLEANUP_PLAN);
        }
        return Decision::Keep;
    }
    let Some(old) = o.accepted else {
        if !has_plan(ov, DEPLOY_PLAN) {
            return Decision::Refuse(format!(
                "failed to create an Instance {}/{}: couldn't find '{DEPLOY_PLAN}' plan in the operatorVersion",
                o.namespace, o.name
            ));
        }
        let errors = params::value_errors(&ov.spec.parameters, &o.current.parameters);
        if !errors.is_empty() {
            return Decision::Refuse(format!(
                "failed to create an Instance {}/{}: parameters are not valid: {}",
                o.namespace,
                o.name,
                errors.join("; ")
            ));
        }
        return Decision::start(DEPLOY_PLAN);
    };
    match admit_update(o, old) {
        Ok(d) => d,
        Err(message) => Decision::Refuse(message),
    }
}

fn has_plan(ov: &OperatorVersion, plan: &str) -> bool {
    ov.spec.plans.contains_key(plan)
}

/// The first of `plans` the operator version has.
fn select_plan<'a>(plans: &[&'a str], ov: &OperatorVersion) -> Option<&'a str> {
    plans.iter().copied().find(|p| has_plan(ov, p))
}

/// KUDO's `admitUpdate` for a live instance.
fn admit_update(o: &Observed<'_>, old: &InstanceSpec) -> Result<Decision, String> {
    let new = o.current;
    let ov = o.operator_version;
    let who = format!("{}/{}", o.namespace, o.name);
    let new_plan = new.plan_execution.plan_name.as_str();
    let old_plan = old.plan_execution.plan_name.as_str();
    let new_uid = new.plan_execution.uid.as_str();
    let old_uid = old.plan_execution.uid.as_str();
    let new_ov = new.operator_version.name.as_deref().unwrap_or("");
    let old_ov = old.operator_version.name.as_deref().unwrap_or("");

    let had_plan = !old_plan.is_empty();
    let is_upgrade = new_ov != old_ov;
    let is_novel_plan = !had_plan && !new_plan.is_empty();
    let is_override = had_plan && !new_plan.is_empty() && new_plan != old_plan;
    let is_retriggered = had_plan && new_plan == old_plan && new_uid != old_uid;
    let is_cancellation = had_plan && new_plan.is_empty();

    if !new_plan.is_empty() && new_plan != old_plan && !has_plan(ov, new_plan) {
        return Err(format!("plan {new_plan} does not exist"));
    }

    // Without the previous operator version (deleted since), every parameter is judged by
    // the current one.
    let previous_ov = if is_upgrade {
        o.previous_operator_version
    } else {
        Some(ov)
    };
    let (changed, removed) = changed_parameters(&old.parameters, &new.parameters, previous_ov, ov)
        .map_err(|e| format!("failed to update Instance {who}: {e}"))?;
    check_immutable_parameters(old, new, ov, previous_ov, &changed, is_upgrade)
        .map_err(|e| format!("failed to check immutable parameters for Instance {who}: {e}"))?;
    let new_values: BTreeMap<String, String> = new
        .parameters
        .iter()
        .filter(|(k, v)| old.parameters.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let errors = params::value_errors(&ov.spec.parameters, &new_values);
    if !errors.is_empty() {
        return Err(format!(
            "failed to validate parameters for Instance {who}: {}",
            errors.join("; ")
        ));
    }
    let updated: Vec<&Parameter> = changed.iter().chain(&removed).copied().collect();
    let triggered = triggered_by_parameter_update(&updated, ov)
        .map_err(|e| format!("failed to update Instance {who}: {e}"))?;
    let is_parameter_update = triggered.is_some();
    let incompatible_with_upgrade = triggered.as_deref().is_some_and(|t| t != DEPLOY_PLAN);

    if let Some(t) = triggered.as_deref()
        && had_plan
        && t != old_plan
    {
        return Err(format!(
            "failed to update Instance {who}: plan '{old_plan}' is scheduled (or running) and an update would trigger a different plan '{t}'"
        ));
    }
    if is_upgrade && had_plan {
        return Err(format!(
            "failed to update Instance {who}: upgrade to new OperatorVersion {new_ov} while a plan '{old_plan}' is scheduled (or running) is not allowed"
        ));
    }
    if is_upgrade && is_novel_plan {
        return Err(format!(
            "failed to update Instance {who}: upgrade to new OperatorVersion {new_ov} and triggering new plan '{new_plan}' is not allowed"
        ));
    }
    if is_upgrade && incompatible_with_upgrade {
        return Err(format!(
            "failed to update Instance {who}: upgrade to new OperatorVersion {new_ov} together with a parameter update triggering '{}' is not allowed",
            triggered.as_deref().unwrap_or_default()
        ));
    }
    if is_override {
        return Err(format!(
            "failed to update Instance {who}: overriding currently scheduled (or running) plan '{old_plan}' with '{new_plan}' is not supported"
        ));
    }
    if is_cancellation {
        return Err(format!(
            "failed to update Instance {who}: cancelling currently scheduled (or running) plan '{old_plan}' is not supported"
        ));
    }
    if is_parameter_update && is_novel_plan {
        return Err(format!(
            "failed to update Instance {who}: triggering one plan '{new_plan}' directly and through parameter update '{}' is not allowed",
            triggered.as_deref().unwrap_or_default()
        ));
    }
    if new_plan == CLEANUP_PLAN && (is_novel_plan || is_retriggered) {
        return Err(format!(
            "failed to update Instance {who}: only the controller schedules the '{CLEANUP_PLAN}' plan when the instance is deleted"
        ));
    }

    if is_upgrade {
        return match select_plan(&[UPGRADE_PLAN, UPDATE_PLAN, DEPLOY_PLAN], ov) {
            Some(p) => Ok(Decision::start(p)),
            None => Err(format!(
                "failed to update Instance {who}: couldn't find any suitable plan that would be triggered by an OperatorVersion upgrade"
            )),
        };
    }
    if let Some(t) = triggered {
        return Ok(Decision::Start { plan: t, uid: None });
    }
    if is_novel_plan || is_retriggered {
        return Ok(Decision::Start {
            plan: new_plan.to_string(),
            uid: (!new_uid.is_empty()).then(|| new_uid.to_string()),
        });
    }
    Ok(Decision::Keep)
}

/// The definitions of the parameters whose value changed or was added (defined in the
/// previous operator version too: a parameter an upgrade adds is not a change), and of those
/// removed (when the current version still defines them).
fn changed_parameters<'a>(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    previous_ov: Option<&OperatorVersion>,
    ov: &'a OperatorVersion,
) -> Result<(Vec<&'a Parameter>, Vec<&'a Parameter>), String> {
    let mut changed = Vec::new();
    for (name, value) in new {
        if old.get(name) == Some(value) {
            continue;
        }
        let def = definition(ov, name)
            .ok_or_else(|| format!("failed to find parameter {name:?} in the OperatorVersion"))?;
        if previous_ov.is_some_and(|p| definition(p, name).is_some()) {
            changed.push(def);
        }
    }
    let removed = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .filter_map(|k| definition(ov, k))
        .collect();
    Ok((changed, removed))
}

fn definition<'a>(ov: &'a OperatorVersion, name: &str) -> Option<&'a Parameter> {
    ov.spec.parameters.iter().find(|p| p.name == name)
}

/// The value a parameter has: the instance's, else the default.
fn effective<'a>(values: &'a BTreeMap<String, String>, def: &'a Parameter) -> &'a str {
    values
        .get(&def.name)
        .map(String::as_str)
        .or(def.default.as_deref())
        .unwrap_or("")
}

/// Immutable parameters keep their value (the instance's or the default: KUDO writes the
/// default of an immutable parameter into the instance at install); an upgrade that makes a
/// parameter immutable, or adds an immutable one, needs its value given.
fn check_immutable_parameters(
    old: &InstanceSpec,
    new: &InstanceSpec,
    ov: &OperatorVersion,
    previous_ov: Option<&OperatorVersion>,
    changed: &[&Parameter],
    is_upgrade: bool,
) -> Result<(), String> {
    if !is_upgrade {
        for p in changed.iter().filter(|p| p.is_immutable()) {
            let (was, is) = (effective(&old.parameters, p), effective(&new.parameters, p));
            if was != is {
                return Err(format!(
                    "parameter '{}' is immutable but was changed from '{was}' to '{is}'",
                    p.name
                ));
            }
        }
        return Ok(());
    }
    let Some(previous) = previous_ov else {
        return Ok(());
    };
    let ov_name = ov.metadata.name.as_deref().unwrap_or("");
    for p in &ov.spec.parameters {
        let given = new.parameters.contains_key(&p.name);
        match definition(previous, &p.name) {
            Some(before) if p.is_immutable() && !before.is_immutable() && !given => {
                return Err(format!(
                    "parameter '{}' was changed to immutable in operator version {ov_name} but no value was provided",
                    p.name
                ));
            }
            None if p.is_immutable() && !given => {
                return Err(match &p.default {
                    Some(d) => format!(
                        "parameter '{}' was added in operator version {ov_name}, but no value was provided (default would be {d})",
                        p.name
                    ),
                    None => format!(
                        "parameter '{}' was added in operator version {ov_name}, but no value was provided",
                        p.name
                    ),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The plan the updated parameters trigger: their `trigger` plans (exactly one distinct), or
/// `update`, or `deploy`; `None` when no parameter changed.
fn triggered_by_parameter_update(
    params: &[&Parameter],
    ov: &OperatorVersion,
) -> Result<Option<String>, String> {
    if params.is_empty() {
        return Ok(None);
    }
    let mut sorted = params.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut plans: Vec<&str> = Vec::new();
    let mut by_plan: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in &sorted {
        if p.trigger.is_empty() {
            continue;
        }
        if !has_plan(ov, &p.trigger) {
            return Err(format!(
                "param {} defined trigger plan {}, but plan not defined in operatorversion",
                p.name, p.trigger
            ));
        }
        if !plans.contains(&p.trigger.as_str()) {
            plans.push(&p.trigger);
        }
        by_plan.entry(&p.trigger).or_default().insert(&p.name);
    }
    match plans.as_slice() {
        [] => select_plan(&[UPDATE_PLAN, DEPLOY_PLAN], ov)
            .map(|p| Some(p.to_string()))
            .ok_or_else(|| "couldn't find any plans that would be triggered by the update".into()),
        [one] => Ok(Some(one.to_string())),
        many => {
            let which: Vec<String> = many
                .iter()
                .map(|plan| {
                    let names: Vec<&str> = by_plan[plan].iter().copied().collect();
                    format!("{} triggers '{plan}'", names.join(", "))
                })
                .collect();
            Err(format!(
                "triggering multiple plans: [[{}]] at once is not allowed ({})",
                many.join(" "),
                which.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::OperatorVersionSpec;

    fn ov(plans: &[&str], params: Vec<Parameter>) -> OperatorVersion {
        let mut ov = OperatorVersion::new(
            "op-0.1.0",
            OperatorVersionSpec {
                plans: plans
                    .iter()
                    .map(|p| (p.to_string(), Default::default()))
                    .collect(),
                parameters: params,
                ..Default::default()
            },
        );
        ov.metadata.namespace = Some("ns".into());
        ov
    }

    fn param(name: &str, trigger: &str) -> Parameter {
        Parameter {
            name: name.into(),
            trigger: trigger.into(),
            default: Some("d".into()),
            ..Default::default()
        }
    }

    fn immutable(name: &str, default: Option<&str>) -> Parameter {
        Parameter {
            name: name.into(),
            immutable: Some(true),
            default: default.map(Into::into),
            ..Default::default()
        }
    }

    fn spec(ov: &str, params: &[(&str, &str)], plan: &str, uid: &str) -> InstanceSpec {
        InstanceSpec {
            operator_version: k8s_openapi::api::core::v1::ObjectReference {
                name: Some(ov.into()),
                ..Default::default()
            },
            parameters: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            plan_execution: PlanExecution {
                plan_name: plan.into(),
                uid: uid.into(),
                status: None,
            },
        }
    }

    fn observe<'a>(
        accepted: Option<&'a InstanceSpec>,
        current: &'a InstanceSpec,
        ov: &'a OperatorVersion,
    ) -> Observed<'a> {
        Observed {
            namespace: "ns",
            name: "inst",
            accepted,
            current,
            operator_version: ov,
            previous_operator_version: None,
            deleting: false,
            cleanup_status: None,
        }
    }

    fn start(plan: &str) -> Decision {
        Decision::start(plan)
    }

    fn refused(d: Decision) -> String {
        match d {
            Decision::Refuse(m) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn install_runs_deploy() {
        let ov = ov(&["deploy", "update"], vec![]);
        let cur = spec("op-0.1.0", &[], "", "");
        assert_eq!(decide(&observe(None, &cur, &ov)), start("deploy"));
    }

    #[test]
    fn install_without_deploy_plan_is_refused_with_kudos_message() {
        let ov = ov(&["update"], vec![]);
        let cur = spec("op-0.1.0", &[], "", "");
        assert_eq!(
            refused(decide(&observe(None, &cur, &ov))),
            "failed to create an Instance ns/inst: couldn't find 'deploy' plan in the operatorVersion"
        );
    }

    #[test]
    fn install_with_a_value_of_the_wrong_type_is_refused() {
        let mut n = param("N", "");
        n.value_type = Some(crate::api::ParameterType::Integer);
        let ov = ov(&["deploy"], vec![n]);
        let cur = spec("op-0.1.0", &[("N", "x")], "", "");
        assert!(
            refused(decide(&observe(None, &cur, &ov))).starts_with(
                "failed to create an Instance ns/inst: parameters are not valid: parameter \"N\" has an invalid value \"x\""
            )
        );
    }

    #[test]
    fn changed_value_outside_its_enum_is_refused_unchanged_ones_are_not_judged() {
        let mut mode = param("M", "");
        mode.r#enum = Some(vec!["a".into(), "b".into()]);
        let ov = ov(&["deploy", "update"], vec![mode, param("B", "")]);
        let old = spec("op-0.1.0", &[("M", "a")], "", "");
        let cur = spec("op-0.1.0", &[("M", "c")], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to validate parameters for Instance ns/inst: parameter \"M\" has an invalid value \"c\": value is \"c\", but only allowed values are [a b]"
        );
        // A value stored before (e.g. without the webhook) does not block other changes.
        let bad_old = spec("op-0.1.0", &[("M", "c")], "", "");
        let other = spec("op-0.1.0", &[("M", "c"), ("B", "2")], "", "");
        assert_eq!(
            decide(&observe(Some(&bad_old), &other, &ov)),
            start("update")
        );
    }

    #[test]
    fn accepted_spec_is_the_snapshot_else_the_spec_of_an_instance_whose_plans_ran() {
        let s = spec("op-0.1.0", &[("A", "1")], "", "");
        let mut inst = Instance::new("inst", s.clone());
        assert_eq!(accepted_spec(&inst).unwrap(), None);
        let mut status = crate::api::InstanceStatus::default();
        status.plan_status.insert(
            "deploy".into(),
            crate::api::PlanStatus {
                status: ExecutionStatus::Complete,
                uid: "u1".into(),
                ..Default::default()
            },
        );
        inst.status = Some(status);
        assert_eq!(accepted_spec(&inst).unwrap(), Some(s.clone()));
        let snap = spec("op-0.1.0", &[], "deploy", "u1");
        inst.metadata.annotations = Some(
            [(
                SNAPSHOT_ANNOTATION.to_string(),
                serde_json::to_string(&snap).unwrap(),
            )]
            .into(),
        );
        assert_eq!(accepted_spec(&inst).unwrap(), Some(snap.clone()));
        // Its run ended (terminal for that uid): no longer running.
        assert!(run_ended(&snap, inst.status.as_ref()));
        let other_run = spec("op-0.1.0", &[], "deploy", "u2");
        assert!(!run_ended(&other_run, inst.status.as_ref()));
    }

    #[test]
    fn unchanged_spec_keeps_the_running_plan() {
        let ov = ov(&["deploy"], vec![param("A", "")]);
        let s = spec("op-0.1.0", &[("A", "1")], "deploy", "u1");
        assert_eq!(decide(&observe(Some(&s), &s, &ov)), Decision::Keep);
    }

    #[test]
    fn parameter_change_runs_its_trigger_plan() {
        let ov = ov(
            &["deploy", "update", "scale"],
            vec![param("A", "scale"), param("B", "")],
        );
        let old = spec("op-0.1.0", &[("A", "1")], "", "");
        let cur = spec("op-0.1.0", &[("A", "2")], "", "");
        assert_eq!(decide(&observe(Some(&old), &cur, &ov)), start("scale"));
    }

    #[test]
    fn added_parameter_value_counts_as_a_change() {
        let ov = ov(&["deploy", "scale"], vec![param("A", "scale")]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.1.0", &[("A", "2")], "", "");
        assert_eq!(decide(&observe(Some(&old), &cur, &ov)), start("scale"));
    }

    #[test]
    fn removed_parameter_value_triggers_its_plan() {
        let ov = ov(&["deploy", "scale"], vec![param("A", "scale")]);
        let old = spec("op-0.1.0", &[("A", "2")], "", "");
        let cur = spec("op-0.1.0", &[], "", "");
        assert_eq!(decide(&observe(Some(&old), &cur, &ov)), start("scale"));
    }

    #[test]
    fn parameter_without_trigger_runs_update_else_deploy() {
        let with_update = ov(&["deploy", "update"], vec![param("B", "")]);
        let old = spec("op-0.1.0", &[("B", "1")], "", "");
        let cur = spec("op-0.1.0", &[("B", "2")], "", "");
        assert_eq!(
            decide(&observe(Some(&old), &cur, &with_update)),
            start("update")
        );
        let only_deploy = ov(&["deploy"], vec![param("B", "")]);
        assert_eq!(
            decide(&observe(Some(&old), &cur, &only_deploy)),
            start("deploy")
        );
        let none = ov(&["other"], vec![param("B", "")]);
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &none))),
            "failed to update Instance ns/inst: couldn't find any plans that would be triggered by the update"
        );
    }

    #[test]
    fn two_trigger_plans_are_refused_naming_parameters_and_plans() {
        let ov = ov(
            &["deploy", "scale", "tune"],
            vec![param("A", "scale"), param("B", "tune")],
        );
        let old = spec("op-0.1.0", &[("A", "1"), ("B", "1")], "", "");
        let cur = spec("op-0.1.0", &[("A", "2"), ("B", "2")], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: triggering multiple plans: [[scale tune]] at once is not allowed (A triggers 'scale'; B triggers 'tune')"
        );
    }

    #[test]
    fn same_trigger_plan_from_two_parameters_is_one_plan() {
        let ov = ov(
            &["deploy", "scale"],
            vec![param("A", "scale"), param("B", "scale")],
        );
        let old = spec("op-0.1.0", &[("A", "1"), ("B", "1")], "", "");
        let cur = spec("op-0.1.0", &[("A", "2"), ("B", "2")], "", "");
        assert_eq!(decide(&observe(Some(&old), &cur, &ov)), start("scale"));
    }

    #[test]
    fn trigger_naming_a_missing_plan_is_refused() {
        let ov = ov(&["deploy"], vec![param("A", "nope")]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.1.0", &[("A", "2")], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: param A defined trigger plan nope, but plan not defined in operatorversion"
        );
    }

    #[test]
    fn unknown_parameter_is_refused() {
        let ov = ov(&["deploy"], vec![]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.1.0", &[("X", "1")], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: failed to find parameter \"X\" in the OperatorVersion"
        );
    }

    #[test]
    fn immutable_parameter_change_is_refused_default_counts_as_old_value() {
        let ov = ov(&["deploy"], vec![immutable("I", Some("a"))]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.1.0", &[("I", "b")], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to check immutable parameters for Instance ns/inst: parameter 'I' is immutable but was changed from 'a' to 'b'"
        );
        // Writing the default explicitly is no change of value.
        let same = spec("op-0.1.0", &[("I", "a")], "", "");
        assert_eq!(decide(&observe(Some(&old), &same, &ov)), start("deploy"));
    }

    #[test]
    fn change_while_a_plan_runs_is_refused_unless_it_triggers_that_plan() {
        let ov = ov(
            &["deploy", "scale"],
            vec![param("A", "scale"), param("B", "deploy")],
        );
        let old = spec("op-0.1.0", &[("A", "1"), ("B", "1")], "deploy", "u1");
        let cur = spec("op-0.1.0", &[("A", "2"), ("B", "1")], "deploy", "u1");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: plan 'deploy' is scheduled (or running) and an update would trigger a different plan 'scale'"
        );
        let same = spec("op-0.1.0", &[("A", "1"), ("B", "2")], "deploy", "u1");
        assert_eq!(decide(&observe(Some(&old), &same, &ov)), start("deploy"));
    }

    #[test]
    fn upgrade_runs_upgrade_then_update_then_deploy() {
        let prev = ov(&["deploy"], vec![]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.2.0", &[], "", "");
        for (plans, want) in [
            (&["deploy", "update", "upgrade"][..], "upgrade"),
            (&["deploy", "update"][..], "update"),
            (&["deploy"][..], "deploy"),
        ] {
            let next = ov(plans, vec![]);
            let mut o = observe(Some(&old), &cur, &next);
            o.previous_operator_version = Some(&prev);
            assert_eq!(decide(&o), start(want), "plans {plans:?}");
        }
        let none = ov(&["other"], vec![]);
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &none))),
            "failed to update Instance ns/inst: couldn't find any suitable plan that would be triggered by an OperatorVersion upgrade"
        );
    }

    #[test]
    fn upgrade_while_a_plan_runs_is_refused() {
        let ov = ov(&["deploy", "upgrade"], vec![]);
        let old = spec("op-0.1.0", &[], "deploy", "u1");
        let cur = spec("op-0.2.0", &[], "deploy", "u1");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: upgrade to new OperatorVersion op-0.2.0 while a plan 'deploy' is scheduled (or running) is not allowed"
        );
    }

    #[test]
    fn upgrade_with_a_parameter_triggering_another_plan_is_refused() {
        let prev = ov(&["deploy", "scale"], vec![param("A", "scale")]);
        let next = ov(&["deploy", "scale", "upgrade"], vec![param("A", "scale")]);
        let old = spec("op-0.1.0", &[("A", "1")], "", "");
        let cur = spec("op-0.2.0", &[("A", "2")], "", "");
        let mut o = observe(Some(&old), &cur, &next);
        o.previous_operator_version = Some(&prev);
        assert_eq!(
            refused(decide(&o)),
            "failed to update Instance ns/inst: upgrade to new OperatorVersion op-0.2.0 together with a parameter update triggering 'scale' is not allowed"
        );
    }

    #[test]
    fn upgrade_with_a_parameter_new_in_that_version_is_no_parameter_update() {
        let prev = ov(&["deploy"], vec![]);
        let next = ov(&["deploy", "upgrade"], vec![param("A", "scale")]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.2.0", &[("A", "2")], "", "");
        let mut o = observe(Some(&old), &cur, &next);
        o.previous_operator_version = Some(&prev);
        assert_eq!(decide(&o), start("upgrade"));
    }

    #[test]
    fn upgrade_adding_an_immutable_parameter_needs_its_value() {
        let prev = ov(&["deploy"], vec![]);
        let next = ov(&["deploy", "upgrade"], vec![immutable("I", Some("x"))]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.2.0", &[], "", "");
        let mut o = observe(Some(&old), &cur, &next);
        o.previous_operator_version = Some(&prev);
        assert_eq!(
            refused(decide(&o)),
            "failed to check immutable parameters for Instance ns/inst: parameter 'I' was added in operator version op-0.1.0, but no value was provided (default would be x)"
        );
        let given = spec("op-0.2.0", &[("I", "y")], "", "");
        let mut o = observe(Some(&old), &given, &next);
        o.previous_operator_version = Some(&prev);
        assert_eq!(decide(&o), start("upgrade"));
    }

    #[test]
    fn upgrade_making_a_parameter_immutable_needs_its_value() {
        let prev = ov(&["deploy"], vec![param("I", "")]);
        let next = ov(&["deploy", "upgrade"], vec![immutable("I", None)]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.2.0", &[], "", "");
        let mut o = observe(Some(&old), &cur, &next);
        o.previous_operator_version = Some(&prev);
        assert!(refused(decide(&o)).ends_with(
            "parameter 'I' was changed to immutable in operator version op-0.1.0 but no value was provided"
        ));
    }

    #[test]
    fn manual_trigger_runs_any_existing_plan_with_the_users_uid() {
        let ov = ov(&["deploy", "backup", "upgrade"], vec![]);
        let old = spec("op-0.1.0", &[], "", "");
        for plan in ["backup", "upgrade", "deploy"] {
            let cur = spec("op-0.1.0", &[], plan, "user-uid");
            assert_eq!(
                decide(&observe(Some(&old), &cur, &ov)),
                Decision::Start {
                    plan: plan.into(),
                    uid: Some("user-uid".into())
                }
            );
        }
        let missing = spec("op-0.1.0", &[], "nope", "u");
        assert_eq!(
            refused(decide(&observe(Some(&old), &missing, &ov))),
            "plan nope does not exist"
        );
    }

    #[test]
    fn manual_trigger_while_another_plan_runs_is_refused_with_kudos_message() {
        let ov = ov(&["deploy", "backup"], vec![]);
        let old = spec("op-0.1.0", &[], "deploy", "u1");
        let cur = spec("op-0.1.0", &[], "backup", "u2");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: overriding currently scheduled (or running) plan 'deploy' with 'backup' is not supported"
        );
    }

    #[test]
    fn retriggering_the_running_plan_restarts_it() {
        let ov = ov(&["deploy"], vec![]);
        let old = spec("op-0.1.0", &[], "deploy", "u1");
        let cur = spec("op-0.1.0", &[], "deploy", "u2");
        assert_eq!(
            decide(&observe(Some(&old), &cur, &ov)),
            Decision::Start {
                plan: "deploy".into(),
                uid: Some("u2".into())
            }
        );
    }

    #[test]
    fn cancelling_the_running_plan_is_refused() {
        let ov = ov(&["deploy"], vec![]);
        let old = spec("op-0.1.0", &[], "deploy", "u1");
        let cur = spec("op-0.1.0", &[], "", "");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: cancelling currently scheduled (or running) plan 'deploy' is not supported"
        );
    }

    #[test]
    fn manual_trigger_with_a_parameter_change_is_refused() {
        let ov = ov(&["deploy", "backup"], vec![param("A", "")]);
        let old = spec("op-0.1.0", &[("A", "1")], "", "");
        let cur = spec("op-0.1.0", &[("A", "2")], "backup", "u");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: triggering one plan 'backup' directly and through parameter update 'deploy' is not allowed"
        );
    }

    #[test]
    fn upgrade_with_a_manual_trigger_is_refused() {
        let ov = ov(&["deploy", "backup"], vec![]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.2.0", &[], "backup", "u");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: upgrade to new OperatorVersion op-0.2.0 and triggering new plan 'backup' is not allowed"
        );
    }

    #[test]
    fn users_may_not_trigger_cleanup() {
        let ov = ov(&["deploy", "cleanup"], vec![]);
        let old = spec("op-0.1.0", &[], "", "");
        let cur = spec("op-0.1.0", &[], "cleanup", "u");
        assert_eq!(
            refused(decide(&observe(Some(&old), &cur, &ov))),
            "failed to update Instance ns/inst: only the controller schedules the 'cleanup' plan when the instance is deleted"
        );
    }

    #[test]
    fn deletion_runs_cleanup_once_overriding_a_running_plan() {
        let ov = ov(&["deploy", "cleanup"], vec![]);
        let old = spec("op-0.1.0", &[], "deploy", "u1");
        let mut o = observe(Some(&old), &old, &ov);
        o.deleting = true;
        assert_eq!(decide(&o), start("cleanup"));
        o.cleanup_status = Some(ExecutionStatus::NeverRun);
        assert_eq!(decide(&o), start("cleanup"));
        o.cleanup_status = Some(ExecutionStatus::InProgress);
        assert_eq!(decide(&o), Decision::Keep);
        let running = spec("op-0.1.0", &[], "cleanup", "u2");
        let mut o = observe(Some(&running), &running, &ov);
        o.deleting = true;
        assert_eq!(decide(&o), Decision::Keep);
    }

    #[test]
    fn deletion_without_cleanup_plan_starts_nothing() {
        let ov = ov(&["deploy"], vec![]);
        let s = spec("op-0.1.0", &[], "", "");
        let mut o = observe(Some(&s), &s, &ov);
        o.deleting = true;
        assert_eq!(decide(&o), Decision::Keep);
    }
}
