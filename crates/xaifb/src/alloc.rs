//! The global allocator: mimalloc for large inputs, the system's for the
//! rest, chosen once, before the first allocation; and what happens when
//! an allocation fails.
//!
//! mimalloc takes 20–25 % less CPU than glibc's allocator on whole-program
//! inputs, where every routine's model is made and freed as the output
//! streams (`docs/decisions.md`). On a small input it costs about 0.25 ms
//! more per process (some hundred page faults: its size classes live on
//! separate pages), a seventh of the run, and OpenAD runs one process per
//! file. So the first allocation of the process looks at the command line
//! (`/proc/self/cmdline`, read with plain system calls into a buffer on the
//! stack) and standard input: when one of the files named there, or
//! standard input, is a regular file of at least [`THRESHOLD`] bytes, every
//! allocation of the process goes to mimalloc, otherwise to the system's.
//! The choice never changes afterwards, so every block is freed by the
//! allocator that made it. mimalloc's own process initialisation runs
//! when it is chosen, not at every process start (where the build leaves
//! its C constructor out; `docs/decisions.md`). `XAIFB_ALLOCATOR=system` or `mimalloc` overrides
//! the choice (for measurements).
//!
//! Under an address-space limit (`ulimit -v`, `RLIMIT_AS`) the system's
//! allocator is chosen whatever the input: it grows a large block in place
//! (`mremap`) where mimalloc copies it into a new one, and it reserves no
//! arenas ahead, so a run fits a third less address space (the adjoint of
//! 3·10⁴ nested `If`s: 1.22 GB instead of 1.69 GB), and the address space
//! taken is what the run holds (`docs/limits.md`, "Memory").
//!
//! An allocation that fails ends the process cleanly, never by an abort:
//! the temporaries and directories made for outputs are removed and each
//! input being worked on is named, with exit code 4
//! (`cleanup::out_of_memory`). Code that can report a failed allocation
//! as an error of its own (reading an input into one buffer) runs it
//! inside [`fallible`], where a failed allocation returns null to the
//! caller as usual (`try_reserve`).

// Without the `mimalloc` feature only the failure handling is left.
#![cfg_attr(not(feature = "mimalloc"), allow(dead_code, unused_imports))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

/// Inputs from this size on get mimalloc: from about 130 kB on, it took
/// less CPU than the system allocator on every corpus input measured.
pub const THRESHOLD: u64 = 128 * 1024;

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The process's allocator (see the module documentation).
pub struct Allocator;

#[cfg(feature = "mimalloc")]
/// `mi_option_arena_eager_commit` in the linked mimalloc's `mi_option_e`
/// (the fifth option in both its v2 and v3 headers).
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

/// `mi_option_purge_delay` (the sixteenth option in both headers).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// How long freed memory stays committed before mimalloc gives it back,
/// in milliseconds: v2's default. v3 (the one linked) waits 1000 ms, so a
/// transformation kept the input file's buffer and each phase's freed
/// memory resident through the next phase (57 MB instead of 46 MB peak
/// for the 10^4-statement tangent, 375 MB instead of 354 MB for the 10^5
/// adjoint), for no measurable CPU time.
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::ffi::c_long = 10;

#[cfg(feature = "mimalloc")]
extern "C" {
    /// mimalloc's option setter (`mimalloc.h`).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    /// Whether mimalloc's process initialisation has not run yet.
    fn _mi_preloading() -> bool;
    /// mimalloc's process initialisation.
    fn _mi_auto_process_init();
}

#[inline]
fn choice() -> u8 {
    match CHOICE.load(Ordering::Relaxed) {
        UNDECIDED => decide(),
        c => c,
    }
}

#[cold]
fn decide() -> u8 {
    let c = match override_choice() {
        Some(c) => c,
        None if crate::cleanup::address_space_limit().is_some() => SYSTEM,
        None if large_input() => MIMALLOC,
        None => SYSTEM,
    };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if c == SYSTEM && crate::cleanup::address_space_limit().is_some() {
        // One arena for every thread: glibc gives a thread an arena of its
        // own (64 MiB of address space reserved) when the shared one is
        // busy at that moment, so how much address space a run takes, and
        // whether it fits under the limit, would depend on timing.
        // SAFETY: sets one of glibc's malloc parameters; no other state.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
    #[cfg(feature = "mimalloc")]
    if c == MIMALLOC {
        // Arenas committed as they are used: committed eagerly (mimalloc's
        // default where the system overcommits), the first arena counts in
        // the resident set at once. Freed memory given back soon
        // ([`PURGE_DELAY_MS`]).
        // SAFETY: stores the values into mimalloc's static option table
        // before mimalloc's first allocation; no other state.
        unsafe {
            if _mi_preloading() {
                _mi_auto_process_init();
            }
            mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
            mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
    match CHOICE.compare_exchange(UNDECIDED, c, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => c,
        Err(first) => first,
    }
}

/// `XAIFB_ALLOCATOR`, read without allocating.
fn override_choice() -> Option<u8> {
    // SAFETY: getenv returns null or a NUL-terminated string that lives
    // as long as the environment is not changed (nothing changes it this
    // early, and only this read happens).
    let p = unsafe { libc::getenv(c"XAIFB_ALLOCATOR".as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: as above.
    match unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes() {
        b"system" => Some(SYSTEM),
        b"mimalloc" => Some(MIMALLOC),
        _ => None,
    }
}

/// Whether the command line names a regular file of at least
/// [`THRESHOLD`] bytes, or standard input is one.
fn large_input() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: fstat on descriptor 0 writes only into `st`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(0, &mut st) } == 0 && is_large(&st) {
            return true;
        }
        let mut buf = [0u8; 16384];
        let n = read_cmdline(&mut buf);
        large_file_among(&buf[..n])
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(target_os = "linux")]
fn is_large(st: &libc::stat) -> bool {
    (st.st_mode & libc::S_IFMT) == libc::S_IFREG && st.st_size as u64 >= THRESHOLD
}

/// Reads as much of `/proc/self/cmdline` as fits into `buf`.
#[cfg(target_os = "linux")]
fn read_cmdline(buf: &mut [u8]) -> usize {
    // SAFETY: plain open/read/close on a buffer we own.
    unsafe {
        let fd = libc::open(
            c"/proc/self/cmdline".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return 0;
        }
        let mut n = 0;
        while n < buf.len() {
            let r = libc::read(fd, buf[n..].as_mut_ptr().cast(), buf.len() - n);
            if r <= 0 {
                break;
            }
            n += r as usize;
        }
        libc::close(fd);
        n
    }
}

/// Whether one of the NUL-terminated arguments in `args` (the first, the
/// program, skipped; a last one without its NUL, cut off by the buffer,
/// ignored) names a regular file of at least [`THRESHOLD`] bytes.
#[cfg(target_os = "linux")]
fn large_file_among(args: &[u8]) -> bool {
    let mut words = args.split_inclusive(|&b| b == 0).skip(1);
    words.any(|w| {
        if w.len() < 2 || w[w.len() - 1] != 0 {
            return false;
        }
        // SAFETY: `w` ends with its NUL; stat writes only into `st`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { libc::stat(w.as_ptr().cast(), &mut st) == 0 && is_large(&st) }
    })
}

std::thread_local! {
    /// How many [`fallible`] sections this thread is in.
    static FALLIBLE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with failed allocations returned to their callers as null (the
/// error of `try_reserve`, or `ErrorKind::OutOfMemory` of `read_to_end`)
/// instead of ending the process.
pub fn fallible<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            FALLIBLE.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    FALLIBLE.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    f()
}

/// `p`, unless it is null outside a [`fallible`] section: then the
/// process ends cleanly (`cleanup::out_of_memory`).
#[inline]
fn checked(p: *mut u8) -> *mut u8 {
    if p.is_null() && FALLIBLE.try_with(Cell::get).unwrap_or(0) == 0 {
        crate::cleanup::out_of_memory();
    }
    p
}

#[cfg(feature = "mimalloc")]
#[inline]
fn mimalloc_chosen() -> bool {
    choice() == MIMALLOC
}

#[cfg(feature = "mimalloc")]
#[inline]
fn mimalloc_in_use() -> bool {
    CHOICE.load(Ordering::Relaxed) == MIMALLOC
}

// SAFETY: every block goes to and comes back from the allocator chosen
// before the first allocation; the choice never changes. A null result
// either reaches the caller (inside `fallible`) or ends the process.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(feature = "mimalloc")]
        if mimalloc_chosen() {
            return checked(mimalloc::MiMalloc.alloc(layout));
        }
        checked(System.alloc(layout))
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(feature = "mimalloc")]
        if mimalloc_chosen() {
            return checked(mimalloc::MiMalloc.alloc_zeroed(layout));
        }
        checked(System.alloc_zeroed(layout))
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        #[cfg(feature = "mimalloc")]
        if mimalloc_in_use() {
            return mimalloc::MiMalloc.dealloc(ptr, layout);
        }
        System.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        #[cfg(feature = "mimalloc")]
        if mimalloc_in_use() {
            return checked(mimalloc::MiMalloc.realloc(ptr, layout, new_size));
        }
        checked(System.realloc(ptr, layout, new_size))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_large_file_on_the_command_line_is_found() {
        let dir = std::env::temp_dir().join(format!("xaifb-alloc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small.xaif");
        let large = dir.join("large.xaif");
        std::fs::write(&small, vec![b' '; 1000]).unwrap();
        std::fs::write(&large, vec![b' '; THRESHOLD as usize]).unwrap();
        let line = |args: &[&str]| {
            let mut v = Vec::new();
            for a in args {
                v.extend_from_slice(a.as_bytes());
                v.push(0);
            }
            v
        };
        let (s, l) = (small.to_str().unwrap(), large.to_str().unwrap());
        assert!(!large_file_among(&line(&[
            "xaifb", "tangent", s, "-o", "x"
        ])));
        assert!(large_file_among(&line(&["xaifb", "tangent", "-i", l])));
        // The program itself does not count, nor a directory, nor an
        // argument cut off by the buffer.
        assert!(!large_file_among(&line(&[l, "tangent", s])));
        assert!(!large_file_among(&line(&["xaifb", dir.to_str().unwrap()])));
        let mut cut = line(&["xaifb", l]);
        cut.pop();
        assert!(!large_file_among(&cut));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
