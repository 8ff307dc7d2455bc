//! `memcached`: runs the Memcached operator (the default), or prints its CRD (`print-crds`) or
//! RBAC (`print-rbac`). `--help` lists the flags: opkit's standard ones and [`memcached::Flags`].

fn main() -> std::process::ExitCode {
    memcached::app().main()
}
