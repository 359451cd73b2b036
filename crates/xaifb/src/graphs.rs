//! Graph files: the Graphviz text of every eliminated graph (`--dot DIR`)
//! and its rendering (`-g 8 -G FMT`, shown with `-B VIEWER`), written with
//! the job's other outputs, all or none.
//!
//! A graph's file name comes from the input (routine name, block id,
//! graph number), so it is mapped ([`file_stem`]) to a name that stays in
//! the directory the user named (no `/`, never `.` or `..`, nothing
//! hidden), has a bounded length whatever the input, and is different for
//! different graphs: the mapping is documented in `docs/limits.md`.
//!
//! Rendering runs Graphviz's `dot` on each graph through pipes (the text
//! on its standard input, the picture from its standard output), so a
//! failed rendering leaves no file anywhere; the pictures are staged with
//! the job's outputs and the viewer is started on them only once they are
//! all in place.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use xaif_linearize::tangent::DotGraph;

use crate::compat::GraphicsFormat;
use crate::output::Outputs;

/// The longest stem of a graph file name, in bytes: with its longest
/// suffix (`_before.svg`) and the temporary it is staged in
/// (`output.rs`), far below the 255 bytes a file name may have.
pub const MAX_STEM: usize = 128;

/// The largest picture read back from `dot` (1 GiB): a picture of a graph
/// of an input within the input size limit is far smaller.
pub const MAX_RENDERED: u64 = 1 << 30;

/// FNV-1a, 64 bits: a stable hash (the same on every machine and run) to
/// tell long names apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The file stem of the graph named `name`:
///
/// - ASCII letters, digits, `_`, `-` and `.` are kept, except a `.` or `-`
///   at the start; every other byte (of the name's UTF-8) becomes `%XX`, its
///   value in hexadecimal. Different names give different stems, and no
///   stem holds a `/`, starts with `.` or `-`, or is empty for a non-empty
///   name.
/// - A stem longer than [`MAX_STEM`] bytes keeps its first bytes (never
///   cutting a `%XX` apart) and ends in `~` and the 16 hexadecimal digits
///   of a 64-bit FNV-1a hash of the whole name (`~` is never kept from a
///   name, so such a stem differs from every short one).
pub fn file_stem(name: &str) -> String {
    let mut stem = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
        if keep && !(i == 0 && matches!(b, b'.' | b'-')) {
            stem.push(char::from(b));
        } else {
            stem.push_str(&format!("%{b:02X}"));
        }
    }
    if stem.len() <= MAX_STEM {
        return stem;
    }
    let hash = format!("~{:016x}", fnv1a(name.as_bytes()));
    let mut keep = MAX_STEM - hash.len();
    // Never cut an escape apart: back up to before a `%` of the last two.
    if let Some(p) = stem[keep.saturating_sub(2)..keep].rfind('%') {
        keep = keep - 2 + p;
    }
    stem.truncate(keep);
    stem + &hash
}

/// The stems of `dots`, in order: [`file_stem`] of each name, and should
/// two still agree (two long names whose hashes agree), `~2`, `~3`, … on
/// the later ones.
pub fn stems(dots: &[DotGraph]) -> Vec<String> {
    let mut taken = HashSet::new();
    dots.iter()
        .map(|d| {
            let base = file_stem(&d.name);
            let mut stem = base.clone();
            let mut k = 1;
            while !taken.insert(stem.clone()) {
                k += 1;
                stem = format!("{base}~{k}");
            }
            stem
        })
        .collect()
}

/// Where `-G` renders: beside the `--dot` files, or in `<output>.graphs/`
/// beside the output file, or in `xaifb.graphs/` for standard output. An
/// output name too long for the suffix keeps its first 200 bytes and a
/// hash of the whole name.
pub fn render_dir(dot: Option<&Path>, output: Option<&Path>) -> PathBuf {
    if let Some(d) = dot {
        return d.to_path_buf();
    }
    let Some(o) = output else {
        return PathBuf::from("xaifb.graphs");
    };
    let mut name = o.file_name().unwrap_or_default().to_os_string();
    if name.len() + ".graphs".len() > 255 {
        let bytes = name.as_encoded_bytes();
        let mut cut = String::from_utf8_lossy(&bytes[..200]).into_owned();
        let mut end = cut.len().min(200);
        while !cut.is_char_boundary(end) {
            end -= 1;
        }
        cut.truncate(end);
        cut.push_str(&format!("~{:016x}", fnv1a(bytes)));
        name = cut.into();
    }
    name.push(".graphs");
    o.with_file_name(name)
}

/// What a job writes of its graphs, and where.
pub struct GraphFiles<'a> {
    /// `--dot DIR`.
    pub dot: Option<&'a Path>,
    /// `-G`: the format and the directory of the pictures.
    pub render: Option<(GraphicsFormat, PathBuf)>,
}

impl GraphFiles<'_> {
    /// Stages every file of `dots` in `outputs`: the Graphviz text in the
    /// `--dot` directory, and with `-G` the text and its picture in the
    /// render directory. Returns the pictures, for the viewer.
    pub fn stage(&self, outputs: &mut Outputs, dots: &[DotGraph]) -> Result<Vec<PathBuf>> {
        let mut pictures = Vec::new();
        for (d, stem) in dots.iter().zip(stems(dots)) {
            for (suffix, text) in [("before", Some(&d.before)), ("after", d.after.as_ref())] {
                let Some(text) = text else { continue };
                let source = format!("{stem}_{suffix}.dot");
                if let Some(dir) = self.dot {
                    outputs.add(&dir.join(&source), text.as_bytes())?;
                }
                let Some((format, dir)) = &self.render else {
                    continue;
                };
                if self.dot != Some(dir.as_path()) {
                    outputs.add(&dir.join(&source), text.as_bytes())?;
                }
                let picture = dir.join(format!("{stem}_{suffix}.{}", format.ext()));
                let bytes = render(text, format.ext(), &d.name)?;
                outputs.add(&picture, &bytes)?;
                pictures.push(picture);
            }
        }
        Ok(pictures)
    }
}

/// The picture `dot -T{ext}` makes of `text` (the graph `name`), through
/// pipes; an error when `dot` cannot run or fails.
fn render(text: &str, ext: &str, name: &str) -> Result<Vec<u8>> {
    let mut child = Command::new("dot")
        .arg(format!("-T{ext}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow!(
                "-G needs Graphviz's dot (install graphviz): {}",
                crate::console::plain_io_message(&e)
            )
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (picture, messages) = std::thread::scope(|s| {
        s.spawn(move || {
            // dot may stop reading early; its status says why.
            let _ = stdin.write_all(text.as_bytes());
        });
        let messages = s.spawn(move || {
            let mut m = Vec::new();
            let _ = (&mut stderr).take(1 << 16).read_to_end(&mut m);
            m
        });
        let mut picture = Vec::new();
        let read = (&mut stdout)
            .take(MAX_RENDERED + 1)
            .read_to_end(&mut picture);
        (read.map(|_| picture), messages.join().unwrap_or_default())
    });
    let status = child.wait().context("waiting for dot")?;
    let picture = picture.context("reading what dot rendered")?;
    if !status.success() {
        let why = String::from_utf8_lossy(&messages);
        let why = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!(
            "dot could not render graph {name} ({status}){}{why}",
            if why.is_empty() { "" } else { ": " }
        );
    }
    if picture.len() as u64 > MAX_RENDERED {
        bail!("dot rendered graph {name} larger than {MAX_RENDERED} bytes");
    }
    Ok(picture)
}

/// Whether `program` can be started: a path to an executable file, or a
/// name found as one on `PATH`.
fn startable(program: &str) -> bool {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                m.is_file()
            }
        })
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(program))))
}

/// Refuses, before any work, a rendering whose tools cannot be started:
/// Graphviz's `dot`, and the viewer of `-B` when there is one.
pub fn check_tools(viewer: Option<&str>) -> Result<()> {
    if !startable("dot") {
        bail!("-G needs Graphviz's dot (install graphviz): no program dot on PATH");
    }
    if let Some(viewer) = viewer.filter(|v| !startable(v)) {
        bail!("cannot start the viewer {viewer} of -B: no such program");
    }
    Ok(())
}

/// `-B`: starts the viewer on each picture, once all are in place.
pub fn view(viewer: &str, pictures: &[PathBuf]) -> Result<()> {
    for p in pictures {
        Command::new(viewer).arg(p).status().map_err(|e| {
            anyhow!(
                "cannot start the viewer {viewer}: {}",
                crate::console::plain_io_message(&e)
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_stay_in_the_directory_and_apart() {
        assert_eq!(file_stem("head__24_5_0"), "head__24_5_0");
        assert_eq!(file_stem("../ESCAPED_5_0"), "%2E.%2FESCAPED_5_0");
        assert_eq!(file_stem("/tmp/x_1_0"), "%2Ftmp%2Fx_1_0");
        assert_eq!(file_stem("a b%"), "a%20b%25");
        assert_eq!(file_stem("-x"), "%2Dx");
        assert_eq!(file_stem("é"), "%C3%A9");
        // Injective on short names: `a/b` and `a%2Fb` differ.
        assert_ne!(file_stem("a/b"), file_stem("a%2Fb"));
        // Long names are bounded and told apart by their hash.
        let long: String = "ä".repeat(300);
        let (a, b) = (file_stem(&long), file_stem(&format!("{long}x")));
        assert!(a.len() <= MAX_STEM && b.len() <= MAX_STEM, "{a}");
        assert_ne!(a, b);
        assert!(!a.contains('/') && a.contains('~'));
        // Never an escape cut apart.
        for n in 100..140 {
            let s = file_stem(&"/".repeat(n));
            let body = s.split('~').next().unwrap();
            assert!(body.len() % 3 == 0, "{s}");
        }
    }

    #[test]
    fn equal_stems_get_numbered() {
        let g = |name: &str| DotGraph {
            name: name.into(),
            before: String::new(),
            after: None,
            lcg: String::new(),
        };
        let s = stems(&[g("a"), g("a"), g("b")]);
        assert_eq!(s, ["a", "a~2", "b"]);
    }

    #[test]
    fn render_dirs_fit_any_output_name() {
        let long = "o".repeat(255);
        let d = render_dir(None, Some(Path::new(&long)));
        assert!(d.file_name().unwrap().len() <= 255);
        assert!(d.to_string_lossy().ends_with(".graphs"));
        assert_eq!(
            render_dir(None, Some(Path::new("x/out.xaif"))),
            Path::new("x/out.xaif.graphs")
        );
        assert_eq!(render_dir(None, None), Path::new("xaifb.graphs"));
    }
}
