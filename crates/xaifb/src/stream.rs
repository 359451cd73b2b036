//! One-file transformations written routine by routine: each finished
//! routine's text goes to an unnamed temporary file (the spill) and its
//! model is dropped, so a large program's output is never held whole in
//! memory. The document's header (scopes, with every routine's
//! temporaries) is known only at the end; the output file then gets the
//! header, the spill's bytes and the closing tag: the bytes of writing the
//! whole output model.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, Write};
use std::path::Path;

use xaif_model::{CallGraphItem, Program, RoutineId};

/// Programs with fewer statements are written whole, as a batch writes
/// them: on a small input the temporary file, the copy and the writer
/// thread cost more (about 0.1 ms per process) than they save.
pub const STREAM_MIN_STATEMENTS: usize = 2000;

/// Whether `p`'s transformation can be streamed: without `-r` (which
/// renames across routines), and with the routines in the call graph in
/// the order they were read, each once (the order both transformations
/// finish them in).
pub fn can_stream(p: &Program, rename: bool) -> bool {
    if rename {
        return false;
    }
    let mut ids = p.routines.ids();
    let in_order = p.call_graph_routines().all(|r| ids.next() == Some(r));
    in_order && ids.next().is_none()
}

/// A finished routine, or text that goes between routines.
enum Piece {
    /// A routine moved out of the output model (`Program::take_routine`).
    Routine(Box<Program>),
    /// Call graph edges, already written.
    Text(Vec<u8>),
}

/// Writes pieces to the spill file.
struct PieceWriter {
    file: BufWriter<File>,
    /// Without `-V`: each routine gets the short form before it is written.
    terse: bool,
}

impl PieceWriter {
    fn write(&mut self, piece: Piece) -> std::io::Result<()> {
        match piece {
            Piece::Routine(mut part) => {
                let r = RoutineId::from_index(0);
                if self.terse {
                    part.make_routine_terse(r);
                }
                xaif_model::write_item_to(&part, CallGraphItem::Routine(r), &mut self.file)
            }
            Piece::Text(text) => self.file.write_all(&text),
        }
    }

    fn into_file(self) -> std::io::Result<File> {
        self.file.into_inner().map_err(|e| e.into_error())
    }
}

/// Empties routine `r` of `out` (written in place): its statements become
/// markers and its vertices entries, as `Program::take_routine` leaves
/// them; with `forget`, their contents are left to the process's exit.
fn empty_routine(out: &mut Program, r: RoutineId, forget: bool) {
    use xaif_model::{Attrs, CfgVertex, Routine, RoutineBody, Stmt, StmtKind, VertexKind};
    let (vertices, stmts) = out.routine_contents(r);
    for s in stmts {
        let old = std::mem::replace(
            &mut out.stmts[s],
            Stmt {
                attrs: Attrs::new(),
                kind: StmtKind::Marker,
            },
        );
        discard(old, forget);
    }
    for v in vertices {
        let cfg = out.vertices[v].cfg;
        let old = std::mem::replace(
            &mut out.vertices[v],
            CfgVertex {
                attrs: Attrs::new(),
                cfg,
                kind: VertexKind::Entry,
            },
        );
        discard(old, forget);
    }
    let old = std::mem::replace(
        &mut out.routines[r],
        Routine {
            attrs: Attrs::new(),
            arguments: None,
            side_effects: Vec::new(),
            body: RoutineBody::Replacements(Vec::new()),
        },
    );
    discard(old, forget);
}

/// Drops `x`, or with `forget` leaves its memory to the process's exit.
fn discard<T>(x: T, forget: bool) {
    if forget {
        std::mem::forget(x);
    }
}

/// Where pieces go: written at once, or by a thread of their own while
/// the next routine is transformed.
enum Destination {
    Inline(PieceWriter),
    Thread {
        sender: std::sync::mpsc::SyncSender<Piece>,
        writer: std::thread::JoinHandle<std::io::Result<File>>,
    },
}

impl Destination {
    /// A writer thread writing what it is sent into `pieces` (at most two
    /// pieces waiting).
    fn start(mut pieces: PieceWriter) -> std::io::Result<Destination> {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Piece>(2);
        let writer = std::thread::Builder::new()
            .name("xaifb-writer".into())
            .spawn(move || {
                for piece in receiver {
                    pieces.write(piece)?;
                }
                pieces.into_file()
            })?;
        Ok(Destination::Thread { sender, writer })
    }
}

/// Routines of at least this many statements are written in place, on the
/// transformation's thread (see `Spill::in_place`).
pub const IN_PLACE_STATEMENTS: usize = 50_000;

/// The routines written so far.
pub struct Spill {
    /// `None` once the writer has stopped.
    destination: Option<Destination>,
    /// The next item of the call graph to write.
    cursor: usize,
    /// Without `-V`: each routine gets the short form before it is written.
    terse: bool,
}

impl Spill {
    /// A spill beside `dest` (same file system), or in the temporary
    /// directory for standard output. The file has no name: nothing is
    /// left behind, whatever ends the process. With `threaded`, routines
    /// are written on a thread of their own (at most two waiting), while
    /// the next routine is transformed; the bytes are the same.
    pub fn new(dest: Option<&Path>, terse: bool, threaded: bool) -> std::io::Result<Spill> {
        let dir = dest
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file = match dest {
            Some(_) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        let pieces = PieceWriter {
            file: BufWriter::with_capacity(1 << 16, file),
            terse,
        };
        let destination = if threaded {
            Destination::start(pieces)?
        } else {
            Destination::Inline(pieces)
        };
        Ok(Spill {
            destination: Some(destination),
            cursor: 0,
            terse,
        })
    }

    /// Hands a piece on; a writer thread that stopped reports its error.
    fn send(&mut self, piece: Piece) -> std::io::Result<()> {
        match &mut self.destination {
            None => Err(std::io::Error::other("the output writer stopped")),
            Some(Destination::Inline(pieces)) => pieces.write(piece),
            Some(Destination::Thread { sender, .. }) => match sender.send(piece) {
                Ok(()) => Ok(()),
                // The writer stopped: its error says why.
                Err(_) => Err(self
                    .stop()
                    .err()
                    .unwrap_or_else(|| std::io::Error::other("the output writer stopped"))),
            },
        }
    }

    /// Waits for the writer and takes the spill file back.
    fn stop(&mut self) -> std::io::Result<File> {
        match self.destination.take() {
            None => Err(std::io::Error::other("the output writer stopped")),
            Some(Destination::Inline(pieces)) => pieces.into_file(),
            Some(Destination::Thread { sender, writer }) => {
                drop(sender);
                writer
                    .join()
                    .map_err(|_| std::io::Error::other("the output writer failed"))?
            }
        }
    }

    /// The sink of a streamed transformation: writes the call graph edges
    /// before routine `r`, then `r`: moved out of `out` and handed to the
    /// writer thread, or written from `out` on this thread (see
    /// [`Spill::in_place`]).
    pub fn routine(&mut self, out: &mut Program, r: RoutineId) -> Result<(), String> {
        self.edges(out).map_err(|e| format!("cannot write: {e}"))?;
        match out.items.get(self.cursor) {
            Some(CallGraphItem::Routine(x)) if *x == r => {}
            _ => return Err("a routine was finished out of document order".into()),
        }
        let last = !out.items[self.cursor + 1..]
            .iter()
            .any(|i| matches!(i, CallGraphItem::Routine(_)));
        if last || self.in_place(out, r) {
            self.write_in_place(out, r, last)
                .map_err(|e| format!("cannot write: {e}"))?;
        } else {
            let part = Box::new(out.take_routine(r));
            self.send(Piece::Routine(part))
                .map_err(|e| format!("cannot write: {e}"))?;
        }
        self.cursor += 1;
        Ok(())
    }

    /// Whether routine `r` (not the last one) is written from `out` on
    /// this thread rather than moved out for the writer thread: without a
    /// writer thread, and for a routine of at least
    /// [`IN_PLACE_STATEMENTS`] statements. The last routine is always
    /// written in place (nothing is left to transform meanwhile). Moving a
    /// routine out copies its vertices, edges and statements into arenas
    /// of their own, so for a moment the process holds them twice: for the
    /// adjoint of a routine of 3·10⁴ nested `If`s (some 800 000
    /// statements) that copy was the largest allocation of the run, and
    /// the one that failed under an address-space limit (`docs/limits.md`,
    /// "Memory").
    fn in_place(&self, out: &Program, r: RoutineId) -> bool {
        !matches!(self.destination, Some(Destination::Thread { .. }))
            || out.routine_contents(r).1.len() >= IN_PLACE_STATEMENTS
    }

    /// Writes routine `r` from `out` after every piece handed on before
    /// it (the writer thread, if any, is stopped first and started again
    /// after), then empties it in `out` as `Program::take_routine` does:
    /// its body must not be read afterwards (`Finisher` drops the elements
    /// made for it). The elements of the `last` routine are not freed one
    /// by one: the process ends after writing them (`write::release`).
    fn write_in_place(
        &mut self,
        out: &mut Program,
        r: RoutineId,
        last: bool,
    ) -> std::io::Result<()> {
        let threaded = matches!(self.destination, Some(Destination::Thread { .. }));
        let terse = self.terse;
        let mut pieces = match self.destination.take() {
            Some(Destination::Inline(pieces)) => pieces,
            Some(d @ Destination::Thread { .. }) => {
                self.destination = Some(d);
                PieceWriter {
                    file: BufWriter::with_capacity(1 << 16, self.stop()?),
                    terse,
                }
            }
            None => return Err(std::io::Error::other("the output writer stopped")),
        };
        if terse {
            out.make_routine_terse(r);
        }
        xaif_model::write_item_to(out, CallGraphItem::Routine(r), &mut pieces.file)?;
        empty_routine(out, r, last);
        self.destination = Some(if threaded {
            Destination::start(pieces)?
        } else {
            Destination::Inline(pieces)
        });
        Ok(())
    }

    /// Writes the edges from the cursor to the next routine.
    fn edges(&mut self, out: &Program) -> std::io::Result<()> {
        let mut text = Vec::new();
        while let Some(item @ CallGraphItem::Edge(_)) = out.items.get(self.cursor) {
            xaif_model::write_item_to(out, *item, &mut text)?;
            self.cursor += 1;
        }
        if text.is_empty() {
            return Ok(());
        }
        self.send(Piece::Text(text))
    }

    /// Writes the whole document: `out`'s header (marked as output and
    /// shortened as the whole model would be), the spilled routines, the
    /// edges after the last routine and the closing tag. With `file` (the
    /// file `w` writes to, cursor at its end), the routines are copied into
    /// it by two threads with positional writes.
    pub fn write_document(
        mut self,
        out: &Program,
        w: &mut dyn Write,
        file: Option<&File>,
    ) -> std::io::Result<()> {
        self.edges(out)?;
        if self.cursor != out.items.len() {
            return Err(std::io::Error::other(
                "a routine of the call graph was not transformed",
            ));
        }
        let mut spill = self.stop()?;
        xaif_model::write_header_to(out, w)?;
        match file {
            Some(file) => {
                w.flush()?;
                copy_at(&spill, file, true)?;
            }
            None => {
                spill.rewind()?;
                let mut buffer = vec![0u8; COPY_CHUNK];
                let mut copied: u64 = 0;
                loop {
                    let n = read_full(&mut spill, &mut buffer)?;
                    if n == 0 {
                        break;
                    }
                    w.write_all(&buffer[..n])?;
                    release_range(&spill, copied, n as u64);
                    copied += n as u64;
                }
            }
        }
        xaif_model::write_footer_to(w)
    }
}

/// Bytes copied from the spill to the output at a time; each chunk's pages
/// are given back to the system once it is copied.
const COPY_CHUNK: usize = 4 << 20;

/// Spills at least this long are copied by two threads.
const PARALLEL_COPY: u64 = 2 * COPY_CHUNK as u64;

/// Appends the whole spill to `dest` at its cursor, and moves the cursor
/// past it. Copying into the page cache is most of the time of writing a
/// large output; two threads each copy half of the chunks, at their final
/// offsets, inside the kernel where it can (`in_kernel`), through a buffer
/// otherwise.
fn copy_at(spill: &File, mut dest: &File, in_kernel: bool) -> std::io::Result<()> {
    use std::io::SeekFrom;
    let base = dest.stream_position()?;
    let len = spill.metadata()?.len();
    let chunks = len.div_ceil(COPY_CHUNK as u64);
    let copy_chunks = |first: u64, step: u64| -> std::io::Result<()> {
        let mut buffer = Vec::new();
        let mut k = first;
        while k < chunks {
            let at = k * COPY_CHUNK as u64;
            let n = (len - at).min(COPY_CHUNK as u64) as usize;
            if !(in_kernel && copy_range(spill, dest, at, base + at, n)?) {
                buffer.resize(COPY_CHUNK, 0);
                read_exact_at(spill, &mut buffer[..n], at)?;
                write_all_at(dest, &buffer[..n], base + at)?;
            }
            release_range(spill, at, n as u64);
            k += step;
        }
        Ok(())
    };
    if len >= PARALLEL_COPY {
        std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("xaifb-copy".into())
                .spawn_scoped(scope, || copy_chunks(1, 2));
            match other {
                Ok(other) => {
                    let mine = copy_chunks(0, 2);
                    let theirs = other
                        .join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("the copy failed")));
                    mine.and(theirs)
                }
                // No thread: one copies everything.
                Err(_) => copy_chunks(0, 1),
            }
        })?;
    } else {
        copy_chunks(0, 1)?;
    }
    dest.seek(SeekFrom::Start(base + len))?;
    Ok(())
}

/// Copies `len` bytes of `from` at `from_at` to `to` at `to_at` inside the
/// kernel (`copy_file_range`: one copy from page cache to page cache, no
/// buffer in between). `false` when the system or the file systems cannot
/// (nothing copied then); the caller copies through a buffer instead.
fn copy_range(
    from: &File,
    to: &File,
    from_at: u64,
    to_at: u64,
    len: usize,
) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(mut off_in), Ok(mut off_out)) = (
            libc::loff_t::try_from(from_at),
            libc::loff_t::try_from(to_at),
        ) else {
            return Ok(false);
        };
        let mut left = len;
        while left > 0 {
            // SAFETY: both descriptors belong to files that outlive the
            // call; the offsets are locals the call updates.
            let n = unsafe {
                libc::copy_file_range(
                    from.as_raw_fd(),
                    &mut off_in,
                    to.as_raw_fd(),
                    &mut off_out,
                    left,
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // Nothing copied yet: whatever the cause (no system call,
                // file systems that cannot, an output opened for appending),
                // the buffer copy either works or reports its own error.
                if left == len {
                    return Ok(false);
                }
                return Err(e);
            }
            if n == 0 {
                // A file system that copies nothing at all gets the buffer
                // copy; the spill ending early is an error.
                if left == len {
                    return Ok(false);
                }
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            left -= n as usize;
        }
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to, from_at, to_at, len);
        Ok(false)
    }
}

/// Fills `buffer` from `file` at `offset`.
fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buffer.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buffer[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// Writes all of `bytes` to `file` at `offset`.
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            done += std::os::windows::fs::FileExt::seek_write(
                file,
                &bytes[done..],
                offset + done as u64,
            )?;
        }
        Ok(())
    }
}

/// Reads until `buffer` is full or the file ends.
fn read_full(file: &mut File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Frees the spill's pages of a chunk already copied (a hole punched into
/// the unnamed file), so that the output's pages reuse that memory instead
/// of the page cache holding the output twice. On a virtual machine,
/// memory the system has not used before is several times slower to fill:
/// writing 1.6 GB of output this way took half the system time. Only a
/// hint: where the file system cannot punch holes nothing changes.
fn release_range(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return;
        };
        // SAFETY: fallocate only reads its integer arguments; the
        // descriptor belongs to `file`, which outlives the call.
        unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    /// The spill lands after what the output already holds, whole and in
    /// order, inside the kernel and through the buffer, for a spill of one
    /// chunk and one of several chunks copied by two threads.
    #[test]
    fn copy_at_appends_the_spill_at_the_cursor() {
        let dir = std::env::temp_dir();
        for len in [1000usize, 2 * COPY_CHUNK + 12345] {
            for in_kernel in [true, false] {
                let mut spill = tempfile::tempfile_in(&dir).unwrap();
                let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4093) as u8).collect();
                spill.write_all(&bytes).unwrap();
                let mut out = tempfile::tempfile_in(&dir).unwrap();
                out.write_all(b"header").unwrap();
                copy_at(&spill, &out, in_kernel).unwrap();
                out.write_all(b"footer").unwrap();
                out.rewind().unwrap();
                let mut got = Vec::new();
                out.read_to_end(&mut got).unwrap();
                assert_eq!(got.len(), len + 12, "{len} {in_kernel}");
                assert_eq!(&got[..6], b"header");
                assert!(got[6..6 + len] == bytes[..], "{len} {in_kernel}");
                assert_eq!(&got[6 + len..], b"footer");
            }
        }
    }
}
