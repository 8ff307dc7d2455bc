//! opkit-olm over the OLM corpus (`../shared/corpus/olm`): real community-operators bundles and
//! kube-green's published catalog, and operator-registry's own test bundles and catalogs.
//! Skips loudly when the corpus is absent (a user's clone does not have it).
//!
//! What is compared, exactly:
//! - kube-green: its `basic-template.yaml` rendered with `--migrate-level
//!   bundle-object-to-csv-metadata` equals the published `catalog.yaml` document for document
//!   (as parsed values; byte layout is not compared: Go's YAML writer folds long lines). The
//!   template names bundle images; offline, image `i` of the template is rendered from the
//!   `i`-th bundle directory in version order (the template lists them in that order, and the
//!   test checks each rendered name against the expected document), with the template's image
//!   as the bundle's image reference, as opm had it when it pulled the image. Nothing is masked.
//! - operator-registry: every catalog directory validates; each bundle directory renders with
//!   the image the `latest` catalog gives it into the same bundle as that catalog, comparing
//!   properties as sets with `olm.bundle.object` manifests decoded, and `relatedImages` as the
//!   catalog's plus what the newer opm adds (the bundle image and the deployments' images) —
//!   except foo.v0.1.0 and foo.v0.2.0, whose CSVs in `latest` are older than the directories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use base64::Engine;
use opkit_olm::{
    Bundle, Format, RenderOptions, Rendered, Severity, Suite, TemplateError, load_dir,
    render_basic, render_bundle, validate_bundle, validate_catalog, write_catalog,
};
use serde_json::Value;

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/olm");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: the OLM corpus is not at {} (it is only in CI)",
            dir.display()
        );
        None
    }
}

/// The bundle directories of a community operator, in version order.
fn operator_bundles(corpus: &Path, name: &str) -> Vec<Bundle> {
    let dir = corpus.join("community-operators/operators").join(name);
    let mut bundles: Vec<Bundle> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("manifests").is_dir())
        .map(|p| Bundle::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    bundles.sort_by(|a, b| a.version().unwrap().cmp_precedence(&b.version().unwrap()));
    bundles
}

#[test]
fn every_community_bundle_validates_with_the_operatorhub_suite_but_one_unowned_crd() {
    let Some(corpus) = corpus() else { return };
    let mut checked = 0;
    for op in ["kube-green", "etcd", "prometheus"] {
        for b in operator_bundles(&corpus, op) {
            let report = validate_bundle(&b, &[Suite::OperatorFramework]);
            let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
            if b.name() == "prometheusoperator.0.37.0" {
                // Published before the rule was enforced: operator-sdk reports it too.
                assert_eq!(
                    errors,
                    [
                        "ERROR: manifests/thanosrulers.monitoring.coreos.com.crd.yaml: CRD ThanosRuler (monitoring.coreos.com/v1) is present in the bundle but not owned by the CSV"
                    ]
                );
            } else {
                assert!(errors.is_empty(), "{}: {errors:#?}", b.dir.display());
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 24);
}

#[test]
fn operator_registry_test_bundles_fail_validation_for_their_missing_annotations() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("operator-registry/alpha/action/testdata/foo-bundle-v0.2.0");
    let b = Bundle::load(&dir).unwrap();
    let report = validate_bundle(&b, &[]);
    let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
    // These minimal bundles are for opm's render tests: no mediatype, no install modes.
    assert!(
        errors.iter().any(|e| e
            .contains("operators.operatorframework.io.bundle.mediatype.v1: missing annotation")),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("spec.installModes: install modes not found")),
        "{errors:#?}"
    );
    assert!(
        report.findings.iter().all(|f| !f.file.is_empty()),
        "every finding names its file"
    );
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Warning)
    );
}

#[test]
fn kube_green_basic_template_renders_the_published_catalog() {
    let Some(corpus) = corpus() else { return };
    let op = corpus.join("community-operators/operators/kube-green");
    let template_path = op.join("catalog-templates/basic-template.yaml");
    let template = std::fs::read_to_string(&template_path).unwrap();
    let bundles = operator_bundles(&corpus, "kube-green");
    let doc: Value = serde_yaml::from_str(&template).unwrap();
    let images: Vec<String> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["schema"] == "olm.bundle")
        .map(|e| e["image"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(images.len(), bundles.len());
    let mut source = |image: &str| -> Result<Rendered, TemplateError> {
        let i = images.iter().position(|x| x == image).unwrap();
        let opts = RenderOptions {
            image: image.to_string(),
            csv_metadata: true,
        };
        let bundle = render_bundle(&bundles[i], &opts).map_err(|e| TemplateError::Bundle {
            reference: image.into(),
            message: e.to_string(),
        })?;
        Ok(Rendered { bundle, csv: None })
    };
    let catalog = render_basic(&template, &template_path, &mut source).unwrap();
    assert!(validate_catalog(&catalog).is_empty());
    let ours = write_catalog(&catalog, Format::Yaml).unwrap();
    let expected_text = std::fs::read_to_string(
        corpus.join("community-operators/catalogs/v4.20/kube-green/catalog.yaml"),
    )
    .unwrap();
    let ours = documents(&ours);
    let expected = documents(&expected_text);
    assert_eq!(ours.len(), 12);
    assert_eq!(ours.len(), expected.len());
    for (o, e) in ours.iter().zip(&expected) {
        assert_eq!(o["name"], e["name"]);
        assert_eq!(o, e, "document {} differs", e["name"]);
    }
}

fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn testdata(corpus: &Path) -> PathBuf {
    corpus.join("operator-registry/alpha/action/testdata")
}

#[test]
fn operator_registry_catalogs_validate() {
    let Some(corpus) = corpus() else { return };
    let td = testdata(&corpus);
    for dir in [
        "index-declcfgs/latest",
        "index-declcfgs/old",
        "index-declcfgs/exp-headsonly",
        "index-declcfgs/exp-include-channel",
        "index-declcfgs/exp-include-pkg",
        "index-declcfgs/exp-latest",
        "foo-index-v0.2.0-declcfg",
        "list-index",
    ] {
        let c = load_dir(&td.join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let errs = validate_catalog(&c);
        assert!(errs.is_empty(), "{dir}: {errs:#?}");
    }
}

/// A bundle's properties as a set, bundle objects decoded.
fn property_set(b: &opkit_olm::catalog::Bundle) -> BTreeSet<String> {
    b.properties
        .iter()
        .map(|p| {
            if p.type_ == "olm.bundle.object" {
                let data = base64::engine::general_purpose::STANDARD
                    .decode(p.value["data"].as_str().unwrap())
                    .unwrap();
                let obj: Value = serde_json::from_slice(&data).unwrap();
                format!("object {obj}")
            } else {
                format!("{} {}", p.type_, p.value)
            }
        })
        .collect()
}

#[test]
fn operator_registry_bundles_render_as_the_latest_catalog_has_them() {
    let Some(corpus) = corpus() else { return };
    let td = testdata(&corpus);
    let latest = load_dir(&td.join("index-declcfgs/latest")).unwrap();
    let mut compared = 0;
    for entry in std::fs::read_dir(&td).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains("-bundle-v") || name.ends_with("-no-csv-related-images") {
            continue;
        }
        let b = Bundle::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Some(expected) = latest.bundles.iter().find(|x| x.name == b.name()) else {
            continue;
        };
        if ["foo.v0.1.0", "foo.v0.2.0"].contains(&b.name()) {
            continue;
        }
        let ours = render_bundle(
            &b,
            &RenderOptions {
                image: expected.image.clone(),
                csv_metadata: false,
            },
        )
        .unwrap();
        assert_eq!(ours.package, expected.package, "{name}");
        assert_eq!(property_set(&ours), property_set(expected), "{name}");
        let ours_images: BTreeSet<_> = ours
            .related_images
            .iter()
            .map(|r| (&r.name, &r.image))
            .collect();
        for r in &expected.related_images {
            assert!(
                ours_images.contains(&(&r.name, &r.image)),
                "{name}: {r:?} missing"
            );
        }
        assert!(
            ours_images.contains(&(&String::new(), &expected.image)),
            "{name}: bundle image"
        );
        compared += 1;
    }
    assert!(compared >= 6, "compared {compared} bundles");
}

#[test]
fn etcd_and_prometheus_graphs_follow_replaces() {
    use opkit_olm::{Catalog, PackageGraph, catalog_from_bundles};
    let Some(corpus) = corpus() else { return };
    let etcd = catalog_from_bundles(
        &operator_bundles(&corpus, "etcd"),
        &|_| String::new(),
        false,
    )
    .unwrap();
    assert!(
        validate_catalog(&etcd).is_empty(),
        "{:#?}",
        validate_catalog(&etcd)
    );
    let g = PackageGraph::from_catalog(&etcd, "etcd").unwrap();
    assert_eq!(g.default_channel(), "singlenamespace-alpha");
    assert_eq!(
        g.channels().collect::<Vec<_>>(),
        ["alpha", "clusterwide-alpha", "singlenamespace-alpha"]
    );
    assert_eq!(
        g.channel_head("singlenamespace-alpha").unwrap().name,
        "etcdoperator.v0.9.4"
    );
    assert_eq!(
        g.channel_head("clusterwide-alpha").unwrap().name,
        "etcdoperator.v0.9.4-clusterwide"
    );
    let path = |g: &PackageGraph, from: &str, to: &str, ch: &[&str]| -> Vec<String> {
        g.upgrade_path(from, to, ch)
            .unwrap()
            .unwrap_or_default()
            .iter()
            .map(|n| n.name.clone())
            .collect()
    };
    assert_eq!(
        path(
            &g,
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.9.4",
            &["singlenamespace-alpha"]
        ),
        ["etcdoperator.v0.9.2", "etcdoperator.v0.9.4"]
    );
    assert_eq!(
        path(
            &g,
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.9.4-clusterwide",
            &["clusterwide-alpha"]
        ),
        [
            "etcdoperator.v0.9.2-clusterwide",
            "etcdoperator.v0.9.4-clusterwide"
        ]
    );
    // Channels are walls: 0.9.4-clusterwide is not reachable within singlenamespace-alpha.
    assert!(
        path(
            &g,
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.9.4-clusterwide",
            &["singlenamespace-alpha"]
        )
        .is_empty()
    );
    let v090 = g.bundle("etcdoperator.v0.9.0").unwrap().clone();
    let succ: Vec<String> = g
        .successors(&v090, &[])
        .unwrap()
        .iter()
        .map(|n| n.name.clone())
        .collect();
    // Newest first: 0.9.2-clusterwide is a prerelease of 0.9.2, so older.
    assert_eq!(
        succ,
        ["etcdoperator.v0.9.2", "etcdoperator.v0.9.2-clusterwide"]
    );
    // 0.6.1 is alone in alpha: nothing to upgrade to.
    let v061 = g.bundle("etcdoperator.v0.6.1").unwrap().clone();
    assert!(g.successors(&v061, &["alpha"]).unwrap().is_empty());

    let prom = catalog_from_bundles(
        &operator_bundles(&corpus, "prometheus"),
        &|_| String::new(),
        false,
    )
    .unwrap();
    assert!(
        validate_catalog(&prom).is_empty(),
        "{:#?}",
        validate_catalog(&prom)
    );
    let g = PackageGraph::from_catalog(&prom, "prometheus").unwrap();
    assert_eq!(
        g.channel_head("beta").unwrap().name,
        "prometheusoperator.0.56.3"
    );
    let hops = path(
        &g,
        "prometheusoperator.0.14.0",
        "prometheusoperator.0.56.3",
        &["beta"],
    );
    assert_eq!(hops.len(), 7, "{hops:?}");
    let catalog: Catalog = prom;
    assert_eq!(catalog.bundles.len(), 8);
}
