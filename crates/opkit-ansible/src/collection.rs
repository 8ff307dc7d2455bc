//! The project's own `operator_sdk.util` collection, carried inside the operator.
//!
//! Galaxy is out of reach from many machines and upstream's collection is not on PyPI, so
//! the modules (`k8s_status`, `requeue_after`, `k8s_event`, `osdk_metric`, with upstream's
//! interfaces) live in this crate's `collections/` directory and are compiled into the
//! binary; [`install`] writes them out under the operator's work directory, which then
//! comes first on every run's `ANSIBLE_COLLECTIONS_PATH`.

use std::path::{Path, PathBuf};

/// The collection's files, relative to `ansible_collections/operator_sdk/util/`.
const FILES: [(&str, &str); 8] = [
    (
        "galaxy.yml",
        include_str!("../collections/ansible_collections/operator_sdk/util/galaxy.yml"),
    ),
    (
        "README.md",
        include_str!("../collections/ansible_collections/operator_sdk/util/README.md"),
    ),
    (
        "meta/runtime.yml",
        include_str!("../collections/ansible_collections/operator_sdk/util/meta/runtime.yml"),
    ),
    (
        "plugins/module_utils/opkit_k8s.py",
        include_str!(
            "../collections/ansible_collections/operator_sdk/util/plugins/module_utils/opkit_k8s.py"
        ),
    ),
    (
        "plugins/modules/k8s_status.py",
        include_str!(
            "../collections/ansible_collections/operator_sdk/util/plugins/modules/k8s_status.py"
        ),
    ),
    (
        "plugins/modules/requeue_after.py",
        include_str!(
            "../collections/ansible_collections/operator_sdk/util/plugins/modules/requeue_after.py"
        ),
    ),
    (
        "plugins/modules/k8s_event.py",
        include_str!(
            "../collections/ansible_collections/operator_sdk/util/plugins/modules/k8s_event.py"
        ),
    ),
    (
        "plugins/modules/osdk_metric.py",
        include_str!(
            "../collections/ansible_collections/operator_sdk/util/plugins/modules/osdk_metric.py"
        ),
    ),
];

/// Writes the collection under `dir` (as `dir/ansible_collections/operator_sdk/util/`) and
/// returns `dir`, the entry for `ANSIBLE_COLLECTIONS_PATH`.
pub fn install(dir: &Path) -> std::io::Result<PathBuf> {
    let root = dir.join("ansible_collections/operator_sdk/util");
    for (name, contents) in FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, contents)?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_collection_is_installed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = install(dir.path()).expect("install");
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("collections/ansible_collections/operator_sdk/util");
        let mut on_disk = Vec::new();
        let mut stack = vec![source.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = entry.path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "__pycache__") {
                        stack.push(p);
                    }
                } else {
                    on_disk.push(p.strip_prefix(&source).expect("prefix").to_path_buf());
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<PathBuf> = FILES.iter().map(|(n, _)| PathBuf::from(n)).collect();
        embedded.sort();
        assert_eq!(
            embedded, on_disk,
            "FILES must list every file of the collection"
        );
        for (name, contents) in FILES {
            let written = std::fs::read_to_string(
                root.join("ansible_collections/operator_sdk/util")
                    .join(name),
            )
            .expect("written");
            assert_eq!(written, contents);
        }
    }
}
