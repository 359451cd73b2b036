//! A generated program as Fortran-like text, for the comment at the top of
//! its XAIF: a shrunk failing program is read there, not in the XML.

use std::fmt::Write;

use super::ast::*;

fn real_text(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

struct L<'p> {
    p: &'p Program,
    r: usize,
    out: String,
    /// Per routine, the line of each `do` (in the order written).
    dos: Vec<Vec<usize>>,
    /// Per routine, the line of each fixed-point iteration.
    fixed: Vec<Vec<usize>>,
}

impl L<'_> {
    /// Records the loop at line `at` (condition `cond` for a while loop,
    /// body `body`): a fixed-point iteration when its condition, or an
    /// exit of its body, tests its change variable, which its body
    /// computes (another loop's exit may test a change variable it reads:
    /// that loop iterates nothing to a fixed point).
    fn note_loop(&mut self, at: usize, cond: Option<&Expr>, body: &[Stmt]) {
        if let Some(dos) = self.dos.get_mut(self.r) {
            dos.push(at);
        }
        let computed: Vec<VarId> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::Assign(lhs, _)
                    if self
                        .p
                        .var(self.r, lhs.var)
                        .name
                        .starts_with(super::FIXED_POINT_CHANGE) =>
                {
                    Some(lhs.var)
                }
                _ => None,
            })
            .collect();
        let tests_change = |e: &Expr| {
            let mut found = false;
            e.visit_refs(&mut |x| found |= computed.contains(&x.var));
            found
        };
        let fixed = cond.is_some_and(tests_change)
            || body
                .iter()
                .any(|s| matches!(s, Stmt::Exit(c) if tests_change(c)));
        if fixed {
            if let Some(f) = self.fixed.get_mut(self.r) {
                f.push(at);
            }
        }
    }

    fn name(&self, v: VarId) -> String {
        self.p.var(self.r, v).name.clone()
    }

    fn r(&self, rf: &Ref) -> String {
        let mut s = self.name(rf.var);
        if !rf.subs.is_empty() {
            let subs: Vec<String> = rf
                .subs
                .iter()
                .map(|x| match x {
                    Sub::Elem(e) => self.e(e),
                    Sub::Range(a, b, None) => format!("{}:{}", self.e(a), self.e(b)),
                    Sub::Range(a, b, Some(c)) => {
                        format!("{}:{}:{}", self.e(a), self.e(b), self.e(c))
                    }
                })
                .collect();
            let _ = write!(s, "({})", subs.join(","));
        }
        s
    }

    fn e(&self, e: &Expr) -> String {
        match e {
            Expr::Real(x) => real_text(*x),
            Expr::Int(i) => i.to_string(),
            Expr::Str(s) => format!("'{s}'"),
            Expr::Bool(b) => format!(".{b}."),
            Expr::Ref(r) => self.r(r),
            Expr::Op(name, args) => {
                let a: Vec<String> = args.iter().map(|x| self.e(x)).collect();
                let infix = match *name {
                    "add_scal_scal" => Some("+"),
                    "sub_scal_scal" => Some("-"),
                    "mul_scal_scal" => Some("*"),
                    "div_scal_scal" => Some("/"),
                    "pow_scal_scal" => Some("**"),
                    "and" => Some(".and."),
                    "or" => Some(".or."),
                    "less_than" => Some("<"),
                    "greater_than" => Some(">"),
                    "less_or_equal" => Some("<="),
                    "greater_or_equal" => Some(">="),
                    "equal" => Some("=="),
                    "not_equal" => Some("/="),
                    _ => None,
                };
                match (infix, a.len()) {
                    (Some(op), 2) => format!("({} {op} {})", a[0], a[1]),
                    _ => format!("{name}({})", a.join(", ")),
                }
            }
        }
    }

    fn line(&mut self, depth: usize, text: &str) {
        let _ = writeln!(self.out, "{}{text}", "  ".repeat(depth + 1));
    }

    fn stmts(&mut self, stmts: &[Stmt], d: usize) {
        for s in stmts {
            match s {
                Stmt::Assign(l, r) => {
                    let t = format!("{} = {}", self.r(l), self.e(r));
                    self.line(d, &t);
                }
                Stmt::Call { callee, args } => {
                    let a: Vec<String> = args
                        .iter()
                        .map(|a| match a {
                            Arg::Ref(r) => self.r(r),
                            Arg::Const(e) => self.e(e),
                            Arg::Absent => "-".to_string(),
                        })
                        .collect();
                    let t = format!("call {}({})", self.p.routines[*callee].name, a.join(", "));
                    self.line(d, &t);
                }
                Stmt::Do {
                    var,
                    lo,
                    hi,
                    step,
                    body,
                    explicit,
                } => {
                    let st = match step {
                        Step::Up => String::new(),
                        Step::Down => ", -1".into(),
                        Step::Var(v) => format!(", {}", self.name(*v)),
                    };
                    let hint = if *explicit { "  ! simple loop" } else { "" };
                    let t = format!(
                        "do {} = {}, {}{st}{hint}",
                        self.name(*var),
                        self.e(lo),
                        self.e(hi)
                    );
                    let at = self.out.matches('\n').count() + 1;
                    self.note_loop(at, None, body);
                    self.line(d, &t);
                    self.stmts(body, d + 1);
                    self.line(d, "end do");
                }
                Stmt::While { cond, body, post } => {
                    let at = self.out.matches('\n').count() + 1;
                    self.note_loop(at, Some(cond), body);
                    if *post {
                        self.line(d, "do  ! PostLoop");
                        self.stmts(body, d + 1);
                        let t = format!("end do while {}", self.e(cond));
                        self.line(d, &t);
                    } else {
                        let t = format!("do while {}", self.e(cond));
                        self.line(d, &t);
                        self.stmts(body, d + 1);
                        self.line(d, "end do");
                    }
                }
                Stmt::If {
                    cond,
                    then,
                    els,
                    vertex,
                } => {
                    let t = format!(
                        "if {} then{}",
                        self.e(cond),
                        if *vertex { "  ! If vertex" } else { "" }
                    );
                    self.line(d, &t);
                    self.stmts(then, d + 1);
                    if !els.is_empty() {
                        self.line(d, "else");
                        self.stmts(els, d + 1);
                    }
                    self.line(d, "end if");
                }
                Stmt::Select { on, cases, default } => {
                    let t = format!("select case ({})", self.e(on));
                    self.line(d, &t);
                    for (v, b) in cases {
                        let vs: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                        let t = format!("case ({})", vs.join(", "));
                        self.line(d, &t);
                        self.stmts(b, d + 1);
                    }
                    self.line(d, "case default");
                    self.stmts(default, d + 1);
                    self.line(d, "end select");
                }
                Stmt::Marker => self.line(d, "!$openad xxx (a pragma: an inert marker)"),
                Stmt::Exit(c) => {
                    let t = format!("if {} exit", self.e(c));
                    self.line(d, &t);
                }
                Stmt::Return(c) => {
                    let t = format!("if {} return", self.e(c));
                    self.line(d, &t);
                }
                Stmt::GotoLoop { body, cond } => {
                    self.line(d, "10 continue");
                    self.stmts(body, d + 1);
                    let t = format!("if {} goto 10", self.e(cond));
                    self.line(d, &t);
                }
                Stmt::GotoSkip { cond, body } => {
                    let t = format!("if {} goto 20", self.e(cond));
                    self.line(d, &t);
                    self.stmts(body, d + 1);
                    self.line(d, "20 continue");
                }
            }
        }
    }

    fn decl(&mut self, v: &Var, what: &str) {
        let ty = match v.role.ty() {
            Ty::Real => "real(8)",
            Ty::Int => "integer",
            Ty::Bool => "logical",
        };
        let dims = match &v.dims {
            Dims::Scalar => String::new(),
            Dims::Fixed(e) => format!(
                "({})",
                e.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Dims::Assumed => format!("(:)  [{} at run time]", v.extents[0]),
            Dims::Alloc => format!("(:) allocatable  [{} at run time]", v.extents[0]),
        };
        let t = format!("{ty} :: {}{dims}  ! {what} {:?}", v.name, v.role);
        self.line(0, &t);
    }
}

/// The program as Fortran-like text.
pub fn listing(p: &Program) -> String {
    written(p).out
}

/// Per routine, the line of the listing at which each loop (`do`, `do
/// while`, post-test `do`) starts, in the order the statements are
/// written: the `lineNumber` of its `ForLoop`, `PreLoop` or `PostLoop`, by
/// which `--checkpoint-loop` names it.
pub fn do_lines(p: &Program) -> Vec<Vec<usize>> {
    written(p).dos
}

/// Per routine, the lines of its fixed-point iterations.
pub fn fixed_point_lines(p: &Program) -> Vec<Vec<usize>> {
    written(p).fixed
}

fn written(p: &Program) -> L<'_> {
    let mut l = L {
        p,
        r: 0,
        out: String::new(),
        dos: vec![Vec::new(); p.routines.len()],
        fixed: vec![Vec::new(); p.routines.len()],
    };
    let _ = writeln!(
        l.out,
        "head(x({}), y({})): n = {}, m = {}",
        p.n, p.m, p.n, p.m
    );
    for g in &p.globals {
        l.decl(g, "global");
    }
    for (r, routine) in p.routines.iter().enumerate() {
        l.r = r;
        let formals: Vec<&str> = routine.formals.iter().map(|f| f.name.as_str()).collect();
        let lists = if routine.side_effect_lists {
            ""
        } else {
            "  ! no side-effect lists"
        };
        let _ = writeln!(
            l.out,
            "subroutine {}({}){lists}",
            routine.name,
            formals.join(", ")
        );
        for (k, f) in routine.formals.iter().enumerate() {
            let what = if routine.out.get(k).copied().unwrap_or(false) {
                "out"
            } else if routine.written[k] {
                "inout"
            } else if routine.optional.get(k).copied().unwrap_or(false) {
                "in, optional"
            } else {
                "in"
            };
            l.decl(f, what);
        }
        for v in &routine.locals {
            l.decl(v, "local");
        }
        l.stmts(&routine.body, 0);
        let _ = writeln!(l.out, "end subroutine");
    }
    l
}
