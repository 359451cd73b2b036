//! Removing temporary files when SIGINT or SIGTERM ends the process.
//!
//! Every output is written to a temporary beside its destination first
//! (`output.rs`); an interrupted run must not leave those behind. The
//! cleanup runs inside the signal handler itself, so no thread has to wait
//! for signals: a thread spawned at start-up would add to the run time of
//! every small file, which is mostly process start.
//!
//! A signal handler may only do async-signal-safe work: no locks, no
//! allocation. The temporaries therefore live in an append-only list of
//! slots, each holding the path of one temporary as a C string or null:
//!
//! - registering claims a free slot (or links a new one in) with atomic
//!   operations; the slots are never freed, so the list is as long as the
//!   most temporaries that ever existed at once;
//! - the handler takes every path out of its slot with an atomic swap and
//!   removes the file with `unlink`, then lets the signal end the process as
//!   it would have (the handler is installed with `SA_RESETHAND` and raises
//!   the signal again);
//! - a path is owned by whoever swaps it out of its slot: the handler or the
//!   [`Registration`] being dropped, never both.
//!
//! Creating a temporary is a short critical section ([`create`]): its path
//! is registered before the file exists. The handler waits (at most
//! [`WAIT`]) for the critical sections of other threads to end before it
//! removes anything, so a file created at the same moment is not missed; a
//! thread that enters one after the signal waits for the end of the
//! process instead. A signal disposition that was "ignore" at start-up (a
//! background job of a non-interactive shell) stays as it was.

use std::ffi::CString;
use std::io;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::Duration;

/// One slot of the list.
struct Slot {
    path: AtomicPtr<libc::c_char>,
    next: AtomicPtr<Slot>,
}

/// The first slot of the list (the most recently linked in).
static HEAD: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());
/// Set by the handler before it removes anything.
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

/// A registered temporary: removing it from the list when dropped. The
/// file itself is the owner's to remove or rename first.
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

/// Puts `path` into a free slot.
fn register(path: &Path) -> Registration {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    // A path with a NUL byte cannot name a file; keep what precedes it.
    let bytes: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
    let raw = CString::new(bytes).unwrap_or_default().into_raw();
    let mut cur = HEAD.load(Ordering::Acquire);
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
        next: AtomicPtr::new(ptr::null_mut()),
    }));
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        slot.next.store(head, Ordering::Release);
        match HEAD.compare_exchange(
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

/// Runs `create` on `path` as a critical section with the path registered:
/// if a signal ends the process now or later, the file `create` made is
/// removed. When `create` fails the path is unregistered again.
pub fn create<R>(
    path: &Path,
    create: impl FnOnce(&Path) -> io::Result<R>,
) -> io::Result<(R, Registration)> {
    CREATING_HERE.with(|c| c.set(true));
    CREATING.fetch_add(1, Ordering::SeqCst);
    if DYING.load(Ordering::SeqCst) {
        // The handler is removing the temporaries and ends the process.
        CREATING.fetch_sub(1, Ordering::SeqCst);
        CREATING_HERE.with(|c| c.set(false));
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let registration = register(path);
    let made = create(path);
    CREATING.fetch_sub(1, Ordering::SeqCst);
    CREATING_HERE.with(|c| c.set(false));
    made.map(|r| (r, registration))
}

/// Installs the handler for SIGINT and SIGTERM. Call once, at start-up; it
/// costs two system calls per signal.
pub fn install() {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: plain sigaction calls on zeroed structures; the handler
        // only does async-signal-safe work (atomics, clock_gettime, unlink,
        // raise).
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

/// The signal handler: removes every registered temporary, then raises the
/// signal again, which now has its default action (`SA_RESETHAND`) and ends
/// the process when the handler returns.
#[cfg(unix)]
extern "C" fn handler(sig: libc::c_int) {
    DYING.store(true, Ordering::SeqCst);
    let own = CREATING_HERE.with(|c| c.get()) as usize;
    let deadline = now_ns() + WAIT.as_nanos();
    while CREATING.load(Ordering::SeqCst) > own && now_ns() < deadline {
        std::hint::spin_loop();
    }
    let mut cur = HEAD.load(Ordering::Acquire);
    while !cur.is_null() {
        // SAFETY: slots are leaked and never freed.
        let slot = unsafe { &*cur };
        let p = slot.path.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: `p` is a NUL-terminated path owned by us now.
            unsafe { libc::unlink(p) };
        }
        cur = slot.next.load(Ordering::Acquire);
    }
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = HEAD.load(Ordering::Acquire);
        while !cur.is_null() {
            let slot = unsafe { &*cur };
            let p = slot.path.load(Ordering::Acquire);
            if !p.is_null() {
                out.push(
                    unsafe { std::ffi::CStr::from_ptr(p) }
                        .to_string_lossy()
                        .into_owned(),
                );
            }
            cur = slot.next.load(Ordering::Acquire);
        }
        out
    }

    #[test]
    fn slots_are_reused_and_paths_unregistered() {
        let a = register(Path::new("cleanup-test-a"));
        let b = register(Path::new("cleanup-test-b"));
        assert!(listed().contains(&"cleanup-test-a".to_string()));
        drop(a);
        assert!(!listed().contains(&"cleanup-test-a".to_string()));
        let c = register(Path::new("cleanup-test-c"));
        assert!(listed().contains(&"cleanup-test-b".to_string()));
        assert!(listed().contains(&"cleanup-test-c".to_string()));
        drop(b);
        drop(c);
        let l = listed();
        assert!(!l.iter().any(|p| p.starts_with("cleanup-test-")), "{l:?}");
    }

    #[test]
    fn a_failed_creation_is_unregistered() {
        let r: io::Result<((), Registration)> = create(Path::new("cleanup-test-fail"), |_| {
            Err(io::Error::other("no"))
        });
        assert!(r.is_err());
        assert!(!listed().contains(&"cleanup-test-fail".to_string()));
    }
}
