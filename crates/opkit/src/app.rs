//! [`App`]: the one way to write an operator's `main` — the command line every operator binary
//! needs, plus the operator's own flags.
//!
//! An operator binary does three things: run its controllers, and print the CRDs and the RBAC
//! that deploying it needs (`opkit generate manifests` reads them from there, as kubebuilder's
//! `controller-gen` reads Go types). `App` gives every opkit operator the same command line:
//!
//! | command / flag | meaning | default |
//! |---|---|---|
//! | `run` | run the controllers (the default command) | |
//! | `print-crds` | every CRD, as YAML documents | |
//! | `print-rbac` | the RBAC the controllers need, as YAML | |
//! | `--metrics-bind-address ADDR` | where `/metrics` is served; `0` turns it off | `0` |
//! | `--health-probe-bind-address ADDR` | where `/healthz` and `/readyz` are served | `:8081` |
//! | `--leader-elect` | act only while holding the leader Lease | off |
//! | `--leader-election-namespace NS`, `--leader-election-id NAME` | the Lease | own namespace, the operator's name |
//! | `--kubeconfig PATH` | the cluster to talk to | `$KUBECONFIG`, `~/.kube/config`, in-cluster |
//! | `--namespace NS` (repeatable, or `$WATCH_NAMESPACE`, comma-separated) | watch only these namespaces; `print-rbac` then prints Roles | all namespaces |
//! | `--label-selector SELECTOR` | cache only objects with these labels (every kind) | everything |
//! | `--webhook-port PORT` | where webhooks are served (with [`App::webhook_server`]) | `9443` |
//! | `--webhook-cert-dir DIR` | read `tls.crt`/`tls.key` there instead of the server's own certificates | the server's setting |
//!
//! The flag names, the `:8080` address form, `0` for "off" and the defaults are
//! controller-runtime's scaffolded ones, so manifests and habits carry over: the scaffolded
//! Deployment passes `--leader-elect` and a metrics address; a developer's `cargo run` needs
//! neither. `$WATCH_NAMESPACE` is operator-sdk's and OLM's way to tell an operator which
//! namespaces it serves (see [`crate::cache`] for what scoping changes).
//!
//! The operator's own flags are a clap [`Args`] type of the author's, given with
//! [`App::flags`]; `run` and `print-rbac` accept them, and the closure that builds each
//! controller receives them:
//!
//! ```no_run
//! # use opkit::{App, ControllerDef};
//! # #[derive(opkit::CustomResource, serde::Deserialize, serde::Serialize, Clone, Debug, opkit::JsonSchema)]
//! # #[kube(group = "webapp.example.com", version = "v1", kind = "Guestbook", namespaced)]
//! # pub struct GuestbookSpec {}
//! # fn guestbook_controller(image: &str) -> ControllerDef { unimplemented!() }
//! /// The guestbook operator's own flags.
//! #[derive(Debug, Clone, clap::Args)]
//! struct Flags {
//!     /// The guestbook image.
//!     #[arg(long, default_value = "guestbook:1")]
//!     image: String,
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     App::new("guestbook")
//!         .crd::<Guestbook>()
//!         .flags::<Flags>()
//!         .controller(|flags: &Flags| guestbook_controller(&flags.image))
//!         .main()
//! }
//! ```
//!
//! It is also the operator's registry of API types and controllers, so tests start a
//! `TestEnv` with the same CRDs ([`App::crd_objects`]) and a manager with the same controllers
//! ([`App::add_controllers`]).

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::controller::ControllerDef;
use crate::manager::{LeaseSettings, Manager, ManagerSettings};
use crate::webhook::WebhookServer;

/// Builds one controller from the operator's flags.
type Build<F> = Box<dyn Fn(&F) -> ControllerDef>;

/// The standard command line of an operator binary; see the [module docs](self).
///
/// `F` is the operator's own flags ([`NoFlags`] until [`App::flags`] names a type).
pub struct App<F = NoFlags> {
    name: String,
    crds: Vec<CustomResourceDefinition>,
    controllers: Vec<Build<F>>,
    webhooks: Option<BuildWebhooks<F>>,
}

/// Builds the webhook server from the operator's flags.
type BuildWebhooks<F> = Box<dyn Fn(&F) -> WebhookServer>;

/// The flags of an operator that has none of its own (the default of [`App`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Args)]
pub struct NoFlags {}

impl<F> std::fmt::Debug for App<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .field(
                "crds",
                &self
                    .crds
                    .iter()
                    .map(|c| c.metadata.name.as_deref())
                    .collect::<Vec<_>>(),
            )
            .field("controllers", &self.controllers.len())
            .field("webhooks", &self.webhooks.is_some())
            .finish()
    }
}

/// Why an [`App`] command failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The command line was wrong (the message is clap's, with usage).
    #[error("{0}")]
    Usage(#[from] clap::Error),
    /// The runtime failed (client configuration, API, leader election, binding a port).
    #[error(transparent)]
    Runtime(#[from] crate::Error),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    AsyncRuntime(std::io::Error),
}

#[derive(Debug, Parser)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli<F: Args> {
    #[command(subcommand)]
    command: Option<Command<F>>,
    #[command(flatten)]
    run: RunArgs<F>,
}

#[derive(Debug, Subcommand)]
enum Command<F: Args> {
    /// Run the controllers against the cluster of the kubeconfig or the in-cluster service
    /// account (the default command).
    Run(RunArgs<F>),
    /// Print every CustomResourceDefinition as YAML documents.
    PrintCrds,
    /// Print the RBAC the controllers need as YAML: a ClusterRole, or Roles per namespace
    /// with `--namespace`.
    PrintRbac {
        /// The role's name (default: `NAME-manager-role`).
        #[arg(long, value_name = "NAME")]
        role_name: Option<String>,
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        flags: F,
    },
}

/// What the caches watch.
#[derive(Debug, Clone, Default, Args)]
struct Scope {
    /// Watch only this namespace (repeat for several; default: all namespaces, which needs a
    /// ClusterRole).
    #[arg(
        long = "namespace",
        value_name = "NS",
        env = "WATCH_NAMESPACE",
        value_delimiter = ','
    )]
    namespaces: Vec<String>,
    /// Cache only objects whose labels match (e.g. `team=storage`), for every kind.
    #[arg(long, value_name = "SELECTOR")]
    label_selector: Option<String>,
}

#[derive(Debug, Args)]
struct RunArgs<F: Args> {
    /// Where `/metrics` is served (`:8080` means all interfaces; `0` turns it off).
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = parse_bind_address)]
    metrics_bind_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served (`0` turns them off).
    #[arg(long, value_name = "ADDR", default_value = ":8081", value_parser = parse_bind_address)]
    health_probe_bind_address: BindAddress,
    /// Run the controllers only while holding the leader Lease (on in the scaffolded
    /// Deployment, so only one replica acts at a time).
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace (default: `$POD_NAMESPACE`, the service account's namespace
    /// in a cluster, else `default`).
    #[arg(long, value_name = "NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// The Lease's name (default: the operator's name).
    #[arg(long, value_name = "NAME")]
    leader_election_id: Option<String>,
    /// The kubeconfig file to use (default: `$KUBECONFIG`, `~/.kube/config`, or the pod's
    /// service account in a cluster).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The port webhooks are served on, all interfaces (with a webhook server).
    #[arg(long, value_name = "PORT", default_value_t = crate::webhook::DEFAULT_PORT)]
    webhook_port: u16,
    /// Read the webhook certificate (`tls.crt`, `tls.key`) from this directory instead of
    /// the webhook server's own setting.
    #[arg(long, value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,
    #[command(flatten)]
    scope: Scope,
    #[command(flatten)]
    flags: F,
}

/// A bind address flag: off (`None`), or an address. A type of its own because clap reads an
/// `Option` field as "the flag may be missing", not as a value that can say "off".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

/// Parses controller-runtime's address forms: `0` (off), `:8080` (all interfaces) and
/// `HOST:PORT` — the value parser of every bind address flag (opkit's standard command line
/// and binaries with their own, such as the generic chart operator's).
pub fn parse_bind_address(s: &str) -> Result<BindAddress, String> {
    if s == "0" {
        return Ok(BindAddress(None));
    }
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{s:?}: the port must be a number from 0 to 65535"))?;
        return Ok(BindAddress(Some(SocketAddr::from((
            Ipv4Addr::UNSPECIFIED,
            port,
        )))));
    }
    s.parse()
        .map(|a| BindAddress(Some(a)))
        .map_err(|_| format!("{s:?}: write HOST:PORT, :PORT, or 0 to turn it off"))
}

/// The namespace this process runs in: `$POD_NAMESPACE`, else the service account's
/// namespace file in a pod, else `default`.
pub fn own_namespace() -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|ns| ns.trim().to_string())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

impl App {
    /// An operator named `name` (the default Lease and role names derive from it), with no
    /// CRDs, no controllers and no flags of its own yet.
    pub fn new(name: impl Into<String>) -> App {
        App {
            name: name.into(),
            crds: Vec::new(),
            controllers: Vec::new(),
            webhooks: None,
        }
    }

    /// Gives the operator its own flags: `F` is a clap [`Args`] type (`#[derive(clap::Args)]`)
    /// that `run` and `print-rbac` accept next to the standard flags; each controller's
    /// builder receives the parsed value. Controllers added before this call keep working.
    pub fn flags<F: Args + 'static>(self) -> App<F> {
        App {
            name: self.name,
            crds: self.crds,
            controllers: self
                .controllers
                .into_iter()
                .map(|build| Box::new(move |_: &F| build(&NoFlags {})) as Build<F>)
                .collect(),
            webhooks: self
                .webhooks
                .map(|build| Box::new(move |_: &F| build(&NoFlags {})) as BuildWebhooks<F>),
        }
    }
}

impl<F: Args + 'static> App<F> {
    /// Adds the CRD of `K` (from `#[derive(CustomResource)]`). Another version of a kind
    /// already added joins that kind's CRD as a served version; the version added first stays
    /// the storage version.
    pub fn crd<K: kube::CustomResourceExt>(mut self) -> Self {
        let mut crd = K::crd();
        match self
            .crds
            .iter_mut()
            .find(|c| c.metadata.name == crd.metadata.name)
        {
            Some(existing) => {
                for version in &mut crd.spec.versions {
                    version.storage = false;
                }
                existing.spec.versions.append(&mut crd.spec.versions);
            }
            None => self.crds.push(crd),
        }
        self
    }

    /// Adds a CRD built by hand: a kind with several versions (`kube::core::crd::merge_crds`
    /// of each version's CRD, with its conversion; see [`crate::webhook`]).
    pub fn crd_object(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// Adds a controller: `build` makes it from the operator's flags, for each manager (`run`
    /// builds one, `print-rbac` another to derive the RBAC).
    pub fn controller(mut self, build: impl Fn(&F) -> ControllerDef + 'static) -> Self {
        self.controllers.push(Box::new(build));
        self
    }

    /// Serves admission and conversion webhooks: `build` makes the server from the operator's
    /// flags; `run` sets its port from `--webhook-port` and, if given, its certificate
    /// directory from `--webhook-cert-dir`; `print-rbac` includes what self-managed
    /// certificates need (the Secret, and the webhook configurations and CRDs they publish
    /// the CA into).
    pub fn webhook_server(mut self, build: impl Fn(&F) -> WebhookServer + 'static) -> Self {
        self.webhooks = Some(Box::new(build));
        self
    }

    /// The CRDs, e.g. for `TestEnv::builder().crd_object(…)`.
    pub fn crd_objects(&self) -> &[CustomResourceDefinition] {
        &self.crds
    }

    /// Adds every controller, built from `flags`, to `manager` (tests run them on a `TestEnv`
    /// this way; [`App::parse_flags`] gives the flags a command line would).
    pub fn add_controllers(&self, manager: &mut Manager, flags: &F) {
        for build in &self.controllers {
            manager.add(build(flags));
        }
    }

    /// The webhook server as `run` builds it from `flags` (before `--webhook-port` and
    /// `--webhook-cert-dir` apply), if the operator has one; tests give it to a manager on a
    /// `TestEnv` with [`ManagerBuilder::webhook_server`](crate::ManagerBuilder::webhook_server).
    pub fn webhook_server_for(&self, flags: &F) -> Option<WebhookServer> {
        self.webhooks.as_ref().map(|build| build(flags))
    }

    /// The operator's flags as `run` would parse them from `args` (the operator's own flags
    /// only; the first item is the program name), e.g. for tests.
    pub fn parse_flags<I, T>(&self, args: I) -> Result<F, AppError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let command = F::augment_args(clap::Command::new("operator"));
        let matches = command.try_get_matches_from(args)?;
        Ok(F::from_arg_matches(&matches)?)
    }

    /// The operator's flags with nothing given on the command line (their defaults); fails
    /// when some flag is required.
    pub fn default_flags(&self) -> Result<F, AppError> {
        self.parse_flags([self.name.as_str()])
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The manager with every controller, configured as `run` would be with these flags.
    fn manager(&self, args: &RunArgs<F>) -> Manager {
        let settings = ManagerSettings {
            metrics_bind_address: args.metrics_bind_address.0,
            health_probe_bind_address: args.health_probe_bind_address.0,
            leader_election: args.leader_elect.then(|| LeaseSettings {
                id: args
                    .leader_election_id
                    .clone()
                    .unwrap_or_else(|| self.name.clone()),
                namespace: args.leader_election_namespace.clone(),
            }),
            namespaces: args.scope.namespaces.clone(),
            label_selector: args.scope.label_selector.clone(),
        };
        let mut builder = settings.builder();
        if let Some(server) = self.webhook_server_for(&args.flags) {
            let mut server = server.port(args.webhook_port);
            if let Some(dir) = &args.webhook_cert_dir {
                server = server.cert_dir(dir);
            }
            builder = builder.webhook_server(server);
        }
        let mut manager = builder.build();
        self.add_controllers(&mut manager, &args.flags);
        manager
    }

    /// The CRDs as YAML documents separated by `---`.
    pub fn crds_yaml(&self) -> crate::Result<String> {
        let mut out = String::new();
        for crd in &self.crds {
            out.push_str("---\n");
            out.push_str(&serde_yaml::to_string(crd)?);
        }
        Ok(out)
    }

    /// The ClusterRole for every controller, built from the flags' defaults, with leader
    /// election's Lease rules (deployed managers elect a leader), as YAML — what `print-rbac
    /// --role-name ROLE` prints. Fails when the operator's flags have required values (pass
    /// them to `print-rbac` instead).
    pub fn cluster_role_yaml(&self, role_name: &str) -> crate::Result<String> {
        let flags = self.default_flags().map_err(|e| {
            crate::Error::Config(format!(
                "the operator's flags have no defaults to derive the RBAC from: {e}"
            ))
        })?;
        self.rbac_yaml_with(role_name, Scope::default(), flags)
    }

    /// The RBAC of a deployed manager (leader election on, in the scope's namespaces).
    fn rbac_yaml_with(&self, role_name: &str, scope: Scope, flags: F) -> crate::Result<String> {
        let args = RunArgs {
            metrics_bind_address: BindAddress(None),
            health_probe_bind_address: BindAddress(None),
            leader_elect: true,
            leader_election_namespace: None,
            leader_election_id: None,
            kubeconfig: None,
            webhook_port: crate::webhook::DEFAULT_PORT,
            webhook_cert_dir: None,
            scope,
            flags,
        };
        self.manager(&args).rbac_yaml(role_name)
    }

    /// Parses `args` (the first is the program name) and runs the command, inside a tokio
    /// runtime of its own. Output goes to stdout; nothing is printed on error.
    pub fn run_with_args<I, T>(&self, args: I) -> Result<(), AppError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = Cli::<F>::try_parse_from(args)?;
        match cli.command {
            Some(Command::PrintCrds) => print!("{}", self.crds_yaml()?),
            Some(Command::PrintRbac {
                role_name,
                scope,
                flags,
            }) => {
                let role = role_name.unwrap_or_else(|| format!("{}-manager-role", self.name));
                print!("{}", self.rbac_yaml_with(&role, scope, flags)?);
            }
            Some(Command::Run(args)) => self.run(&args)?,
            None => self.run(&cli.run)?,
        }
        Ok(())
    }

    fn run(&self, args: &RunArgs<F>) -> Result<(), AppError> {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
            )
            .with_writer(std::io::stderr)
            .try_init();
        let manager = self.manager(args);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(AppError::AsyncRuntime)?;
        runtime.block_on(async {
            let client = match &args.kubeconfig {
                Some(path) => crate::client_from_kubeconfig(path).await?,
                None => crate::client().await?,
            };
            tracing::info!(operator = %self.name, "starting manager");
            manager.run(client).await
        })?;
        Ok(())
    }

    /// Runs the command line of the process and turns the outcome into an exit code: usage
    /// errors print clap's message (`--help` prints help and succeeds), other errors print
    /// `NAME: error` to stderr.
    pub fn main(self) -> ExitCode {
        match self.run_with_args(std::env::args_os()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(AppError::Usage(e)) => {
                let _ = e.print();
                if e.use_stderr() {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => {
                eprintln!("{}: {e}", self.name);
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_take_controller_runtime_forms() {
        assert_eq!(parse_bind_address("0"), Ok(BindAddress(None)));
        assert_eq!(
            parse_bind_address(":8080").unwrap().0,
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9090").unwrap().0,
            Some("127.0.0.1:9090".parse().unwrap())
        );
        assert!(parse_bind_address(":http").unwrap_err().contains("port"));
        assert!(parse_bind_address("nowhere").unwrap_err().contains(":PORT"));
    }

    #[test]
    fn defaults_follow_the_kubebuilder_scaffold() {
        let cli = Cli::<NoFlags>::try_parse_from(["op"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.metrics_bind_address, BindAddress(None));
        assert_eq!(
            cli.run.health_probe_bind_address.0,
            Some("0.0.0.0:8081".parse().unwrap())
        );
        assert!(!cli.run.leader_elect);
    }

    #[test]
    fn unknown_flags_are_usage_errors() {
        let app = App::new("op");
        let err = app.run_with_args(["op", "--bogus"]).unwrap_err();
        assert!(matches!(err, AppError::Usage(_)), "{err}");
    }

    #[derive(Debug, Clone, PartialEq, Args)]
    struct ImageFlags {
        /// The image.
        #[arg(long, default_value = "app:1")]
        image: String,
    }

    fn config_map_controller() -> ControllerDef {
        use crate::{Action, Context, Controller};
        use k8s_openapi::api::core::v1::ConfigMap;
        use std::sync::Arc;
        Controller::<ConfigMap>::new("cm").build(
            |_: Arc<ConfigMap>, _: Arc<Context<()>>| async {
                Ok::<_, crate::Error>(Action::await_change())
            },
            (),
        )
    }

    #[test]
    fn the_operators_own_flags_reach_every_controller_builder() {
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let app = App::new("op")
            .controller(|_| config_map_controller())
            .flags::<ImageFlags>()
            .controller(move |flags: &ImageFlags| {
                record.lock().unwrap().push(flags.image.clone());
                config_map_controller()
            });
        app.run_with_args(["op", "print-rbac", "--image", "app:2"])
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), ["app:2"]);
        assert_eq!(
            app.parse_flags(["op"]).unwrap(),
            ImageFlags {
                image: "app:1".into()
            }
        );
        let mut manager = Manager::builder().build();
        app.add_controllers(
            &mut manager,
            &app.parse_flags(["op", "--image", "x"]).unwrap(),
        );
        assert_eq!(*seen.lock().unwrap(), ["app:2", "x"]);
        assert!(matches!(
            app.run_with_args(["op", "run", "--imag", "x"]),
            Err(AppError::Usage(_))
        ));
    }

    #[test]
    fn namespace_flags_scope_the_caches_and_turn_the_rbac_into_roles() {
        let cli =
            Cli::<NoFlags>::try_parse_from(["op", "run", "--namespace", "a", "--namespace", "b,c"])
                .unwrap();
        let Some(Command::Run(args)) = cli.command else {
            panic!("run expected");
        };
        assert_eq!(args.scope.namespaces, ["a", "b", "c"]);
        let app = App::new("op").controller(|_| config_map_controller());
        let scope = Scope {
            namespaces: vec!["team-a".into()],
            label_selector: None,
        };
        let yaml = app.rbac_yaml_with("op-role", scope, NoFlags {}).unwrap();
        assert!(yaml.contains("kind: Role\n"), "{yaml}");
        assert!(yaml.contains("namespace: team-a"), "{yaml}");
        assert!(yaml.contains("configmaps"), "{yaml}");
        let cluster = app.cluster_role_yaml("op-role").unwrap();
        assert!(cluster.contains("kind: ClusterRole"), "{cluster}");
        assert!(!cluster.contains("kind: Role\n"), "{cluster}");
    }

    #[test]
    fn print_rbac_includes_the_lease_and_event_rules() {
        let app = App::new("op");
        let yaml = app.cluster_role_yaml("op-manager-role").unwrap();
        assert!(yaml.contains("name: op-manager-role"), "{yaml}");
        assert!(yaml.contains("leases"), "{yaml}");
        assert!(yaml.contains("events"), "{yaml}");
    }

    #[test]
    fn a_second_version_of_a_kind_joins_its_crd_and_the_first_stays_stored() {
        mod v1 {
            #[derive(
                kube::CustomResource,
                serde::Deserialize,
                serde::Serialize,
                Clone,
                Debug,
                schemars::JsonSchema,
            )]
            #[kube(group = "example.com", version = "v1", kind = "Shelf", namespaced)]
            pub struct ShelfSpec {}
        }
        mod v2 {
            #[derive(
                kube::CustomResource,
                serde::Deserialize,
                serde::Serialize,
                Clone,
                Debug,
                schemars::JsonSchema,
            )]
            #[kube(group = "example.com", version = "v2", kind = "Shelf", namespaced)]
            pub struct ShelfSpec {}
        }
        let app = App::new("op").crd::<v1::Shelf>().crd::<v2::Shelf>();
        assert_eq!(app.crd_objects().len(), 1);
        let versions: Vec<(&str, bool, bool)> = app.crd_objects()[0]
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage))
            .collect();
        assert_eq!(versions, [("v1", true, true), ("v2", true, false)]);
    }

    #[test]
    fn print_crds_includes_a_crd_built_by_hand() {
        let mut crd = CustomResourceDefinition::default();
        crd.metadata.name = Some("widgets.example.com".into());
        let yaml = App::new("op").crd_object(crd).crds_yaml().unwrap();
        assert!(yaml.starts_with("---\n"), "{yaml}");
        assert!(yaml.contains("name: widgets.example.com"), "{yaml}");
    }

    #[test]
    fn a_webhook_server_takes_its_port_from_the_flags_and_adds_its_rbac() {
        let app = App::new("op").webhook_server(|_| {
            WebhookServer::new().self_managed_certs(
                crate::SelfManagedCerts::new("op-webhook", "op-system")
                    .validating_configuration("op-validating"),
            )
        });
        let cli = Cli::<NoFlags>::try_parse_from(["op", "--webhook-port", "10443"]).unwrap();
        assert_eq!(cli.run.webhook_port, 10443);
        let yaml = app.cluster_role_yaml("op-role").unwrap();
        assert!(yaml.contains("secrets"), "{yaml}");
        assert!(yaml.contains("validatingwebhookconfigurations"), "{yaml}");
        assert!(!yaml.contains("mutatingwebhookconfigurations"), "{yaml}");
    }
}
