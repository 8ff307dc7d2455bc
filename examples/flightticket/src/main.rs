//! `flightticket`: runs the FlightTicket operator (the default), or prints its CRD
//! (`print-crds`) or RBAC (`print-rbac`). `--help` lists the flags.

fn main() -> std::process::ExitCode {
    flightticket::app().main()
}
