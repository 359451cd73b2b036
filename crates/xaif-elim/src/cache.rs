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
    /// Whether a failure to read was reported (once per cache).
    read_warned: AtomicBool,
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
            read_warned: AtomicBool::new(false),
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
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return None
            }
            Err(e) => {
                if !self.read_warned.swap(true, Ordering::Relaxed) {
                    (self.warn)(&format!(
                        "warning: elimination cache: {}: cannot be read ({e}); going on without it",
                        path.display()
                    ));
                }
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
    use crate::graph::{Label, Lcg, VarId, VertexId, VertexKind};
    use crate::{optimize, Config, PropagationMode};
    use std::sync::Mutex;

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

    /// A fresh directory under the system's temporary one.
    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xaif-elim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A cache whose warnings are collected.
    fn collecting(dir: &Path) -> (CacheHandle, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let warn: Warn = Arc::new(move |t: &str| sink.lock().unwrap().push(t.to_string()));
        (CacheHandle::new(dir, warn), seen)
    }

    /// A graph of `n` intermediates in layers between four independents
    /// and three dependents, with unit, constant and variable labels from
    /// a fixed generator: large enough to be cached, small enough to be
    /// searched quickly.
    fn medium(seed: u64, n: usize) -> Lcg {
        let mut rng = crate::chain::Rng::new(seed);
        let mut g = Lcg::new();
        let x: Vec<VertexId> = (0..4)
            .map(|_| g.add_vertex(VertexKind::Independent))
            .collect();
        let mut below = x.clone();
        let mut var = 0;
        let mut label = |rng: &mut crate::chain::Rng| match rng.next() % 6 {
            0 | 1 => Label::Unit,
            2 => Label::Constant(2.0),
            _ => {
                var += 1;
                Label::Variable(VarId(var))
            }
        };
        let mut all = Vec::new();
        for _ in 0..n {
            let v = g.add_vertex(VertexKind::Intermediate);
            let a = below[(rng.next() % below.len() as u64) as usize];
            let b = below[(rng.next() % below.len() as u64) as usize];
            g.add_edge(a, v, label(&mut rng)).unwrap();
            if b != a {
                g.add_edge(b, v, label(&mut rng)).unwrap();
            }
            below.push(v);
            all.push(v);
        }
        for k in 0..3 {
            let y = g.add_vertex(VertexKind::Dependent);
            for &v in all.iter().rev().skip(k).step_by(3).take(3) {
                g.add_edge(v, y, label(&mut rng)).unwrap();
            }
        }
        g
    }

    fn config(effort: Effort, cache: Option<&CacheHandle>) -> Config {
        let mut c = Config::default();
        c.search.effort = effort;
        c.search.cache = cache.cloned();
        c
    }

    /// The file of the only entry in a cache directory.
    fn only_entry(dir: &Path) -> PathBuf {
        let sub = dir.join(format!("v{COST_MODEL_VERSION}"));
        let files: Vec<PathBuf> = std::fs::read_dir(&sub)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    /// Rewrites the entry of a file with `change` applied (a valid
    /// checksum over the changed text).
    fn rewrite(path: &Path, change: impl Fn(&mut Entry)) {
        let text = std::fs::read_to_string(path).unwrap();
        let key_at = text.find("\nkey ").unwrap() + 1;
        let key_line_end = key_at + text[key_at..].find('\n').unwrap() + 1;
        let end_at = text.trim_end_matches('\n').rfind('\n').unwrap() + 1;
        let key = &text[key_line_end..end_at - 1];
        let mut e = parse(text.as_bytes(), key).unwrap().unwrap();
        change(&mut e);
        let (cache, _) = collecting(Path::new("unused"));
        let tmp = temp_dir("rewrite");
        let handle = CacheHandle::new(&tmp, Arc::clone(&cache.0.warn));
        handle.0.store(key, &e);
        std::fs::copy(only_entry(&tmp), path).unwrap();
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let dir = temp_dir("roundtrip");
        let (cache, warned) = collecting(&dir);
        cache.0.store("tangent 1 2 3", &entry());
        assert_eq!(cache.0.load("tangent 1 2 3"), Some(entry()));
        assert_eq!(cache.0.load("tangent 1 2 4"), None);
        assert!(warned.lock().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_changed_byte_is_caught() {
        let dir = temp_dir("byte");
        let (cache, _) = collecting(&dir);
        cache.0.store("k", &entry());
        let text = std::fs::read_to_string(cache.0.path("k")).unwrap();
        for at in 0..text.len() {
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

    /// The default effort with a cache gives what it gives without, on
    /// the run that fills the cache and on the run that reads it (which
    /// searches nothing).
    #[test]
    fn the_cache_holds_what_the_default_effort_finds() {
        let dir = temp_dir("default");
        let (cache, warned) = collecting(&dir);
        for seed in 0..6 {
            let g = medium(seed, 14);
            for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
                let plain = optimize(&g, &config(Effort::Default, None), mode).unwrap();
                let first = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
                let second = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
                assert_eq!(first.selection, plain.selection, "seed {seed} {mode:?}");
                assert_eq!(second.selection, plain.selection, "seed {seed} {mode:?}");
                assert_eq!(second.report.found_by, "cache");
                assert_eq!(second.report.cost, plain.report.cost);
            }
        }
        assert!(warned.lock().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An exhaustive result in the cache is what a later default run
    /// writes; a max run does not take a default entry, and replaces it.
    #[test]
    fn an_exhaustive_entry_serves_the_default_effort() {
        let dir = temp_dir("exhaustive");
        let (cache, warned) = collecting(&dir);
        let g = medium(7, 12);
        let mode = PropagationMode::Tangent;
        let exhaustive = optimize(&g, &config(Effort::Exhaustive, Some(&cache)), mode).unwrap();
        let default = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
        assert_eq!(default.selection, exhaustive.selection);
        assert_eq!(default.report.found_by, "cache");
        assert_eq!(default.report.proof, exhaustive.report.proof);
        let plain = optimize(&g, &config(Effort::Default, None), mode).unwrap();
        assert!(exhaustive.report.cost <= plain.report.cost);
        // A default entry does not serve a max run.
        let dir2 = temp_dir("max");
        let (cache2, _) = collecting(&dir2);
        optimize(&g, &config(Effort::Default, Some(&cache2)), mode).unwrap();
        let max = optimize(&g, &config(Effort::Max, Some(&cache2)), mode).unwrap();
        assert_ne!(max.report.found_by, "cache");
        assert!(warned.lock().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&dir2);
    }

    /// A corrupt entry (bytes changed, a move that is not possible, a
    /// cost that is not the one recorded) is reported and ignored: the
    /// result is the one found without the cache, and the entry is
    /// replaced by it.
    #[test]
    fn a_corrupt_entry_is_reported_and_ignored() {
        let g = medium(3, 14);
        let mode = PropagationMode::Adjoint;
        let plain = optimize(&g, &config(Effort::Default, None), mode).unwrap();
        type Corruption = Box<dyn Fn(&Path)>;
        let corruptions: Vec<(&str, Corruption)> = vec![
            (
                "checksum",
                Box::new(|p: &Path| {
                    let mut b = std::fs::read(p).unwrap();
                    let at = b.len() / 2;
                    b[at] ^= 0x01;
                    std::fs::write(p, b).unwrap();
                }),
            ),
            (
                "truncated",
                Box::new(|p: &Path| {
                    let b = std::fs::read(p).unwrap();
                    std::fs::write(p, &b[..b.len() / 3]).unwrap();
                }),
            ),
            (
                "not possible",
                Box::new(|p: &Path| rewrite(p, |e| e.moves.insert(0, Move::Front(0, 0)))),
            ),
            (
                "cost",
                Box::new(|p: &Path| rewrite(p, |e| e.cost -= 1 << 20)),
            ),
            (
                "cost",
                Box::new(|p: &Path| {
                    rewrite(p, |e| {
                        e.moves.clear();
                        e.effort = Effort::Exhaustive;
                    })
                }),
            ),
        ];
        for (what, corrupt) in corruptions {
            let dir = temp_dir("corrupt");
            let (cache, warned) = collecting(&dir);
            optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
            let file = only_entry(&dir);
            corrupt(&file);
            let again = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
            assert_eq!(again.selection, plain.selection, "{what}");
            assert_ne!(again.report.found_by, "cache", "{what}");
            let warnings = warned.lock().unwrap().clone();
            assert_eq!(warnings.len(), 1, "{what}: {warnings:?}");
            assert!(
                warnings[0].contains("the entry is ignored"),
                "{what}: {warnings:?}"
            );
            // Replaced by the good result: read without a warning.
            let third = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
            assert_eq!(third.report.found_by, "cache", "{what}");
            assert_eq!(warned.lock().unwrap().len(), 1, "{what}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// An entry of another cost model version, or of another
    /// configuration, is another key: not used, no warning.
    #[test]
    fn entries_of_another_model_or_configuration_are_not_used() {
        let g = medium(5, 14);
        let mode = PropagationMode::Tangent;
        let dir = temp_dir("version");
        let (cache, warned) = collecting(&dir);
        optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
        let file = only_entry(&dir);
        // The same entry, recorded under another version of the model
        // (the checksum made right).
        let text = std::fs::read_to_string(&file).unwrap();
        let body_end = text.trim_end_matches('\n').rfind('\n').unwrap() + 1;
        let body = text[..body_end].replace(
            &format!("model {COST_MODEL_VERSION}\n"),
            &format!("model {}\n", COST_MODEL_VERSION + 1),
        );
        let (a, b) = hash128(body.as_bytes());
        std::fs::write(&file, format!("{body}end {a:016x}{b:016x}\n")).unwrap();
        let again = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
        assert_ne!(again.report.found_by, "cache");
        // Another configuration (the operations metric) misses.
        let mut other = config(Effort::Default, Some(&cache));
        other.search.seed = 99;
        let third = optimize(&g, &other, mode).unwrap();
        assert_ne!(third.report.found_by, "cache");
        assert!(
            warned.lock().unwrap().is_empty(),
            "{:?}",
            warned.lock().unwrap()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Writers of the same keys at once, with readers among them: every
    /// read finds a whole entry or none, nothing is reported, no
    /// temporary file is left, and the entry in the end is valid.
    #[test]
    fn writers_at_once_leave_whole_entries() {
        let dir = temp_dir("writers");
        let (cache, warned) = collecting(&dir);
        let g = medium(11, 14);
        let mode = PropagationMode::Adjoint;
        let plain = optimize(&g, &config(Effort::Default, None), mode).unwrap();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (cache, g, plain) = (&cache, &g, &plain);
                s.spawn(move || {
                    for k in 0..12 {
                        let o = optimize(g, &config(Effort::Default, Some(cache)), mode).unwrap();
                        assert_eq!(o.selection, plain.selection);
                        // Direct writes of other keys, interleaved.
                        let mut e = entry();
                        e.cost = (t * 100 + k) as i64;
                        cache.0.store("shared key", &e);
                        let read = cache.0.load("shared key").expect("a whole entry");
                        assert_eq!(read.moves, entry().moves);
                    }
                });
            }
        });
        assert!(
            warned.lock().unwrap().is_empty(),
            "{:?}",
            warned.lock().unwrap()
        );
        let sub = dir.join(format!("v{COST_MODEL_VERSION}"));
        let names: Vec<String> = std::fs::read_dir(&sub)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().all(|n| !n.starts_with(".tmp")));
        let last = optimize(&g, &config(Effort::Default, Some(&cache)), mode).unwrap();
        assert_eq!(last.report.found_by, "cache");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A directory that cannot be written is reported once and the
    /// results are those without a cache.
    #[test]
    fn an_unwritable_cache_is_reported_once() {
        let dir = temp_dir("unwritable");
        std::fs::write(&dir, "a file, not a directory").unwrap();
        let (cache, warned) = collecting(&dir);
        for seed in 0..3 {
            let g = medium(seed, 12);
            let plain =
                optimize(&g, &config(Effort::Default, None), PropagationMode::Tangent).unwrap();
            let with = optimize(
                &g,
                &config(Effort::Default, Some(&cache)),
                PropagationMode::Tangent,
            )
            .unwrap();
            assert_eq!(with.selection, plain.selection);
        }
        let warnings = warned.lock().unwrap().clone();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("cannot write"));
        let _ = std::fs::remove_file(&dir);
    }
}
