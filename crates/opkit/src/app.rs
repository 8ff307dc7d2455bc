//! [`App`]: the command line every operator binary needs, so its `main.rs` is a few lines.
//!
//! An operator binary does three things: run its controllers, and print the CRDs and the
//! ClusterRole that deploying it needs (`opkit generate manifests` reads them from there, as
//! kubebuilder's `controller-gen` reads Go types). The flags of `run` are controller-runtime's
//! scaffolded ones (`--metrics-bind-address`, `--health-probe-bind-address`, `--leader-elect`),
//! spelled the same so manifests and habits carry over, including the `:8080` address form and
//! `0` for "off".
//!
//! It is also the operator's registry of API types and controllers, so tests start a
//! `TestEnv` with the same CRDs and a manager with the same controllers.
//!
//! ```no_run
//! # use opkit::{App, ControllerDef, Controller};
//! # #[derive(opkit::CustomResource, serde::Deserialize, serde::Serialize, Clone, Debug, opkit::JsonSchema)]
//! # #[kube(group = "webapp.example.com", version = "v1", kind = "Guestbook", namespaced)]
//! # pub struct GuestbookSpec {}
//! # fn guestbook_controller() -> ControllerDef { unimplemented!() }
//! fn main() -> std::process::ExitCode {
//!     App::new("guestbook")
//!         .crd::<Guestbook>()
//!         .controller(guestbook_controller)
//!         .main()
//! }
//! ```

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::controller::ControllerDef;
use crate::leader::LeaderElection;
use crate::manager::Manager;

/// The standard command line of an operator binary; see the [module docs](self).
pub struct App {
    name: String,
    crds: Vec<CustomResourceDefinition>,
    controllers: Vec<Box<dyn Fn() -> ControllerDef>>,
}

impl std::fmt::Debug for App {
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
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers against the cluster of the kubeconfig or the in-cluster service
    /// account (the default command).
    Run(RunArgs),
    /// Print every CustomResourceDefinition as YAML documents.
    PrintCrds,
    /// Print the ClusterRole the controllers need as YAML.
    PrintRbac {
        /// The ClusterRole's name (default: `NAME-manager-role`).
        #[arg(long, value_name = "NAME")]
        role_name: Option<String>,
    },
}

#[derive(Debug, Args)]
struct RunArgs {
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
}

/// A bind address flag: off, or an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BindAddress(Option<SocketAddr>);

/// Parses controller-runtime's address forms: `0` (off), `:8080` (all interfaces) and
/// `HOST:PORT`.
fn parse_bind_address(s: &str) -> Result<BindAddress, String> {
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
    /// An operator named `name` (the default Lease and ClusterRole names derive from it),
    /// with no CRDs and no controllers yet.
    pub fn new(name: impl Into<String>) -> App {
        App {
            name: name.into(),
            crds: Vec::new(),
            controllers: Vec::new(),
        }
    }

    /// Adds the CRD of `K` (from `#[derive(CustomResource)]`).
    pub fn crd<K: kube::CustomResourceExt>(mut self) -> App {
        self.crds.push(K::crd());
        self
    }

    /// Adds a controller: `build` makes it for each manager (`run` builds one, `print-rbac`
    /// another to derive the ClusterRole).
    pub fn controller(mut self, build: impl Fn() -> ControllerDef + 'static) -> App {
        self.controllers.push(Box::new(build));
        self
    }

    /// The CRDs, e.g. for `TestEnv::builder().crd_object(…)`.
    pub fn crd_objects(&self) -> &[CustomResourceDefinition] {
        &self.crds
    }

    /// Adds every controller to `manager` (tests run them on a `TestEnv` this way).
    pub fn add_controllers(&self, manager: &mut Manager) {
        for build in &self.controllers {
            manager.add(build());
        }
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The manager with every controller, configured as `run` would be with these flags.
    fn manager(&self, args: &RunArgs) -> Manager {
        let mut builder = Manager::builder();
        if let Some(addr) = args.metrics_bind_address.0 {
            builder = builder.metrics_addr(addr);
        }
        if let Some(addr) = args.health_probe_bind_address.0 {
            builder = builder.probe_addr(addr);
        }
        if args.leader_elect {
            let namespace = args
                .leader_election_namespace
                .clone()
                .unwrap_or_else(own_namespace);
            let id = args
                .leader_election_id
                .clone()
                .unwrap_or_else(|| self.name.clone());
            builder = builder.leader_election(LeaderElection::new(id, namespace));
        }
        let mut manager = builder.build();
        self.add_controllers(&mut manager);
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

    /// The ClusterRole for every controller, with leader election's Lease rules (deployed
    /// managers elect a leader), as YAML.
    pub fn cluster_role_yaml(&self, role_name: &str) -> crate::Result<String> {
        let args = RunArgs {
            metrics_bind_address: BindAddress(None),
            health_probe_bind_address: BindAddress(None),
            leader_elect: true,
            leader_election_namespace: Some("default".to_string()),
            leader_election_id: None,
        };
        self.manager(&args).cluster_role_yaml(role_name)
    }

    /// Parses `args` (the first is the program name) and runs the command, inside a tokio
    /// runtime of its own. Output goes to stdout; nothing is printed on error.
    pub fn run_with_args<I, T>(&self, args: I) -> Result<(), AppError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = Cli::try_parse_from(args)?;
        match cli.command {
            Some(Command::PrintCrds) => print!("{}", self.crds_yaml()?),
            Some(Command::PrintRbac { role_name }) => {
                let role = role_name.unwrap_or_else(|| format!("{}-manager-role", self.name));
                print!("{}", self.cluster_role_yaml(&role)?);
            }
            Some(Command::Run(args)) => self.run(&args)?,
            None => self.run(&cli.run)?,
        }
        Ok(())
    }

    fn run(&self, args: &RunArgs) -> Result<(), AppError> {
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
            let client = crate::client().await?;
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
        let cli = Cli::try_parse_from(["op"]).unwrap();
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

    #[test]
    fn print_rbac_includes_the_lease_and_event_rules() {
        let app = App::new("op");
        let yaml = app.cluster_role_yaml("op-manager-role").unwrap();
        assert!(yaml.contains("name: op-manager-role"), "{yaml}");
        assert!(yaml.contains("leases"), "{yaml}");
        assert!(yaml.contains("events"), "{yaml}");
    }
}
