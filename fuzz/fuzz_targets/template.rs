#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| opkit_fuzz::template(data));
