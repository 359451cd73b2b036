//! A persistent cache of eliminations (`--elim-cache DIR`): per graph
//! shape, configuration and cost model, the sequence chosen, the effort
//! that found it, its proof and its bound, so that a later build of the
//! same model searches only the shapes it has not seen, and an exhaustive
//! run once benefits every later default build.
//!
//! # What an entry is
//!
//! One file per key, named by a 128-bit hash of the key: the memo's shape
//! key ([`crate::memo`]: the graph's roles, edges, constants and the
//! order of its variables, with the reference engine's graph where one is
//! given), the propagation mode, everything of the [`Config`] that
//! decides a result except the effort and the cache itself, and
//! [`COST_MODEL_VERSION`]. The file repeats the whole key, so a hash
//! collision is a miss, not a wrong result. Its moves are working moves
//! (vertices numbered by topological rank, which the graph decides).
//!
//! # Why an entry is never trusted
//!
//! Every entry read is replayed on the graph and priced under the model:
//! a move that is not possible, a cost that differs from the one
//! recorded, a sequence that spends more operations than the baseline, or
//! a file that does not parse makes a warning (through the callback the
//! caller gave, since this crate never prints) and the entry is ignored
//! as if it were absent (and replaced by the new result). An entry of
//! another cost model version or configuration is another key: it is
//! ignored without a warning.
//!
//! # Writers
//!
//! An entry is written to a fresh temporary file in the same directory
//! and renamed over the old one, which is atomic: readers see the old
//! entry or the new one, never a part. Two writers of the same key both
//! write whole entries and the last rename wins; no lock is taken, so a
//! writer that dies leaves at most a temporary file (named `.tmp-…`,
//! never read). Failing to create, write or rename is a warning (once per
//! cache), never an error: the cache only saves time.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::optimize::{Effort, Proof};
use crate::work::Move;

/// The version of the cost model and of the working moves: entries of
/// another version are ignored. Raise it with every change of what a
/// sequence costs ([`crate::cost`], [`crate::work`]), of how the working
/// graph numbers vertices, or of what the default effort chooses among
/// equal candidates.
pub const COST_MODEL_VERSION: u32 = 1;

/// The first line of every entry.
const MAGIC: &str = "xaifb-elim-cache 1";

/// Graphs with fewer inner vertices than this are not cached: the default
/// effort proves them optimal in less time than a file takes to read.
pub const CACHE_MIN_INNER: usize = 9;

/// A warning printer: the cache reports through it and never prints.
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// A cache directory, shared by the threads of a process.
pub struct ElimCache {
    dir: PathBuf,
    warn: Warn,
    /// Whether a failure to write was reported (once per cache).
    write_warned: AtomicBool,
    /// Names temporary files apart within this process.
    counter: AtomicU64,
}

impl std::fmt::Debug for ElimCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElimCache").field("dir", &self.dir).finish()
    }
}

/// A cache as a [`crate::Search`] setting: compared and hashed by its
/// directory.
#[derive(Clone, Debug)]
pub struct CacheHandle(pub Arc<ElimCache>);

impl PartialEq for CacheHandle {
    fn eq(&self, other: &Self) -> bool {
        self.0.dir == other.0.dir
    }
}

impl Eq for CacheHandle {}

impl std::hash::Hash for CacheHandle {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.dir.hash(state);
    }
}

impl CacheHandle {
    /// A cache in `dir` (created when the first entry is written) that
    /// reports through `warn`.
    pub fn new(dir: impl Into<PathBuf>, warn: Warn) -> CacheHandle {
        CacheHandle(Arc::new(ElimCache {
            dir: dir.into(),
            warn,
            write_warned: AtomicBool::new(false),
            counter: AtomicU64::new(0),
        }))
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.0.dir
    }
}

/// What an entry records.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// The effort that found it.
    pub effort: Effort,
    /// What it is proven optimal for.
    pub proof: Option<Proof>,
    /// Its cost in model units.
    pub cost: i64,
    /// The lower bound known for the graph, in model units.
    pub bound: i64,
    /// The moves, from the graph as built.
    pub moves: Vec<Move>,
}

/// How strong an effort's entry is: an entry is used by a run of its own
/// effort, and an exhaustive or proven one by every run.
pub(crate) fn rank(effort: Effort) -> u8 {
    match effort {
        Effort::None => 0,
        Effort::Fast => 1,
        Effort::Default => 2,
        Effort::Max => 3,
        Effort::Exhaustive => 4,
    }
}

/// Two independent 64-bit FNV-style hashes of bytes (stable across
/// builds and machines, unlike the standard hasher).
fn hash128(bytes: &[u8]) -> (u64, u64) {
    let mut h1: u64 = 0xcbf2_9ce4_8422_2325;
    let mut h2: u64 = 0x6c62_272e_07bb_0142;
    for &b in bytes {
        h1 = (h1 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        h2 = (h2 ^ u64::from(b)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h2 ^= h2 >> 29;
    }
    (h1, h2)
}

fn effort_name(effort: Effort) -> &'static str {
    effort.name()
}

fn proof_name(proof: Option<Proof>) -> &'static str {
    match proof {
        None => "none",
        Some(Proof::Vertex) => "vertex",
        Some(Proof::Edge) => "edge",
    }
}

fn move_text(m: Move) -> String {
    match m {
        Move::Vertex(v) => format!("V {v}"),
        Move::Front(i, j) => format!("F {i} {j}"),
        Move::Back(j, k) => format!("B {j} {k}"),
        Move::Pre(i, k, j) => format!("P {i} {k} {j}"),
        Move::Post(i, k, j) => format!("Q {i} {k} {j}"),
    }
}

fn parse_move(line: &str) -> Option<Move> {
    let mut parts = line.split(' ');
    let kind = parts.next()?;
    let mut num = || -> Option<u32> { parts.next()?.parse().ok() };
    let m = match kind {
        "V" => Move::Vertex(num()?),
        "F" => Move::Front(num()?, num()?),
        "B" => Move::Back(num()?, num()?),
        "P" => Move::Pre(num()?, num()?, num()?),
        "Q" => Move::Post(num()?, num()?, num()?),
        _ => return None,
    };
    parts.next().is_none().then_some(m)
}

impl ElimCache {
    /// The file of a key.
    fn path(&self, key: &str) -> PathBuf {
        let (a, b) = hash128(key.as_bytes());
        self.dir
            .join(format!("v{COST_MODEL_VERSION}"))
            .join(format!("{a:016x}{b:016x}"))
    }

    /// The entry recorded for `key` (the full key text), if there is one
    /// that parses; a file that does not is reported and ignored.
    pub(crate) fn load(&self, key: &str) -> Option<Entry> {
        let path = self.path(key);
        let text = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.bad(&path, &format!("cannot be read ({e})"));
                return None;
            }
        };
        match parse(&text, key) {
            Ok(Some(entry)) => Some(entry),
            // Another key with the same hash: a miss.
            Ok(None) => None,
            Err(why) => {
                self.bad(&path, why);
                None
            }
        }
    }

    /// Reports an entry that is ignored.
    pub(crate) fn bad(&self, path: &Path, why: &str) {
        (self.warn)(&format!(
            "warning: elimination cache: {}: {why}; the entry is ignored",
            path.display()
        ));
    }

    /// The file of `key`, for messages.
    pub(crate) fn file_of(&self, key: &str) -> PathBuf {
        self.path(key)
    }

    /// Records `entry` for `key`, replacing what was there.
    pub(crate) fn store(&self, key: &str, entry: &Entry) {
        let path = self.path(key);
        let mut text = String::new();
        let _ = writeln!(text, "{MAGIC}");
        let _ = writeln!(text, "model {COST_MODEL_VERSION}");
        let _ = writeln!(text, "effort {}", effort_name(entry.effort));
        let _ = writeln!(text, "proof {}", proof_name(entry.proof));
        let _ = writeln!(text, "cost {}", entry.cost);
        let _ = writeln!(text, "bound {}", entry.bound);
        let _ = writeln!(text, "moves {}", entry.moves.len());
        for &m in &entry.moves {
            let _ = writeln!(text, "{}", move_text(m));
        }
        let _ = writeln!(text, "key {}", key.len());
        text.push_str(key);
        text.push('\n');
        let (a, b) = hash128(text.as_bytes());
        let _ = writeln!(text, "end {a:016x}{b:016x}");
        if let Err(e) = self.write_atomic(&path, text.as_bytes()) {
            if !self.write_warned.swap(true, Ordering::Relaxed) {
                (self.warn)(&format!(
                    "warning: elimination cache: {}: cannot write ({e}); going on without keeping results",
                    self.dir.display()
                ));
            }
        }
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".tmp-{}-{n}-{}",
            std::process::id(),
            path.file_name().and_then(|s| s.to_str()).unwrap_or("entry")
        ));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_data()?;
            drop(f);
            std::fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

/// Parses an entry: `Ok(None)` when it is an entry of another key,
/// `Err` with the reason when it is not an entry at all.
fn parse(bytes: &[u8], key: &str) -> Result<Option<Entry>, &'static str> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text")?;
    // The checksum covers everything before the last line.
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|k| k + 1)
        .ok_or("truncated")?;
    let (body, last) = text.split_at(body_end);
    let sum = last
        .trim_end_matches('\n')
        .strip_prefix("end ")
        .ok_or("truncated (no end line)")?;
    let (a, b) = hash128(body.as_bytes());
    if sum != format!("{a:016x}{b:016x}") {
        return Err("its checksum does not match (corrupt)");
    }
    let mut lines = body.lines();
    fn next_field<'t>(
        lines: &mut std::str::Lines<'t>,
        name: &str,
    ) -> Result<&'t str, &'static str> {
        let line = lines.next().ok_or("truncated")?;
        line.strip_prefix(name)
            .and_then(|r| r.strip_prefix(' '))
            .ok_or("malformed field")
    }
    macro_rules! field {
        ($name:expr) => {
            next_field(&mut lines, $name)
        };
    }
    if body.lines().next() != Some(MAGIC) {
        return Err("not an entry of this format");
    }
    field!("xaifb-elim-cache")?;
    let model: u32 = field!("model")?.parse().map_err(|_| "malformed model")?;
    if model != COST_MODEL_VERSION {
        return Ok(None);
    }
    let effort = Effort::from_name(field!("effort")?).ok_or("unknown effort")?;
    let proof = match field!("proof")? {
        "none" => None,
        "vertex" => Some(Proof::Vertex),
        "edge" => Some(Proof::Edge),
        _ => return Err("unknown proof"),
    };
    let cost: i64 = field!("cost")?.parse().map_err(|_| "malformed cost")?;
    let bound: i64 = field!("bound")?.parse().map_err(|_| "malformed bound")?;
    let count: usize = field!("moves")?
        .parse()
        .map_err(|_| "malformed move count")?;
    if count > body.len() {
        return Err("malformed move count");
    }
    let mut moves = Vec::with_capacity(count);
    for _ in 0..count {
        let line = lines.next().ok_or("truncated")?;
        moves.push(parse_move(line).ok_or("malformed move")?);
    }
    let key_len: usize = field!("key")?.parse().map_err(|_| "malformed key")?;
    let rest: String = lines.collect::<Vec<_>>().join("\n");
    if rest.len() != key_len {
        return Err("malformed key");
    }
    if rest != key {
        return Ok(None);
    }
    Ok(Some(Entry {
        effort,
        proof,
        cost,
        bound,
        moves,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            effort: Effort::Exhaustive,
            proof: Some(Proof::Vertex),
            cost: 42 << 20,
            bound: 40 << 20,
            moves: vec![
                Move::Vertex(3),
                Move::Front(1, 4),
                Move::Back(4, 7),
                Move::Pre(1, 7, 4),
                Move::Post(2, 9, 5),
            ],
        }
    }

    fn quiet() -> Warn {
        Arc::new(|_| {})
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let dir = std::env::temp_dir().join(format!("xaif-elim-cache-unit-{}", std::process::id()));
        let cache = CacheHandle::new(&dir, quiet());
        cache.0.store("tangent 1 2 3", &entry());
        assert_eq!(cache.0.load("tangent 1 2 3"), Some(entry()));
        assert_eq!(cache.0.load("tangent 1 2 4"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_changed_byte_is_caught() {
        let dir = std::env::temp_dir().join(format!("xaif-elim-cache-byte-{}", std::process::id()));
        let cache = CacheHandle::new(&dir, quiet());
        cache.0.store("k", &entry());
        let path = cache.0.path("k");
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.char_indices().step_by(7) {
            let mut bytes = text.clone().into_bytes();
            bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
            let parsed = parse(&bytes, "k");
            assert!(
                !matches!(parsed, Ok(Some(ref e)) if *e != entry()),
                "a change at byte {at} went unnoticed"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
