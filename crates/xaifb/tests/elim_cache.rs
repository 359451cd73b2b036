//! The elimination cache end to end (`--elim-cache DIR`,
//! `$XAIFB_ELIM_CACHE`): an exhaustive run fills it, a later default run
//! of the same program writes the exhaustive run's bytes; a corrupt entry,
//! an entry of another cost model and two writers at once never change
//! what the driver writes.
//!
//! The program is a realistic generated one (`xaif_testkit::model`) with a
//! graph of 13 intermediate vertices, on which the exhaustive effort finds
//! (and proves) an adjoint elimination one operation cheaper than the
//! default effort's, in a few seconds; the test checks that difference
//! first, so that reading the cache shows in the bytes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use xaif_testkit::model::program;
use xaif_testkit::scale::Shape;
use xaif_testkit::Scratch;

const SHAPE: Shape = Shape {
    routines: 1,
    statements: 30,
    seed: 16,
};

/// `xaifb adjoint INPUT ARGS… -o OUT` with `$XAIFB_ELIM_CACHE` as given
/// (unset otherwise); the process's output, and the file's bytes when it
/// succeeded.
fn adjoint(input: &Path, args: &[&str], env_cache: Option<&Path>, out: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xaifb"));
    c.arg("adjoint").arg(input).args(args).arg("-o").arg(out);
    c.env_remove("XAIFB_ELIM_CACHE");
    if let Some(dir) = env_cache {
        c.env("XAIFB_ELIM_CACHE", dir);
    }
    c.output().unwrap()
}

fn ok(o: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{what}: {stderr}");
    stderr
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The program, a cache filled by one exhaustive run, the exhaustive
/// output and the default output without a cache, made once for all
/// tests of this file (the exhaustive run takes seconds).
struct Filled {
    _dir: Scratch,
    input: PathBuf,
    cache: PathBuf,
    exhaustive: Vec<u8>,
    default: Vec<u8>,
}

fn filled() -> &'static Filled {
    static FILLED: OnceLock<Filled> = OnceLock::new();
    FILLED.get_or_init(|| {
        let dir = Scratch::new("xaifb-elim-cache", "filled");
        let input = dir.join("model.xaif");
        std::fs::write(&input, program(&SHAPE)).unwrap();
        let cache = dir.join("cache");
        let x = dir.join("exhaustive.xaif");
        let o = adjoint(
            &input,
            &["--effort", "exhaustive", "--elim-cache", arg(&cache)],
            None,
            &x,
        );
        let stderr = ok(&o, "exhaustive");
        assert!(!stderr.contains("warning"), "{stderr}");
        let d = dir.join("default.xaif");
        ok(&adjoint(&input, &[], None, &d), "default");
        let (exhaustive, default) = (std::fs::read(&x).unwrap(), std::fs::read(&d).unwrap());
        assert_ne!(
            exhaustive, default,
            "the exhaustive effort no longer finds anything the default misses on this program: \
             choose another one, or the tests below show nothing"
        );
        Filled {
            _dir: dir,
            input,
            cache,
            exhaustive,
            default,
        }
    })
}

/// A copy of the filled cache, for a test that changes it.
fn copy_cache(from: &Path, to: &Path) {
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
}

/// The files under `dir`, in name order.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_default_run_with_the_cache_writes_the_exhaustive_bytes() {
    let f = filled();
    let dir = Scratch::new("xaifb-elim-cache", "reuse");
    let cache = dir.join("cache");
    copy_cache(&f.cache, &cache);
    let before: Vec<(PathBuf, Vec<u8>)> = walk(&cache)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    assert!(!before.is_empty());
    // By the flag, and by the environment variable (as OpenAD's scripts
    // call the driver).
    let out = dir.join("flag.xaif");
    let stderr = ok(
        &adjoint(&f.input, &["--elim-cache", arg(&cache)], None, &out),
        "default with --elim-cache",
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(std::fs::read(&out).unwrap() == f.exhaustive);
    let out = dir.join("env.xaif");
    ok(
        &adjoint(&f.input, &[], Some(&cache), &out),
        "default with XAIFB_ELIM_CACHE",
    );
    assert!(std::fs::read(&out).unwrap() == f.exhaustive);
    // A default run never replaces an exhaustive entry.
    for (p, b) in before {
        assert!(std::fs::read(&p).unwrap() == b, "{} changed", p.display());
    }
    // An empty variable means no cache.
    let out = dir.join("empty.xaif");
    ok(
        &adjoint(&f.input, &[], Some(Path::new("")), &out),
        "default with an empty XAIFB_ELIM_CACHE",
    );
    assert!(std::fs::read(&out).unwrap() == f.default);
}

/// Every kind of damage to an entry: the run warns once per entry, names
/// the file, exits 0 and writes what the default effort finds without a
/// cache; the entry is replaced by that result.
#[test]
fn a_corrupt_entry_is_reported_and_ignored() {
    let f = filled();
    type Damage = fn(&[u8]) -> Vec<u8>;
    let damages: [(&str, Damage); 4] = [
        ("a changed byte", |b| {
            let mut b = b.to_vec();
            let at = b.len() / 2;
            b[at] ^= 0x01;
            b
        }),
        ("truncated", |b| b[..b.len() / 3].to_vec()),
        ("empty", |_| Vec::new()),
        ("not text", |b| {
            let mut b = b.to_vec();
            b[0] = 0xff;
            b[1] = 0xfe;
            b
        }),
    ];
    for (what, damage) in damages {
        let dir = Scratch::new("xaifb-elim-cache", "corrupt");
        let cache = dir.join("cache");
        copy_cache(&f.cache, &cache);
        let files = walk(&cache);
        for p in &files {
            let b = std::fs::read(p).unwrap();
            std::fs::write(p, damage(&b)).unwrap();
        }
        let out = dir.join("out.xaif");
        let o = adjoint(&f.input, &["--elim-cache", arg(&cache)], None, &out);
        let stderr = ok(&o, what);
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), files.len(), "{what}: {stderr}");
        for p in &files {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains(name) && w.contains("the entry is ignored")),
                "{what}: {stderr}"
            );
        }
        assert!(std::fs::read(&out).unwrap() == f.default, "{what}");
        // Replaced: read again without a warning, the same bytes.
        let again = dir.join("again.xaif");
        let stderr = ok(
            &adjoint(&f.input, &["--elim-cache", arg(&cache)], None, &again),
            what,
        );
        assert!(stderr.is_empty(), "{what}: {stderr}");
        assert!(std::fs::read(&again).unwrap() == f.default, "{what}");
    }
}

/// Entries of another cost model (the exhaustive adjoint entries of the
/// default goal, read by a run that minimizes operations, `-M 0`, and by
/// a tangent run) are never used: those runs write what they write
/// without the cache, silently, even when another model's entry sits
/// under their own entries' names.
#[test]
fn entries_of_another_cost_model_are_not_used() {
    let f = filled();
    let dir = Scratch::new("xaifb-elim-cache", "model");
    let cache = dir.join("cache");
    copy_cache(&f.cache, &cache);
    let plain = dir.join("plain.xaif");
    ok(&adjoint(&f.input, &["-M", "0"], None, &plain), "-M 0");
    let plain = std::fs::read(&plain).unwrap();
    let out = dir.join("out.xaif");
    let stderr = ok(
        &adjoint(
            &f.input,
            &["-M", "0", "--elim-cache", arg(&cache)],
            None,
            &out,
        ),
        "-M 0 with the cache",
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(std::fs::read(&out).unwrap() == plain);
    // Now the -M 0 run's own entries are in the cache beside the others:
    // put the other model's entries under their names.
    let theirs = walk(&f.cache);
    let ours: Vec<PathBuf> = walk(&cache)
        .into_iter()
        .filter(|p| !theirs.iter().any(|t| t.file_name() == p.file_name()))
        .collect();
    assert!(!ours.is_empty());
    for (k, p) in ours.iter().enumerate() {
        std::fs::copy(&theirs[k % theirs.len()], p).unwrap();
    }
    let stderr = ok(
        &adjoint(
            &f.input,
            &["-M", "0", "--elim-cache", arg(&cache)],
            None,
            &out,
        ),
        "-M 0 with other entries",
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(std::fs::read(&out).unwrap() == plain);
    // The tangent transformation (another propagation, another model).
    let tangent = |args: &[&str], out: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_xaifb"))
            .arg("tangent")
            .arg(&f.input)
            .args(args)
            .arg("-o")
            .arg(out)
            .env_remove("XAIFB_ELIM_CACHE")
            .output()
            .unwrap();
        ok(&o, "tangent");
        std::fs::read(out).unwrap()
    };
    let t_plain = tangent(&[], &dir.join("t-plain.xaif"));
    let t_cache = tangent(&["--elim-cache", arg(&cache)], &dir.join("t-cache.xaif"));
    assert!(t_plain == t_cache);
}

/// Two exhaustive writers and two default readers of one cache at once:
/// every run succeeds without a warning and writes the bytes it writes
/// alone (a default run the exhaustive bytes or, before an entry is
/// there, its own), no temporary file is left, and the cache then serves
/// the exhaustive result.
#[test]
fn writers_at_once_leave_a_cache_that_serves_the_exhaustive_result() {
    let f = filled();
    let dir = Scratch::new("xaifb-elim-cache", "writers");
    let cache = dir.join("cache");
    let mut children = Vec::new();
    for k in 0..4 {
        let out = dir.join(format!("out-{k}.xaif"));
        let mut c = Command::new(env!("CARGO_BIN_EXE_xaifb"));
        c.arg("adjoint")
            .arg(&f.input)
            .arg("--elim-cache")
            .arg(&cache);
        if k % 2 == 0 {
            c.args(["--effort", "exhaustive"]);
        }
        c.arg("-o").arg(&out).env_remove("XAIFB_ELIM_CACHE");
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        children.push((k, out, c.spawn().unwrap()));
    }
    for (k, out, child) in children {
        let o = child.wait_with_output().unwrap();
        let stderr = ok(&o, &format!("run {k}"));
        assert!(stderr.is_empty(), "run {k}: {stderr}");
        let bytes = std::fs::read(&out).unwrap();
        if k % 2 == 0 {
            assert!(bytes == f.exhaustive, "exhaustive run {k}");
        } else {
            assert!(
                bytes == f.exhaustive || bytes == f.default,
                "default run {k}"
            );
        }
    }
    let files = walk(&cache);
    assert!(!files.is_empty());
    for p in &files {
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(!name.starts_with(".tmp"), "{} left", p.display());
    }
    let out = dir.join("after.xaif");
    let stderr = ok(
        &adjoint(&f.input, &["--elim-cache", arg(&cache)], None, &out),
        "after",
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert!(std::fs::read(&out).unwrap() == f.exhaustive);
}
