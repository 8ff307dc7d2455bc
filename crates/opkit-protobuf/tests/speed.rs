//! Keeps the codec fast: a typical ConfigMap must encode and decode in microseconds. The bound
//! is loose enough for unoptimised test builds on a busy machine; release builds are ~10x faster.
//! It is still a bound on wall-clock time, so it is `#[ignore]`d and run by the `timing`
//! nextest profile (`scripts/test.sh` runs it after the suite, not gating); the codec's
//! correctness is `roundtrip.rs`'s.

mod timing {
    use std::time::Instant;

    use opkit_protobuf::{decode, encode};
    use serde_json::json;

    #[test]
    #[ignore = "timing: run with the timing profile"]
    fn typical_config_map_encodes_and_decodes_in_microseconds() {
        let cm = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "settings", "namespace": "default", "uid": "6f1c5d1e-8a2b-4c3d-9e4f-5a6b7c8d9e0f",
                "resourceVersion": "12345", "creationTimestamp": "2024-01-02T03:04:05Z",
                "labels": {"app": "web", "tier": "frontend"}
            },
            "data": {"LOG_LEVEL": "info", "FEATURE_X": "true", "config.yaml": "a: 1\nb: 2\n"}
        });
        let bytes = encode(&cm).unwrap();
        assert_eq!(decode(&bytes).unwrap(), cm);
        let rounds = 2_000u32;
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(encode(std::hint::black_box(&cm)).unwrap());
        }
        let enc = start.elapsed() / rounds;
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(decode(std::hint::black_box(&bytes)).unwrap());
        }
        let dec = start.elapsed() / rounds;
        println!(
            "ConfigMap ({} bytes): encode {enc:?}, decode {dec:?}",
            bytes.len()
        );
        assert!(enc.as_micros() < 200, "encode took {enc:?}");
        assert!(dec.as_micros() < 200, "decode took {dec:?}");
    }
}
