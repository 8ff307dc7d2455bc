//! `kubectl kudo get instances|operators|operatorversions|all`: the namespace's KUDO objects
//! as KUDO's tree, or as `-o yaml|json`.

use clap::Args;
use kube::ResourceExt;
use kube::api::ListParams;
use serde::Serialize;

use super::output::{self, Format, Tree};
use super::{Global, Kudo};

/// The flags of `get`.
#[derive(Args)]
pub(crate) struct GetArgs {
    /// instances, operators, operatorversions or all.
    what: Vec<String>,
    /// Output format: yaml or json (default: a tree).
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
}

pub(crate) async fn run(args: GetArgs, g: &Global) -> anyhow::Result<()> {
    let what = match args.what.as_slice() {
        [one] => one.as_str(),
        _ => anyhow::bail!(
            r#"expecting exactly one argument - "instances, operators, operatorversions or all""#
        ),
    };
    if !matches!(what, "instances" | "operators" | "operatorversions" | "all") {
        anyhow::bail!(
            r#"expecting one of "instances, operators, operatorversions or all" and not {what:?}"#
        );
    }
    let kudo = Kudo::connect(g).await?;
    let lp = ListParams::default();
    let ns = &kudo.namespace;
    let text = match what {
        "instances" => {
            let list = kudo.instances().list(&lp).await?.items;
            listing(what, ns, &list, args.output)?
        }
        "operators" => {
            let list = kudo.operators().list(&lp).await?.items;
            listing(what, ns, &list, args.output)?
        }
        "operatorversions" => {
            let list = kudo.operator_versions().list(&lp).await?.items;
            listing(what, ns, &list, args.output)?
        }
        _ => {
            let ops = kudo.operators().list(&lp).await?.items;
            let ovs = kudo.operator_versions().list(&lp).await?.items;
            let insts = kudo.instances().list(&lp).await?.items;
            if let Some(format) = args.output {
                let mut all = Vec::new();
                for o in &ops {
                    all.push(serde_json::to_value(o)?);
                }
                for o in &ovs {
                    all.push(serde_json::to_value(o)?);
                }
                for o in &insts {
                    all.push(serde_json::to_value(o)?);
                }
                output::objects(&all, format)?
            } else {
                let mut root = Tree::new(".");
                for op in &ops {
                    let op_name = op.metadata.name.clone().unwrap_or_default();
                    let op_tree = root.add(op_name.clone());
                    for ov in ovs
                        .iter()
                        .filter(|ov| ov.spec.operator.name.as_deref() == Some(op_name.as_str()))
                    {
                        let ov_name = ov.metadata.name.clone().unwrap_or_default();
                        let ov_tree = op_tree.add(ov_name.clone());
                        for i in insts.iter().filter(|i| {
                            i.spec.operator_version.name.as_deref() == Some(ov_name.as_str())
                        }) {
                            ov_tree.add(i.metadata.name.clone().unwrap_or_default());
                        }
                    }
                }
                format!(
                    "List of current installed operators including versions and instances in \
                     namespace {ns:?}:\n{}\n",
                    root.render()
                )
            }
        }
    };
    print!("{text}");
    Ok(())
}

fn listing<T: Serialize + ResourceExt>(
    what: &str,
    ns: &str,
    items: &[T],
    format: Option<Format>,
) -> anyhow::Result<String> {
    if let Some(format) = format {
        return output::objects(items, format);
    }
    let mut root = Tree::new(".");
    for item in items {
        root.add(item.name_any());
    }
    Ok(format!(
        "List of current installed {what} in namespace {ns:?}:\n{}\n",
        root.render()
    ))
}
