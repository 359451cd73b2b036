//! Removing what a run made for its outputs when it ends early: by SIGINT
//! or SIGTERM, or because memory ran out (`alloc.rs`).
//!
//! Every output is written to a temporary beside its destination first,
//! in directories made for it when they are missing (`output.rs`); an
//! interrupted run must leave neither the temporaries nor the directories
//! it made behind, and must not touch anything it did not make. The
//! cleanup runs inside the signal handler itself, so no thread has to wait
//! for signals: a thread spawned at start-up would add to the run time of
//! every small file, which is mostly process start.
//!
//! A signal handler may only do async-signal-safe work: no locks, no
//! allocation (and neither may the out-of-memory path). Paths therefore
//! live in append-only lists of slots, each slot holding one path as a C
//! string or null; one list for the temporaries, one for the directories
//! this run made, one for the inputs being worked on (named by the
//! out-of-memory message):
//!
//! - registering claims a free slot (or links a new one in) with atomic
//!   operations; the slots are never freed, so a list is as long as the
//!   most paths it ever held at once;
//! - the handler takes every path out of its slot with an atomic swap,
//!   removes the temporaries with `unlink`, then the directories with
//!   `rmdir` (which removes only empty ones, so nothing another process
//!   put there), deepest first: pass after pass while one goes, since a
//!   directory empties when the one inside it is removed; then it lets the
//!   signal end the process as it would have (the handler is installed
//!   with `SA_RESETHAND` and raises the signal again);
//! - a path is owned by whoever swaps it out of its slot: the handler or the
//!   [`Registration`] being dropped, never both.
//!
//! Creating a temporary or a directory is a short critical section
//! ([`create`], [`create_dir`]): its path is registered before it exists,
//! and a directory only when this run's `mkdir` made it (not when it was
//! there already). The handler waits (at most [`WAIT`]) for the critical
//! sections of other threads to end before it removes anything, so a file
//! created at the same moment is not missed; a thread that enters one after
//! the signal waits for the end of the process instead. A signal
//! disposition that was "ignore" at start-up (a background job of a
//! non-interactive shell) stays as it was.

use std::ffi::CString;
use std::io;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::Duration;

/// One slot of a list.
struct Slot {
    path: AtomicPtr<libc::c_char>,
    /// A path the handler took out of `path` and still works on (a
    /// directory not yet removed): its alone, never freed.
    taken: AtomicPtr<libc::c_char>,
    next: AtomicPtr<Slot>,
}

/// A list of paths: its first slot (the most recently linked in).
struct List {
    head: AtomicPtr<Slot>,
}

impl List {
    const fn new() -> Self {
        List {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Calls `f` on every slot of the list.
    fn slots(&self, mut f: impl FnMut(&Slot)) {
        let mut cur = self.head.load(Ordering::Acquire);
        while !cur.is_null() {
            // SAFETY: slots are leaked and never freed.
            let slot = unsafe { &*cur };
            f(slot);
            cur = slot.next.load(Ordering::Acquire);
        }
    }

    /// Calls `f` on every path in the list, taking each out of its slot
    /// (the caller owns it then); for the signal handler and the
    /// out-of-memory path.
    fn take_each(&self, mut f: impl FnMut(*mut libc::c_char)) {
        self.slots(|slot| {
            let p = slot.path.swap(ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                f(p);
            }
        });
    }

    /// Calls `f` on every path in the list, leaving it there (only for
    /// paths nobody frees meanwhile: the inputs being worked on, when the
    /// process is ending, and tests).
    #[cfg(test)]
    fn each(&self, mut f: impl FnMut(*const libc::c_char)) {
        self.slots(|slot| {
            let p = slot.path.load(Ordering::Acquire);
            if !p.is_null() {
                f(p);
            }
        });
    }
}

/// Temporary files of outputs.
static TEMPORARIES: List = List::new();
/// Directories this run made for its outputs.
static DIRECTORIES: List = List::new();
/// Inputs being worked on, as messages name them.
static WORKING: List = List::new();
/// Set by the handler (or the out-of-memory path) before it removes
/// anything.
static DYING: AtomicBool = AtomicBool::new(false);
/// Threads between registering a path and creating its file.
static CREATING: AtomicUsize = AtomicUsize::new(0);
/// How long the handler waits for other threads to finish creating a file.
pub const WAIT: Duration = Duration::from_millis(200);

std::thread_local! {
    /// Whether this thread is creating a file (the handler may interrupt
    /// it; it must not wait for itself).
    static CREATING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A registered path: removed from its list when dropped. The file or
/// directory itself is the owner's to remove or keep first.
pub struct Registration {
    slot: &'static Slot,
    path: *mut libc::c_char,
}

// The raw path is only ever handed between threads through the slot's
// atomic; the registration owns it until it swaps it out.
unsafe impl Send for Registration {}
unsafe impl Sync for Registration {}

impl Drop for Registration {
    fn drop(&mut self) {
        if self
            .slot
            .path
            .compare_exchange(
                self.path,
                ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            // SAFETY: the pointer came from `CString::into_raw` in
            // `register` and was just taken out of the slot, so nobody else
            // holds it.
            drop(unsafe { CString::from_raw(self.path) });
        }
        // Otherwise the handler took it: the process is ending.
    }
}

/// `path` as a C string (what precedes a NUL byte, which no path holds).
fn c_path(path: &Path) -> CString {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    let bytes: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
    CString::new(bytes).unwrap_or_default()
}

/// Puts `path` into a free slot of `list`.
fn register(list: &'static List, path: &Path) -> Registration {
    let raw = c_path(path).into_raw();
    let mut cur = list.head.load(Ordering::Acquire);
    while !cur.is_null() {
        // SAFETY: slots are leaked and never freed.
        let slot: &'static Slot = unsafe { &*cur };
        if slot
            .path
            .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Registration { slot, path: raw };
        }
        cur = slot.next.load(Ordering::Acquire);
    }
    let slot: &'static Slot = Box::leak(Box::new(Slot {
        path: AtomicPtr::new(raw),
        taken: AtomicPtr::new(ptr::null_mut()),
        next: AtomicPtr::new(ptr::null_mut()),
    }));
    let mut head = list.head.load(Ordering::Acquire);
    loop {
        slot.next.store(head, Ordering::Release);
        match list.head.compare_exchange(
            head,
            slot as *const Slot as *mut Slot,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return Registration { slot, path: raw },
            Err(h) => head = h,
        }
    }
}

/// Runs `make` as a critical section with `path` registered in `list`; the
/// registration is kept when `make` says so.
fn critical<R>(
    list: &'static List,
    path: &Path,
    make: impl FnOnce(&Path) -> io::Result<(R, bool)>,
) -> io::Result<(R, Option<Registration>)> {
    CREATING_HERE.with(|c| c.set(true));
    CREATING.fetch_add(1, Ordering::SeqCst);
    if DYING.load(Ordering::SeqCst) {
        // The handler is removing what was made and ends the process.
        CREATING.fetch_sub(1, Ordering::SeqCst);
        CREATING_HERE.with(|c| c.set(false));
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let registration = register(list, path);
    // A path not kept (a directory that was there already, a file not
    // made) is unregistered before the section ends: a handler waiting
    // for it must not remove what another process made.
    let made = match make(path) {
        Ok((r, true)) => Ok((r, Some(registration))),
        Ok((r, false)) => {
            drop(registration);
            Ok((r, None))
        }
        Err(e) => {
            drop(registration);
            Err(e)
        }
    };
    CREATING.fetch_sub(1, Ordering::SeqCst);
    CREATING_HERE.with(|c| c.set(false));
    made
}

/// Runs `create` on `path` as a critical section with the path registered:
/// if a signal ends the process now or later, the file `create` made is
/// removed. When `create` fails the path is unregistered again.
pub fn create<R>(
    path: &Path,
    create: impl FnOnce(&Path) -> io::Result<R>,
) -> io::Result<(R, Registration)> {
    let (r, registration) = critical(&TEMPORARIES, path, |p| create(p).map(|r| (r, true)))?;
    Ok((r, registration.expect("kept")))
}

/// Makes the directory `path` (its parent must exist) as a critical
/// section: `Some` registration when this call made it, so that a signal
/// now or later removes it again (when it is empty), `None` when it was
/// there already (another process or job made it: never removed here).
pub fn create_dir(path: &Path) -> io::Result<Option<Registration>> {
    let ((), registration) = critical(&DIRECTORIES, path, |p| match std::fs::create_dir(p) {
        Ok(()) => Ok(((), true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => Ok(((), false)),
        Err(e) => Err(e),
    })?;
    Ok(registration)
}

/// Names `input` (as messages name it, `input::working_on`) as being
/// worked on until the registration is dropped: the out-of-memory message
/// names it (`alloc.rs`).
pub fn working_on(name: &str) -> Registration {
    register(&WORKING, Path::new(name))
}

/// Set once an input's bytes did not fit into memory.
static INPUT_OUT_OF_MEMORY: AtomicBool = AtomicBool::new(false);

/// An input did not fit into memory (`input::Cause::NoMemory`): the run's
/// exit code is 4 (`report`), even where the error travels on as text.
pub fn input_out_of_memory() {
    INPUT_OUT_OF_MEMORY.store(true, Ordering::Relaxed);
}

/// Whether [`input_out_of_memory`] was called.
pub fn input_was_out_of_memory() -> bool {
    INPUT_OUT_OF_MEMORY.load(Ordering::Relaxed)
}

/// Removes every registered temporary, then every registered directory
/// that is empty, deepest first; async-signal-safe. Waits (at most
/// [`WAIT`]) for other threads' critical sections first.
#[cfg(unix)]
fn remove_all() {
    DYING.store(true, Ordering::SeqCst);
    let own = CREATING_HERE.with(|c| c.get()) as usize;
    let deadline = now_ns() + WAIT.as_nanos();
    while CREATING.load(Ordering::SeqCst) > own && now_ns() < deadline {
        std::hint::spin_loop();
    }
    TEMPORARIES.take_each(|p| {
        // SAFETY: `p` is a NUL-terminated path owned by us now.
        unsafe { libc::unlink(p) };
    });
    // A directory goes once those inside it are gone: pass after pass
    // while one goes (rmdir refuses a directory that is not empty). The
    // paths are taken out of their slots first, so no registration frees
    // one meanwhile.
    DIRECTORIES.slots(|slot| {
        let p = slot.path.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            slot.taken.store(p, Ordering::Release);
        }
    });
    loop {
        let mut removed = false;
        DIRECTORIES.slots(|slot| {
            let p = slot.taken.load(Ordering::Acquire);
            // SAFETY: `p` is a NUL-terminated path the handler took and
            // never frees.
            if !p.is_null() && unsafe { libc::rmdir(p) } == 0 {
                slot.taken.store(ptr::null_mut(), Ordering::Release);
                removed = true;
            }
        });
        if !removed {
            break;
        }
    }
}

/// Installs the handler for SIGINT and SIGTERM. Call once, at start-up; it
/// costs two system calls per signal.
pub fn install() {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: plain sigaction calls on zeroed structures; the handler
        // only does async-signal-safe work (atomics, clock_gettime, unlink,
        // rmdir, raise).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, ptr::null_mut());
        }
    }
}

/// Monotonic time in nanoseconds, async-signal-safe.
#[cfg(unix)]
fn now_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes `ts` only.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// The signal handler: removes every registered temporary and directory,
/// then raises the signal again, which now has its default action
/// (`SA_RESETHAND`) and ends the process when the handler returns.
#[cfg(unix)]
extern "C" fn handler(sig: libc::c_int) {
    remove_all();
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// The exit code of a run that ran out of memory (`docs/limits.md`,
/// "Memory").
pub const OUT_OF_MEMORY: u8 = 4;

/// A message written without allocating: bytes into a fixed buffer.
struct Message {
    buf: [u8; 1024],
    len: usize,
}

impl Message {
    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn write(&self) {
        #[cfg(unix)]
        // SAFETY: write(2) from a buffer we own.
        unsafe {
            libc::write(2, self.buf.as_ptr().cast(), self.len);
        }
    }
}

/// The address-space limit of the process (`ulimit -v`) in bytes, if one
/// is set.
pub fn address_space_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes only into `lim`.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0
            && lim.rlim_cur != libc::RLIM_INFINITY
        {
            return Some(lim.rlim_cur);
        }
        None
    }
    #[cfg(not(unix))]
    None
}

/// The cause of an out-of-memory failure, after `FILE: `: the same words
/// for an allocation refused anywhere, so that the same input under the
/// same limit reads the same whichever allocation it was.
pub fn out_of_memory_cause(limit: Option<u64>) -> String {
    let mut m = Message {
        buf: [0; 1024],
        len: 0,
    };
    cause_into(&mut m, limit);
    String::from_utf8_lossy(&m.buf[..m.len]).into_owned()
}

fn cause_into(m: &mut Message, limit: Option<u64>) {
    m.push(b"not enough memory: an allocation failed ");
    match limit {
        Some(bytes) => {
            m.push(b"under the address-space limit of ");
            m.number(bytes >> 20);
            m.push(b" MiB (ulimit -v); raise the limit or give a smaller input");
        }
        None => m.push(b"(no address-space limit is set: the system is out of memory)"),
    }
}

/// The last resort when an allocation fails where the program cannot go on
/// (`alloc.rs`): removes every temporary and directory made for outputs
/// (as an interrupt does), writes `FILE: not enough memory: …` for every
/// input being worked on (`xaifb: not enough memory: …` when there is
/// none), and ends the process with [`OUT_OF_MEMORY`]. Allocates nothing.
pub fn out_of_memory() -> ! {
    // One thread reports; another that runs out meanwhile waits for the
    // end of the process.
    static REPORTING: AtomicBool = AtomicBool::new(false);
    if REPORTING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    #[cfg(unix)]
    remove_all();
    let limit = address_space_limit();
    let mut any = false;
    WORKING.take_each(|p| {
        any = true;
        let mut m = Message {
            buf: [0; 1024],
            len: 0,
        };
        // SAFETY: `p` is a NUL-terminated path taken out of its slot:
        // ours, never freed.
        m.push(unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes());
        m.push(b": ");
        cause_into(&mut m, limit);
        m.push(b"\n");
        m.write();
    });
    if !any {
        let mut m = Message {
            buf: [0; 1024],
            len: 0,
        };
        m.push(b"xaifb: ");
        cause_into(&mut m, limit);
        m.push(b"\n");
        m.write();
    }
    // SAFETY: _exit ends the process without running anything more.
    #[cfg(unix)]
    unsafe {
        libc::_exit(i32::from(OUT_OF_MEMORY))
    }
    #[cfg(not(unix))]
    std::process::exit(i32::from(OUT_OF_MEMORY))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(list: &List) -> Vec<String> {
        let mut out = Vec::new();
        list.each(|p| {
            out.push(
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned(),
            )
        });
        out
    }

    #[test]
    fn slots_are_reused_and_paths_unregistered() {
        let a = register(&TEMPORARIES, Path::new("cleanup-test-a"));
        let b = register(&TEMPORARIES, Path::new("cleanup-test-b"));
        assert!(listed(&TEMPORARIES).contains(&"cleanup-test-a".to_string()));
        drop(a);
        assert!(!listed(&TEMPORARIES).contains(&"cleanup-test-a".to_string()));
        let c = register(&TEMPORARIES, Path::new("cleanup-test-c"));
        assert!(listed(&TEMPORARIES).contains(&"cleanup-test-b".to_string()));
        assert!(listed(&TEMPORARIES).contains(&"cleanup-test-c".to_string()));
        drop(b);
        drop(c);
        let l = listed(&TEMPORARIES);
        assert!(!l.iter().any(|p| p.starts_with("cleanup-test-")), "{l:?}");
    }

    #[test]
    fn a_failed_creation_is_unregistered() {
        let r: io::Result<((), Registration)> = create(Path::new("cleanup-test-fail"), |_| {
            Err(io::Error::other("no"))
        });
        assert!(r.is_err());
        assert!(!listed(&TEMPORARIES).contains(&"cleanup-test-fail".to_string()));
    }

    /// Only a directory this call made is registered.
    #[test]
    fn directories_are_registered_only_when_made_here() {
        let base = std::env::temp_dir().join(format!("cleanup-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let made = base.join("made");
        let r = create_dir(&made).unwrap();
        assert!(r.is_some() && made.is_dir());
        assert!(listed(&DIRECTORIES).contains(&made.display().to_string()));
        assert!(create_dir(&made).unwrap().is_none(), "there already");
        drop(r);
        assert!(!listed(&DIRECTORIES).contains(&made.display().to_string()));
        assert!(create_dir(&base.join("no/such")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_cause_names_the_limit() {
        assert_eq!(
            out_of_memory_cause(Some(2 << 30)),
            "not enough memory: an allocation failed under the address-space limit of 2048 MiB (ulimit -v); raise the limit or give a smaller input"
        );
        assert!(out_of_memory_cause(None).contains("no address-space limit"));
    }
}
