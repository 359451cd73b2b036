//! From a recipe to a valid program.
//!
//! The builder reads the recipe's numbers as choices among the options that
//! keep the program valid at that point (see [`super::ast`] for the
//! invariants of each [`Role`]). Routines are built callee first (a routine
//! only calls routines after it), so that a call knows which formals its
//! callee writes and which globals it touches, and binds actuals the way
//! Fortran allows: no actual a written formal sees through another name,
//! no global a callee also reaches directly, no DO variable of an enclosing
//! loop to a written formal.

use std::collections::BTreeSet;

use super::ast::*;
use super::recipe::{Recipe, RoutineRecipe, StmtRecipe, VarRecipe};

/// Reads choices from a list of numbers; past its end every choice is 0.
pub(crate) struct Ch<'a> {
    p: &'a [u32],
    k: usize,
}

impl<'a> Ch<'a> {
    pub(crate) fn new(p: &'a [u32]) -> Self {
        Ch { p, k: 0 }
    }

    fn next(&mut self) -> u32 {
        let v = self.p.get(self.k).copied().unwrap_or(0);
        self.k += 1;
        v
    }

    /// One of `n` options (0 when `n` is 0).
    fn pick(&mut self, n: usize) -> usize {
        let v = self.next() as usize;
        if n == 0 {
            0
        } else {
            v % n
        }
    }

    /// True with `pct` percent probability; false when shrunk to 0.
    fn flag(&mut self, pct: u32) -> bool {
        self.next() % 100 >= 100 - pct.min(100)
    }

    /// An option from a weighted table (index 0 is the shrink target).
    fn weighted<T: Copy>(&mut self, table: &[(u32, T)]) -> T {
        let total: u32 = table.iter().map(|(w, _)| w).sum();
        let mut v = self.next() % total.max(1);
        for (w, t) in table {
            if v < *w {
                return *t;
            }
            v -= w;
        }
        table[0].1
    }
}

/// What a routine does, as its callers need to know.
#[derive(Clone, Debug, Default)]
struct Summary {
    written: Vec<bool>,
    out: Vec<bool>,
    reads: BTreeSet<usize>,
    writes: BTreeSet<usize>,
    depth: usize,
    /// Optional formals (callers may leave them out).
    optional: Vec<bool>,
    /// The routine has no side-effect lists: joint mode runs it again from
    /// its arguments as they are at its reversal, so what callers pass
    /// where it reads must not change after the call.
    stable: bool,
}

impl Summary {
    fn touches(&self, g: usize) -> bool {
        self.reads.contains(&g) || self.writes.contains(&g)
    }
}

const REALS: [f64; 8] = [0.5, 1.5, -0.75, 2.0, 0.25, -1.25, 3.0, 0.125];

fn real_const(ch: &mut Ch<'_>) -> Expr {
    Expr::Real(REALS[ch.pick(REALS.len())])
}

fn var_from(r: &VarRecipe, name: String, roles: &[Role], allow: &[u32]) -> Var {
    let mut ch = Ch::new(&r.0);
    let role = roles[ch.pick(roles.len())];
    let shape = allow[ch.pick(allow.len())];
    let ext = |ch: &mut Ch<'_>| [3, 4, 5, 2][ch.pick(4)];
    let (dims, extents) = if role == Role::Flag {
        (Dims::Scalar, Vec::new())
    } else if role == Role::Index && shape == 1 {
        // An integer vector of indices (indirect addressing).
        let e = ext(&mut ch);
        (Dims::Fixed(vec![e]), vec![e])
    } else if role.ty() == Ty::Int {
        (Dims::Scalar, Vec::new())
    } else {
        match shape {
            0 => (Dims::Scalar, Vec::new()),
            1 => {
                let e = ext(&mut ch);
                (Dims::Fixed(vec![e]), vec![e])
            }
            2 => {
                let extents = [
                    vec![3, 3],
                    vec![2, 3],
                    vec![3, 4],
                    vec![2, 2],
                    vec![2, 3, 2],
                    // Ranks 4 to 6 (the corpus has five and six), with
                    // extents of 1 among them to keep them small.
                    vec![2, 1, 2, 2],
                    vec![1, 2, 1, 2, 1],
                    vec![2, 1, 1, 1, 1, 2],
                ][ch.pick(8)]
                .clone();
                (Dims::Fixed(extents.clone()), extents)
            }
            3 => (Dims::Assumed, vec![ext(&mut ch)]),
            _ => (Dims::Alloc, vec![ext(&mut ch)]),
        }
    };
    Var {
        name,
        role,
        dims,
        extents,
    }
}

fn letters(k: usize) -> String {
    let a = (b'A' + (k % 26) as u8) as char;
    if k < 26 {
        a.to_string()
    } else {
        format!("{a}{}", (b'A' + (k / 26 % 26) as u8) as char)
    }
}

/// Builds the program a recipe describes.
pub fn build(recipe: &Recipe) -> Program {
    let mut ch = Ch::new(&recipe.knobs);
    let n = 1 + ch.pick(4);
    let m = 1 + ch.pick(4);
    let global_roles = [
        Role::Active,
        Role::Index,
        Role::Clean,
        Role::Count,
        Role::Sink,
        Role::Dead,
        Role::Flag,
    ];
    let globals: Vec<Var> = recipe
        .globals
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let mut v = var_from(r, format!("G{}", letters(k)), &global_roles, &[0, 1, 0, 2]);
            if v.role == Role::Dead {
                // Names `-p` may force passive are unique in the program.
                v.name = format!("WG{}", letters(k));
            }
            v
        })
        .collect();
    let count = recipe.routines.len().max(1);
    // Formals of each routine; kernels without side-effect lists take at
    // least three active ones (`foo(a, b, c)`: inputs and a result).
    let formal_recipes: Vec<Vec<VarRecipe>> = recipe
        .routines
        .iter()
        .map(|rr| {
            let mut f = rr.formals.clone();
            if without_lists(rr) {
                let active = |f: &[VarRecipe]| {
                    f.iter()
                        .filter(|v| {
                            KERNEL_ROLES[Ch::new(&v.0).pick(KERNEL_ROLES.len())] == Role::Active
                        })
                        .count()
                };
                while active(&f) < 3 && f.len() < 5 {
                    let j = f.len() as u32;
                    // Role 0 (active), a shape from the style's bits.
                    f.push(VarRecipe([0, rr.style.rotate_left(5 * j + 3), 0]));
                }
            }
            f
        })
        .collect();
    let mut routines = Vec::with_capacity(count);
    for (k, rr) in recipe.routines.iter().enumerate() {
        let formals = if k == 0 {
            vec![
                Var {
                    name: "X".into(),
                    role: Role::Active,
                    dims: Dims::Fixed(vec![n as i64]),
                    extents: vec![n as i64],
                },
                Var {
                    name: "Y".into(),
                    role: Role::Active,
                    dims: Dims::Fixed(vec![m as i64]),
                    extents: vec![m as i64],
                },
            ]
        } else {
            let roles = [
                Role::Active,
                Role::Index,
                Role::Clean,
                Role::Sink,
                Role::Count,
            ];
            let roles: &[Role] = if without_lists(rr) {
                &KERNEL_ROLES
            } else {
                &roles
            };
            formal_recipes[k]
                .iter()
                .enumerate()
                .map(|(j, r)| var_from(r, format!("F{}", letters(j)), roles, &[0, 1, 3, 0, 2, 0]))
                .collect()
        };
        let local_roles = [
            Role::Active,
            Role::Index,
            Role::Clean,
            Role::Active,
            Role::Sink,
            Role::Count,
            Role::Dead,
            Role::Active,
            Role::Flag,
        ];
        let locals = rr
            .locals
            .iter()
            .enumerate()
            .map(|(j, r)| {
                let mut v = var_from(
                    r,
                    format!("L{}", letters(j)),
                    &local_roles,
                    &[0, 1, 4, 0, 2],
                );
                if v.role == Role::Dead {
                    v.name = format!("W{}{}", letters(k), letters(j));
                }
                v
            })
            .collect();
        routines.push(Routine {
            name: if k == 0 {
                "head".into()
            } else {
                format!("s{}", letters(k - 1).to_ascii_lowercase())
            },
            written: vec![false; formals.len()],
            out: vec![false; formals.len()],
            optional: vec![false; formals.len()],
            formals,
            locals,
            body: Vec::new(),
            mark_unstructured: false,
            side_effect_lists: true,
            kernel: false,
            prologue: 0,
        });
    }
    let own_global_symbol = recipe
        .routines
        .iter()
        .map(|rr| {
            let mut c = Ch::new(&rr.knobs);
            (0..globals.len()).map(|_| c.flag(40)).collect()
        })
        .collect();
    let mut p = Program {
        n,
        m,
        globals,
        routines,
        own_global_symbol,
    };
    let mut sums = vec![Summary::default(); count];
    for r in (0..count).rev() {
        let rr = &recipe.routines[r];
        let mut b = Rb {
            p: &mut p,
            sums: &sums,
            r,
            loops: Vec::new(),
            exits: 0,
            jumps: false,
            sum: Summary {
                written: vec![false; 0],
                ..Summary::default()
            },
            read_only: Vec::new(),
            prefer: Vec::new(),
            after_loops: Vec::new(),
            no_globals: false,
            frozen: BTreeSet::new(),
            written_so_far: BTreeSet::new(),
            const_subs: false,
            results: Vec::new(),
            hidden: Vec::new(),
            force_arg: None,
            keep_activity: false,
        };
        let nformals = b.p.routines[r].formals.len();
        b.sum.written = vec![false; nformals];
        b.sum.out = vec![false; nformals];
        // A routine written without side-effect lists (see
        // `Routine::side_effect_lists`): no globals, and every formal
        // read-only or `intent(out)`.
        let stable = r > 0 && without_lists(rr);
        b.no_globals = stable;
        b.read_only = if r == 0 {
            vec![false; nformals]
        } else if stable {
            // The last active formal is the result (`intent(out)`), other
            // active formals are sometimes results too; the rest are read.
            let last = (0..nformals)
                .rev()
                .find(|&k| b.var(VarId::Formal(k)).role == Role::Active);
            (0..nformals)
                .map(|k| {
                    b.var(VarId::Formal(k)).role != Role::Active
                        || (Some(k) != last && !Ch::new(&[formal_recipes[r][k].0[2]]).flag(25))
                })
                .collect()
        } else {
            formal_recipes[r]
                .iter()
                .map(|f| Ch::new(&f.0[2..]).flag(50))
                .collect()
        };
        // Optional formals: read-only real scalars and vectors, read only
        // under `if (present(f))` at the end.
        let optional: Vec<bool> = (0..nformals)
            .map(|k| {
                let var = b.var(VarId::Formal(k));
                r > 0
                    && b.read_only[k]
                    && var.rank() <= 1
                    && matches!(var.role, Role::Active | Role::Clean)
                    && Ch::new(&[formal_recipes[r][k].0[1] >> 20]).flag(45)
            })
            .collect();
        b.hidden = (0..nformals)
            .filter(|&k| optional[k])
            .map(VarId::Formal)
            .collect();
        b.sum.optional = optional.clone();
        // intent(out) formals: assigned first, from clean values.
        let mut body = Vec::new();
        if r > 0 {
            for (k, f) in formal_recipes[r].iter().enumerate() {
                let mut c = Ch::new(&rr.knobs[rr.knobs.len().min(5)..]);
                let out = !b.read_only[k]
                    && b.var(VarId::Formal(k)).role == Role::Active
                    && (stable || wants_out(f));
                if out {
                    let v = VarId::Formal(k);
                    let rhs = b.real_expr(&mut c, Flavor::Clean, None, 2);
                    b.note_write(v);
                    body.push(Stmt::Assign(Ref::whole(v), rhs));
                    b.sum.out[k] = true;
                }
            }
        }
        let outs = body.len();
        body.extend(b.body(&rr.body, 0));
        // Callees that advance a global index (`i = 1 + mod(i, K)`).
        let mut chain = Ch::new(rr.knobs.get(2..).unwrap_or(&[]));
        let index_globals: Vec<usize> = (0..b.p.globals.len())
            .filter(|&g| b.p.globals[g].role == Role::Index)
            .collect();
        if r > 0 && !b.no_globals && !index_globals.is_empty() && chain.flag(50) {
            let g = VarId::Global(index_globals[chain.pick(index_globals.len())]);
            b.note_read(g);
            b.note_write(g);
            let at = chain.pick(body.len() + 1);
            body.insert(at, advance_index(g));
        }
        // Chains of calls: most routines call the next one.
        if r + 1 < count && chain.flag(65) && b.may_call(r + 1) {
            let mut call = Vec::new();
            b.call_to(&mut chain, r + 1, &mut call);
            // After the `intent(out)` formals have their values.
            let at = outs + chain.pick(body.len() - outs + 1);
            for (k, st) in call.into_iter().enumerate() {
                body.insert(at + k, st);
            }
        }
        // Results from arguments: the active formals the routine writes
        // get values that depend on the formals it reads (so that a
        // callee's derivatives depend on its arguments' values).
        if r > 0 && (stable || Ch::new(&[rr.style >> 8]).flag(60)) {
            let mut c = Ch::new(rr.knobs.get(3..).unwrap_or(&[]));
            body.extend(b.results(&mut c));
        }
        if !b.hidden.is_empty() {
            let numbers = derived(rr.style, 64);
            let mut c = Ch::new(&numbers);
            body.extend(b.optional_uses(&mut c));
        }
        let mut stmts = b.prologue(rr);
        let prologue = stmts.len();
        stmts.extend(body);
        if r == 0 {
            stmts.extend(b.epilogue(rr));
        }
        let jumps = b.jumps;
        let mut sum = b.sum;
        let read_only = b.read_only;
        // What the choice promised, checked: no global, and no formal both
        // read and written.
        sum.stable = stable
            && sum.reads.is_empty()
            && sum.writes.is_empty()
            && (0..nformals).all(|k| (read_only[k] && !sum.written[k]) || sum.out[k]);
        let routine = &mut p.routines[r];
        routine.body = stmts;
        routine.prologue = prologue;
        routine.optional = optional;
        // Other routines without lists too (the engine infers them).
        let unlisted = r > 0 && !sum.stable && Ch::new(&[rr.style >> 4]).flag(15);
        routine.side_effect_lists = !(sum.stable || unlisted);
        routine.kernel = sum.stable;
        routine.written = sum.written.clone();
        routine.out = sum.out.clone();
        routine.mark_unstructured = jumps && Ch::new(&rr.knobs[rr.knobs.len().min(1)..]).flag(60);
        sums[r] = sum;
    }
    p
}

/// Roles of the formals of kernels without side-effect lists: mostly
/// reals.
const KERNEL_ROLES: [Role; 5] = [
    Role::Active,
    Role::Active,
    Role::Clean,
    Role::Active,
    Role::Index,
];

/// `n` numbers drawn from `seed` (all 0 for 0, what a shrunk recipe
/// gives).
fn derived(seed: u32, n: usize) -> Vec<u32> {
    if seed == 0 {
        return vec![0; n];
    }
    let mut z = u64::from(seed);
    (0..n)
        .map(|_| {
            z = z
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(0xD1B5_4A32_D192_ED03);
            (z >> 32) as u32
        })
        .collect()
}

/// Whether the routine is written without side-effect lists (see
/// `Routine::side_effect_lists`; `head` never is).
fn without_lists(rr: &RoutineRecipe) -> bool {
    Ch::new(&[rr.style]).flag(30)
}

/// Whether a recipe's formal asks to be `intent(out)` (when it is active
/// and may be written).
fn wants_out(f: &VarRecipe) -> bool {
    // The third number's high bits choose; its low ones choose read-only.
    (f.0[2] >> 16) % 100 >= 60
}

/// An enclosing DO loop.
struct LoopInfo {
    var: VarId,
    range: (i64, i64),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    /// The value of an active variable: reads active, clean, integers.
    Active,
    /// The value of a clean passive variable: reads clean and integers.
    Clean,
    /// The value of a sink: reads anything readable.
    Sink,
}

impl Flavor {
    fn of(role: Role) -> Flavor {
        match role {
            Role::Active | Role::Dead => Flavor::Active,
            Role::Sink => Flavor::Sink,
            _ => Flavor::Clean,
        }
    }

    fn reads(self, role: Role) -> bool {
        match role {
            Role::Clean | Role::Index | Role::Count => true,
            Role::Active => self != Flavor::Clean,
            Role::Sink => self == Flavor::Sink,
            Role::Dead | Role::Loop | Role::Flag => false,
        }
    }
}

/// Builds one routine.
struct Rb<'a> {
    p: &'a mut Program,
    sums: &'a [Summary],
    r: usize,
    loops: Vec<LoopInfo>,
    /// Loops an `exit` may leave.
    exits: usize,
    jumps: bool,
    sum: Summary,
    /// Formals the routine must not write (so that callers may pass
    /// values of another activity or constants).
    read_only: Vec<bool>,
    /// Index variables subscripts should favour (those the callee of the
    /// call being built changes).
    prefer: Vec<VarId>,
    /// DO variables of loops that ended earlier in the statement lists
    /// being built, with the ranges of their final values.
    after_loops: Vec<LoopInfo>,
    /// The routine touches no global (it has no side-effect lists).
    no_globals: bool,
    /// Variables passed where a routine without side-effect lists reads:
    /// never written again.
    frozen: BTreeSet<VarId>,
    /// Variables the body built so far writes.
    written_so_far: BTreeSet<VarId>,
    /// Subscripts are constants (of actuals that must not change).
    const_subs: bool,
    /// Optional formals, which only the statement guarded by `present`
    /// reads.
    hidden: Vec<VarId>,
    /// The actual the call being built passes at a position (an optional
    /// formal passed on, present or not).
    force_arg: Option<(usize, VarId)>,
    /// The actual being chosen must have the formal's activity (the first
    /// input of a kernel without side-effect lists).
    keep_activity: bool,
    /// Active variables calls and direct actions gave results to (what
    /// `head`'s epilogue likes to read).
    results: Vec<VarId>,
}

/// Statement kinds, weighted; the first is what a shrunk recipe gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Assign,
    Vector,
    Index,
    Count,
    Call,
    Do,
    While,
    Post,
    If,
    Select,
    Exit,
    Return,
    GotoLoop,
    GotoSkip,
    Direct,
    Marker,
    Flag,
    Reshape,
}

const KINDS: [(u32, Kind); 18] = [
    (30, Kind::Assign),
    (9, Kind::Vector),
    (5, Kind::Index),
    (3, Kind::Count),
    (14, Kind::Call),
    (10, Kind::Do),
    (3, Kind::While),
    (1, Kind::Post),
    (7, Kind::If),
    (3, Kind::Select),
    (3, Kind::Exit),
    (2, Kind::Return),
    (2, Kind::GotoLoop),
    (2, Kind::GotoSkip),
    (1, Kind::Direct),
    (2, Kind::Marker),
    (2, Kind::Flag),
    (1, Kind::Reshape),
];

impl Rb<'_> {
    fn routine(&self) -> &Routine {
        &self.p.routines[self.r]
    }

    fn var(&self, v: VarId) -> &Var {
        self.p.var(self.r, v)
    }

    /// Every variable of the routine.
    fn all_vars(&self) -> Vec<VarId> {
        let r = self.routine();
        let globals = if self.no_globals {
            0
        } else {
            self.p.globals.len()
        };
        let mut out: Vec<VarId> = (0..globals).map(VarId::Global).collect();
        out.extend(
            (0..r.formals.len())
                .map(VarId::Formal)
                .filter(|v| !self.hidden.contains(v)),
        );
        out.extend((0..r.locals.len()).map(VarId::Local));
        out
    }

    fn note_read(&mut self, v: VarId) {
        if let VarId::Global(g) = v {
            self.sum.reads.insert(g);
        }
    }

    fn note_write(&mut self, v: VarId) {
        self.written_so_far.insert(v);
        match v {
            VarId::Global(g) => {
                self.sum.writes.insert(g);
            }
            VarId::Formal(f) => self.sum.written[f] = true,
            VarId::Local(_) => {}
        }
    }

    fn note_expr(&mut self, e: &Expr) {
        let mut seen = Vec::new();
        e.visit_refs(&mut |r| seen.push(r.var));
        for v in seen {
            self.note_read(v);
        }
    }

    fn note_ref_subs(&mut self, r: &Ref) {
        for s in &r.subs {
            match s {
                Sub::Elem(e) => self.note_expr(e),
                Sub::Range(a, b, c) => {
                    self.note_expr(a);
                    self.note_expr(b);
                    if let Some(c) = c {
                        self.note_expr(c);
                    }
                }
            }
        }
    }

    fn fresh_local(&mut self, role: Role, dims: Dims, extents: Vec<i64>) -> VarId {
        let r = &mut self.p.routines[self.r];
        let name = format!("T{}", letters(r.locals.len()));
        r.locals.push(Var {
            name,
            role,
            dims,
            extents,
        });
        VarId::Local(r.locals.len() - 1)
    }

    /// The loop range of `v` when it is the variable of an enclosing loop.
    fn loop_range(&self, v: VarId) -> Option<(i64, i64)> {
        self.loops
            .iter()
            .rev()
            .chain(self.after_loops.iter().rev())
            .find(|l| l.var == v)
            .map(|l| l.range)
    }

    /// Logical variables.
    fn flags(&self) -> Vec<VarId> {
        self.all_vars()
            .into_iter()
            .filter(|&v| self.var(v).role == Role::Flag)
            .collect()
    }

    /// Integer vectors of indices.
    fn index_arrays(&self) -> Vec<VarId> {
        self.all_vars()
            .into_iter()
            .filter(|&v| self.var(v).role == Role::Index && self.var(v).rank() == 1)
            .collect()
    }

    /// Integer scalars readable here with their ranges.
    fn int_vars(&self) -> Vec<(VarId, (i64, i64))> {
        let mut out = Vec::new();
        for v in self.all_vars() {
            let var = self.var(v);
            if var.rank() != 0 {
                continue;
            }
            match var.role {
                Role::Index => out.push((v, (1, K))),
                Role::Count => out.push((v, (-COUNT, COUNT))),
                Role::Loop => {
                    if let Some(r) = self.loop_range(v) {
                        out.push((v, r));
                    }
                }
                _ => {}
            }
        }
        out
    }

    // ------------------------------------------------------------ integers

    /// An integer expression with the range of values it may take.
    fn int_expr(&mut self, ch: &mut Ch<'_>, depth: u32) -> (Expr, (i64, i64)) {
        let vars = self.int_vars();
        let choice = if depth == 0 { ch.pick(3) } else { ch.pick(17) };
        match choice {
            0 => {
                let c = ch.pick(5) as i64 + 1;
                (Expr::Int(c), (c, c))
            }
            1 | 2 if !vars.is_empty() => {
                let (v, r) = vars[ch.pick(vars.len())];
                self.note_read(v);
                (Expr::var(v), r)
            }
            3 | 4 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                let (b, rb) = self.int_expr(ch, depth - 1);
                if ch.flag(50) {
                    (
                        Expr::Op("add_scal_scal", vec![a, b]),
                        (ra.0 + rb.0, ra.1 + rb.1),
                    )
                } else {
                    (
                        Expr::Op("sub_scal_scal", vec![a, b]),
                        (ra.0 - rb.1, ra.1 - rb.0),
                    )
                }
            }
            5 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                let c = ch.pick(3) as i64 + 2;
                let prods = [ra.0 * c, ra.1 * c];
                (
                    Expr::Op("mul_scal_scal", vec![a, Expr::Int(c)]),
                    (prods[0].min(prods[1]), prods[0].max(prods[1])),
                )
            }
            6 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                let c = ch.pick(4) as i64 + 2;
                let range = if ra.0 >= 0 {
                    (0, (c - 1).min(ra.1))
                } else if ra.1 <= 0 {
                    ((1 - c).max(ra.0), 0)
                } else {
                    (1 - c, c - 1)
                };
                if ch.flag(30) {
                    // Integer division truncates toward zero.
                    let ends = [ra.0 / c, ra.1 / c];
                    return (
                        Expr::Op("div_scal_scal", vec![a, Expr::Int(c)]),
                        (ends[0].min(ends[1]), ends[0].max(ends[1])),
                    );
                }
                (Expr::Op("mod_scal_scal", vec![a, Expr::Int(c)]), range)
            }
            7 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                let (b, rb) = self.int_expr(ch, depth - 1);
                if ch.flag(50) {
                    (
                        Expr::Op("nc_min_scal_scal", vec![a, b]),
                        (ra.0.min(rb.0), ra.1.min(rb.1)),
                    )
                } else {
                    (
                        Expr::Op("nc_max_scal_scal", vec![a, b]),
                        (ra.0.max(rb.0), ra.1.max(rb.1)),
                    )
                }
            }
            8 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                let hi = ra.0.abs().max(ra.1.abs());
                let lo = if ra.0 <= 0 && ra.1 >= 0 {
                    0
                } else {
                    ra.0.abs().min(ra.1.abs())
                };
                (Expr::Op("abs_scal", vec![a]), (lo, hi))
            }
            9 => {
                // Inquiries of an array's storage.
                let arrays: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| self.var(v).rank() > 0 && self.var(v).role != Role::Dead)
                    .collect();
                if arrays.is_empty() {
                    return (Expr::Int(1), (1, 1));
                }
                let v = arrays[ch.pick(arrays.len())];
                let var = self.var(v).clone();
                let d = ch.pick(var.rank());
                let name = ["size", "ubound", "lbound"][ch.pick(3)];
                let value = if name == "lbound" { 1 } else { var.extents[d] };
                self.note_read(v);
                (
                    Expr::Op(name, vec![Expr::var(v), Expr::Int(d as i64 + 1)]),
                    (value, value),
                )
            }
            10 => {
                // Location of an extremum: sum(maxloc(a)) of a vector.
                let arrays: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| {
                        let var = self.var(v);
                        var.rank() == 1 && var.role != Role::Dead && var.role.ty() == Ty::Real
                    })
                    .collect();
                if arrays.is_empty() {
                    return (Expr::Int(2), (2, 2));
                }
                let v = arrays[ch.pick(arrays.len())];
                let len = self.var(v).extents[0];
                self.note_read(v);
                let name = if ch.flag(50) {
                    "maxloc_arr"
                } else {
                    "minloc_arr"
                };
                (
                    Expr::Op("sum_arr", vec![Expr::Op(name, vec![Expr::var(v)])]),
                    (1, len),
                )
            }
            11 => {
                // sum(shape(a)) of an array.
                let arrays: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| self.var(v).rank() > 0 && self.var(v).role != Role::Dead)
                    .collect();
                if arrays.is_empty() {
                    return (Expr::Int(3), (3, 3));
                }
                let v = arrays[ch.pick(arrays.len())];
                let s: i64 = self.var(v).extents.iter().sum();
                self.note_read(v);
                (
                    Expr::Op("sum_arr", vec![Expr::Op("shape_arr", vec![Expr::var(v)])]),
                    (s, s),
                )
            }
            12 => {
                // Character intrinsics on constants.
                let words = ["ab  ", "hello", "xyz", "a"];
                let w = words[ch.pick(words.len())].to_string();
                match ch.pick(4) {
                    0 => {
                        let n = w.chars().count() as i64;
                        (Expr::Op("len", vec![Expr::Str(w)]), (n, n))
                    }
                    1 => {
                        let n = w.trim_end().chars().count() as i64;
                        (
                            Expr::Op("len", vec![Expr::Op("trim", vec![Expr::Str(w)])]),
                            (n, n),
                        )
                    }
                    2 => {
                        let set = ["l", "z", "q"][ch.pick(3)];
                        let at =
                            w.chars().position(|c| set.contains(c)).map_or(0, |k| k + 1) as i64;
                        (
                            Expr::Op("scan", vec![Expr::Str(w), Expr::Str(set.into())]),
                            (at, at),
                        )
                    }
                    _ => {
                        let c = ["A", "b", "0"][ch.pick(3)];
                        let code = c.chars().next().expect("one character") as i64;
                        // ichar('A') - 64 etc.: keep it small.
                        (
                            Expr::Op(
                                "sub_scal_scal",
                                vec![
                                    Expr::Op("ichar", vec![Expr::Str(c.into())]),
                                    Expr::Int(code),
                                ],
                            ),
                            (0, 0),
                        )
                    }
                }
            }
            13 => {
                // An integer from a real: int/nint, kept small with mod.
                let e = self.real_expr(ch, Flavor::Sink, None, depth - 1);
                let name = if ch.flag(50) { "int_scal" } else { "nint_scal" };
                let c = ch.pick(3) as i64 + 2;
                (
                    Expr::Op(
                        "mod_scal_scal",
                        vec![Expr::Op(name, vec![bounded_wrap(e, 3.0)]), Expr::Int(c)],
                    ),
                    (1 - c, c - 1),
                )
            }
            14 => {
                let (a, ra) = self.int_expr(ch, depth - 1);
                (Expr::Op("transfer", vec![a, Expr::Int(0)]), ra)
            }
            15 if !self.index_arrays().is_empty() => {
                // An element of an index vector (indirect addressing).
                let arrays = self.index_arrays();
                let v = arrays[ch.pick(arrays.len())];
                let r = self.element(ch, v);
                self.note_read(v);
                self.note_ref_subs(&r);
                (Expr::r(r), (1, K))
            }
            _ if !vars.is_empty() => {
                let (v, r) = vars[ch.pick(vars.len())];
                self.note_read(v);
                (Expr::var(v), r)
            }
            _ => (Expr::Int(1), (1, 1)),
        }
    }

    /// An integer expression whose value is in `lo..=hi`.
    fn int_in(&mut self, ch: &mut Ch<'_>, lo: i64, hi: i64, depth: u32) -> Expr {
        debug_assert!(lo <= hi);
        if self.const_subs {
            return Expr::Int(lo + ch.pick((hi - lo + 1) as usize) as i64);
        }
        if !self.prefer.is_empty() && hi - lo + 1 >= K && ch.flag(75) {
            // An index the callee changes (1..=K), shifted into range.
            let v = self.prefer[ch.pick(self.prefer.len())];
            self.note_read(v);
            return shifted(
                Expr::var(v),
                ch.pick((hi - lo + 2 - K) as usize) as i64 + lo - 1,
            );
        }
        let forms = ch.pick(6);
        if forms == 0 {
            return Expr::Int(lo + ch.pick((hi - lo + 1) as usize) as i64);
        }
        // Variables that fit, possibly shifted.
        let fits: Vec<(VarId, (i64, i64))> = self
            .int_vars()
            .into_iter()
            .filter(|(_, r)| r.1 - r.0 <= hi - lo)
            .collect();
        if forms <= 2 && !fits.is_empty() {
            let (v, r) = fits[ch.pick(fits.len())];
            self.note_read(v);
            let shifts: Vec<i64> = ((lo - r.0)..=(hi - r.1)).collect();
            let s = shifts[ch.pick(shifts.len())];
            let total = lo + hi;
            let reflects = total - r.1 >= lo && total - r.0 <= hi;
            return if reflects && ch.flag(20) {
                // lo + hi - v mirrors the range.
                Expr::Op("sub_scal_scal", vec![Expr::Int(total), Expr::var(v)])
            } else {
                shifted(Expr::var(v), s)
            };
        }
        let (e, r) = self.int_expr(ch, depth.min(2));
        if r.0 >= lo && r.1 <= hi {
            return e;
        }
        // lo + mod(abs(e), hi - lo + 1).
        let width = hi - lo + 1;
        let wrapped = if width == 1 {
            Expr::Op("mul_scal_scal", vec![e, Expr::Int(0)])
        } else {
            Expr::Op(
                "mod_scal_scal",
                vec![Expr::Op("abs_scal", vec![e]), Expr::Int(width)],
            )
        };
        shifted(wrapped, lo)
    }

    // --------------------------------------------------------------- reals

    /// Readable real arrays, with their role.
    fn real_arrays(&self, fl: Flavor) -> Vec<VarId> {
        self.all_vars()
            .into_iter()
            .filter(|&v| {
                let var = self.var(v);
                var.rank() > 0 && var.role.ty() == Ty::Real && fl.reads(var.role)
            })
            .collect()
    }

    /// An element reference to array `v`.
    fn element(&mut self, ch: &mut Ch<'_>, v: VarId) -> Ref {
        let ext = self.var(v).extents.clone();
        let subs = ext
            .iter()
            .map(|&e| Sub::Elem(self.int_in(ch, 1, e, 2)))
            .collect();
        Ref { var: v, subs }
    }

    /// A rank-one view of `len` elements of array `v` (whole, section,
    /// strided or reversed section, row or column of a matrix), if it has
    /// one.
    fn vector_view(&mut self, ch: &mut Ch<'_>, v: VarId, len: i64) -> Option<Ref> {
        let ext = self.var(v).extents.clone();
        match ext.len() {
            1 => {
                let e = ext[0];
                if e < len {
                    return None;
                }
                if e == len && ch.pick(3) == 0 {
                    return Some(Ref::whole(v));
                }
                Some(Ref {
                    var: v,
                    subs: vec![self.section(ch, e, len)],
                })
            }
            2 => {
                let (a, b) = (ext[0], ext[1]);
                let row = b >= len && (a < len || ch.flag(50));
                if row {
                    let i = self.int_in(ch, 1, a, 1);
                    let s = self.section(ch, b, len);
                    Some(Ref {
                        var: v,
                        subs: vec![Sub::Elem(i), s],
                    })
                } else if a >= len {
                    let s = self.section(ch, a, len);
                    let j = self.int_in(ch, 1, b, 1);
                    Some(Ref {
                        var: v,
                        subs: vec![s, Sub::Elem(j)],
                    })
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// A section of `len` elements of a dimension of extent `e`.
    fn section(&mut self, ch: &mut Ch<'_>, e: i64, len: i64) -> Sub {
        match ch.pick(5) {
            1 if 2 * (len - 1) < e => {
                let lo = self.int_in(ch, 1, e - 2 * (len - 1), 1);
                let hi = shifted(lo.clone(), 2 * (len - 1));
                Sub::Range(lo, hi, Some(Expr::Int(2)))
            }
            2 => {
                // Reversed: hi down to lo.
                let lo = self.int_in(ch, 1, e - len + 1, 1);
                let hi = shifted(lo.clone(), len - 1);
                Sub::Range(hi, lo, Some(Expr::Int(-1)))
            }
            3 | 4 => {
                let lo = self.int_in(ch, 1, e - len + 1, 1);
                let hi = shifted(lo.clone(), len - 1);
                Sub::Range(lo, hi, None)
            }
            _ => {
                let lo = ch.pick((e - len + 1) as usize) as i64 + 1;
                Sub::Range(Expr::Int(lo), Expr::Int(lo + len - 1), None)
            }
        }
    }

    /// A leaf: a variable, element, constant or converted integer (scalar
    /// when `len` is `None`, else a vector of `len` elements).
    fn real_leaf(&mut self, ch: &mut Ch<'_>, fl: Flavor, len: Option<i64>) -> Expr {
        let choice = ch.pick(8);
        if choice == 0 {
            return real_const(ch);
        }
        if let Some(len) = len {
            if choice <= 5 {
                let arrays = self.real_arrays(fl);
                let mut order: Vec<VarId> = arrays.clone();
                if !order.is_empty() {
                    let start = ch.pick(order.len());
                    order.rotate_left(start);
                }
                for v in order {
                    if let Some(r) = self.vector_view(ch, v, len) {
                        self.note_read(v);
                        self.note_ref_subs(&r);
                        return Expr::r(r);
                    }
                }
            }
        }
        match choice {
            6 => {
                let (e, _) = self.int_expr(ch, 1);
                Expr::Op("real_scal", vec![e])
            }
            _ => {
                let scalars: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| {
                        let var = self.var(v);
                        var.role.ty() == Ty::Real && fl.reads(var.role)
                    })
                    .collect();
                if scalars.is_empty() {
                    return real_const(ch);
                }
                let v = scalars[ch.pick(scalars.len())];
                self.note_read(v);
                if self.var(v).rank() == 0 {
                    Expr::var(v)
                } else {
                    let r = self.element(ch, v);
                    self.note_ref_subs(&r);
                    Expr::r(r)
                }
            }
        }
    }

    /// A real expression (scalar, or a vector of `len` elements) whose
    /// intrinsics get arguments inside their domains.
    fn real_expr(&mut self, ch: &mut Ch<'_>, fl: Flavor, len: Option<i64>, depth: u32) -> Expr {
        if depth == 0 || ch.pick(4) == 0 {
            return self.real_leaf(ch, fl, len);
        }
        let d = depth - 1;
        let choice = ch.pick(26);
        let sub = |b: &mut Self, ch: &mut Ch<'_>| b.real_expr(ch, fl, len, d);
        match choice {
            0..=2 => {
                let a = sub(self, ch);
                let b = sub(self, ch);
                Expr::Op(
                    ["add_scal_scal", "sub_scal_scal", "mul_scal_scal"][choice],
                    vec![a, b],
                )
            }
            3 => {
                let a = sub(self, ch);
                let b = self.positive(ch, fl, len, d);
                Expr::Op("div_scal_scal", vec![a, b])
            }
            4 => {
                let a = sub(self, ch);
                Expr::Op("minus_scal", vec![a])
            }
            5 => {
                let a = sub(self, ch);
                Expr::Op(
                    ["sin_scal", "cos_scal", "arctan_scal", "tanh_scal"][ch.pick(4)],
                    vec![a],
                )
            }
            6 => {
                let a = self.bounded(ch, fl, len, d);
                Expr::Op(["exp_scal", "sinh_scal", "cosh_scal"][ch.pick(3)], vec![a])
            }
            7 => {
                let a = self.positive(ch, fl, len, d);
                Expr::Op(["ln_scal", "log10", "sqrt_scal"][ch.pick(3)], vec![a])
            }
            8 => {
                let a = self.unit(ch, fl, len, d);
                Expr::Op(
                    ["arcsin_scal", "arccos_scal", "tan_scal"][ch.pick(3)],
                    vec![a],
                )
            }
            9 => {
                // pow: positive base with a real or variable exponent, any
                // base with an integer exponent.
                if ch.flag(50) {
                    let a = sub(self, ch);
                    Expr::Op("pow_scal_scal", vec![a, Expr::Int(2 + ch.pick(2) as i64)])
                } else {
                    let a = self.positive(ch, fl, len, d);
                    let b = if ch.flag(50) {
                        Expr::Real([0.5, 1.5, -1.0, 2.5][ch.pick(4)])
                    } else {
                        self.bounded(ch, fl, len, d)
                    };
                    Expr::Op("pow_scal_scal", vec![a, b])
                }
            }
            10 => {
                let a = sub(self, ch);
                Expr::Op("abs_scal", vec![a])
            }
            11 => {
                if ch.flag(40) {
                    let a = sub(self, ch);
                    let b = sub(self, ch);
                    Expr::Op("sign_scal_scal", vec![a, b])
                } else {
                    // min and max have passive partials in the catalogue:
                    // only of clean values.
                    let a = self.real_expr(ch, Flavor::Clean, len, d);
                    let b = self.real_expr(ch, Flavor::Clean, len, d);
                    Expr::Op(
                        ["nc_min_scal_scal", "nc_max_scal_scal"][ch.pick(2)],
                        vec![a, b],
                    )
                }
            }
            12 => {
                let a = sub(self, ch);
                let c = [1.5, 2.0, -2.5][ch.pick(3)];
                Expr::Op("mod_scal_scal", vec![a, Expr::Real(c)])
            }
            13 => {
                // A piecewise constant part: int/nint of a bounded value.
                let a = self.bounded(ch, fl, len, d);
                let a = Expr::Op("mul_scal_scal", vec![a, Expr::Real(3.0)]);
                let name = if ch.flag(50) { "int_scal" } else { "nint_scal" };
                let b = sub(self, ch);
                Expr::Op("add_scal_scal", vec![b, Expr::Op(name, vec![a])])
            }
            14 | 15 => {
                // A reduction of a vector to a scalar.
                if len.is_some() {
                    return sub(self, ch);
                }
                // Reductions have passive partials in the catalogue: only
                // of clean values.
                let Some(v) = self.vector_arg(ch, Flavor::Clean, d) else {
                    return sub(self, ch);
                };
                Expr::Op(["sum_arr", "nc_maxval", "nc_minval"][ch.pick(3)], vec![v])
            }
            16 => {
                // Complex values carry no derivative (xaifb refuses an
                // active one, located): only of clean values.
                let a = self.real_expr(ch, Flavor::Clean, len, d);
                let b = self.real_expr(ch, Flavor::Clean, len, d);
                if len.is_some() || ch.flag(50) {
                    Expr::Op("imag_scal", vec![Expr::Op("complex_scal", vec![a, b])])
                } else {
                    Expr::Op("abs_scal", vec![Expr::Op("complex_scal", vec![a, b])])
                }
            }
            17 if len.is_none() => {
                let a = self.real_expr(ch, Flavor::Clean, None, d);
                Expr::Op("transfer", vec![a, Expr::Real(0.0)])
            }
            18 => {
                let a = self.real_expr(ch, Flavor::Clean, len, d);
                Expr::Op("real_scal", vec![a])
            }
            19 => {
                // Mixed arithmetic: a real and an integer.
                let a = sub(self, ch);
                let (b, _) = self.int_expr(ch, 1);
                Expr::Op(
                    ["add_scal_scal", "mul_scal_scal", "sub_scal_scal"][ch.pick(3)],
                    vec![a, b],
                )
            }
            _ => {
                let a = sub(self, ch);
                let b = sub(self, ch);
                Expr::Op(["add_scal_scal", "mul_scal_scal"][ch.pick(2)], vec![a, b])
            }
        }
    }

    /// An array-valued expression: a vector view, alone or combined
    /// elementwise with another expression of its length.
    fn vector_arg(&mut self, ch: &mut Ch<'_>, fl: Flavor, depth: u32) -> Option<Expr> {
        let lens = self.vector_lengths(fl);
        if lens.is_empty() {
            return None;
        }
        let len = lens[ch.pick(lens.len())];
        let mut arrays = self.real_arrays(fl);
        if !arrays.is_empty() {
            let start = ch.pick(arrays.len());
            arrays.rotate_left(start);
        }
        let view = arrays.into_iter().find_map(|v| {
            let r = self.vector_view(ch, v, len)?;
            self.note_read(v);
            self.note_ref_subs(&r);
            Some(Expr::r(r))
        })?;
        if depth == 0 || ch.pick(2) == 0 {
            return Some(view);
        }
        let other = self.real_expr(ch, fl, Some(len), depth - 1);
        let op = ["add_scal_scal", "mul_scal_scal", "sub_scal_scal"][ch.pick(3)];
        Some(if ch.flag(50) {
            Expr::Op(op, vec![view, other])
        } else {
            Expr::Op(op, vec![other, view])
        })
    }

    fn vector_lengths(&self, fl: Flavor) -> Vec<i64> {
        let mut out: Vec<i64> = Vec::new();
        for v in self.real_arrays(fl) {
            for &e in &self.var(v).extents {
                for l in 2..=e {
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// A value of magnitude at most about 2.
    fn bounded(&mut self, ch: &mut Ch<'_>, fl: Flavor, len: Option<i64>, depth: u32) -> Expr {
        let a = self.real_expr(ch, fl, len, depth);
        let name = ["sin_scal", "cos_scal", "tanh_scal", "arctan_scal"][ch.pick(4)];
        let e = Expr::Op(name, vec![a]);
        if ch.flag(30) {
            Expr::Op("mul_scal_scal", vec![Expr::Real(1.5), e])
        } else {
            e
        }
    }

    /// A value of magnitude below 0.9.
    fn unit(&mut self, ch: &mut Ch<'_>, fl: Flavor, len: Option<i64>, depth: u32) -> Expr {
        let a = self.real_expr(ch, fl, len, depth);
        let name = ["sin_scal", "cos_scal", "tanh_scal"][ch.pick(3)];
        Expr::Op(
            "mul_scal_scal",
            vec![
                Expr::Real([0.5, 0.75, 0.875][ch.pick(3)]),
                Expr::Op(name, vec![a]),
            ],
        )
    }

    /// A value of at least 0.5.
    fn positive(&mut self, ch: &mut Ch<'_>, fl: Flavor, len: Option<i64>, depth: u32) -> Expr {
        match ch.pick(5) {
            0 => {
                let a = self.real_expr(ch, fl, len, depth);
                let c = [1.0, 0.5, 2.0][ch.pick(3)];
                Expr::Op(
                    "add_scal_scal",
                    vec![Expr::Real(c), Expr::Op("mul_scal_scal", vec![a.clone(), a])],
                )
            }
            1 => {
                let a = self.bounded(ch, fl, len, depth);
                Expr::Op("exp_scal", vec![a])
            }
            2 => {
                let a = self.bounded(ch, fl, len, depth);
                Expr::Op("cosh_scal", vec![a])
            }
            3 => {
                let a = self.real_expr(ch, fl, len, depth);
                Expr::Op(
                    "add_scal_scal",
                    vec![Expr::Real(0.5), Expr::Op("abs_scal", vec![a])],
                )
            }
            _ => {
                let a = self.real_expr(ch, fl, len, depth);
                Expr::Op(
                    "add_scal_scal",
                    vec![Expr::Real(2.0), Expr::Op("sin_scal", vec![a])],
                )
            }
        }
    }

    /// A logical condition (may read any readable value: control may
    /// depend on the independents).
    fn cond(&mut self, ch: &mut Ch<'_>, depth: u32) -> Expr {
        let flags = self.flags();
        if !flags.is_empty() && ch.flag(15) {
            let v = flags[ch.pick(flags.len())];
            self.note_read(v);
            return if ch.flag(50) {
                Expr::Op("not", vec![Expr::var(v)])
            } else {
                Expr::var(v)
            };
        }
        let allocatables: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| self.var(v).dims == Dims::Alloc)
            .collect();
        if !allocatables.is_empty() && ch.flag(8) {
            // `allocated(a)`: the prologue gave every allocatable its
            // shape.
            let v = allocatables[ch.pick(allocatables.len())];
            let e = Expr::Op("allocated", vec![Expr::var(v)]);
            return if ch.flag(30) {
                Expr::Op("not", vec![e])
            } else {
                e
            };
        }
        match ch.pick(if depth == 0 { 3 } else { 7 }) {
            0 | 1 => {
                let (a, _) = self.int_expr(ch, 1);
                let (b, _) = self.int_expr(ch, 1);
                Expr::Op(cmp(ch), vec![a, b])
            }
            2 => {
                let a = self.real_expr(ch, Flavor::Sink, None, 1);
                let b = self.real_expr(ch, Flavor::Sink, None, 1);
                Expr::Op(real_cmp(ch), vec![a, b])
            }
            3 => {
                let a = self.cond(ch, depth - 1);
                let b = self.cond(ch, depth - 1);
                Expr::Op(["and", "or"][ch.pick(2)], vec![a, b])
            }
            4 => {
                let a = self.cond(ch, depth - 1);
                Expr::Op("not", vec![a])
            }
            5 => {
                let words = ["ab", "abc", "b"];
                let a = Expr::Str(words[ch.pick(3)].into());
                let b = Expr::Str(words[ch.pick(3)].into());
                let name = [
                    "string_eq_scal_scal",
                    "string_ne_scal_scal",
                    "string_ge_scal_scal",
                    "string_le_scal_scal",
                    "string_lt_scal_scal",
                ][ch.pick(5)];
                Expr::Op(name, vec![a, b])
            }
            _ => {
                let a = self.real_expr(ch, Flavor::Sink, None, 2);
                Expr::Op(real_cmp(ch), vec![a, Expr::Real(REALS[ch.pick(4)])])
            }
        }
    }

    // ----------------------------------------------------------- statements

    fn body(&mut self, recipes: &[StmtRecipe], nesting: usize) -> Vec<Stmt> {
        let mut out = Vec::new();
        let mark = self.after_loops.len();
        for s in recipes {
            self.stmt(s, nesting, &mut out);
        }
        self.after_loops.truncate(mark);
        out
    }

    fn sub_body(&mut self, s: &StmtRecipe, k: usize, nesting: usize) -> Vec<Stmt> {
        match s.bodies.get(k) {
            Some(b) if nesting < 4 => self.body(b, nesting + 1),
            _ => Vec::new(),
        }
    }

    /// Whether the routine may write `v`.
    fn writable(&self, v: VarId) -> bool {
        if self.frozen.contains(&v) {
            return false;
        }
        match v {
            VarId::Formal(f) => !self.read_only.get(f).copied().unwrap_or(false),
            _ => true,
        }
    }

    /// Real variables a statement of flavor-defining role may assign.
    fn real_targets(&self) -> Vec<VarId> {
        self.all_vars()
            .into_iter()
            .filter(|&v| {
                let var = self.var(v);
                var.role.ty() == Ty::Real && self.writable(v)
            })
            .collect()
    }

    fn stmt(&mut self, s: &StmtRecipe, nesting: usize, out: &mut Vec<Stmt>) {
        let mut ch = Ch::new(&s.params);
        let kind = Ch::new(&[s.kind]).weighted(&KINDS);
        match kind {
            Kind::Assign => self.assign(&mut ch, out),
            Kind::Vector => self.vector_assign(&mut ch, out),
            Kind::Index => {
                let vars: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| self.var(v).role == Role::Index && self.writable(v))
                    .collect();
                if vars.is_empty() {
                    return self.assign(&mut ch, out);
                }
                let v = vars[ch.pick(vars.len())];
                let rhs = if ch.flag(40) {
                    // Advance cyclically: 1 + mod(v, K).
                    self.note_read(v);
                    shifted(
                        Expr::Op("mod_scal_scal", vec![Expr::var(v), Expr::Int(K)]),
                        1,
                    )
                } else {
                    self.int_in(&mut ch, 1, K, 2)
                };
                self.note_write(v);
                out.push(Stmt::Assign(Ref::whole(v), rhs));
            }
            Kind::Count => {
                let vars: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| self.var(v).role == Role::Count && self.writable(v))
                    .collect();
                if vars.is_empty() {
                    return self.assign(&mut ch, out);
                }
                let v = vars[ch.pick(vars.len())];
                let rhs = self.int_in(&mut ch, -COUNT, COUNT, 2);
                self.note_write(v);
                out.push(Stmt::Assign(Ref::whole(v), rhs));
            }
            Kind::Call => self.call(&mut ch, out),
            Kind::Do => self.do_loop(&mut ch, s, nesting, out),
            Kind::While | Kind::Post => {
                let k = self.fresh_local(Role::Loop, Dims::Scalar, Vec::new());
                let limit = 1 + ch.pick(3) as i64;
                out.push(Stmt::Assign(Ref::whole(k), Expr::Int(0)));
                let extra = if ch.flag(50) {
                    Some(self.cond(&mut ch, 1))
                } else {
                    None
                };
                self.loops.push(LoopInfo {
                    var: k,
                    range: (0, limit),
                });
                self.exits += 1;
                let mut body = self.sub_body(s, 0, nesting);
                self.exits -= 1;
                self.loops.pop();
                body.push(Stmt::Assign(
                    Ref::whole(k),
                    Expr::Op("add_scal_scal", vec![Expr::var(k), Expr::Int(1)]),
                ));
                let bound = Expr::Op("less_than", vec![Expr::var(k), Expr::Int(limit)]);
                let cond = match extra {
                    Some(c) => Expr::Op("and", vec![bound, c]),
                    None => bound,
                };
                out.push(Stmt::While {
                    cond,
                    body,
                    post: kind == Kind::Post,
                });
            }
            Kind::If => {
                let cond = self.cond(&mut ch, 2);
                let then = self.sub_body(s, 0, nesting);
                let els = self.sub_body(s, 1, nesting);
                let vertex = ch.flag(10);
                out.push(Stmt::If {
                    cond,
                    then,
                    els,
                    vertex,
                });
            }
            Kind::Select => {
                let (on, range) = {
                    let (e, r) = self.int_expr(&mut ch, 2);
                    if r.1 - r.0 <= 8 {
                        (e, r)
                    } else {
                        let e = self.int_in(&mut ch, 0, 3, 1);
                        (e, (0, 3))
                    }
                };
                let mut values: Vec<i64> = (range.0..=range.1).collect();
                let mut cases = Vec::new();
                let ncases = 1 + ch.pick(3);
                for k in 0..ncases {
                    if values.is_empty() {
                        break;
                    }
                    let v = values.remove(ch.pick(values.len()));
                    let body = self.sub_body(s, k, nesting);
                    cases.push((vec![v], body));
                }
                let default = self.sub_body(s, ncases, nesting);
                out.push(Stmt::Select { on, cases, default });
            }
            Kind::Exit if self.exits > 0 => {
                let cond = self.cond(&mut ch, 1);
                self.jumps = true;
                out.push(Stmt::Exit(cond));
            }
            Kind::Return => {
                let cond = self.cond(&mut ch, 1);
                self.jumps = true;
                out.push(Stmt::Return(cond));
            }
            Kind::GotoLoop => {
                let k = self.fresh_local(Role::Loop, Dims::Scalar, Vec::new());
                let limit = 1 + ch.pick(3) as i64;
                out.push(Stmt::Assign(Ref::whole(k), Expr::Int(0)));
                self.loops.push(LoopInfo {
                    var: k,
                    range: (0, limit),
                });
                let mut body = self.sub_body(s, 0, nesting);
                self.loops.pop();
                body.push(Stmt::Assign(
                    Ref::whole(k),
                    Expr::Op("add_scal_scal", vec![Expr::var(k), Expr::Int(1)]),
                ));
                let bound = Expr::Op("less_than", vec![Expr::var(k), Expr::Int(limit)]);
                let cond = if ch.flag(40) {
                    let c = self.cond(&mut ch, 1);
                    Expr::Op("and", vec![bound, c])
                } else {
                    bound
                };
                self.jumps = true;
                out.push(Stmt::GotoLoop { body, cond });
            }
            Kind::GotoSkip => {
                let cond = self.cond(&mut ch, 1);
                let body = self.sub_body(s, 0, nesting);
                self.jumps = true;
                out.push(Stmt::GotoSkip { cond, body });
            }
            Kind::Direct => self.direct(&mut ch, out),
            Kind::Reshape => self.reshape(&mut ch, out),
            Kind::Marker => out.push(Stmt::Marker),
            Kind::Flag => {
                let flags = self.flags();
                let Some(&v) = flags.get(ch.pick(flags.len().max(1))) else {
                    return self.assign(&mut ch, out);
                };
                if !self.writable(v) {
                    return self.assign(&mut ch, out);
                }
                let rhs = self.cond(&mut ch, 2);
                self.note_write(v);
                out.push(Stmt::Assign(Ref::whole(v), rhs));
            }
            Kind::Exit => self.assign(&mut ch, out),
        }
    }

    /// `lhs = rhs` for a real scalar or element.
    fn assign(&mut self, ch: &mut Ch<'_>, out: &mut Vec<Stmt>) {
        let targets = self.real_targets();
        if targets.is_empty() {
            let v = self.fresh_local(Role::Active, Dims::Scalar, Vec::new());
            let rhs = self.real_expr(ch, Flavor::Active, None, 3);
            self.note_write(v);
            out.push(Stmt::Assign(Ref::whole(v), rhs));
            return;
        }
        let v = targets[ch.pick(targets.len())];
        let role = self.var(v).role;
        let lhs = if self.var(v).rank() == 0 {
            Ref::whole(v)
        } else {
            let r = self.element(ch, v);
            self.note_ref_subs(&r);
            r
        };
        let rhs = self.real_expr(ch, Flavor::of(role), None, 3);
        self.note_write(v);
        out.push(Stmt::Assign(lhs, rhs));
    }

    /// `lhs = rhs` for a whole array or section (an elemental expression
    /// of conforming vectors and scalars).
    fn vector_assign(&mut self, ch: &mut Ch<'_>, out: &mut Vec<Stmt>) {
        let targets: Vec<VarId> = self
            .real_targets()
            .into_iter()
            .filter(|&v| self.var(v).rank() > 0)
            .collect();
        if targets.is_empty() {
            return self.assign(ch, out);
        }
        let v = targets[ch.pick(targets.len())];
        let var = self.var(v).clone();
        let max = *var.extents.iter().max().expect("an array");
        let len = 2 + ch.pick((max - 1).max(1) as usize) as i64;
        let len = len.min(max);
        let Some(lhs) = self.vector_view(ch, v, len) else {
            return self.assign(ch, out);
        };
        self.note_ref_subs(&lhs);
        let rhs = self.real_expr(ch, Flavor::of(var.role), Some(len), 3);
        self.note_write(v);
        out.push(Stmt::Assign(lhs, rhs));
    }

    /// `b = transpose(a)` of square matrices (a direct action).
    fn direct(&mut self, ch: &mut Ch<'_>, out: &mut Vec<Stmt>) {
        let squares: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| {
                let var = self.var(v);
                var.role == Role::Active
                    && var.extents.len() == 2
                    && var.extents[0] == var.extents[1]
            })
            .collect();
        let a = if squares.is_empty() || ch.flag(30) {
            let a = self.fresh_local(Role::Active, Dims::Fixed(vec![3, 3]), vec![3, 3]);
            // Give it values depending on the independents.
            let rhs = self.real_expr(ch, Flavor::Active, Some(3), 2);
            let row = Ref {
                var: a,
                subs: vec![
                    Sub::Elem(Expr::Int(1 + ch.pick(3) as i64)),
                    Sub::Range(Expr::Int(1), Expr::Int(3), None),
                ],
            };
            self.note_write(a);
            out.push(Stmt::Assign(row, rhs));
            a
        } else {
            squares[ch.pick(squares.len())]
        };
        let e = self.var(a).extents.clone();
        let b = self.fresh_local(Role::Active, Dims::Fixed(e.clone()), e);
        self.note_read(a);
        self.note_write(b);
        out.push(Stmt::Assign(
            Ref::whole(b),
            Expr::Op("transpose_arr", vec![Expr::var(a)]),
        ));
        self.use_element(ch, b, out);
    }

    /// `t = t + b(…)` for an active scalar `t` (one that exists, or a new
    /// local), which becomes a result: what a direct action computed feeds
    /// `head`'s results.
    fn use_element(&mut self, ch: &mut Ch<'_>, b: VarId, out: &mut Vec<Stmt>) {
        let targets: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| {
                let var = self.var(v);
                var.role == Role::Active && var.rank() == 0 && self.writable(v)
            })
            .collect();
        let t = if targets.is_empty() {
            self.fresh_local(Role::Active, Dims::Scalar, Vec::new())
        } else {
            targets[ch.pick(targets.len())]
        };
        let el = self.element(ch, b);
        self.note_ref_subs(&el);
        self.note_write(t);
        if !self.results.contains(&t) {
            self.results.push(t);
        }
        out.push(Stmt::Assign(
            Ref::whole(t),
            Expr::Op("add_scal_scal", vec![Expr::var(t), Expr::r(el)]),
        ));
    }

    /// `b = reshape(a, s)` of an active array into a matrix of the same
    /// size (a direct action), `s` an integer vector set just before.
    fn reshape(&mut self, ch: &mut Ch<'_>, out: &mut Vec<Stmt>) {
        // Matrix shapes (extents of at most K, an index's range) by size.
        let shapes = |size: i64| -> Vec<(i64, i64)> {
            (1..=K)
                .flat_map(|p| (1..=K).map(move |q| (p, q)))
                .filter(|(p, q)| p * q == size && p * q > 1)
                .collect()
        };
        let sources: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| {
                let var = self.var(v);
                var.role == Role::Active
                    && (1..=2).contains(&var.rank())
                    && !shapes(var.size()).is_empty()
            })
            .collect();
        let a = if sources.is_empty() || ch.flag(25) {
            let e = [4, 6, 2][ch.pick(3)];
            let a = self.fresh_local(Role::Active, Dims::Fixed(vec![e]), vec![e]);
            let rhs = self.real_expr(ch, Flavor::Active, Some(e), 2);
            self.note_write(a);
            out.push(Stmt::Assign(
                Ref {
                    var: a,
                    subs: vec![Sub::Range(Expr::Int(1), Expr::Int(e), None)],
                },
                rhs,
            ));
            a
        } else {
            sources[ch.pick(sources.len())]
        };
        let options = shapes(self.var(a).size());
        let (p, q) = options[ch.pick(options.len())];
        // The shape vector: written here only (a DO-variable-like role keeps
        // other statements off it).
        let sv = self.fresh_local(Role::Loop, Dims::Fixed(vec![2]), vec![2]);
        for (k, e) in [(1, p), (2, q)] {
            out.push(Stmt::Assign(
                Ref {
                    var: sv,
                    subs: vec![Sub::Elem(Expr::Int(k))],
                },
                Expr::Int(e),
            ));
        }
        let b = self.fresh_local(Role::Active, Dims::Fixed(vec![p, q]), vec![p, q]);
        self.note_read(a);
        self.note_write(b);
        out.push(Stmt::Assign(
            Ref::whole(b),
            Expr::Op("reshape_arr", vec![Expr::var(a), Expr::var(sv)]),
        ));
        self.use_element(ch, b, out);
    }

    fn do_loop(&mut self, ch: &mut Ch<'_>, s: &StmtRecipe, nesting: usize, out: &mut Vec<Stmt>) {
        // Bounds: indices or an array's extent, sometimes certainly empty.
        let form = ch.pick(5);
        let (lo, lo_r, hi, hi_r) = match form {
            0 | 1 => {
                let lo = self.int_in(ch, 1, K, 1);
                let hi = self.int_in(ch, 1, K, 1);
                (lo, (1, K), hi, (1, K))
            }
            2 => {
                let arrays: Vec<VarId> = self
                    .all_vars()
                    .into_iter()
                    .filter(|&v| self.var(v).rank() == 1 && self.var(v).role != Role::Dead)
                    .collect();
                if arrays.is_empty() {
                    (Expr::Int(1), (1, 1), Expr::Int(K), (K, K))
                } else {
                    let v = arrays[ch.pick(arrays.len())];
                    let e = self.var(v).extents[0];
                    self.note_read(v);
                    (
                        Expr::Int(1),
                        (1, 1),
                        Expr::Op("size", vec![Expr::var(v), Expr::Int(1)]),
                        (e, e),
                    )
                }
            }
            3 => {
                // Zero trips: hi = lo - 1.
                let lo = self.int_in(ch, 1, K, 1);
                let hi = shifted(lo.clone(), -1);
                (lo, (1, K), hi, (0, K - 1))
            }
            _ => (Expr::Int(1), (1, 1), Expr::Int(K), (K, K)),
        };
        let var = self.fresh_local(Role::Loop, Dims::Scalar, Vec::new());
        let step = match ch.pick(4) {
            1 => Step::Down,
            2 => {
                let sv = self.fresh_local(Role::Loop, Dims::Scalar, Vec::new());
                let value = if form == 3 {
                    [1, 2][ch.pick(2)]
                } else {
                    [1, -1, 2, -2][ch.pick(4)]
                };
                out.push(Stmt::Assign(Ref::whole(sv), Expr::Int(value)));
                Step::Var(sv)
            }
            _ => Step::Up,
        };
        // Down loops run from hi to lo: swap so that `lo` is the first value.
        let (first, last) = match step {
            Step::Down => (hi, lo),
            _ => (lo, hi),
        };
        let range = (lo_r.0.min(hi_r.0).max(0), lo_r.1.max(hi_r.1));
        let range = (range.0.max(1), range.1.max(1));
        self.loops.push(LoopInfo { var, range });
        self.exits += 1;
        let mut body = self.sub_body(s, 0, nesting);
        self.exits -= 1;
        self.loops.pop();
        // The body changes a variable of the bounds (`do i = 1, n` with
        // `n = …` inside): the trip count is the one fixed on entry.
        if ch.flag(35) {
            let mut bound_vars = Vec::new();
            for e in [&first, &last] {
                e.visit_refs(&mut |x| {
                    if x.subs.is_empty() && !bound_vars.contains(&x.var) {
                        bound_vars.push(x.var);
                    }
                });
            }
            bound_vars.retain(|&v| {
                let var = self.var(v);
                var.role == Role::Index && var.rank() == 0 && self.writable(v)
            });
            if !bound_vars.is_empty() {
                let v = bound_vars[ch.pick(bound_vars.len())];
                self.note_read(v);
                self.note_write(v);
                let at = ch.pick(body.len() + 1);
                body.insert(at, advance_index(v));
            }
        }
        let explicit = ch.flag(30);
        // Its variable stays readable after it (Fortran defines its final
        // value), within the same statement list.
        let after = match step {
            Step::Up => Some((range.0, range.1 + 1)),
            Step::Down => Some((range.0 - 1, range.1)),
            Step::Var(_) => None,
        };
        if let Some(range) = after {
            self.after_loops.push(LoopInfo { var, range });
        }
        out.push(Stmt::Do {
            var,
            lo: first,
            hi: last,
            step,
            body,
            explicit,
        });
    }

    /// A call to a later routine with actuals Fortran allows.
    fn call(&mut self, ch: &mut Ch<'_>, out: &mut Vec<Stmt>) {
        let count = self.p.routines.len();
        if self.r + 1 >= count {
            return self.assign(ch, out);
        }
        // Favour the next routine: deep call chains.
        let callee = if ch.flag(50) {
            self.r + 1
        } else {
            self.r + 1 + ch.pick(count - self.r - 1)
        };
        if !self.may_call(callee) {
            return self.assign(ch, out);
        }
        self.call_to(ch, callee, out);
    }

    /// Whether the routine may call `callee` (one without globals calls
    /// no routine that touches one).
    fn may_call(&self, callee: usize) -> bool {
        let sum = &self.sums[callee];
        !self.no_globals || (sum.reads.is_empty() && sum.writes.is_empty())
    }

    /// A call to `callee`.
    fn call_to(&mut self, ch: &mut Ch<'_>, callee: usize, out: &mut Vec<Stmt>) {
        let sum = self.sums[callee].clone();
        let formals = self.p.routines[callee].formals.clone();
        let mut used: Vec<(VarId, bool)> = Vec::new();
        let mut args: Vec<Option<Arg>> = vec![None; formals.len()];
        // Integers the callee writes first, so that the other actuals'
        // subscripts can read them (`call f(x(k), k)`), and the index
        // globals the callee changes.
        let mut order: Vec<usize> = (0..formals.len())
            .filter(|&k| formals[k].role.ty() == Ty::Int && sum.written[k])
            .collect();
        let rest: Vec<usize> = (0..formals.len()).filter(|k| !order.contains(k)).collect();
        order.extend(rest);
        let mut prefer: Vec<VarId> = sum
            .writes
            .iter()
            .map(|&g| VarId::Global(g))
            .filter(|&v| self.var(v).role == Role::Index && self.var(v).rank() == 0)
            .collect();
        // A kernel without side-effect lists gets an active value at its
        // first active input (the others often passive ones: `foo(p, x)`).
        let mut first_input = sum.stable;
        for k in order {
            let f = &formals[k];
            let written = sum.written[k];
            self.prefer = prefer.clone();
            let out = sum.out.get(k).copied().unwrap_or(false);
            if let Some((at, v)) = self.force_arg {
                if at == k {
                    used.push((v, false));
                    args[k] = Some(Arg::Ref(Ref::whole(v)));
                    continue;
                }
            }
            if sum.optional.get(k).copied().unwrap_or(false) && ch.flag(40) {
                args[k] = Some(Arg::Absent);
                continue;
            }
            let keep = first_input && f.role == Role::Active && !written;
            first_input &= !keep;
            self.keep_activity = keep;
            let arg = self.actual(ch, f, written, out, &sum, &used);
            self.keep_activity = false;
            self.prefer.clear();
            if let Arg::Ref(r) = &arg {
                used.push((r.var, written));
                self.note_ref_subs(r);
                self.note_read(r.var);
                if written {
                    if self.var(r.var).role == Role::Active && !self.results.contains(&r.var) {
                        self.results.push(r.var);
                    }
                    self.note_write(r.var);
                    if f.role == Role::Index && f.rank() == 0 && r.subs.is_empty() {
                        prefer.push(r.var);
                    }
                }
            }
            args[k] = Some(arg);
        }
        let args: Vec<Arg> = args
            .into_iter()
            .map(|a| a.expect("every formal bound"))
            .collect();
        for g in &sum.reads {
            self.sum.reads.insert(*g);
        }
        for g in &sum.writes {
            self.sum.writes.insert(*g);
        }
        self.sum.depth = self.sum.depth.max(sum.depth + 1);
        out.push(Stmt::Call { callee, args });
    }

    /// An actual for formal `f`.
    fn actual(
        &mut self,
        ch: &mut Ch<'_>,
        f: &Var,
        written: bool,
        out: bool,
        sum: &Summary,
        used: &[(VarId, bool)],
    ) -> Arg {
        let keep_activity = self.keep_activity;
        // What a routine without side-effect lists reads must stay as it
        // is until the routine's reversal: constants, or variables the
        // caller has not written and never writes again.
        let stable = sum.stable && !written;
        // Roles an actual may have for this formal.
        let roles: &[Role] = match (f.role, written) {
            (Role::Active, true) if out => &[Role::Active, Role::Sink],
            (Role::Active, true) => &[Role::Active],
            (Role::Active, false) => &[Role::Active, Role::Clean],
            (Role::Clean, _) => &[Role::Clean],
            (Role::Sink, true) => &[Role::Sink],
            (Role::Sink, false) => &[Role::Sink, Role::Active, Role::Clean],
            (Role::Index, true) => &[Role::Index],
            (Role::Index, false) => &[Role::Index, Role::Loop],
            (Role::Count, true) => &[Role::Count],
            _ => &[Role::Count, Role::Index, Role::Loop],
        };
        if !written && !keep_activity && f.rank() == 0 && ch.flag(if stable { 25 } else { 15 }) {
            return Arg::Const(match f.role.ty() {
                Ty::Real => real_const(ch),
                Ty::Int if f.role == Role::Index => Expr::Int(1 + ch.pick(K as usize) as i64),
                // (Formals are never logicals.)
                Ty::Int | Ty::Bool => Expr::Int(ch.pick(5) as i64 - 2),
            });
        }
        // Favour actuals of the other activity where that is allowed.
        let convert = match (f.role, written) {
            _ if keep_activity => None,
            (Role::Active, false) if ch.flag(if sum.stable { 60 } else { 40 }) => Some(Role::Clean),
            (Role::Active, true) if out && ch.flag(if sum.stable { 20 } else { 70 }) => {
                Some(Role::Sink)
            }
            (Role::Sink, false) if ch.flag(50) => Some(Role::Active),
            _ => None,
        };
        let ok = |b: &Self, v: VarId| -> bool {
            let var = b.var(v);
            if !roles.contains(&var.role) || convert.is_some_and(|c| c != var.role) {
                return false;
            }
            if written && !b.writable(v) {
                return false;
            }
            if var.role == Role::Loop {
                let Some(r) = b.loop_range(v) else {
                    return false;
                };
                let (lo, hi) = if f.role == Role::Index {
                    (1, K)
                } else {
                    (-COUNT, COUNT)
                };
                if r.0 < lo || r.1 > hi {
                    return false;
                }
            }
            if let VarId::Global(g) = v {
                if sum.touches(g) {
                    return false;
                }
            }
            if stable
                && (matches!(v, VarId::Global(_))
                    || var.role == Role::Loop
                    || b.written_so_far.contains(&v)
                    || (b.r == 0 && v == VarId::Formal(1)))
            {
                return false;
            }
            // No storage seen through two names when one is written.
            !used.iter().any(|(u, w)| *u == v && (written || *w))
        };
        let mut candidates: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| ok(self, v))
            .collect();
        if !candidates.is_empty() {
            let start = ch.pick(candidates.len());
            candidates.rotate_left(start);
        }
        if !self.prefer.is_empty() && f.rank() == 0 && ch.flag(60) {
            // An element whose subscript the callee changes.
            candidates.sort_by_key(|&v| self.var(v).rank() == 0);
        }
        self.const_subs = stable;
        for v in candidates {
            if let Some(r) = self.bind(ch, f, v) {
                self.const_subs = false;
                if stable {
                    self.frozen.insert(v);
                }
                return Arg::Ref(r);
            }
        }
        self.const_subs = false;
        // Nothing fits: a fresh local of the formal's kind (of the other
        // activity when that was asked for: `p = 2.0; call foo(p)`).
        let role = match (convert, f.role) {
            (Some(c), _) => c,
            (None, Role::Active | Role::Clean | Role::Sink | Role::Index | Role::Count) => f.role,
            _ => Role::Active,
        };
        let dims = match &f.dims {
            Dims::Assumed => Dims::Fixed(f.extents.clone()),
            d => d.clone(),
        };
        let v = self.fresh_local(role, dims, f.extents.clone());
        if stable {
            self.frozen.insert(v);
        }
        Arg::Ref(Ref::whole(v))
    }

    /// A reference to `v` that fits formal `f` (shape and sequence
    /// association), if there is one.
    fn bind(&mut self, ch: &mut Ch<'_>, f: &Var, v: VarId) -> Option<Ref> {
        let a = self.var(v).clone();
        match (&f.dims, a.rank()) {
            (Dims::Scalar, 0) => Some(Ref::whole(v)),
            (Dims::Scalar, _) => Some(self.element(ch, v)),
            // An assumed-shape formal may be a strided view: it goes to
            // assumed-shape formals only (no sequence association).
            (Dims::Fixed(_), _) if a.dims == Dims::Assumed => None,
            (Dims::Fixed(fe), _) if a.rank() > 0 => {
                let need: i64 = fe.iter().product();
                if a.extents == *fe && ch.flag(50) {
                    return Some(Ref::whole(v));
                }
                if a.rank() != fe.len() && a.size() >= need && !a.deferred() && ch.flag(40) {
                    // A whole array of another rank (sequence association:
                    // the actual may be larger).
                    return Some(Ref::whole(v));
                }
                if fe.len() == 1 && a.rank() == 1 && ch.flag(50) && a.extents[0] >= need {
                    // A contiguous section of the formal's size.
                    let lo = self.int_in(ch, 1, a.extents[0] - need + 1, 1);
                    let hi = shifted(lo.clone(), need - 1);
                    return Some(Ref {
                        var: v,
                        subs: vec![Sub::Range(lo, hi, None)],
                    });
                }
                if a.rank() == 2 && ch.flag(70) {
                    let (e0, e1) = (a.extents[0], a.extents[1]);
                    if fe.len() == 1 && e0 >= need && ch.flag(50) {
                        // A contiguous part of a column: `a(lo:hi, j)`.
                        let lo = self.int_in(ch, 1, e0 - need + 1, 1);
                        let hi = shifted(lo.clone(), need - 1);
                        let j = self.int_in(ch, 1, e1, 1);
                        return Some(Ref {
                            var: v,
                            subs: vec![Sub::Range(lo, hi, None), Sub::Elem(j)],
                        });
                    }
                    // An element of a matrix starts the formal's storage
                    // (`call f(a(1, j))`: column-major, the rest of the
                    // matrix from there).
                    let jmax = (a.size() - need + 1) / e0;
                    if jmax >= 1 {
                        let i = self.int_in(ch, 1, e0, 1);
                        let j = self.int_in(ch, 1, jmax, 1);
                        return Some(Ref {
                            var: v,
                            subs: vec![Sub::Elem(i), Sub::Elem(j)],
                        });
                    }
                }
                if a.rank() == 1 && a.extents[0] >= need {
                    // Sequence association: the element starts the
                    // formal's storage.
                    let i = self.int_in(ch, 1, a.extents[0] - need + 1, 1);
                    return Some(Ref {
                        var: v,
                        subs: vec![Sub::Elem(i)],
                    });
                }
                if a.size() >= need && !a.deferred() {
                    return Some(Ref::whole(v));
                }
                None
            }
            (Dims::Assumed, _) if a.rank() > 0 => self.vector_view(ch, v, f.extents[0]),
            _ => None,
        }
    }

    /// Initial values of the routine's locals (and in `head` of the
    /// globals and `y`), so that nothing is read before it is written.
    fn prologue(&mut self, rr: &RoutineRecipe) -> Vec<Stmt> {
        let mut ch = Ch::new(&rr.knobs);
        let mut out = Vec::new();
        let mut vars: Vec<VarId> = Vec::new();
        if self.r == 0 {
            vars.push(VarId::Formal(1));
            vars.extend((0..self.p.globals.len()).map(VarId::Global));
        }
        vars.extend((0..self.routine().locals.len()).map(VarId::Local));
        for v in vars {
            let var = self.var(v).clone();
            match var.role {
                Role::Loop => continue,
                Role::Flag => out.push(Stmt::Assign(
                    Ref::whole(v),
                    match ch.pick(4) {
                        0 => Expr::Op("less_than", vec![Expr::Int(1), Expr::Int(2)]),
                        1 => Expr::Op("greater_than", vec![Expr::Int(1), Expr::Int(2)]),
                        k => Expr::Bool(k == 2),
                    },
                )),
                Role::Index if var.rank() == 1 => {
                    for i in 1..=var.extents[0] {
                        out.push(Stmt::Assign(
                            Ref {
                                var: v,
                                subs: vec![Sub::Elem(Expr::Int(i))],
                            },
                            Expr::Int(1 + ch.pick(K as usize) as i64),
                        ));
                    }
                }
                Role::Index => out.push(Stmt::Assign(
                    Ref::whole(v),
                    Expr::Int(1 + ch.pick(K as usize) as i64),
                )),
                Role::Count => out.push(Stmt::Assign(
                    Ref::whole(v),
                    Expr::Int(ch.pick(5) as i64 - 2),
                )),
                _ => {
                    let value = if v == VarId::Formal(1) {
                        Expr::Real(0.0)
                    } else if self.r == 0 && var.role == Role::Active {
                        // Active values of head depend on the independents.
                        let k = 1 + ch.pick(self.p.n) as i64;
                        let x = Expr::r(Ref {
                            var: VarId::Formal(0),
                            subs: vec![Sub::Elem(Expr::Int(k))],
                        });
                        Expr::Op("mul_scal_scal", vec![real_const(&mut ch), x])
                    } else {
                        real_const(&mut ch)
                    };
                    if var.rank() == 0 {
                        out.push(Stmt::Assign(Ref::whole(v), value));
                    } else if var.dims == Dims::Alloc || (var.rank() == 1 && ch.flag(50)) {
                        // The whole vector as one section (which also gives an
                        // allocatable its shape).
                        out.push(Stmt::Assign(
                            Ref {
                                var: v,
                                subs: vec![Sub::Range(
                                    Expr::Int(1),
                                    Expr::Int(var.extents[0]),
                                    None,
                                )],
                            },
                            value,
                        ));
                    } else if var.rank() == 1 {
                        for i in 1..=var.extents[0] {
                            out.push(Stmt::Assign(
                                Ref {
                                    var: v,
                                    subs: vec![Sub::Elem(Expr::Int(i))],
                                },
                                value.clone(),
                            ));
                        }
                    } else {
                        out.push(Stmt::Assign(Ref::whole(v), value));
                    }
                }
            }
            if let VarId::Global(g) = v {
                self.sum.writes.insert(g);
            }
        }
        out
    }

    /// `w = w + a * b` (or `w = a * b`) for active formals `w` the routine
    /// may write, of formals `a`, `b` it may read.
    fn results(&mut self, ch: &mut Ch<'_>) -> Vec<Stmt> {
        let nformals = self.routine().formals.len();
        let targets: Vec<VarId> = (0..nformals)
            .map(VarId::Formal)
            .filter(|&v| self.var(v).role == Role::Active && self.writable(v))
            .collect();
        let sources: Vec<VarId> = (0..nformals)
            .map(VarId::Formal)
            .filter(|&v| {
                matches!(self.var(v).role, Role::Active | Role::Clean)
                    && !self.writable(v)
                    && !self.hidden.contains(&v)
            })
            .collect();
        let active: Vec<VarId> = sources
            .iter()
            .copied()
            .filter(|&v| self.var(v).role == Role::Active)
            .collect();
        let mut out = Vec::new();
        if sources.is_empty() {
            return out;
        }
        for w in targets {
            let read = |b: &mut Self, ch: &mut Ch<'_>, from: &[VarId]| -> Expr {
                let v = from[ch.pick(from.len())];
                b.note_read(v);
                if b.var(v).rank() == 0 {
                    Expr::var(v)
                } else {
                    let r = b.element(ch, v);
                    b.note_ref_subs(&r);
                    Expr::r(r)
                }
            };
            // One factor active where there is one: the other's value is
            // the derivative.
            let a = read(self, ch, &sources);
            let bb = read(self, ch, if active.is_empty() { &sources } else { &active });
            let mut e = Expr::Op("mul_scal_scal", vec![a, bb]);
            if ch.flag(30) {
                e = Expr::Op("sin_scal", vec![e]);
            }
            let lhs = if self.var(w).rank() == 0 {
                Ref::whole(w)
            } else {
                let r = self.element(ch, w);
                self.note_ref_subs(&r);
                r
            };
            let rhs = if ch.flag(70) {
                Expr::Op("add_scal_scal", vec![Expr::r(lhs.clone()), e])
            } else {
                e
            };
            self.note_write(w);
            out.push(Stmt::Assign(lhs, rhs));
        }
        out
    }

    /// `if (present(f)) then w = w + f * c [else w = w + c] end if` for
    /// every optional formal `f`, `w` an active formal the routine writes
    /// (or a local).
    fn optional_uses(&mut self, ch: &mut Ch<'_>) -> Vec<Stmt> {
        // (Optional formals stay hidden from the other actuals of a call
        // that passes one on.)
        let hidden = self.hidden.clone();
        let nformals = self.routine().formals.len();
        let targets: Vec<VarId> = (0..nformals)
            .map(VarId::Formal)
            .filter(|&v| {
                let var = self.var(v);
                var.role == Role::Active && var.rank() == 0 && self.writable(v)
            })
            .collect();
        let mut out = Vec::new();
        for f in hidden {
            // Passed on to an optional formal of a callee (absent there
            // when it is absent here).
            let fvar = self.var(f).clone();
            let role = fvar.role;
            let onward: Vec<(usize, usize)> = (self.r + 1..self.p.routines.len())
                .filter(|&c| self.may_call(c))
                .flat_map(|c| {
                    let sum = &self.sums[c];
                    let formals = &self.p.routines[c].formals;
                    (0..formals.len())
                        .filter(|&k| {
                            // Of the same role, or of the other activity
                            // where an actual of this role may go (the
                            // engine converts it when it is present).
                            let read_only = !sum.written.get(k).copied().unwrap_or(true);
                            let compatible = formals[k].role == role
                                || (read_only
                                    && matches!(
                                        (formals[k].role, role),
                                        (Role::Active, Role::Clean)
                                            | (Role::Sink, Role::Active | Role::Clean)
                                    ));
                            sum.optional.get(k).copied().unwrap_or(false)
                                && compatible
                                && formals[k].dims == fvar.dims
                                && formals[k].extents == fvar.extents
                        })
                        .map(move |k| (c, k))
                        .collect::<Vec<_>>()
                })
                .collect();
            if !onward.is_empty() && ch.flag(70) {
                let (c, k) = onward[ch.pick(onward.len())];
                self.note_read(f);
                self.force_arg = Some((k, f));
                self.call_to(ch, c, &mut out);
                self.force_arg = None;
                continue;
            }
            let w = if targets.is_empty() {
                self.fresh_local(Role::Active, Dims::Scalar, Vec::new())
            } else {
                targets[ch.pick(targets.len())]
            };
            self.note_read(f);
            self.note_write(w);
            let read = if fvar.rank() == 0 {
                Expr::var(f)
            } else {
                Expr::r(Ref {
                    var: f,
                    subs: vec![Sub::Elem(Expr::Int(
                        1 + ch.pick(fvar.extents[0] as usize) as i64,
                    ))],
                })
            };
            let term = Expr::Op("mul_scal_scal", vec![read, real_const(ch)]);
            let then = vec![Stmt::Assign(
                Ref::whole(w),
                Expr::Op("add_scal_scal", vec![Expr::var(w), term]),
            )];
            let els = if ch.flag(50) {
                vec![Stmt::Assign(
                    Ref::whole(w),
                    Expr::Op("add_scal_scal", vec![Expr::var(w), real_const(ch)]),
                )]
            } else {
                Vec::new()
            };
            out.push(Stmt::If {
                cond: Expr::Op("present", vec![Expr::var(f)]),
                then,
                els,
                vertex: false,
            });
        }
        self.hidden.clear();
        out
    }

    /// `head` ends with every dependent depending on active values.
    fn epilogue(&mut self, rr: &RoutineRecipe) -> Vec<Stmt> {
        let mut ch = Ch::new(rr.knobs.get(4..).unwrap_or(&[]));
        let mut out = Vec::new();
        for k in 1..=self.p.m as i64 {
            let lhs = Ref {
                var: VarId::Formal(1),
                subs: vec![Sub::Elem(Expr::Int(k))],
            };
            let mut e = self.real_expr(&mut ch, Flavor::Active, None, 2);
            for _ in 0..1 + ch.pick(3) {
                let t = self.active_read(&mut ch);
                e = Expr::Op("add_scal_scal", vec![e, t]);
            }
            let x = Expr::r(Ref {
                var: VarId::Formal(0),
                subs: vec![Sub::Elem(Expr::Int(1 + (k - 1) % self.p.n as i64))],
            });
            out.push(Stmt::Assign(
                lhs.clone(),
                Expr::Op(
                    "add_scal_scal",
                    vec![Expr::r(lhs), Expr::Op("mul_scal_scal", vec![x, e])],
                ),
            ));
        }
        out
    }
}

impl Rb<'_> {
    /// A read of an active variable (an element of an array), or of `x`.
    fn active_read(&mut self, ch: &mut Ch<'_>) -> Expr {
        let mut vars: Vec<VarId> = self
            .all_vars()
            .into_iter()
            .filter(|&v| self.var(v).role == Role::Active && v != VarId::Formal(1))
            .collect();
        // Often what a call computed.
        if !self.results.is_empty() && ch.flag(50) {
            vars.clone_from(&self.results);
            vars.retain(|&v| v != VarId::Formal(1));
        }
        let v = if vars.is_empty() {
            VarId::Formal(0)
        } else {
            vars[ch.pick(vars.len())]
        };
        self.note_read(v);
        if self.var(v).rank() == 0 {
            Expr::var(v)
        } else {
            let r = self.element(ch, v);
            self.note_ref_subs(&r);
            let e = Expr::r(r);
            Expr::Op("sin_scal", vec![e])
        }
    }
}

fn cmp(ch: &mut Ch<'_>) -> &'static str {
    [
        "less_than",
        "greater_than",
        "less_or_equal",
        "greater_or_equal",
        "equal",
        "not_equal",
    ][ch.pick(6)]
}

/// An ordering of reals: equality of values that depend on the
/// independents holds at isolated points, where divided differences see
/// one branch and the derivative code the other.
fn real_cmp(ch: &mut Ch<'_>) -> &'static str {
    [
        "less_than",
        "greater_than",
        "less_or_equal",
        "greater_or_equal",
    ][ch.pick(4)]
}

/// `v = mod(v, K) + 1`: an index variable moved to the next value of
/// `1..=K` (a routine changing a global index, a loop body changing its
/// own bound).
fn advance_index(v: VarId) -> Stmt {
    Stmt::Assign(
        Ref::whole(v),
        shifted(
            Expr::Op("mod_scal_scal", vec![Expr::var(v), Expr::Int(K)]),
            1,
        ),
    )
}

/// `e + c` (just `e` for 0).
fn shifted(e: Expr, c: i64) -> Expr {
    match c {
        0 => e,
        c if c > 0 => Expr::Op("add_scal_scal", vec![e, Expr::Int(c)]),
        c => Expr::Op("sub_scal_scal", vec![e, Expr::Int(-c)]),
    }
}

/// `c * tanh(e)`: a real of magnitude below `c`.
fn bounded_wrap(e: Expr, c: f64) -> Expr {
    Expr::Op(
        "mul_scal_scal",
        vec![Expr::Real(c), Expr::Op("tanh_scal", vec![e])],
    )
}
