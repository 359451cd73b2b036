//! Three campaign classes of `xaifb run` (issue 26, section 2; issue 34,
//! section 4): every kind of output xaifb writes run in every run mode, the
//! forms the reference engine writes of them (without xaifb's marks) in
//! every run mode, and odd numeric flags.
//!
//! A mode that cannot execute a kind must refuse it; a mode that can must
//! print a complete Jacobian of finite numbers or a well-formed trace, or
//! fail with a located error; `-f` adjoint output must give the joint
//! Jacobian of the same program's stack-ordered adjoint; flags that give
//! no derivative (no independents or dependents, a divided-difference step
//! outside the documented window) must be refused.

use std::path::{Path, PathBuf};

use super::mutate::Rng;
use super::{check, exec, s, End, Seed, Shared};

/// A kind of file a mutant is turned into.
struct Kind {
    /// Its name in reports.
    name: &'static str,
    /// The subcommand and flags that write it (`None`: the mutant itself).
    how: Option<&'static [&'static str]>,
    /// The run modes that execute it (`fd` is `--fd`).
    runs_in: &'static [&'static str],
}

/// Every kind of output xaifb writes, and the front end's.
const KINDS: [Kind; 7] = [
    Kind {
        name: "front end",
        how: None,
        runs_in: &["plain", "fd"],
    },
    Kind {
        name: "tangent",
        how: Some(&["tangent"]),
        runs_in: &["plain", "fd", "tangent"],
    },
    Kind {
        name: "adjoint",
        how: Some(&["adjoint"]),
        runs_in: &["plain", "fd", "split", "joint"],
    },
    Kind {
        name: "adjoint -f",
        how: Some(&["adjoint", "-f"]),
        runs_in: &["plain", "fd", "split", "joint"],
    },
    Kind {
        name: "trace",
        how: Some(&["trace"]),
        runs_in: &["plain", "fd", "trace"],
    },
    Kind {
        name: "typechange",
        how: Some(&["typechange"]),
        runs_in: &["plain", "fd"],
    },
    Kind {
        name: "passivated",
        how: Some(&["analyze", "--passivate"]),
        runs_in: &["plain", "fd"],
    },
];

/// The run modes.
const MODES: [&str; 6] = ["plain", "fd", "tangent", "split", "joint", "trace"];

/// Writes `kind` of `input` into `cdir/out.xaif` (checked like every
/// command); `None` when the mutant is refused.
fn make(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    input: &Path,
    how: &[&str],
    cdir: &Path,
) -> Option<PathBuf> {
    let out = cdir.join("out.xaif");
    let mut args: Vec<String> = how.iter().map(|a| a.to_string()).collect();
    if how[0] == "analyze" {
        args.insert(1, s(input));
        args.push("out.xaif".into());
    } else {
        args.extend([
            "-c".into(),
            s(&sh.catalogue),
            "-i".into(),
            s(input),
            "-o".into(),
            "out.xaif".into(),
        ]);
    }
    let e = exec(sh.cfg, cdir, &args);
    let name = format!("kinds: write {} output", how.join(" "));
    let ok = check(
        sh,
        k,
        kinds,
        &name,
        &e,
        &[input],
        &[0, 1],
        cdir,
        &["out.xaif"],
        &[input],
        &args,
    );
    (ok == Some(true)).then_some(out)
}

/// The arguments that run `file` in `mode`, its output to `out.txt`.
fn run_args(file: &Path, mode: &str, sizes: &[String]) -> Vec<String> {
    let mut args = vec!["run".to_string(), s(file)];
    if mode == "fd" {
        args.push("--fd".into());
    } else {
        args.extend(["--mode".into(), mode.into()]);
    }
    args.extend(["-o".into(), "out.txt".into()]);
    args.extend(sizes.iter().cloned());
    args
}

/// Why a successful run's output is no result, if it is not one: a
/// Jacobian that is empty or has a non-finite entry, or a trace that is
/// not well-formed XML.
fn bad_result(mode: &str, text: &str) -> Option<String> {
    match mode {
        "trace" => crate::infoset(text.as_bytes())
            .err()
            .map(|e| format!("ill-formed trace records: {e}")),
        "plain" => None,
        _ => {
            let entries: Vec<&str> = text
                .lines()
                .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim()))
                .collect();
            if entries.is_empty() {
                Some("an empty Jacobian".into())
            } else {
                entries
                    .iter()
                    .find(|v| v.contains("NaN") || v.contains("Infinity"))
                    .map(|v| format!("a non-finite Jacobian entry {v}"))
            }
        }
    }
}

/// Class "every output kind in every run mode": the mutant is written as
/// one kind of output (at random, round-tripped half of the time) and run
/// in every mode.
pub(super) fn every_kind_in_every_mode(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    sizes: &[String],
    rng: &mut Rng,
) {
    let Kind {
        name: kind,
        how,
        runs_in,
    } = rng.pick(&KINDS);
    let (kind, how, runs_in) = (*kind, *how, *runs_in);
    let base = dir.join("kinds");
    let file = match how {
        None => input.to_path_buf(),
        Some(how) => match make(sh, k, kinds, input, how, &base.join("make")) {
            Some(f) => f,
            None => return,
        },
    };
    let file = if rng.chance(0.5) {
        let cdir = base.join("roundtrip");
        let args = vec!["roundtrip".into(), s(&file), "-o".into(), "out.xaif".into()];
        let e = exec(sh.cfg, &cdir, &args);
        let ok = check(
            sh,
            k,
            kinds,
            &format!("kinds: roundtrip {kind} output"),
            &e,
            &[&file],
            &[0, 1],
            &cdir,
            &["out.xaif"],
            &[input],
            &args,
        );
        if ok != Some(true) {
            return;
        }
        cdir.join("out.xaif")
    } else {
        file
    };
    let mut joint = None;
    for mode in MODES {
        let cdir = base.join(format!("run-{mode}"));
        let args = run_args(&file, mode, sizes);
        let e = exec(sh.cfg, &cdir, &args);
        let name = format!("kinds: run {mode} on {kind} output");
        let ok = check(
            sh,
            k,
            kinds,
            &name,
            &e,
            &[&file],
            &[0, 1],
            &cdir,
            &["out.txt"],
            &[input, &file],
            &args,
        );
        if ok != Some(true) {
            continue;
        }
        let finding = if !runs_in.contains(&mode) {
            Some(format!("{kind} output ran in {mode} mode with exit 0"))
        } else {
            let text = std::fs::read_to_string(cdir.join("out.txt")).unwrap_or_default();
            bad_result(mode, &text)
        };
        if let Some(detail) = finding {
            sh.finding(
                "silent wrong number: run prints what is not the program's result",
                &name,
                Some(k),
                kinds,
                &detail,
                &[input, &file],
                &args,
            );
        } else if mode == "joint" {
            joint = Some(cdir.join("out.txt"));
        }
    }
    if let (Some(fifo), "adjoint -f") = (joint, kind) {
        let name = "kinds: run joint on adjoint -f output";
        same_as_stack_order(sh, k, kinds, name, input, &fifo, sizes, &base);
    }
}

/// A form of an xaifb output that the reference engine writes (or an
/// edited file), made without the reference engine
/// ([`crate::reference`]).
struct RefForm {
    /// Its name in reports.
    name: &'static str,
    /// The subcommand and flags that write the xaifb output it is made of.
    how: &'static [&'static str],
    /// Makes the form from the output's text (`None`: the output has
    /// nothing the form changes).
    form: fn(&str) -> Option<String>,
    /// The run modes that execute it.
    runs_in: &'static [&'static str],
    /// Whether joint mode may refuse it (restores an edited file orders
    /// so that the two disciplines may both misfit).
    joint_may_refuse: bool,
}

/// The reference engine's forms: its `-f` adjoint (restores in store
/// order, no mark), made from the stack form or from xaifb's `-f` output;
/// the same with other attributes on the restores' references; its
/// type-change output (no mark); and edited adjoints whose restores
/// follow neither order, unmarked or marked to restore in store order.
const REF_FORMS: [RefForm; 6] = [
    RefForm {
        name: "reference adjoint -f",
        how: &["adjoint"],
        form: crate::reference::store_order_form,
        runs_in: &["plain", "fd", "split", "joint"],
        joint_may_refuse: false,
    },
    RefForm {
        name: "xaifb adjoint -f unmarked",
        how: &["adjoint", "-f"],
        form: |t| {
            let u = crate::reference::unmarked(t);
            (u != t).then_some(u)
        },
        runs_in: &["plain", "fd", "split", "joint"],
        joint_may_refuse: false,
    },
    RefForm {
        name: "reference adjoint -f, restores restyled",
        how: &["adjoint"],
        form: |t| {
            crate::reference::restores_reordered(t, &|calls| {
                calls.reverse();
                for c in calls.iter_mut() {
                    *c = c
                        .replace(" deriv=\"0\"", "")
                        .replace(" deriv=\"1\"", "")
                        .replace(
                            "<xaif:VariableReference vertex_id=\"1\"",
                            "<xaif:VariableReference vertex_id=\"7\"",
                        );
                }
            })
        },
        runs_in: &["plain", "fd", "split", "joint"],
        joint_may_refuse: false,
    },
    RefForm {
        name: "reference typechange",
        how: &["typechange"],
        form: |t| {
            let u = crate::reference::unmarked(t);
            (u != t).then_some(u)
        },
        runs_in: &["plain", "fd"],
        joint_may_refuse: false,
    },
    RefForm {
        name: "edited adjoint, restores in neither order",
        how: &["adjoint"],
        form: |t| crate::reference::restores_reordered(t, &|calls| calls.rotate_left(1)),
        runs_in: &["plain", "fd", "split", "joint"],
        joint_may_refuse: true,
    },
    RefForm {
        name: "edited adjoint -f, marked, restores out of store order",
        how: &["adjoint", "-f"],
        form: |t| crate::reference::restores_reordered(t, &|calls| calls.rotate_left(1)),
        runs_in: &["plain", "fd", "split", "joint"],
        joint_may_refuse: true,
    },
];

/// Class "reference outputs under every run mode": the mutant is written
/// as one kind of output, turned into one of the forms of [`REF_FORMS`]
/// (at random, from a generator of its own so that the other classes see
/// the same mutants as before), and run in every mode. A mode that cannot
/// execute the form must refuse it; one that can must print a complete
/// Jacobian of finite numbers, and in joint mode the Jacobian of the
/// stack-ordered adjoint of the same program (or, where the form allows,
/// a refusal that says why).
pub(super) fn reference_forms_in_every_mode(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    sizes: &[String],
    seed: u64,
) {
    let mut rng = Rng::for_item(seed ^ 0x7265_6665_7265_6e63, k as u64);
    let form = rng.pick(&REF_FORMS);
    run_form(
        sh,
        k,
        kinds,
        input,
        form,
        sizes,
        &dir.join("reference-forms"),
    );
}

/// The fixed part of class "reference outputs under every run mode", run
/// once per campaign: every form of [`REF_FORMS`] of unmutated programs
/// whose adjoints checkpoint several arguments of a routine, on one or two
/// run-time stacks ([`crate::reference::checkpoint_programs`]), and of the
/// first corpus programs with calls.
pub(super) fn reference_forms_fixed(sh: &Shared<'_>) {
    const KINDS: &[&str] = &["fixed: reference forms of an unmutated seed"];
    const CALL: &[u8] = b"<xaif:SubroutineCall";
    let own: Vec<Seed> = crate::reference::checkpoint_programs()
        .into_iter()
        .map(|(name, text)| Seed {
            name: name.to_string(),
            text: text.into_bytes(),
            n: 3,
            m: 3,
            harness: None,
        })
        .collect();
    let corpus = sh
        .seeds
        .iter()
        .filter(|s| {
            !s.name.starts_with("generated/")
                && s.harness.is_none()
                && s.text.windows(CALL.len()).any(|w| w == CALL)
        })
        .take(3);
    for (i, seed) in own.iter().chain(corpus).enumerate() {
        let dir = sh
            .cfg
            .work
            .join("reference-forms-fixed")
            .join(i.to_string());
        let input = dir.join("input.xaif");
        if std::fs::create_dir_all(&dir).is_err() || std::fs::write(&input, &seed.text).is_err() {
            continue;
        }
        let mut sizes: Vec<String> = match &seed.harness {
            Some(h) => {
                let p = dir.join("harness.json");
                if std::fs::write(&p, h).is_err() {
                    continue;
                }
                vec!["--harness".into(), s(&p)]
            }
            None => vec![
                "--n".into(),
                seed.n.to_string(),
                "--m".into(),
                seed.m.to_string(),
            ],
        };
        sizes.extend(["--time-limit".into(), sh.cfg.run_time_limit.to_string()]);
        for (f, form) in REF_FORMS.iter().enumerate() {
            run_form(sh, 0, KINDS, &input, form, &sizes, &dir.join(f.to_string()));
        }
    }
}

/// Makes `form` of `input` in `base` and runs it in every mode (class
/// "reference outputs under every run mode").
fn run_form(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    input: &Path,
    form: &RefForm,
    sizes: &[String],
    base: &Path,
) {
    let Some(out) = make(sh, k, kinds, input, form.how, &base.join("make")) else {
        return;
    };
    let Ok(text) = std::fs::read_to_string(&out) else {
        return;
    };
    let Some(made) = (form.form)(&text) else {
        return;
    };
    let file = base.join("form.xaif");
    if std::fs::write(&file, made).is_err() {
        return;
    }
    let kind = form.name;
    let mut joint = None;
    for mode in MODES {
        let cdir = base.join(format!("run-{mode}"));
        let args = run_args(&file, mode, sizes);
        let e = exec(sh.cfg, &cdir, &args);
        let name = format!("reference forms: run {mode} on {kind}");
        let ok = check(
            sh,
            k,
            kinds,
            &name,
            &e,
            &[&file],
            &[0, 1],
            &cdir,
            &["out.txt"],
            &[input, &file],
            &args,
        );
        if ok != Some(true) {
            if mode == "joint"
                && e.end == End::Code(1)
                && form.runs_in.contains(&mode)
                && !form.joint_may_refuse
                && e.stderr.contains("cannot run in joint mode")
                && runs_in_joint(sh, &out, sizes, &base.join("made-joint"))
            {
                sh.finding(
                    "reference form refused in a mode that runs it",
                    &name,
                    Some(k),
                    kinds,
                    &e.stderr,
                    &[input, &file],
                    &args,
                );
            }
            continue;
        }
        let finding = if !form.runs_in.contains(&mode) {
            (!same_as_tangent_output(sh, k, kinds, input, form, mode, &cdir, sizes, base))
                .then(|| format!("{kind} ran in {mode} mode with exit 0"))
        } else {
            let text = std::fs::read_to_string(cdir.join("out.txt")).unwrap_or_default();
            bad_result(mode, &text)
        };
        if let Some(detail) = finding {
            sh.finding(
                "silent wrong number: run prints what is not the program's result",
                &name,
                Some(k),
                kinds,
                &detail,
                &[input, &file],
                &args,
            );
        } else if mode == "joint" {
            joint = Some(cdir.join("out.txt"));
        }
    }
    if let Some(joint) = joint {
        let name = format!("reference forms: run joint on {kind}");
        same_as_stack_order(sh, k, kinds, &name, input, &joint, sizes, base);
    }
}

/// Whether the tangent-mode run in `cdir` of a type-change form printed
/// exactly what xaifb's own tangent output of the same `input` prints: a
/// type-change output that assigns no active variable holds what that
/// tangent output holds (no derivative code is needed where nothing
/// active is assigned), so nothing tells them apart and the printed
/// Jacobian is the program's tangent, not a wrong number.
#[allow(clippy::too_many_arguments)]
fn same_as_tangent_output(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    input: &Path,
    form: &RefForm,
    mode: &str,
    cdir: &Path,
    sizes: &[String],
    base: &Path,
) -> bool {
    if mode != "tangent" || form.how != ["typechange"] {
        return false;
    }
    let Ok(printed) = std::fs::read_to_string(cdir.join("out.txt")) else {
        return false;
    };
    let Some(tangent) = make(sh, k, kinds, input, &["tangent"], &base.join("tangent")) else {
        return false;
    };
    let tdir = base.join("tangent-run");
    let e = exec(sh.cfg, &tdir, &run_args(&tangent, "tangent", sizes));
    e.end == End::Code(0)
        && std::fs::read_to_string(tdir.join("out.txt")).is_ok_and(|t| t == printed)
}

/// Whether the xaifb output `file` runs in joint mode (exit 0).
fn runs_in_joint(sh: &Shared<'_>, file: &Path, sizes: &[String], cdir: &Path) -> bool {
    let args = run_args(file, "joint", sizes);
    exec(sh.cfg, cdir, &args).end == End::Code(0)
}

/// The joint Jacobian `fifo` of `-f` output (xaifb's, or a reference form;
/// `name` names the run in a finding) must be that of the same
/// program's adjoint without `-f`.
#[allow(clippy::too_many_arguments)]
fn same_as_stack_order(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    name: &str,
    input: &Path,
    fifo: &Path,
    sizes: &[String],
    base: &Path,
) {
    let Some(stack) = make(sh, k, kinds, input, &["adjoint"], &base.join("stack")) else {
        return;
    };
    let cdir = base.join("stack-joint");
    let args = run_args(&stack, "joint", sizes);
    let e = exec(sh.cfg, &cdir, &args);
    if e.end != End::Code(0) {
        return;
    }
    let jac = cdir.join("out.txt");
    let cmp = vec!["compare".into(), s(fifo), s(&jac)];
    let e = exec(sh.cfg, &base.join("compare"), &cmp);
    if e.end == End::Code(1) && !e.stdout.is_empty() {
        sh.finding(
            "silent wrong number: -f adjoint differs in joint mode",
            name,
            Some(k),
            kinds,
            &String::from_utf8_lossy(&e.stdout),
            &[input, fifo, &jac],
            &cmp,
        );
    }
}

/// Flag sets of class "odd numeric run flags", and whether a run with them
/// must be refused (`true`) or may print a result. `{x0}` stands for as
/// many extreme start values as there are independents.
const FLAGS: [(&[&str], bool); 20] = [
    (&["--n", "0"], true),
    (&["--m", "0"], true),
    (&["--n", "0", "--m", "0"], true),
    (&["--fd", "--h", "1e-300"], true),
    (&["--fd", "--h", "5e-324"], true),
    (&["--fd", "--h", "1e-13"], true),
    (&["--fd", "--h", "1e300"], true),
    (&["--fd", "--h", "1.7976931348623157e308"], true),
    (&["--fd", "--h", "0"], true),
    (&["--fd", "--h", "-1e-6"], true),
    (&["--fd", "--h", "nan"], true),
    (&["--fd", "--h", "inf"], true),
    (&["--fd", "--h", "1e-12"], false),
    (&["--fd", "--h", "1e-5"], false),
    (&["--fd", "--x0", "{x0}"], false),
    (&["--x0", "{x0}"], false),
    (&["--step-budget", "0"], false),
    (&["--max-elements", "0"], false),
    (&["--max-elements", "1"], false),
    (&["--max-call-depth", "1"], false),
];

/// Extreme start values.
const X0: [&str; 6] = ["1e308", "-1e308", "1e-320", "0", "710", "-0"];

/// Class "odd numeric run flags": the mutant, or one of its derivative
/// outputs, run with a flag set of [`FLAGS`].
#[allow(clippy::too_many_arguments)]
pub(super) fn odd_numeric_flags(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    results: &[(String, PathBuf)],
    rng: &mut Rng,
) {
    let (flags, refuse) = *rng.pick(&FLAGS);
    let derivative: Vec<(&str, &Path)> = results
        .iter()
        .filter_map(|(kind, out)| match kind.as_str() {
            "tangent" => Some(("tangent", out.as_path())),
            "adjoint" => Some(("joint", out.as_path())),
            _ => None,
        })
        .collect();
    let fd = flags.contains(&"--fd");
    let (mode, file) = if fd || derivative.is_empty() || rng.chance(0.3) {
        ("plain", input)
    } else {
        *rng.pick(&derivative)
    };
    let x0 = vec![*rng.pick(&X0); seed.n].join(",");
    let mut args = vec!["run".to_string(), s(file)];
    if !fd {
        args.extend(["--mode".into(), mode.into()]);
    }
    let sized = flags.contains(&"--n") || flags.contains(&"--m");
    // The seed's sizes first, so that a flag given here overrides them.
    match (&seed.harness, sized) {
        (Some(h), false) => {
            let p = dir.join("flags-harness.json");
            let _ = std::fs::write(&p, h);
            args.extend(["--harness".into(), s(&p)]);
        }
        _ => {
            if !flags.contains(&"--n") {
                args.extend(["--n".into(), seed.n.to_string()]);
            }
            if !flags.contains(&"--m") {
                args.extend(["--m".into(), seed.m.to_string()]);
            }
        }
    }
    for f in flags {
        args.push(if *f == "{x0}" {
            x0.clone()
        } else {
            f.to_string()
        });
    }
    args.extend([
        "--time-limit".into(),
        sh.cfg.run_time_limit.to_string(),
        "-o".into(),
        "out.txt".into(),
    ]);
    let cdir = dir.join("flags");
    let e = exec(sh.cfg, &cdir, &args);
    let name = format!(
        "run {} with odd numeric flags",
        if fd { "fd" } else { mode }
    );
    // A command-line error names the flag rather than the file.
    let flag = Path::new(flags[if fd && flags.len() > 1 { 1 } else { 0 }]);
    let ok = check(
        sh,
        k,
        kinds,
        &name,
        &e,
        &[
            file,
            flag,
            Path::new("params.conf"),
            Path::new("harness.json"),
        ],
        &[0, 1, 2],
        &cdir,
        &["out.txt"],
        &[input, file],
        &args,
    );
    if ok != Some(true) {
        return;
    }
    let text = std::fs::read_to_string(cdir.join("out.txt")).unwrap_or_default();
    let detail = if refuse {
        Some(format!("{} accepted", flags.join(" ")))
    } else {
        bad_result(if fd { "fd" } else { mode }, &text)
    };
    if let Some(detail) = detail {
        sh.finding(
            "silent wrong number: run prints what is not the program's result",
            &name,
            Some(k),
            kinds,
            &detail,
            &[input, file],
            &args,
        );
    }
}
