//! `mcpcap` binary: a thin shell over the library (see `cli`).

mod cli;

/// The run allocates many small records (events, messages) on the reader and worker threads and
/// frees them on others: mimalloc's per-thread heaps suit that pattern. (glibc's allocator
/// measured about the same on one thread.) mimalloc runs with its default options: freed memory
/// is returned to the OS after 10 ms (`MIMALLOC_PURGE_DELAY`), which keeps the peak RSS down
/// (35 MB less on a 500 MB capture than never purging) at no measurable cost in time. It is built
/// with `no_thp`: transparent huge pages, where the kernel grants them on request, cost more in
/// synchronous compaction and zeroing than they saved, and raised the peak RSS.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
