//! The `opkit` executable (see the `opkit_cli` library for the commands).

fn main() -> std::process::ExitCode {
    opkit_cli::main(opkit_cli::Program::Opkit)
}
