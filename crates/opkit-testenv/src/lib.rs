//! `TestEnv`: a real control plane in the test process (envtest for opkit).
//!
//! envtest starts kube-apiserver and etcd binaries and takes seconds; `TestEnv` starts opkit's
//! embedded control plane in the current tokio runtime in milliseconds: an in-memory store,
//! a free loopback port, HTTPS with a generated CA and an admin bearer token — the same path
//! a real cluster's clients take. CRDs are installed from Rust types and awaited until
//! `Established`. Built-in controllers (garbage collector, namespaces, simulated workloads)
//! run by default and can be switched off. Each `TestEnv` is independent, so tests run in
//! parallel; dropping it stops the server.
//!
//! Add it as a dev-dependency, so operators never link the server in production builds.

mod wait;
pub mod webhooks;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, CustomResourceExt, ResourceExt};
use opkit_controlplane::controllers::{ControllerSet, ParseControllersError, Settings};
use opkit_controlplane::{Config, StartError};

pub use opkit_controlplane::{ControlPlane, controllers};
use tokio::time::Instant;
pub use wait::{Done, EVENTUALLY_TIMEOUT, SETTLE, eventually, eventually_within, settle};

fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// Why a [`TestEnv`] could not start or install a CRD.
#[derive(Debug, thiserror::Error)]
pub enum TestEnvError {
    /// The control plane did not start.
    #[error("control plane: {0}")]
    Start(#[from] StartError),
    /// A `.controllers(...)` value names no controller.
    #[error(transparent)]
    Controllers(#[from] ParseControllersError),
    /// The kubeconfig could not be turned into a client.
    #[error("client: {0}")]
    Client(String),
    /// Creating a CRD failed.
    #[error("install CRD {name}: {source}")]
    Crd {
        /// The CRD's name.
        name: String,
        /// The cause.
        source: kube::Error,
    },
    /// A CRD did not become Established in time.
    #[error("CRD {0} not Established within 10 s")]
    CrdNotEstablished(String),
    /// Webhook manifests could not be read ([`webhooks::LocalWebhooks::from_yaml`]).
    #[error("webhook manifests: {0}")]
    Webhooks(String),
}

/// Configures a [`TestEnv`].
#[derive(Debug, Clone, Default)]
pub struct TestEnvBuilder {
    crds: Vec<CustomResourceDefinition>,
    controllers: Option<String>,
    settings: Option<Settings>,
}

impl TestEnvBuilder {
    /// Installs the CRD of `K` (from `#[derive(CustomResource)]`) at start.
    pub fn crd<K: CustomResourceExt>(mut self) -> Self {
        self.crds.push(K::crd());
        self
    }

    /// Installs `crd` at start.
    pub fn crd_object(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// Which built-in controllers run, in kube-controller-manager's `--controllers` syntax:
    /// `"*"` (all, the default), `""` (none: a bare API server), `"*,-garbage-collector"`.
    pub fn controllers(mut self, spec: impl Into<String>) -> Self {
        self.controllers = Some(spec.into());
        self
    }

    /// Full control over the built-in controllers' settings (pod readiness delay, clock…).
    pub fn controller_settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Starts the control plane, installs the CRDs and waits until they are Established.
    pub async fn start(self) -> Result<TestEnv, TestEnvError> {
        let started = Instant::now();
        let mut settings = self.settings.unwrap_or_default();
        if let Some(spec) = &self.controllers {
            settings.enabled = spec.parse::<ControllerSet>()?;
        }
        let plane = ControlPlane::start(Config {
            controllers: settings,
            ..Config::ephemeral()
        })
        .await?;
        let client = client_for(plane.kubeconfig()).await?;
        let env = TestEnv {
            plane,
            client,
            startup: Duration::ZERO,
        };
        for crd in self.crds {
            env.install_crd(crd).await?;
        }
        Ok(TestEnv {
            startup: started.elapsed(),
            ..env
        })
    }
}

/// A running in-process control plane with a client for it; see the [module docs](self).
pub struct TestEnv {
    plane: ControlPlane,
    client: Client,
    startup: Duration,
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("url", &self.plane.url())
            .finish_non_exhaustive()
    }
}

async fn client_for(kubeconfig: &str) -> Result<Client, TestEnvError> {
    let config = client_config(kubeconfig).await?;
    Client::try_from(config).map_err(|e| TestEnvError::Client(e.to_string()))
}

/// The client configuration a kubeconfig (YAML) describes — e.g. one of
/// [`ControlPlane::user_kubeconfig`] — from which clients with connection pools of their own
/// are made (`kube::Client::try_from(config.clone())`), as a restarted process makes its own.
pub async fn client_config(kubeconfig: &str) -> Result<kube::Config, TestEnvError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let err = |e: &dyn std::fmt::Display| TestEnvError::Client(e.to_string());
    let kc = Kubeconfig::from_yaml(kubeconfig).map_err(|e| err(&e))?;
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| err(&e))
}

impl TestEnv {
    /// A builder (all built-in controllers, no CRDs).
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// Starts with the defaults.
    pub async fn start() -> Result<TestEnv, TestEnvError> {
        TestEnv::builder().start().await
    }

    /// A client with admin rights (clone it freely).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// A fresh client from the kubeconfig (separate connection pool).
    pub async fn new_client(&self) -> Result<Client, TestEnvError> {
        client_for(self.plane.kubeconfig()).await
    }

    /// The admin kubeconfig (YAML) — e.g. to write for kubectl.
    pub fn kubeconfig(&self) -> &str {
        self.plane.kubeconfig()
    }

    /// The server URL (`https://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        self.plane.url()
    }

    /// The control plane itself.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.plane
    }

    /// How long [`TestEnvBuilder::start`] took, CRDs included.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Creates `crd` and waits until it is Established (at most 10 s).
    pub async fn install_crd(&self, crd: CustomResourceDefinition) -> Result<(), TestEnvError> {
        let name = crd.name_any();
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let created = api
            .create(&PostParams::default(), &crd)
            .await
            .map_err(|source| TestEnvError::Crd {
                name: name.clone(),
                source,
            })?;
        // The embedded server usually answers with the conditions already set; otherwise
        // poll (cheaper than opening a watch for one transition).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut current = Some(created);
        loop {
            if current.as_ref().is_some_and(established) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(TestEnvError::CrdNotEstablished(name));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            current = api
                .get_opt(&name)
                .await
                .map_err(|source| TestEnvError::Crd {
                    name: name.clone(),
                    source,
                })?;
        }
    }

    /// Installs the CRD of `K` and waits until it is Established.
    pub async fn install<K: CustomResourceExt>(&self) -> Result<(), TestEnvError> {
        self.install_crd(K::crd()).await
    }

    /// Stops the control plane and waits for its tasks.
    pub async fn shutdown(self) {
        self.plane.shutdown().await;
    }
}
