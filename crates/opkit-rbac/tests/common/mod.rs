//! Builders for RBAC objects, shared by the integration tests.

#![allow(dead_code)]

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use opkit_rbac::Request;

pub fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

pub fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        ..PolicyRule::default()
    }
}

pub fn named(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
    rule.resource_names = Some(strings(names));
    rule
}

pub fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: Some(strings(urls)),
        ..PolicyRule::default()
    }
}

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

pub fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta(None, name),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

pub fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: meta(Some(namespace), name),
        rules: Some(rules),
    }
}

pub fn user(name: &str) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }
}

pub fn group(name: &str) -> Subject {
    Subject {
        kind: "Group".into(),
        ..user(name)
    }
}

pub fn service_account(namespace: Option<&str>, name: &str) -> Subject {
    Subject {
        api_group: None,
        kind: "ServiceAccount".into(),
        name: name.into(),
        namespace: namespace.map(str::to_owned),
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    }
}

pub fn cluster_binding(
    name: &str,
    cluster_role: &str,
    subjects: Vec<Subject>,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(None, name),
        role_ref: role_ref("ClusterRole", cluster_role),
        subjects: Some(subjects),
    }
}

/// A RoleBinding; `role_kind` is `Role` or `ClusterRole`.
pub fn binding(
    namespace: &str,
    name: &str,
    role_kind: &str,
    role_name: &str,
    subjects: Vec<Subject>,
) -> RoleBinding {
    RoleBinding {
        metadata: meta(Some(namespace), name),
        role_ref: role_ref(role_kind, role_name),
        subjects: Some(subjects),
    }
}

pub fn resource<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    namespace: Option<&'a str>,
) -> Request<'a> {
    Request::Resource {
        verb,
        group,
        version: "v1",
        resource,
        subresource: None,
        namespace,
        name: None,
    }
}

pub fn named_resource<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
) -> Request<'a> {
    Request::Resource {
        verb,
        group,
        version: "v1",
        resource,
        subresource: None,
        namespace,
        name: Some(name),
    }
}

pub fn subresource<'a>(
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    sub: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
) -> Request<'a> {
    Request::Resource {
        verb,
        group,
        version: "v1",
        resource,
        subresource: Some(sub),
        namespace,
        name: Some(name),
    }
}

pub fn path<'a>(verb: &'a str, path: &'a str) -> Request<'a> {
    Request::NonResource { verb, path }
}
