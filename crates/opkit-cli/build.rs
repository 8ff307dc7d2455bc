//! Links the `opkit` binary as a position-dependent executable on Linux.
//!
//! `opkit` links the whole control plane, runtime and chart engine. As a position-independent
//! executable it carries ~100 000 relative relocations, and the dynamic loader writes each of
//! them into `.data.rel.ro` at every start: ~600 copy-on-write page faults, about 3 ms before
//! `main` — a third of a small chart's `opkit chart template`. Linked at a fixed address, the
//! loader has nothing to relocate and the pages stay shared with the page cache (measured:
//! `opkit --version` 4.1 ms → 1.5 ms of CPU, 760 → 160 page faults). The cost is address
//! randomisation of the executable image itself (libraries, heap and stacks stay randomised).
//! Only the `opkit` binary is affected: tests, libraries and other targets keep the defaults.

fn main() {
    // The compiler's code is position-independent either way; `-no-pie` only tells the
    // (gcc- or clang-driven) linker to resolve the addresses at link time.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
