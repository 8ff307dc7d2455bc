//! A bundle's dependencies, checked before it is installed: each `olm.package.required` needs
//! a `ClusterExtension` with that package installed at a version in the range, each
//! `olm.gvk.required` an API the cluster serves. Nothing is installed for a dependency (OLM v0's
//! resolver would add operators; OLM v1 refuses such bundles): an unmet one is named, so the
//! extension says what to install first, and the check runs again at every retry.

use kube::api::{Api, GroupVersionKind, ListParams};
use kube::discovery::pinned_kind;
use kube::{Client, ResourceExt};
use opkit_olm::property::Requirement;
use opkit_olm::version::SkipRange;

use crate::ClusterExtension;

/// `Ok` when every requirement of bundle `bundle` (installed by extension `ext`) is met; else
/// one sentence naming each unmet one.
pub async fn check(
    client: &Client,
    ext: &str,
    bundle: &str,
    requirements: &[Requirement],
) -> Result<(), String> {
    if requirements.is_empty() {
        return Ok(());
    }
    let mut unmet = Vec::new();
    let mut extensions = None;
    for requirement in requirements {
        match requirement {
            Requirement::Package(p) => {
                let range = SkipRange::parse(&p.version_range).map_err(|e| {
                    format!(
                        "bundle {bundle} requires package {:?} in range {:?}, which does not parse: {e}",
                        p.package_name, p.version_range
                    )
                })?;
                if extensions.is_none() {
                    let api: Api<ClusterExtension> = Api::all(client.clone());
                    let list = api
                        .list(&ListParams::default())
                        .await
                        .map_err(|e| format!("cannot list ClusterExtensions: {e}"))?;
                    extensions = Some(list.items);
                }
                let installed: Vec<(String, String)> = extensions
                    .iter()
                    .flatten()
                    .filter(|e| e.name_any() != ext)
                    .filter(|e| {
                        e.spec
                            .source
                            .catalog
                            .as_ref()
                            .is_some_and(|c| c.package_name == p.package_name)
                    })
                    .filter_map(|e| {
                        let version = &e.status.as_ref()?.install.as_ref()?.bundle.version;
                        Some((e.name_any(), version.clone()))
                    })
                    .collect();
                let fits = installed
                    .iter()
                    .any(|(_, v)| semver::Version::parse(v).is_ok_and(|v| range.contains(&v)));
                if !fits {
                    let have = if installed.is_empty() {
                        "no ClusterExtension has it installed".to_string()
                    } else {
                        let list: Vec<String> = installed
                            .iter()
                            .map(|(name, v)| format!("{v} by {name}"))
                            .collect();
                        format!("installed: {}", list.join(", "))
                    };
                    unmet.push(format!(
                        "package {:?} in range {:?} ({have})",
                        p.package_name, p.version_range
                    ));
                }
            }
            Requirement::Gvk(g) => {
                let gvk = GroupVersionKind::gvk(&g.group, &g.version, &g.kind);
                if pinned_kind(client, &gvk).await.is_err() {
                    let api = if g.group.is_empty() {
                        g.version.clone()
                    } else {
                        format!("{}/{}", g.group, g.version)
                    };
                    unmet.push(format!(
                        "API {api} {} (the cluster does not serve it)",
                        g.kind
                    ));
                }
            }
        }
    }
    if unmet.is_empty() {
        return Ok(());
    }
    Err(format!(
        "bundle {bundle} requires {}: install what it needs first (opkit installs no dependencies)",
        unmet.join(" and ")
    ))
}
