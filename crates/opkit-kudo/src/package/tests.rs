use std::path::Path;

use super::*;
use crate::api::ExecutionStatus;

const OPERATOR: &str = r#"apiVersion: kudo.dev/v1beta1
name: demo
operatorVersion: 0.1.0
appVersion: 1.2.3
kubernetesVersion: 1.16.0
maintainers: [{name: Me, email: me@example.com}]
tasks:
  - name: app
    kind: Apply
    spec: {resources: [deployment.yaml]}
  - name: spare
    kind: Dummy
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: parallel
        steps:
          - name: everything
            tasks: [app]
"#;

const PARAMS: &str = r#"apiVersion: kudo.dev/v1beta1
parameters:
  - name: REPLICAS
    default: 2
    type: integer
  - name: NAMES
    type: array
    default: [a, b]
  - name: OPTIONAL
    required: false
  - name: MODE
    default: fast
    enum: [fast, slow]
    immutable: true
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: {{ .Params.REPLICAS }}
  template:
    metadata:
      labels:
        mode: {{ .Params.MODE }}
        names: "{{ range .Params.NAMES }}{{ . }}{{ end }}"
"#;

fn write_package(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("operator.yaml"), OPERATOR).unwrap();
    std::fs::write(dir.join("params.yaml"), PARAMS).unwrap();
    std::fs::write(dir.join("templates/deployment.yaml"), DEPLOYMENT).unwrap();
    std::fs::write(dir.join("README.md"), "ignored").unwrap();
}

#[test]
fn a_package_directory_converts_to_kudos_operator_and_operator_version() {
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path());
    let pkg = load(dir.path()).unwrap();
    assert_eq!(pkg.operator.metadata.name.as_deref(), Some("demo"));
    assert_eq!(pkg.operator.spec.maintainers[0].name, "Me");
    let ov = &pkg.operator_version;
    assert_eq!(ov.metadata.name.as_deref(), Some("demo-1.2.3-0.1.0"));
    assert_eq!(ov.spec.operator.name.as_deref(), Some("demo"));
    assert_eq!(ov.spec.operator.kind.as_deref(), Some("Operator"));
    assert_eq!(ov.spec.version, "0.1.0");
    assert_eq!(ov.spec.app_version, "1.2.3");
    assert_eq!(
        ov.spec.templates.keys().collect::<Vec<_>>(),
        ["deployment.yaml"]
    );
    let p = |n: &str| ov.spec.parameters.iter().find(|p| p.name == n).unwrap();
    assert_eq!(p("REPLICAS").default.as_deref(), Some("2"));
    assert_eq!(
        p("REPLICAS").required,
        Some(true),
        "params.yaml defaults to required"
    );
    assert_eq!(p("NAMES").default.as_deref(), Some("- a\n- b\n"));
    assert_eq!(p("OPTIONAL").required, Some(false));
    assert!(!p("OPTIONAL").is_required());
    assert_eq!(
        p("MODE").r#enum.as_deref(),
        Some(&["fast".to_string(), "slow".to_string()][..])
    );
    assert_eq!(p("MODE").immutable, Some(true));
    assert_eq!(p("OPTIONAL").immutable, Some(false));
    assert_eq!(ov.spec.plans["deploy"].phases[0].steps[0].tasks, ["app"]);
    let _ = ExecutionStatus::default();
}

#[test]
fn package_create_writes_kudos_archive_name_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let pkg_dir = dir.path().join("demo");
    write_package(&pkg_dir);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let tgz = write_tgz(&pkg_dir, &out, false).unwrap();
    assert_eq!(tgz.file_name().unwrap(), "demo-1.2.3_0.1.0.tgz");
    let again = write_tgz(&pkg_dir, &out, false).unwrap_err().to_string();
    assert!(again.contains("exists"), "{again}");
    let bytes = std::fs::read(&tgz).unwrap();
    write_tgz(&pkg_dir, &out, true).unwrap();
    assert_eq!(
        std::fs::read(&tgz).unwrap(),
        bytes,
        "archives are reproducible"
    );
    assert_eq!(read(&tgz).unwrap(), read(&pkg_dir).unwrap());
}

#[test]
fn missing_files_and_bad_tasks_are_refused_with_kudos_messages() {
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path());
    std::fs::remove_file(dir.path().join("params.yaml")).unwrap();
    let err = read(dir.path()).unwrap_err().to_string();
    assert!(
        err.starts_with("operator package missing params.yaml in "),
        "{err}"
    );

    write_package(dir.path());
    std::fs::remove_file(dir.path().join("templates/deployment.yaml")).unwrap();
    let err = load(dir.path()).unwrap_err().to_string();
    assert_eq!(err, "task app missing template: deployment.yaml");

    write_package(dir.path());
    std::fs::write(
        dir.path().join("operator.yaml"),
        OPERATOR.replace("kudo.dev/v1beta1", "kudo.dev/v1alpha1"),
    )
    .unwrap();
    let err = read(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        "failed to unmarshal operator file: expecting supported API version kudo.dev/v1beta1 but got kudo.dev/v1alpha1"
    );
}

#[test]
fn verify_reports_kudos_warnings_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path());
    let files = read(dir.path()).unwrap();
    let res = verify(&files);
    assert!(res.is_valid(), "{res:?}");
    assert_eq!(
        res.warnings,
        [
            "task \"spare\" defined but not used",
            "parameter \"OPTIONAL\" defined but not used."
        ]
    );

    std::fs::write(
        dir.path().join("templates/extra.yaml"),
        "a: {{ .Params.UNDEFINED }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("params.yaml"),
        PARAMS.replace("default: 2", "default: two"),
    )
    .unwrap();
    let res = verify(&read(dir.path()).unwrap());
    assert!(!res.is_valid());
    let errors = res.errors.join("\n");
    assert!(
        errors.contains("parameter \"UNDEFINED\" in template extra.yaml is not defined"),
        "{errors}"
    );
    assert!(
        errors.contains("parameter \"REPLICAS\" has an invalid default value: type is \"integer\""),
        "{errors}"
    );
    assert!(
        res.warnings
            .contains(&"template \"extra.yaml\" is not referenced from any task".to_string())
    );
}

#[test]
fn params_in_finds_parameter_references_inside_actions_only() {
    let found =
        verify::params_in("x: .Params.NOT\ny: {{ .Params.A | default .Params.B_2 }}{{.Params.C}}");
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["A", "B_2", "C"]);
}

#[test]
fn every_corpus_package_loads_and_converts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/kudo/operators");
    let Ok(entries) = std::fs::read_dir(&root) else {
        eprintln!(
            "SKIPPED: the KUDO corpus is not at {} (see /work/shared/corpus/README.md)",
            root.display()
        );
        return;
    };
    let mut loaded = 0;
    for entry in entries {
        let dir = entry.unwrap().path().join("operator");
        if !dir.join("operator.yaml").exists() {
            continue;
        }
        let pkg = load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let ov = &pkg.operator_version;
        assert_eq!(
            ov.metadata.name.as_deref(),
            Some(
                crate::api::operator_version_name(pkg.name(), pkg.app_version(), pkg.version())
                    .as_str()
            )
        );
        assert!(ov.spec.plans.contains_key("deploy"), "{}", dir.display());
        let res = verify(&pkg.files);
        assert!(res.is_valid(), "{}: {:?}", dir.display(), res.errors);
        loaded += 1;
    }
    assert!(
        loaded >= 10,
        "only {loaded} corpus packages found under {}",
        root.display()
    );
}
