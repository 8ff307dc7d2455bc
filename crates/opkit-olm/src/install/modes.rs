//! Which namespaces an installed operator watches: the install mode an extension's inline
//! configuration (`spec.config.inline`) asks for, checked against the install modes its CSV
//! supports with operator-controller's rules and messages.
//!
//! operator-controller derives a JSON schema for the configuration from the CSV (a
//! `watchNamespace` property only when `OwnNamespace` or `SingleNamespace` is supported,
//! required when `AllNamespaces` is not; its value must be the install namespace when only
//! `OwnNamespace` is supported and must not be when only `SingleNamespace` is) and validates the
//! configuration against it. The same rules are applied here directly; the texts are its
//! formatted schema errors.

use serde_json::{Map, Value};

use super::InstallError;
use crate::bundle::csv::Csv;

/// The configuration key naming the watched namespace.
pub const WATCH_NAMESPACE: &str = "watchNamespace";

const ALL: &str = "AllNamespaces";
const OWN: &str = "OwnNamespace";
const SINGLE: &str = "SingleNamespace";

/// The namespaces an installed operator watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallMode {
    /// Every namespace (no `watchNamespace`).
    AllNamespaces,
    /// The install namespace (`watchNamespace` is the install namespace).
    OwnNamespace(String),
    /// One other namespace.
    SingleNamespace(String),
}

impl InstallMode {
    /// The watched namespace, `None` for all of them.
    pub fn watched(&self) -> Option<&str> {
        match self {
            InstallMode::AllNamespaces => None,
            InstallMode::OwnNamespace(ns) | InstallMode::SingleNamespace(ns) => Some(ns),
        }
    }

    /// The value of the Deployments' `olm.targetNamespaces` annotation: the watched
    /// namespace, empty for all of them.
    pub fn target_namespaces(&self) -> &str {
        self.watched().unwrap_or_default()
    }
}

/// The install mode `inline` (an extension's `spec.config.inline`, `None` without one) asks
/// for when `csv` is installed into `install_namespace`; a configuration the CSV's install
/// modes do not allow is refused with operator-controller's message.
pub fn install_mode(
    csv: &Csv,
    install_namespace: &str,
    inline: Option<&Map<String, Value>>,
) -> Result<InstallMode, InstallError> {
    let supports = |mode: &str| {
        csv.spec
            .install_modes
            .iter()
            .any(|m| m.type_ == mode && m.supported)
    };
    let (all, own, single) = (supports(ALL), supports(OWN), supports(SINGLE));
    if !(all || own || single) {
        return Err(InstallError::UnsupportedBundle {
            bundle: csv.metadata.name.clone(),
        });
    }
    let configurable = own || single;
    let empty = Map::new();
    let inline = inline.unwrap_or(&empty);
    let mut errors: Vec<String> = inline
        .keys()
        .filter(|k| !(configurable && k.as_str() == WATCH_NAMESPACE))
        .map(|k| match k.as_str() {
            "deploymentConfig" => {
                format!("unknown field {k:?} (opkit does not support deploymentConfig yet)")
            }
            _ => format!("unknown field {k:?}"),
        })
        .collect();
    let watch = match inline.get(WATCH_NAMESPACE) {
        _ if !configurable => None,
        None | Some(Value::Null) => {
            if !all {
                errors.push(format!("required field {WATCH_NAMESPACE:?} is missing"));
            }
            None
        }
        Some(Value::String(ns)) => match namespace_problem(ns, install_namespace, own, single) {
            Some(problem) => {
                errors.push(problem);
                None
            }
            None => Some(ns.clone()),
        },
        Some(other) => {
            errors.push(format!(
                "invalid type for field {WATCH_NAMESPACE:?}: got {}, want string",
                json_type(other)
            ));
            None
        }
    };
    match errors.len() {
        0 => {}
        1 => return Err(InstallError::InvalidConfiguration(errors.remove(0))),
        _ => {
            return Err(InstallError::InvalidConfiguration(format!(
                "multiple errors found:\n  - {}",
                errors.join("\n  - ")
            )));
        }
    }
    Ok(match watch {
        None => InstallMode::AllNamespaces,
        Some(ns) if ns == install_namespace => InstallMode::OwnNamespace(ns),
        Some(ns) => InstallMode::SingleNamespace(ns),
    })
}

/// What is wrong with `ns` as the watched namespace, if anything.
fn namespace_problem(ns: &str, install: &str, own: bool, single: bool) -> Option<String> {
    let label = !ns.is_empty()
        && ns.len() <= 63
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if !label {
        return Some(format!(
            "invalid value for field {WATCH_NAMESPACE:?}: {ns:?} is not a namespace name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)"
        ));
    }
    if own && !single && ns != install {
        return Some(format!(
            "invalid format for field {WATCH_NAMESPACE:?}: invalid value {ns:?}: must be {install:?} (the namespace where the operator is installed) because this operator only supports OwnNamespace install mode"
        ));
    }
    if single && !own && ns == install {
        return Some(format!(
            "invalid format for field {WATCH_NAMESPACE:?}: invalid value {ns:?}: must be different from {install:?} (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace"
        ));
    }
    None
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv(modes: &[&str]) -> Csv {
        let modes: Vec<Value> = modes
            .iter()
            .map(|m| json!({"type": m, "supported": true}))
            .chain([json!({"type": "MultiNamespace", "supported": false})])
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "demo.v1.0.0"},
            "spec": {"installModes": modes},
        }))
        .unwrap()
    }

    fn mode(modes: &[&str], inline: Value) -> Result<InstallMode, String> {
        let inline = inline.as_object().cloned();
        install_mode(&csv(modes), "ops", inline.as_ref()).map_err(|e| e.to_string())
    }

    #[test]
    fn no_watch_namespace_is_all_namespaces_when_the_csv_supports_it() {
        assert_eq!(
            mode(&[ALL, OWN], Value::Null),
            Ok(InstallMode::AllNamespaces)
        );
        assert_eq!(
            mode(&[ALL, SINGLE], json!({"watchNamespace": null})),
            Ok(InstallMode::AllNamespaces)
        );
    }

    #[test]
    fn the_install_namespace_is_own_namespace_and_another_is_single_namespace() {
        assert_eq!(
            mode(&[OWN, SINGLE], json!({"watchNamespace": "ops"})),
            Ok(InstallMode::OwnNamespace("ops".into()))
        );
        let single = mode(&[ALL, SINGLE], json!({"watchNamespace": "team-a"})).unwrap();
        assert_eq!(single, InstallMode::SingleNamespace("team-a".into()));
        assert_eq!(single.target_namespaces(), "team-a");
        assert_eq!(InstallMode::AllNamespaces.target_namespaces(), "");
    }

    #[test]
    fn a_namespaced_only_bundle_without_watch_namespace_is_refused_as_operator_controller_does() {
        assert_eq!(
            mode(&[OWN], Value::Null).unwrap_err(),
            "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
        );
    }

    #[test]
    fn a_watch_namespace_the_install_modes_do_not_allow_is_refused_naming_the_mode() {
        assert_eq!(
            mode(&[ALL, OWN], json!({"watchNamespace": "team-a"})).unwrap_err(),
            "invalid ClusterExtension configuration: invalid configuration: invalid format for field \"watchNamespace\": invalid value \"team-a\": must be \"ops\" (the namespace where the operator is installed) because this operator only supports OwnNamespace install mode"
        );
        assert_eq!(
            mode(&[SINGLE], json!({"watchNamespace": "ops"})).unwrap_err(),
            "invalid ClusterExtension configuration: invalid configuration: invalid format for field \"watchNamespace\": invalid value \"ops\": must be different from \"ops\" (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace"
        );
        // Only AllNamespaces: the configuration has no watchNamespace at all.
        assert_eq!(
            mode(&[ALL], json!({"watchNamespace": "ops"})).unwrap_err(),
            "invalid ClusterExtension configuration: invalid configuration: unknown field \"watchNamespace\""
        );
    }

    #[test]
    fn bad_values_and_unknown_fields_are_all_reported() {
        assert_eq!(
            mode(&[OWN, SINGLE], json!({"watchNamespace": 3, "replicas": 2})).unwrap_err(),
            "invalid ClusterExtension configuration: invalid configuration: multiple errors found:\n  - unknown field \"replicas\"\n  - invalid type for field \"watchNamespace\": got number, want string"
        );
        assert!(
            mode(&[SINGLE], json!({"watchNamespace": "Team_A"}))
                .unwrap_err()
                .contains("\"Team_A\" is not a namespace name")
        );
    }

    #[test]
    fn a_bundle_with_none_of_the_three_modes_is_unsupported() {
        assert_eq!(
            mode(&["MultiNamespace"], Value::Null).unwrap_err(),
            "unsupported bundle \"demo.v1.0.0\": bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes"
        );
    }
}
