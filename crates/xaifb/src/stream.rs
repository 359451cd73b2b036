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

/// Whether `p`'s transformation can be streamed: without `-r` (which
/// renames across routines), and with the routines in the call graph in
/// the order they were read, each once (the order both transformations
/// finish them in).
pub fn can_stream(p: &Program, rename: bool) -> bool {
    if rename {
        return false;
    }
    let mut ids = p.routines.ids();
    let in_order = p
        .items
        .iter()
        .filter_map(|i| match i {
            CallGraphItem::Routine(r) => Some(*r),
            CallGraphItem::Edge(_) => None,
        })
        .all(|r| ids.next() == Some(r));
    in_order && ids.next().is_none()
}

/// The routines written so far.
pub struct Spill {
    file: BufWriter<File>,
    /// The next item of the call graph to write.
    cursor: usize,
    /// Without `-V`: each routine gets the short form before it is written.
    terse: bool,
}

impl Spill {
    /// A spill beside `dest` (same file system), or in the temporary
    /// directory for standard output. The file has no name: nothing is
    /// left behind, whatever ends the process.
    pub fn new(dest: Option<&Path>, terse: bool) -> std::io::Result<Spill> {
        let dir = dest
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file = match dest {
            Some(_) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        Ok(Spill {
            file: BufWriter::with_capacity(1 << 16, file),
            cursor: 0,
            terse,
        })
    }

    /// The sink of a streamed transformation: writes the call graph edges
    /// before routine `r`, then `r`.
    pub fn routine(&mut self, out: &mut Program, r: RoutineId) -> Result<(), String> {
        if self.terse {
            out.make_routine_terse(r);
        }
        self.edges(out).map_err(|e| format!("cannot write: {e}"))?;
        match out.items.get(self.cursor) {
            Some(CallGraphItem::Routine(x)) if *x == r => {}
            _ => return Err("a routine was finished out of document order".into()),
        }
        xaif_model::write_item_to(out, CallGraphItem::Routine(r), &mut self.file)
            .map_err(|e| format!("cannot write: {e}"))?;
        self.cursor += 1;
        Ok(())
    }

    /// Writes the edges from the cursor to the next routine.
    fn edges(&mut self, out: &Program) -> std::io::Result<()> {
        while let Some(item @ CallGraphItem::Edge(_)) = out.items.get(self.cursor) {
            xaif_model::write_item_to(out, *item, &mut self.file)?;
            self.cursor += 1;
        }
        Ok(())
    }

    /// Writes the whole document: `out`'s header (marked as output and
    /// shortened as the whole model would be), the spilled routines, the
    /// edges after the last routine and the closing tag.
    pub fn write_document(mut self, out: &Program, w: &mut dyn Write) -> std::io::Result<()> {
        self.edges(out)?;
        if self.cursor != out.items.len() {
            return Err(std::io::Error::other(
                "a routine of the call graph was not transformed",
            ));
        }
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        xaif_model::write_header_to(out, w)?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            w.write_all(&buffer[..n])?;
        }
        xaif_model::write_footer_to(w)
    }
}
