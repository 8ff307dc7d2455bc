//! A real OCI registry for the tests that push and pull OLM images: Debian's
//! `docker-registry`, started per test on a free port with its own storage.

use std::path::Path;
use std::process::Command;

/// One HTTP/1.1 GET over a plain socket: the status and the body, or what went wrong
/// (nothing listening yet, a torn response).
pub fn try_http_get(addr: &str, path: &str) -> Result<(u16, String), String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("not an HTTP response")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// A child process killed (and reaped) when dropped.
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where Debian's docker-registry package puts the registry.
pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// A registry process of the test's own: a free port on 127.0.0.1, storage in a temporary
/// directory, killed when dropped.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    process: Kill,
    dir: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
        assert!(
            Path::new(REGISTRY_BIN).is_file(),
            "{REGISTRY_BIN} is missing: run `scripts/start-registry.sh --install-only` at the repository root (installs Debian's docker-registry package)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = super::free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let process = Kill(
            Command::new(REGISTRY_BIN)
                .arg("serve")
                .arg(&config)
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("docker-registry starts"),
        );
        let mut registry = Registry { addr, process, dir };
        crate::common::eventually("the registry to answer GET /v2/", || {
            if let Ok(Some(status)) = registry.process.0.try_wait() {
                panic!(
                    "docker-registry exited ({status}):\n{}",
                    std::fs::read_to_string(registry.dir.path().join("registry.log"))
                        .unwrap_or_default()
                );
            }
            match try_http_get(&registry.addr, "/v2/") {
                Ok((200, _)) => Ok(()),
                Ok((status, body)) => Err(format!("{status} {body}")),
                Err(e) => Err(e),
            }
        });
        registry
    }

    /// `ADDR/REPOSITORY` (with a tag or digest).
    pub fn image(&self, repository: &str) -> String {
        format!("{}/{repository}", self.addr)
    }
}
