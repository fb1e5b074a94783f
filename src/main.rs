//! `mcpcap` binary: a thin shell over the library (see `cli`).

mod cli;

fn main() {
    std::process::exit(cli::main());
}
