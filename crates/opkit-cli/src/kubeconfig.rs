//! `opkit kubeconfig`: kubeconfigs for users and service accounts other than the admin.
//!
//! `opkit up` writes one kubeconfig, the admin's, which is in `system:masters` and may do
//! anything — useless for checking that an operator's RBAC rules are enough. This command hands
//! out kubeconfigs for ordinary identities, the two ways a real cluster knows them:
//!
//! * `--user NAME [--group G]...`: a client certificate (CN = user, O = groups) signed by the
//!   CA in the data dir. Needs only the files `opkit up` left there (`kubeconfig` for the
//!   server's address, `ca.crt`, `ca.key`), not a running server: like upstream's
//!   `--client-ca-file` users, such a user exists only by the certificate.
//! * `--service-account NS/NAME`: a bearer token from the running control plane's TokenRequest
//!   API (what `kubectl create token` does), asked for with the admin kubeconfig. The server
//!   checks on every request that the service account still exists, so deleting it revokes
//!   the token.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::{ArgGroup, Args};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How long a user's client certificate is valid unless `--valid-for` says otherwise.
const USER_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long a service-account token is valid unless `--valid-for` says otherwise.
const TOKEN_VALIDITY: Duration = Duration::from_secs(3600);
/// How long to wait for the control plane to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `opkit kubeconfig`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("identity").required(true).args(["user", "service_account"])))]
pub struct KubeconfigArgs {
    /// Issue a client certificate for this user (signed by the data dir's CA).
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// A group of the user (repeatable, at most 2); every user is also in system:authenticated.
    #[arg(long = "group", value_name = "GROUP", requires = "user")]
    groups: Vec<String>,
    /// Ask the running control plane for a token of this service account.
    #[arg(long, value_name = "NS/NAME")]
    service_account: Option<ServiceAccountRef>,
    /// Create the service account if it does not exist.
    #[arg(long, requires = "service_account")]
    create: bool,
    /// The control plane's data directory (as given to `opkit up`).
    #[arg(long, value_name = "DIR", default_value = ".opkit")]
    data_dir: PathBuf,
    /// Write the kubeconfig to this file (mode 0600) instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// How long the credential is valid, e.g. `8760h`, `1h30m`, `45m` (default: 8760h for a
    /// user's certificate, 1h for a service-account token).
    #[arg(long, value_name = "DURATION", value_parser = parse_validity)]
    valid_for: Option<Duration>,
}

/// A service account named `NAMESPACE/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl FromStr for ServiceAccountRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(ServiceAccountRef {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!(
                "{s:?} is not a service account: write NAMESPACE/NAME, e.g. default/robot"
            )),
        }
    }
}

impl fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Parses a positive Go duration (`8760h`, `1h30m`, `90s`, `500ms`), the way kubectl's
/// `--duration` reads it (a bare number is refused).
pub fn parse_validity(s: &str) -> Result<Duration, String> {
    let validity = opkit_apimachinery::Duration::parse(s.trim())
        .map_err(|e| e.to_string())?
        .to_std()
        .map_err(|e| e.to_string())?;
    if validity.is_zero() {
        return Err(format!("{s:?}: the validity must be longer than zero"));
    }
    Ok(validity)
}

/// Runs `opkit kubeconfig`.
pub async fn run(args: KubeconfigArgs) -> anyhow::Result<()> {
    let data = DataDir::open(&args.data_dir)?;
    let kubeconfig = match (&args.user, &args.service_account) {
        (Some(user), _) => user_kubeconfig(
            &data,
            user,
            &args.groups,
            args.valid_for.unwrap_or(USER_VALIDITY),
        )?,
        (None, Some(account)) => {
            let valid_for = args.valid_for.unwrap_or(TOKEN_VALIDITY);
            service_account_kubeconfig(&data, account, args.create, valid_for).await?
        }
        (None, None) => bail!("pass --user NAME or --service-account NAMESPACE/NAME"),
    };
    match &args.output {
        Some(path) => {
            write_private(path, &kubeconfig)?;
            eprintln!("kubeconfig written to {}", path.display());
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(kubeconfig.as_bytes())
                .and_then(|()| stdout.flush())
                .context("cannot write the kubeconfig to standard output")?;
        }
    }
    Ok(())
}

/// What `opkit up` left in its data directory.
struct DataDir {
    dir: PathBuf,
    /// The admin kubeconfig (`DIR/kubeconfig`).
    admin: Kubeconfig,
    /// The server's URL, from the admin kubeconfig.
    server: String,
    /// The CA certificate (PEM) clients trust.
    ca_pem: String,
}

impl DataDir {
    /// Reads the admin kubeconfig and the CA certificate from `dir`.
    fn open(dir: &Path) -> anyhow::Result<DataDir> {
        let kubeconfig_path = dir.join("kubeconfig");
        let admin = Kubeconfig::read_from(&kubeconfig_path).map_err(|e| {
            if kubeconfig_path.exists() {
                anyhow!("cannot read {}: {e}", kubeconfig_path.display())
            } else {
                no_control_plane(dir)
            }
        })?;
        let server = server_url(&admin).ok_or_else(|| {
            anyhow!(
                "{} names no server: run `opkit up --data-dir {}` to write it again",
                kubeconfig_path.display(),
                dir.display()
            )
        })?;
        let ca_pem = read_data_file(dir, "ca.crt")?;
        Ok(DataDir {
            dir: dir.to_path_buf(),
            admin,
            server,
            ca_pem,
        })
    }
}

/// The error for a directory `opkit up` has not written.
fn no_control_plane(dir: &Path) -> anyhow::Error {
    anyhow!(
        "no control plane data in {}: run `opkit up` first or pass --data-dir",
        dir.display()
    )
}

fn read_data_file(dir: &Path, name: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            no_control_plane(dir).context(format!("{} is missing", path.display()))
        } else {
            anyhow!("cannot read {}: {e}", path.display())
        }
    })
}

/// The server of the kubeconfig's current context (or of its only cluster).
fn server_url(kubeconfig: &Kubeconfig) -> Option<String> {
    let cluster_name = kubeconfig
        .current_context
        .as_ref()
        .and_then(|current| kubeconfig.contexts.iter().find(|c| &c.name == current))
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone());
    let cluster = match cluster_name {
        Some(name) => kubeconfig.clusters.iter().find(|c| c.name == name)?,
        None => kubeconfig.clusters.first()?,
    };
    cluster.cluster.as_ref()?.server.clone()
}

/// A kubeconfig for `user` in `groups` with a fresh client certificate valid for `valid_for`.
fn user_kubeconfig(
    data: &DataDir,
    user: &str,
    groups: &[String],
    valid_for: Duration,
) -> anyhow::Result<String> {
    let ca_key_pem = read_data_file(&data.dir, "ca.key")?;
    let cert = opkit_apiserver::issue_client_certificate(&ca_key_pem, user, groups, valid_for)?;
    Ok(opkit_apiserver::kubeconfig_for(
        &data.server,
        &data.ca_pem,
        user,
        opkit_apiserver::KubeconfigUser::Certificate(&cert),
        "default",
    ))
}

/// A kubeconfig acting as `account` with a token from the control plane's TokenRequest API.
async fn service_account_kubeconfig(
    data: &DataDir,
    account: &ServiceAccountRef,
    create: bool,
    valid_for: Duration,
) -> anyhow::Result<String> {
    let client = admin_client(data).await?;
    let unreachable = |e: kube::Error| -> anyhow::Error {
        anyhow!(
            "cannot reach the control plane at {} ({e}): start it with `opkit up --data-dir {}`",
            data.server,
            data.dir.display()
        )
    };
    let accounts: Api<ServiceAccount> = Api::namespaced(client, &account.namespace);
    if create {
        let existing = accounts.get_opt(&account.name).await.map_err(|e| match e {
            kube::Error::Api(status) => anyhow!("cannot read service account {account}: {status}"),
            other => unreachable(other),
        })?;
        if existing.is_none() {
            let new = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(account.name.clone()),
                    namespace: Some(account.namespace.clone()),
                    ..ObjectMeta::default()
                },
                ..ServiceAccount::default()
            };
            match accounts.create(&PostParams::default(), &new).await {
                Ok(_) => eprintln!("serviceaccount {account} created"),
                // Someone created it in between: just as good.
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(kube::Error::Api(status)) => {
                    bail!("cannot create service account {account}: {status}")
                }
                Err(other) => return Err(unreachable(other)),
            }
        }
    }
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(valid_for.as_secs()).unwrap_or(i64::MAX)),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = accounts
        .create_token_request(&account.name, &PostParams::default(), &request)
        .await
        .map_err(|e| match e {
            kube::Error::Api(status) if status.code == 404 => anyhow!(
                "service account {account} not found: pass --create, or create it with \
                 `kubectl create serviceaccount {} -n {}`",
                account.name,
                account.namespace
            ),
            kube::Error::Api(status) => {
                anyhow!("cannot get a token for service account {account}: {status}")
            }
            other => unreachable(other),
        })?;
    let token = issued
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| anyhow!("the control plane returned no token for {account}"))?;
    Ok(opkit_apiserver::kubeconfig_for(
        &data.server,
        &data.ca_pem,
        &opkit_rbac::service_account_username(&account.namespace, &account.name),
        opkit_apiserver::KubeconfigUser::Token(&token),
        &account.namespace,
    ))
}

/// A client acting as the admin, from the data dir's kubeconfig.
async fn admin_client(data: &DataDir) -> anyhow::Result<kube::Client> {
    // kube's rustls needs a process-wide crypto provider; another one may already be set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config =
        kube::Config::from_custom_kubeconfig(data.admin.clone(), &KubeConfigOptions::default())
            .await
            .with_context(|| format!("{}/kubeconfig is unusable", data.dir.display()))?;
    config.connect_timeout = Some(REQUEST_TIMEOUT);
    config.read_timeout = Some(REQUEST_TIMEOUT);
    let host = config.cluster_url.host().unwrap_or("127.0.0.1").to_string();
    let port = config.cluster_url.port_u16().unwrap_or(443);
    check_reachable(data, &host, port).await?;
    kube::Client::try_from(config).context("cannot build a client for the control plane")
}

/// Fails with a hint to start the control plane when nothing listens at `host:port`; checked before
/// the first request so that the user sees one clear sentence rather than a client stack's
/// connection error.
async fn check_reachable(data: &DataDir, host: &str, port: u16) -> anyhow::Result<()> {
    let host = host.trim_matches(['[', ']']);
    let connect = tokio::net::TcpStream::connect((host, port));
    let why = match tokio::time::timeout(REQUEST_TIMEOUT, connect).await {
        Ok(Ok(_)) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {REQUEST_TIMEOUT:?}"),
    };
    bail!(
        "cannot reach the control plane at {} ({why}): start it with `opkit up --data-dir {}`",
        data.server,
        data.dir.display()
    )
}

/// Writes `contents` to `path`, readable only by its owner (it holds a credential).
pub(crate) fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // An existing file keeps its mode on open; tighten it before writing the secret.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict the permissions of {}", path.display()))?;
    }
    file.write_all(contents.as_bytes())
        .and_then(|()| file.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_accepts_go_style_durations() {
        assert_eq!(
            parse_validity("8760h"),
            Ok(Duration::from_secs(8760 * 3600))
        );
        assert_eq!(parse_validity("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_validity("45m"), Ok(Duration::from_secs(2700)));
        assert_eq!(parse_validity("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_validity("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_validity("1.5h"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn validity_rejects_missing_units_unknown_units_and_zero() {
        for bad in ["", "10", "h", "10d", "1h-5m", "abc", "-1h"] {
            assert!(parse_validity(bad).is_err(), "{bad:?} should be refused");
        }
        let zero = parse_validity("0s").unwrap_err();
        assert!(zero.contains("longer than zero"), "{zero}");
    }

    #[test]
    fn service_account_ref_needs_namespace_and_name() {
        assert_eq!(
            "default/robot".parse::<ServiceAccountRef>(),
            Ok(ServiceAccountRef {
                namespace: "default".into(),
                name: "robot".into()
            })
        );
        for bad in ["robot", "/robot", "default/", "a/b/c"] {
            let err = bad.parse::<ServiceAccountRef>().unwrap_err();
            assert!(err.contains("NAMESPACE/NAME"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn missing_data_dir_says_to_run_opkit_up() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nothing-here");
        let err = DataDir::open(&missing)
            .err()
            .expect("no data dir")
            .to_string();
        assert_eq!(
            err,
            format!(
                "no control plane data in {}: run `opkit up` first or pass --data-dir",
                missing.display()
            )
        );
    }

    #[test]
    fn server_url_follows_the_current_context() {
        let yaml = "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: https://a:1\n- name: b\n  cluster:\n    server: https://b:2\ncontexts:\n- name: ctx\n  context:\n    cluster: b\n    user: u\ncurrent-context: ctx\nusers:\n- name: u\n  user: {}\n";
        let kubeconfig = Kubeconfig::from_yaml(yaml).unwrap();
        assert_eq!(server_url(&kubeconfig).as_deref(), Some("https://b:2"));
    }

    #[test]
    fn user_kubeconfig_carries_a_certificate_for_the_user() {
        let dir = tempfile::tempdir().unwrap();
        // Let the library make a CA in the directory, as `opkit up` does.
        opkit_apiserver::credentials(Some(dir.path()), &[]).unwrap();
        let data = DataDir {
            dir: dir.path().to_path_buf(),
            admin: Kubeconfig::default(),
            server: "https://127.0.0.1:6443".into(),
            ca_pem: std::fs::read_to_string(dir.path().join("ca.crt")).unwrap(),
        };
        let yaml = user_kubeconfig(&data, "alice", &["devs".into()], USER_VALIDITY).unwrap();
        let parsed = Kubeconfig::from_yaml(&yaml).unwrap();
        let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(parsed.auth_infos[0].name, "alice");
        assert!(user.client_certificate_data.is_some());
        assert!(user.client_key_data.is_some());
        assert_eq!(
            server_url(&parsed).as_deref(),
            Some("https://127.0.0.1:6443")
        );

        let three: Vec<String> = ["a", "b", "c"].map(String::from).into();
        let err = user_kubeconfig(&data, "alice", &three, USER_VALIDITY).unwrap_err();
        assert!(err.to_string().contains("at most 2 groups"), "{err}");
    }

    #[test]
    fn output_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alice.kubeconfig");
        std::fs::write(&path, "old").unwrap();
        write_private(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
