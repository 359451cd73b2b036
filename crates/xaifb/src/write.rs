//! The fourth step of a transformation: its result written, with every
//! side output the command line asks for (debug records, statistics,
//! graph files), all through one [`Outputs`], so that a job writes all of
//! its files or none.
//!
//! A program is streamed into its temporary file (or to standard output)
//! as it is written; a large one-file transformation writes its routines
//! as they are finished (`stream.rs`).

use std::path::Path;

use anyhow::Result;
use xaif_model::Program;

use crate::flags::TransformArgs;
use crate::output::Outputs;

/// Whether this process transforms one file (see [`release`]).
static ONE_FILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that this process transforms one file (see [`release`]).
pub fn set_one_file() {
    ONE_FILE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Hands a program that is no longer needed back. A one-file call ends
/// right after writing its result, and freeing a large model piece by
/// piece costs a tenth of the run, so a one-file call leaves that to the
/// process's exit; batch workers free as usual.
pub fn release(p: Program) {
    if ONE_FILE.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(p);
    }
}

impl TransformArgs {
    /// Marks `p` as a transformation result (its schema location) and,
    /// without -V, gives it the reference's short form.
    fn mark_output(&self, p: &mut Program) {
        let dir = self
            .schema
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        p.mark_as_output(&dir);
        if !self.reference.verbose_xaif {
            p.make_terse();
        }
    }

    /// Writes an output program to `path` (a batch's file), streaming its
    /// text into the temporary file.
    pub fn write_to(&self, mut p: Program, path: &Path) -> Result<()> {
        self.mark_output(&mut p);
        let result =
            crate::output::write_atomic_with(path, |w| xaif_model::write_program_to(&p, w));
        release(p);
        result
    }

    /// Writes the output program together with the job's other outputs
    /// (the -d file with `debug`, and what `outputs` holds): all or none.
    /// The program is streamed into its temporary file, or to standard
    /// output without -o or with `-o -`.
    pub fn write(&self, mut outputs: Outputs, debug: &str, mut p: Program) -> Result<()> {
        self.mark_output(&mut p);
        if let Some(path) = &self.debug_file {
            outputs.add(path, debug.as_bytes())?;
        }
        let file = self.output_file();
        if let Some(path) = file {
            outputs.add_with(path, |w| xaif_model::write_program_to(&p, w))?;
        }
        outputs.commit()?;
        if file.is_none() {
            use std::io::Write;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::console::Stdout);
            xaif_model::write_program_to(&p, &mut out)?;
            out.flush()?;
        }
        release(p);
        Ok(())
    }

    /// [`TransformArgs::write`] for a streamed transformation: `p` holds
    /// the header, `spill` the routines.
    pub fn write_streamed(
        &self,
        mut outputs: Outputs,
        debug: &str,
        mut p: Program,
        spill: crate::stream::Spill,
    ) -> Result<()> {
        let dir = self
            .schema
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        p.mark_as_output(&dir);
        if !self.reference.verbose_xaif {
            p.make_maps_terse();
        }
        if let Some(path) = &self.debug_file {
            outputs.add(path, debug.as_bytes())?;
        }
        match self.output_file() {
            Some(path) => {
                outputs.add_with_file(path, |w, file| spill.write_document(&p, w, file))?;
                outputs.commit()?;
            }
            None => {
                outputs.commit()?;
                let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::console::Stdout);
                spill.write_document(&p, &mut out, None)?;
                std::io::Write::flush(&mut out)?;
            }
        }
        release(p);
        Ok(())
    }

    /// A spill for streaming the single input's transformation, when it
    /// can be streamed (see `stream::can_stream`) and is large enough to
    /// gain from it (`stream::STREAM_MIN_STATEMENTS`).
    pub fn spill(&self, p: &Program) -> Option<crate::stream::Spill> {
        if p.stmts.len() < crate::stream::STREAM_MIN_STATEMENTS
            || !crate::stream::can_stream(p, self.rename)
        {
            return None;
        }
        let threaded = self.jobs != Some(1);
        crate::stream::Spill::new(self.output_file(), !self.reference.verbose_xaif, threaded).ok()
    }

    /// Debug output, the records `-T` selects: kept in `buffer` for the
    /// -d file, or printed to standard error.
    pub fn debug(&self, buffer: &mut String, text: &str) {
        let text = crate::report::select_debug(self.reference.tags.as_deref(), text);
        match &self.debug_file {
            Some(_) => buffer.push_str(&text),
            None => eprint!("{text}"),
        }
    }
}
