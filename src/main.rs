//! `mcpcap` binary: a thin shell over the library (see `cli`).

mod cli;

/// The run allocates many small records (events, messages) on the reader and worker threads and
/// frees them on others: mimalloc's per-thread heaps suit that pattern. (With the options below,
/// glibc's allocator measured about the same on one thread.)
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (v3): how long freed memory stays
/// committed before it is returned to the OS, in milliseconds; -1: never.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // A run grows its records to a peak at the end and exits, so returning freed memory early buys
    // nothing: each purged page is faulted in and zeroed again, which cost a quarter of the run's
    // time. (mimalloc is built with `no_thp`: transparent huge pages, where the kernel grants
    // them on request, cost more in synchronous compaction and zeroing than they saved, and
    // raised the peak RSS.) MIMALLOC_PURGE_DELAY (or its old name MIMALLOC_RESET_DELAY, in any
    // case, as mimalloc reads them) still overrides.
    let set_by_user = std::env::vars_os().any(|(k, _)| {
        k.to_str().is_some_and(|k| {
            k.eq_ignore_ascii_case("MIMALLOC_PURGE_DELAY")
                || k.eq_ignore_ascii_case("MIMALLOC_RESET_DELAY")
        })
    });
    if !set_by_user {
        // SAFETY: sets a process-wide allocator option; mimalloc allows it at any time.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
    std::process::exit(cli::main());
}
