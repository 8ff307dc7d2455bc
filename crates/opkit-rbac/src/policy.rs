//! The policy index: all Roles, ClusterRoles and bindings, arranged so that one authorization
//! decision touches only the bindings that name the user.
//!
//! Upstream's authorizer lists every ClusterRoleBinding (and every RoleBinding of the namespace)
//! on each request and tests each subject. Here [`Policy::new`] does that work once:
//!
//! - every binding's `roleRef` is resolved to its rules up front (`Arc`-shared with the role, so
//!   a ClusterRole bound ten thousand times is stored once); a reference that cannot be resolved
//!   is kept as a [`RuleError`] to report, as upstream does;
//! - aggregated ClusterRoles are resolved (see [`crate::aggregate()`]) before binding;
//! - bindings are indexed by subject: user name (a ServiceAccount subject is indexed under its
//!   user name `system:serviceaccount:NS:NAME`) and group name, in one index for
//!   ClusterRoleBindings and one per namespace for RoleBindings.
//!
//! [`Policy::authorize`] then makes one hash lookup for the user name, one per group of the user
//! and, for namespaced requests, the same in that namespace's index; it allocates nothing unless
//! it denies a request while some applicable binding is broken (the reason then names the
//! errors). Bindings are numbered in input order, ClusterRoleBindings first, which is the order
//! upstream visits them in; [`Policy::rules_for`] keeps that order.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::authorization::v1::{
    NonResourceRule, ResourceRule, SubjectRulesReviewStatus,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::aggregate::resolve;
use crate::error::{AggregationError, RuleError, aggregate_messages};
use crate::message::escalation_message_with_errors;
use crate::rules::{covers, rule_allows};
use crate::user::{SYSTEM_MASTERS, is_service_account_username, service_account_username};
use crate::{Decision, Request, UserInfo};
use opkit_apimachinery::go_quote;

type Rules = Arc<[PolicyRule]>;

/// An immutable, indexed snapshot of the cluster's RBAC objects. Build it whenever they change
/// and share it (`Arc<Policy>`) between requests.
#[derive(Debug, Default)]
pub struct Policy {
    /// Every binding's resolved rules, ClusterRoleBindings first, each in input order.
    bindings: Vec<Result<Rules, RuleError>>,
    /// Where each binding came from, for allow reasons (kept apart from the hot `bindings`).
    sources: Vec<BindingSource>,
    /// ClusterRoleBindings by subject.
    cluster: SubjectIndex,
    /// RoleBindings by namespace, then by subject.
    namespaced: HashMap<String, SubjectIndex>,
    /// The effective rules of every ClusterRole (aggregation resolved).
    cluster_roles: HashMap<String, Rules>,
    /// The rules of every Role, by namespace and name.
    roles: HashMap<String, HashMap<String, Rules>>,
    aggregation_errors: Vec<AggregationError>,
}

/// Binding numbers by subject name.
#[derive(Debug, Default)]
struct SubjectIndex {
    users: HashMap<String, Vec<u32>>,
    groups: HashMap<String, Vec<u32>>,
}

impl SubjectIndex {
    /// Indexes binding `id` under each subject that can ever apply. ServiceAccount subjects
    /// without a namespace take `default_namespace` (the RoleBinding's, as upstream defaults
    /// them); in ClusterRoleBindings they have none and never apply.
    fn add(&mut self, id: u32, subjects: &[Subject], default_namespace: Option<&str>) {
        for subject in subjects {
            let (map, key) = match subject.kind.as_str() {
                "User" => (&mut self.users, subject.name.clone()),
                "Group" => (&mut self.groups, subject.name.clone()),
                "ServiceAccount" => {
                    let namespace = subject
                        .namespace
                        .as_deref()
                        .filter(|ns| !ns.is_empty())
                        .or(default_namespace);
                    let Some(namespace) = namespace else {
                        continue;
                    };
                    (
                        &mut self.users,
                        service_account_username(namespace, &subject.name),
                    )
                }
                _ => continue,
            };
            let ids = map.entry(key).or_default();
            // A binding naming the same subject twice applies once.
            if ids.last() != Some(&id) {
                ids.push(id);
            }
        }
    }

    /// The bindings applying to `user`, as (possibly overlapping) id lists.
    fn lists<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a [u32]> + 'a {
        let by_name = self.users.get(&user.name).map(Vec::as_slice);
        let by_group = user
            .groups
            .iter()
            .filter_map(|g| self.groups.get(g).map(Vec::as_slice));
        by_name.into_iter().chain(by_group)
    }
}

/// A binding's identity, for describing why a request was allowed.
#[derive(Debug)]
struct BindingSource {
    /// `None` for a ClusterRoleBinding.
    namespace: Option<String>,
    name: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl BindingSource {
    /// Upstream's describer: `ClusterRoleBinding "b" of ClusterRole "r" to User "alice"`,
    /// `RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`, naming the first subject
    /// that applies to `user`.
    fn describe(&self, user: &UserInfo) -> String {
        let binding = match &self.namespace {
            None => format!("ClusterRoleBinding {}", go_quote(&self.name)),
            Some(ns) => format!("RoleBinding {}", go_quote(&format!("{}/{ns}", self.name))),
        };
        let subject = self
            .subjects
            .iter()
            .find(|s| applies_to(user, s, self.namespace.as_deref()))
            .map(|s| match s.kind.as_str() {
                "ServiceAccount" => {
                    let ns = s
                        .namespace
                        .as_deref()
                        .filter(|ns| !ns.is_empty())
                        .or(self.namespace.as_deref())
                        .unwrap_or_default();
                    format!("{} {}", s.kind, go_quote(&format!("{}/{ns}", s.name)))
                }
                _ => format!("{} {}", s.kind, go_quote(&s.name)),
            })
            .unwrap_or_default();
        format!(
            "{binding} of {} {} to {subject}",
            self.role_ref.kind,
            go_quote(&self.role_ref.name)
        )
    }
}

/// Whether one binding subject names `user` (upstream `appliesToUser`).
fn applies_to(user: &UserInfo, subject: &Subject, binding_namespace: Option<&str>) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => subject
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .or(binding_namespace)
            .is_some_and(|ns| is_service_account_username(&user.name, ns, &subject.name)),
        _ => false,
    }
}

/// What SelfSubjectRulesReview reports: the rules that apply to a user in a namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RulesReview {
    /// Rules with resources, in evaluation order (ClusterRoleBindings first).
    pub resource_rules: Vec<ResourceRule>,
    /// Rules with nonResourceURLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Whether the list may be missing rules for reasons other than `evaluation_errors`
    /// (always `false` here, as upstream's RBAC authorizer reports; an API server chaining
    /// other authorizers may set it).
    pub incomplete: bool,
    /// Bindings that apply to the user but could not be resolved.
    pub evaluation_errors: Vec<RuleError>,
}

impl RulesReview {
    /// `status.evaluationError` as upstream formats it, if there were errors.
    pub fn evaluation_error(&self) -> Option<String> {
        (!self.evaluation_errors.is_empty()).then(|| aggregate_messages(&self.evaluation_errors))
    }

    /// The review's `status`.
    pub fn into_status(self) -> SubjectRulesReviewStatus {
        SubjectRulesReviewStatus {
            evaluation_error: self.evaluation_error(),
            incomplete: self.incomplete,
            non_resource_rules: self.non_resource_rules,
            resource_rules: self.resource_rules,
        }
    }
}

/// Why [`Policy::check_escalation`] refused: the requested rules the user does not hold.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("attempting to grant RBAC permissions not currently held ({} atomic rules)", missing.len())]
pub struct Escalation {
    /// The atomic requested rules (one group × resource × verb × name, or one URL × verb) that
    /// none of the user's rules covers.
    pub missing: Vec<PolicyRule>,
    /// Bindings of the user that could not be resolved (their rules might have covered more).
    pub resolution_errors: Vec<RuleError>,
}

impl Escalation {
    /// The full 403 message for writing `group_resource` (e.g.
    /// `clusterroles.rbac.authorization.k8s.io`) named `name`, resolution errors included, as
    /// upstream writes it.
    pub fn message(&self, group_resource: &str, name: &str, user: &UserInfo) -> String {
        escalation_message_with_errors(
            group_resource,
            name,
            user,
            &self.missing,
            &self.resolution_errors,
        )
    }
}

impl Policy {
    /// Indexes a snapshot of the cluster's RBAC objects.
    pub fn new(
        cluster_roles: Vec<ClusterRole>,
        roles: Vec<Role>,
        cluster_role_bindings: Vec<ClusterRoleBinding>,
        role_bindings: Vec<RoleBinding>,
    ) -> Policy {
        let resolution = resolve(&cluster_roles);
        let mut effective: Vec<Option<Vec<PolicyRule>>> = vec![None; cluster_roles.len()];
        for (index, rules) in resolution.resolved {
            effective[index] = Some(rules);
        }
        let cluster_role_rules: HashMap<String, Rules> = cluster_roles
            .into_iter()
            .zip(effective)
            .map(|(role, resolved)| {
                let rules = resolved.unwrap_or_else(|| role.rules.unwrap_or_default());
                (role.metadata.name.unwrap_or_default(), Rules::from(rules))
            })
            .collect();
        let mut role_rules: HashMap<String, HashMap<String, Rules>> = HashMap::new();
        for role in roles {
            role_rules
                .entry(role.metadata.namespace.unwrap_or_default())
                .or_default()
                .insert(
                    role.metadata.name.unwrap_or_default(),
                    Rules::from(role.rules.unwrap_or_default()),
                );
        }

        let mut policy = Policy {
            cluster_roles: cluster_role_rules,
            roles: role_rules,
            aggregation_errors: resolution.errors,
            ..Policy::default()
        };
        policy
            .bindings
            .reserve(cluster_role_bindings.len() + role_bindings.len());
        for binding in cluster_role_bindings {
            let id = policy.next_id();
            let rules = policy.resolve_ref(&binding.role_ref, None);
            policy.bindings.push(rules);
            let subjects = binding.subjects.unwrap_or_default();
            policy.cluster.add(id, &subjects, None);
            policy.sources.push(BindingSource {
                namespace: None,
                name: binding.metadata.name.unwrap_or_default(),
                role_ref: binding.role_ref,
                subjects,
            });
        }
        for binding in role_bindings {
            let id = policy.next_id();
            let namespace = binding.metadata.namespace.unwrap_or_default();
            let rules = policy.resolve_ref(&binding.role_ref, Some(&namespace));
            policy.bindings.push(rules);
            let subjects = binding.subjects.unwrap_or_default();
            policy.namespaced.entry(namespace.clone()).or_default().add(
                id,
                &subjects,
                Some(&namespace),
            );
            policy.sources.push(BindingSource {
                namespace: Some(namespace),
                name: binding.metadata.name.unwrap_or_default(),
                role_ref: binding.role_ref,
                subjects,
            });
        }
        policy
    }

    fn next_id(&self) -> u32 {
        u32::try_from(self.bindings.len()).unwrap_or(u32::MAX)
    }

    /// The rules a `roleRef` names (upstream `GetRoleReferenceRules`): a Role in the binding's
    /// namespace (none for ClusterRoleBindings), or a ClusterRole.
    fn lookup(&self, role_ref: &RoleRef, namespace: Option<&str>) -> Result<&Rules, RuleError> {
        match role_ref.kind.as_str() {
            "Role" => namespace
                .and_then(|ns| self.roles.get(ns))
                .and_then(|in_ns| in_ns.get(&role_ref.name))
                .ok_or_else(|| RuleError::RoleNotFound {
                    namespace: namespace.unwrap_or_default().to_owned(),
                    name: role_ref.name.clone(),
                }),
            "ClusterRole" => self.cluster_roles.get(&role_ref.name).ok_or_else(|| {
                RuleError::ClusterRoleNotFound {
                    name: role_ref.name.clone(),
                }
            }),
            other => Err(RuleError::UnsupportedRoleRefKind {
                kind: other.to_owned(),
            }),
        }
    }

    fn resolve_ref(&self, role_ref: &RoleRef, namespace: Option<&str>) -> Result<Rules, RuleError> {
        self.lookup(role_ref, namespace).cloned()
    }

    /// The bindings applying to `user` in `namespace` (ClusterRoleBindings, plus the
    /// namespace's RoleBindings), possibly with repeats.
    fn candidate_lists<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a [u32]> + 'a {
        let in_namespace = namespace
            .and_then(|ns| self.namespaced.get(ns))
            .into_iter()
            .flat_map(move |index| index.lists(user));
        self.cluster.lists(user).chain(in_namespace)
    }

    /// The distinct bindings applying to `user` in `namespace`, in upstream's visiting order.
    fn applicable(&self, user: &UserInfo, namespace: Option<&str>) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .candidate_lists(user, namespace)
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Whether `user` may do `request`. Members of `system:masters` may do anything.
    pub fn authorize(&self, user: &UserInfo, request: &Request<'_>) -> Decision {
        if user.in_group(SYSTEM_MASTERS) {
            return Decision::Allow;
        }
        let namespace = request.namespace();
        let mut broken = false;
        for ids in self.candidate_lists(user, namespace) {
            for &id in ids {
                match &self.bindings[id as usize] {
                    Ok(rules) => {
                        if rules.iter().any(|rule| rule_allows(rule, request)) {
                            return Decision::Allow;
                        }
                    }
                    Err(_) => broken = true,
                }
            }
        }
        let reason = if broken {
            let applicable = self.applicable(user, namespace);
            format!("RBAC: {}", aggregate_messages(self.errors_of(&applicable)))
        } else {
            String::new()
        };
        Decision::Deny { reason }
    }

    /// Why `request` is allowed, as upstream's SubjectAccessReview reports it:
    /// `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "alice"` for the
    /// first binding (in upstream's visiting order) that allows it, an empty reason for
    /// `system:masters` members; `None` when the request is denied. Slower than
    /// [`Policy::authorize`]: meant for access reviews, not for every request.
    pub fn allow_reason(&self, user: &UserInfo, request: &Request<'_>) -> Option<String> {
        if user.in_group(SYSTEM_MASTERS) {
            return Some(String::new());
        }
        self.applicable(user, request.namespace())
            .into_iter()
            .find(|&id| {
                self.bindings[id as usize]
                    .as_ref()
                    .is_ok_and(|rules| rules.iter().any(|rule| rule_allows(rule, request)))
            })
            .map(|id| {
                format!(
                    "RBAC: allowed by {}",
                    self.sources[id as usize].describe(user)
                )
            })
    }

    fn errors_of<'a>(&'a self, ids: &'a [u32]) -> impl Iterator<Item = &'a RuleError> + 'a {
        ids.iter()
            .filter_map(|&id| self.bindings[id as usize].as_ref().err())
    }

    /// The rules `user` holds in `namespace` (`None`: through ClusterRoleBindings only), and the
    /// bindings that could not be resolved.
    fn held_rules(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
    ) -> (Vec<&PolicyRule>, Vec<RuleError>) {
        let ids = self.applicable(user, namespace);
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for id in ids {
            match &self.bindings[id as usize] {
                Ok(bound) => rules.extend(bound.iter()),
                Err(error) => errors.push(error.clone()),
            }
        }
        (rules, errors)
    }

    /// What SelfSubjectRulesReview returns for `user` in `namespace`: every rule of every
    /// binding that applies (ClusterRoleBindings, then the namespace's RoleBindings), split into
    /// resource and non-resource rules. `system:masters` members additionally get `*` rules
    /// first, as upstream's privileged-group authorizer reports.
    pub fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> RulesReview {
        let mut review = RulesReview::default();
        if user.in_group(SYSTEM_MASTERS) {
            let all = || vec!["*".to_owned()];
            review.resource_rules.push(ResourceRule {
                api_groups: Some(all()),
                resources: Some(all()),
                verbs: all(),
                resource_names: None,
            });
            review.non_resource_rules.push(NonResourceRule {
                non_resource_urls: Some(all()),
                verbs: all(),
            });
        }
        let (rules, errors) = self.held_rules(user, crate::non_empty(namespace));
        for rule in rules {
            if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
                review.resource_rules.push(ResourceRule {
                    api_groups: rule.api_groups.clone(),
                    resource_names: rule.resource_names.clone(),
                    resources: rule.resources.clone(),
                    verbs: rule.verbs.clone(),
                });
            }
            if rule
                .non_resource_urls
                .as_ref()
                .is_some_and(|u| !u.is_empty())
            {
                review.non_resource_rules.push(NonResourceRule {
                    non_resource_urls: rule.non_resource_urls.clone(),
                    verbs: rule.verbs.clone(),
                });
            }
        }
        review.evaluation_errors = errors;
        review
    }

    /// Escalation prevention: `Ok` if `user` already holds every rule in `requested` within
    /// `namespace` (RoleBindings there plus ClusterRoleBindings; `None`: ClusterRoleBindings
    /// only), or is in `system:masters`. The API server should also accept a write when the
    /// user may `escalate` roles/clusterroles or `bind` the referenced role — ask
    /// [`Policy::authorize`] for that.
    pub fn check_escalation(
        &self,
        user: &UserInfo,
        namespace: Option<&str>,
        requested: &[PolicyRule],
    ) -> Result<(), Escalation> {
        if user.in_group(SYSTEM_MASTERS) {
            return Ok(());
        }
        let (held, resolution_errors) = self.held_rules(user, crate::non_empty(namespace));
        let held: Vec<PolicyRule> = held.into_iter().cloned().collect();
        match covers(&held, requested) {
            (true, _) => Ok(()),
            (false, missing) => Err(Escalation {
                missing,
                resolution_errors,
            }),
        }
    }

    /// The effective rules of a ClusterRole (with aggregation resolved), if it exists.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(|rules| &rules[..])
    }

    /// The rules a binding in `namespace` (`None`: a ClusterRoleBinding) with this `roleRef`
    /// grants, aggregation resolved: what escalation checks compare when a binding is written.
    pub fn role_ref_rules(
        &self,
        namespace: Option<&str>,
        role_ref: &RoleRef,
    ) -> Result<&[PolicyRule], RuleError> {
        self.lookup(role_ref, crate::non_empty(namespace))
            .map(|rules| &rules[..])
    }

    /// Aggregated ClusterRoles whose selectors are invalid (they keep their stored rules).
    pub fn aggregation_errors(&self) -> &[AggregationError] {
        &self.aggregation_errors
    }

    /// How many bindings (both kinds) the policy holds.
    pub fn binding_count(&self) -> usize {
        self.bindings.len()
    }
}
