//! Chart archives (`.tgz`) read as Helm's `loader/archive` reads them: the first path element
//! is the chart's directory and is dropped, paths are cleaned and checked so nothing escapes the
//! chart, and Helm's size limits (100 MiB per chart, 5 MiB per file, decompressed) hold.

use std::io::Read;

use crate::chart::File;
use crate::load::LoadError;

/// The most a chart may hold once decompressed (Helm's `MaxDecompressedChartSize`).
pub const MAX_DECOMPRESSED_CHART_SIZE: u64 = 100 * 1024 * 1024;
/// The most one file of a chart may hold (Helm's `MaxDecompressedFileSize`).
pub const MAX_DECOMPRESSED_FILE_SIZE: u64 = 5 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The bytes without a leading UTF-8 byte-order mark, as Helm reads every chart file.
pub(crate) fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(UTF8_BOM) {
        data.drain(..UTF8_BOM.len());
    }
    data
}

/// Whether the bytes start like a gzip stream (Helm's `EnsureArchive` check).
pub(crate) fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(b"\x1F\x8B\x08")
}

fn archive_err(message: impl Into<String>) -> LoadError {
    LoadError::Archive(message.into())
}

/// Every file of a gzipped chart tarball, named relative to the chart's root.
pub(crate) fn archive_files(data: &[u8]) -> Result<Vec<File>, LoadError> {
    // Go's gzip.NewReader reads a 10-byte header first.
    match data.len() {
        0 => return Err(archive_err("EOF")),
        1..10 => return Err(archive_err("unexpected EOF")),
        _ if !is_gzip(data) => return Err(archive_err("gzip: invalid header")),
        _ => {}
    }
    let gz = flate2::read::GzDecoder::new(data);
    let mut tar = tar::Archive::new(gz);
    let mut files = Vec::new();
    let mut remaining = MAX_DECOMPRESSED_CHART_SIZE;
    let entries = tar.entries().map_err(|e| archive_err(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| archive_err(e.to_string()))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delimiter = if raw_name.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw_name.split(delimiter).collect();
        let joined = parts[1..].join("/");
        if joined.starts_with('/') {
            return Err(archive_err("chart illegally contains absolute paths"));
        }
        let name = clean_path(&joined);
        if name == "." {
            return Err(archive_err(format!(
                "chart illegally contains content outside the base directory: {raw_name:?}"
            )));
        }
        if name.starts_with("..") {
            return Err(archive_err("chart illegally references parent directory"));
        }
        let b = name.as_bytes();
        if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
            return Err(archive_err("chart contains illegally named files"));
        }
        if parts[0] == "Chart.yaml" {
            return Err(archive_err("chart yaml not in base directory"));
        }
        let size = entry
            .header()
            .size()
            .map_err(|e| archive_err(e.to_string()))?;
        let too_big = || {
            archive_err(format!(
                "decompressed chart is larger than the maximum size {MAX_DECOMPRESSED_CHART_SIZE}"
            ))
        };
        if size > remaining {
            return Err(too_big());
        }
        if size > MAX_DECOMPRESSED_FILE_SIZE {
            return Err(archive_err(format!(
                "decompressed chart file {raw_name:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
            )));
        }
        let mut data = Vec::with_capacity(size as usize);
        let written = (&mut entry)
            .take(remaining)
            .read_to_end(&mut data)
            .map_err(|e| archive_err(e.to_string()))? as u64;
        remaining -= written;
        if written < size || remaining == 0 {
            return Err(too_big());
        }
        files.push(File {
            name,
            data: strip_bom(data),
        });
    }
    if files.is_empty() {
        return Err(archive_err("no files in chart archive"));
    }
    Ok(files)
}

pub(crate) use opkit_template::clean_path;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A gzipped tarball holding `files` (path, contents) as `helm package` writes them.
    pub(crate) fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut b = tar::Builder::new(gz);
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            // Written by hand so that names such as `../x` reach the reader unchanged.
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn the_first_path_element_is_dropped_and_a_bom_removed() {
        let data = tgz(&[
            ("demo/Chart.yaml", b"\xEF\xBB\xBFname: demo"),
            ("demo/templates/a.yaml", b"a"),
        ]);
        let files = archive_files(&data).unwrap();
        assert_eq!(files[0].name, "Chart.yaml");
        assert_eq!(files[0].data, b"name: demo");
        assert_eq!(files[1].name, "templates/a.yaml");
    }

    #[test]
    fn paths_outside_the_chart_are_refused_with_helms_texts() {
        let err = |name: &str| {
            archive_files(&tgz(&[(name, b"x")]))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("demo/../../x"),
            "chart illegally references parent directory"
        );
        assert_eq!(err("Chart.yaml/x"), "chart yaml not in base directory");
        assert_eq!(
            err("demo/.."),
            "chart illegally references parent directory"
        );
        assert_eq!(
            err("demo/"),
            "chart illegally contains content outside the base directory: \"demo/\""
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let big = vec![b'a'; MAX_DECOMPRESSED_FILE_SIZE as usize + 1];
        let err = archive_files(&tgz(&[("demo/big", &big)])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "decompressed chart file \"demo/big\" is larger than the maximum file size 5242880"
        );
    }

    #[test]
    fn non_gzip_data_and_empty_archives_are_refused() {
        assert_eq!(
            archive_files(b"name: x, and more").unwrap_err().to_string(),
            "gzip: invalid header"
        );
        assert_eq!(
            archive_files(b"name: x").unwrap_err().to_string(),
            "unexpected EOF"
        );
        assert_eq!(
            archive_files(&tgz(&[])).unwrap_err().to_string(),
            "no files in chart archive"
        );
    }

    #[test]
    fn clean_path_matches_go() {
        for (i, o) in [
            ("", "."),
            ("a/./b", "a/b"),
            ("a/../..", ".."),
            ("a//b/", "a/b"),
            ("/../a", "/a"),
            ("..", ".."),
        ] {
            assert_eq!(clean_path(i), o, "{i}");
        }
    }
}
