//! OLM v1's upgrade-safety verdicts on crdify's example CRDs (`../shared/corpus/olm/crdify`):
//! each file is `base-crd.yaml` with one kind of change, named after it. OLM's preflight is
//! more lenient than crdify's defaults in three places, on purpose and as OLM is: adding an enum
//! value, changing a description, and adding a new field (whatever it holds) are safe. Skipped
//! loudly when the corpus is absent (a user's clone does not have it).

use std::path::PathBuf;

use opkit_olm::{Check, check_upgrade};
use serde_json::Value;

fn examples() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/olm/crdify/examples");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: the crdify examples are not at {} (they are only in CI)",
            dir.display()
        );
        None
    }
}

fn crd(dir: &std::path::Path, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The problems of upgrading the base CRD to `name`, as (check, message) pairs.
fn verdict(dir: &std::path::Path, name: &str) -> Vec<(Check, String)> {
    let mut base = crd(dir, "base-crd.yaml");
    // As installed: the storage version is stored.
    base["status"] = serde_json::json!({"storedVersions": ["v1alpha1"]});
    match check_upgrade(&base, &crd(dir, name)) {
        Ok(()) => Vec::new(),
        Err(e) => {
            assert_eq!(e.crd, "memcacheds.cache.example.com");
            e.problems
                .into_iter()
                .map(|p| (p.check, p.message))
                .collect()
        }
    }
}

#[test]
fn olm_refuses_the_unsafe_examples_with_its_messages() {
    let Some(dir) = examples() else { return };
    let field = |f: &str, m: &str| {
        (
            Check::ChangeValidator,
            format!("version \"v1alpha1\", field \"{f}\": {m}"),
        )
    };
    assert_eq!(
        verdict(&dir, "crd-scope-changed.yaml"),
        [(
            Check::NoScopeChange,
            r#"scope changed from "Namespaced" to "Cluster""#.to_string()
        )]
    );
    assert_eq!(
        verdict(&dir, "crd-default-changed.yaml"),
        [field(
            "^.spec.mode",
            r#"default value changed from "\"Managed\"" to "\"Unmanaged\"""#
        )]
    );
    assert_eq!(
        verdict(&dir, "crd-enum-removed.yaml"),
        [field(
            "^.spec.mode",
            r#"enums ["Unmanaged"] removed from the set of previously allowed values"#
        )]
    );
    assert_eq!(
        verdict(&dir, "crd-existing-field-removed.yaml"),
        [
            (
                Check::NoExistingFieldRemoved,
                "crd/memcacheds.cache.example.com version/v1alpha1 field/^.spec.containerPort may not be removed".to_string()
            ),
            (Check::ChangeValidator, r#"calculating schema diff for CRD version "v1alpha1""#.to_string()),
        ]
    );
    assert_eq!(
        verdict(&dir, "multiple-incompatible.yaml"),
        [
            (
                Check::NoScopeChange,
                r#"scope changed from "Namespaced" to "Cluster""#.to_string()
            ),
            field("^.spec", "new required fields [mode] added"),
            field("^.spec.size", "minimum: constraint increased from 1 to 10"),
        ]
    );
}

#[test]
fn olm_lets_enum_additions_descriptions_and_new_fields_through() {
    let Some(dir) = examples() else { return };
    for name in [
        "enum-added.yaml",
        "unhandled-change.yaml",
        "crd-nullable-added.yaml",
        "new-optional-with-required.yaml",
    ] {
        assert_eq!(verdict(&dir, name), [], "{name}");
    }
}
