//! `mcpcap` binary: a thin shell over the library (see `cli`).

mod cli;

/// The whole run allocates and frees many small records (events, messages): mimalloc handles
/// that pattern far better than the system allocator.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
