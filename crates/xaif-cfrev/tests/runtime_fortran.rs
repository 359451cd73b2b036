//! What `--checkpoint-loop` emits compiles against the Fortran run-time
//! (`runtime/`), and the run-time holds every type, kind and rank xaifb
//! lets through (acceptance 5 of the loop-kinds issue):
//!
//! - every `ForLoop` of every fixture, of 40 generated programs and of
//!   every corpus example, marked alone, is transformed; each `oad_revolve_*` call of each output is
//!   written as OpenAD's back end writes it (`call name(args)`, a variable
//!   declared from its XAIF symbol as the back end declares it, a constant
//!   as a literal) and the distinct calls are compiled against the run-time
//!   with `gfortran -Wall -Wextra -std=f2008 -fcheck=all`. The state kinds
//!   found are printed; those of `fixtures/checkpoint/kinds.xaif` must be
//!   among them;
//! - a program generated from the table of the types a snapshot holds
//!   (`xaif_cfrev::runtime::HELD_TYPES`) stores a variable of each type,
//!   kind and rank 0 to 7, overwrites it, restores it inside a real
//!   schedule and finds every value unchanged.
//!
//! Skipped with a reason without gfortran, and the corpus part without the
//! reference material, unless `CI=true`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::runtime::{Holding, HELD_TYPES};
use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_linearize::catalogue::read_catalogues;
use xaif_model::{
    ArgValue, InlinableArg, Program, RoutineBody, StmtKind, Symbol, SymbolIndex, SymbolType,
    VertexKind,
};

/// Every `ForLoop` with a line number: (routine symbol_id, line).
fn for_loops(p: &Program) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for (_, r) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &r.body else {
            continue;
        };
        for v in p.cfgs[*cfg].vertex_ids() {
            if let VertexKind::ForLoop { .. } = p.vertices[v].kind {
                if let Some(line) = p.vertices[v].attrs.int("lineNumber") {
                    out.push((r.symbol_name().to_string(), line));
                }
            }
        }
    }
    out
}

/// The type OpenAD's back end declares symbol `sym` with (gfortran's kind
/// numbers: a WHIRL machine type's size in bytes), or `None` for one it
/// has no intrinsic type for.
fn fortran_type(sym: &Symbol) -> Option<String> {
    let fe = sym.fe_type();
    let sized = |base: &str, default: &str, kinds: &[(&str, u32)]| -> Option<String> {
        if fe.is_empty() {
            return Some(default.to_string());
        }
        kinds
            .iter()
            .find(|(f, _)| *f == fe)
            .map(|(_, k)| format!("{base}({k})"))
    };
    let ints = [
        ("I1", 1),
        ("U1", 1),
        ("I2", 2),
        ("U2", 2),
        ("I4", 4),
        ("U4", 4),
        ("I8", 8),
        ("U8", 8),
    ];
    match sym.ty() {
        SymbolType::Real if sym.is_active() => Some("type(active)".into()),
        SymbolType::Real => sized(
            "real",
            "real(8)",
            &[("F4", 4), ("F8", 8), ("F16", 16), ("FQ", 16)],
        ),
        SymbolType::Integer => sized("integer", "integer", &ints),
        SymbolType::Bool => {
            let logicals = [("L1", 1), ("L2", 2), ("L4", 4), ("L8", 8)];
            let kinds: Vec<(&str, u32)> = ints.iter().chain(&logicals).copied().collect();
            sized("logical", "logical", &kinds)
        }
        SymbolType::Complex => sized(
            "complex",
            "complex",
            &[("C4", 4), ("C8", 8), ("C16", 16), ("CQ", 16)],
        ),
        SymbolType::String | SymbolType::Char => Some("character(len=*)".into()),
        _ => None,
    }
}

/// The run-time calls of one transformation's output, as Fortran.
#[derive(Default)]
struct Calls {
    /// Distinct calls: the body of a subroutine (declarations and the
    /// call) by itself, with one place it came from.
    bodies: BTreeMap<String, String>,
    /// State kinds stored: (type, feType, shape, active).
    kinds: BTreeSet<(String, String, String, bool)>,
    /// Calls seen.
    calls: usize,
}

impl Calls {
    /// Adds the `oad_revolve_*` calls of output `q` (from `origin`).
    fn add(&mut self, q: &Program, origin: &str) -> Result<(), String> {
        let index = SymbolIndex::new(q);
        for (_, stmt) in q.stmts.iter() {
            let StmtKind::InlinableCall(args) = &stmt.kind else {
                continue;
            };
            let name = stmt.attrs.get("subroutine_name").unwrap_or("");
            if !name.starts_with("oad_revolve_") {
                continue;
            }
            self.calls += 1;
            let mut decls = Vec::new();
            let mut actuals = Vec::new();
            for (k, arg) in args.iter().enumerate() {
                let InlinableArg::Argument(a) = arg else {
                    return Err(format!("{origin}: {name}: an argument substitute"));
                };
                match &a.value {
                    ArgValue::Constant(c) => {
                        actuals.push(c.get("value").unwrap_or("?").to_string());
                    }
                    ArgValue::Variable(v) => {
                        let s = v
                            .graph
                            .symbol_ref()
                            .and_then(|r| index.resolve(r))
                            .ok_or_else(|| format!("{origin}: {name}: an unresolved argument"))?;
                        let sym = &q.symbols[s];
                        let ty = fortran_type(sym).ok_or_else(|| {
                            format!(
                                "{origin}: {name}({}): no Fortran type for type {} feType {}",
                                sym.name(),
                                sym.ty().name(),
                                sym.fe_type()
                            )
                        })?;
                        let rank = sym.rank();
                        let shape = if rank == 0 {
                            String::new()
                        } else if sym.bounds.len() == rank {
                            let b: Vec<String> = sym
                                .source_bounds()
                                .iter()
                                .map(|(l, u)| format!("{l}:{u}"))
                                .collect();
                            format!("({})", b.join(", "))
                        } else {
                            format!("({})", vec!["n"; rank].join(", "))
                        };
                        let a = format!("a{}", k + 1);
                        decls.push(format!("    {ty} :: {a}{shape}"));
                        actuals.push(a);
                        if name == "oad_revolve_store" {
                            self.kinds.insert((
                                sym.ty().name().to_string(),
                                sym.fe_type().to_string(),
                                xaif_model::index::SHAPES[rank.min(7)].to_string(),
                                sym.is_active(),
                            ));
                        }
                    }
                }
            }
            let mut body = String::new();
            for d in &decls {
                let _ = writeln!(body, "{d}");
            }
            let _ = writeln!(body, "    call {name}({})", actuals.join(", "));
            self.bodies
                .entry(body)
                .or_insert_with(|| origin.to_string());
        }
        Ok(())
    }

    /// The Fortran source: one subroutine per distinct call.
    fn source(&self) -> String {
        let mut s = String::from("module emitted\n  implicit none\ncontains\n");
        for (k, (body, origin)) in self.bodies.iter().enumerate() {
            let args: Vec<String> = (1..=body.matches(" :: a").count())
                .map(|a| format!("a{a}"))
                .collect();
            let mut params = vec!["n".to_string()];
            params.extend(args);
            let _ = write!(
                s,
                "  ! {origin}\n  subroutine c{k}({})\n    use OAD_active\n    use oad_revolve\n    \
                 integer, intent(in) :: n\n{body}  end subroutine c{k}\n\n",
                params.join(", ")
            );
        }
        s.push_str("end module emitted\n\nprogram main\nend program main\n");
        s
    }
}

/// Transforms `p` with each of its `ForLoop`s marked alone (2 snapshots)
/// and adds the calls of each output to `calls`; returns the refusals.
fn each_loop(
    p: &Program,
    catalogue: &xaif_linearize::Catalogue,
    noninlinable: Option<&xaif_model::NonInlinableCatalogue>,
    base: &AdjointOptions,
    name: &str,
    calls: &mut Calls,
    refusals: &mut Vec<String>,
) -> Result<(), String> {
    for (routine, line) in for_loops(p) {
        let mut options = base.clone();
        options.checkpoint_loops = vec![LoopMark {
            routine: routine.clone(),
            line,
            snapshots: 2,
        }];
        match adjoint(p, catalogue, noninlinable, &options) {
            Ok(result) => {
                let mut q = result.transformed.program;
                q.mark_as_output("");
                calls.add(&q, &format!("{name} {routine}:{line}"))?;
            }
            Err(e) => refusals.push(format!("{name} {routine}:{line}: {e}")),
        }
    }
    Ok(())
}

/// Every `.xaif` front-end program under `fixtures/`.
fn fixture_programs() -> Vec<(String, Program)> {
    let root = xaif_testkit::repo_root().join("fixtures");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "xaif") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|f| {
            let (p, source) = xaif_model::read_program_file(&f).ok()?;
            xaif_model::validate_program(&p, &source).ok()?;
            let name = f.strip_prefix(&root).unwrap().display().to_string();
            Some((name, p))
        })
        .collect()
}

/// The run-time compiled into a scratch directory; `None` without gfortran.
fn runtime(name: &str) -> Option<(xaif_testkit::Scratch, Vec<std::path::PathBuf>)> {
    if !xaif_testkit::fortran::have_gfortran() {
        return None;
    }
    let dir = xaif_testkit::Scratch::new("xaifb-runtime-fortran", name);
    let objects = xaif_testkit::fortran::compile_runtime(dir.path());
    Some((dir, objects))
}

#[test]
fn every_run_time_call_xaifb_emits_compiles_against_the_module() {
    let Some((dir, objects)) = runtime("emitted") else {
        return;
    };
    let mut calls = Calls::default();
    let mut refusals = Vec::new();
    let mut programs = 0;
    for (name, p) in fixture_programs() {
        programs += 1;
        each_loop(
            &p,
            xaif_linearize::builtin(),
            None,
            &AdjointOptions::default(),
            &name,
            &mut calls,
            &mut refusals,
        )
        .unwrap();
    }
    // Generated programs (`xaif_testkit::gen`, with the catalogues the
    // stress campaigns use): arrays of every rank the generator makes.
    let text = r#"<xaifnii:NonInlinableIntrinsicDefinitions xmlns:xaifnii="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics"><xaifnii:DirectAction name="transpose_arr" derivAction="transpose_arr"/><xaifnii:DirectAction name="reshape_arr" derivAction="reshape_arr"/></xaifnii:NonInlinableIntrinsicDefinitions>"#;
    let xaif_model::Document::NonInlinable(direct) = xaif_model::read_str(text, None)
        .expect("a catalogue")
        .document
    else {
        unreachable!("a non-inlinable catalogue")
    };
    for seed in 0..40u64 {
        let text = xaif_testkit::gen::generate(seed, 1 + (seed % 8) as usize);
        let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
        xaif_model::validate_program(&p, &source).unwrap();
        programs += 1;
        each_loop(
            &p,
            xaif_linearize::builtin(),
            Some(&direct),
            &AdjointOptions::default(),
            &format!("generated seed {seed}"),
            &mut calls,
            &mut refusals,
        )
        .unwrap();
    }
    let fixture_kinds = std::mem::take(&mut calls.kinds);
    if let Some(shared) = xaif_testkit::shared_dir() {
        let schema = shared.join("xaif/schema/examples");
        let examples = xaif_interp::corpus::read_index(&shared.join("corpus")).unwrap();
        for ex in examples.iter().filter(|e| e.input(true).is_file()) {
            let Ok((p, source)) = xaif_model::read_program_file(&ex.input(true)) else {
                continue;
            };
            if xaif_model::validate_program(&p, &source).is_err() {
                continue;
            }
            programs += 1;
            let catalogues = read_catalogues(
                &schema.join("inlinable_intrinsics.xaif"),
                ex.options
                    .contains("-N")
                    .then(|| schema.join("noninlinable_intrinsics.xaif"))
                    .as_deref(),
            )
            .unwrap();
            let mut options = AdjointOptions::default();
            options.flatten.per_statement |= ex.options.contains("-S");
            options.zero_locals |= ex.options.contains("-D");
            options.rename |= ex.options.contains("'-r'");
            each_loop(
                &p,
                &catalogues.0,
                catalogues.1.as_ref(),
                &options,
                &ex.name,
                &mut calls,
                &mut refusals,
            )
            .unwrap();
        }
    }
    eprintln!(
        "{programs} programs, {} run-time calls, {} distinct, {} refused loops",
        calls.calls,
        calls.bodies.len(),
        refusals.len()
    );
    eprintln!(
        "state kinds (type, feType, shape, active) of the fixtures and generated programs: \
         {fixture_kinds:?}"
    );
    eprintln!(
        "state kinds (type, feType, shape, active) of the corpus: {:?}",
        calls.kinds
    );
    for r in &refusals {
        eprintln!("refused: {r}");
    }
    // A state kind refused would be a type the generated code and the
    // corpus really have: none is.
    let kinds_refused: Vec<&String> = refusals
        .iter()
        .filter(|r| r.contains("which a snapshot cannot hold"))
        .collect();
    assert!(kinds_refused.is_empty(), "{kinds_refused:#?}");
    let source = dir.join("emitted.f90");
    std::fs::write(&source, calls.source()).unwrap();
    let exe = dir.join("emitted");
    if let Err(e) = xaif_testkit::fortran::compile_program(dir.path(), &objects, &source, &exe) {
        panic!("the emitted calls do not compile against runtime/:\n{e}");
    }
    // The kinds of fixtures/checkpoint/kinds.xaif: integer(8), real(4)
    // vector, logical, string, integer(2) rank 7, active.
    for (ty, fe, shape, active) in [
        ("integer", "I8", "scalar", false),
        ("real", "F4", "vector", false),
        ("bool", "I4", "scalar", false),
        ("string", "UNK", "scalar", false),
        ("integer", "I2", "seven_tensor", false),
        ("real", "F8", "scalar", true),
        ("real", "F8", "vector", true),
    ] {
        let kind = (ty.to_string(), fe.to_string(), shape.to_string(), active);
        assert!(fixture_kinds.contains(&kind), "{kind:?} not stored");
    }
    for needed in [
        "oad_revolve_begin",
        "oad_revolve_resume",
        "oad_revolve_next",
        "oad_revolve_store",
        "oad_revolve_restore",
    ] {
        let call = format!("call {needed}(");
        assert!(
            calls.bodies.keys().any(|b| b.contains(&call)),
            "no {needed}"
        );
    }
}

/// `x` of rank `rank`: the declared extents (rank 7 kept small).
fn extents(rank: usize) -> String {
    if rank == 0 {
        return String::new();
    }
    let e: Vec<&str> = (0..rank)
        .map(|k| if k % 2 == 0 || rank < 4 { "2" } else { "1" })
        .collect();
    format!("({})", e.join(", "))
}

/// Fortran statements giving `v` (of type `h`, rank `rank`) values from
/// seed `seed` (0: others), and an expression true when it has them.
fn values(h: &xaif_cfrev::runtime::HeldType, v: &str, seed: u32) -> (String, String) {
    let kind = h.fortran.split(['(', ')']).nth(1).unwrap_or("").to_string();
    let gen = |expr: &str| format!("reshape([({expr}, &\n         j = 1, size({v}))], shape({v}))");
    let s = seed;
    let (rhs, target) = match h.holding {
        Holding::Active => (gen(&format!("real(j * {s}, real64) / 7")), format!("{v}%v")),
        Holding::Chars => (
            gen(&format!(
                "achar(64 + mod(j * {s}, 26)) // repeat('z', 998) // achar(97 + mod(j + {s}, 26))"
            )),
            v.to_string(),
        ),
        Holding::Value => {
            let e = if h.fortran.starts_with("integer") {
                format!("int(mod(j * 37 * {s}, 100) - 5, {kind})")
            } else if h.fortran.starts_with("real") {
                format!("real(j * {s}, {kind}) / 3")
            } else if h.fortran.starts_with("complex") {
                format!("cmplx(j * {s}, -j, {kind}) / 3")
            } else {
                format!("logical(mod(j + {s}, 3) == 0, {kind})")
            };
            (gen(&e), v.to_string())
        }
    };
    let compare = if h.fortran.starts_with("logical") {
        format!("all({target} .eqv. {rhs})")
    } else {
        format!("all({target} == {rhs})")
    };
    (format!("{target} = {rhs}"), compare)
}

#[test]
fn every_type_kind_and_rank_the_table_names_round_trips() {
    let Some((dir, objects)) = runtime("table") else {
        return;
    };
    let mut decls = String::new();
    let mut fill = String::new();
    let mut scramble = String::new();
    let mut store = String::new();
    let mut restore = Vec::new();
    let mut check = String::new();
    let mut count = 0;
    for h in HELD_TYPES {
        for rank in 0..=7 {
            count += 1;
            let v = format!("{}_{rank}", h.tag);
            // A scalar as a rank-1 array of one element for the
            // constructor, then its element: `x(1)`.
            let (decl_shape, var) = if rank == 0 {
                ("(1)".to_string(), format!("{v}(1)"))
            } else {
                (extents(rank), v.clone())
            };
            let ty = if h.holding == Holding::Chars {
                "character(len=1000)"
            } else {
                h.fortran
            };
            let _ = writeln!(decls, "  {ty} :: {v}{decl_shape}");
            let (set, same) = values(h, &v, 1);
            let (other, _) = values(h, &v, 2);
            let _ = writeln!(fill, "  {set}");
            let _ = writeln!(scramble, "    {other}");
            let _ = writeln!(store, "      call oad_revolve_store({var})");
            restore.push(format!("      call oad_revolve_restore({var})"));
            let _ = writeln!(
                check,
                "  if (.not. {same}) &\n       write (*, '(A)') 'ERROR {} rank {rank}'",
                h.fortran
            );
        }
    }
    restore.reverse();
    let source = format!(
        "program table\n  use iso_fortran_env\n  use OAD_rev\n  use OAD_active\n  use oad_revolve\n  \
         implicit none\n  integer :: j, a, c, restores\n{decls}{fill}  our_rev_mode = modeType(tape=.true.)\n  \
         call oad_revolve_begin(2, 1, 5)\n  do\n    call oad_revolve_next(a, c)\n    \
         if (a == oad_revolve_action_done) exit\n    if (a == oad_revolve_action_store) then\n{store}    \
         end if\n{scramble}  end do\n  call oad_revolve_resume(5)\n  restores = 0\n  do\n    \
         call oad_revolve_next(a, c)\n    if (a == oad_revolve_action_done) exit\n    \
         if (a == oad_revolve_action_restore) then\n      restores = restores + 1\n{}\n    \
         end if\n  end do\n{check}  if (restores /= 1) write (*, '(A)') 'ERROR no restore'\n  \
         write (*, '(A,I0)') 'checked ', {count}\nend program table\n",
        restore.join("\n")
    );
    let path = dir.join("table.f90");
    std::fs::write(&path, source).unwrap();
    let exe = dir.join("table");
    if let Err(e) = xaif_testkit::fortran::compile_program(dir.path(), &objects, &path, &exe) {
        panic!("the table program does not compile:\n{e}");
    }
    let out = Command::new(Path::new(&exe)).output().unwrap();
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{got}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!got.contains("ERROR"), "{got}");
    assert_eq!(got.trim(), format!("checked {}", HELD_TYPES.len() * 8));
}
