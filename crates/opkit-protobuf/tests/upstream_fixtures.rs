//! Compatibility with the Go implementation, using the round-trip fixtures Kubernetes keeps
//! for every kind (`testdata/HEAD/<group>.<version>.<Kind>.{pb,json}` in kubernetes/api and
//! kubernetes/apiextensions-apiserver, written by the Go serializers from fuzzed objects).
//!
//! Every field of every kind is filled in those fixtures, so this checks all JSON names, the
//! omitempty rules and the special types against Go. Decoding must give exactly Go's JSON;
//! encoding must give Go's bytes, or — where Go wrote zero values of non-pointer fields that
//! its JSON leaves out (the fuzzed CRD has such nested schemas) — bytes that decode to the
//! same JSON.
//!
//! The fixtures are not vendored: point `OPKIT_K8S_FIXTURES` at one or more such directories
//! (separated by `:`), e.g. `…/api/testdata/HEAD:…/apiextensions-apiserver/pkg/apis/testdata/HEAD`
//! at tag v0.35.0, and run it with `cargo test -p opkit-protobuf --test upstream_fixtures --
//! --ignored`. It is ignored by default (CI has no upstream checkout) and fails loudly when run
//! without the variable.

use opkit_protobuf::{decode, encode, supports};
use serde_json::Value;

#[test]
#[ignore = "needs OPKIT_K8S_FIXTURES pointing at upstream's round-trip testdata"]
fn go_fixtures_decode_to_go_json_and_encode_to_go_bytes() {
    let dirs = std::env::var("OPKIT_K8S_FIXTURES")
        .expect("set OPKIT_K8S_FIXTURES to upstream's testdata directories (see the module doc)");
    let mut checked = 0;
    let mut exact = 0;
    let mut failures = Vec::new();
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pb"))
            .collect();
        entries.sort();
        for pb_path in entries {
            let json_path = pb_path.with_extension("json");
            let (Ok(pb), Ok(json)) = (std::fs::read(&pb_path), std::fs::read(&json_path)) else {
                continue;
            };
            let json: Value = serde_json::from_slice(&json).expect("fixture JSON");
            let av = json["apiVersion"].as_str().unwrap_or_default();
            let kind = json["kind"].as_str().unwrap_or_default();
            if !supports(av, kind) {
                continue;
            }
            checked += 1;
            let name = pb_path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            exact += usize::from(check(name, &pb, &json, &mut failures));
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!(
        "{checked} fixtures checked: {exact} encode to Go's exact bytes, {} failures",
        failures.len()
    );
    assert!(failures.is_empty());
    assert!(checked > 0, "no supported fixtures found in {dirs}");
}

/// Checks one fixture; true if our encoding is byte-identical to Go's.
fn check(name: &str, pb: &[u8], json: &Value, failures: &mut Vec<String>) -> bool {
    match decode(pb) {
        Ok(decoded) if &decoded == json => {}
        Ok(decoded) => failures.push(format!(
            "{name}: decode differs: {}",
            diff(json, &decoded, "")
        )),
        Err(e) => failures.push(format!("{name}: decode failed: {e}")),
    }
    match encode(json) {
        Ok(bytes) if bytes == pb => return true,
        Ok(bytes) => match decode(&bytes) {
            Ok(back) if &back == json => {
                eprintln!("{name}: equivalent to Go's bytes, not identical");
            }
            Ok(back) => failures.push(format!(
                "{name}: encode loses data: {}",
                diff(json, &back, "")
            )),
            Err(e) => failures.push(format!("{name}: our bytes do not decode: {e}")),
        },
        Err(e) => failures.push(format!("{name}: encode failed: {e}")),
    }
    false
}

/// The first difference between two JSON values, as a path.
fn diff(want: &Value, got: &Value, path: &str) -> String {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    None => return format!("{path}.{k} missing (want {v})"),
                    Some(w) if w != v => return diff(v, w, &format!("{path}.{k}")),
                    _ => {}
                }
            }
            for (k, v) in b {
                if !a.contains_key(k) {
                    return format!("{path}.{k} unexpected ({v})");
                }
            }
            format!("{path}: ?")
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return diff(x, y, &format!("{path}[{i}]"));
                }
            }
            format!("{path}: ?")
        }
        _ => format!("{path}: want {want}, got {got}"),
    }
}
