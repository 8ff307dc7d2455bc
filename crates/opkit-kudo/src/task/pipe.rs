//! `Pipe`: run a pod that writes files, copy them out, and store each in a ConfigMap or
//! Secret that later templates reach through `.Pipes.<key>` (KUDO's `task_pipe.go`).
//!
//! The package's pod must have exactly one init container (which writes the files), no
//! containers, one `emptyDir` volume mounted by the init container, files under that mount,
//! and no restart policy other than `OnFailure`. KUDO adds a `waiter` container (busybox,
//! `sleep infinity`) mounting the same volume, names the pod
//! `<instance>.<plan>.<phase>.<step>.<task>.pipepod`, and once the pod is running and ready
//! reads each file through `pods/exec` (`stat -c %s` for the size, at most 1 MiB, then
//! `tar cf -`). Each artifact is named `<instance>.<plan>.<phase>.<step>.<task>.<key>` (every
//! part lower-cased, non-alphanumerics removed), owned by the instance; a `file` is stored
//! under its base name (a ConfigMap's `binaryData`, a Secret's `data`), an `envFile` entry by
//! entry. Then the pod is deleted.
//!
//! The embedded control plane simulates pods and does not serve `pods/exec`: there the task
//! reports a transient error that names the missing capability (and retries, so the same
//! plan completes once pointed at a real cluster).

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use serde_json::{Value as Json, json};
use tokio::io::AsyncReadExt;

use crate::api::{PipeSpec, Task};
use crate::env_file;
use crate::object::{self, text};
use crate::render::{fatal, render_texts};
use crate::task::apply::{apply_all, enhance_all, verdict};
use crate::task::{Context, Progress, TaskError};

/// The annotation marking a pipe pod.
pub(crate) const PIPE_POD_ANNOTATION: &str = "kudo.dev/pipepod";
/// The container KUDO adds to keep the pod running while files are copied.
pub(crate) const WAITER: &str = "waiter";
/// The largest file a pipe stores.
pub(crate) const MAX_PIPE_FILE_SIZE: u64 = 1024 * 1024;

/// KUDO's deterministic pipe name: `<instance>.<plan>.<phase>.<step>.<task>.<suffix>`, each
/// part lower-cased with every character outside `[a-z0-9]` removed.
pub(crate) fn pipe_name(parts: [&str; 5], suffix: &str) -> String {
    let sanitize = |s: &str| -> String {
        s.to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            .collect()
    };
    parts
        .iter()
        .chain(std::iter::once(&suffix))
        .map(|s| sanitize(s))
        .collect::<Vec<_>>()
        .join(".")
}

/// The name of the artifact holding pipe `key` of `task` in the context's plan/phase/step
/// (what the engine puts in `.Pipes`).
pub(crate) fn artifact_name(ctx: &Context, task: &str, key: &str) -> String {
    let v = &ctx.variables;
    pipe_name(
        [&v.name, &v.plan_name, &v.phase_name, &v.step_name, task],
        key,
    )
}

/// KUDO's checks of the task's pipe list.
pub(crate) fn validate_spec(task: &Task) -> Result<&[PipeSpec], TaskError> {
    let files = task.spec.pipe.as_deref().unwrap_or_default();
    if files.is_empty() {
        return Err(TaskError::Fatal(
            "task validation error: pipe task has an empty pipe files list".into(),
        ));
    }
    for f in files {
        let show = format!(
            "{{File:{} EnvFile:{} Kind:{} Key:{}}}",
            f.file, f.env_file, f.kind, f.key
        );
        if f.file.is_empty() == f.env_file.is_empty() {
            return Err(TaskError::Fatal(format!(
                "task validation error: pipe file {show} must have either 'file' or 'envFile' field set but not both"
            )));
        }
        if f.kind != "Secret" && f.kind != "ConfigMap" {
            return Err(TaskError::Fatal(format!(
                "task validation error: invalid pipe kind (must be Secret or ConfigMap): {show}"
            )));
        }
        let key_ok = !f.key.is_empty()
            && f.key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok {
            return Err(TaskError::Fatal(format!(
                "task validation error: invalid pipe key (only letters, numbers and _ and - are allowed): {show}"
            )));
        }
    }
    Ok(files)
}

fn source(f: &PipeSpec) -> &str {
    if f.file.is_empty() {
        &f.env_file
    } else {
        &f.file
    }
}

/// Whether `file` is below `base` (Go's `filepath.Rel` not starting with `.`).
fn is_relative(base: &str, file: &str) -> bool {
    let base = base.trim_end_matches('/');
    file.strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| {
            !rest.is_empty() && !rest.starts_with('.') && !rest.split('/').any(|p| p == "..")
        })
}

/// The shared `emptyDir` volume and where the init container mounts it.
fn shared_mount(pod: &Json) -> Result<(String, String), String> {
    let empty_dirs: Vec<&str> = pod
        .pointer("/spec/volumes")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("emptyDir").is_some_and(|e| !e.is_null()))
        .map(|v| text(v, "/name"))
        .collect();
    let [volume] = empty_dirs.as_slice() else {
        return Err("pipe pod should define one emptyDir shared volume where the artifacts are temporary stored".into());
    };
    let mount = pod
        .pointer("/spec/initContainers/0/volumeMounts")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .find(|m| text(m, "/name") == *volume)
        .map(|m| text(m, "/mountPath").to_string())
        .ok_or_else(|| format!("pipe pod should save generated artifacts in {volume}"))?;
    Ok((volume.to_string(), mount))
}

/// KUDO's checks of the package's pod.
pub(crate) fn validate_pod(pod: &Json, files: &[PipeSpec]) -> Result<(), String> {
    let count = |p: &str| pod.pointer(p).and_then(Json::as_array).map_or(0, Vec::len);
    if count("/spec/containers") > 0 {
        return Err("pipe pod should not have containers. pipe artifacts are generated in the init container".into());
    }
    if count("/spec/initContainers") != 1 {
        return Err(
            "pipe pod should define one init container that generated artifacts defined".into(),
        );
    }
    let restart = text(pod, "/spec/restartPolicy");
    if !restart.is_empty() && restart != "OnFailure" {
        return Err("pipe pod RestartPolicy should be OnFailure".into());
    }
    let (_, mount) = shared_mount(pod)?;
    for f in files {
        let file = source(f);
        if !is_relative(&mount, file) {
            return Err(format!(
                "pipe file {file} should be a child of {mount} mount path"
            ));
        }
        let base = file.rsplit('/').next().unwrap_or(file);
        if !base
            .chars()
            .any(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        {
            return Err(format!(
                "pipe file name {base} should only contain alphanumeric characters, '.', '_' and '-'"
            ));
        }
    }
    Ok(())
}

/// The pod KUDO runs: the package's pod with the waiter container, its name and annotation.
pub(crate) fn pipe_pod(mut pod: Json, name: &str) -> Result<Json, String> {
    let (volume, mount) = shared_mount(&pod)?;
    object::set_path(
        &mut pod,
        &["metadata", "annotations", PIPE_POD_ANNOTATION],
        json!("true"),
    );
    object::set_path(&mut pod, &["metadata", "name"], json!(name));
    object::set_path(&mut pod, &["spec", "restartPolicy"], json!("OnFailure"));
    object::set_path(
        &mut pod,
        &["spec", "containers"],
        json!([{
            "name": WAITER,
            "image": "busybox",
            "command": ["/bin/sh", "-c"],
            "args": ["sleep infinity"],
            "volumeMounts": [{"name": volume, "mountPath": mount}],
        }]),
    );
    Ok(pod)
}

/// The first regular file of a tar stream (what `tar cf - <file>` writes), at most `limit`
/// bytes.
pub(crate) fn untar_file(archive: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let mut tar = tar::Archive::new(archive);
    let entries = tar
        .entries()
        .map_err(|e| format!("failed to untar pipe file: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("failed to untar pipe file: {e}"))?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let mut data = Vec::new();
        entry
            .take(limit + 1)
            .read_to_end(&mut data)
            .map_err(|e| format!("failed to untar pipe file: {e}"))?;
        if data.len() as u64 > limit {
            return Err(format!(
                "untar aborted because the file exceeds {limit} bytes"
            ));
        }
        return Ok(data);
    }
    Err("failed to untar pipe file: the archive holds no regular file".into())
}

/// The ConfigMap or Secret holding one pipe file.
pub(crate) fn artifact(f: &PipeSpec, name: &str, data: &[u8]) -> Result<Json, String> {
    let file = source(f);
    let key = file.rsplit('/').next().unwrap_or(file);
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    let entries: BTreeMap<String, String> = if f.env_file.is_empty() {
        BTreeMap::new()
    } else {
        env_file::parse(data).map_err(|e| format!("failed to read env var file {file:?}: {e}"))?
    };
    let meta = json!({"name": name});
    Ok(match (f.kind.as_str(), f.env_file.is_empty()) {
        ("Secret", true) => {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": {key: b64(data)}})
        }
        ("Secret", false) => {
            let data: serde_json::Map<String, Json> = entries
                .iter()
                .map(|(k, v)| (k.clone(), json!(b64(v.as_bytes()))))
                .collect();
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": data})
        }
        ("ConfigMap", true) => {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "binaryData": {key: b64(data)}})
        }
        ("ConfigMap", false) => {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": entries})
        }
        (kind, _) => return Err(format!("unknown pipe file kind: {kind}")),
    })
}

/// Why exec failed: a server without `pods/exec` is named as such.
fn exec_error(pod: &str, what: &str, e: kube::Error) -> TaskError {
    match &e {
        kube::Error::Api(s) if [404, 405, 501].contains(&s.code) => TaskError::Transient(format!(
            "the API server does not serve pods/exec ({} {}: {}): the Pipe task copies {what} out of pod {pod} through pods/exec, which needs a cluster whose nodes run pods (opkit's embedded control plane simulates pods and cannot exec into them)",
            s.code, s.reason, s.message
        )),
        _ => TaskError::Transient(format!(
            "failed to exec in pipe pod {pod} to copy {what}: {e}"
        )),
    }
}

/// Runs `command` in the waiter container; its stdout, or the command's failure.
async fn exec(
    pods: &Api<Pod>,
    pod: &str,
    what: &str,
    command: Vec<String>,
) -> Result<Vec<u8>, TaskError> {
    let params = AttachParams::default()
        .container(WAITER)
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut proc = pods
        .exec(pod, command, &params)
        .await
        .map_err(|e| exec_error(pod, what, e))?;
    let mut stdout = proc
        .stdout()
        .ok_or_else(|| TaskError::Transient("exec gave no stdout".into()))?;
    let mut stderr = proc
        .stderr()
        .ok_or_else(|| TaskError::Transient("exec gave no stderr".into()))?;
    let status = proc.take_status();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (r1, r2) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
    r1.and(r2)
        .map_err(|e| TaskError::Transient(format!("failed to read from pipe pod {pod}: {e}")))?;
    let status = match status {
        Some(s) => s.await,
        None => None,
    };
    if let Some(s) = status
        && s.status.as_deref() == Some("Failure")
    {
        // The command ran and failed (a missing file): retrying cannot help.
        return Err(TaskError::Fatal(format!(
            "command failed: failed to copy {what}: {}, stderr: {}",
            s.message.unwrap_or_default(),
            String::from_utf8_lossy(&err)
        )));
    }
    Ok(out)
}

/// Copies one file out of the pipe pod.
async fn copy_file(pods: &Api<Pod>, pod: &str, file: &str) -> Result<Vec<u8>, TaskError> {
    let what = format!("pipe file {file}");
    let size = exec(
        pods,
        pod,
        &what,
        vec!["stat".into(), "-c".into(), "%s".into(), file.into()],
    )
    .await?;
    let size_text = String::from_utf8_lossy(&size);
    let size: u64 = size_text.trim().parse().map_err(|e| {
        TaskError::Transient(format!(
            "failed to parse the size '{}' of the file {file} : {e}",
            size_text.trim()
        ))
    })?;
    if size > MAX_PIPE_FILE_SIZE {
        return Err(TaskError::Fatal(format!(
            "pipe file {file} size {size} exceeds maximum file size of {MAX_PIPE_FILE_SIZE} bytes"
        )));
    }
    let archive = exec(
        pods,
        pod,
        &what,
        vec!["tar".into(), "cf".into(), "-".into(), file.into()],
    )
    .await?;
    untar_file(&archive, MAX_PIPE_FILE_SIZE).map_err(TaskError::Transient)
}

/// Runs a `Pipe` task.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    let files = validate_spec(task)?;
    let rendered = render_texts(ctx, task, std::slice::from_ref(&task.spec.pod))?;
    let text = rendered
        .first()
        .map(|(_, t)| t.as_str())
        .unwrap_or_default();
    let user_pod = opkit_template::yaml::from_yaml(text)
        .map(|v| v.to_go_json())
        .map_err(|e| fatal(ctx, task, format!("failed to unmarshall pipe pod: {e}")))?;
    validate_pod(&user_pod, files).map_err(|e| fatal(ctx, task, e))?;
    let pod_name = artifact_name(ctx, &task.name, "pipepod");
    let mut pod = pipe_pod(user_pod, &pod_name).map_err(|e| fatal(ctx, task, e))?;
    object::set_path(&mut pod, &["apiVersion"], json!("v1"));
    object::set_path(&mut pod, &["kind"], json!("Pod"));
    let placed = enhance_all(ctx, vec![pod], false).await?;
    let stored = apply_all(ctx, &placed).await?;
    // The pod cannot fail terminally: until it runs, wait.
    if let Progress::Waiting(m) =
        verdict(ctx, task, &stored).unwrap_or_else(|e| Progress::Waiting(e.to_string()))
    {
        return Ok(Progress::Waiting(m));
    }
    let ns = ctx.instance.metadata.namespace.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let mut artifacts = Vec::with_capacity(files.len());
    for f in files {
        let data = copy_file(&pods, &pod_name, source(f))
            .await
            .map_err(|e| match e {
                TaskError::Fatal(m) => fatal(ctx, task, m),
                t => t,
            })?;
        let name = artifact_name(ctx, &task.name, &f.key);
        artifacts.push(artifact(f, &name, &data).map_err(TaskError::Transient)?);
    }
    let placed_artifacts = enhance_all(ctx, artifacts, false).await?;
    apply_all(ctx, &placed_artifacts).await?;
    for (obj, p) in &placed {
        object::delete(&ctx.client, p, obj).await?;
    }
    Ok(Progress::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(file: &str, env: &str, kind: &str, key: &str) -> PipeSpec {
        PipeSpec {
            file: file.into(),
            env_file: env.into(),
            kind: kind.into(),
            key: key.into(),
        }
    }

    fn user_pod() -> Json {
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {
            "volumes": [{"name": "shared", "emptyDir": {}}],
            "initContainers": [{"name": "init", "image": "busybox", "volumeMounts": [{"name": "shared", "mountPath": "/tmp"}]}]
        }})
    }

    #[test]
    fn names_are_sanitized_and_dotted_as_kudo_names_them() {
        assert_eq!(
            pipe_name(
                [
                    "Kafka-1",
                    "deploy",
                    "deploy-kafka",
                    "generate_tls",
                    "gen.tls"
                ],
                "certificate"
            ),
            "kafka1.deploy.deploykafka.generatetls.gentls.certificate"
        );
    }

    #[test]
    fn the_pipe_list_needs_one_source_a_known_kind_and_a_simple_key() {
        let mut t = Task {
            name: "p".into(),
            kind: "Pipe".into(),
            ..Default::default()
        };
        assert!(
            validate_spec(&t)
                .unwrap_err()
                .to_string()
                .contains("empty pipe files list")
        );
        t.spec.pipe = Some(vec![spec("/tmp/a", "/tmp/b", "Secret", "k")]);
        assert!(
            validate_spec(&t)
                .unwrap_err()
                .to_string()
                .contains("either 'file' or 'envFile'")
        );
        t.spec.pipe = Some(vec![spec("/tmp/a", "", "Pod", "k")]);
        assert!(
            validate_spec(&t)
                .unwrap_err()
                .to_string()
                .contains("invalid pipe kind")
        );
        t.spec.pipe = Some(vec![spec("/tmp/a", "", "Secret", "a.b")]);
        assert!(
            validate_spec(&t)
                .unwrap_err()
                .to_string()
                .contains("invalid pipe key")
        );
        t.spec.pipe = Some(vec![spec("/tmp/a", "", "ConfigMap", "my_key-1")]);
        assert_eq!(validate_spec(&t).unwrap().len(), 1);
    }

    #[test]
    fn the_pod_must_have_one_init_container_no_containers_and_one_shared_empty_dir() {
        let files = [spec("/tmp/out.txt", "", "ConfigMap", "out")];
        assert_eq!(validate_pod(&user_pod(), &files), Ok(()));
        let mut p = user_pod();
        p["spec"]["containers"] = json!([{"name": "c"}]);
        assert!(
            validate_pod(&p, &files)
                .unwrap_err()
                .contains("should not have containers")
        );
        let mut p = user_pod();
        p["spec"]["initContainers"] = json!([]);
        assert!(
            validate_pod(&p, &files)
                .unwrap_err()
                .contains("one init container")
        );
        let mut p = user_pod();
        p["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            validate_pod(&p, &files).unwrap_err(),
            "pipe pod RestartPolicy should be OnFailure"
        );
        let mut p = user_pod();
        p["spec"]["volumes"] =
            json!([{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]);
        assert!(
            validate_pod(&p, &files)
                .unwrap_err()
                .contains("one emptyDir shared volume")
        );
        let mut p = user_pod();
        p["spec"]["initContainers"][0]["volumeMounts"] = json!([]);
        assert_eq!(
            validate_pod(&p, &files).unwrap_err(),
            "pipe pod should save generated artifacts in shared"
        );
        let outside = [spec("/etc/passwd", "", "ConfigMap", "x")];
        assert_eq!(
            validate_pod(&user_pod(), &outside).unwrap_err(),
            "pipe file /etc/passwd should be a child of /tmp mount path"
        );
        let escaping = [spec("/tmp/../etc/passwd", "", "ConfigMap", "x")];
        assert!(validate_pod(&user_pod(), &escaping).is_err());
    }

    #[test]
    fn the_pipe_pod_gets_the_waiter_container_name_and_annotation() {
        let pod = pipe_pod(user_pod(), "inst.deploy.a.b.c.pipepod").unwrap();
        assert_eq!(pod["metadata"]["name"], "inst.deploy.a.b.c.pipepod");
        assert_eq!(pod["metadata"]["annotations"][PIPE_POD_ANNOTATION], "true");
        assert_eq!(pod["spec"]["restartPolicy"], "OnFailure");
        let waiter = &pod["spec"]["containers"][0];
        assert_eq!(
            (waiter["name"].as_str(), waiter["image"].as_str()),
            (Some("waiter"), Some("busybox"))
        );
        assert_eq!(
            waiter["volumeMounts"][0],
            json!({"name": "shared", "mountPath": "/tmp"})
        );
    }

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn untar_takes_the_regular_file_and_refuses_oversized_or_empty_archives() {
        let mut dir = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o755);
        h.set_cksum();
        dir.append_data(&mut h, "tmp/", &[][..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        h.set_cksum();
        dir.append_data(&mut h, "tmp/cert.pem", &b"hello"[..])
            .unwrap();
        let archive = dir.into_inner().unwrap();
        assert_eq!(untar_file(&archive, 1024).unwrap(), b"hello");
        let big = tar_of(&[("tmp/big", &[7u8; 2048])]);
        assert!(
            untar_file(&big, 1024)
                .unwrap_err()
                .contains("exceeds 1024 bytes")
        );
        assert!(
            untar_file(&[0u8; 1024], 1024)
                .unwrap_err()
                .contains("no regular file")
        );
    }

    #[test]
    fn artifacts_store_files_under_their_base_name_and_env_files_by_entry() {
        let cm = artifact(&spec("/tmp/cert.pem", "", "ConfigMap", "cert"), "n", b"PEM").unwrap();
        assert_eq!(cm["binaryData"]["cert.pem"], "UEVN");
        let sec = artifact(&spec("/tmp/cert.pem", "", "Secret", "cert"), "n", b"PEM").unwrap();
        assert_eq!(
            (sec["type"].as_str(), sec["data"]["cert.pem"].as_str()),
            (Some("Opaque"), Some("UEVN"))
        );
        let env = artifact(
            &spec("", "/tmp/env", "ConfigMap", "env"),
            "n",
            b"A=1\nB=2\n",
        )
        .unwrap();
        assert_eq!(env["data"], json!({"A": "1", "B": "2"}));
        let env_sec = artifact(&spec("", "/tmp/env", "Secret", "env"), "n", b"A=1\n").unwrap();
        assert_eq!(env_sec["data"]["A"], "MQ==");
        assert!(
            artifact(&spec("", "/tmp/env", "Secret", "env"), "n", b"nokey\n")
                .unwrap_err()
                .contains("failed to read env var file")
        );
    }
}
