//! Env files (`KEY=value` lines) a `Pipe` task stores key by key, read as KUDO reads them
//! (its copy of kubectl's `env_file.go`): a UTF-8 byte-order mark on the first line is
//! dropped, leading whitespace is trimmed, empty lines and `#` comments are skipped, the
//! value is everything after the first `=` (untrimmed), and the key must be a valid
//! environment variable name.

use std::collections::BTreeMap;

/// Kubernetes' `IsEnvVarName`: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
fn is_env_var_name(key: &str) -> bool {
    let mut chars = key.chars();
    let ok_first = |c: char| c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_');
    chars.next().is_some_and(ok_first) && chars.all(|c| ok_first(c) || c.is_ascii_digit())
}

/// The entries of an env file, or why it is not one.
pub(crate) fn parse(data: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    // Go's bufio.Scanner: lines split at `\n`, a trailing `\r` dropped.
    let mut lines: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for (i, raw) in lines.into_iter().enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(mut line) = std::str::from_utf8(raw) else {
            return Err(format!("invalid utf8 bytes at line {}: {raw:?}", i + 1));
        };
        if i == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{line:?} is not a valid env var definition (KEY=VAL)"
            ));
        };
        if !is_env_var_name(key) {
            return Err(format!(
                "{key:?} is not a valid key name: a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit"
            ));
        }
        out.insert(key.to_string(), value.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_comments_bom_and_untrimmed_values() {
        let data = "\u{feff}A=1\n  # comment\n\n  B = two words \r\nC=x=y\n".as_bytes();
        let got = parse(data);
        // `B ` has a space: not a valid key.
        assert!(got.unwrap_err().contains("\"B \" is not a valid key name"));
        let got =
            parse("\u{feff}A=1\n  # comment\n\n  B= two words \r\nC=x=y\nD=\n".as_bytes()).unwrap();
        assert_eq!(got["A"], "1");
        assert_eq!(got["B"], " two words ");
        assert_eq!(got["C"], "x=y");
        assert_eq!(got["D"], "");
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn lines_without_equals_keys_starting_with_digits_and_bad_utf8_are_errors() {
        assert_eq!(
            parse(b"JUSTKEY\n").unwrap_err(),
            "\"JUSTKEY\" is not a valid env var definition (KEY=VAL)"
        );
        assert!(
            parse(b"1A=x\n")
                .unwrap_err()
                .contains("not a valid key name")
        );
        assert!(
            parse(b"A=\xff\n")
                .unwrap_err()
                .starts_with("invalid utf8 bytes at line 1")
        );
        assert!(parse(b"").unwrap().is_empty());
    }
}
