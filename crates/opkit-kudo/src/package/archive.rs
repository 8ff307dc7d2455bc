//! Package archives: `package create` writes a package directory as a gzip'd tar named
//! `<name>-<appVersion>_<operatorVersion>.tgz`; installs read them back. Entries carry the
//! path relative to the package root, zero times and root ownership (as KUDO's writer), so
//! the same directory always gives the same bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{DirFile, PackageError, PackageFiles, io_error, read_dir, walk};

/// KUDO's archive name for a package: `<name>-<appVersion>_<operatorVersion>.tgz`, or
/// `<name>-<operatorVersion>.tgz` without an app version.
pub fn archive_name(files: &PackageFiles) -> String {
    let op = &files.operator;
    if op.app_version.is_empty() {
        format!("{}-{}.tgz", op.name, op.operator_version)
    } else {
        format!("{}-{}_{}.tgz", op.name, op.app_version, op.operator_version)
    }
}

pub(super) fn read_tgz(path: &Path) -> Result<PackageFiles, PackageError> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    read_tgz_bytes(path, &bytes)
}

/// Reads a package archive's bytes; `path` names it in errors (a file or a URL).
pub(super) fn read_tgz_bytes(path: &Path, bytes: &[u8]) -> Result<PackageFiles, PackageError> {
    let archive_error = |e: std::io::Error| PackageError::Archive {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = Vec::new();
    for entry in archive.entries().map_err(archive_error)? {
        let mut entry = entry.map_err(archive_error)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry
            .path()
            .map_err(archive_error)?
            .to_string_lossy()
            .into_owned();
        let mut contents = Vec::new();
        entry.read_to_end(&mut contents).map_err(archive_error)?;
        files.push((name, contents));
    }
    PackageFiles::parse(&path.display().to_string(), files)
}

/// `package create`: checks the package at `dir` reads, then writes it as
/// `<destination>/<archive_name>` (refusing to replace a file unless `overwrite`). Returns
/// the archive's path.
pub fn write_tgz(dir: &Path, destination: &Path, overwrite: bool) -> Result<PathBuf, PackageError> {
    let files = read_dir(dir)?;
    files.clone().convert()?;
    let target = destination.join(archive_name(&files));
    if target.exists() && !overwrite {
        return Err(PackageError::TargetExists(target));
    }
    let bytes = tgz(&walk(dir)?).map_err(io_error(&target))?;
    std::fs::write(&target, bytes).map_err(io_error(&target))?;
    Ok(target)
}

fn tgz(files: &[DirFile]) -> std::io::Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for file in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(file.contents.len() as u64);
        header.set_mode(file.mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_username("root")?;
        header.set_groupname("root")?;
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, &file.path, &file.contents[..])?;
    }
    tar.into_inner()?.finish()
}
