//! Links the `opkit` executable as a position-dependent (non-PIE) program on Linux.
//!
//! `opkit` is started once per command (`opkit chart template` runs in milliseconds), and a
//! position-independent build of it carries about 130,000 relative relocations: the loader
//! applies them at every start and copies each page they touch, a tenth of a chart render's
//! wall time. Linked at a fixed address there are none. Shared libraries, the heap and the
//! stacks are still placed at random. Set `OPKIT_PIE=1` when building to keep a PIE.

fn main() {
    println!("cargo:rerun-if-env-changed=OPKIT_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let pie_wanted = std::env::var_os("OPKIT_PIE").is_some_and(|v| v == "1");
    if linux && !pie_wanted {
        println!("cargo:rustc-link-arg-bin=opkit=-no-pie");
    }
}
