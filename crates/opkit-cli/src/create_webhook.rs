//! `opkit create webhook`: a defaulting and/or validating webhook for a version of a kind
//! (kubebuilder's `create webhook --defaulting --programmatic-validation`), with working
//! sample rules, its registration in the operator's webhook server and a test through a real
//! API server; and the manifests that configure it.
//!
//! The webhooks live in `src/webhooks/<module>.rs`, listed in `src/webhooks/mod.rs` (made by
//! the first `create webhook`), whose `server()` `src/lib.rs` registers. `PROJECT` records
//! which webhooks each version has, from which `config/webhook/` is written here and by every
//! `opkit generate manifests`. As `create api`, it checks everything before writing anything
//! and never overwrites code.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use clap::{ArgGroup, Args};

use crate::manifests;
use crate::project::{self, Project, Resource, Webhooks};
use crate::scaffold::{api_ctor, insert_at_marker, insert_module, read, render, write_files};
use crate::webhook_manifests;

/// Flags of `opkit create webhook`.
#[derive(Args)]
#[command(group(
    ArgGroup::new("webhook_kinds")
        .required(true)
        .multiple(true)
        .args(["defaulting", "programmatic_validation", "conversion"])
))]
pub struct CreateWebhookArgs {
    /// The kind's short API group (as given to `create api`).
    #[arg(long, value_name = "GROUP")]
    group: String,
    /// The version of the kind the webhook is for.
    #[arg(long, value_name = "VERSION")]
    version: String,
    /// The kind, created before with `opkit create api`.
    #[arg(long, value_name = "KIND")]
    kind: String,
    /// A defaulting (mutating) webhook: fills in what objects leave out.
    #[arg(long)]
    defaulting: bool,
    /// A validating webhook: refuses objects the operator cannot work with.
    #[arg(long)]
    programmatic_validation: bool,
    /// A conversion webhook between this version and the kind's hub.
    #[arg(long)]
    conversion: bool,
}

const MOD_RS: &str = include_str!("../templates/webhook/mod.rs.tmpl");
const HEADER_RS: &str = include_str!("../templates/webhook/header.rs.tmpl");
const DEFAULTING_RS: &str = include_str!("../templates/webhook/defaulting.rs.tmpl");
const VALIDATION_RS: &str = include_str!("../templates/webhook/validation.rs.tmpl");
const TEST_RS: &str = include_str!("../templates/webhook/test.rs.tmpl");
const TEST_DEFAULTING_RS: &str = include_str!("../templates/webhook/test_defaulting.rs.tmpl");
const TEST_VALIDATION_RS: &str = include_str!("../templates/webhook/test_validation.rs.tmpl");

const CONVERSION_RS: &str = include_str!("../templates/webhook/conversion.rs.tmpl");
const CONVERSION_SPOKE_RS: &str = include_str!("../templates/webhook/conversion_spoke.rs.tmpl");
const CONVERSION_TEST_RS: &str = include_str!("../templates/webhook/conversion_test.rs.tmpl");
const CONVERSION_TEST_SPOKE_RS: &str =
    include_str!("../templates/webhook/conversion_test_spoke.rs.tmpl");

const APP_MARKER: &str = "// +opkit:scaffold:app";
const MODULES_MARKER: &str = "// +opkit:scaffold:webhook-modules";
const WEBHOOKS_MARKER: &str = "// +opkit:scaffold:webhooks";
const CERTS_MARKER: &str = "// +opkit:scaffold:certs";

/// The line of the scaffolded API type the sample rules work on.
const SAMPLE_FIELD: &str = "pub foo: Option<String>,";

/// `opkit create webhook` in the project containing `cwd`.
pub fn create_webhook(args: CreateWebhookArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let mut project = Project::load(&root)?;
    project::validate_group(&args.group)?;
    project::validate_version(&args.version)?;
    project::validate_kind(&args.kind)?;
    let index = find_resource(&project, &args)?;
    let resource = project.resources[index].clone();
    let wanted = Webhooks {
        defaulting: args.defaulting,
        validation: args.programmatic_validation,
        conversion: args.conversion,
    };
    let module = project.module_of(&resource);
    let admission = wanted.defaulting || wanted.validation;
    for (has, wants, what) in [
        (
            resource.webhooks.defaulting,
            wanted.defaulting,
            "defaulting",
        ),
        (
            resource.webhooks.validation,
            wanted.validation,
            "validating",
        ),
    ] {
        if has && wants {
            bail!(
                "{} {} already has a {what} webhook (src/webhooks/{module}.rs)",
                resource.api_version(),
                resource.kind
            );
        }
    }
    let versions: Vec<Resource> = project
        .versions_of(&resource.kind)
        .into_iter()
        .cloned()
        .collect();
    let hub = versions[0].clone();
    let hub_module = hub.module();
    if wanted.conversion && versions.len() < 2 {
        bail!(
            "kind {} has one version ({}): conversion needs another. Add it first: opkit create \
             api --group {} --version <new version> --kind {}",
            hub.kind,
            hub.version,
            hub.group,
            hub.kind
        );
    }
    let mut new_files = Vec::new();
    if admission {
        new_files.push(format!("src/webhooks/{module}.rs"));
        new_files.push(format!("tests/{module}_webhook.rs"));
    }
    if wanted.conversion {
        new_files.push(format!("src/webhooks/{hub_module}_conversion.rs"));
        new_files.push(format!("tests/{hub_module}_conversion.rs"));
    }
    for rel in &new_files {
        if root.join(rel).exists() {
            bail!(
                "{rel} already exists: create webhook never overwrites code. Add the webhook to \
                 it by hand (docs/WEBHOOKS.md shows how), or move it away and run this again"
            );
        }
    }
    let uses_sample_field: Vec<&Resource> = if wanted.conversion {
        versions.iter().collect()
    } else {
        vec![&resource]
    };
    for r in uses_sample_field {
        let api_file = format!("src/api/{}.rs", project.module_of(r));
        if !read(&root, &api_file)?.contains(SAMPLE_FIELD) {
            bail!(
                "{api_file} no longer has the scaffolded field `{SAMPLE_FIELD}` that the sample \
                 webhook code fills in, checks and converts. Write the webhook yourself \
                 (docs/WEBHOOKS.md shows how), or put the field back for the scaffold"
            );
        }
    }

    // Everything is computed and checked before anything is written.
    let first = !root.join("src/webhooks/mod.rs").exists();
    let mut files = Vec::new();
    if first {
        files.push((
            "src/lib.rs".to_string(),
            register_server(&read(&root, "src/lib.rs")?)?,
        ));
    }
    let mut mod_rs = if first {
        render(
            MOD_RS,
            &[
                ("service", &project.webhook_service()),
                ("namespace", &project.namespace()),
            ],
        )
    } else {
        read(&root, "src/webhooks/mod.rs")?
    };
    if admission {
        mod_rs = register_hooks(&project, &resource, &module, &wanted, &mod_rs)?;
        files.push((
            new_files[0].clone(),
            webhook_source(&resource, &module, &wanted),
        ));
        files.push((
            new_files[1].clone(),
            test_source(&project, &resource, &module, &wanted),
        ));
    }
    if wanted.conversion {
        mod_rs = register_conversion(&project, &versions, &mod_rs)?;
        let (code, test) = conversion_sources(&project, &versions);
        files.push((format!("src/webhooks/{hub_module}_conversion.rs"), code));
        files.push((format!("tests/{hub_module}_conversion.rs"), test));
    }
    files.push(("src/webhooks/mod.rs".to_string(), mod_rs));

    let entry = &mut project.resources[index].webhooks;
    entry.defaulting |= wanted.defaulting;
    entry.validation |= wanted.validation;
    if wanted.conversion {
        for r in project.resources.iter_mut().filter(|r| r.kind == hub.kind) {
            r.webhooks.conversion = r.version != hub.version;
        }
    }
    files.extend(webhook_manifests::files(&project)?);
    write_files(&root, &files)?;
    project.save(&root)?;
    manifests::include_webhooks_in_default(&root)?;
    let sources: Vec<&str> = files
        .iter()
        .map(|(rel, _)| rel.as_str())
        .filter(|rel| rel.ends_with(".rs"))
        .collect();
    format_sources(&root, &sources);

    let mut made = Vec::new();
    if wanted.defaulting {
        made.push("a defaulting webhook");
    }
    if wanted.validation {
        made.push("a validating webhook");
    }
    if wanted.conversion {
        made.push("a conversion webhook");
    }
    println!(
        "Created {} for {} {} in {}, registered in src/webhooks/mod.rs, with tests ({}) and \
         configurations in config/webhook/.",
        made.join(" and "),
        resource.api_version(),
        resource.kind,
        new_files
            .iter()
            .step_by(2)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        new_files
            .iter()
            .skip(1)
            .step_by(2)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
    );
    println!("Next:");
    let tests: Vec<String> = new_files
        .iter()
        .skip(1)
        .step_by(2)
        .map(|t| {
            let name = t.trim_start_matches("tests/").trim_end_matches(".rs");
            format!("cargo test --test {name}")
        })
        .collect();
    for (command, what) in [
        (tests.join(" && "), "the webhooks' tests"),
        (
            "opkit generate manifests".to_string(),
            "config/webhook/ and the certificate RBAC",
        ),
        (
            "opkit run --up".to_string(),
            "serve them; then kubectl apply -k config/samples",
        ),
    ] {
        println!("  {command:<32} # {what}");
    }
    Ok(())
}

/// The index in `PROJECT` of the version the flags name, or what is wrong with them.
fn find_resource(project: &Project, args: &CreateWebhookArgs) -> anyhow::Result<usize> {
    let versions = project.versions_of(&args.kind);
    let Some(hub) = versions.first() else {
        let kinds: Vec<&str> = project.resources.iter().map(|r| r.kind.as_str()).collect();
        let known = if kinds.is_empty() {
            "it has no kinds yet".to_string()
        } else {
            format!("it has {}", kinds.join(", "))
        };
        bail!(
            "kind {} is not in this project ({known}). Create it first: opkit create api \
             --group {} --version {} --kind {}",
            args.kind,
            args.group,
            args.version,
            args.kind
        );
    };
    if hub.group != args.group {
        bail!(
            "kind {} is in group {}: pass --group {}",
            args.kind,
            hub.full_group(),
            hub.group
        );
    }
    project
        .resources
        .iter()
        .position(|r| r.kind == args.kind && r.version == args.version)
        .with_context(|| {
            let list: Vec<&str> = versions.iter().map(|r| r.version.as_str()).collect();
            format!(
                "kind {} has no version {} (it has {}): pick one, or add it with opkit create api \
                 --group {} --version {} --kind {}",
                args.kind,
                args.version,
                list.join(", "),
                args.group,
                args.version,
                args.kind
            )
        })
}

/// `src/lib.rs` declaring the `webhooks` module and registering its server with the App.
fn register_server(lib: &str) -> anyhow::Result<String> {
    let last_mod = lib
        .lines()
        .rfind(|l| l.starts_with("pub mod "))
        .map(str::to_string);
    let Some(last_mod) = last_mod else {
        bail!(
            "src/lib.rs declares no modules (`pub mod api;`): add `pub mod webhooks;` to it and \
             `.webhook_server(|_| webhooks::server())` to the App, then run this again"
        );
    };
    let lib = lib.replacen(
        &format!("{last_mod}\n"),
        &format!("{last_mod}\npub mod webhooks;\n"),
        1,
    );
    insert_at_marker(
        &lib,
        APP_MARKER,
        &[".webhook_server(|_| webhooks::server())".to_string()],
        "    ",
        "src/lib.rs",
    )
}

/// `src/webhooks/mod.rs` with the new module, its webhooks on the server, and the
/// configurations the certificates' CA goes to.
fn register_hooks(
    project: &Project,
    resource: &Resource,
    module: &str,
    wanted: &Webhooks,
    mod_rs: &str,
) -> anyhow::Result<String> {
    let file = "src/webhooks/mod.rs";
    let kind = &resource.kind;
    let ty = format!("crate::api::{module}::{kind}");
    let mut hooks = Vec::new();
    let mut certs = Vec::new();
    if wanted.defaulting {
        hooks.push(format!(".defaulter::<{ty}, _>({module}::{kind}Defaulter)"));
        certs.push(format!(
            ".mutating_configuration(\"{}\")",
            project.mutating_configuration()
        ));
    }
    if wanted.validation {
        hooks.push(format!(".validator::<{ty}, _>({module}::{kind}Validator)"));
        certs.push(format!(
            ".validating_configuration(\"{}\")",
            project.validating_configuration()
        ));
    }
    let mut text = insert_module(mod_rs, MODULES_MARKER, module, file)?;
    text = insert_at_marker(&text, WEBHOOKS_MARKER, &hooks, "    ", file)?;
    certs.retain(|line| !text.contains(line.as_str()));
    if !certs.is_empty() {
        text = insert_at_marker(&text, CERTS_MARKER, &certs, "    ", file)?;
    }
    Ok(text)
}

/// `src/webhooks/mod.rs` with the kind's conversion module, its `Conversion` on the server,
/// and the kind's CRD to publish the CA to.
fn register_conversion(
    project: &Project,
    versions: &[Resource],
    mod_rs: &str,
) -> anyhow::Result<String> {
    let file = "src/webhooks/mod.rs";
    let hub = &versions[0];
    let kind = &hub.kind;
    let mut conversion = format!(
        ".conversion(opkit::Conversion::<crate::api::{}::{kind}>::new()",
        hub.module()
    );
    for spoke in &versions[1..] {
        let module = project.module_of(spoke);
        conversion.push_str(&format!(".spoke::<crate::api::{module}::{kind}>()"));
    }
    conversion.push(')');
    let mut text = insert_module(
        mod_rs,
        MODULES_MARKER,
        &format!("{}_conversion", hub.module()),
        file,
    )?;
    text = insert_at_marker(&text, WEBHOOKS_MARKER, &[conversion], "    ", file)?;
    let certs = format!(".crd_conversion(\"{}\")", hub.crd_name());
    if !text.contains(&certs) {
        text = insert_at_marker(&text, CERTS_MARKER, &[certs], "    ", file)?;
    }
    Ok(text)
}

/// `src/webhooks/<kind>_conversion.rs` and `tests/<kind>_conversion.rs` for every version of
/// a kind (the first is the hub).
fn conversion_sources(project: &Project, versions: &[Resource]) -> (String, String) {
    let hub = &versions[0];
    let base = vec![
        ("kind", hub.kind.clone()),
        ("hub_module", hub.module()),
        ("hub_version", hub.version.clone()),
        ("crate", project.crate_name()),
    ];
    let mut code = rendered(CONVERSION_RS, &base);
    let mut checks = String::new();
    for spoke in &versions[1..] {
        let mut vars = base.clone();
        vars.push(("spoke_module", project.module_of(spoke)));
        vars.push(("spoke_version", spoke.version.clone()));
        code.push_str(&rendered(CONVERSION_SPOKE_RS, &vars));
        checks.push_str(&rendered(CONVERSION_TEST_SPOKE_RS, &vars));
    }
    let mut vars = base;
    vars.push(("spoke_checks", checks.trim_end().to_string()));
    (code, rendered(CONVERSION_TEST_RS, &vars))
}

/// The placeholders every webhook template of `resource` uses.
fn vars(resource: &Resource, module: &str) -> Vec<(&'static str, String)> {
    vec![
        ("kind", resource.kind.clone()),
        ("module", module.to_string()),
        ("api_version", resource.api_version()),
        ("mutate_path", webhook_manifests::path("mutate", resource)),
        (
            "validate_path",
            webhook_manifests::path("validate", resource),
        ),
    ]
}

fn rendered(template: &str, vars: &[(&'static str, String)]) -> String {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    render(template, &vars)
}

/// `src/webhooks/<module>.rs`.
fn webhook_source(resource: &Resource, module: &str, wanted: &Webhooks) -> String {
    let mut imports = vec!["Admission"];
    if wanted.defaulting {
        imports.push("Defaulter");
    }
    imports.push("Denied");
    if wanted.validation {
        imports.push("Validator");
    }
    let mut vars = vars(resource, module);
    vars.push(("imports", imports.join(", ")));
    let mut out = rendered(HEADER_RS, &vars);
    if wanted.defaulting {
        out.push_str(&rendered(DEFAULTING_RS, &vars));
    }
    if wanted.validation {
        out.push_str(&rendered(VALIDATION_RS, &vars));
    }
    out
}

/// `tests/<module>_webhook.rs`.
fn test_source(project: &Project, resource: &Resource, module: &str, wanted: &Webhooks) -> String {
    let mut vars = vars(resource, module);
    vars.push(("crate", project.crate_name()));
    let mut checks = String::new();
    if wanted.defaulting {
        checks.push_str(&rendered(TEST_DEFAULTING_RS, &vars));
    }
    if wanted.validation {
        checks.push_str(&rendered(TEST_VALIDATION_RS, &vars));
    }
    let test_name = match (wanted.defaulting, wanted.validation) {
        (true, true) => {
            format!("a_{module}_is_defaulted_and_an_invalid_one_refused_by_its_webhooks")
        }
        (true, false) => format!("a_{module}_without_foo_is_defaulted_by_its_webhook"),
        _ => format!("an_invalid_{module}_is_refused_by_its_webhook"),
    };
    vars.push(("checks", checks.trim_end().to_string()));
    vars.push(("test_name", test_name));
    vars.push(("api_ctor", api_ctor(resource).to_string()));
    rendered(TEST_RS, &vars)
}

/// Formats the written sources with rustfmt, as `cargo fmt` would (lines that the kind's name
/// makes longer or shorter wrap differently); without rustfmt they stay as rendered.
fn format_sources(root: &Path, sources: &[&str]) {
    let status = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(sources)
        .current_dir(root)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("note: rustfmt failed ({s}) on {}", sources.join(", ")),
        Err(e) => eprintln!("note: rustfmt not run ({e}); run `cargo fmt` in the project"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::LAYOUT;

    fn project() -> Project {
        Project {
            layout: LAYOUT.into(),
            project_name: "shop".into(),
            domain: "example.com".into(),
            repo: "github.com/example/shop".into(),
            plugin: Default::default(),
            resources: vec![Resource {
                group: "web".into(),
                domain: "example.com".into(),
                version: "v1".into(),
                kind: "Cart".into(),
                namespaced: false,
                chart: None,
                webhooks: Webhooks::default(),
            }],
        }
    }

    #[test]
    fn sources_hold_only_the_parts_asked_for() {
        let p = project();
        let r = &p.resources[0];
        let defaulting = Webhooks {
            defaulting: true,
            ..Webhooks::default()
        };
        let validation = Webhooks {
            validation: true,
            ..Webhooks::default()
        };
        let code = webhook_source(r, "cart", &defaulting);
        assert!(
            code.contains("use opkit::{Admission, Defaulter, Denied};"),
            "{code}"
        );
        assert!(
            code.contains("impl Defaulter<Cart> for CartDefaulter"),
            "{code}"
        );
        assert!(!code.contains("Validator"), "{code}");
        let code = webhook_source(r, "cart", &validation);
        assert!(
            code.contains("use opkit::{Admission, Denied, Validator};"),
            "{code}"
        );
        assert!(!code.contains("Defaulter"), "{code}");
        let test = test_source(&p, r, "cart", &validation);
        assert!(
            test.contains("async fn an_invalid_cart_is_refused_by_its_webhook()"),
            "{test}"
        );
        assert!(test.contains("Api::all(env.client())"), "{test}");
        assert!(!test.contains("DEFAULT_FOO"), "{test}");
    }

    #[test]
    fn registration_adds_each_hook_once_and_each_configuration_once() {
        let p = project();
        let r = &p.resources[0];
        let template = render(
            MOD_RS,
            &[
                ("service", "shop-webhook-service"),
                ("namespace", "shop-system"),
            ],
        );
        let defaulting = Webhooks {
            defaulting: true,
            ..Webhooks::default()
        };
        let once = register_hooks(&p, r, "cart", &defaulting, &template).unwrap();
        let twice = register_hooks(&p, r, "cart_v2", &defaulting, &once).unwrap();
        assert_eq!(
            twice.matches(".mutating_configuration(").count(),
            1,
            "{twice}"
        );
        assert_eq!(twice.matches(".defaulter::<").count(), 2, "{twice}");
        assert!(
            twice.contains("pub mod cart;\npub mod cart_v2;\n"),
            "{twice}"
        );
        let lib = "pub mod api;\npub mod controllers;\n\npub fn app() -> opkit::App {\n    \
                   opkit::App::new(NAME)\n    // +opkit:scaffold:app\n}\n";
        let registered = register_server(lib).unwrap();
        assert!(
            registered.contains("pub mod controllers;\npub mod webhooks;\n"),
            "{registered}"
        );
        assert!(
            registered.contains("        .webhook_server(|_| webhooks::server())\n    // +opkit"),
            "{registered}"
        );
    }

    #[test]
    fn templates_only_use_known_placeholders() {
        let known = [
            "service",
            "namespace",
            "kind",
            "module",
            "api_version",
            "imports",
            "mutate_path",
            "validate_path",
            "crate",
            "checks",
            "test_name",
            "api_ctor",
            "hub_module",
            "hub_version",
            "spoke_module",
            "spoke_version",
            "spoke_checks",
        ];
        for template in [
            MOD_RS,
            HEADER_RS,
            DEFAULTING_RS,
            VALIDATION_RS,
            TEST_RS,
            TEST_DEFAULTING_RS,
            TEST_VALIDATION_RS,
            CONVERSION_RS,
            CONVERSION_SPOKE_RS,
            CONVERSION_TEST_RS,
            CONVERSION_TEST_SPOKE_RS,
        ] {
            for p in crate::scaffold::placeholders(template) {
                assert!(known.contains(&p.as_str()), "unknown placeholder {p}");
            }
        }
    }
}
