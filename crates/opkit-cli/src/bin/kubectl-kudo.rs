//! The `kubectl-kudo` executable: `kubectl kudo ...` when it is on PATH (kubectl's plugin
//! lookup), the same commands as `opkit kudo ...`.

fn main() -> std::process::ExitCode {
    opkit_cli::main(opkit_cli::Program::KubectlKudo)
}
